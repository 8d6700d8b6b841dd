"""Attention masks that depend on no input, folded into scaled_dot_product_attention.

transformers builds an encoder's bidirectional mask from aranges when it runs under
torch.compile (eager checks the padding mask's values and passes no mask at all): a
[B, 1, L, S] tensor of True that no input of the graph reaches. Any mask makes
PyTorch's SDPA leave its fused CUDA kernels (cuDNN, flash) for the math path, which
aot_autograd then decomposes into two f32 batched gemms and a softmax, under every
backend: HF ViT's attention took 2.7 ms of a call that way on an H100 against the fused
kernel's 0.3 ms in eager. Such a mask is computed here once, at compile time, from the
nodes of Dynamo's graph that make it. A mask that lets everything through is dropped; a
boolean one that lets each query see the keys up to its own position is `is_causal`.
The mask is a constant of the graph, so the result does not change between calls.
"""

from __future__ import annotations

import torch
import torch.fx
import torch.nn.functional as F

from tessel.frontend.constant_values import evaluated

# torch functions whose result is not a function of their arguments: a mask made with
# one is not a constant.
_RANDOM = ("rand", "randn", "randint", "randperm", "bernoulli", "multinomial", "normal",
           "dropout", "uniform", "exponential", "poisson")


def _maker(mask: torch.fx.Node) -> list[torch.fx.Node] | None:
    """The nodes that compute `mask`, in graph order, if none of them reads an input
    of the graph (a placeholder, a parameter, a submodule) or draws random numbers."""
    needed, stack = set(), [mask]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        if node.op not in ("call_function", "call_method"):
            return None
        name = getattr(node.target, "__name__", str(node.target))
        if any(word in name for word in _RANDOM):
            return None
        needed.add(node)
        stack.extend(node.all_input_nodes)
    return [node for node in mask.graph.nodes if node in needed]


def _computed(nodes: list[torch.fx.Node], gm: torch.fx.GraphModule) -> torch.Tensor | None:
    """The value of the last of `nodes`, computed eagerly, if it is a tensor."""
    values = evaluated(nodes, gm)
    value = values[nodes[-1]] if values is not None else None
    return value if isinstance(value, torch.Tensor) else None


def _weights_shape(call: torch.fx.Node) -> torch.Size | None:
    """The shape of the attention weights of SDPA call `call`: (..., L, S)."""
    query, key = (node.meta.get("example_value") for node in call.args[:2])
    if not isinstance(query, torch.Tensor) or not isinstance(key, torch.Tensor):
        return None
    shape = [*query.shape[:-1], key.shape[-2]]
    # Dynamic sizes are left alone: comparing them with the mask's would guard them.
    return torch.Size(shape) if all(isinstance(n, int) for n in shape) else None


def _folded(mask: torch.Tensor, weights: torch.Size) -> dict | None:
    """SDPA's keyword arguments that replace `mask`, if it says nothing that they do not."""
    try:
        if torch.broadcast_shapes(mask.shape, weights) != weights:
            return None  # the mask would broadcast the result
    except RuntimeError:
        return None
    if mask.dtype == torch.bool:
        if bool(mask.all()):
            return {"attn_mask": None}
        length, keys = weights[-2], weights[-1]
        causal = torch.ones(length, keys, dtype=torch.bool, device=mask.device).tril()
        if bool((mask == causal).all()):
            return {"attn_mask": None, "is_causal": True}
        return None
    if mask.is_floating_point() and not bool(mask.any()):
        return {"attn_mask": None}  # an additive mask of zeros
    return None


def fold_constant_attention_masks(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` (Dynamo's graph, before aot_autograd; changed in place) with the attention
    masks that no input reaches folded into their SDPA calls (see the module's doc)."""
    masks: dict[torch.fx.Node, torch.Tensor | None] = {}  # a model's layers share one
    makers: dict[torch.fx.Node, None] = {}
    for call in list(gm.graph.nodes):
        if call.op != "call_function" or call.target is not F.scaled_dot_product_attention:
            continue
        arguments = dict(zip(("attn_mask", "dropout_p", "is_causal"), call.args[3:]))
        arguments.update(call.kwargs)
        mask, weights = arguments.get("attn_mask"), _weights_shape(call)
        if not isinstance(mask, torch.fx.Node) or arguments.get("is_causal") or weights is None:
            continue
        if mask not in masks:
            nodes = _maker(mask)
            masks[mask] = _computed(nodes, gm) if nodes else None
            makers.update(dict.fromkeys(nodes or ()))
        folded = _folded(masks[mask], weights) if masks[mask] is not None else None
        if folded is not None:
            arguments.update(folded)
            call.args, call.kwargs = call.args[:3], arguments
    # Only the masks' own nodes go: the graph's other unused nodes may mutate inputs.
    erased = False
    for node in reversed(list(gm.graph.nodes)):
        if node in makers and not node.users:
            gm.graph.erase_node(node)
            erased = True
    if erased:
        gm.recompile()
    return gm

"""Tensors a graph assembles from no input, computed once when it compiles.

torchvision's Swin builds each shifted-window block's attention mask in its forward
from sizes alone: a tensor of zeros, nine slice assignments, a window partition and a
masked fill. Decomposed, that is fills, slice_scatters and concatenations, which the
Triton target's host program ran at every call (swin_t: 25 `torch.full`, 36 clones and
15 `torch.cat` a call, in a row whose pace the host sets;
benchmarks/results/profile_cuda_host.md). Such a value is the same at every call: it is
computed here once, eagerly, and the graph reads it as a constant (lift_constants.py).

Only values assembled from pieces are folded (a scatter, a concatenation, a copy into a
slice: `_ASSEMBLING`). A value computed from indices alone (a causal mask from aranges,
DeBERTa's relative positions) stays in the graph: a kernel computes it where it reads
it, for less than loading it (recompute-index-values).
"""

from __future__ import annotations

import operator

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

aten = torch.ops.aten

_ASSEMBLING = frozenset({
    aten.slice_scatter.default, aten.select_scatter.default, aten.diagonal_scatter.default,
    aten.as_strided_scatter.default, aten.index_put.default, aten.scatter.src,
    aten.scatter.value, aten.scatter_add.default, aten.cat.default, aten.copy.default,
    aten.masked_scatter.default})
# A constant is kept for the graph's life: larger ones are computed at each call.
_MOST_BYTES = 64 << 20


def _is_static(value) -> bool:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return False
    if isinstance(value, (list, tuple)):
        return all(_is_static(v) for v in value)
    return True


def _computable(node: torch.fx.Node, constant: dict) -> bool:
    """Whether `node` computes a value of its constant inputs alone, the same at every
    call: a deterministic, functional aten op (or an item of one's results) of static
    arguments. (An uninitialized tensor counts: what reads it is `full_like`, whose
    values do not depend on it, or a read of memory that eager leaves undefined too.)"""
    if not all(constant.get(n, False) for n in node.all_input_nodes):
        return False
    if node.op == "get_attr":
        return True
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    op = node.target
    if not isinstance(op, torch._ops.OpOverload) or op._schema.is_mutable or \
            torch.Tag.nondeterministic_seeded in op.tags:
        return False
    return _is_static(node.args) and _is_static(list(node.kwargs.values()))


def evaluated(nodes: list[torch.fx.Node], gm: torch.fx.GraphModule) -> dict | None:
    """The values of `nodes` (of `gm`, in graph order, each reading only the ones
    before it), computed eagerly on real tensors; None where any of them fails (a
    symbolic size, an op that needs the graph's context)."""
    values: dict[torch.fx.Node, object] = {}
    try:
        with unset_fake_temporarily(), torch.no_grad():
            for node in nodes:
                if node.op == "get_attr":
                    values[node] = getattr(gm, node.target)
                    continue
                args = torch.fx.node.map_arg(node.args, values.__getitem__)
                kwargs = torch.fx.node.map_arg(node.kwargs, values.__getitem__)
                values[node] = (getattr(args[0], node.target)(*args[1:], **kwargs)
                                if node.op == "call_method" else node.target(*args, **kwargs))
    except Exception:  # noqa: BLE001 - a value that cannot be computed here stays
        return None
    return values


def _read_from_constant(gm: torch.fx.GraphModule, node: torch.fx.Node, value: torch.Tensor,
                        traced: torch.Tensor) -> None:
    """`node`'s readers read `value` (traced as `traced`) from a buffer of `gm` instead."""
    name = next(f"_tessel_constant_{n}" for n in range(len(gm.graph.nodes) + 1)
                if not hasattr(gm, f"_tessel_constant_{n}"))
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(node):
        attribute = gm.graph.get_attr(name)
    attribute.meta["val"] = traced
    node.replace_all_uses_with(attribute)


def _folding(gm: torch.fx.GraphModule, folds: list[torch.fx.Node]) -> dict | None:
    """The values of `folds` and of the constants they read, computed now."""
    needed = set(folds)
    for node in reversed(gm.graph.nodes):
        if node in needed:
            needed.update(node.all_input_nodes)
    return evaluated([node for node in gm.graph.nodes if node in needed], gm)


def _keepable(node: torch.fx.Node, constant: dict) -> bool:
    """Whether `node` is a constant tensor of static shape, small enough to keep."""
    value = node.meta.get("val")
    return constant[node] and isinstance(value, torch.Tensor) and \
        _is_static(list(value.shape)) and value.numel() * value.element_size() <= _MOST_BYTES


def _foldable(node: torch.fx.Node, constant: dict) -> bool:
    """Whether `node` is a constant worth keeping that a node computed at each call reads."""
    return _keepable(node, constant) and any(not constant[user] for user in node.users)


def _constants(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, bool]:
    constant: dict[torch.fx.Node, bool] = {}
    for node in gm.graph.nodes:
        constant[node] = _computable(node, constant)
    return constant


def folded_constants(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` (decomposed; changed in place) with each tensor that it assembles from no
    input read from a constant computed now (see the module's doc)."""
    constant = _constants(gm)
    assembled: dict[torch.fx.Node, bool] = {}  # the node's value needs an assembling op
    for node in gm.graph.nodes:
        assembled[node] = constant[node] and (node.target in _ASSEMBLING or any(
            assembled[n] for n in node.all_input_nodes))
    folds = [node for node in gm.graph.nodes if assembled[node] and _foldable(node, constant)]
    if not folds or (values := _folding(gm, folds)) is None:
        return gm
    for node in folds:
        _read_from_constant(gm, node, values[node], node.meta["val"])
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def _device(node: torch.fx.Node) -> torch.device | None:
    value = node.meta.get("val")
    return value.device if isinstance(value, torch.Tensor) else None


def _crosses(node: torch.fx.Node) -> bool:
    """Whether `node` reads a tensor of another device than its own (a copy between
    devices)."""
    return any(_device(n) not in (None, _device(node)) for n in node.all_input_nodes)


def constants_on_their_readers_devices(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` (changed in place) with each constant that crosses devices computed now and
    kept on the device that reads it: a CPU constant that a CUDA op reads (DeBERTa's
    `torch.log(torch.tensor(...))` dividing its relative positions), and a constant
    copied to the GPU (its `torch.tensor(mid - 1).type_as(positions)`). Left in the
    graph, each is a copy between devices that the graph is split around, its CPU
    piece and a copy from pageable memory that waits for the GPU's queue at every call,
    and a graph with CPU pieces that CUDA graph trees cannot replay. Only the crossing
    is computed now, also where constants read it (DeBERTa's relative positions, from
    aranges): what reads it stays in the graph, computed where it is read."""
    constant = _constants(gm)
    moves: dict[torch.fx.Node, torch.device] = {}
    for node in gm.graph.nodes:
        if not _keepable(node, constant):
            continue
        # (a copy between devices that reads it is computed now itself)
        readers = {_device(user) for user in node.users if not _crosses(user)} - {None}
        if _crosses(node):
            moves[node] = _device(node)
        elif _device(node).type == "cpu" and len(readers) == 1 and \
                next(iter(readers)).type == "cuda":
            moves[node] = next(iter(readers))
    if not moves or (values := _folding(gm, list(moves))) is None:
        return gm
    kept = {}
    try:  # an optimization: the graph as it is where it cannot be made
        for node, device in moves.items():
            fake_mode = getattr(node.meta["val"], "fake_mode", None)
            if fake_mode is not None:
                with unset_fake_temporarily():  # a forward compiles under Dynamo's fake mode
                    value = values[node].to(device)
                kept[node] = value, fake_mode.from_tensor(value)
    except Exception:  # noqa: BLE001
        return gm
    for node, (value, traced) in kept.items():
        _read_from_constant(gm, node, value, traced)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm

"""Inputs laid out as a permutation of a contiguous tensor, passed as that tensor.

A training step's forward saves nn.Linear's transposed weight (`t(weight)`, a view)
for its backward. The CPU target's compiled code reads contiguous inputs, and its host
program copied every other input first: for a 4-block MLP's backward, 9 copies of
1 MB, about a fifth of its time. A target that reads inputs through their strides
(Triton) needs this only where the graph permutes the input back into memory order
itself: attention's output, laid out (batch, tokens, heads, dims) by the fused kernel
and transposed to that before its projection, was copied by a kernel into the layout
it already had; passed permuted, the transposes cancel and the projection's gemm reads
a view. For the others, every input whose strides are a permutation of contiguous ones
is passed permuted into contiguous order (a view: no copy), and the graph permutes it
back, which the compiler folds into what reads it (a matmul reads the transpose
through its indexing maps).
"""

from __future__ import annotations

import torch
import torch.fx

from tessel.frontend.prepare_graph import dense_layout, view_chain

aten = torch.ops.aten


def contiguous_order(value) -> tuple[int, ...] | None:
    """The permutation of dims that makes `value` contiguous, where it is a non-contiguous
    permutation of a contiguous layout of static sizes; else None."""
    if (not isinstance(value, torch.Tensor) or value.numel() <= 1 or value.is_contiguous()
            or not dense_layout(value.shape, value.stride())):
        return None
    order = tuple(sorted(range(value.dim()), key=lambda d: (-value.stride(d), d)))
    return order if value.permute(order).is_contiguous() else None


def _permutation(node: torch.fx.Node) -> tuple[int, ...] | None:
    """The dims `node`, a permute or transpose, orders its input's in; else None."""
    if node.target == aten.permute.default:
        return tuple(d % len(node.args[1]) for d in node.args[1])
    if node.target == aten.transpose.int:
        rank = node.args[0].meta["val"].dim()
        dims = list(range(rank))
        first, second = node.args[1] % rank, node.args[2] % rank
        dims[first], dims[second] = dims[second], dims[first]
        return tuple(dims)
    return None


def _permuted_back_by_readers(node: torch.fx.Node, order: tuple[int, ...]) -> bool:
    """Whether every reader of `node` (through views of its shape) permutes it into
    memory order `order`."""
    users = list(node.users)
    for user in users:
        if user.op == "call_function" and user.target == aten.view.default and \
                tuple(user.meta["val"].shape) == tuple(node.meta["val"].shape):
            if not _permuted_back_by_readers(user, order):
                return False
        elif _permutation(user) != order:
            return False
    return bool(users)


def permuting_inputs(gm: torch.fx.GraphModule, only_permuted_back: bool = False
                     ) -> tuple[torch.fx.GraphModule, dict[str, tuple[int, ...]]]:
    """A copy of `gm` whose permuted inputs (`contiguous_order`) arrive in contiguous
    order and are permuted back first; with each such input's order, by name. An input
    that an output returns (as it is, or a view of it) keeps its layout: the host
    program returns it as the caller passed it. `only_permuted_back`: only the inputs
    whose readers all permute them into memory order."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    returned = {view_chain(r)[0] for r in results if isinstance(r, torch.fx.Node)}
    orders = {node.name: order for node in gm.graph.nodes
              if node.op == "placeholder" and node not in returned
              and (order := contiguous_order(node.meta.get("val"))) is not None
              and (not only_permuted_back or _permuted_back_by_readers(node, order))}
    if not orders:
        return gm, {}
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for node in placeholders:
        if node.name not in orders:
            continue
        order = orders[node.name]
        inverse = [order.index(d) for d in range(len(order))]
        with graph.inserting_after(placeholders[-1]):
            restored = graph.call_function(aten.permute.default, (node, inverse))
        for user in [u for u in node.users if u is not restored]:
            user.replace_input_with(node, restored)
        restored.meta["val"] = node.meta["val"]
        node.meta["val"] = node.meta["val"].permute(order)
        node.meta.pop("tensor_meta", None)  # the importer would read it before "val"
    return torch.fx.GraphModule(gm, graph), orders

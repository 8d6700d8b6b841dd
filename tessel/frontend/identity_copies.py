"""Copies that change nothing, left out of a graph before it is split.

Under autocast, aot_autograd's backward casts a batch norm's gradients to the dtype they
already have (`aten._to_copy` of an f32 weight gradient to float32, of a bf16 input
gradient to bfloat16). Compiled whole, such a copy folds into the kernel that computes
its value. In a split graph the partitioner may put the copy in another piece than its
value (the last piece, with the step's other gradients), whose host program must then
return new memory for what is one of its inputs: a clone, a copy kernel and its launch
per gradient (`split_graph.py`). A copy that keeps the dtype, device, layout and strides
of a value that nothing else reads, and that is new memory (not a graph input nor a
view of one), is that value.
"""

from __future__ import annotations

import operator

import torch
import torch.fx

aten = torch.ops.aten


def drop_identity_copies(graph: torch.fx.Graph) -> None:
    """Replace each copy of `graph` that changes nothing (module docstring) by its value."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is aten._to_copy.default \
                and _changes_nothing(node):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)


def _changes_nothing(copy: torch.fx.Node) -> bool:
    source = copy.args[0]
    if not isinstance(source, torch.fx.Node) or len(source.users) != 1 \
            or not _new_memory(source):
        return False
    if set(copy.kwargs) - {"dtype", "layout", "device", "non_blocking"}:
        return False  # a memory format asks for a layout of its own
    before, after = source.meta.get("val"), copy.meta.get("val")
    return (isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor)
            and before.dtype == after.dtype and before.device == after.device
            and before.layout == after.layout and before.shape == after.shape
            and before.stride() == after.stride())


def _new_memory(node: torch.fx.Node) -> bool:
    """Whether `node` computes new memory: a result of an op none of whose results
    aliases an input (an item of one, for an op of several results)."""
    if node.op == "call_function" and node.target is operator.getitem:
        node = node.args[0]
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    return all(result.alias_info is None for result in node.target._schema.returns)

"""Per-op fallback: split a graph around the ops tessel cannot compile.

When a graph fails on a named op, the nodes calling that op run eagerly and the rest
is cut into pieces (torch.fx's CapabilityBasedPartitioner), each compiled on its own;
a piece that fails on another op is split again, up to MAX_ROUNDS ops.
"""

from __future__ import annotations

import copy

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

MAX_ROUNDS = 8


class _Excluding(OperatorSupportBase):
    """Supports every call except those to the excluded targets."""

    def __init__(self, excluded: set[str]):
        self.excluded = excluded

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and not target_names(node) & self.excluded


def target_names(node: torch.fx.Node) -> set[str]:
    """Names a compiler message may use for the node's op: 'aten.zeta.default',
    'torch.aten.zeta', 'aten.zeta'."""
    name = str(node.target)  # e.g. "aten.special_zeta.default"
    base = name.rsplit(".", 1)[0] if name.count(".") >= 2 else name
    return {name, base, f"torch.{base}", f"torch.{name}"}


def split_around(gm: torch.fx.GraphModule, excluded: set[str]) -> tuple[torch.fx.GraphModule, list[str]]:
    """A copy of `gm` whose supported regions are submodules (names returned); the
    excluded ops stay in the top-level graph and run eagerly."""
    # A copy of the graph only, sharing gm's tensors: deep-copying the GraphModule
    # copies its example values too, which fails for fake CUDA tensors.
    copied = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    partitioner = CapabilityBasedPartitioner(copied, _Excluding(excluded),
                                             allows_single_node_partition=True)
    split = partitioner.partition_and_fuse()
    pieces = [node.target for node in split.graph.nodes if node.op == "call_module"]
    for node in split.graph.nodes:
        if node.op == "call_module":
            _copy_input_metadata(getattr(split, node.target), node)
    return split, pieces


def _copy_input_metadata(piece: torch.fx.GraphModule, call: torch.fx.Node) -> None:
    """The piece's placeholders get the example values of the arguments they receive."""
    placeholders = [n for n in piece.graph.nodes if n.op == "placeholder"]
    for placeholder, argument in zip(placeholders, call.args):
        if isinstance(argument, torch.fx.Node) and "val" in argument.meta:
            placeholder.meta["val"] = argument.meta["val"]

"""Per-op fallback: split a graph around the nodes tessel cannot compile.

When a graph fails on some of its nodes (those a failure is pinned on, or every call
of an op left native), those run eagerly and the rest is cut into pieces (torch.fx's
CapabilityBasedPartitioner), each compiled on its own; a piece that fails on other
nodes is split again, up to MAX_ROUNDS deep.
"""

from __future__ import annotations

import copy
from typing import Callable

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

MAX_ROUNDS = 8


class _Excluding(OperatorSupportBase):
    """Supports every call except the excluded ones."""

    def __init__(self, excluded: Callable[[torch.fx.Node], bool]):
        self.excluded = excluded

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and not self.excluded(node)


def target_names(node: torch.fx.Node) -> set[str]:
    """Names a compiler message may use for the node's op: 'aten.zeta.default',
    'torch.aten.zeta', 'aten.zeta'."""
    name = str(node.target)  # e.g. "aten.special_zeta.default"
    base = name.rsplit(".", 1)[0] if name.count(".") >= 2 else name
    return {name, base, f"torch.{base}", f"torch.{name}"}


def split_around(gm: torch.fx.GraphModule, excluded: Callable[[torch.fx.Node], bool]
                 ) -> tuple[torch.fx.GraphModule, list[str]]:
    """A copy of `gm` whose regions of calls not `excluded` are submodules (names
    returned); the excluded calls stay in the top-level graph and run eagerly."""
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

"""Per-op fallback: split a graph around the nodes tessel cannot compile.

When a graph fails on some of its nodes (those a failure is pinned on, or every call
of an op left native), those run eagerly and the rest is cut into pieces (torch.fx's
CapabilityBasedPartitioner), each compiled on its own; a piece that fails on other
nodes is split again, up to MAX_ROUNDS deep. A graph that communicates is cut in
program order instead (collectives.py): the partitioner would merge the compute
between a collective and its wait into the piece before or after them, and nothing
would overlap the communication.
"""

from __future__ import annotations

import copy
import operator
from typing import Callable

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from tessel.frontend.collectives import communicates, overlap_communication
from tessel.frontend.identity_copies import drop_identity_copies
from tessel.frontend.input_mutations import input_copies

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
    drop_identity_copies(copied.graph)
    if communicates(copied):
        overlap_communication(copied.graph)
        split = fuse_by_partitions(copied, _runs_in_program_order(copied.graph, excluded))
    else:
        partitioner = CapabilityBasedPartitioner(copied, _Excluding(excluded),
                                                 allows_single_node_partition=True)
        partitions = _inputs_written_where_computed(copied, partitioner.propose_partitions())
        split = partitioner.fuse_partitions(partitions)
    pieces = [node.target for node in split.graph.nodes if node.op == "call_module"]
    for node in split.graph.nodes:
        if node.op == "call_module":
            _copy_input_metadata(getattr(split, node.target), node)
    return split, pieces


def _inputs_written_where_computed(gm: torch.fx.GraphModule, partitions: list[Partition]
                                   ) -> list[Partition]:
    """`partitions`, each write of a graph input (`copy_(input, new_value)`, which
    aot_autograd puts at the graph's end, where the partitioner puts it in the last
    piece) moved into the piece that computes the new value, where every other reader
    of the input is in that piece too. That piece then writes the input
    (input_mutations.py), in place where write-inputs-in-place allows (a static KV
    cache's update), instead of returning the new value for a later piece to copy."""
    owner = {node: partition for partition in partitions for node in partition.nodes}
    for write in input_copies(gm):
        destination, value = write.args[0], write.args[1]
        piece = owner.get(value)
        if write.users or piece is None or write not in owner or owner[write] is piece:
            continue
        if all(owner.get(user) is piece for user in destination.users if user is not write):
            owner[write].remove_node(write)
            piece.add_node(write)
            owner[write] = piece
    return [partition for partition in partitions if partition.size()]


def _runs_in_program_order(graph: torch.fx.Graph, excluded) -> list[dict[torch.fx.Node, None]]:
    """The maximal runs of consecutive calls in `graph` that `excluded` (a predicate on
    nodes) leaves in, each a partition for torch.fx's `fuse_by_partitions`. An item
    taken from an excluded call's result stays out with it, and cuts no run: it
    depends on nothing the run computes."""
    runs: list[dict[torch.fx.Node, None]] = [{}]
    for node in graph.nodes:
        source = node.args[0] if node.target is operator.getitem else None
        if node.op != "call_function" or (isinstance(source, torch.fx.Node) and excluded(source)):
            continue
        if excluded(node):
            runs.append({})
        else:
            runs[-1][node] = None
    return [run for run in runs if run]


def _copy_input_metadata(piece: torch.fx.GraphModule, call: torch.fx.Node) -> None:
    """The piece's placeholders get the example values of the arguments they receive."""
    placeholders = [n for n in piece.graph.nodes if n.op == "placeholder"]
    for placeholder, argument in zip(placeholders, call.args):
        if isinstance(argument, torch.fx.Node) and "val" in argument.meta:
            placeholder.meta["val"] = argument.meta["val"]

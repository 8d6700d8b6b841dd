"""aot_autograd's partitioner: which forward values the backward reads from memory and
which it computes again.

"min-cut" is Inductor's: functorch's min_cut_rematerialization_partition, which saves
a smallest set of values (by bytes) from which the backward recomputes the cheap
element-wise ops it needs, never a matmul, convolution or random op. Recomputed ops
fuse into the backward's kernels, so the forward writes, and memory holds until the
backward, fewer activations. "save-all" is aot_autograd's default_partition: the
forward's graph as traced, saving every intermediate the backward reads.

Each partition adds what the forward saves for its backward to tessel.stats():
`tensors_saved_for_backward` and `bytes_saved_for_backward`, the tensors it computes
(not its inputs or views of them: parameters and the batch stay alive anyway), by the
partitioner's own size measure (a symbolic size at its hint).
"""

from __future__ import annotations

import torch.fx
from torch._functorch.partitioners import (
    _size_of,
    default_partition,
    min_cut_rematerialization_partition,
)
from torch.multiprocessing.reductions import StorageWeakRef

from tessel import counters

PARTITIONERS = {"min-cut": min_cut_rematerialization_partition, "save-all": default_partition}


def partition_function(name: str):
    """aot_autograd's `partition_fn` for the partitioner `name` (a PARTITIONERS key),
    counting what each forward saves."""
    partition = PARTITIONERS[name]

    def partition_counting_saved(joint: torch.fx.GraphModule, joint_inputs, *,
                                 num_fwd_outputs: int, **kwargs):
        forward, backward = partition(joint, joint_inputs,
                                      num_fwd_outputs=num_fwd_outputs, **kwargs)
        saved = computed_tensors_saved(forward, num_fwd_outputs)
        counters.count("tensors_saved_for_backward", len(saved))
        counters.count("bytes_saved_for_backward", sum(_size_of(node) for node in saved))
        return forward, backward
    return partition_counting_saved


def computed_tensors_saved(forward: torch.fx.GraphModule,
                           num_fwd_outputs: int) -> list[torch.fx.Node]:
    """The forward graph's results after its first `num_fwd_outputs` (the values saved
    for the backward) that are tensors in memory it allocates, each once."""
    def storage(node: torch.fx.Node) -> StorageWeakRef | None:
        value = node.meta.get("val")
        return StorageWeakRef(value.untyped_storage()) if isinstance(value, torch.Tensor) else None
    inputs = {storage(node) for node in forward.graph.find_nodes(op="placeholder")}
    (results,) = forward.graph.find_nodes(op="output")[0].args
    saved = {}
    for node in results[num_fwd_outputs:]:
        if isinstance(node, torch.fx.Node) and storage(node) not in inputs | {None}:
            saved[node] = None
    return list(saved)

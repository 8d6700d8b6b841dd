"""Functional collectives in a graph, and the order that overlaps their communication.

`torch.distributed._functional_collectives` (and DTensor, tensor parallel, FSDP2,
compiled autograd's DDP reducer, which trace through it) put collectives in a graph as
pairs of ops: the collective (`_c10d_functional.all_reduce`, `all_gather_into_tensor`,
`reduce_scatter_tensor`, ...) starts the communication and returns its output
tensor before the data is there, and `_c10d_functional.wait_tensor` waits for it.
They run as PyTorch's own calls between compiled pieces (native_ops.py), cut in
program order (partition.py) after `overlap_communication` moved each collective as
early and each wait as late as the graph allows: the compute between the two runs
while the process group communicates.
"""

from __future__ import annotations

import torch
import torch.fx

# The op namespaces of functional collectives: the ops, their autograd variants (seen
# before aot_autograd), and the legacy ones.
_NAMESPACES = frozenset({"_c10d_functional", "_c10d_functional_autograd", "c10d_functional"})


def is_collective(node: torch.fx.Node) -> bool:
    """Whether `node` calls a functional collective or waits for one."""
    return (node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
            and node.target.namespace in _NAMESPACES)


def is_wait(node: torch.fx.Node) -> bool:
    return is_collective(node) and node.target.__name__.startswith("wait_tensor")


def communicates(gm: torch.fx.GraphModule) -> bool:
    return any(is_collective(node) for node in gm.graph.nodes)


def overlap_communication(graph: torch.fx.Graph) -> None:
    """Reorder `graph` in place: every collective right after its inputs are computed
    (never before an earlier collective: every rank must issue them in one order),
    every wait right before the first node that reads what it waits for."""
    previous = None
    for node in [n for n in graph.nodes if is_collective(n) and not is_wait(n)]:
        position = {n: i for i, n in enumerate(graph.nodes)}
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        after = [*node.all_input_nodes, *placeholders[-1:], *([previous] if previous else [])]
        if after:
            max(after, key=position.__getitem__).append(node)
        previous = node
    for wait in [n for n in graph.nodes if is_wait(n)]:
        position = {n: i for i, n in enumerate(graph.nodes)}
        # The waited tensor's other readers too: they would read it before it arrived.
        readers = [*wait.users, *(user for waited in wait.all_input_nodes
                                  for user in waited.users if user is not wait)]
        later = [r for r in readers if position[r] > position[wait]]
        if later:
            min(later, key=position.__getitem__).prepend(wait)


"""Results eager lays out as a permutation of a contiguous tensor, computed in memory
order and returned as a permuted view.

The CPU target's compiled code writes contiguous results, and its host program copied
every result eager returns otherwise (channels-last, transposed) into eager's layout.
A channels-last network's output was transposed twice: SegFormer's classifier runs
channels-last, a kernel transposed its logits into [N, C, H, W] order, and the host
copied them back into eager's channels-last strides. Here such a result is computed
permuted into memory order (a contiguous tensor, whose transposes the compiler folds
into the kernel that produces it), and the host returns the inverse permutation of it,
a view with eager's strides, as for the inputs (permuted_inputs.py).
"""

from __future__ import annotations

import torch
import torch.fx

from tessel.frontend.permuted_inputs import contiguous_order
from tessel.frontend.prepare_graph import view_chain

aten = torch.ops.aten


def permuting_results(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` whose op-made results that eager lays out as a permutation of
    a contiguous tensor (`contiguous_order`) are views of such a tensor, which it
    computes; `gm` where there are none. A result that is a view, or that another
    result is or views, stays as it is: eager's results share its storage."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    nodes = [r for r in results if isinstance(r, torch.fx.Node)]
    roots = [view_chain(node)[0] for node in nodes]
    permuted = {node: order for node in nodes
                if roots.count(node) == 1 and node.op == "call_function"
                and (order := contiguous_order(node.meta.get("val"))) is not None}
    if not permuted:
        return gm
    graph = torch.fx.Graph()
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.output(graph.graph_copy(gm.graph, copies))
    new_output = next(n for n in reversed(graph.nodes) if n.op == "output")
    for node, order in permuted.items():
        result = copies[node]
        value = node.meta["val"]
        inverse = [order.index(d) for d in range(len(order))]
        with graph.inserting_before(new_output):
            in_memory_order = graph.call_function(aten.permute.default, (result, list(order)))
            in_memory_order.meta["val"] = value.permute(order)
            computed = graph.call_function(aten.clone.default, (in_memory_order,),
                                           {"memory_format": torch.contiguous_format})
            computed.meta["val"] = value.permute(order).contiguous()
            returned = graph.call_function(aten.permute.default, (computed, inverse))
            returned.meta["val"] = value
        new_output.replace_input_with(result, returned)
    return torch.fx.GraphModule(gm, graph)

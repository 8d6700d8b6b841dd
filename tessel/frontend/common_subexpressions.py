"""One node for each value an inference graph computes more than once.

aot_autograd merges the common subexpressions of a joint (training) graph, not those
of an inference graph. A decoder's inference graph computes the same values once per
layer: transformers' SDPA path turns the boolean attention mask into an additive one
in every layer (`where(mask, 0, -inf)`), one kernel launch and one buffer a layer in
every decode step, where one serves them all. torch's `fx_graph_cse` (what
aot_autograd runs on joint graphs) merges them; it keeps random ops, ops on either
side of a mutation, and returned values apart.
"""

from __future__ import annotations

import torch.fx
from torch._functorch.compile_utils import fx_graph_cse


def without_common_subexpressions(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm`, or a copy computing each repeated value once where it has some."""
    graph = fx_graph_cse(gm.graph)
    if len(graph.nodes) == len(gm.graph.nodes):
        return gm
    return torch.fx.GraphModule(gm, graph)

"""Remove `expand` nodes that expand nothing, before the graph reaches torch-mlir.

With dynamic shapes, Dynamo's graphs often `expand` a tensor to its own symbolic
sizes (e.g. `expand(x, [s0, s1, 128])` of an `[s0, s1, 128]` tensor). torch-mlir
cannot prove a dynamic dim equal to the target size, and lowers such a dim as a
broadcast from size 1 guarded by a runtime check that then fails: the compiled
graph would stop with "mismatched size for broadcast". The expand is a no-op, so its
users can read the input directly.
"""

from __future__ import annotations

import torch
import torch.fx


def _same_sizes(first: torch.Tensor, second: torch.Tensor) -> bool:
    if len(first.shape) != len(second.shape):
        return False
    return all(str(a) == str(b) for a, b in zip(first.shape, second.shape))


def remove_noop_expands(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with every expand to the input's own (symbolic) sizes removed, in place."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != torch.ops.aten.expand.default:
            continue
        source = node.args[0]
        before, after = source.meta.get("val"), node.meta.get("val")
        if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor) \
                and _same_sizes(before, after):
            node.replace_all_uses_with(source)
            gm.graph.erase_node(node)
            changed = True
    if changed:
        gm.recompile()
    return gm

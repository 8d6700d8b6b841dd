"""Rewrite dynamic-shape views that merge dims as explicit collapses before import.

torch-mlir lowers `aten.view` by matching input to output dims; with dynamic dims it
can guess the grouping wrong. Viewing an `[s0, s1, 16]` tensor as `[s0*s1, 16]`
lowers to a cast of the input to `[?, 1, 16]` and a collapse of the wrong dims: no
check fires, and the answer is silently wrong (nn.Linear on a 3-D input with
dynamic=True). Here every such view, whose output dims are products of consecutive
input dims, becomes `prims.collapse` nodes, which name the dims they merge, so
nothing is left to guess. Views that split dims stay: torch-mlir lowers those right,
while its `prims.split_dim` lowering builds invalid IR for dynamic sizes.
"""

from __future__ import annotations

import math

import sympy
import torch
import torch.fx

_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default,
          torch.ops.aten.reshape.default)


def _expr(size) -> sympy.Expr:
    return sympy.expand(size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(size))


def _collapses(before: list[sympy.Expr], after: list[sympy.Expr]) -> list[tuple[int, int]] | None:
    """The (start, end) dim ranges to collapse, left to right, that turn shape `before`
    into `after`; None if the view is not only such merges (a split, say)."""
    current, collapses, dim = list(before), [], 0
    while dim < len(after):
        if dim >= len(current):
            return None
        if current[dim] != after[dim]:
            end = next((end for end in range(dim + 1, len(current))
                        if sympy.expand(math.prod(current[dim:end + 1])) == after[dim]), None)
            if end is None:
                return None
            collapses.append((dim, end))
            current[dim:end + 1] = [after[dim]]
        dim += 1
    return collapses if len(current) == len(after) else None


def make_reshapes_explicit(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with its dynamic-shape views rewritten (in place; views of the graph's
    outputs are kept, as the host program recreates those)."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _VIEWS or node in output.all_input_nodes:
            continue
        source, value = node.args[0], node.meta.get("val")
        before = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        if not (isinstance(before, torch.Tensor) and isinstance(value, torch.Tensor)):
            continue
        if not any(isinstance(s, torch.SymInt) for s in (*before.shape, *value.shape)):
            continue  # static views lower correctly
        if not before.is_contiguous():
            continue
        collapses = _collapses([_expr(s) for s in before.shape], [_expr(s) for s in value.shape])
        if not collapses:
            continue
        current, fake = source, before
        with gm.graph.inserting_before(node), fake.fake_mode:
            for start, end in collapses:
                fake = torch.ops.prims.collapse.default(fake, start, end)
                current = gm.graph.call_function(torch.ops.prims.collapse.default,
                                                 (current, start, end))
                current.meta["val"] = fake
        node.replace_all_uses_with(current)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()
    return gm

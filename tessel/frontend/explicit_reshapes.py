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


def _steps(before: list[sympy.Expr], after: list[sympy.Expr]) -> list[tuple] | None:
    """Collapses ("collapse", start, end) and splits ("split", dim, outer size) that turn
    shape `before` into `after`, dim by dim from the left; None if the view is not a
    sequence of such merges and splits."""
    current, steps, dim = list(before), [], 0
    while dim < len(after):
        if dim >= len(current):
            return None
        if current[dim] == after[dim]:
            dim += 1
            continue
        merged = next((end for end in range(dim + 1, len(current))
                       if sympy.expand(math.prod(current[dim:end + 1])) == after[dim]), None)
        if merged is not None:
            steps.append(("collapse", dim, merged))
            current[dim:merged + 1] = [after[dim]]
            continue
        remainder = sympy.simplify(current[dim] / after[dim])
        if remainder.is_integer is False or remainder == current[dim]:
            return None
        steps.append(("split", dim, after[dim]))
        current[dim:dim + 1] = [after[dim], sympy.expand(remainder)]
        dim += 1
    return steps if len(current) == len(after) else None


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
        steps = _steps([_expr(s) for s in before.shape], [_expr(s) for s in value.shape])
        if not steps or any(kind == "split" for kind, _, _ in steps):
            continue  # torch-mlir lowers splitting views right, but not prims.split_dim
        # A split's outer size is output dim `dim`: the view's own size argument there
        # (an int or the graph's SymInt node), unless it is -1 (inferred).
        requested = list(node.args[1])
        if any(kind == "split" and not (isinstance(requested[dim], torch.fx.Node)
                                        or requested[dim] >= 0)
               for kind, dim, _ in steps):
            continue
        current, fake = source, before
        with gm.graph.inserting_before(node), fake.fake_mode:
            for kind, dim, detail in steps:
                if kind == "collapse":
                    target, args = torch.ops.prims.collapse.default, (current, dim, detail)
                    fake = target(fake, dim, detail)
                else:
                    outer = requested[dim]
                    target, args = torch.ops.prims.split_dim.default, (current, dim, outer)
                    fake = target(fake, dim, value.shape[dim])
                current = gm.graph.call_function(target, args)
                current.meta["val"] = fake
        node.replace_all_uses_with(current)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()
    return gm

"""Rewrite the shape ops torch-mlir lowers wrongly with dynamic sizes, before import.

- An `expand` to the tensor's own sizes (`expand(x, [s0, s1, 128])` of an
  `[s0, s1, 128]` tensor, common in Dynamo's graphs) is dropped: torch-mlir cannot
  prove a dynamic dim equal to the target size and lowers it as a broadcast from size
  1, guarded by a runtime check that then fails ("mismatched size for broadcast").
- A view that merges dims (`[s0, s1, 16]` as `[s0*s1, 16]`) becomes `prims.collapse`
  nodes, which name the dims they merge. torch-mlir lowers such an `aten.view` by
  matching input to output dims and can guess the grouping wrong: it cast the input to
  `[?, 1, 16]` and collapsed the wrong dims, with no check firing — a silently wrong
  answer (nn.Linear on a 3-D input with dynamic=True). Views that split dims stay:
  torch-mlir lowers those right, while its `prims.split_dim` lowering builds invalid IR
  for dynamic sizes.
- The remainder of a symbolic size (`s27 % 16`: CUDA's SDPA pads an attention mask to a
  multiple of 16 with it) becomes `s27 - (s27 // 16) * 16`: torch-mlir imports `%` on
  ints as `aten.fmod.int`, which it cannot lower.
- `torch.sym_sum` of symbolic ints (Dynamo's sum of sizes) becomes a chain of `+`: the
  FX importer has no mapping for it.
- Aliases torch-mlir lowers under another name (_ALIASES): `aten.true_divide.Tensor`,
  which float arithmetic turned into 0-d tensor ops emits under dynamic=True (GPT-2's
  `math.sqrt(2.0 / math.pi)`), is `aten.div.Tensor`; `torch.sym_float` of a symbolic
  size (interpolation's scales, linspace's step, std's count), which the FX importer
  has no mapping for, is `aten.Float.Scalar`, as the importer itself promotes ints, and
  `math.trunc` of a symbolic float (a scaled output size) is `aten.Int.Scalar`.
- A symbolic int where an op takes a tensor (`div.Tensor_mode(t, s0)`: adaptive
  pooling's window ends over a symbolic output size) becomes a 0-d int64 tensor, as the
  FX importer makes of a constant int there: it imported the int itself, which the op
  does not verify with.
"""

from __future__ import annotations

import math
import operator

import sympy
import torch
import torch.fx
from torch._guards import detect_fake_mode

from tessel.frontend.prepare_graph import host_can_view, view_chain

_ALIASES = {torch.ops.aten.true_divide.Tensor: torch.ops.aten.div.Tensor,
            torch.sym_float: torch.ops.aten.Float.Scalar,
            math.trunc: torch.ops.aten.Int.Scalar}
_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default,
          torch.ops.aten.reshape.default)


def _sizes(tensor: torch.Tensor) -> list[sympy.Expr]:
    return [sympy.expand(s.node.expr if isinstance(s, torch.SymInt) else sympy.Integer(s))
            for s in tensor.shape]


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


def _collapsed(gm: torch.fx.GraphModule, node: torch.fx.Node, source: torch.fx.Node,
               before: torch.Tensor, value: torch.Tensor) -> torch.fx.Node | None:
    """`prims.collapse` nodes computing the view `node` of `source`, inserted before it,
    or None where the view is not a contiguous, dynamic merge of dims."""
    if not any(isinstance(s, torch.SymInt) for s in (*before.shape, *value.shape)):
        return None  # static views lower correctly
    collapses = _collapses(_sizes(before), _sizes(value)) if before.is_contiguous() else None
    if not collapses:
        return None
    current, fake = source, before
    with gm.graph.inserting_before(node), fake.fake_mode:
        for start, end in collapses:
            fake = torch.ops.prims.collapse.default(fake, start, end)
            current = gm.graph.call_function(torch.ops.prims.collapse.default,
                                             (current, start, end))
            current.meta["val"] = fake
    return current


def _write_out_remainder(gm: torch.fx.GraphModule, node: torch.fx.Node) -> None:
    """Replace `a % b` on symbolic ints by `a - (a // b) * b` (Python's floor modulo)."""
    a, b = node.args
    value = node.meta.get("val")
    with gm.graph.inserting_before(node):
        quotient = gm.graph.call_function(operator.floordiv, (a, b))
        multiple = gm.graph.call_function(operator.mul, (quotient, b))
        remainder = gm.graph.call_function(operator.sub, (a, multiple))
    dividend, divisor = _value_of(a), _value_of(b)
    quotient.meta["val"] = dividend // divisor
    multiple.meta["val"] = quotient.meta["val"] * divisor
    remainder.meta["val"] = value
    node.replace_all_uses_with(remainder)
    gm.graph.erase_node(node)


def _write_out_sum(gm: torch.fx.GraphModule, node: torch.fx.Node) -> None:
    """Replace `torch.sym_sum([a, b, ...])` by `a + b + ...`."""
    (terms,) = node.args
    total, value = terms[0], _value_of(terms[0])
    with gm.graph.inserting_before(node):
        for term in terms[1:]:
            total = gm.graph.call_function(operator.add, (total, term))
            value = value + _value_of(term)
            total.meta["val"] = value
    node.replace_all_uses_with(total)
    gm.graph.erase_node(node)


def _tensor_operands_as_tensors(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    """Wrap the symbolic ints that `node` passes where its schema takes a tensor in
    `aten.scalar_tensor` nodes; whether there were any."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    wrapped = False
    for position, (argument, value) in enumerate(zip(schema.arguments, node.args)):
        if (isinstance(value, torch.fx.Node) and isinstance(value.meta.get("val"), torch.SymInt)
                and isinstance(argument.type, torch.TensorType)):
            with gm.graph.inserting_before(node):
                tensor = gm.graph.call_function(torch.ops.aten.scalar_tensor.default, (value,),
                                                {"dtype": torch.int64})
            with detect_fake_mode([a.meta.get("val") for a in node.all_input_nodes]):
                tensor.meta["val"] = torch.ops.aten.scalar_tensor.default(
                    value.meta["val"], dtype=torch.int64)
            node.update_arg(position, tensor)
            wrapped = True
    return wrapped


def _value_of(argument):
    return argument.meta["val"] if isinstance(argument, torch.fx.Node) else argument


def rewrite_dynamic_views(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with no-op expands dropped and dynamic merging views made explicit (in
    place). A graph output that the host program recreates as a view of a kernel result
    (signature.host_can_view) keeps its view; every other use reads the explicit merge.
    A training graph saves the merged input of a linear for its backward, and
    torch-mlir's wrong grouping of that view sized a buffer by the batch alone, which
    the gemm then overran (heap corruption)."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in _ALIASES:
            node.target = _ALIASES[node.target]
            changed = True
            continue
        if node.op == "call_function" and node.target in (operator.mod, torch.sym_sum):
            (_write_out_remainder if node.target is operator.mod else _write_out_sum)(gm, node)
            changed = True
            continue
        if node.op == "call_function" and _tensor_operands_as_tensors(gm, node):
            changed = True
        if node.op != "call_function" or not isinstance(node.args[0], torch.fx.Node):
            continue
        source = node.args[0]
        before, value = source.meta.get("val"), node.meta.get("val")
        if not (isinstance(before, torch.Tensor) and isinstance(value, torch.Tensor)):
            continue
        if node.target == torch.ops.aten.expand.default and _sizes(before) == _sizes(value):
            replacement = source
        elif node.target in _VIEWS:
            replacement = _collapsed(gm, node, source, before, value)
        else:
            continue
        if replacement is None:
            continue
        output_keeps_view = host_can_view(view_chain(node)[0])
        node.replace_all_uses_with(
            replacement, delete_user_cb=lambda user: user.op != "output" or not output_keeps_view)
        if not node.users:
            gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()
    return gm

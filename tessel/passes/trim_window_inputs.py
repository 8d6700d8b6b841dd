from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register

_DYNAMIC = -(2**63)  # ShapedType's dynamic size / offset marker in static_* attributes


def _largest(expr, ranges: dict[int, int]) -> int | None:
    """The largest value of a sum of dims times non-negative constants over the loop
    `ranges`; None for any other expression."""
    if isinstance(expr, ir.AffineDimExpr):
        return ranges[expr.position] - 1 if expr.position in ranges else None
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    if isinstance(expr, ir.AffineAddExpr):
        left, right = _largest(expr.lhs, ranges), _largest(expr.rhs, ranges)
        return None if left is None or right is None else left + right
    if isinstance(expr, ir.AffineMulExpr) and isinstance(expr.rhs, ir.AffineConstantExpr):
        left = _largest(expr.lhs, ranges)
        return None if left is None or expr.rhs.value < 0 else left * expr.rhs.value
    return None


def _loop_ranges(generic: ir.Operation, maps: list) -> dict[int, int]:
    """Each loop's static trip count, from the operands that a loop indexes directly."""
    ranges = {}
    for operand, affine_map in zip(generic.operands, maps):
        shape = ir.ShapedType(operand.type).shape if isinstance(operand.type, ir.ShapedType) else ()
        for size, expr in zip(shape, affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and size != _DYNAMIC:
                ranges[expr.position] = size
    return ranges


@register
@dataclass(frozen=True)
class TrimWindowInputsPass(ModulePass):
    """trim-window-inputs: give a window op (pooling) only the part of its input that
    its windows read.

    torch-mlir pads a ceil_mode pooling's input on every spatial dim by a stride's
    worth, also where no window reaches the padding (max_pool2d of 3 rows with a
    3-row window: one output row, input padded to 5). Once upstream
    `linalg-fold-unit-extent-dims` drops that unit output dim, the row index
    `oh * 2 + kh` becomes `kh`, which must then span the input's 5 rows: the op no
    longer verified, and the graph ran eagerly. The slice makes the sizes agree.
    """

    name: ClassVar[str] = "trim-window-inputs"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        with module.context:
            for generic in generics:
                self._trim(generic)

    @staticmethod
    def _trim(generic: ir.Operation) -> None:
        maps = ir.indexing_maps(generic)
        ranges = _loop_ranges(generic, maps)
        inputs = len(generic.operands) - len(generic.results)
        for number, (operand, affine_map) in enumerate(zip(generic.operands[:inputs], maps)):
            if not isinstance(operand.type, ir.RankedTensorType):
                continue
            tensor = ir.RankedTensorType(operand.type)
            if not tensor.has_static_shape:
                continue
            extents = [_largest(expr, ranges) for expr in affine_map.results]
            if None in extents or all(e + 1 >= s for e, s in zip(extents, tensor.shape)):
                continue
            sizes = [min(e + 1, s) for e, s in zip(extents, tensor.shape)]
            with generic.location, ir.InsertionPoint(generic):
                sliced = ir.Operation.create(
                    "tensor.extract_slice",
                    results=[ir.RankedTensorType.get(sizes, tensor.element_type)],
                    operands=[operand],
                    attributes={
                        "static_offsets": ir.DenseI64ArrayAttr.get([0] * len(sizes)),
                        "static_sizes": ir.DenseI64ArrayAttr.get(sizes),
                        "static_strides": ir.DenseI64ArrayAttr.get([1] * len(sizes)),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0, 0]),
                    })
            generic.operands[number] = sliced.result

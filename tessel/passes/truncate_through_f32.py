from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register


def _element(value_type):
    return ir.ShapedType(value_type).element_type if isinstance(value_type, ir.ShapedType) else value_type


def _in_f32(value_type):
    """`value_type` (a scalar or vector type) with f32 elements."""
    if isinstance(value_type, ir.VectorType):
        return ir.VectorType.get(value_type.shape, ir.F32Type.get())
    return ir.F32Type.get()


@register
@dataclass(frozen=True)
class TruncateThroughF32Pass(ModulePass):
    """truncate-through-f32: round f64 values to bf16 or f16 by way of f32, as eager does.

    c10's BFloat16 and Half are made from a float, so eager rounds a double to float
    first and then to the half type. LLVM lowers a direct f64 -> bf16 truncation to a
    call of compiler-rt's `__truncdfbf2`, which neither this process nor torch's
    libraries export: the JIT failed to link ("Symbols not found: [ __truncdfbf2 ]"),
    and the graph ran eagerly (float64 math rounded to bf16: special functions).
    """

    name: ClassVar[str] = "truncate-through-f32"

    def run(self, module: ir.Operation) -> None:
        truncations = ir.ops_where(module, lambda op: op.name == "arith.truncf" and isinstance(
            _element(op.operands[0].type), ir.F64Type) and isinstance(
            _element(op.results[0].type), (ir.BF16Type, ir.F16Type)))
        for truncation in truncations:
            source = truncation.operands[0]
            with truncation.location, ir.InsertionPoint(truncation):
                to_f32 = ir.Operation.create("arith.truncf", results=[_in_f32(source.type)],
                                             operands=[source])
            truncation.operands[0] = to_f32.result

"""Element types of the Triton kernels: how MLIR's are spelled in torch and Triton, the
type a kernel holds each in, and conversions between them."""

from __future__ import annotations

import math

from tessel import ir
from tessel.targets.triton.unsupported import UnsupportedKernel

# Result dtypes as torch spells them, for the host program.
TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16",
                "f64": "torch.float64", "i64": "torch.int64", "i32": "torch.int32",
                "i16": "torch.int16", "i8": "torch.int8", "i1": "torch.bool"}
TRITON_DTYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16",
                  "f64": "tl.float64", "i64": "tl.int64", "i32": "tl.int32",
                  "i16": "tl.int16", "i8": "tl.int8", "i1": "tl.int1"}
# The type a kernel holds values of each element type in: f16 and bf16 are loaded into
# f32, computed in f32 and rounded where the IR rounds (truncf) and where they are
# stored, as Inductor's kernels do and as eager's opmath computes each op. Rounding after
# every op instead loses precision in long fused chains, and Triton's interpreter (the
# CI's) computes bf16 arithmetic on the raw bits.
HELD_DTYPES = {**TRITON_DTYPES, "f16": "tl.float32", "bf16": "tl.float32"}
HALF = ("f16", "bf16")


def element_name(value: ir.Value) -> str:
    """The MLIR element type of a tensor or scalar value (f32, bf16, i64, ...), as the
    dtype tables spell it."""
    value_type = value.type
    element = value_type.element_type if isinstance(value_type, ir.ShapedType) else value_type
    name = str(element)
    if name == "index":
        return "i64"
    if name not in TRITON_DTYPES:
        raise UnsupportedKernel("tkern.kernel", f"element type {name} is not supported")
    return name


def scalar_literal(attribute: ir.Attribute) -> str:
    if isinstance(attribute, ir.FloatAttr):
        value = attribute.value
        if math.isnan(value):
            return "float('nan')"
        return repr(value) if math.isfinite(value) else f"float('{value}')"
    if isinstance(attribute, ir.BoolAttr):
        return str(attribute.value)
    if isinstance(attribute, ir.IntegerAttr):
        if str(attribute.type) == "i1":
            return str(bool(attribute.value))
        return str(attribute.value)
    if isinstance(attribute, ir.DenseElementsAttr) and attribute.is_splat:
        return scalar_literal(attribute.get_splat_value())
    raise UnsupportedKernel("arith.constant", f"constant {attribute} is not a scalar")


def cast(expression: str, element: str) -> str:
    """`expression` converted to `element`, as held: a conversion to f16/bf16 rounds
    and stays in f32."""
    if element in HALF:
        return f"{expression}.to({TRITON_DTYPES[element]}).to(tl.float32)"
    return f"{expression}.to({TRITON_DTYPES[element]})"


def unsigned(value: ir.Value, expression: str) -> str:
    """`expression` (an integer of `value`'s signless type) reinterpreted as unsigned;
    i1 is already 0 or 1."""
    element = element_name(value)
    if element == "i1":
        return expression
    if not element.startswith("i"):
        raise UnsupportedKernel("arith", f"an unsigned operation on {element}")
    return f"{expression}.to(tl.uint{element[1:]}, bitcast=True)"


def as_value(operand: tuple[str, str]) -> str:
    """A literal as a typed Triton scalar (tl functions take tensors), else as is."""
    expression, kind = operand
    if kind.startswith("literal:"):
        return f"tl.full([], {expression}, {HELD_DTYPES[kind.split(':')[1]]})"
    return expression


def cast_literal(literal: str, element: str) -> str:
    """A constant cast (arith.extf/truncf/sitofp/...) folded into its Python literal."""
    if "float(" in literal:
        return literal  # inf and nan stay what they are
    number = float(literal == "True") if literal in ("True", "False") else float(literal)
    if element.startswith("f") or element == "bf16":
        return repr(number)
    return str(bool(number)) if element == "i1" else str(int(number))

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, math

from tessel import ir
from tessel.passes.registry import ModulePass, register

# Cephes' expf: exp(x) = 2^n * p(r), x = n*ln2 + r, |r| <= ln2/2.
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)
# Eigen's (and MLIR's TanhApproximation's) 13/6 rational approximation of tanh.
_TANH_NUM = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
             4.89352455891786e-03)
_TANH_DEN = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
             4.89352518554385e-03)
# Eigen's rational approximation of erf on [-4, 4] (also XLA's and TVM's for f32):
# erf(x) = x P(x^2) / Q(x^2), abs error < 5e-7 (measured against float64 over
# [-6, 6]); beyond 4 erf rounds to +-1 in f32.
_ERF_NUM = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
            -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
            -1.60960333262415e-02)
_ERF_DEN = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
            -7.37332916720468e-03, -1.42647390514189e-02)


class _Builder:
    """Emits f32 arith ops at the current insertion point (scalar or vector alike)."""

    def __init__(self, like: ir.Value):
        self.type = like.type
        is_vector = isinstance(self.type, ir.VectorType)
        self.int_type = (ir.VectorType.get(self.type.shape, ir.IntegerType.get_signless(32))
                         if is_vector else ir.IntegerType.get_signless(32))

    def const(self, value: float) -> ir.Value:
        element = ir.FloatAttr.get(ir.F32Type.get(), value)
        if isinstance(self.type, ir.VectorType):
            return arith.constant(self.type, ir.DenseElementsAttr.get_splat(self.type, element))
        return arith.constant(self.type, element)

    def int_const(self, value: int) -> ir.Value:
        element = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)
        if isinstance(self.int_type, ir.VectorType):
            return arith.constant(self.int_type, ir.DenseElementsAttr.get_splat(self.int_type, element))
        return arith.constant(self.int_type, element)

    def horner(self, x: ir.Value, coefficients) -> ir.Value:
        result = self.const(coefficients[0])
        for c in coefficients[1:]:
            result = math.fma(result, x, self.const(c))
        return result

    def clamp(self, x, low, high):
        # maximumf/minimumf propagate NaN (maxnumf would turn NaN into a bound).
        return arith.minimumf(arith.maximumf(x, self.const(low)), self.const(high))


_EXP_LOW, _EXP_HIGH = -87.33654, 88.72283  # exp below ~2^-126 flushes to 0; above: inf


def _exp(b: _Builder, x: ir.Value) -> ir.Value:
    clamped = b.clamp(x, _EXP_LOW, _EXP_HIGH)
    n = math.floor(math.fma(clamped, b.const(1.44269504088896341), b.const(0.5)))
    r = math.fma(n, b.const(-0.693359375), clamped)
    r = math.fma(n, b.const(2.12194440e-4), r)
    p = b.horner(r, _EXP_POLY)
    p = math.fma(p, arith.mulf(r, r), arith.addf(r, b.const(1.0)))
    # 2^n as 2^(n-1) * 2, so that n = 128 (x near the top of the range) stays finite.
    exponent = arith.addi(arith.fptosi(b.int_type, n), b.int_const(126))
    scale = arith.bitcast(b.type, arith.shli(exponent, b.int_const(23)))
    result = arith.mulf(arith.mulf(p, scale), b.const(2.0))
    overflow = arith.cmpf(arith.CmpFPredicate.OGT, x, b.const(_EXP_HIGH))
    underflow = arith.cmpf(arith.CmpFPredicate.OLT, x, b.const(_EXP_LOW))
    result = arith.select(overflow, b.const(float("inf")), result)
    return arith.select(underflow, b.const(0.0), result)


def _tanh(b: _Builder, x: ir.Value) -> ir.Value:
    clamped = b.clamp(x, -7.90531110763549805, 7.90531110763549805)
    x2 = arith.mulf(clamped, clamped)
    p = arith.mulf(clamped, b.horner(x2, _TANH_NUM))
    q = b.horner(x2, _TANH_DEN)
    small = arith.cmpf(arith.CmpFPredicate.OLT, math.absf(x), b.const(0.0004))
    return arith.select(small, x, arith.divf(p, q))


def _erf(b: _Builder, x: ir.Value) -> ir.Value:
    clamped = b.clamp(x, -4.0, 4.0)
    x2 = arith.mulf(clamped, clamped)
    ratio = arith.divf(arith.mulf(clamped, b.horner(x2, _ERF_NUM)), b.horner(x2, _ERF_DEN))
    # The rational overshoots 1 by up to 4e-7 near the clamp.
    return b.clamp(ratio, -1.0, 1.0)


_APPROXIMATIONS = {"math.exp": _exp, "math.tanh": _tanh, "math.erf": _erf}


@register
@dataclass(frozen=True)
class ApproximateMathPass(ModulePass):
    """approximate-math: replace f32 exp/tanh/erf with polynomials that vectorize.

    LLVM lowers math.exp and friends to scalar libm calls, which block loop
    vectorization. These approximations use only arith/math.fma ops and propagate NaN:
    exp (Cephes; results below 2^-126 flush to 0), tanh (Eigen's rational, abs error
    ~2e-7), erf (Eigen's rational, abs error < 5e-7, relative < 3e-7 below 0.5:
    a third of the ops of a Taylor series and Abramowitz-Stegun's exp-based form).
    Other element types keep their libm calls.
    """

    name: ClassVar[str] = "approximate-math"

    def run(self, module: ir.Operation) -> None:
        targets = ir.ops_where(module, lambda op: op.name in _APPROXIMATIONS
                               and _element_type_is_f32(op.results[0].type))
        for op in targets:
            with ir.InsertionPoint(op), op.location:
                operand = op.operands[0]
                replacement = _APPROXIMATIONS[op.name](_Builder(operand), operand)
            op.results[0].replace_all_uses_with(replacement)
            op.erase()


def _element_type_is_f32(value_type: ir.Type) -> bool:
    if isinstance(value_type, ir.VectorType):
        value_type = value_type.element_type
    return isinstance(value_type, ir.F32Type)

"""The ops of a kernel body (arith, math, affine.apply) as Triton expressions, by name.

Each rule takes the op and its operands twice: `typed`, as Triton values (a literal as
a typed tl.full scalar, which tl functions need), and `args`, as the body holds them
(literals stay Python numbers, so that Python computes on them in its own types where
all operands are literals). It returns the expression of the op's result.
"""

from __future__ import annotations

from collections.abc import Callable

from tessel import ir
from tessel.targets.triton.dtypes import (
    HALF,
    TRITON_DTYPES,
    cast,
    element_name,
    scalar_literal,
    unsigned,
)
from tessel.targets.triton.indexing import from_affine, named, text
from tessel.targets.triton.unsupported import UnsupportedKernel

Rule = Callable[[ir.Operation, list[str], list[str]], str]

_BINARY = {"arith.addf": "+", "arith.addi": "+", "arith.subf": "-", "arith.subi": "-",
           "arith.mulf": "*", "arith.muli": "*", "arith.divf": "/", "arith.andi": "&",
           "arith.ori": "|", "arith.xori": "^",
           # Triton's integer // and % truncate toward zero, as divsi and remsi do.
           "arith.divsi": "//", "arith.remsi": "%"}
_UNARY_CALLS = {"math.exp": "tl.exp", "math.exp2": "tl.exp2", "math.log": "tl.log",
                "math.log2": "tl.log2", "math.sqrt": "tl.sqrt", "math.rsqrt": "tl.rsqrt",
                "math.absf": "tl.abs", "math.absi": "tl.abs", "math.erf": "tl.erf",
                "math.sin": "tl.sin", "math.cos": "tl.cos", "math.floor": "tl.floor",
                "math.ceil": "tl.ceil"}
_BINARY_CALLS = {"arith.maximumf": "_maximum", "arith.minimumf": "_minimum",
                 "arith.maxnumf": "tl.maximum", "arith.maxsi": "tl.maximum",
                 "arith.minnumf": "tl.minimum", "arith.minsi": "tl.minimum"}
_CMPF = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}
# Unordered predicates: true when either side is NaN, else the ordered comparison.
_CMPF_UNORDERED = {"ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<="}
CMPI_OPERATORS = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
                  "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
CASTS = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi",
         "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast")
_CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt",
                    "uge", "ult", "ule", "une", "uno", "true"]
CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def expression(op: ir.Operation, typed: list[str], args: list[str]) -> str:
    """The Triton expression of body op `op`'s result."""
    rule = OPS.get(op.name)
    if rule is None:
        raise UnsupportedKernel(op.name, "no Triton equivalent in tessel yet")
    return rule(op, typed, args)


def _binary(operator: str) -> Rule:
    return lambda op, typed, args: f"{args[0]} {operator} {args[1]}"


def _unary_call(function: str) -> Rule:
    """A math function (of f16/bf16 too: they are held in f32, the type Triton's exp,
    log, ... take)."""
    return lambda op, typed, args: f"{function}({typed[0]})"


def _binary_call(function: str) -> Rule:
    return lambda op, typed, args: f"{function}({typed[0]}, {typed[1]})"


def _unsigned_call(function: str) -> Rule:
    def rule(op, typed, args):
        a, b = (unsigned(op.operands[i], typed[i]) for i in range(2))
        return f"{function}({a}, {b}).to({TRITON_DTYPES[element_name(op.results[0])]})"
    return rule


def _tanh(op, typed, args) -> str:
    # 1 - 2 / (exp(2x) + 1): exact limits at +-inf; libdevice.tanh does not run in
    # TRITON_INTERPRET mode, where the tests check these kernels.
    return f"(1.0 - 2.0 / (tl.exp(2.0 * {typed[0]}) + 1.0))"


def _log1p(op, typed, args) -> str:
    # Goldberg's log(u) * x / (u - 1), u = 1 + x: exact for small x, where log(1 + x)
    # loses x's low bits (T5's and DeBERTa's log-bucketed positions).
    x = typed[0]
    u = f"({x} + 1.0)"
    return (f"tl.where({u} == 1.0, {x}, tl.where({x} == float('inf'), {x}, "
            f"tl.log({u}) * ({x} / ({u} - 1.0))))")


def _expm1(op, typed, args) -> str:
    # Kahan's (u - 1) * x / log(u), u = exp(x), for the same reason.
    x = typed[0]
    u = f"tl.exp({x})"
    return (f"tl.where({u} == 1.0, {x}, tl.where(({u} - 1.0 == -1.0) | ({u} == "
            f"float('inf')), {u} - 1.0, ({u} - 1.0) * ({x} / tl.log({u}))))")


def _select(op, typed, args) -> str:
    return f"tl.where({typed[0]}, {typed[1]}, {typed[2]})"


def _negf(op, typed, args) -> str:
    return f"-{args[0]}"


def _cmpf(op, typed, args) -> str:
    predicate = _CMPF_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
    a, b = args
    if predicate in _CMPF:
        return f"{a} {_CMPF[predicate]} {b}"
    if predicate in _CMPF_UNORDERED:
        return f"(({a} != {a}) | ({b} != {b}) | ({a} {_CMPF_UNORDERED[predicate]} {b}))"
    if predicate == "uno":
        return f"(({a} != {a}) | ({b} != {b}))"
    if predicate == "ord":
        return f"(({a} == {a}) & ({b} == {b}))"
    if predicate == "one":
        return f"(({a} == {a}) & ({b} == {b}) & ({a} != {b}))"
    raise UnsupportedKernel(op.name, f"predicate {predicate}")


def _cmpi(op, typed, args) -> str:
    predicate = CMPI_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
    a, b = args
    if predicate.startswith("u"):  # ult, ule, ugt, uge compare the bits unsigned
        a, b = (unsigned(op.operands[i], typed[i]) for i in range(2))
    return f"{a} {CMPI_OPERATORS[predicate]} {b}"


def _convert(op, typed, args) -> str:
    return cast(typed[0], element_name(op.results[0]))


def _zero_extend(op, typed, args) -> str:
    # The signed Triton type of the source would sign-extend.
    return cast(unsigned(op.operands[0], typed[0]), element_name(op.results[0]))


def _rounding_division(step: str) -> Rule:
    """floordivsi (step -1 where the signs differ) or ceildivsi (+1 where they agree):
    Triton's // truncates toward zero, so the quotient steps by one where the division
    is inexact and rounds the other way."""
    def rule(op, typed, args):
        a, b = args
        q = f"({a} // {b})"
        signs = "!=" if step == "-" else "=="
        stepped = f"tl.where(({a} < 0) {signs} ({b} < 0), {q} {step} 1, {q})"
        return f"tl.where({a} % {b} != 0, {stepped}, {q})"
    return rule


def _affine_apply(op, typed, args) -> str:
    """Index arithmetic on loop indices (an arange's)."""
    affine_map = ir.AffineMapAttr(op.attributes["map"]).value
    (result,) = affine_map.results
    operands = [named(arg) for arg in args]
    return text(from_affine(result, operands[:affine_map.n_dims], operands[affine_map.n_dims:]))


def _power(op, typed, args) -> str:
    """Small constant exponents as products or a square root; any other, `_power` in
    f32 (Adam's bias corrections raise betas to a step count held in a tensor)."""
    exponent = ir.operation_of(op.operands[1].owner)
    if exponent is not None and exponent.name == "arith.constant":
        value = float(scalar_literal(exponent.attributes["value"]))
        if value == 0.5:
            return f"tl.sqrt({typed[0]})"
        if value == int(value) and 1 <= value <= 4:
            return " * ".join([args[0]] * int(value))
    element = element_name(op.results[0])
    power = f"_power({typed[0]}.to(tl.float32), {typed[1]}.to(tl.float32))"
    return power if element in ("f32", *HALF) else f"{power}.to({TRITON_DTYPES[element]})"


OPS: dict[str, Rule] = {
    **{name: _binary(operator) for name, operator in _BINARY.items()},
    **{name: _unary_call(function) for name, function in _UNARY_CALLS.items()},
    **{name: _binary_call(function) for name, function in _BINARY_CALLS.items()},
    **{name: _convert for name in CASTS},
    "math.tanh": _tanh,
    "math.log1p": _log1p,
    "math.expm1": _expm1,
    "arith.negf": _negf,
    "arith.maxui": _unsigned_call("tl.maximum"),
    "arith.minui": _unsigned_call("tl.minimum"),
    "arith.select": _select,
    "arith.cmpf": _cmpf,
    "arith.cmpi": _cmpi,
    "arith.extui": _zero_extend,
    "arith.uitofp": _zero_extend,
    "arith.floordivsi": _rounding_division("-"),
    "arith.ceildivsi": _rounding_division("+"),
    "affine.apply": _affine_apply,
    "math.fpowi": _power,
    "math.powf": _power,
}

"""Index expressions of the Triton kernels: sympy expressions over the kernel's lane
index `r`, its program-derived row indices, loop variables, size parameters and
strides, built from MLIR affine maps and printed to Triton text by one printer.

Indices are never negative, so floor division and modulo are Python's // and %, which
Triton's (truncating) operators agree with there. They are functions of their own
(`FloorDiv`, `Modulo`) rather than sympy's floor and Mod, which rewrite a quotient into
rationals that a printer would have to take apart again: these fold only what is plain
(literals, a divisor of 1) and print as written.
"""

from __future__ import annotations

import math

import sympy
from sympy.printing.str import StrPrinter

from tessel import ir
from tessel.targets.triton.unsupported import UnsupportedKernel

Index = sympy.Expr
Extent = int | sympy.Expr     # a static extent, or an expression of size parameters


class FloorDiv(sympy.Function):
    """a // b of nonnegative integers."""
    nargs = 2
    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1 or a == 0:
            return a
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        return None


class Modulo(sympy.Function):
    """a % b of nonnegative integers."""
    nargs = 2
    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1 or a == 0:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) % int(b))
        return None


def symbol(name: str) -> sympy.Symbol:
    """A kernel variable or parameter that indices are computed from (`r`, `row0`,
    `size1`, `in0_stride2`, a gemm tile's `rm[:, None]`): an integer, never negative."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def named(value: str) -> Index:
    """A value a kernel body computed (its Triton text: a variable, or a literal) as an
    index, where it indexes a load or feeds affine.apply."""
    if value.isdigit():
        return sympy.Integer(int(value))
    return symbol(value if value.isidentifier() else f"({value})")


LANES = symbol("r")
ZERO = sympy.Integer(0)


def points(extents: list[Extent]) -> Extent:
    """The number of points of a box of `extents`: an int where all are static."""
    return math.prod(extents)


def from_affine(expr: ir.AffineExpr, dims: list[Index], symbols: list[Index] = ()) -> Index:
    """An affine expression over the loop indices `dims` (strided and shifted reads,
    such as a convolution's im2col gather, are sums and products) and its symbols'
    values."""
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    if isinstance(expr, ir.AffineConstantExpr):
        return sympy.Integer(expr.value)
    for kind, combine in _AFFINE_OPERATORS:
        if isinstance(expr, kind):
            return combine(from_affine(expr.lhs, dims, symbols),
                           from_affine(expr.rhs, dims, symbols))
    raise UnsupportedKernel("linalg.generic", f"an indexing expression {expr}")


_AFFINE_OPERATORS = ((ir.AffineAddExpr, lambda a, b: a + b),
                     (ir.AffineMulExpr, lambda a, b: a * b),
                     (ir.AffineFloorDivExpr, FloorDiv),
                     (ir.AffineModExpr, Modulo))


def through_map(affine_map: ir.AffineMap, dims: list[Index]) -> list[Index]:
    """The point `affine_map` reads at the loop indices `dims`."""
    return [from_affine(expr, dims) for expr in affine_map.results]


def walked(extent: list[Extent], fastest_first: list[int], flat: Index = LANES) -> list[Index]:
    """Per dim of `extent`, its index where the flat index `flat` walks the
    `fastest_first` dims (the others, of size 1, are 0)."""
    indices, inner = [ZERO] * len(extent), 1
    for dim in fastest_first:
        indices[dim] = Modulo(FloorDiv(flat, inner), extent[dim])
        inner = inner * extent[dim]
    return indices


def address(strides: list[Index], offsets: list[Index], indices: list[Index]) -> Index:
    """The element offset of a tile's point: each dim's offset plus index, times its
    stride."""
    return sympy.Add(*[(offset + index) * stride
                       for stride, offset, index in zip(strides, offsets, indices)])


def strides(pointer: str, rank: int) -> list[sympy.Symbol]:
    """The stride parameters of a kernel's pointer, one per dim."""
    return [symbol(f"{pointer}_stride{d}") for d in range(rank)]


def is_position(index: Index) -> bool:
    """Whether an index is a fixed position (a window's), the same on every lane."""
    return index.is_Integer


class _TritonPrinter(StrPrinter):
    """Index expressions as Triton (Python) text: // and % for FloorDiv and Modulo,
    each in parentheses of its own."""

    def _operand(self, expr) -> str:
        text = self._print(expr)
        return text if expr.is_Atom or isinstance(expr, (FloorDiv, Modulo)) else f"({text})"

    def _print_FloorDiv(self, expr) -> str:
        return f"({self._operand(expr.args[0])} // {self._operand(expr.args[1])})"

    def _print_Modulo(self, expr) -> str:
        return f"({self._operand(expr.args[0])} % {self._operand(expr.args[1])})"

    def _print_Pow(self, expr, rational=False) -> str:
        # size0 * size0 collects into size0**2: a product again (Triton's JIT has no
        # integer power).
        base, exponent = expr.args
        if not (exponent.is_Integer and exponent > 0):
            raise UnsupportedKernel("linalg.generic", f"an index expression {expr}")
        return "*".join([self._operand(base)] * int(exponent))


_PRINTER = _TritonPrinter()


def text(expr: Index | int) -> str:
    """An index expression as Triton text."""
    return _PRINTER.doprint(expr)

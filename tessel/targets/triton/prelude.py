"""The helpers every generated Triton module starts with."""

# Helpers the generated module defines once (see PRELUDE): reductions that keep NaNs,
# as arith.maximumf/minimumf do (tl.max and tl.min drop them).
PRELUDE = '''\
import triton
import triton.language as tl


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _minimum(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _product(a, b):
    return a * b


@triton.jit
def _bitwise_and(a, b):
    return a & b


@triton.jit
def _bitwise_or(a, b):
    return a | b


@triton.jit
def _power(x, y):
    # powf through exp2 and log2 (libdevice.pow does not run in TRITON_INTERPRET mode,
    # where the tests check these kernels): a negative base takes an integral
    # exponent's sign and is NaN otherwise; x ** 0 and 1 ** y are 1.
    magnitude = tl.exp2(y * tl.log2(tl.abs(x)))
    integral = y == tl.floor(y)
    odd = tl.floor(y * 0.5) * 2.0 != y
    signed = tl.where(odd, -magnitude, magnitude)
    result = tl.where(x < 0, tl.where(integral, signed, float("nan")), magnitude)
    return tl.where(y == 0, 1.0, tl.where(x == 1, 1.0, result))
'''

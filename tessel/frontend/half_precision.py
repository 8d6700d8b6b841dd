"""Half-precision ops computed in float32 and rounded once, as eager computes them.

For float16 and bfloat16 tensors, eager's kernels accumulate sums, scans and pools in
float32 and compute fused arithmetic (addcdiv's a + v * b / c) in float32 (PyTorch's
opmath and accumulation types), rounding each result once; PyTorch's own decompositions
of such ops say so with `pw_cast_for_opmath` and `type_casts`. torch-mlir lowers the ops
below in the tensor's own dtype instead, rounding at every step: the OpInfo sweep's
bf16 and fp16 modes found sums of squares overflowing fp16 (linalg.vector_norm and dist
gave inf where eager gives 8.48 and 30.95), variances 0.6 off, scans and averages
drifting, fmod off by 5%. Each op here takes its half-precision tensors widened to
float32 and rounds its results back, and the widening fuses into the op's kernel; the
gpu pipeline multiplies a widened batch matmul's operands narrow again, accumulating in
float32 (narrow-matmul-operands).
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree

aten = torch.ops.aten

HALF = (torch.float16, torch.bfloat16)

OPS = [
    aten.sum.default, aten.sum.dim_IntList, aten.mean.default, aten.mean.dim,
    aten.cumsum.default, aten.cumprod.default, aten.logcumsumexp.default,
    aten.var.correction, aten.var_mean.correction, aten.linalg_vector_norm.default,
    aten.avg_pool2d.default, aten.avg_pool3d.default, aten.bmm.default,
    aten.addcdiv.default, aten.addcmul.default, aten.logaddexp.default,
    aten.logaddexp2.default, aten.fmod.Tensor, aten.fmod.Scalar,
]


def _half_dtype(args, kwargs) -> torch.dtype | None:
    """The half-precision dtype the op computes in: the one it is asked for (`dtype`,
    which its input is first cast to), else the one dtype of its floating tensors;
    None where that is no half-precision dtype."""
    if kwargs.get("dtype") is not None:
        return kwargs["dtype"] if kwargs["dtype"] in HALF else None
    dtypes = {leaf.dtype for leaf in pytree.tree_leaves((args, kwargs))
              if isinstance(leaf, torch.Tensor) and leaf.is_floating_point()}
    return dtypes.pop() if len(dtypes) == 1 and dtypes <= set(HALF) else None


def _in_float32(op: torch._ops.OpOverload, decomposition):
    """`op` computed in float32 for half-precision inputs; else `decomposition`, the
    table's own (if any)."""
    def computed(*args, **kwargs):
        dtype = _half_dtype(args, kwargs)
        if dtype is None:
            return NotImplemented if decomposition is None else decomposition(*args, **kwargs)
        widened_args, widened_kwargs = pytree.tree_map_only(
            torch.Tensor, lambda t: t.to(dtype).float() if t.is_floating_point() else t,
            (args, kwargs))
        if "dtype" in kwargs:
            widened_kwargs["dtype"] = torch.float32
        result = op(*widened_args, **widened_kwargs)
        return pytree.tree_map_only(
            torch.Tensor, lambda t: t.to(dtype) if t.dtype == torch.float32 else t, result)
    return computed


def half_precision_decompositions(table: dict) -> dict:
    """The entries that compute OPS in float32 for half-precision inputs, each falling
    back to `table`'s own decomposition of the op for other inputs."""
    return {op: _in_float32(op, table.get(op)) for op in OPS}

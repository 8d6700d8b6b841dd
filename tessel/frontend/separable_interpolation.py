"""Linear interpolation (F.interpolate's bilinear and trilinear modes) one spatial dim
at a time, on the CPU.

PyTorch's decomposition reads the 2**d corners of every output point through index
tensors: four gathers an element for a bilinear upsample, each at a column computed
from the output's column, so the CPU kernel that computes it stays scalar. Done one dim
at a time, the last dim first, each pass blends two points of its own dim: the pass
over the last dim gathers along the row, but only over the input's rows (a 4x upsample
of a map: a quarter of the output's points), and every pass over an outer dim reads two
whole rows that it picks once a row, which vectorizes. The arithmetic is the
decomposition's: the last dim's blend first, then each outer dim's, as
`v1 + (v2 - v1) * weight`, so results are the same numbers. A dim whose size does not
change and whose scale is 1 is the identity (eager's kernel copies it): it is skipped.
The GPU keeps PyTorch's form, which its pipeline fuses into one gather kernel, and so
does a graph differentiated through the interpolation (its backward is untried).
"""

from __future__ import annotations

import math

import torch
import torch.fx
import torch.nn.functional as F
from torch._decomp import decompositions as torch_decompositions
from torch._prims_common import suggest_memory_format

aten = torch.ops.aten


def _interpolate_dim(x: torch.Tensor, dim: int, out_size: int, align_corners: bool,
                     scale: float | None) -> torch.Tensor:
    """`x` linearly interpolated along `dim` to `out_size` points, as PyTorch's
    `_upsample_linear` computes each dim (its `get_values`)."""
    in_size = x.shape[dim]
    if out_size == in_size and scale in (None, 1.0):
        return x
    scale_factor = torch_decompositions._compute_scale(in_size, out_size, align_corners,
                                                       scale)
    points = torch.arange(out_size, device=x.device).to(dtype=x.dtype)
    source = torch_decompositions._compute_source_index(
        scale_factor, points, align_corners).clamp(min=0.0)
    low = source.to(torch.int64)
    high = (low + 1).clamp(max=in_size - 1)
    weight = (source - low).clamp(0.0, 1.0).view([out_size] + [1] * (x.dim() - 1 - dim))
    # index_select, not index: the other dims stay loop indices (aten.index makes an
    # index tensor of each), so the passes over outer dims read consecutive elements.
    first = aten.index_select(x, dim, low)
    second = aten.index_select(x, dim, high)
    return first + torch.mul(second - first, weight)


def upsample_linear_by_dims(x: torch.Tensor, output_size, align_corners: bool,
                            scales) -> torch.Tensor:
    """aten.upsample_{linear1d,bilinear2d,trilinear3d} of a floating-point `x`, one
    pass a spatial dim, the last dim first, in `x`'s memory order; the result laid out
    as eager lays it out (channels-last for a channels-last `x`)."""
    compute = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    memory_format = suggest_memory_format(x)
    # A channels-last map is interpolated as it is laid out, [N, H, W, C]: each pass
    # blends whole rows of channels, and the passes read and write them in memory
    # order (SegFormer's decode head upsamples its MLPs' token rows so; in [N, C, H, W]
    # order, the last pass wrote every channel of a point across memory).
    order = list(range(x.dim()))
    if memory_format in (torch.channels_last, torch.channels_last_3d):
        order = [0, *range(2, x.dim()), 1]
    laid_out = result = x.to(compute).permute(order)
    spatial = order.index(2)
    for offset in reversed(range(len(output_size))):
        result = _interpolate_dim(result, spatial + offset, output_size[offset],
                                  align_corners, scales[offset])
    if result is laid_out:  # every pass the identity: a new tensor all the same
        result = result.clone()
    result = result.permute([order.index(d) for d in range(x.dim())])
    return result.to(x.dtype).contiguous(memory_format=memory_format)


_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _per_dim(value, dims: int) -> list | None:
    values = list(value) if isinstance(value, (list, tuple)) else [value] * dims
    return values if len(values) == dims else None


def _interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    """F.interpolate, whose linear modes go by dims (`upsample_linear_by_dims`) for a
    floating-point map of static size on the CPU, in a graph that is not differentiated
    through it, with the plain forms of arguments: an int size or number scales per
    spatial dim. Every other call is F.interpolate's own."""
    dims = input.dim() - 2
    sizes = _per_dim(size, dims) if size is not None else None
    factors = _per_dim(scale_factor, dims) if scale_factor is not None else None
    plain = (_LINEAR_MODES.get(mode) == dims and not antialias
             and input.device.type == "cpu" and input.is_floating_point()
             and not (input.requires_grad and torch.is_grad_enabled())
             and (sizes is None) != (factors is None)
             and all(isinstance(n, int) for n in input.shape)
             and all(isinstance(n, int) for n in sizes or [])
             and all(isinstance(f, (int, float)) and not isinstance(f, bool)
                     for f in factors or []))
    if not plain:
        return F.interpolate(input, size, scale_factor, mode, align_corners,
                             recompute_scale_factor, antialias)
    if sizes is not None:
        return upsample_linear_by_dims(input, sizes, bool(align_corners), [None] * dims)
    # F.interpolate's output size from scales, and the scales its kernel then uses.
    factors = [float(f) for f in factors]
    sizes = [math.floor(float(n) * f) for n, f in zip(input.shape[2:], factors)]
    scales = [None] * dims if recompute_scale_factor else factors
    return upsample_linear_by_dims(input, sizes, bool(align_corners), scales)


def interpolate_by_dims(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` (Dynamo's graph, before aot_autograd) with its F.interpolate calls made
    through `_interpolate`: PyTorch decomposes the linear upsamples at the autograd key,
    before aot_autograd asks any decomposition table, so they are replaced here."""
    calls = [node for node in gm.graph.nodes
             if node.op == "call_function" and node.target is F.interpolate]
    for node in calls:
        node.target = _interpolate
    if calls:
        gm.recompile()
    return gm

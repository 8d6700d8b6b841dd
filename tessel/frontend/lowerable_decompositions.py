"""Rewrites of ops torch-mlir cannot lower (for all or some inputs) into ops it can.

Each one computes what eager computes (same formula, same precision or higher) and
was checked against eager by the OpInfo sweep (tests/opinfo/sweep.py). A rewrite that
only covers some inputs returns NotImplemented for the rest, which keeps the op as is.
"""

from __future__ import annotations

import contextlib
import math
import threading

import torch
from torch._decomp import get_decompositions
from torch._prims_common import make_contiguous_strides_for

from tessel.frontend.native_ops import on_cuda
from tessel.frontend.torch_mlir_workarounds import decomposed_by_pytorch

aten = torch.ops.aten

# PyTorch's own decompositions into ops torch-mlir lowers: copies of views (torch-mlir
# lowers the views, not the `_copy` ops), ops it has no lowering for at all, and ops it
# lowers less accurately than eager computes them (torch_mlir_workarounds.py).
TORCH_DECOMPOSED = [
    aten.view_copy, aten.permute_copy, aten.unbind_copy, aten.as_strided_copy,
    aten.narrow_copy, aten.addmv, aten.dist, *decomposed_by_pytorch(),
]

_TORCH_THRESHOLD_BACKWARD = get_decompositions([aten.threshold_backward])[
    aten.threshold_backward.default]


# Set while a NaN-safe rewrite calls the op it rewrites on NaN-free input: that inner
# call goes to torch-mlir's lowering instead of back into the rewrite.
_calling_torch_mlir = threading.local()


@contextlib.contextmanager
def _torch_mlir_lowering():
    _calling_torch_mlir.active = True
    try:
        yield
    finally:
        _calling_torch_mlir.active = False


def _inside_rewrite() -> bool:
    return getattr(_calling_torch_mlir, "active", False)


def _reduction_of_scalar(x, dim=None, keepdim=False):
    """amax/amin of a 0-d tensor (torch-mlir's lowering needs a dimension to reduce)."""
    if x.dim() != 0:
        return NotImplemented
    return aten.clone(x)


def _first_extreme_index(reduce_index, x, dim, keepdim):
    """argmax/argmin as eager: a NaN counts as the extreme (the first NaN's index wins),
    which torch-mlir's compare-and-select reduction misses; 0 for a 0-d tensor."""
    if x.dim() == 0:
        return torch.zeros_like(x, dtype=torch.int64)
    if not x.is_floating_point() or _inside_rewrite():
        return NotImplemented
    if dim is None:
        index = _first_extreme_index(reduce_index, x.flatten(), 0, False)
        return index.view([1] * x.dim()) if keepdim else index
    is_nan = torch.isnan(x)
    first_nan = aten.argmax.default(is_nan.to(torch.int8), dim, keepdim)
    with _torch_mlir_lowering():
        among_numbers = reduce_index(torch.where(is_nan, 0.0, x), dim, keepdim)
    return torch.where(is_nan.any(dim, keepdim=keepdim), first_nan, among_numbers)


def argmax(x, dim=None, keepdim=False):
    return _first_extreme_index(aten.argmax.default, x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    return _first_extreme_index(aten.argmin.default, x, dim, keepdim)


def max_with_index(x, dim, keepdim=False):
    """max.dim: amax (which keeps NaNs) and argmax's index; 0-d tensors included."""
    if x.dim() != 0 and not x.is_floating_point():
        return NotImplemented
    values = aten.clone(x) if x.dim() == 0 else torch.amax(x, dim, keepdim)
    return values, argmax(x, dim, keepdim)


def min_with_index(x, dim, keepdim=False):
    if x.dim() != 0 and not x.is_floating_point():
        return NotImplemented
    values = aten.clone(x) if x.dim() == 0 else torch.amin(x, dim, keepdim)
    return values, argmin(x, dim, keepdim)


def _truth_of_scalar(x, dim=None, keepdim=False):
    """all/any of a 0-d tensor: whether its one value is nonzero."""
    if x.dim() != 0 or x.dtype == torch.uint8:  # uint8 input gives a uint8 result
        return NotImplemented
    return x != 0


def _larger(a, b):
    """maximum with eager's NaN rule (a NaN on either side wins). torch-mlir lowers
    maximum, minimum and clamp to compare-and-select, which drops a NaN on one side."""
    return torch.where(torch.isnan(a) | (a > b), a, b)


def _smaller(a, b):
    return torch.where(torch.isnan(a) | (a < b), a, b)


def maximum(a, b):
    return _larger(a, b)


def minimum(a, b):
    return _smaller(a, b)


def _integral(x, *bounds) -> bool:
    """Whether an integer tensor is clamped by integer scalars (or None): no NaN to
    keep, and the op stays (prepare_graph.py then knows that a divisor clamped to at least
    1 is never 0). torch-mlir lowers no clamp by integer tensors."""
    return (not (x.is_floating_point() or x.is_complex())
            and all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds))


# PyTorch's own decompositions (torch._refs): compare, isnan and where, so a NaN in x or
# in a bound gives NaN, as in eager. torch-mlir lowers the clamps to compare-and-select,
# which drops a NaN on one side.
_CLAMPS = get_decompositions([aten.clamp, aten.clamp_min, aten.clamp_max, aten.hardtanh])


def clamp(x, min=None, max=None):
    if _integral(x, min, max):
        return NotImplemented
    return _CLAMPS[aten.clamp.default](x, min, max)


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """Floating inputs only: an integer one stays hardtanh, which torch-mlir computes
    in the input's dtype, as eager does."""
    if not x.is_floating_point():
        return NotImplemented
    return _CLAMPS[aten.hardtanh.default](x, min_val, max_val)


def clamp_min(x, min):
    return NotImplemented if _integral(x, min) else _CLAMPS[aten.clamp_min.default](x, min)


def clamp_max(x, max):
    return NotImplemented if _integral(x, max) else _CLAMPS[aten.clamp_max.default](x, max)


def fmax(a, b):
    """The larger of a and b, ignoring a NaN unless both are NaN (as eager's fmax)."""
    return torch.where(torch.isnan(b), a, torch.where(torch.isnan(a), b, torch.maximum(a, b)))


def fmin(a, b):
    return torch.where(torch.isnan(b), a, torch.where(torch.isnan(a), b, torch.minimum(a, b)))


def hypot(a, b):
    """sqrt(a^2 + b^2) in float64, so that squaring neither overflows nor underflows
    where eager's std::hypot does not; inf wherever either is infinite, even with a
    NaN (IEEE hypot)."""
    dtype = torch.promote_types(a.dtype, b.dtype)
    if dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return NotImplemented
    a, b = a.to(torch.float64), b.to(torch.float64)
    length = torch.sqrt(a * a + b * b)
    return torch.where(torch.isinf(a) | torch.isinf(b), math.inf, length).to(dtype)


def angle(x):
    """angle of a real tensor: pi for negative values, 0 otherwise, NaN for NaN."""
    if x.is_complex() or not x.is_floating_point():
        return NotImplemented
    phase = torch.where(x < 0, torch.pi, 0.0).to(x.dtype)
    return torch.where(torch.isnan(x), x, phase)


def _accumulation_of_scalar(x, dtype):
    """cumsum/cumprod/prod of a 0-d tensor: its value, in the result dtype (integers
    accumulate in int64)."""
    if dtype is None:
        dtype = x.dtype if x.is_floating_point() or x.is_complex() else torch.int64
    return aten._to_copy(x, dtype=dtype)


def cumsum(x, dim, dtype=None):
    """cumsum of a 0-d tensor (torch-mlir's lowering needs a dimension to scan)."""
    if x.dim() != 0:
        return NotImplemented
    return _accumulation_of_scalar(x, dtype)


def prod_of_scalar(x, dim, keepdim=False, dtype=None):
    """prod.dim_int of a 0-d tensor (torch-mlir's lowering needs a dimension)."""
    if x.dim() != 0:
        return NotImplemented
    return _accumulation_of_scalar(x, dtype)


def cumprod(x, dim, dtype=None):
    """cumprod of a 0-d tensor, or with a dtype argument (torch-mlir lowers it only
    without one)."""
    if x.dim() == 0:
        return _accumulation_of_scalar(x, dtype)
    if dtype is None:
        return NotImplemented
    return aten.cumprod(x.to(dtype), dim)


def scatter_reduce_into(x, dim, index, src, reduce):
    """scatter(..., reduce="add"|"multiply") as scatter_reduce, which keeps x's values."""
    return aten.scatter_reduce.two(x, dim, index, src, {"add": "sum", "multiply": "prod"}[reduce],
                                   include_self=True)


def scatter_reduce_mean_of_integers(x, dim, index, src, reduce, include_self=True):
    """scatter_reduce "mean" of integers as eager rounds it, down (floor division):
    torch-mlir's lowering divides toward zero, so a mean of -2.5 came out -2, not -3.
    Positions no index names keep x's value."""
    if reduce != "mean" or x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        return NotImplemented
    total = aten.scatter_reduce.two(x, dim, index, src, "sum", include_self=include_self)
    counted = torch.ones_like(x) if include_self else torch.zeros_like(x)
    count = aten.scatter_reduce.two(counted, dim, index, torch.ones_like(src), "sum")
    return torch.where(count == 0, x, torch.div(total, count.clamp(min=1), rounding_mode="floor"))


def scatter_value_reduce_into(x, dim, index, value, reduce):
    src = torch.full(index.shape, value, dtype=x.dtype, device=x.device)
    return scatter_reduce_into(x, dim, index, src, reduce)


# Scatters whose lowering takes `dim` as given: with a dim counted from the end
# (x.scatter_(-1, ...)), the compile worker crashed (SIGSEGV, or out of memory).
SCATTERS = [aten.scatter.src, aten.scatter.value, aten.scatter_add.default,
            aten.scatter_reduce.two]


def _dim_from_start(op: torch._ops.OpOverload, decomposition):
    """`op` with a negative `dim` counted from the start instead, then `decomposition`
    (the table's own, if any) for the rest."""
    def rewritten(x, dim, *args, **kwargs):
        if dim < 0:
            return op(x, dim + max(x.dim(), 1), *args, **kwargs)
        return NotImplemented if decomposition is None else decomposition(x, dim, *args, **kwargs)
    return rewritten


def cdist(x1, x2, p, compute_mode):
    """_cdist_forward the way eager computes it: p=2 through a matmul of padded
    operands when eager does (compute_mode None/0 with more than 25 rows, or 1),
    every other case from the pairwise differences."""
    rows = max(x1.shape[-2], x2.shape[-2])
    by_matmul = p == 2.0 and (compute_mode == 1 or (compute_mode in (None, 0) and rows > 25))
    if by_matmul:
        x1_norm = x1.pow(2).sum(-1, keepdim=True)
        x2_norm = x2.pow(2).sum(-1, keepdim=True)
        x1_padded = torch.cat([x1 * -2, x1_norm, torch.ones_like(x1_norm)], -1)
        x2_padded = torch.cat([x2, torch.ones_like(x2_norm), x2_norm], -1)
        return torch.matmul(x1_padded, x2_padded.mT).clamp_min(0).sqrt()
    return _p_norm_of_differences((x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs(), p,
                                  max_skips_nan=True)


def _p_norm_of_differences(diff, p, max_skips_nan: bool):
    """The p-norm over the last dimension of |differences|, as eager's distance kernels
    compute it (p = 0 counts nonzeros, p = inf takes the largest; cdist's running
    max from 0 passes over a NaN difference, pdist's does not)."""
    if p == 0:
        return torch.ceil(diff).clamp(max=1).sum(-1)  # eager's min(ceil(d), 1): NaN stays NaN
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return (diff * diff).sum(-1).sqrt()
    if p == float("inf"):
        if max_skips_nan:
            diff = torch.where(torch.isnan(diff), 0.0, diff)
        return diff.amax(-1)
    return diff.pow(p).sum(-1).pow(1.0 / p)


def pdist(x, p=2.0):
    """_pdist_forward: distances between rows i < j, in row-major order of (i, j)."""
    rows, cols = torch.triu_indices(x.shape[0], x.shape[0], 1, device=x.device)
    return _p_norm_of_differences((x[rows] - x[cols]).abs(), p, max_skips_nan=False)


def diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    """x with a diagonal replaced by src, as an index_put (PyTorch's own decomposition
    copies into a view, which aot_autograd rejects in a functional graph)."""
    length = src.shape[-1]
    rows = torch.arange(length, device=x.device) + max(-offset, 0)
    cols = torch.arange(length, device=x.device) + max(offset, 0)
    moved = x.movedim((dim1, dim2), (0, 1))
    scattered = aten.index_put(moved, [rows, cols], src.movedim(-1, 0))
    return scattered.movedim((0, 1), (dim1, dim2))


def as_strided_scatter(x, src, size, stride, storage_offset=None):
    """x with the strided view (size, stride, storage_offset) of its storage replaced
    by src, as an index_put at the view's flat positions. Only where x is its own
    contiguous storage and the view does not overlap itself (else eager's answer
    depends on write order)."""
    offset = storage_offset or 0
    if not x.is_contiguous() or x.storage_offset() != 0 or not _distinct_positions(size, stride):
        return NotImplemented
    positions = torch.full(tuple(size), offset, dtype=torch.int64, device=x.device)
    for dim, (extent, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[dim] = extent
        positions = positions + (torch.arange(extent, device=x.device) * step).view(shape)
    flat = aten.index_put(x.flatten(), [positions.flatten()], src.flatten())
    return flat.view(x.shape)


def _distinct_positions(size, stride) -> bool:
    """Whether a strided view visits every storage position at most once."""
    span = 1
    for extent, step in sorted(zip(size, stride), key=lambda pair: pair[1]):
        if extent > 1 and step < span:
            return False
        span = max(span, step * extent) if extent > 1 else span
    return True


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    """A contiguous empty_strided as empty (torch-mlir's lowering of empty_strided fails
    on 0-d and zero-size shapes)."""
    if list(stride) != list(make_contiguous_strides_for(size)) and math.prod(size) != 0:
        return NotImplemented
    return torch.empty(size, dtype=dtype, device=device)


def index_reduce(x, dim, index, source, reduce, include_self=True):
    """index_reduce as scatter_reduce with the index broadcast along `source`: both
    keep rows that no index names, and both count x's row in "mean" when included."""
    if x.dim() == 0:
        return index_reduce(x.unsqueeze(0), 0, index, source.reshape(1), reduce,
                            include_self).squeeze(0)
    shape = [1] * source.dim()
    shape[dim] = -1
    expanded = index.view(shape).expand(source.shape)
    return aten.scatter_reduce.two(x, dim, expanded, source, reduce, include_self=include_self)




def sort(x, dim=-1, descending=False, *, stable=None):
    """sort with eager's NaN order (NaN last ascending, first descending), equal
    elements kept in order: torch-mlir's sort is stable (checked against eager's with
    many ties) but orders NaNs wrongly, so sort the values with NaNs zeroed, then
    stably by NaN-ness."""
    if not x.is_floating_point() or _inside_rewrite():
        return NotImplemented
    is_nan = torch.isnan(x)
    with _torch_mlir_lowering():
        _, by_value = aten.sort.default(torch.where(is_nan, 0.0, x), dim, descending)
    _, by_nan = aten.sort.default(is_nan.gather(dim, by_value).to(torch.int8), dim, descending)
    order = by_value.gather(dim, by_nan)
    return x.gather(dim, order), order


def sort_stable(x, *, stable=None, dim=-1, descending=False):
    return sort(x, dim, descending)


def topk(x, k, dim=-1, largest=True, sorted=True):
    """topk with eager's NaN order (NaN counts as the largest value), as the first k of
    `sort`'s order: torch-mlir's topk ranks NaNs below every number."""
    if not x.is_floating_point() or x.dim() == 0 or _inside_rewrite():
        return NotImplemented
    values, indices = sort(x, dim, largest)
    return values.narrow(dim, 0, k), indices.narrow(dim, 0, k)


def put(x, index, source, accumulate=False):
    """put (flat, negative indices from the end) as an index_put on the flattened x."""
    flat_index = index.flatten()
    flat_index = torch.where(flat_index < 0, flat_index + x.numel(), flat_index)
    flat = aten.index_put(x.flatten(), [flat_index], source.flatten(), accumulate)
    return flat.view(x.shape)


def index_put_at_flat_positions(x, indices, values, accumulate=False):
    """An accumulating index_put whose index tensors index adjacent dims after whole
    ones (`None`), and that reads at least as many values as `x` holds (a gather's
    gradient; fewer would cost the copies of `x` below more than their index saves), as
    one index of flat positions over those dims moved first: each position adds a
    slice of the whole dims. torch-mlir's index_put writes an int64 index for every dim
    at every value, an iota for each whole dim: the gradient of SegFormer's bilinear
    upsample (four such index_puts of [8, 150, 512, 512] values each, N and C whole)
    wrote 2.5 GB an index, 52 GB at its peak on an H200, and four scatters read them
    back; its same-size interpolation (the decode head's first stage) wrote four of 268
    MB and concatenated them. Here the index is the size of the broadcast index
    tensors ([512, 512])."""
    count = len(indices)
    indexed = [dim for dim, index in enumerate(indices) if index is not None]
    if not accumulate or not indexed or indexed[0] == 0 or \
            indexed != list(range(indexed[0], indexed[-1] + 1)) or \
            any(indices[dim].dtype in (torch.bool, torch.uint8) for dim in indexed) or \
            values.numel() < x.numel() or not x.is_contiguous():
        return NotImplemented
    first, last = indexed[0], indexed[-1]
    broadcast = torch.broadcast_shapes(*(indices[dim].shape for dim in indexed))
    positions = torch.zeros((), dtype=torch.int64, device=x.device)
    for dim in indexed:
        size = x.shape[dim]
        index = indices[dim].to(torch.int64)
        positions = positions * size + torch.where(index < 0, index + size, index)
    moved = list(range(first, last + 1))
    front = list(range(len(moved)))
    rest = [n for dim, n in enumerate(x.shape) if dim not in moved]
    spread = x.shape[:first] + tuple(broadcast) + x.shape[count:]
    values_moved = list(range(first, first + len(broadcast)))
    flat_values = values.expand(spread).movedim(values_moved, list(range(len(broadcast))))
    flat_x = x.movedim(moved, front).reshape(-1, *rest)
    flat = aten.index_put(flat_x, [positions.expand(broadcast).reshape(-1)],
                          flat_values.reshape(-1, *rest), True)
    return flat.view(*(x.shape[dim] for dim in moved), *rest).movedim(front, moved).contiguous()


def unsafe_index_put(x, indices, values, accumulate=False):
    """_unsafe_index_put as index_put (PyTorch's decomposition), at flat positions
    where `index_put_at_flat_positions` takes it."""
    at_flat_positions = index_put_at_flat_positions(x, indices, values, accumulate)
    if at_flat_positions is NotImplemented:
        return aten.index_put(x, indices, values, accumulate)
    return at_flat_positions


# The pairwise rewrites below (cummax/cummin, logcumsumexp) compare every element with
# every other along a dimension: exact, but quadratic, so only up to this many pairs.
MAX_PAIRWISE_ELEMENTS = 1 << 22


def _cumulative_extreme(x, dim, take_larger: bool):
    """cummax/cummin as eager computes them: a NaN wins from where it appears, ties
    go to the later index. Pairwise over the prefix mask (j <= i)."""
    if x.dim() == 0:
        return aten.clone(x), torch.zeros_like(x, dtype=torch.int64)
    length = x.shape[dim]
    if x.dtype == torch.bool or x.numel() * length > MAX_PAIRWISE_ELEMENTS:
        return NotImplemented
    moved = x.movedim(dim, -1)
    positions = torch.arange(length, device=x.device)
    in_prefix = positions.view(1, -1) <= positions.view(-1, 1)     # [i, j]: j <= i
    candidates = moved.unsqueeze(-2)                               # [..., 1, j]
    if x.is_floating_point():
        worst = -math.inf if take_larger else math.inf
    else:
        info = torch.iinfo(x.dtype)
        worst = info.min if take_larger else info.max
    masked = torch.where(in_prefix, candidates, worst)
    values = masked.amax(-1) if take_larger else masked.amin(-1)
    nan_seen = (in_prefix & torch.isnan(candidates)).any(-1)
    values = torch.where(nan_seen, math.nan, values) if x.is_floating_point() else values
    winner = (candidates == values.unsqueeze(-1)) | (torch.isnan(candidates) & nan_seen.unsqueeze(-1))
    indices = torch.where(in_prefix & winner, positions, -1).amax(-1)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def cummax(x, dim):
    return _cumulative_extreme(x, dim, take_larger=True)


def cummin(x, dim):
    return _cumulative_extreme(x, dim, take_larger=False)


def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) without overflow: each prefix shifted by its own maximum,
    pairwise over the prefix mask (torch-mlir's own lowering is unsound: it overflows)."""
    if x.dim() == 0:
        return aten.clone(x)
    length = x.shape[dim]
    if not x.is_floating_point() or x.numel() * length > MAX_PAIRWISE_ELEMENTS:
        return NotImplemented
    positions = torch.arange(length, device=x.device)
    in_prefix = positions.view(1, -1) <= positions.view(-1, 1)     # [i, j]: j <= i
    masked = torch.where(in_prefix, x.movedim(dim, -1).unsqueeze(-2), -math.inf)
    peak = masked.amax(-1, keepdim=True)
    shift = torch.where(torch.isfinite(peak), peak, 0.0)  # all -inf, or +inf: no shift
    result = torch.log(torch.exp(masked - shift).sum(-1)) + shift.squeeze(-1)
    return result.movedim(-1, dim)


def searchsorted(sorted_sequence, values, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted as eager's binary search, step for step (bit_length(n) masked
    steps), so that it answers as eager does even where NaNs make the sequence
    unsorted for its comparison."""
    length = sorted_sequence.shape[-1]
    dtype = torch.int32 if out_int32 else torch.int64
    if length == 0:
        return torch.zeros_like(values, dtype=dtype)
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    one_row = sorted_sequence.dim() == 1
    probes = values.reshape(1, -1) if one_row else values
    rows = sorted_sequence.unsqueeze(0) if one_row else sorted_sequence
    low = torch.zeros_like(probes, dtype=torch.int64)
    high = torch.full_like(probes, length, dtype=torch.int64)
    for _ in range(length.bit_length()):
        active = low < high
        middle = low + torch.div(high - low, 2, rounding_mode="floor")
        middle_value = rows.gather(-1, middle.clamp(max=length - 1))
        # eager: start = mid + 1 if !(mid_val >= val) (upper bound: !(mid_val > val))
        goes_right = ~(middle_value > probes) if (right or side == "right") else ~(middle_value >= probes)
        low = torch.where(active & goes_right, middle + 1, low)
        high = torch.where(active & ~goes_right, middle, high)
    return low.reshape(values.shape).to(dtype)


def reciprocal(x):
    """1 / x of floats as a division: torch-mlir's reciprocal asserts x != 0 (eager gives
    inf), and a kernel that fuses the check runs it for every element it writes (a
    batch norm's 1 / sqrt(var + eps), checked once per activation element)."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    return aten.div.Tensor(torch.ones((), dtype=x.dtype, device=x.device), x)


def isfinite(x):
    """|x| < inf: torch's own decomposition tests x == x, which torch-mlir folds to true,
    so NaN came out finite."""
    if not x.is_floating_point():
        return NotImplemented
    return x.abs() < float("inf")


def equal_to_itself(a, b):
    """x == x is false where x is NaN; torch-mlir folds eq(x, x) to true."""
    if a is b and a.is_floating_point():
        return torch.logical_not(torch.isnan(a))
    return NotImplemented


def _pair(values, default=None):
    """An int[2] argument of a pooling op, which may be given as one int for both."""
    if isinstance(values, int):
        return values, values
    if not values:
        return default
    return tuple(values) if len(values) == 2 else (values[0],) * 2


def avg_pool2d_backward(grad_output, x, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    """avg_pool2d's gradient: each input point gets, from every window it is in, that
    window's output gradient over the window's divisor. torch-mlir does not lower the op
    (densenet121's train step ran its whole backward graph eagerly). ceil_mode, whose
    last windows may overhang the padded input, keeps the op."""
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride, (kh, kw))
    ph, pw = _pair(padding)
    if ceil_mode:
        return NotImplemented
    height, width = x.shape[-2:]
    out_h, out_w = grad_output.shape[-2:]
    batch = grad_output.shape[:-2]
    if divisor_override:
        share = grad_output / divisor_override
    elif count_include_pad or not (ph or pw):
        share = grad_output / (kh * kw)
    else:  # each window's count of input points, padding left out: a sum pool of ones
        ones = x.new_ones((1,) * (x.dim() - 2) + (height, width))
        share = grad_output / aten.avg_pool2d(ones, [kh, kw], [sh, sw], [ph, pw], False,
                                              False, 1)
    # In gather form, as Inductor computes it: each input point sums the shares of the
    # windows that hold it, in float32 for half types. (Kh * kw strided adds into a
    # padded gradient were a kernel and a copy each: poolformer's 3x3 pooling backward
    # took 22 launches. Windows that tile the input, densenet's transitions, had their
    # shares spread by an expand to [N, C, H, 2, W, 2]: a buffer of rank 6, written
    # row-major, which the channels-last kernels after it read across memory.)
    rows = _windows_holding(height, out_h, kh, sh, ph, 1, x.device)
    columns = _windows_holding(width, out_w, kw, sw, pw, 1, x.device)
    shares = share.to(torch.promote_types(share.dtype, torch.float32))
    total = None
    for row, row_valid in rows:
        for column, column_valid in columns:
            window = [*[None] * len(batch), row.unsqueeze(-1), column]
            term = torch.where(row_valid.unsqueeze(-1) & column_valid,
                               aten.index.Tensor(shares, window), 0.0)
            total = term if total is None else total + term
    return total.to(grad_output.dtype)


def _windows_holding(size, out_size, kernel, stride, padding, dilation, device):
    """For each of the `size` input points of one spatial dim, the output windows whose
    span may hold it: ceil(span / stride) pairs (window, valid) of [size] tensors, the
    t-th window of point p being floor((p + padding - span) / stride) + 1 + t, clamped
    into [0, out_size), valid where that window does span p (span = (kernel - 1) *
    dilation + 1). Every window that holds p is among them, once. Each pair is its own
    tensor (not rows of one) so that the kernel that gathers through it computes it."""
    span = (kernel - 1) * dilation + 1
    points = torch.arange(size, device=device)
    # Numerators shifted to be non-negative, where truncating division is floor
    # division: torch-mlir lowers an integer floor division through float64 (a
    # conversion, a divide and a floor for each point of the kernel), a truncating one
    # to an integer division.
    windows = -(-span // stride)
    first = torch.div(points + padding - span + windows * stride, stride,
                      rounding_mode="trunc") + 1 - windows
    last = torch.div(points + padding, stride, rounding_mode="trunc")
    candidates = []
    for step in range(windows):
        window = first + step
        valid = (window >= 0) & (window <= last) & (window < out_size)
        candidates.append((window.clamp(0, out_size - 1), valid))
    return candidates


def max_pool2d_with_offsets(x, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """max_pool2d_with_indices whose indices go through int8 offsets in the window, as
    Inductor's low-memory pooling keeps them: torch-mlir's lowering computes the
    values and indices, element-wise ops their offsets, and others the indices again
    from those. In a training graph the partitioner then saves the offsets for the
    backward (1 byte an output point, not 8) and computes the indices there, where the
    gradient's gather reads them at each of its taps.

    A window whose maximum is NaN gets eager's index, its last NaN's: torch-mlir's
    lowering finds no tap equal to NaN and gives an index outside the window (-9 for a
    3 x 3 window at stride 2), so the gradient reached no input. A window of more than
    127 taps keeps the op."""
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride, (kh, kw))
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation, (1, 1))
    if kh * kw > torch.iinfo(torch.int8).max or x.dim() not in (3, 4) or _inside_rewrite():
        return NotImplemented
    with _torch_mlir_lowering():
        values, indices = aten.max_pool2d_with_indices.default(
            x, kernel_size, stride, padding, dilation, ceil_mode)
    width = x.shape[-1]
    out_h, out_w = values.shape[-2:]
    first_row = (torch.arange(out_h, device=x.device) * sh - ph).unsqueeze(-1)
    first_column = torch.arange(out_w, device=x.device) * sw - pw
    row = torch.div(indices, width, rounding_mode="trunc")
    offsets = (torch.div(row - first_row, dh, rounding_mode="trunc") * kw
               + torch.div(indices - row * width - first_column, dw,
                           rounding_mode="trunc")).to(torch.int8)
    if x.is_floating_point():
        offsets = torch.where(torch.isnan(values),
                              _last_nan_tap(x, first_row, first_column, kh, kw, dh, dw),
                              offsets)
    wide = offsets.to(torch.int64)
    window_row = torch.div(wide, kw, rounding_mode="trunc")
    recomputed = ((first_row + window_row * dh) * width
                  + first_column + (wide - window_row * kw) * dw)
    return values, recomputed


def _last_nan_tap(x, first_row, first_column, kh, kw, dh, dw):
    """Each window's offset of its last NaN tap (0 where none is), from its taps
    gathered one by one: each is read once, so the chain is one kernel."""
    height, width = x.shape[-2:]
    batch = [None] * (x.dim() - 2)
    found = None
    for i in range(kh):
        row = first_row + i * dh
        row_valid = (row >= 0) & (row < height)
        for j in range(kw):
            column = first_column + j * dw
            valid = row_valid & (column >= 0) & (column < width)
            tap = aten.index.Tensor(x, [*batch, row.clamp(0, height - 1),
                                        column.clamp(0, width - 1)])
            here = torch.isnan(tap) & valid
            found = (torch.where(here, i * kw + j, 0) if found is None
                     else torch.where(here, i * kw + j, found)).to(torch.int8)
    return found


def max_pool2d_with_indices_backward(grad_output, x, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    """max_pool2d's gradient in gather form, as Inductor computes it: each input point
    sums the output gradients of the windows that hold it and whose argmax is that
    point; a point is held by at most ceil(span / stride) windows a dim. torch-mlir's
    lowering scatters every output gradient at its argmax with accumulation (a sorted
    index_put_ on the GPU, several kernels). The sum is in float32 for half types, as
    eager's kernels accumulate."""
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride, (kh, kw))
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation, (1, 1))
    height, width = x.shape[-2:]
    out_h, out_w = grad_output.shape[-2:]
    rows = _windows_holding(height, out_h, kh, sh, ph, dh, x.device)
    columns = _windows_holding(width, out_w, kw, sw, pw, dw, x.device)
    position = (torch.arange(height, device=x.device).unsqueeze(-1) * width
                + torch.arange(width, device=x.device))
    batch = [None] * (grad_output.dim() - 2)
    accumulated = grad_output.to(torch.promote_types(grad_output.dtype, torch.float32))
    total = None
    for row, row_valid in rows:
        for column, column_valid in columns:
            window = [*batch, row.unsqueeze(-1), column]
            argmax_here = aten.index.Tensor(indices, window) == position
            held = argmax_here & (row_valid.unsqueeze(-1) & column_valid)
            term = torch.where(held, aten.index.Tensor(accumulated, window), 0.0)
            total = term if total is None else total + term
    return total.to(grad_output.dtype)


def threshold_backward(grad, x, threshold):
    """PyTorch's decomposition, where its result dtype (the gradient's) is eager's (the
    promoted one); otherwise the op stays, and prepare_graph.py sends its graph to eager."""
    if torch.promote_types(grad.dtype, x.dtype) != grad.dtype:
        return NotImplemented
    return _TORCH_THRESHOLD_BACKWARD(grad, x, threshold)


def take(x, index):
    """take as indexing the flattened x (an index below 0 counts from the end): PyTorch's
    decomposition checks the indices' range by reading them (data-dependent); the host
    checks an index input against the size before the kernel runs, as it does x[i]."""
    return aten.index.Tensor(x.reshape(-1), [index])


def median(x):
    """median of all elements, as eager: the lower middle value, NaN if any is NaN."""
    if x.numel() == 0 or x.dtype == torch.bool:
        return NotImplemented
    middle = aten.sort.default(x.reshape(-1))[0][(x.numel() - 1) // 2]
    return torch.where(torch.isnan(x).any(), math.nan, middle) if x.is_floating_point() else middle


def nanmedian(x):
    """nanmedian of all elements: the lower middle value of those not NaN (tessel's
    sort puts NaNs last); NaN if all are."""
    if x.numel() == 0 or x.dtype == torch.bool:
        return NotImplemented
    if not x.is_floating_point():
        return median(x)
    values = aten.sort.default(x.reshape(-1))[0]
    position = torch.div((~torch.isnan(x)).sum() - 1, 2, rounding_mode="floor").clamp(min=0)
    return values.gather(0, position.reshape(1)).reshape(())


def _median_along(x, dim, keepdim, skip_nan: bool):
    """(median, index) along `dim`: the lower middle of tessel's stable sort (NaNs last);
    median's is the first NaN where there is one, nanmedian's the middle of the values
    not NaN (of all, where all are), as eager's."""
    if x.dim() == 0:
        return aten.clone(x), torch.zeros_like(x, dtype=torch.int64)
    if x.shape[dim] == 0 or x.dtype == torch.bool:
        return NotImplemented
    values, order = aten.sort.default(x, dim)
    length = x.shape[dim]
    if skip_nan and x.is_floating_point():
        count = (~torch.isnan(x)).sum(dim, keepdim=True)
        position = torch.where(count == 0, (length - 1) // 2,
                               torch.div(count - 1, 2, rounding_mode="floor"))
        median, index = values.gather(dim, position), order.gather(dim, position)
    else:
        median = values.narrow(dim, (length - 1) // 2, 1)
        index = order.narrow(dim, (length - 1) // 2, 1)
        if x.is_floating_point():
            is_nan = torch.isnan(x)
            has_nan = is_nan.any(dim, keepdim=True)
            median = torch.where(has_nan, math.nan, median)
            index = torch.where(has_nan, aten.argmax.default(is_nan.to(torch.int8), dim, True),
                                index)
    if not keepdim:
        median, index = median.squeeze(dim), index.squeeze(dim)
    return median, index


def median_dim(x, dim, keepdim=False):
    return _median_along(x, dim, keepdim, skip_nan=False)


def nanmedian_dim(x, dim, keepdim=False):
    return _median_along(x, dim, keepdim, skip_nan=True)


def unsafe_index(x, indices):
    """_unsafe_index as index, with each integer index capped at its dimension's last
    element, as eager's nearest upsampling caps its own: PyTorch's decomposition of
    upsample_nearest (at the Autograd key, before any table) computes indices past the
    end where the scales disagree with the output size (pytorch/pytorch#94591), and
    compiled code read memory past the input. Indices in range are unchanged."""
    if any(index is not None and index.dtype in (torch.bool, torch.uint8) for index in indices):
        return aten.index.Tensor(x, indices)  # a mask indexes several dims
    capped = [None if index is None else torch.clamp_max(index, x.shape[dim] - 1)
              for dim, index in enumerate(indices)]
    return aten.index.Tensor(x, capped)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg_vector_norm of a symbolic `ord` (a norm's ord that changed between calls,
    under Dynamo's automatic dynamic shapes) with eager's special cases: torch-mlir
    lowers a non-constant ord as sum(|x|^ord)^(1/ord) alone, which is inf for ord 0
    (eager counts nonzeros) and not the max or min for +-inf. A constant ord it lowers
    by case, as eager."""
    if not isinstance(ord, (torch.SymInt, torch.SymFloat)) or _inside_rewrite():
        return NotImplemented
    with _torch_mlir_lowering():
        norm = aten.linalg_vector_norm.default(x, ord, dim, keepdim, dtype=dtype)
    order = torch.scalar_tensor(ord, dtype=torch.float64, device=x.device)
    magnitude = (x if dtype is None else x.to(dtype)).abs()
    dims = list(range(x.dim())) if dim is None else dim
    nonzeros = (magnitude != 0).sum(dims, keepdim=keepdim, dtype=norm.dtype)
    norm = torch.where(order == 0, nonzeros, norm)
    if isinstance(ord, torch.SymFloat) and x.numel() != 0:  # an int ord is never infinite
        norm = torch.where(order == math.inf, magnitude.amax(dims, keepdim), norm)
        norm = torch.where(order == -math.inf, magnitude.amin(dims, keepdim), norm)
    return norm


# A float dtype's bits: the integer dtype of its width, its mantissa bits and the
# biased exponent of the floats in [0.5, 1). view(dtype) of these lowers to a bitcast
# (passes/bitcast_dtype_views.py).
_FLOAT_BITS = {torch.float64: (torch.int64, 52, 1022), torch.float32: (torch.int32, 23, 126),
               torch.float16: (torch.int16, 10, 14), torch.bfloat16: (torch.int16, 7, 126)}


def nextafter(x, y):
    """The float after x toward y, as std::nextafter: x's bits one step away from
    zero or toward it; the smallest subnormal with y's sign from zero; y where x == y;
    NaN where either is NaN."""
    if x.dtype not in _FLOAT_BITS or y.dtype != x.dtype:
        return NotImplemented
    integer = _FLOAT_BITS[x.dtype][0]
    away_from_zero = (y > x) == (x > 0)
    bits = x.view(integer) + torch.where(away_from_zero, 1, -1).to(integer)
    smallest = torch.copysign(torch.full_like(x, torch.finfo(x.dtype).smallest_normal
                                              * torch.finfo(x.dtype).eps), y)
    result = torch.where(x == 0, smallest, bits.view(x.dtype))
    result = torch.where(x == y, y, result)
    return torch.where(torch.isnan(x) | torch.isnan(y), x + y, result)


def frexp(x):
    """(mantissa, exponent) with x = mantissa * 2^exponent and 0.5 <= |mantissa| < 1,
    as std::frexp, from x's bits (a subnormal scaled into the normal range first);
    zero, infinities and NaN are their own mantissa, with exponent 0."""
    if x.dtype not in _FLOAT_BITS:
        return NotImplemented
    integer, mantissa_bits, half_bias = _FLOAT_BITS[x.dtype]
    exponent_mask = (1 << (8 * x.element_size() - 1 - mantissa_bits)) - 1
    subnormal = (x.abs() < torch.finfo(x.dtype).smallest_normal) & (x != 0)
    shift = mantissa_bits + 1
    scaled = torch.where(subnormal, x * float(2 ** shift), x)
    bits = scaled.view(integer)
    # A shift by a tensor: torch-mlir lowers bitwise_right_shift.Tensor, not .Tensor_Scalar.
    shifted = torch.bitwise_right_shift(bits, torch.full_like(bits, mantissa_bits))
    biased = torch.bitwise_and(shifted, exponent_mask)
    cleared = torch.bitwise_and(bits, ~(exponent_mask << mantissa_bits))
    mantissa = torch.bitwise_or(cleared, half_bias << mantissa_bits).view(x.dtype)
    exponent = biased - half_bias - torch.where(subnormal, shift, 0)
    special = (x == 0) | torch.isinf(x) | torch.isnan(x)
    return (torch.where(special, x, mantissa),
            torch.where(special, 0, exponent).to(torch.int32))


def nonzero_static(x, *, size, fill_value=-1):
    """The first `size` indices of x's nonzero elements (row-major), as rows of its
    coordinates, padded with `fill_value`: each element's row is the count of nonzeros
    before it; elements past `size` rows, and zeros, write a spare row dropped at the end."""
    nonzero = (x != 0).reshape(-1)
    rows = torch.cumsum(nonzero.to(torch.int64), 0) - 1
    rows = torch.where(nonzero & (rows < size), rows, size)
    flat = torch.arange(x.numel(), device=x.device)
    coordinates = []
    for extent in reversed(x.shape):
        coordinates.append(torch.remainder(flat, extent))
        flat = torch.div(flat, extent, rounding_mode="floor")
    coordinates = torch.stack(coordinates[::-1], -1) if coordinates else flat.new_zeros((x.numel(), 0))
    padded = torch.full((size + 1, x.dim()), fill_value, dtype=torch.int64, device=x.device)
    return aten.index_put(padded, [rows], coordinates)[:size]


def grouped_convolution_backward(grad_output, x, weight, bias_sizes, stride, padding,
                                 dilation, transposed, output_padding, groups, output_mask):
    """The backward of a grouped 2-D convolution (depthwise ones: MobileNets,
    EfficientNets, ConvNeXts) as grouped forward convolutions, which torch-mlir lowers
    (its lowering of a grouped convolution_backward, and of a transposed depthwise
    convolution, builds an ill-ranked tensor.collapse_shape).

    The input's gradient: the output's gradient with stride - 1 zeros inserted between
    its elements, padded by the kernel's reach less the padding (plus what the stride
    left off at the end), convolved at the dilation by the weight flipped in space with
    its channels exchanged within each group. The weight's gradient: the input convolved
    by the output's gradient with stride and dilation exchanged, grouped so that each
    group of filters reads its own group's inputs: the input as (C/G, G*N, H, W) by the
    gradient as (G*F, N, HO, WO) gives (C/G, G*F, KH', KW'), cropped to the kernel."""
    if transposed or groups == 1 or x.dim() != 4 or on_cuda(x):
        return NotImplemented  # on CUDA the op stays whole, a native op (cuDNN's)
    n, channels, height, width = x.shape
    filters, group_channels, kernel_h, kernel_w = weight.shape
    out_h, out_w = grad_output.shape[2:]
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        spread = grad_output
        if any(s > 1 for s in stride):
            spread = aten.constant_pad_nd.default(
                grad_output.reshape(n, filters, out_h, 1, out_w, 1),
                [0, stride[1] - 1, 0, 0, 0, stride[0] - 1])
            spread = spread.reshape(n, filters, out_h * stride[0], out_w * stride[1])[
                :, :, :(out_h - 1) * stride[0] + 1, :(out_w - 1) * stride[1] + 1]
        pads = []
        for size, spread_size, p, d, k in reversed(list(zip(
                (height, width), spread.shape[2:], padding, dilation, (kernel_h, kernel_w)))):
            low = d * (k - 1) - p
            pads += [low, size + d * (k - 1) - spread_size - low]
        flipped = (weight.reshape(groups, filters // groups, group_channels, kernel_h, kernel_w)
                   .transpose(1, 2).reshape(channels, filters // groups, kernel_h, kernel_w)
                   .flip((2, 3)))
        grad_input = aten.convolution.default(
            aten.constant_pad_nd.default(spread, pads), flipped, None, [1, 1], [0, 0],
            dilation, False, [0, 0], groups)
    if output_mask[1]:
        images = (x.reshape(n, groups, group_channels, height, width).permute(2, 1, 0, 3, 4)
                  .reshape(group_channels, groups * n, height, width))
        kernels = (grad_output.reshape(n, groups, filters // groups, out_h, out_w)
                   .permute(1, 2, 0, 3, 4).reshape(filters, n, out_h, out_w))
        full = aten.convolution.default(images, kernels, None, dilation, padding, stride,
                                        False, [0, 0], groups)
        grad_weight = full[:, :, :kernel_h, :kernel_w].permute(1, 0, 2, 3)
    if output_mask[2]:
        grad_bias = grad_output.sum((0, 2, 3))
    return grad_input, grad_weight, grad_bias


def transposed_convolution_cropped(x, weight, bias, stride, padding, dilation, transposed,
                                   output_padding, groups):
    """A transposed convolution whose kernel size is symbolic, with padding: the same
    convolution unpadded, cropped by the padding on each side (its output at o is the
    unpadded one's at o + padding). torch-mlir pads or crops its input by
    dilation * (kernel - 1) - padding, and crops only where that folds to a negative
    constant: with a symbolic kernel size it pads by a negative amount instead."""
    spatial = weight.shape[2:]
    if not transposed or not any(padding) or all(isinstance(k, int) for k in spatial):
        return NotImplemented
    full = aten.convolution.default(x, weight, bias, stride, [0] * len(padding), dilation,
                                    True, output_padding, groups)
    for dim, pad in enumerate(padding, start=2):
        full = full.narrow(dim, pad, full.shape[dim] - 2 * pad)
    return full


def _int8_division_in_int32(op: torch._ops.OpOverload):
    """`op` (an integer division or remainder) of int8 values computed in int32 and
    narrowed back, which wraps as eager's int8 arithmetic does (-128 // -1 is -128):
    torch-mlir's lowering of an int8 one crashes (SIGSEGV in torch-to-linalg, which
    sent the whole graph to eager); int16 and wider lower."""
    def divide(x, other, *args, **kwargs):
        if torch.result_type(x, other) != torch.int8:
            return NotImplemented
        wide = other.to(torch.int32) if isinstance(other, torch.Tensor) else other
        return op(x.to(torch.int32), wide, *args, **kwargs).to(torch.int8)
    return divide


def lowerable_decompositions() -> dict:
    """op overload -> decomposition, for the table aot_autograd applies."""
    table = get_decompositions(TORCH_DECOMPOSED)
    table.update({
        aten.isfinite.default: isfinite,
        aten.reciprocal.default: reciprocal,
        aten.eq.Tensor: equal_to_itself,
        aten.amax.default: _reduction_of_scalar,
        aten.amin.default: _reduction_of_scalar,
        aten.argmax.default: argmax,
        aten.argmin.default: argmin,
        aten.all.dim: _truth_of_scalar,
        aten.any.dim: _truth_of_scalar,
        aten.maximum.default: maximum,
        aten.minimum.default: minimum,
        aten.clamp.default: clamp,
        aten.clamp.Tensor: clamp,
        aten.hardtanh.default: hardtanh,
        aten.clamp_min.default: clamp_min,
        aten.clamp_min.Tensor: clamp_min,
        aten.clamp_max.default: clamp_max,
        aten.clamp_max.Tensor: clamp_max,
        aten.fmax.default: fmax,
        aten.fmin.default: fmin,
        aten.hypot.default: hypot,
        aten.angle.default: angle,
        aten.cumprod.default: cumprod,
        aten.cumsum.default: cumsum,
        aten.prod.dim_int: prod_of_scalar,
        aten.max.dim: max_with_index,
        aten.min.dim: min_with_index,
        aten.scatter.reduce: scatter_reduce_into,
        aten.scatter.value_reduce: scatter_value_reduce_into,
        aten.scatter_reduce.two: scatter_reduce_mean_of_integers,
        aten._cdist_forward.default: cdist,
        aten._pdist_forward.default: pdist,
        aten.diagonal_scatter.default: diagonal_scatter,
        aten.as_strided_scatter.default: as_strided_scatter,
        aten.empty_strided.default: empty_strided,
        aten.index_reduce.default: index_reduce,
        aten.put.default: put,
        aten.index_put.default: index_put_at_flat_positions,
        aten._unsafe_index_put.default: unsafe_index_put,
        aten.max_pool2d_with_indices.default: max_pool2d_with_offsets,
        **{op: _int8_division_in_int32(op) for op in (
            aten.div.Tensor_mode, aten.div.Scalar_mode, aten.floor_divide.default,
            aten.floor_divide.Scalar, aten.remainder.Tensor, aten.remainder.Scalar)},
        aten.sort.default: sort,
        aten.sort.stable: sort_stable,
        aten.topk.default: topk,
        aten.cummax.default: cummax,
        aten.cummin.default: cummin,
        aten.searchsorted.Tensor: searchsorted,
        aten.logcumsumexp.default: logcumsumexp,
        aten.avg_pool2d_backward.default: avg_pool2d_backward,
        aten.max_pool2d_with_indices_backward.default: max_pool2d_with_indices_backward,
        aten.linalg_vector_norm.default: vector_norm,
        aten._unsafe_index.Tensor: unsafe_index,
        aten.take.default: take,
        aten.median.default: median,
        aten.nanmedian.default: nanmedian,
        aten.median.dim: median_dim,
        aten.nanmedian.dim: nanmedian_dim,
        aten.threshold_backward.default: threshold_backward,
        aten.nextafter.default: nextafter,
        aten.frexp.Tensor: frexp,
        aten.nonzero_static.default: nonzero_static,
        aten.convolution_backward.default: grouped_convolution_backward,
        aten.convolution.default: transposed_convolution_cropped,
    })
    table.update({op: _dim_from_start(op, table.get(op)) for op in SCATTERS})
    return table

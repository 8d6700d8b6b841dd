"""The decomposition table aot_autograd applies before import.

torch-mlir's own table is the base: it lowers more of PyTorch's OpInfo ops than
torch's core-ATen table (463 vs 455 of 672). On top of it, tessel decomposes ops
that torch-mlir cannot lower but whose parts it can (lowerable_decompositions.py,
special_functions.py),
and ops whose default lowering is slow on the CPU (below).
"""

from __future__ import annotations

import functools
import math

import torch
import torch._inductor.inductor_prims
from torch._decomp import _core_aten_decompositions_post_autograd, get_decompositions
from torch._prims_common import make_contiguous_strides_for
from torch_mlir.extras import fx_decomp_util

from tessel import ir
from tessel.frontend.half_precision import half_precision_decompositions
from tessel.frontend.linear_cross_entropy import linear_cross_entropy_decompositions
from tessel.frontend.lowerable_decompositions import (
    lowerable_decompositions,
    transposed_convolution_cropped,
)
from tessel.frontend.special_functions import special_decompositions
from tessel.passes.split_reductions import fits_one_program

aten = torch.ops.aten


def fma(a, b, c):
    """prims.fma (from Adam's update): LLVM contracts the multiply-add again."""
    return a * b + c


def nll_loss_backward_as_select(grad_output, x, target, weight, reduction, ignore_index,
                                total_weight):
    """nll_loss's backward as a select on the class index, where PyTorch's decomposition
    scatters into zeros: element-wise, it fuses into the log_softmax backward that reads
    it instead of filling, copying and scattering a logits-sized tensor (as Inductor's
    scatter-upon-constant pattern does), and it reads `x` for its shape alone, so the
    partitioner need not save the log-probabilities for it."""
    channel_dim = 0 if x.dim() < 2 else 1
    if reduction == 1:  # mean
        grad_output = grad_output / total_weight
    if x.dim() == 1 and target.dim() > 0:  # as the kernel: only target[0] counts
        target = target[0]
    target = target.unsqueeze(channel_dim)
    classes = torch.arange(x.shape[channel_dim], device=x.device)
    if x.dim() == 2:
        classes = classes.unsqueeze(0)
    if x.dim() > grad_output.dim() > 0:
        grad_output = grad_output.unsqueeze(channel_dim)
    if weight is not None:
        shape = [1] * x.dim()
        shape[channel_dim] = weight.shape[0]
        grad_output = grad_output * weight.reshape(shape)
    grad_output = torch.where(target != ignore_index, grad_output, 0)
    return torch.where(classes == target, -grad_output, 0).to(x.dtype)


def flash_attention_for_cpu_backward(grad_out, query, key, value, out, attention, dropout_p,
                                      is_causal, attn_mask=None, scale=None):
    """The CPU flash-attention backward (training through SDPA) as matmuls.

    The forward goes through the table's decomposition (torch._decomp's), which saves
    the attention probabilities P in the kernel's logsumexp slot; from P:
    dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)), dQ = dS K * scale, dK = dS^T Q * scale.
    """
    if dropout_p != 0.0 or attention.dim() != query.dim():
        return NotImplemented  # a real logsumexp: the forward ran the flash kernel itself
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    grad_value = torch.matmul(attention.transpose(-2, -1), grad_out)
    grad_attention = torch.matmul(grad_out, value.transpose(-2, -1))
    row_dot = (grad_out * out).sum(dim=-1, keepdim=True)
    grad_scores = attention * (grad_attention - row_dot)
    grad_query = torch.matmul(grad_scores, key) * scale
    grad_key = torch.matmul(grad_scores.transpose(-2, -1), query) * scale
    return grad_query, grad_key, grad_value


def var_mean_correction(x, dim=None, *, correction=None, keepdim=False):
    """var_mean in the input's precision.

    torch-mlir's own lowering upcasts to f64, which doubles memory traffic and halves
    vector width on the CPU; eager computes in the input's precision too.

    A reduction of rows that fit one GPU program (a layer norm's) takes two passes, the
    mean and then the squared deviations from it, both over the row the program holds. A
    longer one, or one that keeps a dim between reduced ones (a batch norm's statistics
    over batch and pixels, per channel: split over programs however short, its channels
    lying across memory), is split over programs (split-reductions), where a second
    pass is two more kernels that read the whole tensor again: there both sums are taken
    in one pass over the values less a shift,
    the first value of each reduced slice, as Inductor's one-pass Welford reduction
    reads them once. Shifted by a value of the data, var = (S2 - S1^2 / n) / n loses
    little to cancellation: the shift lies within a few deviations of the mean.
    """
    if not x.dtype.is_floating_point or x.dtype == torch.float64:
        return NotImplemented
    dims = list(range(x.dim())) if dim is None else [d % max(x.dim(), 1) for d in dim]
    correction = 1 if correction is None else correction
    count = 1
    for d in dims:
        count *= x.shape[d]
    rows = dims == list(range(x.dim() - len(dims), x.dim()))
    if rows and fits_one_program(count):
        mean = torch.mean(x, dims, keepdim=True)
        centered = x - mean
        var = torch.sum(centered * centered, dims, keepdim=keepdim) / max(count - correction, 0)
        return var, mean if keepdim else mean.squeeze(dims)
    shift = x[tuple(slice(0, 1) if d in dims else slice(None) for d in range(x.dim()))]
    shifted = x - shift
    shifted_sum = torch.sum(shifted, dims, keepdim=True)
    squares = torch.sum(shifted * shifted, dims, keepdim=True)
    mean_shifted = shifted_sum / count
    var = torch.clamp_min(squares - shifted_sum * mean_shifted, 0) / max(count - correction, 0)
    mean = shift + mean_shifted
    return (var, mean) if keepdim else (var.squeeze(dims), mean.squeeze(dims))


def as_strided_as_view(x, size, stride, storage_offset=None):
    """as_strided that reads a contiguous tensor in its own order (a squeeze or an
    unsqueeze that a model spells as as_strided: Swin's and ConvNeXt's poolers) as a view.

    torch-mlir lowers as_strided as a gather through a constant index tensor, which a
    kernel then reads from memory (the Triton target refuses such constants); a view is
    only metadata.
    """
    offset = x.storage_offset() if storage_offset is None else storage_offset
    contiguous = make_contiguous_strides_for(size)
    if not x.is_contiguous() or offset != x.storage_offset() or math.prod(size) != x.numel() \
            or any(a != b for a, b, n in zip(stride, contiguous, size) if n != 1):
        return NotImplemented
    return aten.view.default(x, size)


def convolution_1d_as_2d(x, weight, bias, stride, padding, dilation, transposed,
                         output_padding, groups):
    """A 1-D convolution as a 2-D one over a unit height (Whisper's and wav2vec's
    front ends): torch-mlir lowers it to the 2-D convolution the targets hand to
    cuDNN / their gemm path, where a 1-D one became a loop kernel, orders of magnitude
    slower than cuDNN on Whisper's."""
    if x.dim() != 3:
        return NotImplemented
    return aten.convolution.default(
        x.unsqueeze(2), weight.unsqueeze(2), bias, [1, *stride], [0, *padding],
        [1, *dilation], transposed, [0, *output_padding], groups).squeeze(2)


def convolution(*args):
    """A 1-D convolution as a 2-D one (which meets this table again), or
    lowerable_decompositions' rewrite of a transposed one."""
    result = convolution_1d_as_2d(*args)
    return transposed_convolution_cropped(*args) if result is NotImplemented else result


def constant_pad_nd_with_crops(x, pad, value=0.0):
    """A pad with negative amounts (F.pad's backward, MobileNetV2's and MobileBERT's
    training steps) as a slice that crops them, then a pad of the positive ones:
    torch-mlir's tensor.pad takes no negative amounts, and the CPU target's bufferization
    failed on what it made of them."""
    if all(amount >= 0 for amount in pad):
        return NotImplemented
    for index in range(len(pad) // 2):
        dim = x.dim() - 1 - index
        low, high = pad[2 * index], pad[2 * index + 1]
        if low < 0 or high < 0:
            x = aten.slice.Tensor(x, dim, max(-low, 0), x.shape[dim] - max(-high, 0))
    return aten.constant_pad_nd.default(x, [max(amount, 0) for amount in pad], value)


def device_put_on_its_device(x, device, non_blocking=False):
    """prims.device_put to the device `x` is on: a copy. torch._refs' `_to_copy` puts
    a tensor on "cuda" when it is on "cuda:0" (transformers' static cache does
    `.to(device)` with the first), and torch-mlir has no device_put."""
    device = torch.device(device)
    if device.type != x.device.type or device.index not in (None, x.device.index):
        return NotImplemented
    return torch.clone(x)


def _per_tensor(op: torch._ops.OpOverloadPacket):
    """A `_foreach_<op>` as a list of `op` calls, one per tensor of its list arguments
    (scalar lists are indexed alike; other arguments are passed to every call).
    Arguments past `op`'s positional ones are its keyword-only ones, in order: the
    foreach schemas pass addcmul's `value` positionally."""
    schema = op.overloads()[0] if "default" not in op.overloads() else "default"
    arguments = getattr(op, schema)._schema.arguments
    positional = sum(not a.kwarg_only for a in arguments)
    keyword_only = [a.name for a in arguments if a.kwarg_only]

    def decomposition(*args, **kwargs):
        count = next(len(a) for a in args if isinstance(a, (list, tuple)))
        calls = []
        for i in range(count):
            values = [a[i] if isinstance(a, (list, tuple)) else a for a in args]
            extra = dict(zip(keyword_only, values[positional:]))
            calls.append(op(*values[:positional], **extra, **kwargs))
        return calls
    return decomposition


def _foreach_norm(tensors, ord=2, dtype=None):
    return [aten.linalg_vector_norm(t, ord, dtype=dtype) for t in tensors]


def foreach_decompositions() -> dict:
    """torch.optim's multi-tensor ops (`_foreach_add`, `_foreach_lerp`, ...), which
    torch-mlir cannot lower, as the per-tensor ops they stand for: optimizers take
    that path by default on CUDA tensors."""
    names = {name.split("::")[1].split(".")[0] for name in torch._C._dispatch_get_all_op_names()
             if name.startswith("aten::_foreach_") and not name.split(".")[0].endswith("_")}
    table = {}
    for name in sorted(names):
        base = name.removeprefix("_foreach_")
        if name == "_foreach_norm":
            decomposition = _foreach_norm
        elif hasattr(aten, base):
            decomposition = _per_tensor(getattr(aten, base))
        else:
            continue  # e.g. _foreach_powsum: no per-tensor aten op of that name
        packet = getattr(aten, name)
        for overload in packet.overloads():
            table[getattr(packet, overload)] = decomposition
    return table


def _has_torch_mlir_op(op: torch._ops.OpOverload) -> bool:
    """Whether torch-mlir's torch dialect defines `op`; the FX importer writes any
    other op as a generic `torch.operator`, which no lowering accepts."""
    namespace, _, name = op._schema.name.partition("::")
    overload = f".{op._schema.overload_name}" if op._schema.overload_name else ""
    return ir.context().is_registered_operation(f"torch.{namespace}.{name}{overload}")


def _with_scalars_as_tensors(tensor_form: torch._ops.OpOverload, scalars: list[int]):
    """A call of `tensor_form` with the arguments at `scalars` made 0-d tensors of the
    dtype eager computes in (the promotion of the tensor and the scalar)."""
    def decomposition(*args, **kwargs):
        tensor = next(a for a in args if isinstance(a, torch.Tensor))
        args = [torch.full((), a, dtype=torch.result_type(tensor, a), device=tensor.device)
                if i in scalars else a for i, a in enumerate(args)]
        return tensor_form(*args, **kwargs)
    return decomposition


def scalar_forms() -> dict:
    """The Scalar overloads torch-mlir has no op for (`x | 3` is bitwise_or.Scalar;
    also xor's, the shifts', copysign's, remainder's and xlogy's with a scalar first),
    as their Tensor overload, which it lowers, on the scalar made a 0-d tensor."""
    table = {}
    for name in torch._C._dispatch_get_all_op_names():
        base, _, overload = name.removeprefix("aten::").partition(".")
        packet = getattr(aten, base, None) if name.startswith("aten::") else None
        if packet is None or "Scalar" not in overload or not hasattr(packet, "Tensor"):
            continue
        scalar_form, tensor_form = getattr(packet, overload), packet.Tensor
        arguments = scalar_form._schema.arguments
        pairs = list(zip(arguments, tensor_form._schema.arguments))
        if (len(arguments) != len(tensor_form._schema.arguments) or scalar_form._schema.is_mutable
                or _has_torch_mlir_op(scalar_form) or not _has_torch_mlir_op(tensor_form)):
            continue
        scalars = [i for i, (a, b) in enumerate(pairs) if str(a.type) == "number"
                   and str(b.type) == "Tensor"]
        if scalars and all(str(a.type) == str(b.type) or i in scalars
                           for i, (a, b) in enumerate(pairs)):
            table[scalar_form] = _with_scalars_as_tensors(tensor_form, scalars)
    return table


def comparisons_in_eagers_dtype() -> dict:
    """`x == 0.1` and the other comparisons with a scalar, as their Tensor overload on
    the scalar made a 0-d tensor of the promoted dtype, as eager compares. torch-mlir
    widens the tensor to the scalar's f64 instead: float32(0.1) == 0.1 came out False
    (eager: True), and every softmax's -inf test converted its scores to f64."""
    comparisons = (aten.eq, aten.ne, aten.lt, aten.le, aten.gt, aten.ge)
    return {op.Scalar: _with_scalars_as_tensors(op.Tensor, [1]) for op in comparisons}


def torch_mlir_table() -> dict:
    """torch-mlir's table (fx_decomp_util.get_decomposition_table: core ATen's, less its
    exclusions, plus its extras), without the CompositeImplicitAutograd ops that
    core_aten_decompositions() lists too: aot_autograd decomposes those anyway, and
    collecting them slowed every process's first compile."""
    excluded = set(fx_decomp_util._EXPANDED_DECOMP_EXCLUDE)
    table = {op: decomposition
             for op, decomposition in _core_aten_decompositions_post_autograd().items()
             if op._overloadpacket not in excluded}
    table.update(get_decompositions(fx_decomp_util.DEFAULT_DECOMPOSITIONS))
    return table


@functools.cache
def before_autograd_table() -> dict:
    """What aot_autograd itself decomposes, before it splits forward from backward
    (frontend/decompose.py applies the rest later):

    - the CPU flash attention where it is differentiated, whose decomposition saves
      another tensor for the backward than the kernel does
      (`flash_attention_for_cpu_backward`), so both graphs must see it. Where nothing is
      differentiated (an inference graph), the kernel stays: a native op;
    - log_softmax and its backward, as Inductor does: whole, the op's f32 output is what
      the backward reads, so the partitioner saved it (a language model's loss: 4 bytes
      a logit written in the forward and read in the backward, GPT-2's 4096 x 50257 is
      823 MB). Decomposed, it saves the row's max and log-sum-exp, and the backward
      recomputes the rest from the logits, in their own dtype, that it holds anyway;
    - nll_loss's backward, whose decomposition reads the log-probabilities for their
      shape alone (`nll_loss_backward_as_select`): whole, it made the partitioner save them;
    - max pooling, as Inductor's low-memory pooling: whole, its int64 indices are what
      the backward reads (resnet50's stem: 51 MB written a step and read at each of the
      gradient's taps); decomposed (`max_pool2d_with_offsets`), the partitioner saves
      int8 offsets in the window and the backward computes the indices from them. Its
      backward too, which reads the pooled image for its shape alone;
    - detach, an alias: the partitioner takes a value that the backward reads through a
      detach (an op's output that autograd saved) as one to materialize, never to
      recompute, as it would log_softmax's.
    """
    table = decomposition_table()
    forward = aten._scaled_dot_product_flash_attention_for_cpu.default
    backward = aten._scaled_dot_product_flash_attention_for_cpu_backward.default

    def flash_attention_for_cpu_if_differentiated(query, key, value, *args, **kwargs):
        # aot_autograd traces a graph it differentiates with grad mode on, an inference
        # graph with it off (the attention's inputs do not say: they are fake tensors).
        if not torch.is_grad_enabled():
            return NotImplemented
        return table[forward](query, key, value, *args, **kwargs)

    loss_ops = (aten._log_softmax.default, aten._log_softmax_backward_data.default,
                aten.nll_loss_backward.default, aten.detach.default)
    pool_ops = (aten.max_pool2d_with_indices.default,
                aten.max_pool2d_with_indices_backward.default)
    return {forward: flash_attention_for_cpu_if_differentiated, backward: table[backward],
            **{op: table[op] for op in (*loss_ops, *pool_ops)}}


@functools.cache
def decomposition_table() -> dict:
    table = torch_mlir_table()
    table.update(lowerable_decompositions())
    table.update(special_decompositions())
    table.update(linear_cross_entropy_decompositions())
    table.update(foreach_decompositions())
    table[torch.ops.prims.fma.default] = fma
    table[torch.ops.prims.device_put.default] = device_put_on_its_device
    table[aten.var_mean.correction] = var_mean_correction
    table[aten.as_strided.default] = as_strided_as_view
    table[aten.convolution.default] = convolution
    table[aten.constant_pad_nd.default] = constant_pad_nd_with_crops
    table[aten.nll_loss_backward.default] = nll_loss_backward_as_select
    table[aten._scaled_dot_product_flash_attention_for_cpu_backward.default] = (
        flash_attention_for_cpu_backward)
    table.update(half_precision_decompositions(table))
    # Before PyTorch's decompositions of these, which make their scalar a prims.scalar_tensor.
    table.update(scalar_forms())
    table.update(comparisons_in_eagers_dtype())
    return table


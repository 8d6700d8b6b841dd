"""Ops tessel leaves to PyTorch's own kernels on purpose.

Some ATen ops are themselves fused, tuned kernels. Where one of them measured faster
than what tessel generates for its parts, it runs as PyTorch's: on a target whose host
program calls PyTorch (the Triton target's Python), that program calls it between its
kernels (`called_in_place`, passes/call_native_ops.py); otherwise, and for the calls it
cannot make so, the graph is split around it (as for an op tessel cannot compile, see
partition.py). Nothing is reported as a fallback: the call is recorded in
`tessel.stats()["native_ops"]` and `tessel.explain`, with the reason below. Inductor
makes the same choice for these ops. So are library routines that no loop nest written
here would match (LAPACK's factorizations and solves, FFTs, which Inductor leaves to
ATen as well), and the calls compiled code cannot make: collectives (their
communication) and copies between devices.
"""

from __future__ import annotations

import torch
import torch.fx

from tessel.frontend.collectives import is_collective
from tessel.frontend.empty_values import holds_no_elements

aten = torch.ops.aten

_FUSED_ATTENTION = (
    "CUDA fused attention (scaled_dot_product_attention's flash, memory-efficient and "
    "cuDNN kernels): it never writes the (batch, heads, query, key) score matrix, which "
    "tessel's matmul + softmax kernels would write and read back (GPT-2's block at "
    "8x12x512x512 fp32: 100 MB each way per call)")

_CPU_FLASH_ATTENTION = (
    "PyTorch's CPU flash attention, in an inference graph (training decomposes it, see "
    "decompositions.before_autograd_table): it never writes the score matrix either, "
    "and its blocked loops beat tessel's transpose, batched gemm, softmax and gemm (the "
    "numbers are in the commit that made it native)")

_LAPACK = (
    "a LAPACK factorization or solve (pivoting, iterations to convergence, blocked "
    "updates tuned per machine), which loop kernels would only reimplement slower; "
    "Inductor leaves the same ops to ATen (torch/_inductor/lowering.py, 'Linalg')")

# Inductor's list, plus the deprecated cholesky (its own LAPACK call, not through
# linalg_cholesky_ex) and the eigendecomposition of a general matrix (CPU-only in
# ATen, so Inductor's list, written for the GPU, leaves it to its generic fallback).
_LAPACK_OPS = (
    aten._linalg_det.default, aten.linalg_householder_product.default,
    aten.linalg_inv_ex.default, aten.linalg_ldl_factor_ex.default,
    aten.linalg_ldl_solve.default, aten.linalg_lu.default, aten.linalg_lu_factor_ex.default,
    aten.linalg_lu_solve.default, aten.linalg_matrix_exp.default, aten.linalg_qr.default,
    aten._linalg_slogdet.default, aten._linalg_solve_ex.default,
    aten.linalg_solve_triangular.default, aten._linalg_svd.default, aten.lu_unpack.default,
    aten.ormqr.default,
    aten.linalg_pinv.atol_rtol_tensor, aten._linalg_eigh.default,
    aten.triangular_solve.default, aten.linalg_cholesky_ex.default,
    aten.cholesky_inverse.default, aten.cholesky_solve.default, aten.geqrf.default,
    aten.cholesky.default, aten.linalg_eig.default)

_FFT = ("a fast Fourier transform (PocketFFT or MKL's): complex results, which tessel's "
        "kernels do not hold; Inductor leaves these to ATen too")
_FFT_OPS = (aten._fft_r2c.default, aten._fft_c2c.default, aten._fft_c2r.default)

NATIVE_OPS: dict[torch._ops.OpOverload, str] = {
    **dict.fromkeys(_LAPACK_OPS, _LAPACK),
    **dict.fromkeys(_FFT_OPS, _FFT),
    aten._linalg_check_errors.default: (
        "the check of a LAPACK call's status that raises eager's error (a singular "
        "matrix): an exception, which compiled code does not raise"),
    aten._transformer_encoder_layer_fwd.default: (
        "nn.TransformerEncoderLayer's fused inference kernel; on the CPU it ran the "
        "benchmark's layer in 0.88 ms against 1.04 ms for tessel's 23 kernels, and "
        "compiling those took 1.7 s (benchmarks.run of 2026-11-22T03:30, 2-core Xeon, "
        "torch 2.13.0: benchmarks/results/cpu.md as of commit 1a6111c)"),
    aten._scaled_dot_product_cudnn_attention.default: _FUSED_ATTENTION,
    aten._scaled_dot_product_flash_attention.default: _FUSED_ATTENTION,
    aten._scaled_dot_product_efficient_attention.default: _FUSED_ATTENTION,
    aten._scaled_dot_product_flash_attention_for_cpu.default: _CPU_FLASH_ATTENTION,
    # Their backward kernels, in training graphs: the same trade, and the flash and
    # memory-efficient ones take random-number state that has no MLIR form.
    aten._scaled_dot_product_cudnn_attention_backward.default: _FUSED_ATTENTION,
    aten._scaled_dot_product_flash_attention_backward.default: _FUSED_ATTENTION,
    aten._scaled_dot_product_efficient_attention_backward.default: _FUSED_ATTENTION,
}


_DEVICE_COPY = ("a copy between devices (`.to(device)` of a tensor made on another one): "
                "PyTorch's own copy, which compiled code of one device cannot make")
_COPIES = (aten._to_copy.default, torch.ops.prims.device_put.default)

_CONVOLUTION_BACKWARD = (
    "a convolution's backward on CUDA: cuDNN's data- and weight-gradient kernels, which "
    "Inductor calls too. Lowered, the weight's gradient becomes a forward convolution "
    "whose kernel is the output's gradient (56x56 in ResNet-50's first stage), for which "
    "cuDNN has only a slow generic algorithm: 17 such calls took 73 ms of the 212 ms of "
    "GPU time of ResNet-50's bf16 train step (H100, torch 2.11, "
    "`benchmarks.models.profile resnet50 --kind train`)")

_COLLECTIVE = ("a collective or its wait (torch.distributed's functional collectives): "
               "communication that the process group's own backend (NCCL, gloo) runs, "
               "overlapped with the compiled pieces between the two (collectives.py)")


def native_reason(node: torch.fx.Node) -> str | None:
    """Why the call `node` is left to PyTorch, or None where tessel compiles it."""
    if node.op != "call_function":
        return None
    if node.target in NATIVE_OPS:
        # Results with no elements are allocated, not computed (empty_values.py).
        return None if holds_no_elements(node.meta.get("val")) else NATIVE_OPS[node.target]
    # An op with side effects (linalg's _linalg_check_errors, which raises on a singular
    # matrix) arrives wrapped, threading aot_autograd's effect token.
    if _effectful_op(node) in NATIVE_OPS:
        return NATIVE_OPS[_effectful_op(node)]
    if node.target is aten.convolution_backward.default and on_cuda(node.args[1]):
        return _CONVOLUTION_BACKWARD
    if is_collective(node):
        return _COLLECTIVE
    if node.target in _COPIES and _devices(node.args[0]) != _devices(node):
        return _DEVICE_COPY
    return None


def called_in_place(node: torch.fx.Node) -> bool:
    """Whether a host program that calls PyTorch (Target.calls_native_ops) can make the
    native call `node` between its kernels, in one compiled graph: an ATen op without
    effects (the graph's order keeps it in place) that neither communicates (a split
    overlaps collectives with the pieces around them) nor copies between devices, whose
    results are tensors (or Nones), on the device of its tensor arguments, and whose
    other arguments are constants (passes/call_native_ops.py passes them)."""
    if not isinstance(node.target, torch._ops.OpOverload) or is_collective(node) \
            or node.target in _COPIES:
        return False
    # An undefined tensor where the schema says `Tensor` (a fused attention backward's
    # absent bias: ATen's schemas let it be None), which torch-mlir's importer cannot
    # import as the op's operand: the op runs in a split instead.
    given = {**dict(zip((a.name for a in node.target._schema.arguments), node.args)),
             **node.kwargs}
    if any(given.get(parameter.name, False) is None and isinstance(parameter.type, torch.TensorType)
           for parameter in node.target._schema.arguments):
        return False
    value = node.meta.get("val")
    tensors = [result for result in (value if isinstance(value, (tuple, list)) else (value,))
               if result is not None]
    for argument in torch.utils._pytree.tree_leaves((node.args, node.kwargs)):
        if isinstance(argument, torch.fx.Node):
            tensors.append(argument.meta.get("val"))
        elif isinstance(argument, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return False
    return all(isinstance(tensor, torch.Tensor) for tensor in tensors) and \
        len({tensor.device for tensor in tensors}) == 1


def splits_around(node: torch.fx.Node, calls_native_ops: bool) -> bool:
    """Whether a graph is split around `node` to run it natively: a native op that the
    target's host program does not call itself (`calls_native_ops`, the target's)."""
    return native_reason(node) is not None and not (calls_native_ops and called_in_place(node))


def _effectful_op(node: torch.fx.Node):
    """The op a `with_effects` node calls, or None for any other node."""
    return node.args[1] if node.target is torch.ops.higher_order.with_effects else None


def on_cuda(value) -> bool:
    """Whether `value` (an FX node's traced value, or a tensor) is a CUDA tensor."""
    if isinstance(value, torch.fx.Node):
        value = value.meta.get("val")
    return isinstance(value, torch.Tensor) and value.device.type == "cuda"


def _devices(node) -> set:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return {value.device} if isinstance(value, torch.Tensor) else set()


def native_ops_in(gm: torch.fx.GraphModule) -> dict[str, str]:
    """The native ops that `gm` calls, by name ('aten._transformer_encoder_layer_fwd.default',
    one of partition.target_names), each with the reason it is left native."""
    return {str(_effectful_op(node) or node.target): reason for node in gm.graph.nodes
            if (reason := native_reason(node)) is not None}

"""Ops tessel leaves to PyTorch's own kernels on purpose.

Some ATen ops are themselves fused, tuned kernels. Where one of them measured faster
than what tessel generates for its parts, the graph is split around it (as for an op
tessel cannot compile, see partition.py), but nothing is reported as a fallback: the
call is recorded in `tessel.stats()["native_ops"]` and `tessel.explain`, with the
reason below. Inductor makes the same choice for these ops. So are the calls compiled
code cannot make: collectives (their communication) and copies between devices.
"""

from __future__ import annotations

import torch
import torch.fx

from tessel.frontend.collectives import is_collective

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

NATIVE_OPS: dict[torch._ops.OpOverload, str] = {
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

_COLLECTIVE = ("a collective or its wait (torch.distributed's functional collectives): "
               "communication that the process group's own backend (NCCL, gloo) runs, "
               "overlapped with the compiled pieces between the two (collectives.py)")


def native_reason(node: torch.fx.Node) -> str | None:
    """Why the call `node` is left to PyTorch, or None where tessel compiles it."""
    if node.op != "call_function":
        return None
    if node.target in NATIVE_OPS:
        return NATIVE_OPS[node.target]
    if is_collective(node):
        return _COLLECTIVE
    if node.target in _COPIES and _devices(node.args[0]) != _devices(node):
        return _DEVICE_COPY
    return None


def _devices(node) -> set:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return {value.device} if isinstance(value, torch.Tensor) else set()


def native_ops_in(gm: torch.fx.GraphModule) -> dict[str, str]:
    """The native ops that `gm` calls, by name ('aten._transformer_encoder_layer_fwd.default',
    one of partition.target_names), each with the reason it is left native."""
    return {str(node.target): reason for node in gm.graph.nodes
            if (reason := native_reason(node)) is not None}

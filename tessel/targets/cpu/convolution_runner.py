"""Runs the convolutions that CPU-compiled code hands to PyTorch (`tessel_convolution`).

`library-calls` turns each named f32 convolution into `tessel_convolution(id, slots)`
(passes/convolution_calls.py); this module provides that function: it views the three
memrefs of the slots as tensors (no copy) and runs PyTorch's convolution, whose oneDNN
kernel beats tessel's im2col gather + gemm, accumulating into the output buffer as the
linalg op does (the buffer holds the bias, or zeros).

oneDNN adds its result to the buffer itself (the in-place "add" post-op of PyTorch's
`mkldnn._convolution_pointwise_`, which Inductor's CPU fusions call): a convolution that
returns a new tensor costs a second pass over its whole result, to add it to the bias
in the buffer. One that overwrites its output is zeroed first, a fill in place of the
copy it replaces (as fast, in MobileNetV2).
"""

from __future__ import annotations

import ctypes

import torch

from tessel.passes.contractions import DEPTHWISE_CONVOLUTION
from tessel.passes.convolution_calls import SLOTS_PER_OPERAND, ConvolutionCall

# void tessel_convolution(int64_t id, int64_t *slots)
CONVOLUTION_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64))
# output += convolution(image, weight), in place; None in builds without oneDNN.
CONVOLVE_INTO = (torch.ops.mkldnn._convolution_pointwise_.binary
                 if torch.backends.mkldnn.is_available() else None)


def view(address: int, sizes: tuple[int, ...], strides: tuple[int, ...]) -> torch.Tensor:
    """The f32 memory at `address` as a tensor of these sizes and strides (no copy)."""
    if 0 in sizes:
        return torch.empty(sizes)
    extent = 1 + sum((size - 1) * stride for size, stride in zip(sizes, strides))
    memory = (ctypes.c_float * extent).from_address(address)
    # A normal tensor even under inference_mode: the view is kept for later calls,
    # which may write through it outside inference mode.
    with torch.inference_mode(False):
        return torch.frombuffer(memory, dtype=torch.float32).as_strided(sizes, strides)


class _CallSite:
    """One convolution of the compiled code: its parameters, and the views of the
    memory it was last called with (a weight, and most temporaries, come back at the
    same address every call)."""

    def __init__(self, description: str):
        call = ConvolutionCall.parse(description)
        self.strides, self.dilations = list(call.strides), list(call.dilations)
        self.depthwise, self.overwrites = call.op == DEPTHWISE_CONVOLUTION, call.overwrites
        self.operands: dict[tuple[int, ...], tuple[torch.Tensor, ...]] = {}

    def run(self, slots) -> None:
        key = tuple(slots[:3 * SLOTS_PER_OPERAND])
        operands = self.operands.get(key)
        if operands is None:
            if len(self.operands) >= 16:  # addresses that keep changing: keep the latest
                self.operands.clear()
            operands = self.operands[key] = self._operands(key)
        image, weight, output, groups = operands
        if self.overwrites:
            output.zero_()
        if CONVOLVE_INTO is None:
            output.add_(torch.convolution(image, weight, None, self.strides, [0, 0],
                                          self.dilations, False, [0, 0], groups))
        else:
            CONVOLVE_INTO(output, image, weight, None, [0, 0], self.strides, self.dilations,
                          groups, "add", 1.0, None, [], None)

    def _operands(self, slots: tuple[int, ...]) -> tuple:
        """The image, weight, output and groups as aten's convolution takes them."""
        image, weight, output = (
            view(slots[first], slots[first + 1:first + 1 + rank],
                 slots[first + 5:first + 5 + rank])
            for first, rank in ((0, 4), (SLOTS_PER_OPERAND, 3 if self.depthwise else 4),
                                (2 * SLOTS_PER_OPERAND, 4)))
        # aten sizes its output from the image: where the image has rows past the last
        # window that would make one more, it is cut to the rows the windows read. Only
        # there: a cut image is not dense, and oneDNN ran a stride-2 depthwise
        # convolution of one up to 2.3x slower than of the whole (benchmarks/README.md).
        ends = []
        for whole, size, stride, kernel, dilation in zip(
                image.shape[2:], output.shape[2:], self.strides, weight.shape[-2:],
                self.dilations):
            read = (size - 1) * stride + (kernel - 1) * dilation + 1
            ends.append(whole if whole - read < stride else read)
        groups = 1
        if self.depthwise:  # (C, KH, KW): aten's (C, 1, KH, KW) in C groups
            weight, groups = weight.unsqueeze(1), weight.shape[0]
        return image[:, :, :ends[0], :ends[1]], weight, output, groups


def callback(descriptions: list[str], failures: list):
    """A CONVOLUTION_CALLBACK for one graph's compiled code (keep it alive as long as
    that). What a convolution raises is appended to `failures` (the host program then
    raises, and the graph runs eagerly) instead of being lost in the C caller."""
    sites = [_CallSite(description) for description in descriptions]

    def convolve(call_id: int, slots) -> None:
        try:
            sites[call_id].run(slots)
        except Exception as error:  # noqa: BLE001 - reported through the host program
            failures.append(f"convolution {descriptions[call_id]} failed: {error!r}")

    return CONVOLUTION_CALLBACK(convolve)

"""channels-last-convolutions: the CPU's library convolutions on channels-last images.

oneDNN's channels-last convolutions are about twice as fast as its NCHW ones on large
maps (benchmarks/README.md, "CPU findings"), which is why Inductor keeps a conv net
channels-last on the CPU. Each library convolution (`tessel.library_call`,
convolutions-to-gemm), and each depthwise one left to loops of tessel's (which then
run along the contiguous channels), becomes its NHWC form between transposes: its
image and accumulator transposed to NHWC, its result transposed back. A pad of the
image moves below the transpose, and a concatenation of it is made of transposed
parts. Element-wise fusion then folds each transpose into the generic that produces or
reads it, so that the element-wise ops between two convolutions (batch norm,
activations, upsampling) read and write NHWC, and no transpose is left but at the
graph's edges and where an image has readers of both layouts. `library-calls` hands
the NHWC operands to PyTorch as NCHW views.

The weight is transposed at every call, so a convolution whose weight outnumbers its
image (`max-weight-share`; a ResNet's last layers) stays NCHW. A 1x1 weight's NHWC form
is a reshape, a view once bufferized, so such a convolution goes by its neighbours
instead: NHWC where its image is computed NHWC (transposed back from an earlier NHWC
convolution, through element-wise ops and pads): MobileNetV2's expansions between
depthwise convolutions, which would otherwise transpose their image and result. Beside
NCHW 3x3 convolutions (ResNet's bottlenecks) it stays NCHW: there it would add the
transposes, and oneDNN's NHWC 1x1 convolutions over 7x7 maps of 1024-2048 channels take
twice its NCHW ones (benchmarks/README.md, "Model suite on the CPU", twenty-ninth
session).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import DEPTHWISE_CONVOLUTION, convolution_pair
from tessel.passes.convolution_calls import LIBRARY_CALL
from tessel.passes.linalg_builders import replace_with_function_body, tensor_text
from tessel.passes.registry import ModulePass, register
from tessel.passes.spatial_pads import SpatialPad, spatial_pad

TO_CHANNELS_LAST = [0, 2, 3, 1]
TO_CHANNELS_FIRST = [0, 3, 1, 2]
# NCHW convolution -> (its NHWC form, the permutation of its weight into that form's).
CHANNELS_LAST_FORMS = {
    "linalg.conv_2d_nchw_fchw": ("linalg.conv_2d_nhwc_fhwc", [0, 2, 3, 1]),
    DEPTHWISE_CONVOLUTION: ("linalg.depthwise_conv_2d_nhwc_hwc", [1, 2, 0]),
}


@register
@dataclass(frozen=True)
class ChannelsLastConvolutionsPass(ModulePass):
    name: ClassVar[str] = "channels-last-convolutions"
    max_weight_share: float = 1.0

    def run(self, module: ir.Operation) -> None:
        convolutions = ir.ops_where(module, lambda op: op.name in CHANNELS_LAST_FORMS
                                    and (LIBRARY_CALL in op.attributes
                                         or op.name == DEPTHWISE_CONVOLUTION)
                                    and all(ir.ShapedType(v.type).has_static_shape
                                            for v in op.operands))
        for op in convolutions:  # in order: an earlier one's layout is known to a later
            image, weight, accumulator = op.operands
            if not (_weight_is_small(op, self.max_weight_share)
                    or (_weight_is_reshaped(op) and _computed_channels_last(image))):
                continue
            pad = spatial_pad(image)
            source = pad.source if pad is not None else image
            concat = ir.operation_of(source.owner)
            parts = list(concat.operands) if concat is not None and \
                concat.name == "tensor.concat" else [source]
            replace_with_function_body(op, [*parts, weight, accumulator],
                                       _function_text(op, source, parts, pad), module)


def _weight_is_small(op: ir.Operation, share: float) -> bool:
    """Whether `op`'s weight has at most `share` times its image's elements: the weight
    is transposed at every call, the image's layout is what the rewrite gains."""
    image, weight = (ir.ShapedType(v.type) for v in op.operands[:2])
    return math.prod(weight.shape) <= share * math.prod(image.shape)


def _weight_is_reshaped(op: ir.Operation) -> bool:
    """Whether `op`'s weight's NHWC form moves unit dims alone (a 1x1 weight's)."""
    shape = ir.ShapedType(op.operands[1].type).shape
    moved = [d for d in CHANNELS_LAST_FORMS[op.name][1] if shape[d] != 1]
    return moved == sorted(moved)


def _computed_channels_last(image: ir.Value, most: int = 16) -> bool:
    """Whether `image` is an NHWC result transposed back to NCHW, itself or through
    element-wise ops, pads and concatenations (at most `most` of them)."""
    pending, seen = [image], 0
    while pending and seen < most:
        op = ir.operation_of(pending.pop().owner)
        seen += 1
        if op is None:
            continue
        if op.name == "linalg.transpose":
            if list(ir.DenseI64ArrayAttr(op.attributes["permutation"])) == TO_CHANNELS_FIRST:
                return True
        elif op.name == "linalg.generic" and ir.all_parallel(op):
            pending += [v for v in op.operands[:len(op.operands) - len(op.results)]
                        if isinstance(v.type, ir.RankedTensorType)]
        elif op.name in ("tensor.pad", "tensor.concat"):
            pending += [v for v in op.operands if isinstance(v.type, ir.RankedTensorType)]
    return False


def _transpose(name: str, source: str, shape: list[int], permutation: list[int],
               element: str) -> tuple[str, list[int]]:
    result = [shape[p] for p in permutation]
    return (f"  %{name}_empty = tensor.empty() : {tensor_text(result, element)}\n"
            f"  %{name} = linalg.transpose ins(%{source} : {tensor_text(shape, element)}) "
            f"outs(%{name}_empty : {tensor_text(result, element)}) "
            f"permutation = {permutation}\n"), result


def _function_text(op: ir.Operation, source: ir.Value, parts: list[ir.Value],
                   pad: SpatialPad | None) -> str:
    """`op` on (the parts its image, or its pad's source, concatenates (itself alone if
    it is no concatenation), weight, accumulator), in its NHWC form: each part is
    transposed, so that its producer writes it NHWC once fused."""
    element = str(ir.ShapedType(source.type).element_type)
    source_shape, weight_shape, result_shape = (
        list(ir.ShapedType(v.type).shape) for v in (source, op.operands[1], op.operands[2]))
    form, weight_permutation = CHANNELS_LAST_FORMS[op.name]
    image_text, image_shape = "", [source_shape[p] for p in TO_CHANNELS_LAST]
    for index, part in enumerate(parts):
        text, _ = _transpose("image" if len(parts) == 1 else f"part{index}", f"source{index}",
                             list(ir.ShapedType(part.type).shape), TO_CHANNELS_LAST, element)
        image_text += text
    if len(parts) > 1:
        concat = ir.operation_of(source.owner)
        dim = TO_CHANNELS_LAST.index(ir.IntegerAttr(concat.attributes["dim"]).value)
        part_types = ", ".join(tensor_text([list(ir.ShapedType(p.type).shape)[d]
                                            for d in TO_CHANNELS_LAST], element) for p in parts)
        image_text += (f"  %image = tensor.concat dim({dim}) "
                       f"{', '.join(f'%part{i}' for i in range(len(parts)))} : "
                       f"({part_types}) -> {tensor_text(image_shape, element)}\n")
    if pad is not None:
        low, high = ([widths[p] for p in TO_CHANNELS_LAST] for widths in (pad.low, pad.high))
        padded_shape = [size + lo + hi for size, lo, hi in zip(image_shape, low, high)]
        image_text += (
            f"  %pad_value = arith.constant {pad.value}\n"
            f"  %padded = tensor.pad %image low{low} high{high} {{\n"
            f"  ^bb0({', '.join(f'%i{d}: index' for d in range(4))}):\n"
            f"    tensor.yield %pad_value : {element}\n"
            f"  }} : {tensor_text(image_shape, element)} to {tensor_text(padded_shape, element)}\n")
        image_name, image_shape = "padded", padded_shape
    else:
        image_name = "image"
    weight_text, weight_form = _transpose("filter", "weight", weight_shape, weight_permutation,
                                          element)
    accumulator_text, result_form = _transpose("initial", "accumulator", result_shape,
                                               TO_CHANNELS_LAST, element)
    strides, dilations = convolution_pair(op, "strides"), convolution_pair(op, "dilations")
    pairs = {"strides": strides, "dilations": dilations}
    attributes = ", ".join(f"{key} = dense<[{a}, {b}]> : tensor<2xi64>"
                           for key, (a, b) in pairs.items())
    back_text, _ = _transpose("result", "convolved", result_form, TO_CHANNELS_FIRST, element)
    library = f", {LIBRARY_CALL}" if LIBRARY_CALL in op.attributes else ""
    return (
        "func.func @channels_last("
        + "".join(f"%source{i}: {tensor_text(list(ir.ShapedType(p.type).shape), element)}, "
                  for i, p in enumerate(parts)) +
        f"%weight: {tensor_text(weight_shape, element)}, "
        f"%accumulator: {tensor_text(result_shape, element)}) -> "
        f"{tensor_text(result_shape, element)} {{\n"
        + image_text + weight_text + accumulator_text +
        f"  %convolved = {form} {{{attributes}{library}}} "
        f"ins(%{image_name}, %filter : {tensor_text(image_shape, element)}, "
        f"{tensor_text(weight_form, element)}) outs(%initial : "
        f"{tensor_text(result_form, element)}) -> {tensor_text(result_form, element)}\n"
        + back_text +
        f"  return %result : {tensor_text(result_shape, element)}\n}}\n")

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import DEPTHWISE_CONVOLUTION, convolution_pair
from tessel.passes.linalg_builders import replace_with_function_body, tensor_text
from tessel.passes.registry import ModulePass, register
from tessel.passes.spatial_pads import spatial_pad

_SEQUENCE_TO_CHANNELS_FIRST = [0, 2, 1]  # (n, pixels, c) -> (n, c, pixels), and back


def _owner(value: ir.Value, name: str) -> ir.Operation | None:
    owner = ir.operation_of(value.owner)
    return owner if owner is not None and owner.name == name else None


def _permutation(op: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))


def _zero_padding(image: ir.Value) -> tuple[list[int], list[int]] | None:
    """(low, high) of the H and W padding that makes `image`: none where it is no pad,
    None where it is another pad than a zero spatial one."""
    if _owner(image, "tensor.pad") is None:
        return [0, 0], [0, 0]
    pad = spatial_pad(image)
    if pad is None or not isinstance(pad.value, ir.FloatAttr) \
            or ir.FloatAttr(pad.value).value != 0.0:
        return None
    return pad.low[2:], pad.high[2:]


def _sequence_source(image: ir.Value) -> ir.Value | None:
    """The (n, h*w, c) tensor whose transposed, reshaped view `image` (n, c, h, w) is:
    what a transformer hands a convolution (SegFormer's Mix-FFN, PVT's spatial
    reduction), channels-last in memory. None for any other image."""
    expand = _owner(image, "tensor.expand_shape")
    if expand is None or ir.reassociation(expand) != [[0], [1], [2, 3]]:
        return None
    transpose = _owner(expand.operands[0], "linalg.transpose")
    if transpose is None or _permutation(transpose) != _SEQUENCE_TO_CHANNELS_FIRST:
        return None
    return transpose.operands[0]


def _copy(name: str, source: str, from_type: str, to_type: str, rank: int, read: str,
          element: str) -> str:
    """A generic that copies `source` into a tensor of `to_type`, reading it at `read`
    (of the copy's dims d0, d1, ...): a transpose that fusion can merge."""
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"""
  %{name}_empty = tensor.empty() : {to_type}
  %{name} = linalg.generic {{
      indexing_maps = [affine_map<({dims}) -> ({read})>, affine_map<({dims}) -> ({dims})>],
      iterator_types = [{", ".join(['"parallel"'] * rank)}]}}
      ins(%{source} : {from_type}) outs(%{name}_empty : {to_type}) {{
  ^bb0(%in: {element}, %unused: {element}):
    linalg.yield %in : {element}
  }} -> {to_type}"""


def _function_text(op: ir.Operation, rows: ir.Value,
                   padding: tuple[list[int], list[int]]) -> str:
    """The depthwise convolution `op` channels-last, on the (n, h*w, c) `rows` that its
    unpadded image views, returning its result channels-first as the op did."""
    w_type, out_type = (ir.RankedTensorType(v.type) for v in op.operands[1:])
    element = str(out_type.element_type)
    n, c, oh, ow = out_type.shape
    _, kh, kw = w_type.shape
    (low_h, low_w), (high_h, high_w) = padding
    _, _, padded_h, padded_w = ir.RankedTensorType(op.operands[0].type).shape
    h, w = padded_h - low_h - high_h, padded_w - low_w - high_w
    rows_type = ir.RankedTensorType(rows.type)
    image_last = tensor_text([n, h, w, c], element)
    padded_last = tensor_text([n, padded_h, padded_w, c], element)
    weight_last = tensor_text([kh, kw, c], element)
    out_last = tensor_text([n, oh, ow, c], element)
    (sh, sw), (dh, dw) = convolution_pair(op, "strides"), convolution_pair(op, "dilations")
    return (
        f"func.func private @rewrite(%rows: {rows_type}, %w: {w_type}, %init: {out_type})"
        f" -> {out_type} {{"
        f"""
  %image_last = tensor.expand_shape %rows [[0], [1, 2], [3]] output_shape [{n}, {h}, {w}, {c}]
      : {rows_type} into {image_last}
  %zero = arith.constant 0.0 : {element}
  %padded = tensor.pad %image_last low[0, {low_h}, {low_w}, 0] high[0, {high_h}, {high_w}, 0] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : {element}
  }} : {image_last} to {padded_last}"""
        + _copy("weight_last", "w", str(w_type), weight_last, 3, "d2, d0, d1", element)
        + _copy("init_last", "init", str(out_type), out_last, 4, "d0, d3, d1, d2", element)
        + f"""
  %product = linalg.depthwise_conv_2d_nhwc_hwc {{
      dilations = dense<[{dh}, {dw}]> : tensor<2xi64>,
      strides = dense<[{sh}, {sw}]> : tensor<2xi64>}}
      ins(%padded, %weight_last : {padded_last}, {weight_last})
      outs(%init_last : {out_last}) -> {out_last}"""
        + _copy("result", "product", out_last, str(out_type), 4, "d0, d2, d3, d1", element)
        + f"""
  return %result : {out_type}
}}""")


@register
@dataclass(frozen=True)
class DepthwiseChannelsLastPass(ModulePass):
    """depthwise-channels-last: compute a depthwise convolution channels-last (NHWC)
    where its image is a transformer's (n, h*w, c) rows, transposed and reshaped to
    (n, c, h, w) (SegFormer's Mix-FFN, PVT-like blocks), and it has more than
    `min_pixels` output pixels per channel (smaller maps go to the convolution library,
    convolutions-to-gemm).

    The rows are read in place (padded as NHWC), the loops run along the contiguous
    channels, and a result that goes back to such rows is handed over as it is: eager
    runs these convolutions channels-last on the views too, where the channels-first
    loops transposed as they went. Only there: a convolution between channels-first
    neighbours (MobileNetV2, MobileViT) computed channels-last made its neighbours
    transpose, and took longer (benchmarks/README.md, findings).
    """

    name: ClassVar[str] = "depthwise-channels-last"
    min_pixels: int = 0     # depthwise-channels-last{min-pixels=197}

    def run(self, module: ir.Operation) -> None:
        convolutions = ir.ops_where(module, lambda op: op.name == DEPTHWISE_CONVOLUTION
                                    and self._applies(op))
        for op in convolutions:
            pad = _owner(op.operands[0], "tensor.pad")
            padding = _zero_padding(op.operands[0])
            rows = _sequence_source(pad.operands[0] if pad is not None else op.operands[0])
            if padding is None or rows is None:
                continue
            result = replace_with_function_body(op, [rows, *op.operands[1:]],
                                                _function_text(op, rows, padding), module)
            _hand_over_rows(result)

    def _applies(self, op: ir.Operation) -> bool:
        types = [ir.RankedTensorType(v.type) for v in (*op.operands, *op.results)]
        pixels = types[-1].shape[2] * types[-1].shape[3]
        return (all(t.has_static_shape and isinstance(t.element_type, ir.F32Type) for t in types)
                and pixels >= self.min_pixels)


def _hand_over_rows(result: ir.Value) -> None:
    """Where the channels-first `result` (the copy of an NHWC product) is only reshaped
    to (n, c, h*w) and transposed to (n, h*w, c) rows, give those rows the product
    itself, reshaped (no copy either way)."""
    copy = ir.operation_of(result.owner)
    product = copy.operands[0]
    uses = list(result.uses)
    if len(uses) != 1:
        return
    collapse = ir.operation_of(uses[0].owner)
    if collapse.name != "tensor.collapse_shape" or \
            ir.reassociation(collapse) != [[0], [1], [2, 3]]:
        return
    transposes = [ir.operation_of(u.owner) for u in collapse.results[0].uses]
    if len(transposes) != 1 or transposes[0].name != "linalg.transpose" \
            or _permutation(transposes[0]) != _SEQUENCE_TO_CHANNELS_FIRST:
        return
    transpose = transposes[0]
    rows_type = transpose.results[0].type
    with ir.InsertionPoint(transpose), transpose.location:
        rows = ir.Operation.create(
            "tensor.collapse_shape", results=[rows_type], operands=[product],
            attributes={"reassociation": ir.reassociation_attr([[0], [1, 2], [3]])})
    transpose.results[0].replace_all_uses_with(rows.results[0])
    for dead in (transpose, collapse, copy):
        dead.erase()

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import DEPTHWISE_CONVOLUTION, convolution_pair
from tessel.passes.convolution_calls import LIBRARY_CALL
from tessel.passes.linalg_builders import replace_with_function_body, tensor_text
from tessel.passes.registry import ModulePass, register

CONVOLUTION = "linalg.conv_2d_nchw_fchw"  # what torch-mlir makes of every aten.convolution


def _static(op: ir.Operation) -> bool:
    return all(ir.ShapedType(v.type).has_static_shape for v in op.operands
               if isinstance(v.type, ir.ShapedType))


def _floating(op: ir.Operation) -> bool:
    """Float operands (the rewrite multiplies with arith.mulf; an integer convolution,
    which has no BLAS gemm, stays the named op's loops)."""
    return all(isinstance(ir.ShapedType(v.type).element_type, ir.FloatType) for v in op.operands)


def _sole_element(op: ir.Operation) -> str | None:
    """The element type of every operand and result, if they share one (a bf16
    convolution accumulates in f32: its operands and result differ)."""
    values = [*op.operands, *op.results]
    if not all(isinstance(v.type, ir.ShapedType) for v in values):
        return None
    elements = {str(ir.ShapedType(v.type).element_type) for v in values}
    return elements.pop() if len(elements) == 1 else None


def _function_text(op: ir.Operation) -> str:
    """A function computing the convolution `op` as an im2col gather and a contraction.

    The gather writes columns[n, c, kh, kw, oh, ow] = x[n, c, oh*s + kh*d, ow*s + kw*d]:
    its innermost loop walks `ow`, contiguous in both tensors, so it vectorizes (a 1x1
    convolution of stride 1 has no gather: its columns are the image). The
    columns are then viewed (no copy) as [n, c*kh*kw, oh*ow], the filter as
    [f, c*kh*kw], and the contraction is a batch of gemms that `library-calls` sends
    to BLAS. A bf16/f16 convolution, which torch-mlir accumulates in f32, gathers its
    columns and filter widened to f32 (the gemm's operands share its type).
    """
    x_type, w_type, out_type = (ir.RankedTensorType(v.type) for v in op.operands)
    element = str(out_type.element_type)
    narrow = str(x_type.element_type)
    n, c, _, _ = x_type.shape
    f, _, kh, kw = w_type.shape
    _, _, oh, ow = out_type.shape
    (sh, sw), (dh, dw) = convolution_pair(op, "strides"), convolution_pair(op, "dilations")
    columns = tensor_text([n, c, kh, kw, oh, ow], element)
    flat_columns = tensor_text([n, c * kh * kw, oh * ow], element)
    flat_filter = tensor_text([f, c * kh * kw], element)
    flat_out = tensor_text([n, f, oh * ow], element)
    x, w, out = str(x_type), str(w_type), str(out_type)
    wide_w = tensor_text(list(w_type.shape), element)
    dims6 = "(n, c, i, j, p, q)"
    dims4 = "(f, c, i, j)"
    widen = f"%wide = arith.extf %in : {narrow} to {element}" if narrow != element else ""
    gathered = "%wide" if widen else "%in"
    filter_name, filter_type, widened_filter = "%w", w, ""
    if widen:
        filter_name, filter_type = "%wide_w", wide_w
        widened_filter = f"""
  %wide_empty = tensor.empty() : {wide_w}
  %wide_w = linalg.generic {{
      indexing_maps = [affine_map<{dims4} -> {dims4}>, affine_map<{dims4} -> {dims4}>],
      iterator_types = [{", ".join(['"parallel"'] * 4)}]}}
      ins(%w : {w}) outs(%wide_empty : {wide_w}) {{
  ^bb0(%in: {narrow}, %unused: {element}):
    {widen}
    linalg.yield %wide : {element}
  }} -> {wide_w}"""
    gather = f"""
  %empty = tensor.empty() : {columns}
  %columns = linalg.generic {{
      indexing_maps = [affine_map<{dims6} -> (n, c, p * {sh} + i * {dh}, q * {sw} + j * {dw})>,
                       affine_map<{dims6} -> (n, c, i, j, p, q)>],
      iterator_types = [{", ".join(['"parallel"'] * 6)}]}}
      ins(%x : {x}) outs(%empty : {columns}) {{
  ^bb0(%in: {narrow}, %unused: {element}):
    {widen}
    linalg.yield {gathered} : {element}
  }} -> {columns}
  %flat_columns = tensor.collapse_shape %columns [[0], [1, 2, 3], [4, 5]] : {columns} into {flat_columns}"""
    if (kh, kw, sh, sw) == (1, 1, 1, 1) and x_type.shape[2:] == [oh, ow] and not widen:
        # A 1x1 window over every pixel: the columns are the image itself.
        gather = f"""
  %flat_columns = tensor.collapse_shape %x [[0], [1], [2, 3]] : {x} into {flat_columns}"""
    return f"""
func.func private @rewrite(%x: {x}, %w: {w}, %init: {out}) -> {out} {{{gather}{widened_filter}
  %flat_filter = tensor.collapse_shape {filter_name} [[0], [1, 2, 3]] : {filter_type} into {flat_filter}
  %flat_init = tensor.collapse_shape %init [[0], [1], [2, 3]] : {out} into {flat_out}
  %product = linalg.generic {{
      indexing_maps = [affine_map<(b, m, p, k) -> (m, k)>, affine_map<(b, m, p, k) -> (b, k, p)>,
                       affine_map<(b, m, p, k) -> (b, m, p)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%flat_filter, %flat_columns : {flat_filter}, {flat_columns}) outs(%flat_init : {flat_out}) {{
  ^bb0(%a: {element}, %b: {element}, %acc: {element}):
    %m = arith.mulf %a, %b : {element}
    %s = arith.addf %acc, %m : {element}
    linalg.yield %s : {element}
  }} -> {flat_out}
  %result = tensor.expand_shape %product [[0], [1], [2, 3]] output_shape [{n}, {f}, {oh}, {ow}]
      : {flat_out} into {out}
  return %result : {out}
}}"""


@register
@dataclass(frozen=True)
class ConvolutionsToGemmPass(ModulePass):
    """convolutions-to-gemm: rewrite 2-D convolutions as im2col + a contraction, or mark
    them for the target's convolution library.

    The patch gather is one loop nest whose inner loop is contiguous; the contraction
    then goes to BLAS gemm through `library-calls` (batch = images, m = output
    channels, k = C*KH*KW, n = pixels), as CPU libraries do. Grouped and depthwise
    convolutions, and convolutions with dynamic sizes, stay as loops.

    Where operands and result hold one element type, in `library_elements`, NCHW
    convolutions with a window (larger than 1x1), 1x1 ones too with `library_pointwise`,
    and depthwise convolutions of at most `library_depthwise_pixels` output pixels per
    channel are marked `tessel.library_call` instead: they stay named, and on the CPU
    `library-calls` hands them to PyTorch's oneDNN kernels, which beat the gather +
    gemm there, and the depthwise loops on small maps. A 1x1 convolution's gather is a
    plain copy: its gemm was as fast as oneDNN on one thread, slower on two
    (benchmarks/README.md, "Model suite on the CPU", tenth session).
    """

    name: ClassVar[str] = "convolutions-to-gemm"
    library_elements: str = ""              # convolutions-to-gemm{library-elements=f32}
    library_depthwise_pixels: int = 0       # convolutions-to-gemm{library-depthwise-pixels=196}
    library_pointwise: bool = False         # convolutions-to-gemm{library-pointwise=1}

    def run(self, module: ir.Operation) -> None:
        library = set(filter(None, self.library_elements.split(",")))
        for op in ir.ops_where(module, lambda op: _sole_element(op) in library
                               and self._to_library(op)):
            op.attributes[LIBRARY_CALL] = ir.UnitAttr.get(op.context)
        convolutions = ir.ops_where(
            module, lambda op: op.name == CONVOLUTION and _static(op) and _floating(op)
            and LIBRARY_CALL not in op.attributes)
        for op in convolutions:
            replace_with_function_body(op, list(op.operands), _function_text(op), module)

    def _to_library(self, op: ir.Operation) -> bool:
        if op.name == CONVOLUTION:
            return self.library_pointwise or \
                any(size != 1 for size in ir.ShapedType(op.operands[1].type).shape[2:])
        if op.name == DEPTHWISE_CONVOLUTION:
            pixels = ir.ShapedType(op.results[0].type).shape[2:]
            return (ir.ShapedType.get_dynamic_size() not in pixels
                    and pixels[0] * pixels[1] <= self.library_depthwise_pixels)
        return False

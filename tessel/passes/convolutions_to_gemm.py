from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register
from tessel.passes.transform_script import apply_to_marked

_CONVOLUTIONS = ("linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_hwcf")
MARK = "tessel.convolution_to_gemm"


def _static(op: ir.Operation) -> bool:
    return all(ir.ShapedType(v.type).has_static_shape for v in op.operands
               if isinstance(v.type, ir.ShapedType))


@register
@dataclass(frozen=True)
class ConvolutionsToGemmPass(ModulePass):
    """convolutions-to-gemm: rewrite 2-D convolutions as im2col + a contraction.

    The patch gather is one loop nest; the contraction then goes to BLAS gemm through
    `library-calls` (batch = images, m = output channels, k = C*KH*KW, n = pixels),
    as CPU libraries do. Grouped and depthwise convolutions, and convolutions with
    dynamic sizes (which the im2col rewrite does not handle), stay as loops.
    """

    name: ClassVar[str] = "convolutions-to-gemm"

    def run(self, module: ir.Operation) -> None:
        convolutions = ir.ops_where(module, lambda op: op.name in _CONVOLUTIONS and _static(op))
        if not convolutions:
            return
        apply_to_marked(module, convolutions, MARK, [
            f"%convolutions = transform.structured.match attributes {{{MARK}}} in %module "
            ": (!transform.any_op) -> !transform.any_op",
            "%im2col, %gemm = transform.structured.convert_conv2d_to_img2col %convolutions "
            ": (!transform.any_op) -> (!transform.any_op, !transform.any_op)",
        ])

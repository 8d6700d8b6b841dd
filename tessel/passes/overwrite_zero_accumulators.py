from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import is_contraction, is_zero_fill
from tessel.passes.convolution_calls import LIBRARY_CALL, OVERWRITES_OUTPUT
from tessel.passes.library_calls import BLAS_ELEMENTS
from tessel.passes.registry import ModulePass, register


def _blas_contraction(op: ir.Operation) -> bool:
    """A contraction on tensors of one element type that BLAS gemm takes."""
    if not (op.name.startswith("linalg.") and is_contraction(op)
            and all(isinstance(v.type, ir.RankedTensorType) for v in op.operands)):
        return False
    elements = {str(ir.RankedTensorType(v.type).element_type) for v in op.operands}
    return len(elements) == 1 and elements <= BLAS_ELEMENTS


@register
@dataclass(frozen=True)
class OverwriteZeroAccumulatorsPass(ModulePass):
    """overwrite-zero-accumulators: a library call that accumulates into zeros writes its
    output instead, and the zeros are not written first.

    torch-mlir gives a matmul, and a convolution without bias, an accumulator filled
    with zeros; a 1x1 convolution's gemm (convolutions-to-gemm) keeps it. BLAS gemm
    reads C to add to it (beta = 1): with this pass the gemm runs with beta = 0, and the
    pass over the output that wrote the zeros goes. The CPU's convolution call, which
    has oneDNN add into its output, zeroes a marked output itself (the fill moves out of
    the compiled code, at the same cost). The op gets the accumulator's empty tensor and
    the unit attribute `tessel.overwrites_output`, which `library-calls` honours (an op
    that it leaves as loops gets its zero fill back there).

    Changed: convolutions marked `tessel.library_call` (convolutions-to-gemm), and f32
    and f64 contractions unless `contractions` is false. It runs after fusion, where the fill is a generic, so that no
    pass that rebuilds contractions (and would drop the attribute) comes after it.
    """

    name: ClassVar[str] = "overwrite-zero-accumulators"
    contractions: bool = True       # overwrite-zero-accumulators{contractions=false}

    def run(self, module: ir.Operation) -> None:
        accumulating = ir.ops_where(
            module, lambda op: (LIBRARY_CALL in op.attributes
                                or (self.contractions and _blas_contraction(op)))
            and len(op.results) == 1 and is_zero_fill(op.operands[2]))
        for op in accumulating:
            fill = op.operands[2].owner.operation
            op.operands[2] = fill.operands[-1]
            op.attributes[OVERWRITES_OUTPUT] = ir.UnitAttr.get(op.context)
            if not list(fill.results[0].uses):
                fill.erase()

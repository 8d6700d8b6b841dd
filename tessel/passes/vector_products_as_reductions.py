from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import AS_REDUCTION, is_vector_product
from tessel.passes.registry import ModulePass, register


@register
@dataclass(frozen=True)
class VectorProductsAsReductionsPass(ModulePass):
    """vector-products-as-reductions: a multiply-accumulate generic that is a matrix
    times a vector, or a dot of two rows (contractions.is_vector_product), is marked
    AS_REDUCTION: the passes after this one fuse and tile it as the reduction it is,
    where they would leave it a library gemm.

    A layer norm's backward sums its gradient times the weight over each row: once the
    product fuses into the sum, the generic multiply-accumulates. As a gemm it was a
    cuBLAS gemv through torch.einsum on the host (13 a step in torchvision's ViT-B/16),
    beside the row kernel that takes the row's other sums. Each value is read once, so
    the GPU reads it as fast in a reduction kernel, which then joins that row kernel.
    (The CPU pipeline keeps BLAS's gemv, which a layer norm's backward measured
    slightly faster in one comparison on a busy machine: not yet settled.)
    """

    name: ClassVar[str] = "vector-products-as-reductions"

    def run(self, module: ir.Operation) -> None:
        with module.context:
            for op in ir.ops_where(module, is_vector_product):
                # Of dynamic sizes, a row kernel may not hold a reduction's result
                # beside its rows (the Triton target refuses it): a gemm takes it.
                if all(ir.ShapedType(v.type).has_static_shape for v in op.operands):
                    op.attributes[AS_REDUCTION] = ir.UnitAttr.get()

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, linalg, tensor

from tessel import ir
from tessel.passes.linalg_builders import (elementwise_generic, index_constant,
                                           selected_by_index)
from tessel.passes.registry import ModulePass, register


@register
@dataclass(frozen=True)
class WrapScatterIndicesPass(ModulePass):
    """wrap-scatter-indices: a tm_tensor.scatter's negative indices count from the end
    of the dim they index, as PyTorch's index_put counts them.

    torch-mlir's loops (tm-tensor-to-loops) store at an index as it is: on the CPU
    target, `x[[-1, 0]] = v` and an accumulating index_put with a negative index wrote
    before the tensor, and the process died freeing the heap it corrupted. Each
    scatter's [N, depth] index rows are read through a generic that adds column j's
    dim size (`dimension_map[j]` of the scattered tensor) where an index is negative.
    The Triton target's scatter kernels wrap their indices themselves.
    """

    name: ClassVar[str] = "wrap-scatter-indices"

    def run(self, module: ir.Operation) -> None:
        for scatter in ir.ops_where(module, lambda op: op.name == "tm_tensor.scatter"):
            with ir.InsertionPoint(scatter), scatter.location:
                scatter.operands[1] = _wrapped(scatter)


def _wrapped(scatter: ir.Operation) -> ir.Value:
    """Scatter `scatter`'s index rows, each negative index plus its dim's size."""
    indices, scattered = scatter.operands[1], scatter.operands[2]
    index_type = ir.RankedTensorType(indices.type)
    element = index_type.element_type
    dims = list(ir.DenseI64ArrayAttr(scatter.attributes["dimension_map"]))
    sizes = [arith.IndexCastOp(element, tensor.DimOp(scattered, index_constant(dim)).result).result
             for dim in dims]
    extents = [tensor.DimOp(indices, index_constant(d)).result
               if ir.ShapedType.is_dynamic_size(n) else n
               for d, n in enumerate(index_type.shape)]
    empty = tensor.EmptyOp(extents, element).result
    generic, block = elementwise_generic(index_type, [indices], empty)
    with ir.InsertionPoint(block):
        index = block.arguments[0]
        size = selected_by_index(linalg.IndexOp(1).result, sizes)
        negative = arith.cmpi(arith.CmpIPredicate.slt, index, arith.constant(element, 0))
        linalg.YieldOp([arith.SelectOp(negative, arith.AddIOp(index, size).result,
                                       index).result])
    return generic.results[0]

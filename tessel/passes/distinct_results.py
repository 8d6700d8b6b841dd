from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, linalg, memref, tensor

from tessel import ir
from tessel.passes.buffer_views import view_root
from tessel.passes.registry import ModulePass, register


def _copy_of(value: ir.Value) -> ir.Value:
    """A fresh tensor or buffer holding `value`, built at the insertion point."""
    value_type = ir.ShapedType(value.type)
    is_tensor = isinstance(value.type, ir.RankedTensorType)
    dim = tensor.dim if is_tensor else memref.dim
    sizes = [dim(value, arith.constant(ir.IndexType.get(), d))
             if value_type.is_dynamic_dim(d) else value_type.shape[d]
             for d in range(value_type.rank)]
    if is_tensor:
        empty = tensor.EmptyOp(sizes, value_type.element_type).result
        return linalg.copy(value, outs=[empty])
    buffer = memref.alloc(value.type, [s for s in sizes if isinstance(s, ir.Value)], [])
    memref.copy(value, buffer)
    return buffer


@register
@dataclass(frozen=True)
class DistinctResultsPass(ModulePass):
    """distinct-results: copy returned tensors or buffers that repeat a result or are
    arguments.

    Caller-allocated out-params need one buffer per result: a function returning
    `%x, %x` (torch-mlir folds aliases), `%x, reshape(%x)` (the same buffer once
    bufferized) or an argument would otherwise share or overwrite storage. It runs on
    tensors before bufferization and again on buffers after it, since bufferization
    can fold a copy the first run made (upstream buffer-results-to-out-params crashes
    on a buffer returned twice). The copy only appears in those cases; buffers with a
    non-identity layout are left as they are (an identity-layout copy would change
    the function's type).
    """

    name: ClassVar[str] = "distinct-results"

    def run(self, module: ir.Operation) -> None:
        with module.context, ir.Location.unknown():
            for function in ir.defined_functions(module):
                self._make_distinct(function.regions[0].blocks[0].operations[-1])

    @staticmethod
    def _make_distinct(return_op: ir.Operation) -> None:
        seen: list[ir.Value] = []
        for index, value in enumerate(list(return_op.operands)):
            if isinstance(value.type, ir.MemRefType):
                buffer_type = ir.MemRefType(value.type)
                if value.type != ir.MemRefType.get(buffer_type.shape, buffer_type.element_type):
                    continue  # a strided layout
            elif not isinstance(value.type, ir.RankedTensorType):
                continue
            root = view_root(value)
            if root in seen or isinstance(root.owner, ir.Block):
                with ir.InsertionPoint(return_op):
                    return_op.operands[index] = _copy_of(value)
            seen.append(root)

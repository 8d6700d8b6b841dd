from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, linalg, tensor

from tessel import ir
from tessel.passes.registry import ModulePass, register


def _copy_of(value: ir.Value) -> ir.Value:
    """A fresh tensor holding `value` (tensor.empty + linalg.copy), built at the insertion point."""
    value_type = value.type
    sizes = [
        tensor.dim(value, arith.constant(ir.IndexType.get(), d))
        if value_type.is_dynamic_dim(d) else value_type.shape[d]
        for d in range(value_type.rank)
    ]
    empty = tensor.EmptyOp(sizes, value_type.element_type).result
    return linalg.copy(value, outs=[empty])


@register
@dataclass(frozen=True)
class DistinctResultsPass(ModulePass):
    """distinct-results: copy returned tensors that repeat a result or are arguments.

    Caller-allocated out-params need one buffer per result: a function returning
    `%x, %x` (torch-mlir folds aliases) or an argument would otherwise share or
    overwrite storage during bufferization. The copy only appears in those cases.
    """

    name: ClassVar[str] = "distinct-results"

    def run(self, module: ir.Operation) -> None:
        with module.context, ir.Location.unknown():
            for op in module.regions[0].blocks[0].operations:
                if op.operation.name == "func.func" and len(op.regions[0].blocks) > 0:
                    self._make_distinct(op.regions[0].blocks[0].operations[-1])

    @staticmethod
    def _make_distinct(return_op: ir.Operation) -> None:
        seen: list[ir.Value] = []
        for index, value in enumerate(list(return_op.operands)):
            if not isinstance(value.type, ir.RankedTensorType):
                continue
            if value in seen or isinstance(value.owner, ir.Block):
                with ir.InsertionPoint(return_op):
                    return_op.operands[index] = _copy_of(value)
            seen.append(value)

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register


def _innermost_invariant_arguments(generic: ir.Operation) -> set[int]:
    """Block argument numbers whose operand does not vary along the innermost loop."""
    maps = ir.indexing_maps(generic)
    innermost = maps[0].n_dims - 1
    invariant = set()
    for number, affine_map in enumerate(maps):
        uses_innermost = any(isinstance(e, ir.AffineDimExpr) and e.position == innermost
                             for e in affine_map.results)
        if not uses_innermost:
            invariant.add(number)
    return invariant


@register
@dataclass(frozen=True)
class ReciprocalDivisionPass(ModulePass):
    """reciprocal-division: let x / d become x * (1 / d) when d is the same along the
    innermost loop.

    softmax and normalizations divide a whole row by one value; a division per element
    costs several times a multiply. Marking those divisions `arcp` lets LLVM compute the
    reciprocal once per row (as eager's kernels do). Divisions by values that change
    along the inner loop are left exact: there the rewrite would gain nothing.
    """

    name: ClassVar[str] = "reciprocal-division"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        divisions = [d for generic in generics for d in self._invariant_divisions(generic)]
        with module.context:
            arcp = ir.Attribute.parse("#arith.fastmath<arcp>")
            for division in divisions:
                division.attributes["fastmath"] = arcp

    @staticmethod
    def _invariant_divisions(generic: ir.Operation) -> list[ir.Operation]:
        block = generic.regions[0].blocks[0]
        invariant = _innermost_invariant_arguments(generic)
        found = []
        for op in block.operations:
            op = op.operation
            if op.name != "arith.divf":
                continue
            divisor = op.operands[1]
            owner = divisor.owner
            if isinstance(owner, ir.Block):
                numbers = [n for n, argument in enumerate(block.arguments) if argument == divisor]
                if numbers and numbers[0] in invariant:
                    found.append(op)
            elif ir.operation_of(owner).parent != generic:
                found.append(op)  # a value from outside the loop nest
        return found

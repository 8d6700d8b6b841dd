from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register

# Integer divisions trap on a zero divisor, which a check (cf.assert) further down
# may rule out: they move only when they divide by a nonzero constant.
_DIVISIONS = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
              "arith.ceildivsi", "arith.ceildivui"}


def _nonzero_constant(value) -> bool:
    owner = ir.operation_of(value.owner)
    return (owner is not None and owner.name == "arith.constant"
            and ir.IntegerAttr(owner.attributes["value"]).value != 0)


def _computes_a_scalar(op: ir.Operation) -> bool:
    """A side-effect-free op of a function's body that computes scalars (sizes)."""
    return ((op.name.startswith("arith.") or op.name in ("affine.apply", "tensor.dim"))
            and not op.regions and len(op.results) > 0
            and not any(isinstance(r.type, ir.ShapedType) for r in op.results)
            and (op.name not in _DIVISIONS or _nonzero_constant(op.operands[1])))


@register
@dataclass(frozen=True)
class HoistSizeComputationsPass(ModulePass):
    """hoist-size-computations: move each scalar computation of a function's body up to
    just after the last of its operands.

    torch-mlir computes a dynamic size where the op that needs it is lowered (a grouped
    convolution's channels per group, `dim / groups`), after tensors that an
    `expand_shape` of that size reshapes. Upstream elementwise fusion moves such
    reshapes above their producers, before the size is defined: the module no longer
    verified ("operand does not dominate this use") and the graph ran eagerly.
    """

    name: ClassVar[str] = "hoist-size-computations"

    def run(self, module: ir.Operation) -> None:
        for function in ir.defined_functions(module):
            block = function.regions[0].blocks[0]
            for op in [op.operation for op in block.operations]:
                if _computes_a_scalar(op):
                    self._hoist(op, block)

    @staticmethod
    def _hoist(op: ir.Operation, block) -> None:
        latest = None
        for operand in op.operands:
            owner = ir.operation_of(operand.owner)
            if owner is None or owner.parent != block.owner.operation:
                continue  # a block argument, or defined outside the block
            if latest is None or latest.is_before_in_block(owner):
                latest = owner
        if latest is not None:
            op.move_after(latest)
        elif block.operations[0].operation != op:
            op.move_before(block.operations[0].operation)

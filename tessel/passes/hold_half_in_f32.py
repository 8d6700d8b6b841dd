from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register

# Float arithmetic that computes the same in f32 as on the half values widened to f32
# (then rounded once, where the result is stored or the IR itself rounds).
_ARITHMETIC = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf",
               "arith.negf", "arith.maximumf", "arith.minimumf", "arith.maxnumf",
               "arith.minnumf", "arith.cmpf", "arith.select"}


# Ops whose result jumps with their input (a remainder, rounding to integers, a
# comparison): they read the value rounded to its half type, as eager's op does, so
# that a last-bit difference of the held value cannot move them a whole step.
_ROUNDED_INPUTS = {"arith.remf", "arith.cmpf", "math.floor", "math.ceil", "math.round",
                   "math.roundeven", "math.trunc"}


def _is_half(value_type) -> bool:
    return isinstance(value_type, (ir.BF16Type, ir.F16Type))


def _create(name: str, result_types: list, operands: list, attributes=None) -> ir.Operation:
    return ir.Operation.create(name, results=result_types, operands=operands,
                               attributes=attributes or {})


@register
@dataclass(frozen=True)
class HoldHalfInF32Pass(ModulePass):
    """hold-half-in-f32: compute a fused kernel's f16/bf16 arithmetic in f32, rounding to
    the half type only where the kernel stores a value, the IR itself rounds (truncf)
    or widens (extf, as PyTorch's decompositions widen a half tensor to compute in
    f32), or an op's result jumps with its input (fmod, floor, comparisons).

    torch-mlir lowers a bf16 op to bf16 arithmetic, which LLVM computes in f32 and
    rounds after every op: a fused chain rounded as many times as it has ops. The
    Triton target holds such values in f32 within a kernel (kernel_source's
    `_HELD_DTYPES`), as Inductor's kernels do; this gives the CPU target the same.
    """

    name: ClassVar[str] = "hold-half-in-f32"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        with module.context:
            for generic in generics:
                self._hold(generic.regions[0].blocks[0])

    @staticmethod
    def _hold(block) -> None:
        f32 = ir.F32Type.get()
        held = {}       # a half value -> the same value, or its unrounded origin, in f32
        rounded = {}    # a half value this pass rounded -> that value exactly, in f32
        created = []    # the conversions made here, erased again where nothing reads them
        operations = [op.operation for op in block.operations]
        if not operations:
            return
        # The block's half arguments, and half values it reads from outside (constants).
        outside = [v for op in operations for v in op.operands
                   if _is_half(v.type) and ir.operation_of(v.owner) is not None
                   and ir.operation_of(v.owner).parent != block.owner.operation]
        with ir.InsertionPoint(operations[0]), operations[0].location:
            for value in [*block.arguments, *outside]:
                if _is_half(value.type) and value not in held:
                    widened = _create("arith.extf", [f32], [value])
                    held[value] = widened.result
                    created.append(widened)

        def exact(value):
            """`value` as its half type holds it, in f32."""
            if value not in rounded:
                return held[value]
            if rounded[value] is None:
                widened = _create("arith.extf", [f32], [value])
                rounded[value] = widened.result
                created.append(widened)
            return rounded[value]

        for op in operations:
            with op.location, ir.InsertionPoint(op):
                if op.name == "arith.extf" and op.operands[0] in held and op.results[0].type == f32:
                    # A widening the IR asks for (PyTorch's opmath: x.float()) reads the
                    # half value, as eager's tensor holds it.
                    op.results[0].replace_all_uses_with(exact(op.operands[0]))
                    op.erase()
                elif op.name == "arith.truncf" and _is_half(op.results[0].type):
                    widened = _create("arith.extf", [f32], [op.results[0]])
                    widened.move_after(op)
                    held[op.results[0]] = widened.result
                    created.append(widened)
                elif op.name == "arith.constant" and _is_half(op.results[0].type):
                    value = ir.FloatAttr(op.attributes["value"]).value
                    widened = _create("arith.constant", [f32], [],
                                      {"value": ir.FloatAttr.get(f32, value)})
                    held[op.results[0]] = widened.result
                    created.append(widened)
                elif ((op.name in _ARITHMETIC or op.name.startswith("math.")) and not op.regions
                      and any(_is_half(v.type) for v in [*op.operands, *op.results])
                      and all(v in held for v in op.operands if _is_half(v.type))):
                    read = exact if op.name in _ROUNDED_INPUTS else held.__getitem__
                    operands = [read(v) if _is_half(v.type) else v for v in op.operands]
                    results = [f32 if _is_half(r.type) else r.type for r in op.results]
                    attributes = {op.attributes[i].name: op.attributes[i].attr
                                  for i in range(len(op.attributes))}
                    wide = _create(op.name, results, operands, attributes)
                    for old, new in zip(op.results, wide.results):
                        if _is_half(old.type):
                            rounding = _create("arith.truncf", [old.type], [new])
                            old.replace_all_uses_with(rounding.result)
                            held[rounding.result] = new
                            rounded[rounding.result] = None
                            created.append(rounding)
                        else:
                            old.replace_all_uses_with(new)
                    op.erase()
        for conversion in reversed(created):
            if all(not list(result.uses) for result in conversion.results):
                conversion.erase()

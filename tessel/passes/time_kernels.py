from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, func

from tessel import ir
from tessel.passes.form_kernels import is_kernel, kernel_body, kernel_name
from tessel.passes.registry import ModulePass, register

KERNEL_TIMER = "tessel_kernel_timer"
# Module attribute: what each timed kernel is, indexed by the id its mark reports.
KERNEL_LABELS = "tessel.kernel_labels"
# The id of the mark at a function's start: the first kernel's time runs from there.
START_MARK = -1
# Ops that say nothing about a kernel's cost: bookkeeping, not arithmetic.
_SILENT_OPS = ("linalg.yield", "linalg.index", "arith.constant", "tensor.", "scf.",
               "tkern.", "affine.", "bufferization.")


def _shape(value: ir.Value) -> str:
    text = str(value.type)
    return text[text.index("<") + 1:-1] if "<" in text else text


def kernel_label(op: ir.Operation) -> str:
    """A line saying what the kernel `op` computes: its name, the linalg ops and the
    arithmetic in it (by count), the shapes it reads and those it writes."""
    ops: Counter[str] = Counter()

    def visit(nested):
        name = nested.operation.name
        if not name.startswith(_SILENT_OPS) and nested.operation != op:
            ops[name.removeprefix("arith.").removeprefix("linalg.")] += 1
        return ir.WalkResult.ADVANCE
    for inner in kernel_body(op):
        inner.walk(visit)
    reads = sorted({_shape(v) for v in ir.values_read_from_above(op)
                    if isinstance(v.type, ir.ShapedType)})
    writes = [_shape(r) for r in op.results]
    callee = (f" {ir.StringAttr(op.attributes['callee']).value}"
              if "callee" in op.attributes else "")
    name = kernel_name(op) if "callee" not in op.attributes else "library_call"
    counted = ", ".join(f"{n}x{c}" if c > 1 else n for n, c in ops.most_common(8))
    return f"{name}{callee} [{counted}] ({', '.join(reads)}) -> ({', '.join(writes)})"


@register
@dataclass(frozen=True)
class TimeKernelsPass(ModulePass):
    """time-kernels: call `tessel_kernel_timer(id)` at the start of each function and
    after each of its kernels, so that a run can charge the time between two marks to
    the kernel that ends there (the CPU target's per-kernel profile).

    Run after form-kernels, on tensors: kernels are still whole ops there, in program
    order, and the calls (opaque, with effects) keep their place through bufferization
    and lowering. Each kernel's label (kernel_label) is kept in the module attribute
    `tessel.kernel_labels`, indexed by the kernel's id; the function-start mark
    reports -1. The callback costs about a microsecond a mark: profiles only.
    """

    name: ClassVar[str] = "time-kernels"

    def run(self, module: ir.Operation) -> None:
        labels: list[str] = []
        with module.context, ir.Location.unknown():
            i64 = ir.IntegerType.get_signless(64)

            def mark(point: ir.InsertionPoint, mark_id: int) -> None:
                with point:
                    func.CallOp([], ir.FlatSymbolRefAttr.get(KERNEL_TIMER),
                                [arith.ConstantOp(i64, mark_id)])

            for function in ir.defined_functions(module):
                block = function.regions[0].blocks[0]
                operations = [op.operation for op in block.operations]
                if not any(is_kernel(op) for op in operations):
                    continue
                mark(ir.InsertionPoint.at_block_begin(block), START_MARK)
                # A kernel is never its block's terminator: an op follows it.
                for kernel, following in itertools.pairwise(operations):
                    if is_kernel(kernel):
                        labels.append(kernel_label(kernel))
                        mark(ir.InsertionPoint(following), len(labels) - 1)
            if not labels:
                return
            with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
                func.FuncOp(KERNEL_TIMER, ir.FunctionType.get([i64], []), visibility="private")
            module.attributes[KERNEL_LABELS] = ir.ArrayAttr.get(
                [ir.StringAttr.get(label) for label in labels])


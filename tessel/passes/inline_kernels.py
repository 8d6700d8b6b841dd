from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.form_kernels import KERNEL_OPS
from tessel.passes.registry import ModulePass, register


@register
@dataclass(frozen=True)
class InlineKernelsPass(ModulePass):
    """inline-kernels: put kernel bodies back in place (targets that compile the whole
    function as one unit, like the CPU target, do this before bufferization)."""

    name: ClassVar[str] = "inline-kernels"

    def run(self, module: ir.Operation) -> None:
        kernels = ir.ops_where(module, lambda op: op.name in KERNEL_OPS)
        for kernel in kernels:
            block = kernel.regions[0].blocks[0]
            terminator = None
            for op in list(block.operations):
                if op.operation.name == "tkern.yield":
                    terminator = op.operation
                else:
                    op.operation.move_before(kernel)
            for old, new in zip(kernel.results, terminator.operands):
                old.replace_all_uses_with(new)
            terminator.erase()
            kernel.erase()

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register

_FUNCTION_BOUNDARIES = ("bufferize-function-boundaries "
                        "function-boundary-type-conversion=identity-layout-map")


@register
@dataclass(frozen=True)
class BufferizePass(ModulePass):
    """bufferize: one-shot bufferization, writing in place wherever its analysis allows.

    torch-mlir's TMTensor ops (scan, scatter, sort) are bufferized earlier by their own
    pass, whose writes through `bufferization.to_buffer` the in-place analysis cannot
    see: with them in the module an in-place decision clobbered live data (measured:
    cumulative_trapezoid). Such modules are bufferized with a copy before every write
    (`copy-before-write`); all others in place, so that tiles write straight into
    their destination.
    """

    name: ClassVar[str] = "bufferize"

    def run(self, module: ir.Operation) -> None:
        prebufferized = ir.ops_where(
            module, lambda op: op.name in ("bufferization.to_buffer", "bufferization.to_tensor"))
        options = ("copy-before-write " if prebufferized else "") + _FUNCTION_BOUNDARIES
        ir.PassManager.parse(f"builtin.module(one-shot-bufferize{{{options}}})",
                             module.context).run(module)

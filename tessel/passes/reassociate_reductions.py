from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register

_COMBINERS = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf")


@register
@dataclass(frozen=True)
class ReassociateReductionsPass(ModulePass):
    """reassociate-reductions: allow reassociating float reductions so they vectorize.

    A float sum in order is a serial dependence chain that LLVM may not reorder; with
    `reassoc` on the combining ops of reduction loops it keeps several partial sums in
    vector lanes (as eager's and Inductor's vectorized reductions do). Results differ
    from a sequential sum only by rounding. Elementwise ops keep strict semantics.
    """

    name: ClassVar[str] = "reassociate-reductions"

    def run(self, module: ir.Operation) -> None:
        reductions = ir.ops_where(module, lambda op: op.name == "linalg.generic" and any(
            "reduction" in str(t) for t in op.attributes["iterator_types"]))
        with module.context:
            fast = ir.Attribute.parse("#arith.fastmath<reassoc,contract>")
            for generic in reductions:
                for op in generic.regions[0].blocks[0].operations:
                    if op.operation.name in _COMBINERS:
                        op.operation.attributes["fastmath"] = fast

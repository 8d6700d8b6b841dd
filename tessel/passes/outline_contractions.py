from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import func

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.registry import ModulePass, register


@register
@dataclass(frozen=True)
class OutlineContractionsPass(ModulePass):
    """outline-contractions: move each contraction into a private function of its own.

    Upstream elementwise fusion fuses producers into any linalg consumer, matmuls
    included: a bias+relu fused into the next matmul is recomputed for every output
    column and the op is no longer a gemm. Behind a call the contraction is invisible
    to fusion; the `inline` pass puts it back afterwards.
    """

    name: ClassVar[str] = "outline-contractions"

    def run(self, module: ir.Operation) -> None:
        contractions = ir.ops_where(
            module, lambda op: op.name.startswith("linalg.") and is_contraction(op))
        body = module.regions[0].blocks[0]
        with module.context, ir.Location.unknown():
            for number, op in enumerate(contractions):
                self._outline(op, f"__tessel_contraction_{number}", body)

    @staticmethod
    def _outline(op: ir.Operation, name: str, module_body: ir.Block) -> None:
        operands = list(op.operands)
        function_type = ir.FunctionType.get([v.type for v in operands],
                                            [r.type for r in op.results])
        with ir.InsertionPoint(module_body):
            function = func.FuncOp(name, function_type, visibility="private")
            entry = function.add_entry_block()
        with ir.InsertionPoint(entry):
            clone = op.clone()
            for index, argument in enumerate(entry.arguments):
                clone.operands[index] = argument
            func.ReturnOp(list(clone.results))
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp(function, operands)
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()

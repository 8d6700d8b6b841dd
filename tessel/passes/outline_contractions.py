from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import func

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.fold_bias_into_gemm import is_row_bias_broadcast
from tessel.passes.registry import ModulePass, register


def _row_bias_broadcast(init: ir.Value) -> ir.Operation | None:
    """The generic that computes a contraction's accumulator `init` by widening a 1-D
    bias along its rows (fold-bias-into-gemm's), when only the contraction reads it."""
    generic = ir.operation_of(init.owner)
    if generic is None or generic.name != "linalg.generic" or len(list(init.uses)) != 1 \
            or not is_row_bias_broadcast(generic):
        return None
    return generic


@register
@dataclass(frozen=True)
class OutlineContractionsPass(ModulePass):
    """outline-contractions: move each contraction into a private function of its own.

    Upstream elementwise fusion fuses producers into any linalg consumer, matmuls
    included: a bias+relu fused into the next matmul is recomputed for every output
    column and the op is no longer a gemm. Behind a call the contraction is invisible
    to fusion; the `inline` pass puts it back afterwards.

    A bias broadcast that a gemm starts from (fold-bias-into-gemm's) goes behind the
    call with it: fused with the producer of its bias (BEiT's `cat((q_bias, k_bias,
    v_bias))`), it would no longer read a 1-D bias, and the host would add an f32 tensor
    to an f32 product instead of calling addmm in the half type.
    """

    name: ClassVar[str] = "outline-contractions"

    def run(self, module: ir.Operation) -> None:
        contractions = ir.ops_where(
            module, lambda op: op.name.startswith("linalg.") and is_contraction(op))
        body = module.regions[0].blocks[0]
        with module.context, ir.Location.unknown():
            for number, op in enumerate(contractions):
                bias = _row_bias_broadcast(op.operands[-1])
                self._outline([op] if bias is None else [bias, op],
                              f"__tessel_contraction_{number}", body)

    @staticmethod
    def _outline(ops: list[ir.Operation], name: str, module_body: ir.Block) -> None:
        """Replace `ops` (in order, each read only by the next; the last one's results
        are theirs) by a call of a new function `name` that takes what they read."""
        *inner, last = ops
        computed = {result for op in inner for result in op.results}
        operands = list(dict.fromkeys(v for op in ops for v in op.operands if v not in computed))
        function_type = ir.FunctionType.get([v.type for v in operands],
                                            [r.type for r in last.results])
        with ir.InsertionPoint(module_body):
            function = func.FuncOp(name, function_type, visibility="private")
            entry = function.add_entry_block()
        values = dict(zip(operands, entry.arguments))
        with ir.InsertionPoint(entry):
            for op in ops:
                clone = op.clone()
                for index, operand in enumerate(op.operands):
                    clone.operands[index] = values[operand]
                values.update(zip(op.results, clone.results))
            func.ReturnOp(list(clone.results))
        with ir.InsertionPoint(last), last.location:
            call = func.CallOp(function, operands)
        for old, new in zip(last.results, call.results):
            old.replace_all_uses_with(new)
        for op in reversed(ops):
            op.erase()

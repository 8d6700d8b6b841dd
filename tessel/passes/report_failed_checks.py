from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, cf, func

from tessel import ir
from tessel.passes.registry import ModulePass, register

CHECK_FAILED = "tessel_check_failed"
# Module attribute: the message of each check, indexed by the id the code reports.
CHECK_MESSAGES = "tessel.check_messages"


@register
@dataclass(frozen=True)
class ReportFailedChecksPass(ModulePass):
    """report-failed-checks: turn runtime checks (cf.assert) into an early return that
    reports which check failed, instead of aborting the process.

    torch-mlir guards dynamic shapes with cf.assert (broadcast sizes, reshape sizes,
    contracting dims), which lowers to abort(): one bad size would kill the user's
    Python process. Here each assert in a function without results becomes a branch:
    on failure the function calls `tessel_check_failed(id)` and returns at once, before
    touching any buffer with the bad sizes. The host program then raises with the
    check's message (kept, with its location, in the module attribute
    `tessel.check_messages`). Run after convert-scf-to-cf, when bodies are CFGs.
    """

    name: ClassVar[str] = "report-failed-checks"

    def run(self, module: ir.Operation) -> None:
        asserts = ir.ops_where(module, lambda op: op.name == "cf.assert")
        body = module.regions[0].blocks[0]
        messages = []
        with module.context, ir.Location.unknown():
            i64 = ir.IntegerType.get_signless(64)
            for check in asserts:
                function = check.parent
                while function.name != "func.func":
                    function = function.parent
                function = function.operation
                if ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).results:
                    continue  # no early return without values to return: keep the abort
                message = ir.StringAttr(check.attributes["msg"]).value
                messages.append(f"{message} (at {check.location})")
                _branch_on_failure(check, len(messages) - 1, i64)
            if not messages:
                return
            with ir.InsertionPoint.at_block_begin(body):
                func.FuncOp(CHECK_FAILED, ir.FunctionType.get([i64], []), visibility="private")
            module.attributes[CHECK_MESSAGES] = ir.ArrayAttr.get(
                [ir.StringAttr.get(m) for m in messages])


def _branch_on_failure(check: ir.Operation, check_id: int, i64: ir.Type) -> None:
    """Split the block after `check`: success continues in a new block, failure reports
    `check_id` and returns."""
    block = check.block
    operations = list(block.operations)
    following = operations[[op.operation for op in operations].index(check) + 1:]
    rest = block.create_after()
    for op in following:
        rest.append(op.operation)
    failure = rest.create_after()
    with ir.InsertionPoint(failure), check.location:
        identifier = arith.ConstantOp(i64, check_id)
        func.CallOp([], ir.FlatSymbolRefAttr.get(CHECK_FAILED), [identifier])
        func.ReturnOp([])
    with ir.InsertionPoint(block), check.location:
        cf.CondBranchOp(check.operands[0], [], [], rest, failure)
    check.erase()

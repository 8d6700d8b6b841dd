from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.contracts import TARGET_INPUT_DIALECTS, TARGET_INPUT_OPS
from tessel.errors import TesselError
from tessel.passes.registry import ModulePass, register


class ContractViolation(TesselError, ValueError):
    """An op outside a target's input contract; names the op and where it came from."""


@register
@dataclass(frozen=True)
class CheckContractPass(ModulePass):
    """check-contract: fail on any op outside the target's input contract (tessel/contracts.py)."""

    name: ClassVar[str] = "check-contract"
    target: str = "cpu"

    def run(self, module: ir.Operation) -> None:
        if self.target not in TARGET_INPUT_DIALECTS:
            raise ContractViolation(
                f"unknown target {self.target!r}; known: {', '.join(sorted(TARGET_INPUT_DIALECTS))}")
        dialects = TARGET_INPUT_DIALECTS[self.target]
        ops = TARGET_INPUT_OPS[self.target]
        violations = [f"'{op.name}' at {op.location}" for op in ir.ops_where(
            module, lambda op: op.name.split(".", 1)[0] not in dialects and op.name not in ops)]
        if violations:
            raise ContractViolation(
                f"target {self.target!r} does not accept {len(violations)} op(s): "
                + "; ".join(violations[:5]))

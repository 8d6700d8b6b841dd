"""The error a Triton kernel generator raises for a kernel it cannot express: the
graph then runs eagerly around the op it names."""

from __future__ import annotations

from tessel import ir
from tessel.errors import TesselError


class UnsupportedKernel(TesselError):
    """A kernel this code generator cannot express; `op` names the op that stopped it,
    `at` is that op where the host program's generator knows it."""

    def __init__(self, op: str, reason: str):
        super().__init__(f"{op}: {reason}")
        self.op = op
        self.at: ir.Operation | None = None

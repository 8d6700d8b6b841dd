"""tkern: tessel's kernel dialect, declared in Python (IRDL underneath).

    tkern.kernel        a fused kernel: its region computes the results (one kernel =
                        one loop nest / launch); `sym_name` names it
    tkern.library_call  work better left to a tuned library (`callee`, e.g. "gemm"),
                        with a reference body that a target may inline instead
    tkern.yield         terminator of both regions: the kernel's results
    tkern.alloc         a buffer the host program allocates (dynamic sizes as operands)

The IRDL verifier checks result kinds (tensors or memrefs), alloc sizes (index) and
names. IRDL binds a constraint to one type per op, so a variadic operand list must be
homogeneous: kernels therefore read the values they need from the enclosing region
(like scf.execute_region) instead of taking them as operands, and a kernel's results
share one type. Ops print in generic form:
`%r = "tkern.kernel"() ({ ... "tkern.yield"(%x) }) {sym_name = "main_kernel_0"}`.
"""


# No `from __future__ import annotations`: ext reads the field annotations as types.
from collections.abc import Sequence

from tessel import ir

Dialect, Operand, Region, Result, result = (
    ir.ext.Dialect, ir.ext.Operand, ir.ext.Region, ir.ext.Result, ir.ext.result)

Shaped = ir.RankedTensorType | ir.MemRefType


class Kernel(Dialect, name="tkern"):
    pass


class KernelOp(Kernel.Operation, name="kernel"):
    outputs: Sequence[Result[Shaped]] = result()
    sym_name: ir.StringAttr
    body: Region


class LibraryCallOp(Kernel.Operation, name="library_call"):
    outputs: Sequence[Result[Shaped]] = result()
    callee: ir.StringAttr
    body: Region


class YieldOp(Kernel.Operation, name="yield", traits=[ir.IsTerminatorTrait]):
    values: Sequence[Operand[Shaped]]


class AllocOp(Kernel.Operation, name="alloc"):
    dynamic_sizes: Sequence[Operand[ir.IndexType]]
    buffer: Result[ir.MemRefType] = result()


def load(context: "ir.Context") -> None:
    """Load tkern into `context` once (loading twice is an error in IRDL)."""
    with context:
        if not context.is_dialect_loaded(Kernel.DIALECT_NAMESPACE):
            Kernel.load()

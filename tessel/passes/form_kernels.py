from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import ATOMIC_ADD_TYPES, library_callee
from tessel.passes.registry import ModulePass, register

KERNEL_OPS = ("tkern.kernel", "tkern.library_call")
# A loop nest whose results differ in type cannot be a tkern.kernel (IRDL results are
# homogeneous, see tessel/dialects/kernel.py): it stays unwrapped, and this attribute
# names the kernel it is.
UNWRAPPED_KERNEL = "tessel.kernel"


def is_kernel(op: ir.Operation) -> bool:
    """A tkern.kernel or library call, or a loop nest left unwrapped as a kernel."""
    return op.name in KERNEL_OPS or UNWRAPPED_KERNEL in op.attributes


def kernel_name(op: ir.Operation) -> str:
    attribute = "sym_name" if op.name == KERNEL_OPS[0] else UNWRAPPED_KERNEL
    return ir.StringAttr(op.attributes[attribute]).value


def kernel_body(op: ir.Operation) -> list[ir.Operation]:
    """The ops a kernel runs: its region's (with the tkern.yield), or the unwrapped
    loop nest itself."""
    if op.name in KERNEL_OPS:
        return [o.operation for o in op.regions[0].blocks[0].operations]
    return [op]


def sole_generic(kernel: ir.Operation | None) -> ir.Operation | None:
    """The linalg.generic that the tkern.kernel `kernel` consists of, else None (not a
    kernel, or one of several ops)."""
    if kernel is None or kernel.name != "tkern.kernel":
        return None
    body = kernel_body(kernel)
    return body[0] if len(body) == 2 and body[0].name == "linalg.generic" else None


def scatter_of(kernel: ir.Operation) -> ir.Operation | None:
    """The tm_tensor.scatter whose result the tkern.kernel `kernel` yields (a scatter
    that stores its updates is a kernel, not a library call), else None."""
    if kernel.name != KERNEL_OPS[0]:
        return None
    yielded = kernel_body(kernel)[-1].operands
    owner = ir.operation_of(yielded[0].owner) if len(yielded) == 1 else None
    return owner if owner is not None and owner.name == "tm_tensor.scatter" else None


def _is_read(value: ir.Value) -> bool:
    return any(True for _ in value.uses)


def _is_kernel_root(op: ir.Operation) -> bool:
    dialect = op.name.split(".")[0]
    return op.name == "scf.forall" or dialect in ("linalg", "tm_tensor")


@register
@dataclass(frozen=True)
class FormKernelsPass(ModulePass):
    """form-kernels: wrap each loop nest of a function in a tkern.kernel region.

    Every fused tile loop (scf.forall) and every remaining linalg/tm_tensor op
    becomes one `tkern.kernel`; contractions become `tkern.library_call {callee =
    "gemm"}`, and named NCHW convolutions (left named by the gpu pipeline)
    `tkern.library_call {callee = "conv2d"}`. What is a kernel, and how many there
    are, is then visible in the IR and counted by the targets. Ops whose results differ
    in type stay unwrapped, named by a `tessel.kernel` attribute (see
    tessel/dialects/kernel.py on IRDL's homogeneous variadics). A loop nest whose
    results nothing reads is dropped instead: upstream elementwise fusion leaves a
    producer it fused into its consumers when its body has side effects (an
    embedding's index asserts), and it would run again for nothing, its asserts
    repeated in the consumer. A scatter that adds its updates is a kernel where its
    element type is one of `atomic-add-types` (the Triton target leaves out bf16 in
    its interpreter, and all of them in PyTorch's deterministic mode: atomics add in
    no fixed order), else aten's index_put_.
    """

    name: ClassVar[str] = "form-kernels"
    atomic_add_types: str = ",".join(ATOMIC_ADD_TYPES)

    def run(self, module: ir.Operation) -> None:
        for function in ir.defined_functions(module):
            name = ir.StringAttr(function.attributes["sym_name"]).value
            roots = [op.operation for op in function.regions[0].blocks[0].operations
                     if _is_kernel_root(op.operation)]
            for op in reversed(roots):  # consumers first: their producers may die with them
                if op.name == "linalg.generic" and not any(_is_read(r) for r in op.results):
                    roots.remove(op)
                    op.erase()
            for number, op in enumerate(roots):
                self._wrap(op, f"{name}_kernel_{number}")

    def _wrap(self, op: ir.Operation, kernel_name: str) -> None:
        if len({str(r.type) for r in op.results}) > 1:
            with op.context:
                op.attributes[UNWRAPPED_KERNEL] = ir.StringAttr.get(kernel_name)
            return
        callee = library_callee(op, tuple(self.atomic_add_types.split(",")))
        library = callee is not None
        with op.context, op.location:
            attributes = ({"callee": ir.StringAttr.get(callee)} if library
                          else {"sym_name": ir.StringAttr.get(kernel_name)})
            with ir.InsertionPoint(op):
                kernel = ir.Operation.create(
                    KERNEL_OPS[1] if library else KERNEL_OPS[0],
                    results=[r.type for r in op.results], attributes=attributes, regions=1)
            block = kernel.regions[0].blocks.append()
            with ir.InsertionPoint(block):
                yield_op = ir.Operation.create("tkern.yield", operands=list(op.results))
            for old, new in zip(op.results, kernel.results):
                old.replace_all_uses_with(new)
            # The yield took the op's results too; point it back at them.
            for index, result in enumerate(op.results):
                yield_op.operands[index] = result
            op.move_before(yield_op)

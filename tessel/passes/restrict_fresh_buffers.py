from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register


def _operation(owner) -> ir.Operation | None:
    if isinstance(owner, ir.OpView):
        return owner.operation
    return owner if isinstance(owner, ir.Operation) else None


@register
@dataclass(frozen=True)
class RestrictFreshBuffersPass(ModulePass):
    """restrict-fresh-buffers: mark to_tensor of a fresh, finished buffer as `restrict`.

    torch-mlir's tm-tensor-bufferize hands results back as `bufferization.to_tensor
    %alloc`. One-shot bufferization only analyses to_tensor ops marked `restrict`
    (the tensor is the buffer's only alias from then on). That holds when the buffer
    comes from a memref.alloc in the same block and every other use of it (the
    writes that fill it) comes before the first read of the tensor.
    """

    name: ClassVar[str] = "restrict-fresh-buffers"

    def run(self, module: ir.Operation) -> None:
        marked = []

        def visit(op):
            if op.operation.name == "bufferization.to_tensor" and self._is_fresh(op.operation):
                marked.append(op.operation)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        with module.context:
            for op in marked:
                op.attributes["restrict"] = ir.UnitAttr.get()

    @staticmethod
    def _is_fresh(to_tensor: ir.Operation) -> bool:
        buffer = to_tensor.operands[0]
        alloc = _operation(buffer.owner)
        if alloc is None or alloc.name != "memref.alloc" or alloc.block != to_tensor.block:
            return False
        tensor_users = {_operation(use.owner) for use in to_tensor.results[0].uses}
        buffer_users = {_operation(use.owner) for use in buffer.uses} - {to_tensor}
        # Every write into the buffer must come before the tensor is first read.
        for op in _block_ops(to_tensor):
            if op in tensor_users:
                return not buffer_users
            buffer_users.discard(op)
        return not buffer_users


def _block_ops(op: ir.Operation) -> list[ir.Operation]:
    """The operations of `op`'s block, in order."""
    return [o.operation for o in op.block.operations]

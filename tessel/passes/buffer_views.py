"""Which buffer a tensor or memref value is a view of, shared by the passes that must
know whether two values can share storage."""

from __future__ import annotations

from tessel import ir

# Tensor reshapes: a view that regroups dims (elementwise fusion folds them into readers).
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")
# Ops whose result is (or bufferizes to) a view of their first operand's buffer.
VIEW_OPS = (*RESHAPES, "tensor.cast",
            "tensor.extract_slice", "tensor.reshape", "tensor.bitcast",
            "memref.expand_shape", "memref.collapse_shape", "memref.cast", "memref.subview",
            "memref.reinterpret_cast")


def view_root(value: ir.Value) -> ir.Value:
    """The value (an allocation, an op's result or a block argument) whose buffer
    `value` looks into, following view ops."""
    while (owner := ir.operation_of(value.owner)) is not None and owner.name in VIEW_OPS:
        value = owner.operands[0]
    return value

"""The stores of a kernel's results: each into a new buffer, through the strides the
host passes, at the row's points (or, for a result computed off the row, at points its
own walk of the row's first lanes gives)."""

from __future__ import annotations

from tessel import ir
from tessel.targets.triton import sizes
from tessel.targets.triton.dtypes import HALF, TRITON_DTYPES, as_value, element_name
from tessel.targets.triton.indexing import ZERO, Index, address, strides, text
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import KernelResult, KernelWriter, rank


def store(writer: KernelWriter, value: ir.Value, offsets: list[Index], init: ir.Value,
          number: int | None = None) -> None:
    """Store `value` into a new output buffer shaped like `init` at `offsets`: the
    kernel's output `number` (default: the next), whatever order the stores come in.
    The kernel writes every element (pointwise: all of them; row loops: every row), so
    the buffer never starts from `init`'s contents."""
    extent, mask = writer.shape(value), "mask"
    if value in writer.producers and value not in writer.registers and \
            value not in writer.literals:
        # Computed off the row (a mask that a kernel over more points also returns):
        # the row's first lanes walk its points in its own order.
        indices, mask = writer.walk_alone(extent)
        expression, kind = writer.recompute(
            value, ir.AffineMap.get_identity(len(extent), value.type.context), indices, "row")
        expression = as_value((expression, kind))
        kind = "row"
    else:
        indices, kind = writer.local_indices(extent)
        if value in writer.registers:
            expression, kind = writer.registers[value]
        elif value in writer.literals:  # a fill
            expression = as_value(writer.literals[value])
        else:
            raise UnsupportedKernel("tkern.yield", "a result not computed in the kernel")
    shape = sizes.shape(init)
    # A result the host keeps narrower (host_program.narrowed_values) is stored rounded.
    number = len(writer.results) if number is None else number
    element = writer.narrowed_results.get(number, element_name(init))
    writer.results += [None] * (number + 1 - len(writer.results))
    writer.results[number] = KernelResult(shape, element)
    pointer = f"out{number}"
    offset = address(strides(pointer, len(shape)), offsets, indices)
    mask = writer.access_mask(kind, mask)
    if element in HALF:
        expression = f"{expression}.to({TRITON_DTYPES[element]})"
    writer.emit(f"tl.store({pointer} + {text(offset)}, {expression}{mask})")



def store_results(writer: KernelWriter, results: list[ir.Value]) -> None:
    """Store each result of a whole-tensor kernel into a buffer shaped like the init
    of the op that computes it."""
    for value in results:
        producer = ir.operation_of(value.owner)
        index = list(producer.results).index(value) if producer is not None else -1
        init = producer.operands[len(producer.operands) - len(producer.results) + index]
        store(writer, value, [ZERO] * rank(value), init)

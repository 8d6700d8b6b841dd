"""Scatters that store their updates (tm_tensor.scatter without a combiner: index_copy_,
index_put_, a static KV cache's new entries) or add them (index_put_ with accumulate,
scatter_add: an embedding's or a gather's gradient): one lane per element of the
updates, which takes its index row, the element's place in its update slice, and
stores the element at the buffer point they address, or adds it there atomically
(as eager's CUDA kernels do: in no fixed order, so form-kernels leaves these to aten
in deterministic mode).

Row i of the [N, depth] indices addresses the buffer's leading `depth` dims, and the
slice updates[i] fills its trailing dims; where the slice spans indexed dims too, it
starts at the index there (torch-mlir scatters an embedding's gradient as [N, 1, D]
updates into [V, D], a static KV cache's new entries as [N, 1, 1, 1, 1] into
[B, H, S, D]). The row is loaded from the indices tensor, or computed in the kernel
where fuse-into-scatters moved the generic that computes it there; so are the
updates. Negative indices count from the end, as index_put_'s do; a point outside the
buffer is not stored (and fails the kernel's device assert under TRITON_DEBUG=1).

The buffer is the kernel's result: the host hands it over holding the original
(KernelResult.initial), as a copy or as the input written in place.
"""

from __future__ import annotations

import sympy

from tessel import ir
from tessel.passes.contractions import adds_updates, stores_updates
from tessel.passes.buffer_views import RESHAPES
from tessel.targets.triton import sizes
from tessel.targets.triton.dtypes import HALF, TRITON_DTYPES, as_value, element_name
from tessel.targets.triton.indexing import (
    ZERO,
    FloorDiv,
    address,
    named,
    points,
    strides,
    text,
    walked,
)
from tessel.targets.triton.reductions import ReductionWriter
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import KernelResult


def scatter_kernel(writer: ReductionWriter, scatter: ir.Operation,
                   body: list[ir.Operation]) -> tuple[int | sympy.Expr]:
    """The kernel's lines for `scatter`, which `body` (the kernel's ops) ends with; its
    grid: BLOCK elements of the updates per program."""
    updates, indices, original = scatter.operands
    dimension_map = list(ir.DenseI64ArrayAttr(scatter.attributes["dimension_map"]))
    if dimension_map != list(range(len(dimension_map))):
        raise UnsupportedKernel(scatter.name, f"a dimension_map of {dimension_map}")
    adds = adds_updates(scatter)
    if not adds and not stores_updates(scatter):
        raise UnsupportedKernel(scatter.name, "a scatter that neither stores nor adds its "
                                "updates")
    # Generics moved into the kernel (fuse-into-scatters) are computed at the points
    # their readers read: a generic of index columns and updates, once per row.
    writer.producers.update((result, op) for op in body if op.name == "linalg.generic"
                            for result in op.results)
    result = scatter.results[0]
    update_shape, buffer_shape = writer.shape(updates), writer.shape(result)
    writer.results.append(KernelResult(sizes.shape(result), element_name(result),
                                       initial=original))
    writer.row_shape = [size for size in update_shape if size != 1]
    count = points(update_shape)
    writer.emit(f"r = {writer.program()} * BLOCK + tl.arange(0, BLOCK)")
    writer.emit(f"mask = r < {text(count)}")
    # The lane's element: its row of the indices, then its place in the update slice.
    element = walked(update_shape, list(reversed(range(len(update_shape)))))
    row, place = element[0], element[1:]
    first_slice_dim = len(buffer_shape) - len(place)
    position = [ZERO] * len(buffer_shape)
    for dim, index in enumerate(place):
        position[first_slice_dim + dim] = index
    inside = ["mask"]
    for dim in range(len(dimension_map)):
        at = writer.fresh("at")
        writer.emit(f"{at} = {_index(writer, indices, body, row, dim)}.to(tl.int64)")
        writer.emit(f"{at} = tl.where({at} < 0, {at} + {text(buffer_shape[dim])}, {at})")
        position[dim] = named(at) + position[dim]
        inside.append(f"({text(position[dim])} >= 0) & "
                      f"({text(position[dim])} < {text(buffer_shape[dim])})")
    stored = " & ".join(inside)
    writer.emit(f'tl.device_assert(~mask | ({stored}), "scatter index out of bounds")')
    value = _update(writer, updates, body, element)
    element_type = element_name(result)
    if element_type in HALF:
        value = f"{value}.to({TRITON_DTYPES[element_type]})"
    offset = address(strides("out0", len(buffer_shape)), [ZERO] * len(buffer_shape), position)
    if adds:
        writer.emit(f"tl.atomic_add(out0 + {text(offset)}, {value}, mask={stored}, "
                    "sem='relaxed')")
    else:
        writer.emit(f"tl.store(out0 + {text(offset)}, {value}, mask={stored})")
    return (-(-count // writer.block) if isinstance(count, int)
            else FloorDiv(count + writer.block - 1, writer.block),)


def _index(writer: ReductionWriter, indices: ir.Value, body: list[ir.Operation],
           row: sympy.Expr, column: int) -> str:
    """Column `column` of row `row` of the indices, as a Triton value: computed by their
    generic where the kernel holds it (fuse-into-scatters), else loaded."""
    producer = _defined_in(indices, body)
    if producer is not None:
        # The column as lanes that hold it, not as a literal: the conditions on it are
        # then lanes too, as in a kernel of the indices (a 0-d condition in a load's
        # mask fails in Triton's interpreter), and Triton folds the constant lanes.
        lanes = writer.fresh("column")
        writer.emit(f"{lanes} = tl.full({writer.tile}, {column}, tl.int64)")
        (computed,) = writer.evaluate(producer, [row, named(lanes)], "row")
        return f"({as_value(computed)})"
    pointer = writer.input_pointer(indices)
    offset = address(strides(pointer, 2), [ZERO, ZERO], [row, sympy.Integer(column)])
    return f"tl.load({pointer} + {text(offset)}, mask=mask)"


def _update(writer: ReductionWriter, updates: ir.Value, body: list[ir.Operation],
            element: list[sympy.Expr]) -> str:
    """The lane's element of the updates, at `element`, as a Triton value: computed by
    their generic where the kernel holds it (fuse-into-scatters), else loaded."""
    source = updates
    producer = _defined_in(source, body)
    while producer is not None and producer.name in RESHAPES:
        source = producer.operands[0]
        producer = _defined_in(source, body)
    if producer is None or source == updates:
        identity = ir.AffineMap.get_identity(len(element), updates.type.context)
        return as_value(writer.read(updates, identity, element, "row"))
    # Reshapes keep the row-major order of points: the lane's flat index in the updates
    # is its point's in the generic's result, which it writes at its loop indices.
    extent = writer.shape(source)
    (computed,) = writer.evaluate(producer, walked(extent, list(reversed(range(len(extent))))),
                                  "row")
    return as_value(computed)


def _defined_in(value: ir.Value, body: list[ir.Operation]) -> ir.Operation | None:
    """The op of the kernel's `body` that computes `value`, else None (a value of main)."""
    owner = ir.operation_of(value.owner)
    return owner if owner is not None and owner in body else None

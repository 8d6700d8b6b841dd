"""Whether readers that compute an element-wise producer's value themselves move fewer
bytes than the producer's own kernel: its inputs read once, its result written and read
back by each reader. duplicate-cheap-producers asks it of a producer read by several
generics, inline-gathered-producers of one read at several points of gathers (a pooling
gradient's taps)."""

from __future__ import annotations

from tessel import ir


def dims_read(affine_map) -> list:
    """The loop dim each result of an input's map reads (None: an expression), leaving
    out a unit dim read at 0 (a batch norm's per-channel mean as [1, C, 1, 1] is read
    through (0, d1, 0, 0)): such a read is a broadcast."""
    return [position for position, expr in zip(ir.dim_positions(affine_map), affine_map.results)
            if not (isinstance(expr, ir.AffineConstantExpr) and expr.value == 0)]


def full_size_inputs(producer: ir.Operation) -> list[ir.Value]:
    """The inputs `producer` reads at every loop dim (not a broadcast): the loads of
    each of its points that no cache shares with other points'."""
    maps = ir.indexing_maps(producer)
    loops = maps[-1].n_dims
    return [value for value, affine_map in zip(list(producer.operands)[:-1], maps[:-1])
            if len(dims_read(affine_map)) == loops]


def bytes_per_point(value: ir.Value) -> int:
    """Bytes of one element of the tensor `value` (a mask's i1 counts one)."""
    return max(getattr(ir.ShapedType(value.type).element_type, "width", 8) // 8, 1)


def cheaper_computed_by_each(producer: ir.Operation, readers: int) -> bool:
    """Whether `readers` reads that each compute `producer`'s value cost less than its
    kernel: one that reads at most one full-size input (a cast, a broadcast) always
    does; one that reads more does where the readers' reads of its inputs move fewer
    bytes than its own reads, its result's write and the readers' reads of it (a ReLU's
    backward mask of gradient and activation read by two generics: 4 reads against
    2 + 1 + 2; a sum of two gradients read at a max pool gradient's four taps: 16
    against 4 + 2 + 8, so it stays a kernel)."""
    full_size = full_size_inputs(producer)
    if len(full_size) <= 1:
        return True
    inputs = sum(bytes_per_point(value) for value in full_size)
    result = bytes_per_point(producer.results[0])
    return readers * inputs < inputs + (1 + readers) * result

"""Row tiles: how many rows one program of a row kernel holds.

A row kernel's program holds its row in the lanes `r` of a [BLOCK] vector. Where the
tiles that carry the row lie along memory (a norm over the last dim), its loads and
stores walk consecutive addresses. Where one lies across memory instead (xcit's L2
norm over tokens, written back transposed: a row's points are 48 elements apart;
DeBERTa's transposed read of its position scores), one row per program makes that
access strided: each lane of a warp touches a sector of its own. Such a kernel holds
a [ROWS, BLOCK] tile of consecutive rows instead, consecutive along the row axis that
the tile's innermost memory dim follows, so that every access is coalesced, along `r`
or across rows (Triton lays out each access to suit its addresses). Inductor reduces
so with XBLOCK > 1 (a persistent reduction's [XBLOCK, RBLOCK] tile).

A row longer than that (or than a block that leaves a tile fewer than 16 rows) is walked in
chunks of a [ROWS, BLOCK] tile instead, BLOCK small enough that ROWS is 32: a batch
norm's per-channel sums over the batch and positions of an NHWC image in a training
step (each channel's values are C elements apart) read 32 channels side by side at each
point, where one channel per program read one element per sector.

Memory order is read off the IR: a tensor of `main` is taken to be laid out row-major
in its own shape, as the buffers the host allocates for kernels are (and slices and
reshapes of them keep their innermost dim), unless the host holds it channels-last
(layouts.innermost_dims). A wrong guess costs speed, never a wrong result: the kernel
indexes through the strides the host passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tessel import ir

# The points a program's [ROWS, BLOCK] tile holds at most, as Inductor's persistent
# reductions (MAX_PERSISTENT_BLOCK_NUMEL); a row of more than a quarter of it keeps a
# program to itself (too few rows to make an access across them coalesced).
_TILE_POINTS = 4096
_MIN_ROWS = 4
# A row held in a tile of fewer rows is walked in chunks instead: 4 rows of a half type
# read 8 bytes of each 32-byte sector (resnet50's batch norm sums over 28 x 28 points,
# 4 channels to a program, ran at a third of the H200's bandwidth).
_MIN_HELD_ROWS = 16
_MAX_ROWS = 32  # 64 bytes of f16 across rows: two sectors per access
_MAX_WARPS = 8
# The lanes of a chunk of a walked tile: _TILE_POINTS // _MAX_ROWS.
_CHUNK = _TILE_POINTS // _MAX_ROWS


@dataclass(frozen=True)
class RowTile:
    """The rows of a program: `rows` consecutive rows of the row loop walked in
    `order` (its axes, slowest first; the one across memory last), each held in
    `block` lanes (a longer row is walked in chunks of them)."""
    rows: int
    order: tuple[int, ...]
    num_warps: int
    block: int


def row_tile(ops: list[ir.Operation], row_indices: list[ir.Value], bounds: list,
             block: int, size, reductions: list[ir.Operation],
             innermost: Mapping[ir.Value, int]) -> RowTile | None:
    """The tile of rows for a row loop (its body `ops` and inserts, its indices and
    bounds) whose rows of `size` points lie across memory, `block` lanes each as
    chosen for one row; None: one row per program. `innermost`: the dim innermost in
    memory of the tensors not laid out row-major."""
    if not all(isinstance(bound, int) for bound in bounds):
        return None
    if any(len(op.results) != 1 for op in reductions):
        return None  # an index reduction compares positions across one row's lanes
    axis = _axis_across_memory(ops, row_indices, innermost)
    if axis is None:
        return None
    fits = isinstance(size, int) and size <= block and _TILE_POINTS // block >= _MIN_HELD_ROWS
    if not fits:
        block = _CHUNK
    rows = min(_TILE_POINTS // block, _MAX_ROWS, 1 << (math.prod(bounds).bit_length() - 1))
    if rows < _MIN_ROWS:
        return None
    order = tuple(a for a in range(len(bounds)) if a != axis) + (axis,)
    # A warp per 512 points of the tile, as many as fill a program (at most 8).
    return RowTile(rows, order, max(2, min(_MAX_WARPS, rows * block // 512)), block)


def _axis_across_memory(ops: list[ir.Operation], row_indices: list[ir.Value],
                        innermost: Mapping[ir.Value, int]) -> int | None:
    """The row loop's axis that the innermost memory dim of a tile carrying the row
    follows (the tile holds one point of that dim, at the row's index), or of a
    gather's reads along the row, if any."""
    for op in ops:
        if op.name == "linalg.generic":
            axis = _gather_axis(op, row_indices)
            if axis is not None:
                return axis
            continue
        if op.name == "tensor.extract_slice":
            base, first_dynamic = op.operands[0], 1
        elif op.name == "tensor.parallel_insert_slice":
            base, first_dynamic = op.operands[1], 2
        else:
            continue
        offsets, sizes = ir.mixed_values(op, ("static_offsets", "static_sizes"), first_dynamic)
        shape = ir.ShapedType(base.type).shape
        inner = innermost.get(base, next(
            (d for d in reversed(range(len(shape))) if shape[d] != 1), None))
        carries_row = any(not isinstance(size, int) or size > 1 for size in sizes)
        if inner is None or not carries_row or sizes[inner] != 1:
            continue
        if offsets[inner] in row_indices:
            return row_indices.index(offsets[inner])
    return None


def _gather_axis(generic: ir.Operation, row_indices: list[ir.Value]) -> int | None:
    """The row axis that a gather of `generic`'s body (tensor.extract) follows in its
    innermost dim while an outer dim walks the row's lanes (DeBERTa's position scores
    read transposed: p2c[bh, key, bucket(query - key)] over a query's row of keys)."""
    block = generic.regions[0].blocks[0]
    for op in block.operations:
        op = op.operation
        if op.name != "tensor.extract" or len(op.operands) < 3:
            continue
        *outer, innermost = [_reaches(index, generic, row_indices) for index in op.operands[1:]]
        lanes_outside = any(lanes for lanes, _ in outer)
        axes = sorted(innermost[1])
        if lanes_outside and axes:
            return axes[-1]
    return None


def _reaches(value: ir.Value, generic: ir.Operation, row_indices: list[ir.Value]
             ) -> tuple[bool, set[int]]:
    """What the body value `value` is computed from: the lanes (a linalg.index), and
    which row axes (the row loop's indices, read as values)."""
    lanes, axes, pending, seen = False, set(), [value], set()
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in row_indices:
            axes.add(row_indices.index(value))
            continue
        owner = ir.operation_of(value.owner)
        if owner is None or ir.operation_of(owner.parent) != generic:
            continue  # an input's element, or a value of main
        lanes |= owner.name == "linalg.index"
        pending.extend(owner.operands)
    return lanes, axes

"""2-D tiles for pointwise kernels that transpose.

A pointwise program walks BLOCK consecutive points of the row in the order its results
lie in memory (writer.walk_order), so its stores are coalesced. An operand contiguous
along another dim (a permute copy of attention's q, k and v; an NCHW image read into a
channels-last result) is then read with a large stride from lane to lane. Such a kernel
walks 2-D tiles instead: the row's dims, fastest first, split in two groups, the x axis
walking the fastest ones (where the results are contiguous) and the y axis the rest,
whose fastest dim is the one the operand is contiguous along. Each axis is a flat index
over its group, as `r` is over the whole row, so the index expressions are the same
functions of two lanes; Triton lays each load and store out along the axis its
addresses are contiguous on, and moves values between them through shared memory, so
both are coalesced.

The split is Inductor's choice of tiling (`candidate_tilings` in
torch/_inductor/codegen/simd.py): the iteration space split after the stride-1 dim of
a read; here the split that most reads of the row's every point ask for. A read's
layout is the one the host gives it (host_program): a new buffer's, row-major or
channels-last (layouts.py), or a view's of one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tessel import ir
from tessel.targets.triton import layouts, strided_views
from tessel.targets.triton.indexing import (
    Extent,
    FloorDiv,
    Index,
    Modulo,
    points,
    symbol,
    text,
    walked,
)
from tessel.targets.triton.writer import (
    KernelWriter,
    fill_constant,
    is_empty,
    output_positions,
)

ROWS = symbol("ry[:, None]")
COLUMNS = symbol("rx[None, :]")
# A tile's x axis spans at most this many points where its group has more, and its y
# axis the rest of the block: Inductor's default 2-D tile is 32 x 32.
_X_BLOCK = 32


@dataclass(frozen=True)
class TransposingTile:
    """A program's tile: `columns` of the row's dims, fastest first, walked by the x
    axis, the rest by the y axis; `extents` are the two groups' points and `shape` the
    tile's, (y, x)."""
    columns: int
    extents: tuple[Extent, Extent]
    shape: tuple[int, int]

    def indices(self, domain: list[Extent], fastest_first: list[int]) -> list[Index]:
        """Per dim of `domain` (which spans the row), its index at the tile's points."""
        x = _group_indices(domain, fastest_first[:self.columns], COLUMNS)
        y = _group_indices(domain, fastest_first[self.columns:], ROWS)
        return [a + b for a, b in zip(x, y)]  # each dim is in one group, 0 in the other

    def start(self, writer: KernelWriter) -> int | str:
        """Emit the tile's lanes (`ry`, `rx`) and mask; the kernel's number of programs
        (Python over the size parameters where sizes are dynamic)."""
        (y_extent, x_extent), (y_block, x_block) = self.extents, self.shape
        program = symbol(writer.program())
        across = FloorDiv(x_extent + x_block - 1, x_block)  # tiles along x, x fastest
        writer.emit(f"ry = {_lanes(FloorDiv(program, across) * y_block, y_block)}")
        writer.emit(f"rx = {_lanes(Modulo(program, across) * x_block, x_block)}")
        writer.emit(f"mask = ({text(ROWS)} < {text(y_extent)}) & "
                    f"({text(COLUMNS)} < {text(x_extent)})")
        writer.tile = f"[{y_block}, {x_block}]"
        programs = FloorDiv(y_extent + y_block - 1, y_block) * across
        return int(programs) if programs.is_Integer else text(programs)


def _lanes(start: Index, block: int) -> str:
    """A tile axis's `block` lanes from `start`."""
    lanes = f"tl.arange(0, {block})"
    return lanes if start == 0 else f"{text(start)} + {lanes}"


def _group_indices(domain: list[Extent], group: list[int], flat: Index) -> list[Index]:
    """Indices of the `group` dims (fastest first) where `flat` walks them; the mask
    bounds `flat`, so the outermost takes the whole quotient (a contiguous lane stays
    one where it indexes memory)."""
    indices = walked(domain, group[:-1], flat)
    indices[group[-1]] = FloorDiv(flat, points([domain[d] for d in group[:-1]]))
    return indices


def transposing_tile(writer: KernelWriter, generics: list[ir.Operation],
                     results: list[ir.Value], channels_last: frozenset[ir.Value]
                     ) -> TransposingTile | None:
    """The tile of a pointwise kernel (no whole-tensor reduction, `writer.row_shape`
    set) whose reads of the row's every point ask for one, or None: every such read is
    contiguous along the results' fastest dim (the 1-D walk coalesces it), or a result
    is computed off the row (its store walks the row's first lanes, `r`)."""
    if not all(writer.spans_row(writer.shape(value)) for value in results):
        return None
    computed = {result for op in generics for result in op.results}
    votes = Counter(columns for op in generics
                    for columns in _transposed_reads(writer, op, computed, channels_last))
    if not votes:
        return None
    columns = votes.most_common(1)[0][0]
    extent = writer.shape(results[0])
    fastest_first = writer.walk_order(extent)
    x_extent = points([extent[d] for d in fastest_first[:columns]])
    y_extent = points([extent[d] for d in fastest_first[columns:]])
    return TransposingTile(columns, (y_extent, x_extent),
                           _tile_shape(y_extent, x_extent, writer.block))


def _transposed_reads(writer: KernelWriter, op: ir.Operation, computed: set[ir.Value],
                      channels_last: frozenset[ir.Value]):
    """For each operand of `op` read from memory at every point of the row whose
    contiguous dim is not the row's fastest, how many of the row's dims (fastest first)
    come before that dim in the walk. Reads through a generic computed at its readers'
    points (its iteration space is not the row's) are not counted."""
    positions = output_positions(op)
    if positions is None:
        return
    domain = writer.domain(op)
    result_domain = [domain[p] for p in positions]
    if not writer.spans_row(result_domain):
        return
    walk = [positions[d] for d in writer.walk_order(result_domain)]  # loop dims
    n_inputs = len(op.operands) - len(op.results)
    for operand, affine_map in zip(op.operands[:n_inputs], ir.indexing_maps(op)):
        if not isinstance(operand.type, ir.RankedTensorType) or operand in computed or \
                is_empty(operand) or fill_constant(operand) is not None:
            continue
        read = set().union(*(ir.dims_read(expr) for expr in affine_map.results))
        contiguous = _contiguous_dim(operand, channels_last)
        if contiguous is None or not set(walk) <= read:
            continue  # a broadcast: fewer points than the row, each read many times
        # The row dim its contiguous dim steps along (a pooling window's offsets and
        # a strided read's factor aside).
        lanes = [d for d in walk if d in ir.dims_read(affine_map.results[contiguous])]
        if len(lanes) == 1 and lanes[0] != walk[0]:
            yield walk.index(lanes[0])


def _contiguous_dim(value: ir.Value, channels_last: frozenset[ir.Value]) -> int | None:
    """The dim of `value` (of size > 1) that is contiguous in memory, as the host lays
    it out; None where every dim has size 1."""
    wide = [d for d, size in enumerate(ir.RankedTensorType(value.type).shape) if size != 1]
    strides = _strides(value, channels_last)
    return min(wide, key=lambda d: strides[d]) if wide else None


def _strides(value: ir.Value, channels_last: frozenset[ir.Value]) -> tuple[int, ...]:
    """The strides the host gives `value`: a view's (the host takes a reshape of a
    buffer as a strided view of it where one exists: strided_views); a pad's, which
    torch lays out as its source's memory format; else a buffer's (layouts.strides:
    channels-last for the values layouts.py names). A graph input is taken as
    contiguous. A dynamic size counts as 2: only the strides' order matters."""
    shaped = ir.RankedTensorType(value.type)
    shape = [2 if shaped.is_dynamic_dim(d) else size for d, size in enumerate(shaped.shape)]
    owner = ir.operation_of(value.owner)
    source = owner.operands[0] if owner is not None and owner.name in (
        *layouts.VIEWS, "tensor.pad") else None
    if source is not None and owner.name == "tensor.pad":
        source_shape = list(ir.RankedTensorType(source.type).shape)
        nhwc = tuple(layouts.strides(source_shape, True)) if len(shape) == 4 else None
        held = nhwc is not None and nhwc != tuple(layouts.strides(source_shape, False)) \
            and _strides(source, channels_last) == nhwc
        return tuple(layouts.strides(shape, held))
    if source is not None and shaped.has_static_shape and \
            ir.RankedTensorType(source.type).has_static_shape:
        view = strided_views.viewed(
            strided_views.Layout(tuple(ir.RankedTensorType(source.type).shape),
                                 _strides(source, channels_last)), tuple(shape))
        if view is not None:
            return view.stride
    return tuple(layouts.strides(shape, value in channels_last))


def _tile_shape(y_extent: Extent, x_extent: Extent, block: int) -> tuple[int, int]:
    """(y, x) points of a tile of `block` points: x up to _X_BLOCK, y the rest, and x
    more where y's group is smaller than that (powers of two, no larger than a
    group needs)."""
    def needed(extent: Extent) -> int:
        return 1 << (extent - 1).bit_length() if isinstance(extent, int) else block
    x_block = min(_X_BLOCK, needed(x_extent), block)
    y_block = min(needed(y_extent), block // x_block)
    return y_block, min(needed(x_extent), block // y_block)

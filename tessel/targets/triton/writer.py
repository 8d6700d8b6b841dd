"""The kernel writer: what a Triton kernel being generated holds (its parameters, its
registers, the loads it made, its size parameters) and how it computes the element-wise
generics of the kernel's body at the row's points, reading every operand through its
indexing map (recomputing an element-wise producer at its reader's points where the
reader reads it off the lanes that hold it).

Inside a kernel every value is a row (a [BLOCK] vector over the flattened iteration
space `r`; a 2-D tile of it in a transposing pointwise kernel, transposing_tiles.py)
or a per-program scalar; values are (expression, kind) pairs, kind "row",
"scalar" or "literal:<element>" (a Python literal that Triton takes as is). A program
that holds a tile of rows (row_tiles.py) holds a row as [ROWS, BLOCK] and a scalar as
[ROWS, 1], one per row, which broadcasts over the row's lanes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy

from tessel import ir
from tessel.passes.form_kernels import sole_generic
from tessel.passes.fuse_tiles import pooling_window
from tessel.passes.tile_for_threads import loop_ranges
from tessel.targets.triton import layouts, op_table, padded_reads, sizes
from tessel.targets.triton.branch_guards import load_guards
from tessel.targets.triton.dtypes import (
    HALF,
    HELD_DTYPES,
    as_value,
    cast_literal,
    element_name,
    scalar_literal,
)
from tessel.targets.triton.indexing import (
    ZERO,
    Index,
    address,
    is_position,
    named,
    points,
    strides,
    symbol,
    text,
    through_map,
    walked,
)
from tessel.targets.triton.op_table import CASTS
from tessel.targets.triton.row_tiles import RowTile
from tessel.targets.triton.unsupported import UnsupportedKernel

if TYPE_CHECKING:  # transposing_tiles reads kernels through a writer
    from tessel.targets.triton.transposing_tiles import TransposingTile

# In a body's `names`: the loop indices' expressions (per dim) and their kind; the
# body's ops; the guards of its loads (branch_guards).
LOOP_INDICES = "loop indices"
BODY_OPS = "body ops"
LOAD_GUARDS = "load guards"


@dataclass
class KernelResult:
    """A buffer the kernel writes, through strides the host passes: whole, or where
    `initial` is a value, at some points of a buffer that holds that value first (a
    scatter's original)."""
    shape: list[sizes.Extent]       # static sizes, or roots the host computes
    element: str                    # MLIR element type: f32, bf16, ...
    initial: ir.Value | None = None



def rank(value: ir.Value) -> int:
    return ir.ShapedType(value.type).rank



def reduction_dims(generic: ir.Operation) -> set[int]:
    return {d for d, it in enumerate(ir.ArrayAttr(generic.attributes["iterator_types"]))
            if "reduction" in str(it)}



@dataclass
class Slice:
    """A tile of a main-level tensor: `base` at per-dim offsets."""
    base: ir.Value
    offsets: list[Index]


@dataclass
class KernelWriter:
    """One kernel being written: its lines, parameters, registers and loads."""
    name: str
    block: int
    lines: list[str] = field(default_factory=list)
    registers: dict = field(default_factory=dict)       # Value -> (expression, "row"|"scalar")
    literals: dict = field(default_factory=dict)        # Value -> (Python literal, "literal:f32")
    program_ids: dict = field(default_factory=dict)     # row loop index -> row0, ... (Index)
    loads: dict = field(default_factory=dict)           # tl.load expression -> variable
    slices: dict = field(default_factory=dict)          # Value -> Slice
    inputs: list = field(default_factory=list)          # main-level tensors read
    results: list = field(default_factory=list)         # KernelResult per output buffer
    row_shape: list | None = None                       # the iteration space `r` covers
    channels_last: bool = False                         # flat images walked NHWC (NLC)
    # A pointwise kernel's 2-D tile (transposing_tiles.TransposingTile), whose axes walk
    # the row's dims in two groups; None: `r` walks them all.
    transposing: TransposingTile | None = None
    narrowed: Mapping = field(default_factory=dict)     # inputs held narrower than typed
    narrowed_results: dict = field(default_factory=dict)  # result index -> type stored in
    # A looped pass: the reductions it accumulates (two for an online softmax), each
    # one's (accumulator, initial value), and each running max (see online_softmax):
    # its result -> (lanes' max, lanes' max before this chunk), the sum it rescales.
    accumulating: tuple = ()
    accumulators: dict = field(default_factory=dict)
    running: dict = field(default_factory=dict)
    running_maxima: dict = field(default_factory=dict)
    size_roots: list = field(default_factory=list)      # root per size parameter
    # A row kernel's tile of rows per program (None: one row), and whether its last
    # program's tile runs past the rows (per-row loads and stores then take `row_mask`).
    row_tile: RowTile | None = None
    partial_rows: bool = False
    # The dim innermost in memory of main's tensors not laid out row-major
    # (layouts.innermost_dims), which tells a row kernel its rows lie across memory.
    innermost: Mapping = field(default_factory=dict)
    # A gemm template's 2-D tile: its shape, each loop dim's indices, its block sizes.
    tile: str = "[BLOCK]"
    tile_indices: list | None = None
    # The loop dims of the generic being written that `r` walks, in its order (its
    # result's dims), where they differ from the loop order; None: in loop order.
    walk_dims: list | None = None
    # Each result of an element-wise generic of the kernel -> that generic, which a
    # reader computes again at its own points (recompute); what it computed, per
    # (result, loop indices), in the scope of the current chunk loop.
    producers: dict = field(default_factory=dict)
    recomputed: dict = field(default_factory=dict)
    recomputing: int = 0
    points: dict = field(default_factory=dict)          # row register -> its tensor indices
    constants: tuple = ("BLOCK",)
    # A member of a combo kernel (fuse-horizontally): a function the combo calls, with
    # the number of its program among the member's programs as its first parameter.
    member: bool = False
    counter: int = 0

    # ----------------------------------------------------------------- names

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def program(self) -> str:
        """The number of this program: its launch's, or a combo member's parameter."""
        return "program" if self.member else "tl.program_id(0)"

    def lanes_shape(self) -> str:
        """The shape of a row's lanes: [BLOCK], or a tile of rows' [ROWS, BLOCK]."""
        return "[BLOCK]" if self.row_tile is None else f"[{self.row_tile.rows}, BLOCK]"

    def lane_axis(self) -> str:
        """The arguments of a reduction across a row's lanes: of the [BLOCK] vector, or
        of each row of a tile of rows, kept as a column that broadcasts over the tile."""
        return "axis=0" if self.row_tile is None else "axis=1, keep_dims=True"

    def access_mask(self, kind: str, lanes: str = "mask") -> str:
        """The mask argument of a load or store of `kind`: a row's `lanes`, or for one
        point per row, the rows of a tile that runs past them (else none)."""
        if kind == "row":
            return f", mask={lanes}"
        return ", mask=row_mask" if self.partial_rows else ""

    # ----------------------------------------------------------------- sections

    @contextmanager
    def section(self) -> Iterator[list[str]]:
        """Lines emitted inside go to a section of their own, which the caller places
        (`place`) once what comes before it is known: a chunk loop's body is written
        before the accumulators it needs, which are initialized ahead of the loop."""
        outer, self.lines = self.lines, []
        try:
            yield self.lines
        finally:
            self.lines = outer

    def place(self, section: list[str], indent: str = "    ") -> None:
        """The lines of `section` here, as the body of the loop header just emitted."""
        self.lines.extend(indent + line for line in section)

    def size(self, extent: sizes.Extent) -> int | sympy.Symbol:
        """A static extent, or the size parameter that holds it."""
        if isinstance(extent, int):
            return extent
        if extent not in self.size_roots:
            self.size_roots.append(extent)
        return symbol(f"size{self.size_roots.index(extent)}")

    def same_extent(self, a: int | sympy.Symbol, b: int | sympy.Symbol) -> bool:
        """Whether two extents of fused generics are the same. A size the host computes
        (a "value" root) cannot be traced to an input's dim, so it is taken to equal
        another dynamic size in its place: the generics were fused as producer and
        consumer, and torch-mlir's runtime checks hold such sizes equal."""
        if a == b:
            return True
        roots = [self.size_roots[int(e.name.removeprefix("size"))] for e in (a, b)
                 if isinstance(e, sympy.Symbol)]
        return len(roots) == 2 and any(root[0] == "value" for root in roots)

    def shape(self, value: ir.Value) -> list[int | sympy.Symbol]:
        return [self.size(extent) for extent in sizes.shape(value)]

    def domain(self, generic: ir.Operation) -> list[int | sympy.Symbol]:
        """The loop ranges of a linalg.generic: ints, or size parameters."""
        ranges = loop_ranges(generic)
        for dim, static in enumerate(ranges):
            if static is None:
                ranges[dim] = self.size(loop_extent(generic, dim))
        return ranges

    def row_extent(self, generic: ir.Operation) -> list[int | sympy.Symbol]:
        """The dims of size > 1 that `r` spans for this op (a dynamic size is never 1:
        Dynamo specializes sizes 0 and 1): a row reduction's whole iteration space;
        else its result's dims, in the result's order (the output points of a pooling
        window; a depthwise convolution's N, H, W, C loops as its NCHW result)."""
        domain = self.domain(generic)
        window = pooling_window(generic) or []
        positions = output_positions(generic)
        if positions is None or set(reduction_dims(generic)) - set(window):
            return [size for d, size in enumerate(domain) if size != 1 and d not in window]
        return [domain[p] for p in positions if domain[p] != 1]

    def input_pointer(self, value: ir.Value) -> str:
        for index, known in enumerate(self.inputs):
            if known == value:
                return f"in{index}"
        self.inputs.append(value)
        return f"in{len(self.inputs) - 1}"

    # ----------------------------------------------------------------- indices

    def local_indices(self, domain: list[int | sympy.Symbol]) -> tuple[list[Index], str]:
        """Per loop dim, the expression of its index over a generic's domain,
        and the domain's kind: "row" (spans `r`) or "scalar" (all dims of size 1). In a
        gemm template, the indices of its m x n tile."""
        if self.tile_indices is not None:
            return self.tile_indices, "row"
        wide = [size for size in domain if size != 1]
        if not wide:
            return [ZERO] * len(domain), "scalar"
        if not self.spans_row(domain):
            raise UnsupportedKernel("linalg.generic", f"iteration space {domain} differs "
                                    f"from the kernel's {self.row_shape}")
        if self.transposing is not None:
            return self.transposing.indices(domain, self.walk_order(domain)), "row"
        return walked(domain, self.walk_order(domain)), "row"

    def walk_order(self, domain: list[int | sympy.Symbol]) -> list[int]:
        """The dims of size > 1 of a domain that spans the row, in the order `r` walks
        them, fastest first (every generic of the kernel whose iteration space is the
        row's maps `r` to the same point): the last fastest."""
        if self.channels_last and len(domain) in layouts.RANKS:
            # NCHW walked as NHWC (NCL as NLC): consecutive lanes step through channels,
            # the order of channels-last buffers in memory (coalesced loads and stores).
            return [d for d in reversed(layouts.memory_order(len(domain))) if domain[d] != 1]
        return [d for d in reversed(range(len(domain))) if domain[d] != 1]

    def walk_alone(self, extent: list[int | sympy.Symbol]) -> tuple[list[Index], str]:
        """Indices that walk a tensor of `extent`, off the row, with the row's first
        lanes, in row-major order, and the mask of those lanes. `r` spans the row's
        points: over a pointwise kernel's programs, a row kernel's block, or a looped
        row's chunks (the store then runs chunk by chunk)."""
        count, row = points(extent), points(self.row_shape)
        if not isinstance(count, int) or not isinstance(row, int) or count > row:
            raise UnsupportedKernel("linalg.generic", f"a result of {extent} points beside "
                                    f"the kernel's row of {self.row_shape}")
        row_major = [d for d in reversed(range(len(extent))) if extent[d] != 1]
        return walked(extent, row_major), f"(r < {count})"

    def spans_row(self, domain: list[int | sympy.Symbol]) -> bool:
        """Whether a domain's dims of size > 1 are the row's (or it has none)."""
        wide = [size for size in domain if size != 1]
        return not wide or (len(wide) == len(self.row_shape) and
                            all(map(self.same_extent, wide, self.row_shape)))

    def result_indices(self, domain: list[int | sympy.Symbol], output_map: ir.AffineMap
                       ) -> tuple[list[Index], str]:
        """Per loop dim, its index where the kernel's row walks the result of a generic
        over `domain` written through `output_map` (a projected permutation), and the
        kind: the row walks the result tensor's dims, which the loop dims may permute
        (torch-mlir's depthwise convolution loops over N, H, W, C and writes NCHW), and
        `walk_dims` records that order. The loop dims the result does not have (a
        window's) are 0."""
        positions = ir.dim_positions(output_map)
        if None in positions:
            raise UnsupportedKernel("linalg.generic", f"an output map {output_map}")
        tensor_indices, kind = self.local_indices([domain[p] for p in positions])
        self.walk_dims = [p for p in positions if domain[p] != 1]
        indices = [ZERO] * len(domain)
        for position, index in zip(positions, tensor_indices):
            indices[position] = index
        return indices, kind

    # ----------------------------------------------------------------- operands

    def read(self, value: ir.Value, affine_map: ir.AffineMap, indices: list[Index],
             kind: str, window: frozenset[int] = frozenset()) -> tuple[str, str]:
        """(expression, kind) of `value` read through `affine_map` at `indices`; the
        `window` dims of a windowed reduction are fixed positions, not row dims."""
        if value in self.literals:
            return self.literals[value]
        if value in self.running:
            return self.running[value][0], "row"  # a max per lane, in its chunk loop
        if value in self.registers:
            expression, value_kind = self.registers[value]
            point = through_map(affine_map, indices)
            if value_kind == "scalar" or self.points.get(value) == point or \
                    (kind == "row" and not self.recomputing and
                     self.in_row_order(value, affine_map, indices, window)):
                return expression, value_kind
            if value not in self.producers:
                raise UnsupportedKernel("linalg.generic", "a row value read through a map "
                                        f"other than the identity ({affine_map})")
        if value in self.producers:
            return self.recompute(value, affine_map, indices, kind)
        if not isinstance(value.type, ir.ShapedType):
            # An integer of main's (a symbolic size, `x * x.shape[0]` under dynamic=True):
            # the kernel takes it as a size parameter, which the host computes.
            try:
                return str(self.size(sizes.index_root(value))), "scalar"
            except sizes.UnknownSize:
                raise UnsupportedKernel("linalg.generic",
                                        f"a scalar argument of type {value.type}") from None
        tile = self.slices.get(value) or Slice(value, [ZERO] * len(affine_map.results))
        if is_empty(tile.base):
            raise UnsupportedKernel("linalg.generic", "a read of an uninitialized tensor")
        filled = fill_constant(tile.base)
        if filled is not None:
            return filled, f"literal:{element_name(tile.base)}"
        point = through_map(affine_map, indices)
        kind = "row" if not all(map(is_position, point)) else "scalar"
        padding = padded_reads.padding_of(tile.base)
        if padding is None:
            pointer = self.input_pointer(tile.base)
            offset = address(strides(pointer, len(point)), tile.offsets, point)
            load = f"tl.load({pointer} + {text(offset)}{self.access_mask(kind)})"
        else:
            load = self.padded_load(padding, tile.offsets, point, kind)
        load = self.held(load, tile.base)
        if load not in self.loads:  # one load per address, however many generics read it
            self.loads[load] = self.fresh()
            self.emit(f"{self.loads[load]} = {load}")
        return self.loads[load], kind

    def padded_load(self, padding: padded_reads.Padding, offsets: list[Index],
                    point: list[Index], kind: str) -> str:
        """The load of a padded tensor's point from its source (padded_reads.py): the
        point less the low padding, the pad value outside the source's bounds."""
        pointer = self.input_pointer(padding.source)
        at = [offset + index - low for offset, index, low in zip(offsets, point, padding.low)]
        shape = ir.ShapedType(padding.source.type).shape
        inside = [f"({text(index)} >= 0) & ({text(index)} < {size})"
                  for index, size, low, high in zip(at, shape, padding.low, padding.high)
                  if low or high]
        lanes = ["mask"] if kind == "row" else ["row_mask"] if self.partial_rows else []
        mask = " & ".join(lanes + inside)
        offset = address(strides(pointer, len(at)), [ZERO] * len(at), at)
        return f"tl.load({pointer} + {text(offset)}" + (
            f", mask={mask}, other={padding.value})" if mask else ")")

    def in_row_order(self, value: ir.Value, affine_map: ir.AffineMap, indices: list[Index],
                     window: frozenset[int]) -> bool:
        """Whether `affine_map` reads the row value `value` lane for lane: its results
        at `value`'s dims of size > 1 are the reader's dims that `r` spans, in order
        (a dim of size 1 holds one point, however it is indexed), in the order the row
        walks them (`walk_dims`: the reader's result's). A causal mask's row loop reads
        a [6] arange as (d0, d1) -> (d1) of its [1, 6] tile."""
        row_dims = self.walk_dims if self.walk_dims is not None else [
            d for d, index in enumerate(indices) if index != 0 and d not in window]
        return [position for position, size in zip(ir.dim_positions(affine_map),
                                                   self.shape(value)) if size != 1] == row_dims

    # ----------------------------------------------------------------- ops

    def elementwise(self, op: ir.Operation) -> None:
        """An element-wise generic, at the row's points where its iteration space is the
        row's; else only noted, for its readers to compute at their points."""
        domain = self.domain(op)
        maps = ir.indexing_maps(op)
        n_inputs = len(op.operands) - len(op.results)
        self.walk_dims = None
        if self.tile_indices is not None:
            indices, kind = self.tile_indices, "row"
        else:
            # The row walks the result: loops that permute its dims read through them.
            if any(m != maps[n_inputs] for m in maps[n_inputs + 1:]):
                raise UnsupportedKernel("linalg.generic", "results written through different maps")
            self.producers.update((result, op) for result in op.results)
            positions = ir.dim_positions(maps[n_inputs])
            if None not in positions and not self.spans_row([domain[p] for p in positions]):
                return  # computed at its readers' points (recompute)
            indices, kind = self.result_indices(domain, maps[n_inputs])
        for result, (expression, value_kind) in zip(op.results,
                                                    self.evaluate(op, indices, kind)):
            if value_kind.startswith("literal"):
                # A fill: readers take the constant itself, through any map, and type it
                # where Triton needs a value (a register holds only Triton values).
                self.literals[result] = (expression, value_kind)
                continue
            if kind == "row" and value_kind == "scalar":
                widened = self.fresh()
                dtype = HELD_DTYPES[element_name(result)]
                if self.row_tile is None:
                    self.emit(f"{widened} = tl.full({self.tile}, {expression}, {dtype})")
                else:  # a column of the tile's rows (tl.full takes one value)
                    self.emit(f"{widened} = tl.broadcast_to(({expression}).to({dtype}), "
                              f"[{self.row_tile.rows}, BLOCK])")
                expression = widened
            self.registers[result] = (expression, kind)
            self.points[result] = through_map(maps[n_inputs], indices)

    def evaluate(self, op: ir.Operation, indices: list[Index], kind: str) -> list[tuple[str, str]]:
        """The (expression, kind) of each result of the element-wise generic `op` at
        the loop `indices`."""
        maps = ir.indexing_maps(op)
        block = op.regions[0].blocks[0]
        body_ops = [o.operation for o in block.operations]
        used = {v for body_op in body_ops for v in body_op.operands}
        names: dict = {LOOP_INDICES: (indices, kind), BODY_OPS: set(body_ops),
                       LOAD_GUARDS: load_guards(body_ops)}
        for argument, operand, affine_map in zip(block.arguments, op.operands, maps):
            if argument in used:
                names[argument] = self.read(operand, affine_map, indices, kind)
        for body_op in body_ops[:-1]:
            if not (body_op.results and all(result in names for result in body_op.results)):
                self.body_op(body_op, names)  # else written already, for a load's mask
        return [self.value(value, names) for value in body_ops[-1].operands]

    def recompute(self, value: ir.Value, affine_map: ir.AffineMap, indices: list[Index],
                  kind: str) -> tuple[str, str]:
        """`value`, a result of the element-wise generic that `producers` holds for it,
        computed at the point a reader reads it: through `affine_map` at the reader's
        loop `indices`. The producer's loop indices are that point's coordinates, each
        at the loop dim the producer's output map writes it from."""
        producer = self.producers[value]
        n_inputs = len(producer.operands) - len(producer.results)
        point = through_map(affine_map, indices)
        loops = [ZERO] * len(loop_ranges(producer))
        for position, index in zip(ir.dim_positions(ir.indexing_maps(producer)[n_inputs]),
                                   point):
            if position is not None:  # else a constant index of the result (an [N, 1] column)
                loops[position] = index
        key = (value, tuple(loops))
        if key not in self.recomputed:
            at = "row" if kind == "row" and not all(map(is_position, loops)) else "scalar"
            self.recomputing += 1
            try:
                results = self.evaluate(producer, loops, at)
            finally:
                self.recomputing -= 1
            self.recomputed.update(((result, tuple(loops)), computed)
                                   for result, computed in zip(producer.results, results))
        return self.recomputed[key]

    def value(self, value: ir.Value, names: dict) -> tuple[str, str]:
        if value in names:
            return names[value]
        if value in self.literals:
            return self.literals[value]
        if value in self.registers:
            return self.registers[value]
        if value in self.program_ids:
            return text(self.program_ids[value]), "scalar"  # a row loop's index (positions)
        if not isinstance(value.type, ir.ShapedType):
            # An integer of main's, as a size (a sequence length that masks compare to):
            # the kernel takes it as a size parameter.
            try:
                return str(self.size(sizes.index_root(value))), "scalar"
            except sizes.UnknownSize:
                pass
        raise UnsupportedKernel("linalg.generic", "a body value defined outside the kernel")

    def body_op(self, op: ir.Operation, names: dict) -> None:
        name = op.name
        if name == "arith.constant":
            names[op.results[0]] = (scalar_literal(op.attributes["value"]),
                                    f"literal:{element_name(op.results[0])}")
            return
        if name == "linalg.index":
            indices, kind = names[LOOP_INDICES]
            index = indices[ir.IntegerAttr(op.attributes["dim"]).value]
            names[op.results[0]] = (text(index), "literal:i64" if is_position(index) else kind)
            return
        if name == "tensor.extract":
            names[op.results[0]] = self.gather(op, names)
            return
        if name == "cf.assert":
            # torch-mlir's runtime checks; Triton compiles them in under TRITON_DEBUG=1.
            condition, _ = self.value(op.operands[0], names)
            message = ir.StringAttr(op.attributes["msg"]).value.replace('"', "'")
            self.emit(f'tl.device_assert({condition}, "{message}")')
            return
        operands = [self.value(v, names) for v in op.operands]
        kind = "row" if any(k == "row" for _, k in operands) else "scalar"
        args = [expression for expression, _ in operands]
        if name in CASTS and operands[0][1].startswith("literal"):
            names[op.results[0]] = (cast_literal(args[0], element_name(op.results[0])),
                                    f"literal:{element_name(op.results[0])}")
            return
        typed = [as_value(o) for o in operands]
        if all(k.startswith("literal") for _, k in operands):
            args = typed  # else Python computes on them, in its own types and semantics
        expression = op_table.expression(op, typed, args)
        variable = self.fresh()
        self.emit(f"{variable} = {expression}")
        names[op.results[0]] = (variable, kind)

    def gather(self, op: ir.Operation, names: dict) -> tuple[str, str]:
        """tensor.extract from a tensor of `main` at computed indices (max pooling's
        indices compare each input with the window's maximum): a load through the
        tensor's strides."""
        pointer = self.input_pointer(op.operands[0])
        positions = [self.value(v, names) for v in op.operands[1:]]
        kind = "row" if any(k == "row" for _, k in positions) else "scalar"
        offset = address(strides(pointer, len(positions)), [ZERO] * len(positions),
                         [named(p) for p, _ in positions])
        mask = "mask"
        for condition, side in sorted(names.get(LOAD_GUARDS, {}).get(op, ()), key=str):
            expression, condition_kind = self.written(condition, names)
            if condition_kind == "row":
                mask += f" & {expression}" if side else f" & ~({expression})"
            else:
                # Triton's interpreter types a 0-d comparison (a condition on the row)
                # as its operands' integer type: `mask & it` would be an integer mask,
                # which its loads reject.
                mask = f"tl.where({expression}, {mask}, False)" if side else \
                    f"tl.where({expression}, False, {mask})"
        load = f"tl.load({pointer} + {text(offset)}{self.access_mask(kind, mask)})"
        variable = self.fresh()
        self.emit(f"{variable} = {self.held(load, op.operands[0])}")
        return variable, kind

    def written(self, value: ir.Value, names: dict) -> tuple[str, str]:
        """`value`, writing first the body ops it needs that come later in the body (a
        select's condition, which masks a load before it)."""
        owner = ir.operation_of(value.owner)
        if value not in names and owner in names.get(BODY_OPS, ()):
            # A gather's tensor is a pointer of the kernel's, not a value to write: only
            # its indices are (a condition that compares a gathered element: the index
            # of a max pooling's maximum, in its backward).
            operands = owner.operands[1:] if owner.name == "tensor.extract" else owner.operands
            for operand in operands:
                self.written(operand, names)
            self.body_op(owner, names)
        return self.value(value, names)

    def held(self, load: str, tensor: ir.Value) -> str:
        """A load of `tensor`'s elements, converted to the type they are held in (f32
        for f16/bf16, and for a narrowed input, its type in the IR)."""
        element = element_name(tensor)
        if tensor in self.narrowed or element in HALF:
            return f"{load}.to({HELD_DTYPES[element]})"
        return load


def output_positions(generic: ir.Operation) -> list[int] | None:
    """The loop dim of each result dim of `generic`'s first output, or None where its
    output map is not a projected permutation."""
    maps = ir.indexing_maps(generic)
    positions = ir.dim_positions(maps[len(generic.operands) - len(generic.results)])
    return None if None in positions else positions



def loop_extent(generic: ir.Operation, dim: int) -> sizes.Extent:
    """The extent of loop `dim` of `generic`, from an operand that it indexes plainly."""
    for operand, affine_map in zip(generic.operands, ir.indexing_maps(generic)):
        for position, expr in enumerate(affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and expr.position == dim:
                return sizes.extent(operand, position)
    raise sizes.UnknownSize(f"loop dim {dim} indexes no operand plainly")



def fill_constant(value: ir.Value) -> str | None:
    """The literal a tensor holds everywhere when a kernel of its own only fills it with
    a constant (reduction and gemm inits), else None: readers use the literal instead."""
    generic = sole_generic(ir.operation_of(value.owner))
    if generic is None or len(generic.operands) != 1:
        return None
    generic_body = [op.operation for op in generic.regions[0].blocks[0].operations]
    if len(generic_body) != 1:
        return None  # computes its values (arange's body reads linalg.index)
    source = ir.operation_of(generic_body[0].operands[0].owner)
    if source is None or source.name != "arith.constant":
        return None
    return scalar_literal(source.attributes["value"])


def is_empty(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "tensor.empty"



def launch_parameters(writer: KernelWriter) -> list[str]:
    """The parameters a launch passes, in order: pointers to the tensors read and
    written, their strides, the size parameters (not the constexpr block sizes). The
    strides are constants where the sizes are static (KernelLauncher takes them from
    the first launch), so a launch passes the tensors alone there."""
    parameters = [f"in{i}" for i in range(len(writer.inputs))]
    parameters += [f"out{i}" for i in range(len(writer.results))]
    for index, value in enumerate(writer.inputs):
        parameters += [f"in{index}_stride{d}" for d in range(rank(value))]
    for index, result in enumerate(writer.results):
        parameters += [f"out{index}_stride{d}" for d in range(len(result.shape))]
    parameters += [f"size{index}" for index in range(len(writer.size_roots))]
    return parameters


def declared(parameters: list[str], static: bool) -> list[str]:
    """`parameters` as a signature declares them: strides constexpr where sizes are static."""
    return [f"{name}: tl.constexpr" if static and "_stride" in name else name
            for name in parameters]


def function_source(writer: KernelWriter) -> str:
    parameters = (["program"] if writer.member else []) + \
        declared(launch_parameters(writer), not writer.size_roots)
    parameters += [f"{name}: tl.constexpr" for name in writer.constants]
    lines = ["@triton.jit", f"def {writer.name}({', '.join(parameters)}):"]
    lines += [f"    {line}" for line in writer.lines]
    return "\n".join(lines) + "\n"

"""Row kernels: an scf.forall with one program per row, whose body works on 1 x row
tiles (element-wise generics, reductions of the whole row to one value, and a
parallel_insert_slice per result). A row that fits one block stays in registers, so a
reduction's prologue, the reduction and its epilogue are one pass over memory; a longer
(or dynamic) row is walked in chunks of BLOCK, one loop per run of reductions that read
none of each other (the first also storing the outputs that read no reduction), then one
that computes and stores the other outputs (none where they are the reductions alone).
"""

from __future__ import annotations

import math

import sympy

from tessel import ir
from tessel.targets.triton import online_softmax, sizes
from tessel.targets.triton.indexing import (
    Extent,
    FloorDiv,
    Index,
    Modulo,
    from_affine,
    points,
    symbol,
    text,
)
from tessel.targets.triton.reductions import ReductionWriter, row_reductions
from tessel.targets.triton.row_tiles import row_tile
from tessel.targets.triton.stores import store
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import Slice, rank


def row_kernel(writer: ReductionWriter, forall: ir.Operation,
               body: list[ir.Operation]) -> tuple[Extent, ...]:
    """The kernel of a row loop; returns its grid (one program per row)."""
    if any(op != forall and op.name != "tkern.yield" for op in body):
        raise UnsupportedKernel("tkern.kernel", "a row loop next to other ops")
    bounds = _row_bounds(writer, forall)
    block = forall.regions[0].blocks[0]
    n_ivs = len(bounds)
    row_indices = list(block.arguments)[:n_ivs]
    shared = list(block.arguments)[n_ivs:]
    inits = list(forall.operands)[len(forall.operands) - len(shared):]
    destinations = dict(zip(shared, inits))
    # A loop of one row (whole-reductions-as-rows): canonicalize folds its slices of
    # whole tensors away, and its ops read the shared outputs themselves, as a tile at 0.
    for argument, init in destinations.items():
        writer.slices[argument] = Slice(init, [sympy.Integer(0)] * rank(init))
    ops = [op.operation for op in block.operations]
    terminator = ops[-1]
    tiles = [op for op in ops[:-1] if op.name == "linalg.generic"]
    if not tiles:
        raise UnsupportedKernel("scf.forall", "a row loop without linalg.generic ops")
    # The widest reduction of whole rows sets the row, else the widest tile (a dynamic
    # one is the widest). Wider element-wise tiles (a layer norm over channels that a
    # mean over tokens reads, window by window) are computed at their readers' points.
    extents = [writer.row_extent(op) for op in row_reductions(tiles) or tiles]
    writer.row_shape = max(extents, key=lambda extent: (not sizes.is_static(extent),
                                                        math.prod(e for e in extent
                                                                  if isinstance(e, int))))
    size = points(writer.row_shape)
    inserts = [o.operation for o in terminator.regions[0].blocks[0].operations]
    if any(insert.name != "tensor.parallel_insert_slice" for insert in inserts):
        raise UnsupportedKernel("scf.forall.in_parallel", "an op other than an insert")
    # Output buffers in the order of the loop's results (the host binds them so), not
    # in the order the terminator happens to insert them.
    position = {argument: index for index, argument in enumerate(shared)}
    inserts.sort(key=lambda insert: position[insert.operands[1]])
    if [position[insert.operands[1]] for insert in inserts] != list(range(len(shared))):
        raise UnsupportedKernel("scf.forall", "a loop result written by no insert, or by two")
    writer.row_tile = row_tile(ops[:-1] + inserts, row_indices, bounds, writer.block, size,
                               row_reductions(tiles), writer.innermost)
    if writer.row_tile is not None:
        writer.block = writer.row_tile.block
    programs = _program_rows(writer, row_indices, bounds)
    if not isinstance(size, int) or size > writer.block:
        # A looped row: a pass over the row per run of reductions that read none of
        # each other, each recomputing what feeds it chunk by chunk (the first storing
        # the outputs that read no reduction), then a pass that computes and stores
        # the other outputs.
        early = _reading_no_reduction(ops[:-1], inserts, row_reductions(tiles))
        reduction_passes(writer, ops[:-1], destinations, size, row_reductions(tiles), early)
        late = [insert for insert in inserts if insert not in early]
        if all(writer.registers.get(insert.operands[0], ("", ""))[1] == "scalar"
               for insert in late):
            _store_rows(writer, late, destinations)  # the rows' reductions alone
        else:
            _looped_pass(writer, ops[:-1], destinations, size, (), late)
        return (programs,)
    _lanes(writer, "0", size)
    _row_ops(writer, ops[:-1], destinations, None)
    _store_rows(writer, inserts, destinations)
    return (programs,)


def _program_rows(writer: ReductionWriter, row_indices: list[ir.Value], bounds: list) -> Extent:
    """The row loop's indices of a program's row (or rows: a column of its tile of
    rows, row_tiles.py), written into the kernel; returns the number of programs, on
    a 1-D grid (its other axes stop at 65535 programs)."""
    tile = writer.row_tile
    rows = points(bounds)
    order = tile.order if tile is not None else tuple(range(len(bounds)))
    if tile is None:
        writer.emit("row = tl.program_id(0)")
    else:
        writer.emit(f"row = tl.program_id(0) * {tile.rows} + tl.arange(0, {tile.rows})[:, None]")
        if rows % tile.rows:
            writer.partial_rows = True
            writer.emit(f"row_mask = row < {rows}")
    row = symbol("row")
    for position, axis in enumerate(order):
        # The rows in `order` (row-major, unless a tile of rows follows memory across
        # them); the first axis's index needs no modulo.
        index = FloorDiv(row, points([bounds[a] for a in order[position + 1:]]))
        writer.program_ids[row_indices[axis]] = symbol(f"row{axis}")
        writer.emit(f"row{axis} = {text(Modulo(index, bounds[axis]) if position else index)}")
    if tile is None:
        return rows
    return -(-rows // tile.rows)


def _row_bounds(writer: ReductionWriter, forall: ir.Operation) -> list[int | sympy.Symbol]:
    """The row loop's upper bounds (its lower bounds are 0 and steps 1)."""
    lower, upper, step = ir.mixed_values(
        forall, ("staticLowerBound", "staticUpperBound", "staticStep"), 0)
    for attribute, bounds, start in (("lower bound", lower, 0), ("step", step, 1)):
        if any(b != start for b in bounds):
            raise UnsupportedKernel("scf.forall", f"a row loop whose {attribute} is not {start}")
    return [bound if isinstance(bound, int) else writer.size(sizes.index_root(bound))
            for bound in upper]


def reduction_passes(writer: ReductionWriter, ops: list[ir.Operation], destinations: dict,
                     size: Extent, reductions: list[ir.Operation],
                     inserts: list[ir.Operation] = ()) -> None:
    """The chunk loops of a looped row's (or whole tensor's) reductions, in order: one
    for reductions that read none of each other (a batch norm's backward sums of the
    gradient and of its product with the centred image), as one pass over the row;
    a sum that an online softmax pairs with the max before it accumulates in that
    max's loop. The first loop also stores `inserts`, outputs that read none of the
    reductions (the ReLU-masked gradient whose sums the loop takes), so that no later
    loop reads their inputs again."""
    writer.running_maxima = online_softmax.running_maxima(reductions)
    maxima = set(writer.running_maxima.values())
    for number, group in enumerate(_independent_groups(
            ops, [r for r in reductions if r not in maxima], alone=set(writer.running_maxima))):
        _looped_pass(writer, ops, destinations, size, group, [] if number else list(inserts))


def _producers(ops: list[ir.Operation]) -> dict[ir.Value, ir.Operation]:
    return {result: op for op in ops for result in op.results}


def _reductions_read(ops: list[ir.Operation], reductions: list[ir.Operation]
                     ) -> dict[ir.Operation, set[ir.Operation]]:
    """For each of `ops`, the `reductions` whose values it reads, directly or not."""
    reads_of: dict[ir.Operation, set[ir.Operation]] = {}
    producer = _producers(ops)
    for op in ops:
        reads_of[op] = set()
        for operand in ir.values_read_from_above(op) + list(op.operands):
            source = producer.get(operand)
            if source is not None:
                reads_of[op] |= reads_of[source] | ({source} if source in reductions else set())
    return reads_of


def _reading_no_reduction(ops: list[ir.Operation], inserts: list[ir.Operation],
                          reductions: list[ir.Operation]) -> list[ir.Operation]:
    """The `inserts` of tiles that a generic computes from none of `reductions`."""
    reads_of = _reductions_read(ops, reductions)
    producer = _producers(ops)
    found = []
    for insert in inserts:
        source = producer.get(insert.operands[0])
        if source is not None and source.name == "linalg.generic" and \
                source not in reductions and not reads_of[source]:
            found.append(insert)
    return found


def _needed_by(ops: list[ir.Operation], values: list[ir.Value]) -> set[ir.Operation]:
    """The `ops` that compute `values`, directly or not."""
    producer = _producers(ops)
    needed, pending = set(), list(values)
    while pending:
        op = producer.get(pending.pop())
        if op is not None and op not in needed:
            needed.add(op)
            pending += ir.values_read_from_above(op) + list(op.operands)
    return needed


def _independent_groups(ops: list[ir.Operation], reductions: list[ir.Operation],
                        alone: set[ir.Operation]) -> list[tuple[ir.Operation, ...]]:
    """`reductions` in runs, in order, such that no op from a run's first reduction to
    its last reads a value of the run's reductions: each run accumulates in one loop.
    Those `alone` (a sum with its running max) keep a loop to themselves."""
    reads_of = _reductions_read(ops, reductions)
    groups: list[list[ir.Operation]] = []
    for reduction in reductions:
        group = groups[-1] if groups else None
        if group is not None and reduction not in alone and not alone & set(group) and all(
                not reads_of[op] & set(group)
                for op in ops[ops.index(group[0]):ops.index(reduction) + 1]):
            group.append(reduction)
        else:
            groups.append([reduction])
    return [tuple(group) for group in groups]


def _looped_pass(writer: ReductionWriter, ops: list[ir.Operation], destinations: dict,
                 size: Extent, reductions: tuple[ir.Operation, ...],
                 inserts: list[ir.Operation]) -> None:
    """One loop over a row in chunks of BLOCK: the ops up to the last of `reductions`,
    which it accumulates and reduces after the loop (each with its running max, if it
    has one), or (none) all of them; and the stores of `inserts`, with the ops after
    the last reduction that they need."""
    # Loads, recomputed values and row values of an earlier chunk loop are out of scope.
    writer.loads.clear()
    writer.recomputed.clear()
    writer.registers = {v: e for v, e in writer.registers.items() if e[1] == "scalar"}
    maxima = [writer.running_maxima[r] for r in reductions if r in writer.running_maxima]
    writer.accumulating = (*maxima, *reductions)
    known = set(writer.registers)
    with writer.section() as loop:
        _lanes(writer, "start", size)
        _row_ops(writer, ops, destinations, reductions[-1] if reductions else None)
        if reductions and inserts:
            needed = _needed_by(ops, [insert.operands[0] for insert in inserts])
            after = ops[ops.index(reductions[-1]) + 1:]
            _row_ops(writer, [op for op in after if op in needed], destinations, None)
        _store_rows(writer, inserts, destinations)
    writer.accumulating = ()
    for accumulator, initial in writer.accumulators.values():
        writer.emit(f"{accumulator} = {initial}")
    writer.emit(f"for start in range(0, {text(size)}, BLOCK):")
    writer.place(loop)
    if not reductions:
        return
    writer.loads.clear()
    writer.recomputed.clear()
    for reduction in reductions:
        accumulator, _ = writer.accumulators.pop(reduction)
        maximum = writer.running_maxima.get(reduction)
        if maximum is not None:  # each lane's sum, rescaled to the row's max
            lanes, _ = writer.running.pop(maximum.results[0])
            writer.finish_reduction(maximum, lanes)
            row_max, _ = writer.registers[maximum.results[0]]
            rescaled = writer.fresh()
            writer.emit(f"{rescaled} = {accumulator} * {online_softmax.rescale(lanes, row_max)}")
            accumulator = rescaled
        writer.finish_reduction(reduction, accumulator)
    writer.accumulators.clear()
    # Of what this pass computed, later passes see only its reductions: a value of one
    # point (a generic of one point, marked scalar) is a variable of the chunk loop, and
    # one computed from the lanes' running max is not the row's. They recompute them.
    finished = {result for op in (*maxima, *reductions) for result in op.results}
    writer.registers = {value: register for value, register in writer.registers.items()
                        if value in known or value in finished}


def _lanes(writer: ReductionWriter, start: str, size: Extent) -> None:
    """`r`, the row's points that a program's lanes hold from `start`, and their mask:
    along axis 1 of a tile of rows, whose rows lie along axis 0."""
    lanes = "tl.arange(0, BLOCK)" + ("" if writer.row_tile is None else "[None, :]")
    writer.emit(f"r = {lanes}" if start == "0" else f"r = {start} + {lanes}")
    writer.emit(f"mask = (r < {text(size)}) & row_mask" if writer.partial_rows
                else f"mask = r < {text(size)}")


def _row_ops(writer: ReductionWriter, ops: list[ir.Operation], destinations: dict,
             last: ir.Operation | None) -> None:
    """The ops of a row loop's body, up to `last` (None: all of them)."""
    for op in ops:
        if op.name == "affine.apply":
            # A producer's tile offset (a strided consumer reads rows * stride).
            rows = [writer.program_ids.get(v) for v in op.operands]
            if None in rows:
                raise UnsupportedKernel(op.name, "an offset that is not a row index")
            (expr,) = ir.AffineMapAttr(op.attributes["map"]).value.results
            writer.program_ids[op.results[0]] = from_affine(expr, rows)
        elif op.name == "tensor.extract_slice":
            _slice(writer, op, destinations)
        elif op.name == "linalg.generic":
            writer.generic(op)
        else:
            raise UnsupportedKernel(op.name, "in a row loop")
        if last is not None and op == last:
            return


def _store_rows(writer: ReductionWriter, inserts: list[ir.Operation], destinations: dict) -> None:
    """Store each insert's tile as the output of its loop result (the host binds the
    buffers in that order), whichever loop stores it."""
    shared = list(destinations)
    for insert in inserts:
        offsets = _offsets(writer, insert, first_dynamic=2)
        store(writer, insert.operands[0], offsets, destinations[insert.operands[1]],
              shared.index(insert.operands[1]))


def _offsets(writer: ReductionWriter, op: ir.Operation, first_dynamic: int) -> list[Index]:
    """The offsets of an extract_slice / parallel_insert_slice: literals, or row
    indices; its strides must be 1."""
    offsets, _, strides = ir.mixed_values(
        op, ("static_offsets", "static_sizes", "static_strides"), first_dynamic)
    if any(s != 1 for s in strides):
        raise UnsupportedKernel(op.name, "strided slices are not supported yet")
    if any(not isinstance(o, int) and o not in writer.program_ids for o in offsets):
        raise UnsupportedKernel(op.name, "an offset that is not a row index")
    return [sympy.Integer(o) if isinstance(o, int) else writer.program_ids[o] for o in offsets]


def _slice(writer: ReductionWriter, op: ir.Operation, destinations: dict) -> None:
    source = op.operands[0]
    if rank(source) != rank(op.results[0]):
        raise UnsupportedKernel(op.name, "rank-reducing slices are not supported yet")
    offsets = _offsets(writer, op, first_dynamic=1)
    if source in destinations:
        source = destinations[source]  # a tile of an output: its initial contents
    elif source in writer.slices or source in writer.registers:
        raise UnsupportedKernel(op.name, "a slice of a tile")
    writer.slices[op.results[0]] = Slice(source, offsets)

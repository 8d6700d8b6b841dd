from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register
from tessel.passes.transform_script import apply_to_marked, apply_transform_script, match_marked

_FIRST, _SECOND = "tessel.sibling_first", "tessel.sibling_second"
_TILE = "tessel.sibling_tile"  # on a read of the first loop's tile: which result
_SLICE_ATTRIBUTES = ("static_offsets", "static_sizes", "static_strides")


@register
@dataclass(frozen=True)
class FuseSiblingReductionsPass(ModulePass):
    """fuse-sibling-reductions: two tiled reductions over the same rows become one loop
    (transform.loop.fuse_sibling) when they read the same tensor, or when the second
    reads the tile of a result that the first writes: one kernel then reads the rows
    once for both. So does an epilogue, an element-wise op over a loop's rows that
    reads that loop's results per row, tiled by rows first (a batch norm's mean,
    variance, inverse deviation and running statistics, from its sums per channel:
    each was a kernel of its own, four launches and five buffers of a training batch
    norm's forward where Inductor has two).

    A batch norm's backward sums the gradient, and the gradient times x - mean, per
    channel: two reductions over the same image, each its own kernel (and, split, two
    partial and two combining kernels), each reading the gradient image. Where a ReLU's
    backward comes first, the first loop also writes the masked gradient (a convolution's
    backward reads it) and the second read it back. Inductor reduces both in one.
    Loops fuse when, tiled by fuse-tiles, they are scf.forall ops of `main` with the
    same static bounds, each reducing rows of the same shape; the second reads nothing
    the first computes but those tiles, where the first wrote them; the ops between
    them that read the first's results run after the fused loop, and the second reads
    none of them.
    """

    name: ClassVar[str] = "fuse-sibling-reductions"

    def run(self, module: ir.Operation) -> None:
        with module.context:
            while (pair := _sibling_pair(module)) is not None or _tile_an_epilogue(module):
                if pair is None:
                    continue  # an epilogue tiled: its loop is the next pair's second
                first, second = pair
                first.attributes[_FIRST] = ir.UnitAttr.get()
                second.attributes[_SECOND] = ir.UnitAttr.get()
                # The first loop's body and results come first in the fused loop, which
                # takes the second's place.
                apply_transform_script(module, [
                    match_marked("%first", _FIRST), match_marked("%second", _SECOND),
                    "%fused = transform.loop.fuse_sibling %first into %second : "
                    "(!transform.any_op, !transform.any_op) -> !transform.any_op"])
                for op in ir.ops_where(module, lambda op: _FIRST in op.attributes
                                       or _SECOND in op.attributes):
                    for mark in (_FIRST, _SECOND):
                        if mark in op.attributes:
                            del op.attributes[mark]
                _forward_tiles(module)


def _row_signature(loop: ir.Operation) -> tuple | None:
    """The loop's bounds and the shapes of the rows its reductions read, where it is a
    tiled loop of `main` (an scf.forall): a reduction's, or with no rows, an epilogue's
    (_tile_an_epilogue's loop of element-wise ops over reductions' results)."""
    if loop.name != "scf.forall" or loop.parent.name != "func.func" \
            or len(loop.operands) != len(loop.results):  # a bound of dynamic size
        return None
    rows = []
    generics = list(ir.ops_where(loop, lambda op: op.name == "linalg.generic"))
    for op in generics:
        iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        if any("reduction" in i for i in iterators):
            rows.append(tuple(ir.ShapedType(op.operands[0].type).shape))
    if not rows and not all(ir.ShapedType(op.results[0].type).rank == 1 for op in generics):
        return None
    bounds = tuple(str(loop.attributes[name]) for name in
                   ("staticLowerBound", "staticUpperBound", "staticStep"))
    return bounds, frozenset(rows)


def _tensors_read(loop: ir.Operation) -> set:
    """The tensors the loop's body reads from `main` (not its destinations, constants,
    fills or empty tensors), each as the op that computes it (or the argument it is)."""
    destinations = set(loop.operands)
    read = set()
    for value in ir.values_read_from_above(loop):
        owner = ir.operation_of(value.owner)
        if value in destinations or not isinstance(value.type, ir.RankedTensorType):
            continue
        if owner is None:
            read.add(value)
        elif owner.name not in ("arith.constant", "tensor.empty", "linalg.fill") \
                and not _fills(owner):
            read.add(owner)
    return read


def _sibling_pair(module: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """The first (earlier loop, later loop) that fuse, once the later loop's reads of
    the earlier one's tiles read its shared outputs' initial values instead (marked
    with _TILE) and the ops between the two that read the earlier one moved below the
    later one; None where no two loops fuse."""
    for function in ir.defined_functions(module):
        ops = [op.operation for op in function.regions[0].blocks[0].operations]
        position = {op: index for index, op in enumerate(ops)}
        loops = [(op, signature) for op in ops if (signature := _row_signature(op)) is not None]
        for index, (first, signature) in enumerate(loops):
            shared = _tensors_read(first)
            if not signature[1]:
                continue  # an epilogue: it joins a reduction's loop, not the other way
            for second, other in loops[index + 1:]:
                epilogue = not other[1]
                if other[0] != signature[0] or (not epilogue and other[1] != signature[1]):
                    continue
                tiles = _tiles_read(first, second)
                if tiles is None or not (tiles or (shared & _tensors_read(second)
                                                   and not epilogue)):
                    continue
                below = _readers_of(first, ops[position[first] + 1:position[second]])
                if any(ir.operation_of(value.owner) in below
                       for value in ir.values_read_from_above(second)):
                    continue  # the second loop reads what the first's results compute
                for op in sorted(below, key=position.__getitem__, reverse=True):
                    op.move_after(second)
                for extract, result in tiles:
                    # Any value defined above the first loop: _forward_tiles replaces
                    # the read once the loops are one.
                    extract.operands[0] = first.operands[result]
                    extract.attributes[_TILE] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), result)
                return first, second
    return None


_EPILOGUE = "tessel.epilogue"


def _tile_an_epilogue(module: ir.Operation) -> bool:
    """Tile one epilogue by single rows, into a loop that fuses with the row loop whose
    results it reads; whether there was one. An epilogue is a one-dim element-wise
    generic of `main` that reads results of a loop of one row per iteration (each
    written at the iteration's index), and otherwise only values defined before that
    loop, all along its one dim (or 0-d): then nothing keeps the two loops apart. (A
    reduction that is no loop, a split reduction's combine reduced at each point, keeps
    its epilogues apart: made a loop for them, it left the combo kernel it had shared
    with its neighbours, in more launches than it saved.)"""
    for function in ir.defined_functions(module):
        ops = [op.operation for op in function.regions[0].blocks[0].operations]
        position = {op: index for index, op in enumerate(ops)}
        for op in ops:
            if _epilogue_loop(op, position) is not None:
                apply_to_marked(module, [op], _EPILOGUE, [
                    match_marked("%epilogue", _EPILOGUE),
                    "%tiled, %loop = transform.structured.tile_using_forall %epilogue "
                    "tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, "
                    "!transform.any_op)"])
                return True
    return False


def _epilogue_loop(op: ir.Operation, position: dict) -> ir.Operation | None:
    """The row loop whose results `op` reads as an epilogue (_tile_an_epilogue), or None."""
    if op.name != "linalg.generic" or len(op.results) != 1 or \
            [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])] != \
            ["#linalg.iterator_type<parallel>"] or \
            not ir.ShapedType(op.results[0].type).has_static_shape:
        return None
    inputs = list(op.operands)[:len(op.operands) - 1]
    loops = {ir.operation_of(v.owner) for v in inputs} & set(position)
    loops = [loop for loop in loops if (signature := _row_signature(loop)) and signature[1]]
    if len(loops) != 1:
        return None
    (loop,) = loops
    read = {value for value in inputs if value in list(loop.results)}
    if not _one_row_each(loop, read, ir.ShapedType(op.results[0].type).shape[0]):
        return None
    for value, indexing in zip(inputs, ir.indexing_maps(op)):
        owner = ir.operation_of(value.owner)
        rank = ir.ShapedType(value.type).rank if isinstance(value.type, ir.ShapedType) else 0
        if rank and str(indexing) != "(d0) -> (d0)":
            return None
        if owner is not None and owner != loop and owner in position and \
                position[owner] > position[loop]:
            return None
    return loop


def _one_row_each(loop: ir.Operation, read: set, rows: int) -> bool:
    """Whether `loop` runs `rows` iterations of one induction variable, each writing one
    element of each result in `read` (vectors), at the index of its iteration."""
    block = loop.regions[0].blocks[0]
    bounds = [list(ir.DenseI64ArrayAttr(loop.attributes[name])) for name in
              ("staticLowerBound", "staticUpperBound", "staticStep")]
    if len(block.arguments) - len(loop.results) != 1 or bounds != [[0], [rows], [1]]:
        return False
    inserts = _inserts(loop)
    for index, result in enumerate(loop.results):
        if result not in read:
            continue
        offsets, sizes, _ = ir.mixed_values(inserts[index], _SLICE_ATTRIBUTES, 2)
        if sizes != [1] or _tile_of(offsets[0], loop) != ["iv", 0]:
            return False
    return True


def _fills(op: ir.Operation) -> bool:
    """Whether `op` is a generic that reads nothing (a fill of a constant)."""
    return op.name == "linalg.generic" and len(op.operands) == len(op.results)


def _readers_of(loop: ir.Operation, ops: list[ir.Operation]) -> set[ir.Operation]:
    """The ops of `ops` (in order) that read `loop`'s results, or what those ops
    compute, in their operands or their bodies."""
    computed, readers = set(loop.results), set()
    for op in ops:
        if any(value in computed for value in ir.values_read_from_above(op)):
            readers.add(op)
            computed.update(op.results)
    return readers


def _inserts(loop: ir.Operation) -> dict[int, ir.Operation]:
    """The loop's tensor.parallel_insert_slice ops by the shared output they write."""
    block = loop.regions[0].blocks[0]
    first_output = len(block.arguments) - len(loop.results)
    terminator = block.operations[len(block.operations) - 1]
    outputs = {argument: index for index, argument in
               enumerate(list(block.arguments)[first_output:])}
    return {outputs[insert.operands[1]]: insert.operation
            for insert in terminator.regions[0].blocks[0].operations}


def _tile_of(value: ir.Value, loop: ir.Operation) -> list:
    """`value` as a position in `loop`'s tile: the index of the loop's induction
    variable it is, else the value itself (a constant offset is not a Value)."""
    block = loop.regions[0].blocks[0]
    for index, argument in enumerate(block.arguments):
        if value == argument:
            return ["iv", index]
    return [value]


def _same_slice(extract: ir.Operation, second: ir.Operation,
                insert: ir.Operation, first: ir.Operation) -> bool:
    """Whether `extract` (in the second loop) reads the slice that `insert` (in the
    first) writes, each loop's induction variables taken in the same order."""
    read = ir.mixed_values(extract, _SLICE_ATTRIBUTES, 1)
    written = ir.mixed_values(insert, _SLICE_ATTRIBUTES, 2)
    return all(
        (a == b) if isinstance(a, int) or isinstance(b, int)
        else _tile_of(a, second) == _tile_of(b, first)
        for read_list, written_list in zip(read, written)
        for a, b in zip(read_list, written_list, strict=True))


def _tiles_read(first: ir.Operation, second: ir.Operation) -> list | None:
    """The reads of the first loop's results in the second loop, as (the
    tensor.extract_slice, the result's index), where each is an extract_slice in its
    body of the tile the first loop writes, in the same iteration; else None. (A tile
    holds its rows' values whole: a reduction's too, which reduces within a row.)"""
    inserts = _inserts(first)
    tiles = []
    for index, result in enumerate(first.results):
        for use in result.uses:
            reader = ir.operation_of(use.owner)
            if not _nested_in(reader, second):
                continue
            insert = inserts.get(index)
            if reader.name != "tensor.extract_slice" or reader.parent != second \
                    or insert is None or not _written_in_the_loop(insert.operands[0]) \
                    or reader.results[0].type != insert.operands[0].type \
                    or not _same_slice(reader, second, insert, first):
                return None
            tiles.append((reader, index))
    return tiles


def _written_in_the_loop(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "linalg.generic"


def _nested_in(op: ir.Operation, ancestor: ir.Operation) -> bool:
    while op is not None and op.name != "func.func":
        if op == ancestor:
            return True
        op = op.parent
    return False


def _forward_tiles(module: ir.Operation) -> None:
    """Each marked read of a tile of the first loop's results, now in the fused loop
    whose first results are the first loop's, takes the value that the first loop's
    body writes there instead."""
    for extract in ir.ops_where(module, lambda op: _TILE in op.attributes):
        result = ir.IntegerAttr(extract.attributes[_TILE]).value
        extract.results[0].replace_all_uses_with(_inserts(extract.parent)[result].operands[0])
        extract.erase()

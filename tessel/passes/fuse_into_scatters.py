from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg, tensor

from tessel import ir
from tessel.passes.buffer_views import RESHAPES
from tessel.passes.form_kernels import UNWRAPPED_KERNEL, scatter_of, sole_generic
from tessel.passes.inline_gathered_producers import elementwise_producer
from tessel.passes.linalg_builders import selected_by_index
from tessel.passes.registry import ModulePass, register


def _read_once(value: ir.Value) -> bool:
    return sum(1 for _ in value.uses) == 1


def _column_inserts(indices: ir.Value) -> tuple[list[ir.Value], list[ir.Operation]] | None:
    """([N, 1] columns, inserts) where `indices` ([N, depth]) is a chain of
    tensor.insert_slice that writes every one of its columns, each insert read once:
    the value each column holds last, in column order, and the inserts, last first.
    None for any other value."""
    shape = ir.ShapedType(indices.type).shape
    if len(shape) != 2 or not ir.ShapedType(indices.type).has_static_shape:
        return None
    columns: dict[int, ir.Value] = {}
    inserts, value = [], indices
    owner = ir.operation_of(value.owner)
    while owner is not None and owner.name == "tensor.insert_slice" and _read_once(value):
        offsets, extent, steps = (list(ir.DenseI64ArrayAttr(owner.attributes[name]))
                                  for name in ("static_offsets", "static_sizes",
                                               "static_strides"))
        if offsets[0] != 0 or extent != [shape[0], 1] or steps != [1, 1] or \
                len(owner.operands) != 2:
            return None
        columns.setdefault(offsets[1], owner.operands[0])  # the last insert wins
        inserts.append(owner)
        value = owner.operands[1]
        owner = ir.operation_of(value.owner)
    if sorted(columns) != list(range(shape[1])) or \
            any(ir.RankedTensorType(column.type).rank not in (1, 2) for column in columns.values()):
        return None
    return [columns[column] for column in range(shape[1])], inserts


def _generic_result(value: ir.Value) -> tuple[ir.Operation, int] | None:
    """(generic, result number) of the linalg.generic that computes `value` of main as
    a kernel of its own (in a tkern.kernel, or unwrapped), else None."""
    owner = ir.operation_of(value.owner)
    if owner is not None and owner.name == "linalg.generic" and UNWRAPPED_KERNEL in owner.attributes:
        return owner, value.result_number
    generic = sole_generic(owner)
    if generic is None:
        return None
    yielded = owner.regions[0].blocks[0].operations[1].operands[value.result_number]
    return (generic, yielded.result_number) if ir.operation_of(yielded.owner) == generic else None


def _written_in_order(generic: ir.Operation, max_body: int) -> bool:
    """A generic of parallel loops with one result, written at its points in loop order
    (an identity output map), whose body of at most `max_body` ops holds no regions:
    the points of its result are then its loop indices."""
    maps = ir.indexing_maps(generic)
    body = [op.operation for op in generic.regions[0].blocks[0].operations]
    return len(generic.results) == 1 and ir.is_identity_map(maps[-1]) and \
        ir.all_parallel(generic) and len(body) <= max_body and not any(op.regions for op in body)


@register
@dataclass(frozen=True)
class FuseIntoScattersPass(ModulePass):
    """fuse-into-scatters: a scatter kernel computes its index rows and its updates
    itself where kernels of their own compute them, each one generic: a copy of the
    generic of the indices moves into every scatter kernel that reads them (where
    elementwise fusion would copy it: a small body, loads only at its points or
    gathered concatenations), and the generic of the updates moves in, with the
    reshapes between them, where the scatter is its only reader. A kernel left unread
    goes.

    torch-mlir scatters a static KV cache's new entries one element at a time: an
    [N, rank] index tensor, one row per element and one column per cache dim, built
    from iotas and the cache position, and the new keys (after their rotary embedding)
    reshaped to [N, 1, 1, 1, 1]. A decode step launched the kernel of the rows, the
    rotary embedding's, and per layer two scatters (K and V) that read the rows back;
    the scatter kernel now computes each row and each key where it stores them, as
    Inductor's cache update is one kernel from cache_position and the rotary embedding.
    Bodies of more than `max-body` ops stay kernels.
    """

    name: ClassVar[str] = "fuse-into-scatters"
    max_body: int = 48

    def run(self, module: ir.Operation) -> None:
        for kernel in ir.ops_where(module, lambda op: op.name == "tkern.kernel"):
            scatter = scatter_of(kernel)
            if scatter is not None:
                self._gather_index_columns(scatter)
                self._copy_indices(scatter)
                self._move_updates(scatter)

    def _gather_index_columns(self, scatter: ir.Operation) -> None:
        """Index rows inserted column by column into a tensor (torch-mlir's scatter_add,
        a gather's gradient: a column per dim, N = every element of the gradient)
        become a generic of the kernel that reads row i's column j from the column
        that j's insert wrote: the host neither fills the [N, depth] rows nor copies a
        column into them. The generic that computes the columns moves into the
        kernel too (with the updates, where it computes them) when this scatter is all
        that reads it: DeBERTa's relative attention, 8 x 12 x 512 x 512 rows 24 times
        a step, then reads no index from memory."""
        found = _column_inserts(scatter.operands[1])
        if found is None:
            return
        columns, inserts = found
        index_type = ir.RankedTensorType(scatter.operands[1].type)
        if any(ir.RankedTensorType(column.type).element_type != index_type.element_type
               for column in columns):
            return
        with ir.InsertionPoint(scatter), scatter.location:
            moved = self._moved_producer(scatter, columns, set(inserts))
            if moved is not None:
                columns = [moved.get(column, column) for column in columns]
                updates = moved.get(scatter.operands[0])
                if updates is not None:
                    scatter.operands[0] = updates
            scatter.operands[1] = _selected_columns(index_type, columns)
        base = ir.operation_of(inserts[-1].operands[1].owner)
        for insert in inserts:  # readers first
            insert.erase()
        producer = None if moved is None else ir.operation_of(next(iter(moved)).owner)
        for owner in (base, producer):
            if owner is not None and not any(any(True for _ in r.uses) for r in owner.results):
                owner.erase()

    def _moved_producer(self, scatter: ir.Operation, columns: list[ir.Value],
                        inserts: set) -> dict[ir.Value, ir.Value] | None:
        """A copy, made here, of the generic that computes all the `columns` where the
        scatter (its `inserts`, its updates) is all that reads it: its results in main
        -> the copy's. None where there is no such generic."""
        results = [_generic_result(column) for column in columns]
        if None in results or len({generic for generic, _ in results}) != 1:
            return None
        generic = results[0][0]
        owner = ir.operation_of(columns[0].owner)
        readers = {ir.operation_of(use.owner) for result in owner.results for use in result.uses}
        if not readers <= inserts | {scatter} or not _parallel_and_flat(generic, self.max_body):
            return None
        copy = generic.clone()
        if UNWRAPPED_KERNEL in copy.attributes:
            del copy.attributes[UNWRAPPED_KERNEL]
        return {result: copy.results[_generic_result(result)[1]] for result in owner.results}

    def _copy_indices(self, scatter: ir.Operation) -> None:
        producer = ir.operation_of(scatter.operands[1].owner)
        generic = sole_generic(producer)
        if generic is None or not elementwise_producer(generic, self.max_body):
            return
        with ir.InsertionPoint(scatter):
            scatter.operands[1] = generic.clone().results[0]
        if not any(True for _ in producer.results[0].uses):
            producer.erase()

    def _move_updates(self, scatter: ir.Operation) -> None:
        value, reshapes = scatter.operands[0], []
        owner = ir.operation_of(value.owner)
        while owner is not None and owner.name in RESHAPES and _read_once(value):
            reshapes.append(owner)
            value = owner.operands[0]
            owner = ir.operation_of(value.owner)
        generic = sole_generic(owner)
        if generic is None or not _read_once(value) or \
                not _written_in_order(generic, self.max_body):
            return
        with ir.InsertionPoint(scatter):
            value = generic.clone().results[0]
            for reshape in reversed(reshapes):
                copy = reshape.clone()
                copy.operands[0] = value
                value = copy.results[0]
        scatter.operands[0] = value
        for reshape in reshapes:  # readers first
            reshape.erase()
        owner.erase()


def _parallel_and_flat(generic: ir.Operation, max_body: int) -> bool:
    """A generic of parallel loops whose body of at most `max_body` ops holds no
    regions and reads none of its inits, each result written at loop dims (or 0): a
    kernel computes any of its results at a point from that point's loop indices."""
    maps = ir.indexing_maps(generic)
    n_inputs = len(generic.operands) - len(generic.results)
    block = generic.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    return ir.all_parallel(generic) and len(body) <= max_body and not any(op.regions for op in body) and \
        not any(any(True for _ in argument.uses) for argument in block.arguments[n_inputs:]) and \
        all(isinstance(e, ir.AffineDimExpr) or (isinstance(e, ir.AffineConstantExpr) and e.value == 0)
            for m in maps[n_inputs:] for e in m.results)


def _selected_columns(index_type: ir.RankedTensorType, columns: list[ir.Value]) -> ir.Value:
    """A generic over `index_type`'s [N, depth] points that yields, at (i, j), row i of
    column j (each an [N, 1] or [N] tensor)."""
    context = index_type.context
    row = [ir.AffineDimExpr.get(0, context)]
    column_maps = {1: ir.AffineMap.get(2, 0, row, context),  # a rank-reducing insert's
                   2: ir.AffineMap.get(2, 0, row + [ir.AffineConstantExpr.get(0, context)],
                                       context)}
    identity = ir.AffineMap.get_identity(2, context)
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    empty = tensor.EmptyOp(index_type.shape, index_type.element_type).result
    maps = [column_maps[ir.RankedTensorType(column.type).rank] for column in columns]
    generic = linalg.GenericOp(
        [index_type], columns, [empty],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps + [identity]]),
        ir.ArrayAttr.get([parallel] * 2)).operation
    element = index_type.element_type
    block = generic.regions[0].blocks.append(*[element] * (len(columns) + 1))
    with ir.InsertionPoint(block):
        column = linalg.IndexOp(1).result
        linalg.YieldOp([selected_by_index(column, list(block.arguments)[:len(columns)])])
    return generic.results[0]

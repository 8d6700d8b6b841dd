from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import tensor

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.registry import ModulePass, register
from tessel.passes.split_reductions import fits_one_program
from tessel.passes.tile_for_threads import loop_ranges


@register
@dataclass(frozen=True)
class WholeReductionsAsRowsPass(ModulePass):
    """whole-reductions-as-rows: a reduction of a whole tensor to one value that fits one
    GPU program, and the element-wise generics of its loop shape that compute its
    inputs or read its result, gain a leading unit dim: one row for fuse-tiles.

    linalg-fold-unit-extent-dims leaves a decode step's RMSNorm (hidden states of one
    token, [1, 1, H]) as an add of rank 1, a sum of squares to rank 0 and a normalize
    reading that scalar: rank 1, fuse-tiles leaves each alone, three kernels, where a
    prompt's [T, H] norm is one row kernel. With the unit row dim back (and every
    tensor between them expanded; canonicalize folds an expand of a collapse), they are
    a [1, H] row group, one kernel of one program, as Inductor's persistent reduction.
    Readers outside the set get the value collapsed back, just before them (fuse-tiles
    then writes the residual add from the row kernel too). A reduction split across
    programs (split-reductions: more values than one program reduces) is left alone.
    """

    name: ClassVar[str] = "whole-reductions-as-rows"

    def run(self, module: ir.Operation) -> None:
        with module.context:
            for function in ir.defined_functions(module):
                block = function.regions[0].blocks[0]
                lifted = _lifted_ops(block)
                if lifted:
                    _lift(block, lifted)


def _generic(op: ir.Operation) -> bool:
    return op.name == "linalg.generic" and not is_contraction(op)


def _iterators(op: ir.Operation) -> list[bool]:
    """Per loop dim: whether it is a reduction."""
    return ["reduction" in str(kind) for kind in op.attributes["iterator_types"]]


def _whole_reduction(op: ir.Operation) -> bool:
    """A generic reducing all its (static) loop dims to rank-0 results, few enough values
    for one program."""
    if not _generic(op) or not _iterators(op) or not all(_iterators(op)):
        return False
    ranges = loop_ranges(op)
    return None not in ranges and all(
        ir.RankedTensorType(r.type).rank == 0 for r in op.results) and \
        fits_one_program(math.prod(ranges))


def _elementwise_over(op: ir.Operation, ranges: list[int]) -> bool:
    """An all-parallel generic with these loop ranges, writing tensors of its rank."""
    return _generic(op) and not any(_iterators(op)) and loop_ranges(op) == ranges and all(
        ir.RankedTensorType(r.type).rank == len(ranges) for r in op.results)


def _lifted_ops(block: ir.Block) -> list[ir.Operation]:
    """The generics that gain a unit dim, in block order: each whole reduction, the
    element-wise generics of its loop shape that compute one of its inputs, and those
    that read its result (and their inputs computed so)."""
    ops = [op.operation for op in block.operations]
    chosen: set[ir.Operation] = set()
    for reduction in filter(_whole_reduction, ops):
        ranges = loop_ranges(reduction)
        readers = [reader for result in reduction.results for use in result.uses
                   if (reader := ir.operation_of(use.owner)) is not None
                   and reader.parent == reduction.parent and _elementwise_over(reader, ranges)]
        chosen |= {reduction, *readers}
        for op in [reduction, *readers]:
            inputs = list(op.operands)[:len(op.operands) - len(op.results)]
            chosen |= {producer for value in inputs
                       if (producer := ir.operation_of(value.owner)) is not None
                       and producer.parent == op.parent and _elementwise_over(producer, ranges)}
    return [op for op in ops if op in chosen]


def _reassociation(rank: int) -> ir.ArrayAttr:
    """A leading unit dim joined to the first dim of a tensor of `rank` (none: rank 0)."""
    return ir.reassociation_attr([[0, 1]] + [[d + 1] for d in range(1, rank)] if rank else [])


def _with_row(tensor: ir.RankedTensorType) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([1, *tensor.shape], tensor.element_type)


def _expanded(value: ir.Value) -> ir.Value:
    tensor = ir.RankedTensorType(value.type)
    shape = [1, *tensor.shape]
    return ir.Operation.create(
        "tensor.expand_shape", results=[_with_row(tensor)], operands=[value],
        attributes={"reassociation": _reassociation(tensor.rank),
                    "static_output_shape": ir.DenseI64ArrayAttr.get(shape)}).results[0]


def _with_row_of(value: ir.Value) -> ir.Value:
    """`value` with a leading unit dim: a new tensor.empty for an empty one (the host
    allocates those; a reshape of one it cannot), else its expand_shape."""
    owner = ir.operation_of(value.owner)
    if owner is not None and owner.name == "tensor.empty":
        tensor_type = _with_row(ir.RankedTensorType(value.type))
        return tensor.EmptyOp(tensor_type.shape, tensor_type.element_type).result
    return _expanded(value)


def _collapsed(value: ir.Value, tensor: ir.RankedTensorType) -> ir.Value:
    return ir.Operation.create(
        "tensor.collapse_shape", results=[tensor], operands=[value],
        attributes={"reassociation": _reassociation(tensor.rank)}).results[0]


def _move_reshape_to_its_readers(op: ir.Operation) -> None:
    """Move a reshape down to its first reader in its block: a result returned
    reshaped (the residual a decode piece hands on) is then read after the row loop,
    which can write it too (fuse-tiles takes in a producer read later only)."""
    if op.name not in ("tensor.expand_shape", "tensor.collapse_shape"):
        return
    readers = [ir.operation_of(use.owner) for use in op.results[0].uses]
    block = op.parent.operation
    if not readers or any(r is None or r.parent.operation != block for r in readers):
        return
    first = readers[0]
    for reader in readers[1:]:
        if reader.is_before_in_block(first):
            first = reader
    op.move_before(first)


def _lift(block: ir.Block, lifted: list[ir.Operation]) -> None:
    """Rebuild each of `lifted` (block order) with a leading unit loop dim; the others
    read their results collapsed back."""
    new_values: dict = {}  # an old result -> the lifted generic's result
    for op in lifted:
        maps = ir.indexing_maps(op)
        rank = maps[0].n_dims + 1
        shifted = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d + 1)
                                             for d in range(rank - 1)])
        row = ir.AffineDimExpr.get(0)
        operands, new_maps = [], []
        with op.location, ir.InsertionPoint(op):
            for operand, affine_map in zip(op.operands, maps):
                if not isinstance(operand.type, ir.RankedTensorType):
                    operands.append(operand)  # a scalar, read as it is
                    new_maps.append(ir.AffineMap.get(rank, 0, []))
                    continue
                operands.append(new_values[operand] if operand in new_values
                                else _with_row_of(operand))
                new_maps.append(ir.AffineMap.get(
                    rank, 0, [row, *[e.compose(shifted) for e in affine_map.results]]))
            iterators = [ir.Attribute.parse("#linalg.iterator_type<parallel>")] + list(
                ir.ArrayAttr(op.attributes["iterator_types"]))
            generic = ir.Operation.create(
                "linalg.generic",
                results=[_with_row(ir.RankedTensorType(r.type)) for r in op.results],
                operands=operands,
                attributes={"indexing_maps": ir.ArrayAttr.get(
                                [ir.AffineMapAttr.get(m) for m in new_maps]),
                            "iterator_types": ir.ArrayAttr.get(iterators),
                            "operandSegmentSizes": op.attributes["operandSegmentSizes"]},
                regions=1)
            old_block = op.regions[0].blocks[0]
            body = generic.regions[0].blocks.append(*[a.type for a in old_block.arguments])
        for old_argument, argument in zip(old_block.arguments, body.arguments):
            old_argument.replace_all_uses_with(argument)
        for inner in list(old_block.operations):
            if inner.operation.name == "linalg.index":  # loop dims moved one up
                dim = ir.IntegerAttr(inner.operation.attributes["dim"])
                inner.operation.attributes["dim"] = ir.IntegerAttr.get(dim.type, dim.value + 1)
            body.append(inner.operation)
        new_values.update(zip(op.results, generic.results))
    for op in reversed(lifted):
        for old in op.results:
            for use in list(old.uses):
                reader = ir.operation_of(use.owner)
                _move_reshape_to_its_readers(reader)
                with reader.location, ir.InsertionPoint(reader):
                    collapsed = _collapsed(new_values[old], ir.RankedTensorType(old.type))
                reader.operands[use.operand_number] = collapsed
        op.erase()

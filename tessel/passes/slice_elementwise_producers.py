from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg, tensor

from tessel import ir
from tessel.passes.fuse_returned_producers import clone_body, elementwise
from tessel.passes.inline_gathered_producers import static_slice
from tessel.passes.registry import ModulePass, register


def _static_slice(op: ir.Operation) -> bool:
    """A static slice (inline_gathered_producers.static_slice) of unit strides."""
    return static_slice(op) and \
        all(s == 1 for s in ir.DenseI64ArrayAttr(op.attributes["static_strides"]))


def _sliceable(producer: ir.Operation | None, reads_reductions) -> bool:
    """A linalg.generic of parallel loops with one result written at its points in loop
    order, each input read at loop dims or at 0 of a unit dim (a broadcast), computed
    from no reduction (`reads_reductions`): a slice of its result is its body over
    slices of its inputs and init."""
    if producer is None or not elementwise(producer) or len(producer.results) != 1:
        return False
    maps = ir.indexing_maps(producer)
    if not all(
            isinstance(e, ir.AffineDimExpr)
            or (isinstance(e, ir.AffineConstantExpr) and e.value == 0)
            for m in maps[:-1] for e in m.results):
        return False
    return not reads_reductions(producer) and not any(
        o.operation.name in ("linalg.index", "tensor.extract")
        for o in producer.regions[0].blocks[0].operations)


@register
@dataclass(frozen=True)
class SliceElementwiseProducersPass(ModulePass):
    """slice-elementwise-producers: a static slice of an element-wise generic's result
    becomes the generic's body over the same slice of its inputs (and init); a slice of
    a slice, one slice of the first source. Each slice is computed once, before its
    producer.

    var_mean's one-pass form (frontend/decompositions.py) shifts a batch norm's values
    by the first value of each channel, a slice of the f32 copy of the bf16 image.
    Sliced, that copy had to exist whole: a kernel wrote it, in f32, for the slice to
    read one value a channel. Computed on the slice instead, the copy has only the
    reductions to read it, which it fuses into. Chains that a reduction's result reaches
    stay whole (reads_reductions).
    """

    name: ClassVar[str] = "slice-elementwise-producers"

    def run(self, module: ir.Operation) -> None:
        worklist = ir.ops_where(module, _static_slice)
        # (producer, offsets, sizes) -> the generic computing that slice: each slice is
        # made once however many readers reach it (a norm's input is read by its mean,
        # its centred values and its output; copies per reader grew exponentially).
        made: dict[tuple, ir.Value] = {}
        computed_from_reductions: dict[ir.Operation, bool] = {}

        def reads_reductions(generic: ir.Operation) -> bool:
            """Whether a reduction's result reaches `generic` through element-wise
            generics. A slice of such a chain would slice the reduction, whose row
            kernel computes it and the chain whole in one launch (a layer norm's
            output, whose first token a classifier reads): left whole."""
            if generic not in computed_from_reductions:
                owners = [ir.operation_of(v.owner) for v in generic.operands]
                computed_from_reductions[generic] = any(
                    owner is not None and owner.name == "linalg.generic"
                    and (not ir.all_parallel(owner) or reads_reductions(owner))
                    for owner in owners)
            return computed_from_reductions[generic]

        with module.context:
            while worklist:
                extract = worklist.pop()
                if not any(True for _ in extract.results[0].uses):
                    continue  # a slice that a merged slice replaced
                extract = _of_the_first_source(extract)
                producer = ir.operation_of(extract.operands[0].owner)
                if not _sliceable(producer, reads_reductions):
                    continue
                key = (producer,
                       *(tuple(ir.DenseI64ArrayAttr(extract.attributes[name]))
                         for name in ("static_offsets", "static_sizes")))
                if key in made:
                    extract.results[0].replace_all_uses_with(made[key])
                    extract.erase()
                    continue
                made[key], slices = _slice(producer, extract)
                worklist += slices


def _of_the_first_source(extract: ir.Operation) -> ir.Operation:
    """`extract`, or where it slices a slice (torch-mlir slices one dim at a time), the
    one slice of the first source that replaces it: one view on the host, not a chain."""
    offsets = list(ir.DenseI64ArrayAttr(extract.attributes["static_offsets"]))
    source = extract.operands[0]
    while (inner := ir.operation_of(source.owner)) is not None and _static_slice(inner):
        offsets = [a + b for a, b in zip(
            ir.DenseI64ArrayAttr(inner.attributes["static_offsets"]), offsets)]
        source = inner.operands[0]
    if source == extract.operands[0]:
        return extract
    result = ir.RankedTensorType(extract.results[0].type)
    with ir.InsertionPoint(extract), extract.location:
        merged = tensor.ExtractSliceOp(result, source, [], [], [], offsets, result.shape,
                                       [1] * result.rank).operation
    extract.results[0].replace_all_uses_with(merged.results[0])
    extract.erase()
    return merged


def _slice(producer: ir.Operation,
           extract: ir.Operation) -> tuple[ir.Value, list[ir.Operation]]:
    """Replace `extract` by `producer` computed over its slice, just before `producer`
    (where every slice of it may read it); returns that value, and the slices that may
    slice further: those of the producer's inputs and init that this made, and those
    that slice the new generic's result (torch-mlir slices one dim at a time)."""
    offsets = list(ir.DenseI64ArrayAttr(extract.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(extract.attributes["static_sizes"]))
    result = ir.RankedTensorType(extract.results[0].type)
    maps = ir.indexing_maps(producer)
    # Each loop's piece: the slice of the result dim it writes.
    pieces = dict(enumerate(zip(offsets, sizes)))
    block = producer.regions[0].blocks[0]
    init_read = any(True for _ in block.arguments[len(block.arguments) - 1].uses)
    slices, operands = [], []
    with ir.InsertionPoint(producer), extract.location:
        for number, (operand, affine_map) in enumerate(zip(producer.operands, maps)):
            if not isinstance(operand.type, ir.RankedTensorType):
                operands.append(operand)  # a scalar, read at every point
                continue
            source = ir.RankedTensorType(operand.type)
            if number == len(maps) - 1 and not init_read:
                operands.append(tensor.EmptyOp(result.shape, result.element_type).result)
                continue
            start, extent = [], []
            for expr, size in zip(affine_map.results, source.shape):
                dim = expr.position if isinstance(expr, ir.AffineDimExpr) else None
                piece = pieces.get(dim, (0, size))  # a broadcast unit dim: all of it
                start.append(piece[0])
                extent.append(piece[1])
            if extent == list(source.shape):
                operands.append(operand)
                continue
            sliced = tensor.ExtractSliceOp(
                ir.RankedTensorType.get(extent, source.element_type), operand, [], [], [],
                start, extent, [1] * len(extent))
            slices.append(sliced.operation)
            operands.append(sliced.result)
        generic = linalg.GenericOp(
            [result], operands[:-1], operands[-1:], producer.attributes["indexing_maps"],
            producer.attributes["iterator_types"]).operation
        body = generic.regions[0].blocks.append(*[a.type for a in block.arguments])
        mapping = dict(zip(block.arguments, body.arguments))
        with ir.InsertionPoint(body):
            clone_body(list(block.operations), mapping)
    extract.results[0].replace_all_uses_with(generic.results[0])
    extract.erase()
    readers = [ir.operation_of(use.owner) for use in generic.results[0].uses]
    return generic.results[0], slices + [reader for reader in readers if _static_slice(reader)]

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg, tensor

from tessel import ir
from tessel.passes.registry import ModulePass, register


def _static_slice(op: ir.Operation) -> bool:
    """A tensor.extract_slice of static offsets and sizes, unit strides, that keeps its
    source's rank."""
    return op.name == "tensor.extract_slice" and len(op.operands) == 1 \
        and all(s == 1 for s in ir.DenseI64ArrayAttr(op.attributes["static_strides"])) \
        and ir.RankedTensorType(op.results[0].type).rank \
        == ir.RankedTensorType(op.operands[0].type).rank


def _sliceable(producer: ir.Operation | None) -> bool:
    """A linalg.generic of parallel loops with one result written at its points in loop
    order, each input read at loop dims or at 0 of a unit dim (a broadcast), its init
    unread: a slice of its result is its body over slices of its inputs."""
    if producer is None or producer.name != "linalg.generic" or len(producer.results) != 1:
        return False
    if not all("parallel" in str(kind)
               for kind in ir.ArrayAttr(producer.attributes["iterator_types"])):
        return False
    maps = ir.indexing_maps(producer)
    if not ir.is_identity_map(maps[-1]) or not all(
            isinstance(e, ir.AffineDimExpr)
            or (isinstance(e, ir.AffineConstantExpr) and e.value == 0)
            for m in maps[:-1] for e in m.results):
        return False
    block = producer.regions[0].blocks[0]
    return not any(True for _ in block.arguments[len(block.arguments) - 1].uses) and not any(
        o.operation.name in ("linalg.index", "tensor.extract") for o in block.operations)


@register
@dataclass(frozen=True)
class SliceElementwiseProducersPass(ModulePass):
    """slice-elementwise-producers: a static slice of an element-wise generic's result
    becomes the generic's body over the same slice of its inputs; a slice of a slice,
    one slice of the first source.

    var_mean's one-pass form (frontend/decompositions.py) shifts a batch norm's values
    by the first value of each channel, a slice of the f32 copy of the bf16 image.
    Sliced, that copy had to exist whole: a kernel wrote it, in f32, for the slice to
    read one value a channel. Computed on the slice instead, the copy has only the
    reductions to read it, which it fuses into. Any element-wise chain slices so.
    """

    name: ClassVar[str] = "slice-elementwise-producers"

    def run(self, module: ir.Operation) -> None:
        worklist = ir.ops_where(module, _static_slice)
        with module.context:
            while worklist:
                extract = worklist.pop()
                if not any(True for _ in extract.results[0].uses):
                    continue  # a slice that a merged slice replaced
                extract = _of_the_first_source(extract)
                producer = ir.operation_of(extract.operands[0].owner)
                if _sliceable(producer):
                    worklist += _slice(producer, extract)


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


def _slice(producer: ir.Operation, extract: ir.Operation) -> list[ir.Operation]:
    """Replace `extract` by `producer` computed over its slice; returns the slices that
    may slice further: those of the producer's inputs that this made, and those that
    slice the new generic's result (torch-mlir slices one dim at a time)."""
    offsets = list(ir.DenseI64ArrayAttr(extract.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(extract.attributes["static_sizes"]))
    result = ir.RankedTensorType(extract.results[0].type)
    maps = ir.indexing_maps(producer)
    block = producer.regions[0].blocks[0]
    slices, inputs = [], []
    with ir.InsertionPoint(extract), extract.location:
        for operand, affine_map in zip(list(producer.operands)[:-1], maps[:-1]):
            source = ir.RankedTensorType(operand.type)
            dims = [e.position if isinstance(e, ir.AffineDimExpr) else None
                    for e in affine_map.results]
            start = [0 if d is None else offsets[d] for d in dims]
            extent = [1 if d is None else sizes[d] for d in dims]
            if extent == list(source.shape):
                inputs.append(operand)
                continue
            sliced = tensor.ExtractSliceOp(
                ir.RankedTensorType.get(extent, source.element_type), operand, [], [], [],
                start, extent, [1] * len(extent))
            slices.append(sliced.operation)
            inputs.append(sliced.result)
        init = tensor.EmptyOp(result.shape, result.element_type).result
        generic = linalg.GenericOp(
            [result], inputs, [init], producer.attributes["indexing_maps"],
            producer.attributes["iterator_types"]).operation
        body = generic.regions[0].blocks.append(*[a.type for a in block.arguments])
        mapping = dict(zip(block.arguments, body.arguments))
        with ir.InsertionPoint(body):
            for op in block.operations:
                clone = op.operation.clone()
                for index, operand in enumerate(clone.operands):
                    if operand in mapping:
                        clone.operands[index] = mapping[operand]
                mapping.update(zip(op.results, clone.results))
    extract.results[0].replace_all_uses_with(generic.results[0])
    extract.erase()
    readers = [ir.operation_of(use.owner) for use in generic.results[0].uses]
    return slices + [reader for reader in readers if _static_slice(reader)]

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, tensor

from tessel import ir
from tessel.passes.concat_as_gather import GATHERED_CONCAT
from tessel.passes.contractions import NAMED_CONVOLUTIONS, is_contraction
from tessel.passes.linalg_builders import index_constant
from tessel.passes.recompute_cost import cheaper_computed_by_each
from tessel.passes.registry import ModulePass, register

# A producer's body cloned at a gather site: every point of the gathering generic
# computes it (a concatenation's point computes all its pieces, then selects), so only
# a small one is. SegFormer's bilinear interpolations, inlined into the concatenation of
# four of them, made its decode head 5x slower on the H100.
MAX_INLINED_BODY = 24
# Gathers rewritten per generic: bounds the growth of one body.
MAX_INLINED_PER_GENERIC = 128


def _library_result(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    return owner is not None and (owner.name in NAMED_CONVOLUTIONS or is_contraction(owner))


def elementwise_producer(op: ir.Operation, max_body: int = MAX_INLINED_BODY) -> bool:
    """A linalg.generic of parallel loops with one result, written at its points (the
    output map a permutation of the loops), each input read at loop dims or constants
    (a broadcast), its init unread, and a small body. Not a reader of a gemm's or a
    convolution's result: that stays a kernel of its own, which the host program
    counts on (a half gemm read only by a rounding to half is computed in half)."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any(_library_result(v) for v in op.operands):
        return False
    # Its body moves into another generic's, which may become a kernel of its own:
    # values from outside it other than tensors (which a kernel gathers from) and
    # constants (a scale computed at the function's level) would be values the kernel
    # cannot read.
    operands = list(op.operands)
    for value in ir.values_read_from_above(op):
        owner = ir.operation_of(value.owner)
        if value not in operands and not isinstance(value.type, ir.RankedTensorType) and (
                owner is None or owner.name != "arith.constant"):
            return False
    if not all(isinstance(v.type, ir.RankedTensorType) for v in operands):
        return False
    if not ir.all_parallel(op):
        return False
    maps = ir.indexing_maps(op)
    output = ir.dim_positions(maps[-1])
    if None in output or sorted(output) != list(range(maps[-1].n_dims)):
        return False
    if not all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr))
               for m in maps[:-1] for e in m.results):
        return False
    block = op.regions[0].blocks[0]
    if any(True for _ in block.arguments[len(block.arguments) - 1].uses):
        return False
    body = [o.operation for o in block.operations]
    if any(o.name == "tensor.extract" for o in body) and GATHERED_CONCAT not in op.attributes:
        return False  # a gather of its own (an interpolation's): each point's loads
    return len(body) <= max_body and not any(o.regions for o in body)


def _points_reading(value: ir.Value) -> int:
    """How many points read `value` once gathers have inlined what they can: an
    extract is one, and so is any other reader but an element-wise producer that only
    extracts read, which is inlined at its own readers' points, so counts theirs."""
    points = 0
    for use in value.uses:
        reader = ir.operation_of(use.owner)
        if reader is not None and elementwise_producer(reader) and all(
                ir.operation_of(u.owner).name == "tensor.extract" for u in reader.results[0].uses):
            points += _points_reading(reader.results[0])
        else:
            points += 1
    return points


def worth_inlining(producer: ir.Operation) -> bool:
    """Whether the points that read `producer` had better compute it themselves
    (recompute_cost). A producer read at several points (a pooling gradient's taps, an
    interpolation's corners) is computed at each, loading its inputs there: Inductor
    realizes a pooling gradient's input for the same reason. densenet121's max pool
    gradient computed a sum of seven gradients at each of its four taps (1.6 ms a step
    on the H200, its largest kernel)."""
    return cheaper_computed_by_each(producer, _points_reading(producer.results[0]))


def static_slice(op: ir.Operation) -> bool:
    """A tensor.extract_slice of static offsets and strides that keeps its rank."""
    if op.name != "tensor.extract_slice" or len(op.operands) != 1:
        return False
    return ir.RankedTensorType(op.results[0].type).rank == ir.RankedTensorType(op.operands[0].type).rank


def _static_expansion(op: ir.Operation) -> bool:
    return op.name == "tensor.expand_shape" and ir.RankedTensorType(op.results[0].type).has_static_shape


def _static_collapse(op: ir.Operation) -> bool:
    return op.name == "tensor.collapse_shape" and \
        ir.RankedTensorType(op.operands[0].type).has_static_shape


def _erase_unread(op: ir.Operation, erased: set[int]) -> None:
    """Erase `op`, a producer an inlining left unread, and what it alone read."""
    if any(True for result in op.results for _ in result.uses):
        return
    operands = [ir.operation_of(v.owner) for v in op.operands]
    erased.add(id(op))
    op.erase()
    for producer in operands:
        if producer is not None and (elementwise_producer(producer) or static_slice(producer)
                                     or _static_expansion(producer)
                                     or _static_collapse(producer)):
            _erase_unread(producer, erased)


@register
@dataclass(frozen=True)
class InlineGatheredProducersPass(ModulePass):
    """inline-gathered-producers: a tensor.extract inside a linalg.generic's body that
    reads the result of an element-wise generic computes that point there instead (the
    producer's body on its own inputs, extracted at the point), and one that reads a
    static slice, expansion or collapse of a tensor reads the tensor at the point's index
    in it.

    A gather reads its tensor from memory, so whatever computes the tensor is a kernel
    of its own with a buffer in between. Inlined, the producer joins the gathering
    kernel (Inductor's loads are index expressions into the producer's body in the same
    way); a producer left without readers is then dead. `concat-as-gather` makes the
    gathers that most need it.
    """

    name: ClassVar[str] = "inline-gathered-producers"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        erased: set[int] = set()  # ids: the bindings keep one Python object per live op
        with module.context:
            for generic in generics:
                if id(generic) not in erased:
                    self._inline_in(generic, erased)

    def _inline_in(self, generic: ir.Operation, erased: set[int]) -> None:
        block = generic.regions[0].blocks[0]
        worklist = [o.operation for o in block.operations if o.operation.name == "tensor.extract"]
        rewritten = 0
        while worklist and rewritten < MAX_INLINED_PER_GENERIC:
            extract = worklist.pop()
            source = ir.operation_of(extract.operands[0].owner)
            if source is None:
                continue
            with ir.InsertionPoint(extract), extract.location:
                if elementwise_producer(source):
                    if not worth_inlining(source):
                        continue
                    value, new = self._computed(source, list(extract.operands[1:]))
                elif static_slice(source):
                    value, new = self._through_slice(source, list(extract.operands[1:]))
                elif _static_expansion(source):
                    value, new = self._through_expansion(source, list(extract.operands[1:]))
                elif _static_collapse(source):
                    value, new = self._through_collapse(source, list(extract.operands[1:]))
                else:
                    continue
            extract.results[0].replace_all_uses_with(value)
            extract.erase()
            worklist.extend(new)
            rewritten += 1
            _erase_unread(source, erased)

    @staticmethod
    def _computed(producer: ir.Operation, point: list) -> tuple[ir.Value, list]:
        """`producer`'s value at `point`: its body on its inputs extracted there."""
        maps = ir.indexing_maps(producer)
        loops = [None] * maps[-1].n_dims
        for position, index in zip(ir.dim_positions(maps[-1]), point):
            loops[position] = index
        block = producer.regions[0].blocks[0]
        mapping, new = {}, []
        for operand, argument, affine_map in zip(producer.operands, block.arguments, maps[:-1]):
            extract = tensor.ExtractOp(operand, [
                loops[e.position] if isinstance(e, ir.AffineDimExpr) else index_constant(e.value)
                for e in affine_map.results])
            mapping[argument] = extract.result
            new.append(extract.operation)
        body = [o.operation for o in block.operations]
        for op in body[:-1]:
            if op.name == "linalg.index":
                mapping[op.results[0]] = loops[ir.IntegerAttr(op.attributes["dim"]).value]
                continue
            clone = op.clone()
            for number, operand in enumerate(clone.operands):
                if operand in mapping:
                    clone.operands[number] = mapping[operand]
            for old, fresh in zip(op.results, clone.results):
                mapping[old] = fresh
            if clone.name == "tensor.extract":
                new.append(clone)
        yielded = body[-1].operands[0]
        return mapping.get(yielded, yielded), new

    @staticmethod
    def _through_slice(slice_op: ir.Operation, point: list) -> tuple[ir.Value, list]:
        offsets = ir.DenseI64ArrayAttr(slice_op.attributes["static_offsets"])
        strides = ir.DenseI64ArrayAttr(slice_op.attributes["static_strides"])
        indices = []
        for index, offset, stride in zip(point, offsets, strides):
            if stride != 1:
                index = arith.MulIOp(index, index_constant(stride)).result
            if offset:
                index = arith.AddIOp(index, index_constant(offset)).result
            indices.append(index)
        extract = tensor.ExtractOp(slice_op.operands[0], indices)
        return extract.result, [extract.operation]

    @staticmethod
    def _through_expansion(expand: ir.Operation, point: list) -> tuple[ir.Value, list]:
        """An expanded tensor's point in its source: each group of expanded dims folds
        back into one index, row-major."""
        shape = ir.RankedTensorType(expand.results[0].type).shape
        indices = []
        for dims in ir.reassociation(expand):
            index = point[dims[0]]
            for d in dims[1:]:
                index = arith.AddIOp(arith.MulIOp(index, index_constant(shape[d])).result,
                                     point[d]).result
            indices.append(index)
        extract = tensor.ExtractOp(expand.operands[0], indices)
        return extract.result, [extract.operation]

    @staticmethod
    def _through_collapse(collapse: ir.Operation, point: list) -> tuple[ir.Value, list]:
        """A collapsed tensor's point in its source: each collapsed index unfolds into
        its group of source dims, row-major (signed division: indices are never
        negative, and the targets divide so)."""
        shape = ir.RankedTensorType(collapse.operands[0].type).shape
        indices = []
        for dims, index in zip(ir.reassociation(collapse), point):
            unfolded = []
            for d in reversed(dims[1:]):
                unfolded.append(arith.RemSIOp(index, index_constant(shape[d])).result)
                index = arith.DivSIOp(index, index_constant(shape[d])).result
            indices += [index, *reversed(unfolded)]
        extract = tensor.ExtractOp(collapse.operands[0], indices)
        return extract.result, [extract.operation]

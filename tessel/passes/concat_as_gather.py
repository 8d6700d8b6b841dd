from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, linalg, tensor

from tessel import ir
from tessel.passes.buffer_views import RESHAPES
from tessel.passes.linalg_builders import elementwise_generic, index_constant
from tessel.passes.registry import ModulePass, register

# As Inductor's max_pointwise_cat_inputs: past this, a point's select chain and its
# loads cost more than the copy they save.
MAX_GATHERED_INPUTS = 8

# Marks the generics this pass makes: inline-gathered-producers computes them where
# they are gathered (a concatenation of concatenations), unlike other gathers.
GATHERED_CONCAT = "tessel.gathered_concat"

_SLT = 2  # arith.cmpi's predicate number of "slt" (indices are never negative)


def _static(piece: ir.Value) -> ir.Value | None:
    """`piece`, or the static tensor a tensor.cast made it from (torch.roll's halves,
    cast to a dynamic size), else None."""
    if ir.RankedTensorType(piece.type).has_static_shape:
        return piece
    owner = ir.operation_of(piece.owner)
    if owner is not None and owner.name == "tensor.cast" and \
            ir.RankedTensorType(owner.operands[0].type).has_static_shape:
        return owner.operands[0]
    return None


def _producer(value: ir.Value) -> ir.Operation | None:
    """The op that computes `value`, through static reshapes (inline-gathered-producers
    reads through them): torch-mlir flattens and unsqueezes each index column of a
    scatter before concatenating them."""
    op = ir.operation_of(value.owner)
    while op is not None and op.name in RESHAPES \
            and ir.RankedTensorType(op.results[0].type).has_static_shape \
            and ir.RankedTensorType(op.operands[0].type).has_static_shape:
        op = ir.operation_of(op.operands[0].owner)
    return op


def _readers(value: ir.Value) -> list[ir.Operation | None]:
    """The ops that read `value`, through static reshapes (elementwise fusion folds them
    into the reader): a fused attention's q, k and v gradients, concatenated and then
    split into (3, batch, heads, ...), are read by the copy that permutes them for the
    qkv projection's gemm."""
    readers = []
    for use in value.uses:
        op = ir.operation_of(use.owner)
        if op is not None and op.name in RESHAPES and \
                ir.RankedTensorType(op.results[0].type).has_static_shape:
            readers += _readers(op.results[0])
        else:
            readers.append(op)
    return readers


def _concatenates(op: ir.Operation | None) -> bool:
    return op is not None and op.name == "tensor.concat"


def _gathered(concat: ir.Operation) -> bool:
    """Whether `concat` becomes a generic: static (its pieces too), few inputs, not in
    a chain of concats (densenet concatenates all earlier features at every layer: the
    host program writes such a chain into one buffer, each piece once), and next to a
    linalg.generic that can fuse with it (else a copy is all it is)."""
    result = ir.RankedTensorType(concat.results[0].type)
    if not result.has_static_shape or not 2 <= len(concat.operands) <= MAX_GATHERED_INPUTS \
            or any(_static(piece) is None for piece in concat.operands):
        return False
    producers = [_producer(v) for v in concat.operands]
    users = _readers(concat.results[0])
    # Each piece once: a piece concatenated with itself (rotary embeddings'
    # `cat((freqs, freqs))`) is read by no other concat.
    readers_of_pieces = [ir.operation_of(use.owner) for v in dict.fromkeys(concat.operands)
                         for use in v.uses]
    if any(_concatenates(op) for op in producers + users) or sum(
            _concatenates(op) for op in readers_of_pieces) > len(concat.operands):
        return False
    return any(op is not None and op.name == "linalg.generic" for op in producers + users)


@register
@dataclass(frozen=True)
class ConcatAsGatherPass(ModulePass):
    """concat-as-gather: a tensor.concat becomes a linalg.generic over its result that
    reads each point from the input holding it (tensor.extract at the point, shifted
    along the concatenated dim, clamped into that input, and a select).

    As a generic, the concat fuses with the element-wise ops around it instead of
    being a copy of its own: rotary embeddings' `cat(-x2, x1)` into the multiply-add
    that reads it, and the producers of its inputs, through `inline-gathered-producers`
    (Inductor lowers a concat of few inputs to a pointwise kernel with masked loads for
    the same reason). The clamped index keeps every tensor.extract in bounds, as the
    IR requires; a Triton kernel loads an input only at the points that select it
    (targets/triton/branch_guards.py).
    """

    name: ClassVar[str] = "concat-as-gather"

    def run(self, module: ir.Operation) -> None:
        concats = ir.ops_where(module, lambda op: op.name == "tensor.concat")
        with module.context:
            for concat in concats:
                if _gathered(concat):
                    self._gather(concat)

    @staticmethod
    def _gather(concat: ir.Operation) -> None:
        result_type = ir.RankedTensorType(concat.results[0].type)
        rank, dim = result_type.rank, ir.IntegerAttr(concat.attributes["dim"]).value
        with ir.InsertionPoint(concat), concat.location:
            empty = tensor.EmptyOp(result_type.shape, result_type.element_type).result
            generic, block = elementwise_generic(result_type, [], empty)
            generic.attributes[GATHERED_CONCAT] = ir.UnitAttr.get()
        with ir.InsertionPoint(block), concat.location:
            point = [linalg.IndexOp(d).result for d in range(rank)]
            starts, values, start = [], [], 0
            for number, piece in enumerate(_static(v) for v in concat.operands):
                size = ir.RankedTensorType(piece.type).shape[dim]
                position = point[dim]
                if start:
                    position = arith.MaxSIOp(arith.SubIOp(position, index_constant(start)).result,
                                             index_constant(0)).result
                if number + 1 < len(concat.operands):
                    position = arith.MinSIOp(position, index_constant(size - 1)).result
                indices = point[:dim] + [position] + point[dim + 1:]
                values.append(tensor.ExtractOp(piece, indices).result)
                starts.append(start)
                start += size
            chosen = values[-1]
            for number in range(len(values) - 2, -1, -1):
                before_next = arith.CmpIOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _SLT),
                                           point[dim], index_constant(starts[number + 1])).result
                chosen = arith.SelectOp(before_next, values[number], chosen).result
            linalg.YieldOp([chosen])
        concat.results[0].replace_all_uses_with(generic.results[0])
        concat.erase()

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.fuse_returned_producers import elementwise
from tessel.passes.registry import ModulePass, register


def _readers(value: ir.Value) -> list[tuple[ir.Operation, int]]:
    return [(ir.operation_of(use.owner), use.operand_number) for use in value.uses]


def _permutation(transpose: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))


def _merge_twins(module: ir.Operation) -> None:
    """One transpose per source and permutation in a block (CSE has not run yet): the
    first, which the others follow."""
    first: dict = {}
    for transpose in ir.ops_where(module, lambda op: op.name == "linalg.transpose"):
        key = (transpose.operands[0], tuple(_permutation(transpose)))
        twin = first.get(key)
        if twin is not None and twin.block == transpose.block:
            transpose.results[0].replace_all_uses_with(twin.results[0])
            transpose.erase()
        elif twin is None:
            first[key] = transpose


@register
@dataclass(frozen=True)
class ReadTransposedCopiesPass(ModulePass):
    """read-transposed-copies: where an element-wise result is transposed for one
    reader, its other readers (linalg.generics) read the transposed copy, through
    their maps composed with the permutation.

    channels-last-convolutions transposes a convolution's image to NHWC, and elementwise
    fusion folds that transpose into the image's producer, so that the producer writes
    NHWC, but only where the transpose is the producer's sole reader. A ResNet's
    residual stream has two: the next block's first convolution (through its transpose)
    and the residual add at the block's end. So the stream was written NCHW, copied to
    NHWC by a transposing kernel, and every add read one operand across memory (the
    convolution's NHWC result) to write the other layout. Once the add reads the
    transposed copy, the transpose is the producer's one reader, the producer writes
    NHWC, and so, block after block, does the whole stream. Same values, same number
    of reads: only their layout changes.
    """

    name: ClassVar[str] = "read-transposed-copies"

    def run(self, module: ir.Operation) -> None:
        _merge_twins(module)
        for transpose in ir.ops_where(module, lambda op: op.name == "linalg.transpose"):
            source = transpose.operands[0]
            producer = ir.operation_of(source.owner)
            if producer is not None and len(producer.results) == 1 and elementwise(producer):
                self._redirect(source, transpose)

    @staticmethod
    def _redirect(source: ir.Value, transpose: ir.Operation) -> None:
        others = [(op, number) for op, number in _readers(source) if op != transpose]
        if not others or any(op.name != "linalg.generic" or number >= len(op.operands)
                             - len(op.results) for op, number in others):
            return
        init = ir.operation_of(transpose.operands[1].owner)
        if init is None or init.name != "tensor.empty" or len(init.operands):
            return
        # The readers may come before the transpose: it moves up to its source, with
        # its init, or a copy of the init that other ops' inits share (canonicalize
        # made the empties of one type one op, which another transpose may read first).
        producer = ir.operation_of(source.owner)
        transpose.move_after(producer)
        if sum(1 for _ in init.results[0].uses) > 1:
            with ir.InsertionPoint(transpose):
                init = init.clone()
            transpose.operands[1] = init.results[0]
        init.move_after(producer)
        permutation = _permutation(transpose)
        copy = transpose.results[0]
        for reader, number in others:
            maps = ir.indexing_maps(reader)
            read = maps[number]
            # The copy's element k is the source's element l with l[p[i]] = k[i].
            maps[number] = ir.AffineMap.get(read.n_dims, read.n_symbols,
                                            [read.results[p] for p in permutation])
            reader.attributes["indexing_maps"] = ir.ArrayAttr.get(
                [ir.AffineMapAttr.get(m) for m in maps])
            reader.operands[number] = copy

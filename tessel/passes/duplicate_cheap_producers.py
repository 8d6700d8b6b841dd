from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.inline_gathered_producers import elementwise_producer
from tessel.passes.registry import ModulePass, register

# Ops in a producer's body (its yield included) for it to be copied per reader: a cast
# (bf16 to f32 ahead of a norm) or a broadcast, one more op at most.
MAX_DUPLICATED_BODY = 3


def _dims_read(affine_map) -> list:
    """The loop dim each result of an input's map reads (None: an expression), leaving
    out a unit dim read at 0 (a batch norm's per-channel mean as [1, C, 1, 1] is read
    through (0, d1, 0, 0)): such a read is a broadcast."""
    return [position for position, expr in zip(ir.dim_positions(affine_map), affine_map.results)
            if not (isinstance(expr, ir.AffineConstantExpr) and expr.value == 0)]


def _in_order(producer: ir.Operation) -> bool:
    """Whether `producer` writes its points in loop order and reads each input in that
    order too (a broadcast, not a transpose: a reader fused with a transpose would read
    across rows, which GPU row kernels avoid)."""
    maps = ir.indexing_maps(producer)
    if not ir.is_identity_map(maps[-1]):
        return False
    positions = [_dims_read(m) for m in maps[:-1]]
    return all(None not in p and p == sorted(p) for p in positions)


def _full_rank_inputs(producer: ir.Operation) -> int:
    """How many of `producer`'s inputs it reads at every one of its points (not a
    broadcast of fewer dims): each copy reads them all again."""
    loops = ir.indexing_maps(producer)[-1].n_dims
    return sum(1 for affine_map in ir.indexing_maps(producer)[:-1]
               if len(_dims_read(affine_map)) == loops)


RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def generic_reads(value: ir.Value) -> list[tuple[list[ir.Operation], ir.Operation, int]] | None:
    """Each read of `value` as (the reshapes it goes through, the linalg.generic that
    reads it, its operand number), if every read ends as an input of a generic that is
    not a contraction (elementwise fusion folds reshapes in between into the producer);
    else None."""
    reads = []
    for use in value.uses:
        reader = ir.operation_of(use.owner)
        if reader is not None and reader.name in RESHAPES:
            below = generic_reads(reader.results[0])
            if below is None:
                return None
            reads += [([reader, *reshapes], generic, operand)
                      for reshapes, generic, operand in below]
        elif (reader is not None and reader.name == "linalg.generic"
              and not is_contraction(reader)
              and use.operand_number < len(reader.operands) - len(reader.results)):
            reads.append(([], reader, use.operand_number))
        else:
            return None  # an init the reader writes, a library call, a result
    return reads


@register
@dataclass(frozen=True)
class DuplicateCheapProducersPass(ModulePass):
    """duplicate-cheap-producers: a small element-wise generic read by several generics
    gets a copy per reader, which elementwise fusion then fuses into it.

    linalg-fuse-elementwise-ops fuses a producer only into its sole reader. A value read
    by more than one, such as the f32 copy of a bf16 activation that a group norm's
    split statistics and its normalization all read, stays a kernel of its own that
    writes the wider copy for the others to read back. A cast or broadcast that reads
    at most one full-size input costs less computed again in each reader (Inductor
    inlines such loads the same way).
    """

    name: ClassVar[str] = "duplicate-cheap-producers"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        with module.context:
            # Readers first: a producer of a copied producer (the f32 cast of the image
            # that a batch norm's x - mean reads) then counts each copy as a reader.
            for producer in reversed(generics):
                if not elementwise_producer(producer, MAX_DUPLICATED_BODY) or \
                        not _in_order(producer) or _full_rank_inputs(producer) > 1:
                    continue
                reads = generic_reads(producer.results[0])
                if reads is None or len(reads) < 2:
                    continue
                copy_per_reader(producer, reads)


def copy_per_reader(producer: ir.Operation,
                    reads: list[tuple[list[ir.Operation], ir.Operation, int]]) -> None:
    """Every read of `producer` (generic_reads) but the first reads a copy of it (and of
    the reshapes in between) made just before its reader."""
    for reshapes, reader, operand in reads[1:]:
        with ir.InsertionPoint(reader):
            value = producer.clone().results[0]
            for reshape in reshapes:
                copy = reshape.clone()
                copy.operands[0] = value
                value = copy.results[0]
        reader.operands[operand] = value

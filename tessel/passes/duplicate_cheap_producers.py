from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.buffer_views import RESHAPES
from tessel.passes.contractions import is_contraction
from tessel.passes.inline_gathered_producers import elementwise_producer
from tessel.passes.recompute_cost import cheaper_computed_by_each, dims_read, full_size_inputs
from tessel.passes.registry import ModulePass, register

# Ops in a producer's body (its yield included) for it to be copied per reader: a cast
# (bf16 to f32 ahead of a norm) or a broadcast, one more op at most.
MAX_DUPLICATED_BODY = 3
# The fewest elements of a producer of several full-size inputs for copies: a batch
# norm's per-channel finishing ops (mean and variance from the sums) stay one kernel.
MIN_COPIED_ELEMENTS = 1 << 16


def _in_order(producer: ir.Operation) -> bool:
    """Whether `producer` writes its points in loop order and reads each input in that
    order too (a broadcast, not a transpose: a reader fused with a transpose would read
    across rows, which GPU row kernels avoid)."""
    maps = ir.indexing_maps(producer)
    if not ir.is_identity_map(maps[-1]):
        return False
    positions = [dims_read(m) for m in maps[:-1]]
    return all(None not in p and p == sorted(p) for p in positions)


def _cheaper_copied(producer: ir.Operation, readers: int) -> bool:
    """Whether `readers` copies of `producer` cost less than its kernel
    (recompute_cost): a small one of several full-size inputs never does, bytes
    mattering little there and its kernel perhaps holding other small work (a batch
    norm's per-channel finishing ops stay one kernel)."""
    if len(full_size_inputs(producer)) > 1:
        shape = ir.ShapedType(producer.results[0].type)
        if not shape.has_static_shape or math.prod(shape.shape) < MIN_COPIED_ELEMENTS:
            return False
    return cheaper_computed_by_each(producer, readers)


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
    inlines such loads the same way); so does one of more inputs where the copies read
    fewer bytes than the result's write and reads (`_cheaper_copied`).
    """

    name: ClassVar[str] = "duplicate-cheap-producers"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        with module.context:
            # Readers first: a producer of a copied producer (the f32 cast of the image
            # that a batch norm's x - mean reads) then counts each copy as a reader.
            for producer in reversed(generics):
                if not elementwise_producer(producer, MAX_DUPLICATED_BODY) or \
                        not _in_order(producer):
                    continue
                reads = generic_reads(producer.results[0])
                if reads is None or len(reads) < 2 or not _cheaper_copied(producer, len(reads)):
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

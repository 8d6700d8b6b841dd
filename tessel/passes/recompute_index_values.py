from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.buffer_views import RESHAPES
from tessel.passes.duplicate_cheap_producers import copy_per_reader, generic_reads
from tessel.passes.inline_gathered_producers import elementwise_producer
from tessel.passes.registry import ModulePass, register


def _splat_constant(value: ir.Value) -> bool:
    """A constant tensor of one value (a 0-d scalar): reading it loads nothing."""
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "arith.constant" and \
        ir.DenseElementsAttr(owner.attributes["value"]).is_splat


@register
@dataclass(frozen=True)
class RecomputeIndexValuesPass(ModulePass):
    """recompute-index-values: an element-wise generic computed from its loop indices
    alone (linalg.index, constants, and other such generics; no tensor it loads) gets a
    copy per reader, which elementwise fusion then fuses into it.

    Such a value costs only arithmetic to compute again at each reader's points, and a
    kernel of its own writes it for every reader to load back: DeBERTa's relative
    positions (a log-bucketed i - j, clamped) are one [tokens, tokens] int64 tensor that
    each layer's softmax kernel loaded twice per score, once along its row and once
    across rows (p2c's transposed gather), where Inductor computes them from the
    indices in the kernel. Run after elementwise fusion, which has made each such chain
    one generic, and before another. Bodies of more than `max-body` ops stay kernels.
    """

    name: ClassVar[str] = "recompute-index-values"
    max_body: int = 48

    def run(self, module: ir.Operation) -> None:
        from_indices: list[ir.Operation] = []
        computed: set[ir.Value] = set()
        for op in ir.ops_where(module, lambda op: op.name in ("linalg.generic", *RESHAPES)):
            if op.name in RESHAPES:
                if op.operands[0] in computed:
                    computed.add(op.results[0])
                continue
            inputs = list(op.operands)[:len(op.operands) - len(op.results)]
            if elementwise_producer(op, self.max_body) and \
                    all(v in computed or _splat_constant(v) for v in inputs):
                from_indices.append(op)
                computed.update(op.results)
        # Readers first: a value that copies of its readers read is copied for each copy.
        for op in reversed(from_indices):
            reads = generic_reads(op.results[0])
            if reads is not None and len(reads) > 1:
                copy_per_reader(op, reads)

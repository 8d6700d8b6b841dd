from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.duplicate_cheap_producers import RESHAPES
from tessel.passes.form_kernels import scatter_of, sole_generic
from tessel.passes.inline_gathered_producers import elementwise_producer
from tessel.passes.registry import ModulePass, register


def _read_once(value: ir.Value) -> bool:
    return sum(1 for _ in value.uses) == 1


def _written_in_order(generic: ir.Operation, max_body: int) -> bool:
    """A generic of parallel loops with one result, written at its points in loop order
    (an identity output map), whose body of at most `max_body` ops holds no regions:
    the points of its result are then its loop indices."""
    maps = ir.indexing_maps(generic)
    body = [op.operation for op in generic.regions[0].blocks[0].operations]
    return len(generic.results) == 1 and ir.is_identity_map(maps[-1]) and \
        all("parallel" in str(kind) for kind in ir.ArrayAttr(generic.attributes["iterator_types"])) \
        and len(body) <= max_body and not any(op.regions for op in body)


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
                self._copy_indices(scatter)
                self._move_updates(scatter)

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


from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, memref

from tessel import ir
from tessel.passes.registry import ModulePass, register

_ALIGNMENT = 64


@dataclass
class _Buffer:
    alloc: ir.Operation
    dealloc: ir.Operation
    start: int          # op index of the alloc
    end: int            # op index of the dealloc
    size: int           # bytes, rounded up to the alignment
    offset: int = 0


def _element_bytes(element: ir.Type) -> int | None:
    width = getattr(element, "width", None)
    if width is None or width % 8:
        return None  # i1 and other sub-byte types keep their own allocations
    return width // 8


def _plannable(op: ir.Operation) -> int | None:
    """Bytes of a static, identity-layout memref.alloc; None when it cannot be planned."""
    memref_type = op.results[0].type
    identity = ir.AffineMap.get_identity(memref_type.rank)
    if (len(op.operands) or not memref_type.has_static_shape
            or ir.AffineMapAttr(memref_type.layout).value != identity):
        return None
    element_bytes = _element_bytes(memref_type.element_type)
    if element_bytes is None:
        return None
    size = element_bytes
    for dim in memref_type.shape:
        size *= dim
    return -(-max(size, 1) // _ALIGNMENT) * _ALIGNMENT


@register
@dataclass(frozen=True)
class PlanBuffersPass(ModulePass):
    """plan-buffers: place a function's temporary buffers in one arena, reusing memory
    between buffers whose lifetimes do not overlap.

    A buffer's lifetime runs from its memref.alloc to its memref.dealloc in the
    function body. Buffers are placed first-fit, in order of allocation, at the lowest
    64-byte-aligned offset that no live buffer occupies. One malloc per call replaces
    one per temporary, and reused memory is still in cache. Dynamically sized, sub-byte
    and nested allocations keep their own. The cpu pipeline does not run it: views
    into one arena keep LLVM from proving that loops over different temporaries do
    not alias, which costs vectorization (measured slower on the transformer layer).
    """

    name: ClassVar[str] = "plan-buffers"

    def run(self, module: ir.Operation) -> None:
        for function in ir.defined_functions(module):
            self._plan(function.regions[0].blocks[0])

    def _plan(self, block: ir.Block) -> None:
        ops = [op.operation for op in block.operations]
        index = {op: i for i, op in enumerate(ops)}
        buffers = []
        for op in ops:
            if op.name != "memref.alloc" or (size := _plannable(op)) is None:
                continue
            users = [ir.operation_of(use.owner) for use in op.results[0].uses]
            deallocs = [u for u in users if u.name == "memref.dealloc"]
            if len(deallocs) != 1 or deallocs[0] not in index:
                continue
            buffers.append(_Buffer(op, deallocs[0], index[op], index[deallocs[0]], size))
        if len(buffers) < 2:
            return
        arena_size = _place(buffers)
        self._rewrite(block, ops, buffers, arena_size)

    @staticmethod
    def _rewrite(block: ir.Block, ops, buffers: list[_Buffer], arena_size: int) -> None:
        with block.owner.context, ir.Location.unknown():
            arena_type = ir.MemRefType.get([arena_size], ir.IntegerType.get_signless(8))
            with ir.InsertionPoint(ops[0]):
                arena = memref.alloc(arena_type, [], [],
                                     alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _ALIGNMENT))
            with ir.InsertionPoint(ops[-1]):
                memref.dealloc(arena)
            index_type = ir.IndexType.get()
            for buffer in buffers:
                with ir.InsertionPoint(buffer.alloc), buffer.alloc.location:
                    offset = arith.constant(index_type, buffer.offset)
                    view = memref.view(buffer.alloc.results[0].type, arena, offset, [])
                buffer.alloc.results[0].replace_all_uses_with(view)
                buffer.dealloc.erase()
                buffer.alloc.erase()


def _place(buffers: list[_Buffer]) -> int:
    """First-fit offsets; returns the arena size in bytes."""
    placed: list[_Buffer] = []
    for buffer in sorted(buffers, key=lambda b: b.start):
        live = sorted((p for p in placed if p.start <= buffer.end and buffer.start <= p.end),
                      key=lambda p: p.offset)
        offset = 0
        for other in live:
            if offset + buffer.size <= other.offset:
                break
            offset = max(offset, other.offset + other.size)
        buffer.offset = offset
        placed.append(buffer)
    return max(b.offset + b.size for b in placed)

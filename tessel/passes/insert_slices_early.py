from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register


def _position(value: ir.Value, order: dict) -> int:
    """Where `value` is defined in its block (-1: a block argument)."""
    owner = value.owner
    return -1 if isinstance(owner, ir.Block) else order[owner.operation]


def _box(insert: ir.Operation) -> list[tuple[int, int]] | None:
    """The static [begin, end) of each dim of the slice `insert` writes, or None."""
    offsets = list(ir.DenseI64ArrayAttr(insert.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(insert.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(insert.attributes["static_strides"]))
    if len(insert.operands) != 2 or any(s != 1 for s in strides):
        return None  # dynamic offsets, sizes or strides
    return [(o, o + s) for o, s in zip(offsets, sizes)]


def _disjoint(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return any(end_a <= begin_b or end_b <= begin_a
               for (begin_a, end_a), (begin_b, end_b) in zip(a, b))


@register
@dataclass(frozen=True)
class InsertSlicesEarlyPass(ModulePass):
    """insert-slices-early: build a chain of tensor.insert_slice ops into a tensor.empty
    (a concatenation, generalized) in the order its sources are computed, each insert
    right after its source.

    refback-generalize-tensor-concat writes the chain in operand order, after every
    operand. eliminate-empty-tensors can then let only the first operand's kernel write
    its slice of the result in place: the kernel of any later operand runs before the
    chain value it would have to write into exists, so it writes a buffer of its own,
    copied into the result afterwards (a segmentation head's four upsampled maps: three
    copies of 2x256x128x128 floats). Rule: a chain whose slices are static and pairwise
    disjoint (their order cannot change the result) and whose inner values have no
    other use is rebuilt in its sources' order.
    """

    name: ClassVar[str] = "insert-slices-early"

    def run(self, module: ir.Operation) -> None:
        for empty in ir.ops_where(module, lambda op: op.name == "tensor.empty"):
            chain = _chain_from(empty)
            if chain is not None and len(chain) > 1:
                _rebuild_in_source_order(empty, chain)


def _chain_from(empty: ir.Operation) -> list[ir.Operation] | None:
    """The insert_slice ops writing into `empty` one after another, or None when they
    do not form a chain this pass may reorder."""
    chain, value = [], empty.results[0]
    while True:
        uses = list(value.uses)
        inserts = [u.owner for u in uses if u.owner.name == "tensor.insert_slice"
                   and u.operand_number == 1]
        if len(uses) != 1 or len(inserts) != 1:
            break
        chain.append(inserts[0])
        value = inserts[0].results[0]
    if not chain:
        return None
    boxes = [_box(insert) for insert in chain]
    if any(box is None for box in boxes):
        return None
    if any(not _disjoint(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
        return None
    return chain


def _rebuild_in_source_order(empty: ir.Operation, chain: list[ir.Operation]) -> None:
    block = empty.block
    result_uses = list(chain[-1].results[0].uses)
    order = {op.operation: i for i, op in enumerate(block.operations)}
    ordered = sorted(chain, key=lambda insert: _position(insert.operands[0], order))
    empty.move_before(block.operations[0])  # static: it reads nothing
    previous = empty
    for insert in ordered:
        order = {op.operation: i for i, op in enumerate(block.operations)}
        source_position = _position(insert.operands[0], order)
        anchor = previous
        if source_position > order[previous.operation]:
            anchor = insert.operands[0].owner
        insert.move_after(anchor)
        insert.operands[1] = previous.results[0]
        previous = insert
    for use in result_uses:
        use.owner.operands[use.operand_number] = previous.results[0]

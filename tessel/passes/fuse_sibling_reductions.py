from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register
from tessel.passes.transform_script import apply_transform_script, match_marked

_SOURCE, _TARGET = "tessel.sibling_source", "tessel.sibling_target"
# Ops that may move up to the first sibling when the second one reads them: views,
# constants and fills, which compute nothing the first could need to run after.
_MOVABLE = frozenset({"tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
                      "tensor.empty", "arith.constant", "linalg.fill"})


@register
@dataclass(frozen=True)
class FuseSiblingReductionsPass(ModulePass):
    """fuse-sibling-reductions: two tiled reductions over the same rows that read the same
    tensor become one loop (transform.loop.fuse_sibling), so one kernel reads the rows
    once for both.

    A batch norm's backward sums the gradient, and the gradient times x - mean, per
    channel: two reductions over the same image, each its own kernel (and, split, two
    partial and two combining kernels), each reading the gradient image. Inductor reduces
    both in one. Loops fuse when, tiled by fuse-tiles, they are scf.forall ops of `main`
    with the same static bounds, each reducing rows of the same shape, the second reads
    nothing the first computes (views, constants and fills between them move up to the
    first), and both read one tensor (or results of one op) besides their destinations.
    """

    name: ClassVar[str] = "fuse-sibling-reductions"

    def run(self, module: ir.Operation) -> None:
        with module.context:
            while (pair := _sibling_pair(module)) is not None:
                source, target = pair
                source.attributes[_SOURCE] = ir.UnitAttr.get()
                target.attributes[_TARGET] = ir.UnitAttr.get()
                apply_transform_script(module, [
                    match_marked("%source", _SOURCE), match_marked("%target", _TARGET),
                    "%fused = transform.loop.fuse_sibling %target into %source : "
                    "(!transform.any_op, !transform.any_op) -> !transform.any_op"])
                for op in ir.ops_where(module, lambda op: _SOURCE in op.attributes
                                       or _TARGET in op.attributes):
                    for mark in (_SOURCE, _TARGET):
                        if mark in op.attributes:
                            del op.attributes[mark]


def _row_signature(loop: ir.Operation) -> tuple | None:
    """The loop's bounds and the shapes of the rows its reductions read, where it is a
    tiled reduction of `main` (an scf.forall with a reduction generic in it)."""
    if loop.name != "scf.forall" or loop.parent.name != "func.func" \
            or len(loop.operands) != len(loop.results):  # a bound of dynamic size
        return None
    rows = []
    for op in ir.ops_where(loop, lambda op: op.name == "linalg.generic"):
        iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        if any("reduction" in i for i in iterators):
            rows.append(tuple(ir.ShapedType(op.operands[0].type).shape))
    if not rows:
        return None
    bounds = tuple(str(loop.attributes[name]) for name in
                   ("staticLowerBound", "staticUpperBound", "staticStep"))
    return bounds, frozenset(rows)


def _tensors_read(loop: ir.Operation) -> set:
    """The tensors the loop's body reads from `main` (not its destinations, constants,
    fills or empty tensors), each as the op that computes it (or the argument it is)."""
    destinations = set(loop.operands)
    read = set()
    for value in ir.values_read_from_above(loop):
        owner = ir.operation_of(value.owner)
        if value in destinations or not isinstance(value.type, ir.RankedTensorType):
            continue
        if owner is None:
            read.add(value)
        elif owner.name not in ("arith.constant", "tensor.empty", "linalg.fill") \
                and not _fills(owner):
            read.add(owner)
    return read


def _sibling_pair(module: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """The first (earlier loop, later loop) that fuse, after moving what the later one
    reads up above the earlier one; None where no two do."""
    for function in ir.defined_functions(module):
        ops = [op.operation for op in function.regions[0].blocks[0].operations]
        position = {op: index for index, op in enumerate(ops)}
        loops = [(op, signature) for op in ops if (signature := _row_signature(op)) is not None]
        for index, (source, signature) in enumerate(loops):
            shared = _tensors_read(source)
            for target, other in loops[index + 1:]:
                if other != signature or not shared & _tensors_read(target):
                    continue
                moved = _movable_above(ir.values_read_from_above(target), source, position)
                if moved is None:
                    continue
                for op in sorted(moved, key=position.__getitem__):
                    op.move_before(source)
                return source, target
    return None


def _fills(op: ir.Operation) -> bool:
    """Whether `op` is a generic that reads nothing (a fill of a constant)."""
    return op.name == "linalg.generic" and len(op.operands) == len(op.results)


def _movable_above(reads: list[ir.Value], source: ir.Operation,
                   position: dict) -> set[ir.Operation] | None:
    """The ops between `source` and its sibling that compute what the sibling reads (its
    destinations too), where all of them may move above `source` (views, constants and
    fills of values defined before it); None where one may not."""
    moved: set[ir.Operation] = set()
    pending = list(reads)
    while pending:
        owner = ir.operation_of(pending.pop().owner)
        if owner is None or owner in moved or position.get(owner, -1) < position[source]:
            continue  # a block argument, or defined above the source already
        if owner.name not in _MOVABLE and not _fills(owner):
            return None
        moved.add(owner)
        pending.extend(owner.operands)
    return moved

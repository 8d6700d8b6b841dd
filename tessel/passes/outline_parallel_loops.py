from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import affine, arith, func, scf

from tessel import ir
from tessel.passes.buffer_views import view_root
from tessel.passes.registry import ModulePass, register

# Attribute on a launcher declaration naming the function it runs on every thread;
# being a symbol reference, it also keeps that function alive through symbol-dce.
PARALLEL_BODY = "tessel.parallel_body"
LAUNCHER_SUFFIX = "__launch"
# Positions, in the LLVM signature of an outlined function, of the data pointers of
# buffers that no other argument can reach (see `_distinct_buffer_pointers`).
NOALIAS_POINTERS = "tessel.noalias_pointers"


def _is_constant(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "arith.constant"


def _constant_index(value: ir.Value) -> int | None:
    if not _is_constant(value):
        return None
    return ir.IntegerAttr(ir.operation_of(value.owner).attributes["value"]).value


def _defining_op(value: ir.Value) -> ir.Operation:
    """The op that defines `value`, or for a block argument the op owning the block."""
    owner = value.owner
    return ir.operation_of(owner.owner if isinstance(owner, ir.Block) else owner)


@register
@dataclass(frozen=True)
class OutlineParallelLoopsPass(ModulePass):
    """outline-parallel-loops: move each big one-dimensional scf.parallel loop of a
    function into a function of its own and call it through a launcher that splits
    the iterations across threads.

    A loop `scf.parallel (%i) = (lb) to (ub) step (s)` with constant lb and s becomes
    `func.call @F_parallel_N__launch(0, trip_count, captured...)`; `@F_parallel_N`
    runs iterations [begin, end) of it as an scf.for, with the constants it reads
    cloned in (LLVM sees them) and every other captured value as an argument. The
    launcher is a declaration that `launch-with-openmp` defines after lowering to
    LLVM. Temporaries allocated inside the loop stay inside the outlined function,
    so each thread hoists and owns its own. Rule: loops whose trip count times the
    largest buffer one iteration touches is under `min-elements` stay sequential
    (an OpenMP launch costs microseconds); loops of dynamic size are outlined. A tile
    whose rows are `affine.min` of the rows left and a constant (the last tile is
    shorter) counts at that constant: read as one element, 628 tiles of a 6272 x 384
    bias epilogue ran on one thread, at 2.7x the time.
    """

    name: ClassVar[str] = "outline-parallel-loops"
    min_elements: int = 32768

    def run(self, module: ir.Operation) -> None:
        module_body = module.regions[0].blocks[0]
        for function in ir.defined_functions(module):
            name = ir.StringAttr(function.attributes["sym_name"]).value
            loops = [op.operation for op in function.regions[0].blocks[0].operations
                     if op.operation.name == "scf.parallel" and self.worth_threads(op.operation)]
            for number, loop in enumerate(loops):
                outline(loop, f"{name}_parallel_{number}", module_body)

    def worth_threads(self, loop: ir.Operation) -> bool:
        body = loop.regions[0].blocks[0]
        lower, upper, step = list(loop.operands)[:3]
        if len(body.arguments) != 1 or len(loop.results) != 0:
            return False
        lb, ub, st = _constant_index(lower), _constant_index(upper), _constant_index(step)
        if lb is None or st is None:
            return False
        if ub is None:
            return True
        trip_count = -(-(ub - lb) // st)
        per_iteration = max((elements for op in ir.ops_where(loop, lambda _: True)
                             if (elements := _most_elements(op)) is not None), default=1)
        return trip_count >= 2 and trip_count * per_iteration >= self.min_elements


def _most_elements(op: ir.Operation) -> int | None:
    """The most elements a buffer that `op` makes may hold: its static shape's, or a
    subview's with each dynamic size bounded (a tile at a loop's end is `affine.min`
    of the rows left and the tile's rows); None if unbounded or not a buffer."""
    buffers = [ir.MemRefType(r.type) for r in op.results if isinstance(r.type, ir.MemRefType)]
    if len(buffers) != 1:
        return None
    if buffers[0].has_static_shape:
        return math.prod(buffers[0].shape)
    if op.name != "memref.subview":
        return None
    _, sizes, _ = ir.mixed_values(op, ("static_offsets", "static_sizes", "static_strides"), 1)
    bounds = [size if isinstance(size, int) else _largest_value(size) for size in sizes]
    return None if None in bounds else math.prod(bounds)


def _largest_value(value: ir.Value) -> int | None:
    """An upper bound of the index `value`: a constant, or the least constant of the
    affine.min that computes it; None if neither."""
    constant = _constant_index(value)
    if constant is not None:
        return constant
    owner = ir.operation_of(value.owner)
    if owner is None or owner.name != "affine.min":
        return None
    results = ir.AffineMapAttr(owner.attributes["map"]).value.results
    constants = [e.value for e in results if isinstance(e, ir.AffineConstantExpr)]
    return min(constants, default=None)


def _distinct_buffer_pointers(arguments: list[ir.Value]) -> list[int]:
    """LLVM argument positions (after `begin, end`, a memref of rank r expands to
    allocated pointer, aligned pointer, offset, r sizes, r strides) of the pointers of
    memref arguments whose buffer no other argument views. Those may be `noalias`:
    kernels write only allocations and out-params, which the host allocates fresh, so
    distinct roots never overlap where one of them is written. Without it, LLVM must
    assume any store may clobber any load, and keeps copy loops scalar."""
    roots = [view_root(v) if isinstance(v.type, ir.MemRefType) else None
             for v in arguments]
    positions, position = [], 2
    for value, root in zip(arguments, roots):
        if root is None:
            position += 1
            continue
        if sum(other == root for other in roots if other is not None) == 1:
            positions += [position, position + 1]
        position += 3 + 2 * ir.MemRefType(value.type).rank
    return positions


def _captured_values(loop: ir.Operation, nested: list[ir.Operation]) -> list[ir.Value]:
    """Values defined outside `loop` and read inside it, in first-use order (`nested`:
    the loop and the ops in it, collected before any rewrite: an Operation's hash
    follows its operands)."""
    inside = set(nested)
    captured: list[ir.Value] = []
    for op in nested:
        for value in op.operands:
            if op != loop and _defining_op(value) not in inside and value not in captured:
                captured.append(value)
    return captured


def outline(loop: ir.Operation, name: str, module_body: ir.Block) -> None:
    """Move the one-dimensional scf.parallel `loop` (constant lower bound and step) into
    function `name`, called through its launcher, as the pass docstring says."""
    lower_bound, upper_bound, step = list(loop.operands)[:3]
    lb, st = _constant_index(lower_bound), _constant_index(step)
    nested = ir.ops_where(loop, lambda _: True)
    captured = _captured_values(loop, nested)
    arguments = [v for v in captured if not _is_constant(v)]
    with loop.context, loop.location:
        index = ir.IndexType.get()
        function_type = ir.FunctionType.get([index, index] + [v.type for v in arguments], [])
        with ir.InsertionPoint(module_body):
            outlined = func.FuncOp(name, function_type, visibility="private")
            launcher = func.FuncOp(name + LAUNCHER_SUFFIX, function_type, visibility="private")
        launcher.operation.attributes[PARALLEL_BODY] = ir.FlatSymbolRefAttr.get(name)
        outlined.operation.attributes[NOALIAS_POINTERS] = ir.DenseI64ArrayAttr.get(
            _distinct_buffer_pointers(arguments))
        entry = outlined.add_entry_block()
        replacements = dict(zip(arguments, list(entry.arguments)[2:]))
        with ir.InsertionPoint(entry):
            for value in captured:
                if _is_constant(value):
                    replacements[value] = _defining_op(value).clone().result
            one = arith.ConstantOp(index, 1)
            iterations = scf.ForOp(entry.arguments[0], entry.arguments[1], one)
            with ir.InsertionPoint(iterations.body):
                to_index = ir.AffineMap.get(1, 0, [ir.AffineExpr.get_add(
                    ir.AffineExpr.get_mul(ir.AffineDimExpr.get(0),
                                          ir.AffineConstantExpr.get(st)),
                    ir.AffineConstantExpr.get(lb))])
                induction = affine.apply(to_index, [iterations.induction_variable])
                terminator = scf.YieldOp([])
            func.ReturnOp([])
        for op in nested:
            if op == loop:
                continue  # its bounds stay in the caller
            for number, value in enumerate(op.operands):
                if value in replacements:
                    op.operands[number] = replacements[value]
        body = loop.regions[0].blocks[0]
        body.arguments[0].replace_all_uses_with(induction)
        for op in list(body.operations)[:-1]:  # all but the scf.reduce terminator
            op.move_before(terminator)
        with ir.InsertionPoint(loop):
            ub = _constant_index(upper_bound)
            if ub is not None:
                trip_count = arith.ConstantOp(index, -(-(ub - lb) // st)).result
            else:
                to_trip_count = ir.AffineMap.get(1, 0, [ir.AffineExpr.get_ceil_div(
                    ir.AffineExpr.get_add(ir.AffineDimExpr.get(0),
                                          ir.AffineConstantExpr.get(-lb)),
                    ir.AffineConstantExpr.get(st))])
                trip_count = affine.apply(to_trip_count, [upper_bound])
            zero = arith.ConstantOp(index, 0)
            func.CallOp(launcher, [zero, trip_count] + arguments)
        loop.erase()

"""Reductions inside a kernel: of the whole row (or of the chunk a looped row holds) to
one value, with tl.sum / tl.reduce and the combiner's identity on masked lanes, chunk by
chunk into accumulators in a looped row (an online softmax rescales its sum to the
running max), and of a small window per output point (pooling), unrolled.
"""

from __future__ import annotations

import itertools
import math

import sympy

from tessel import ir
from tessel.passes.fuse_tiles import MAX_POOLING_WINDOW, pooling_window
from tessel.passes.tile_for_threads import loop_ranges
from tessel.targets.triton import online_softmax
from tessel.targets.triton.dtypes import HELD_DTYPES, as_value, element_name
from tessel.targets.triton.index_reductions import IndexReduction, index_reduction
from tessel.targets.triton.indexing import ZERO, Index, points, text, through_map
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import LOOP_INDICES, KernelWriter, reduction_dims

# Reduction combiners: (reduce call, identity by element kind, how to merge the init).
# `{axis}` is the writer's lane_axis: a row's lanes, or each row's of a tile of rows.
COMBINERS = {
    "arith.addf": ("tl.sum({x}, {axis})", "0", "{init} + {x}"),
    "arith.addi": ("tl.sum({x}, {axis})", "0", "{init} + {x}"),
    "arith.mulf": ("tl.reduce({x}, combine_fn=_product, {axis})", "1", "{init} * {x}"),
    "arith.maximumf": ("tl.reduce({x}, combine_fn=_maximum, {axis})", "float('-inf')",
                       "_maximum({init}, {x})"),
    "arith.minimumf": ("tl.reduce({x}, combine_fn=_minimum, {axis})", "float('inf')",
                       "_minimum({init}, {x})"),
    "arith.maxnumf": ("tl.max({x}, {axis})", "float('-inf')", "tl.maximum({init}, {x})"),
    "arith.minnumf": ("tl.min({x}, {axis})", "float('inf')", "tl.minimum({init}, {x})"),
    # torch.all and torch.any (masks); all bits set is -1, or True for i1.
    "arith.andi": ("tl.reduce({x}, combine_fn=_bitwise_and, {axis})", "-1", "{init} & {x}"),
    "arith.ori": ("tl.reduce({x}, combine_fn=_bitwise_or, {axis})", "0", "{init} | {x}"),
}
# Sums and products of f16/bf16 round at every step: they accumulate in f32, as eager's
# reductions do (opmath), and round once. Max and min are exact in any type.
_WIDENEDCOMBINERS = ("arith.addf", "arith.mulf")


def _accumulator_element(reduction: ir.Operation) -> str:
    """The element type a reduction accumulates in: f32 for a sum or product of
    f16/bf16, else its result's."""
    element = element_name(reduction.results[0])
    combiner = ir.combining_op(reduction)
    if element in ("f16", "bf16") and combiner is not None \
            and combiner.name in _WIDENEDCOMBINERS:
        return "f32"
    return element




def _extreme(element: str, smallest: bool) -> str:
    """The smallest (largest) value of `element`: the identity of a max (min)."""
    if element.startswith("f"):
        return "float('-inf')" if smallest else "float('inf')"
    bits = int(element.removeprefix("i"))
    return str(-(1 << (bits - 1)) if smallest else (1 << (bits - 1)) - 1)


def _value_combiner(combiner: str, identity: str) -> tuple[str, str, str]:
    """COMBINERS' entry for an index reduction's value combiner (signed integer maxima
    and minima too, whose identity depends on their width)."""
    if combiner in COMBINERS:
        return COMBINERS[combiner]
    function = "max" if combiner == "arith.maxsi" else "min"
    return (f"tl.{function}({{x}}, {{axis}})", identity, f"tl.{function}imum({{init}}, {{x}})")


def _better(found: IndexReduction) -> str:
    """The operator by which an element replaces the best one (the body's comparison)."""
    return (">" if found.largest else "<") + ("=" if found.keeps_last else "")


def row_reductions(generics: list[ir.Operation]) -> list[ir.Operation]:
    """The generics that reduce whole rows (pooling windows are unrolled per point)."""
    return [op for op in generics if reduction_dims(op) and pooling_window(op) is None]


class ReductionWriter(KernelWriter):
    """A kernel writer that also writes the reductions of the kernel's generics."""

    def generic(self, op: ir.Operation) -> None:
        if len(op.results) and op.results[0] in self.registers \
                and self.registers[op.results[0]][1] == "scalar":
            return  # a looped row's reduction, computed by an earlier pass
        window = pooling_window(op)
        if window is not None:
            self.window_reduction(op, self.domain(op), window)
        elif reduction_dims(op):
            self.walk_dims = None
            self.reduce_row(op, *self.local_indices(self.domain(op)))
        else:
            self.elementwise(op)

    def reduce_row(self, op: ir.Operation, indices: list[Index], kind: str) -> None:
        """A reduction of the whole row (or of the chunk a looped row holds) to one
        value: its prologue per lane, then the combiner across the lanes."""
        maps = ir.indexing_maps(op)
        block = op.regions[0].blocks[0]
        n_inputs = len(op.operands) - len(op.results)
        body_ops = [o.operation for o in block.operations]
        used = {v for body_op in body_ops for v in body_op.operands}
        names: dict = {LOOP_INDICES: (indices, kind)}
        for argument, operand, affine_map in zip(block.arguments, op.operands[:n_inputs], maps):
            if argument in used:  # a pooling window, say, only gives the loop its range
                names[argument] = self.read(operand, affine_map, indices, kind)
        if kind != "row":
            raise UnsupportedKernel("linalg.generic", "a reduction of part of a row")
        if len(op.results) != 1:
            self.reduce_row_to_index(op, index_reduction(op), names)
            return
        out_argument = block.arguments[n_inputs]
        combiner = ir.combining_op(op)
        if combiner is None or combiner.name not in COMBINERS:
            raise UnsupportedKernel("linalg.generic", "a reduction whose combiner is "
                                    f"{combiner.name if combiner else 'a block argument'}")
        others = [v for v in combiner.operands if v != out_argument]
        if len(others) != 1 or combiner != body_ops[-2]:
            raise UnsupportedKernel(combiner.name, "the reduction's init is not one operand")
        for body_op in body_ops[:-2]:
            self.body_op(body_op, names)
        if any(out_argument == v for body_op in body_ops[:-2] for v in body_op.operands):
            raise UnsupportedKernel("linalg.generic", "the reduction reads its init twice")
        _, identity, merge = COMBINERS[combiner.name]
        element = element_name(op.results[0])
        if element == "i1" and identity == "-1":
            identity = "1"
        masked = self.fresh()
        prologue = as_value(self.value(others[0], names))
        accumulated = HELD_DTYPES[_accumulator_element(op)]
        if accumulated != HELD_DTYPES[element]:
            prologue = f"{prologue}.to({accumulated})"
        lanes = f"tl.full({self.lanes_shape()}, {identity}, {accumulated})"
        self.emit(f"{masked} = tl.where(mask, {prologue}, {lanes})")
        if op in self.accumulating:
            # A looped row: combine chunk by chunk; _looped_pass reduces after the loop.
            self.accumulate(op, masked, merge, lanes)
            return
        self.finish_reduction(op, masked)

    def accumulate(self, op: ir.Operation, masked: str, merge: str, initial: str) -> None:
        """Merge a chunk's `masked` values into `op`'s accumulator, lane by lane. A sum
        with a running max (online softmax) first rescales what it has to that max's
        new value; its summands, exp(x - lanes' max), are 0 where a lane has seen only
        -inf."""
        accumulator = self.fresh("acc")
        self.accumulators[op] = (accumulator, initial)
        if op in self.running_maxima.values():
            before = self.fresh("max")
            self.emit(f"{before} = {accumulator}")
            self.running[op.results[0]] = (accumulator, before)
        elif op in self.running_maxima:
            lanes, before = self.running[self.running_maxima[op].results[0]]
            masked = f"tl.where({lanes} == float('-inf'), 0.0, {masked})"
            self.emit(f"{accumulator} = {accumulator} * "
                      f"{online_softmax.rescale(before, lanes)} + {masked}")
            return
        self.emit(f"{accumulator} = {merge.format(init=accumulator, x=masked)}")

    def reduce_row_to_index(self, op: ir.Operation, found: IndexReduction, names: dict) -> None:
        """An index reduction (index_reductions.py) of the row, or in a looped row, of
        its chunk into per-lane accumulators: each lane keeps the best element it has
        seen, its row position and its candidate index."""
        for body_op in found.computed_first:
            self.body_op(body_op, names)
        value_element = element_name(op.results[found.value_result])
        held = HELD_DTYPES[value_element]
        identity = _extreme(value_element, smallest=found.largest)
        size = text(points(self.row_shape))
        element = as_value(self.value(found.element, names))
        index_type = HELD_DTYPES[element_name(op.results[found.index_result])]
        candidate = f"({as_value(self.value(found.candidate, names))}).to({index_type})"
        lanes = "tl.full([BLOCK], {}, {})"
        looped = op in self.accumulating
        valid = self.fresh("valid")
        if found.stops_at_nan:
            # Elements from the row's first NaN on: the value is NaN, no comparison holds.
            stop = self.fresh("stop")
            nan_at = f"tl.min(tl.where(mask & ({element} != {element}), r, {size}), axis=0)"
            if looped:
                self.accumulators[(op, "stop")] = (stop, size)
                self.emit(f"{stop} = tl.minimum({stop}, {nan_at})")
            else:
                self.emit(f"{stop} = {nan_at}")
            self.emit(f"{valid} = mask & (r < {stop})")
        elif value_element.startswith("f"):
            self.emit(f"{valid} = mask & ({element} == {element})")  # NaNs are never selected
        else:
            self.emit(f"{valid} = mask")
        value_lanes = self.fresh()
        self.emit(f"{value_lanes} = tl.where(mask, {element}, {lanes.format(identity, held)})")
        _, _, merge = _value_combiner(found.combiner, identity)
        if looped:
            best, at, chosen, value = (self.fresh(stem) for stem in ("best", "at", "chosen", "acc"))
            unset = "-1" if found.keeps_last else size
            self.accumulators[op] = (value, lanes.format(identity, held))
            self.accumulators[(op, "best")] = (best, lanes.format(identity, held))
            self.accumulators[(op, "at")] = (at, lanes.format(unset, "tl.int64"))
            self.accumulators[(op, "candidate")] = (chosen, lanes.format(0, index_type))
            better = self.fresh("better")
            self.emit(f"{better} = {valid} & ({element} {_better(found)} {best})")
            self.emit(f"{best} = tl.where({better}, {element}, {best})")
            self.emit(f"{at} = tl.where({better}, r, {at})")
            self.emit(f"{chosen} = tl.where({better}, {candidate}, {chosen})")
            self.emit(f"{value} = {merge.format(init=value, x=value_lanes)}")
            return
        best, at = self.fresh("best"), self.fresh("at")
        self.emit(f"{best} = tl.where({valid}, {element}, {lanes.format(identity, held)})")
        self.emit(f"{at} = tl.where({valid}, r, {'-1' if found.keeps_last else size})")
        self.finish_index_reduction(op, found, value_lanes, best, at, candidate)

    def finish_index_reduction(self, op: ir.Operation, found: IndexReduction, value_lanes: str,
                               best: str, at: str, candidate: str) -> None:
        """The index reduction `op` across its lanes (each lane's best element, its row
        position and candidate), merged with its inits: scalar registers."""
        n_inputs = len(op.operands) - len(op.results)
        maps = ir.indexing_maps(op)
        value_element = element_name(op.results[found.value_result])
        identity = _extreme(value_element, smallest=found.largest)
        inits = [self.read(op.operands[n_inputs + i], maps[n_inputs + i],
                           [ZERO] * len(loop_ranges(op)), "scalar") for i in range(2)]
        value_init, index_init = inits[found.value_result], inits[found.index_result]
        if not found.stops_at_nan and value_element.startswith("f") and (
                not value_init[1].startswith("literal") or "nan" in value_init[0]):
            # From a NaN, a NaN-ignoring combiner takes the first element as its value
            # without selecting its index: not the reduction across lanes.
            raise UnsupportedKernel(found.combiner, "an index reduction from an initial "
                                    "value that may be NaN")
        size = text(points(self.row_shape))
        reduce_call, _, merge = _value_combiner(found.combiner, identity)
        row_best, position, chosen, value, index = (
            self.fresh(stem) for stem in ("best", "at", "chosen", "v", "index"))
        extreme = "tl.max" if found.largest else "tl.min"
        self.emit(f"{row_best} = {extreme}({best}, axis=0)")
        if found.keeps_last:
            self.emit(f"{position} = tl.max(tl.where({best} == {row_best}, {at}, -1), axis=0)")
            located = f"({position} >= 0)"
        else:
            self.emit(f"{position} = tl.min(tl.where({best} == {row_best}, {at}, {size}), axis=0)")
            located = f"({position} < {size})"
        self.emit(f"{chosen} = tl.sum(tl.where({at} == {position}, {candidate}, 0), axis=0)")
        self.emit(f"{index} = tl.where({located} & ({row_best} {_better(found)} "
                  f"{as_value(value_init)}), {chosen}, {as_value(index_init)})")
        reduced = reduce_call.format(x=value_lanes, axis=self.lane_axis())
        self.emit(f"{value} = {merge.format(init=as_value(value_init), x=reduced)}")
        self.registers[op.results[found.value_result]] = (value, "scalar")
        self.registers[op.results[found.index_result]] = (index, "scalar")

    def finish_reduction(self, op: ir.Operation, row: str) -> None:
        """The reduction `op` of the vector `row` (masked with its identity), merged with
        its init: a scalar register."""
        if len(op.results) != 1:  # an index reduction's accumulators, in a looped row
            found = index_reduction(op)
            best, at, chosen = (self.accumulators[(op, part)][0]
                                for part in ("best", "at", "candidate"))
            self.finish_index_reduction(op, found, row, best, at, chosen)
            return
        reduce_call, _, merge = COMBINERS[ir.combining_op(op).name]
        reduced = self.fresh()
        self.emit(f"{reduced} = {reduce_call.format(x=row, axis=self.lane_axis())}")
        n_inputs = len(op.operands) - 1
        init, _ = self.read(op.operands[n_inputs], ir.indexing_maps(op)[n_inputs],
                                    [ZERO] * len(loop_ranges(op)), "scalar")
        result = self.fresh()
        # A half sum stays in its f32 accumulator, rounded once where it is stored.
        self.emit(f"{result} = {merge.format(init=init, x=reduced)}")
        self.registers[op.results[0]] = (result, "scalar")

    def window_reduction(self, op: ir.Operation, domain: list[int | sympy.Symbol],
                         reductions: list[int]) -> None:
        """A reduction over a small window per output point (pooling): unrolled, one
        step per window position, the body applied as written (any combiner)."""
        if not all(isinstance(domain[d], int) for d in reductions):
            raise UnsupportedKernel("linalg.generic", "a reduction window of dynamic size")
        window = [range(domain[d]) for d in reductions]
        if math.prod(len(w) for w in window) > MAX_POOLING_WINDOW:
            raise UnsupportedKernel("linalg.generic", f"a reduction window of "
                                    f"{[len(w) for w in window]} per point")
        maps = ir.indexing_maps(op)
        block = op.regions[0].blocks[0]
        n_inputs = len(op.operands) - len(op.results)
        if any(m != maps[n_inputs] for m in maps[n_inputs + 1:]):
            raise UnsupportedKernel("linalg.generic", "results written through different maps")
        indices, kind = self.result_indices(domain, maps[n_inputs])
        body_ops = [o.operation for o in block.operations]
        used = {v for body_op in body_ops for v in body_op.operands}
        # One accumulator per result (an argmax's value and index), in order.
        accumulators = [self.read(init, maps[n_inputs], indices, kind, frozenset(reductions))
                        for init in list(op.operands)[n_inputs:]]
        for position in itertools.product(*window):
            at = list(indices)
            for d, index in zip(reductions, position):
                at[d] = sympy.Integer(index)
            names = dict(zip(list(block.arguments)[n_inputs:], accumulators))
            names[LOOP_INDICES] = (at, kind)
            for argument, operand, affine_map in zip(block.arguments, op.operands, maps):
                if argument in used and argument not in names:
                    names[argument] = self.read(operand, affine_map, at, kind)
            for body_op in body_ops[:-1]:
                self.body_op(body_op, names)
            accumulators = [self.value(v, names) for v in body_ops[-1].operands]
        for result, accumulator in zip(op.results, accumulators):
            self.registers[result] = (as_value(accumulator), kind)
            self.points[result] = through_map(maps[n_inputs], indices)


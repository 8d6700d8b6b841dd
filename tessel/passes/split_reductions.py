from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, linalg

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.linalg_builders import constant_fill, index_constant
from tessel.passes.registry import ModulePass, register
from tessel.passes.tile_for_threads import loop_ranges

# A reduction's combining op -> the value that leaves any other unchanged under it (each
# partial starts from it; the original init joins once, in the combine).
_IDENTITIES = {
    "arith.addf": 0.0,
    "arith.mulf": 1.0,
    "arith.maximumf": -math.inf,
    "arith.maxnumf": -math.inf,
    "arith.minimumf": math.inf,
    "arith.minnumf": math.inf,
    "arith.addi": 0,
    "arith.muli": 1,
    "arith.ori": 0,
    "arith.xori": 0,
    "arith.andi": -1,
    "arith.maxsi": lambda width: -(1 << (width - 1)),
    "arith.minsi": lambda width: (1 << (width - 1)) - 1,
}

# Inductor's thresholds (torch/_inductor/ir.py, Reduction.num_splits, inner
# reductions): a program reduces with 8 warps of 32 threads, each thread taking 32 to
# 512 values; an SM holds 2048 threads.
_THREADS_PER_PROGRAM = 256
_THREADS_PER_SM = 2048
_FEWEST_PER_THREAD = 32
_MOST_PER_THREAD = 512
# The GPU the passes size programs for, unless told: the H100's SMs.
MULTIPROCESSORS = 132


def fits_one_program(reduced: int) -> bool:
    """Whether one program reduces `reduced` values alone, whatever the outputs (a few
    blocks of values: no split)."""
    return reduced <= _FEWEST_PER_THREAD * _THREADS_PER_PROGRAM


def wanted_splits(reduced: int, outputs: int, multiprocessors: int) -> int:
    """How many programs should share each of `outputs` reductions of `reduced` values,
    as Inductor decides for an inner reduction: none while the outputs alone give every
    SM two programs, or a row fits a few blocks; else enough that each thread of a
    program reduces 32 values (small tensors), 512 (large ones), or in between what
    gives the GPU about `multiprocessors * 2048 / 512` programs."""
    if outputs >= 2 * multiprocessors or fits_one_program(reduced):
        return 1
    total = reduced * outputs
    if total <= _FEWEST_PER_THREAD * multiprocessors * _THREADS_PER_SM:
        per_thread = _FEWEST_PER_THREAD
    elif total < _MOST_PER_THREAD * multiprocessors * _THREADS_PER_SM:
        programs = multiprocessors * _THREADS_PER_SM // (2 * _THREADS_PER_PROGRAM)
        per_output = -(-programs // outputs)
        per_thread = -(-reduced // (_THREADS_PER_PROGRAM * per_output))
    else:
        per_thread = _MOST_PER_THREAD
    return -(-reduced // (per_thread * _THREADS_PER_PROGRAM))


# The rows a GPU program reduces side by side where they lie across memory: each
# channel of an image the GPU target holds channels-last, each column of a matrix
# (targets/triton/row_tiles.py: a tile of 32 rows).
CHANNELS_PER_PROGRAM = 32


def _per_channel_of_an_image(op: ir.Operation, reduced: list[int]) -> bool:
    """Whether `op` reduces an [N, C, ...] image (rank 3 to 5) over all its dims but
    the channels (dim 1), as a batch norm's statistics and its backward's sums do. The
    GPU target holds such images channels-last (targets/triton/layouts.py), so each
    channel's values lie across memory, C apart."""
    inputs = len(op.operands) - len(op.results)
    for affine_map in ir.indexing_maps(op)[:inputs]:
        positions = ir.dim_positions(affine_map)
        if not 3 <= len(positions) <= 5 or None in positions:
            continue
        if positions[1] not in reduced and set(reduced) == set(positions) - {positions[1]}:
            return True
    return False


def _columns_of_a_tensor(op: ir.Operation, reduced: list[int]) -> bool:
    """Whether an input that `op` reads at every loop dim has a kept dim innermost (a
    linear layer's bias gradient sums the columns of [tokens, features]): its rows lie
    across memory, one element of each in a line."""
    inputs = len(op.operands) - len(op.results)
    loops = ir.indexing_maps(op)[-1].n_dims
    for affine_map in ir.indexing_maps(op)[:inputs]:
        positions = ir.dim_positions(affine_map)
        if len(positions) == loops and None not in positions and positions[-1] not in reduced:
            return True
    return False


def _divisors(value: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(value) + 1) if value % d == 0]
    return sorted(set(small + [value // d for d in small]))


@dataclass(frozen=True)
class Split:
    """Where a reduction splits: its reduced dims before `dim` (in loop order) become
    whole dims of the partial results, and `dim` is cut into `factor` pieces (its
    outer part joins them; factor == its extent: all of it)."""

    whole: tuple[int, ...]
    dim: int
    factor: int


def choose_split(ranges: list[int], reduced: list[int], wanted: int,
                 cut_dims: set[int]) -> Split | None:
    """The split whose number of partial results is nearest `wanted` (by ratio), at
    most twice as many (tiny pieces would each cost a program): whole leading reduced
    dims, then a divisor of the next (no masking: every piece is full). Only the dims
    in `cut_dims` may be cut short of their extent; the last reduced values stay a
    reduction."""
    total = math.prod(ranges[d] for d in reduced)
    best, best_distance = None, math.inf
    for index, dim in enumerate(reduced):
        whole = tuple(reduced[:index])
        before = math.prod(ranges[d] for d in whole)
        if before > wanted:
            break
        for factor in _divisors(ranges[dim]):
            partials = before * factor
            if factor == 1 or partials >= total or partials > 2 * wanted or (
                    factor < ranges[dim] and dim not in cut_dims):
                continue
            distance = abs(math.log(partials / wanted))
            if distance < best_distance:
                best, best_distance = Split(whole, dim, factor), distance
    return best


def _iterators(op: ir.Operation) -> list[bool]:
    """Per loop dim: whether it is a reduction."""
    return ["reduction" in str(kind) for kind in op.attributes["iterator_types"]]


def _combiners(op: ir.Operation) -> list[ir.Operation] | None:
    """Per result, the op that combines a value with the accumulator, when the
    accumulator is read by nothing else and the combiner is one of _IDENTITIES."""
    block = op.regions[0].blocks[0]
    yielded = list(block.operations)[-1].operation.operands
    inputs = len(op.operands) - len(op.results)
    combiners = []
    for number, value in enumerate(yielded):
        accumulator = block.arguments[inputs + number]
        combiner = ir.operation_of(value.owner)
        uses = [ir.operation_of(use.owner) for use in accumulator.uses]
        if combiner is None or combiner.name not in _IDENTITIES or uses != [combiner] \
                or list(combiner.operands).count(accumulator) != 1:
            return None
        combiners.append(combiner)
    return combiners


def _cut_dims(maps: list, inputs: int) -> set[int]:
    """Loop dims that every input reads as a whole tensor dim, if at all (such a dim
    can be cut in two by reshaping the tensors that read it)."""
    dims = set(range(maps[0].n_dims))
    for affine_map in maps[:inputs]:
        for expr in affine_map.results:
            if not isinstance(expr, ir.AffineDimExpr):
                dims -= ir.dims_read(expr)
        plain = [e.position for e in affine_map.results if isinstance(e, ir.AffineDimExpr)]
        dims -= {d for d in plain if plain.count(d) > 1}
    return dims


@register
@dataclass(frozen=True)
class SplitReductionsPass(ModulePass):
    """split-reductions: reduce few, long rows in two steps, so that a GPU runs many
    programs on them: partial results over pieces of each row, then their combine.

    A row kernel runs one program per output point: GroupNorm(1, C) over an image
    batch, or `x.sum()`, is a handful of programs on a GPU of 132 SMs. A
    linalg.generic reduction with static sizes whose combiners (add, mul, max, min,
    and, or, xor) read the accumulator once splits when Inductor's rule would
    (`wanted_splits`, from the number of outputs, the reduced values and
    `multiprocessors`). Its leading reduced dims (loop order) become whole parallel
    dims of the partial results, and the next one is cut in two by an expand_shape of
    every input that reads it, the outer part parallel too; the number of pieces is
    the divisor nearest the wanted one. The partial generic keeps the whole body
    (producers fused into it stay there), accumulating from the combiners' identity;
    a second generic combines the partials into the original init. Sums of x and of
    x * x, and the two-pass mean and variance, split each on its own. Results differ
    from one program's by float rounding only.
    """

    name: ClassVar[str] = "split-reductions"
    multiprocessors: int = MULTIPROCESSORS

    def run(self, module: ir.Operation) -> None:
        reductions = ir.ops_where(module, lambda op: op.name == "linalg.generic"
                                  and not is_contraction(op) and any(_iterators(op)))
        with module.context:
            for op in reductions:
                split = self.decide(op)
                if split is not None:
                    _split(op, split)

    def decide(self, op: ir.Operation) -> Split | None:
        """Where `op` splits, or None to leave it whole."""
        ranges = loop_ranges(op)
        shapes = {tuple(ir.RankedTensorType(r.type).shape) for r in op.results}
        if None in ranges or len(shapes) != 1 or _combiners(op) is None:
            return None  # one combine generic takes every result: they share a shape
        reduced = [d for d, is_reduction in enumerate(_iterators(op)) if is_reduction]
        outputs = math.prod(r for d, r in enumerate(ranges) if d not in reduced)
        values = math.prod(ranges[d] for d in reduced)
        if _per_channel_of_an_image(op, reduced) or _columns_of_a_tensor(op, reduced):
            # A program reduces CHANNELS_PER_PROGRAM rows side by side: count each
            # group as one output of that many rows (768 columns are 24 programs).
            outputs = -(-outputs // CHANNELS_PER_PROGRAM)
            values *= CHANNELS_PER_PROGRAM
        wanted = wanted_splits(values, outputs, self.multiprocessors)
        if wanted <= 1:
            return None
        inputs = len(op.operands) - len(op.results)
        return choose_split(ranges, reduced, wanted, _cut_dims(ir.indexing_maps(op), inputs))


def _identity_attribute(combiner: str, element_type) -> ir.Attribute:
    value = _IDENTITIES[combiner]
    if isinstance(value, float):
        return ir.FloatAttr.get(element_type, value)
    if callable(value):
        value = value(ir.IntegerType(element_type).width)
    return ir.IntegerAttr.get(element_type, value)


def _iterator_types(reductions: list[bool]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(
        f"#linalg.iterator_type<{'reduction' if r else 'parallel'}>") for r in reductions])


def _maps(maps: list) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def _generic(results: list, inputs: list, inits: list, maps: list,
             reductions: list[bool]) -> ir.Operation:
    return ir.Operation.create(
        "linalg.generic", results=results, operands=[*inputs, *inits],
        attributes={"indexing_maps": _maps(maps), "iterator_types": _iterator_types(reductions),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(inputs), len(inits)])},
        regions=1)


def _filled(shape: list[int], combiner: str, element_type) -> ir.Value:
    """A tensor of `shape` holding the identity of `combiner`, as the generic fill
    that fuse-tiles clones for its reader."""
    constant = ir.Operation.create("arith.constant", results=[element_type], attributes={
        "value": _identity_attribute(combiner, element_type)})
    return constant_fill(ir.RankedTensorType.get(shape, element_type), constant.results[0])


def _expand(value: ir.Value, tensor_dim: int, factor: int) -> ir.Value:
    """`value` with its dim `tensor_dim` cut into (factor, size / factor)."""
    tensor = ir.RankedTensorType(value.type)
    shape = list(tensor.shape)
    shape[tensor_dim:tensor_dim + 1] = [factor, shape[tensor_dim] // factor]
    groups, next_dim = [], 0
    for dim in range(tensor.rank):
        width = 2 if dim == tensor_dim else 1
        groups.append(list(range(next_dim, next_dim + width)))
        next_dim += width
    return ir.Operation.create(
        "tensor.expand_shape", results=[ir.RankedTensorType.get(shape, tensor.element_type)],
        operands=[value],
        attributes={"reassociation": ir.reassociation_attr(groups),
                    "static_output_shape": ir.DenseI64ArrayAttr.get(shape)}).results[0]


def _split(op: ir.Operation, split: Split) -> None:
    ranges = loop_ranges(op)
    reductions = _iterators(op)
    maps = ir.indexing_maps(op)
    inputs = len(op.operands) - len(op.results)
    combiners = _combiners(op)
    cut = split.factor < ranges[split.dim]
    # Loop dims of the partial generic: the old ones, `dim` followed by its inner piece
    # when cut; `new[d]` is where old dim d went.
    new = [d + (1 if cut and d > split.dim else 0) for d in range(len(ranges))]
    rank = len(ranges) + (1 if cut else 0)
    partial_reductions = [False] * rank
    for d, is_reduction in enumerate(reductions):
        if is_reduction and d not in split.whole and d != split.dim:
            partial_reductions[new[d]] = True
    if cut:
        partial_reductions[new[split.dim] + 1] = True
    moved = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(n) for n in new])
    split_dims = [new[d] for d in (*split.whole, split.dim)]
    split_sizes = [ranges[d] for d in split.whole] + [split.factor]

    with op.location, ir.InsertionPoint(op):
        partial_inputs, partial_maps = [], []
        for operand, affine_map in zip(list(op.operands)[:inputs], maps[:inputs]):
            results = []
            for tensor_dim, expr in enumerate(affine_map.results):
                if cut and isinstance(expr, ir.AffineDimExpr) and expr.position == split.dim:
                    operand = _expand(operand, tensor_dim, split.factor)
                    results += [ir.AffineDimExpr.get(new[split.dim]),
                                ir.AffineDimExpr.get(new[split.dim] + 1)]
                else:
                    results.append(expr.compose(moved))
            partial_inputs.append(operand)
            partial_maps.append(ir.AffineMap.get(rank, 0, results))
        partial_inits, partial_types = [], []
        for result, affine_map, combiner in zip(op.results, maps[inputs:], combiners):
            tensor = ir.RankedTensorType(result.type)
            shape = list(tensor.shape) + split_sizes
            partial_inits.append(_filled(shape, combiner.name, tensor.element_type))
            partial_types.append(ir.RankedTensorType.get(shape, tensor.element_type))
            partial_maps.append(ir.AffineMap.get(rank, 0, [
                *[e.compose(moved) for e in affine_map.results],
                *[ir.AffineDimExpr.get(d) for d in split_dims]]))
        partial = _generic(partial_types, partial_inputs, partial_inits, partial_maps,
                           partial_reductions)
        old_block = op.regions[0].blocks[0]
        block = partial.regions[0].blocks.append(*[a.type for a in old_block.arguments])
        for old_argument, argument in zip(old_block.arguments, block.arguments):
            old_argument.replace_all_uses_with(argument)
        for inner in list(old_block.operations):
            block.append(inner.operation)
        _renumber_loop_indices(block, new, split.dim if cut else None,
                               ranges[split.dim] // split.factor)
        _combine(op, partial, combiners, len(split_sizes))


def _renumber_loop_indices(block: ir.Block, new: list[int], cut_dim: int | None,
                           inner_size: int) -> None:
    """The body's `linalg.index` ops (a gather's loop position: a loss reading the
    log-probability of each pixel's label) asked of the partial generic's loop dims:
    old dim d is `new[d]`, and a cut dim is its outer piece times `inner_size` plus
    its inner piece."""
    for old in list(block.operations):
        if old.operation.name != "linalg.index":
            continue
        dim = ir.IntegerAttr(old.operation.attributes["dim"]).value
        with ir.InsertionPoint(old.operation):
            position = linalg.IndexOp(new[dim]).result
            if dim == cut_dim:
                position = arith.addi(arith.muli(position, index_constant(inner_size)),
                                      linalg.IndexOp(new[dim] + 1).result)
        old.operation.results[0].replace_all_uses_with(position)
        old.operation.erase()


def _combine(op: ir.Operation, partial: ir.Operation, combiners: list[ir.Operation],
             split_rank: int) -> None:
    """Replace `op` by a generic that combines `partial`'s results (each `split_rank`
    dims longer than its result) into `op`'s inits."""
    inits = list(op.operands)[len(op.operands) - len(op.results):]
    rank = ir.RankedTensorType(op.results[0].type).rank
    identity = ir.AffineMap.get_identity(rank + split_rank)
    output = ir.AffineMap.get(rank + split_rank, 0,
                              [ir.AffineDimExpr.get(d) for d in range(rank)])
    combine = _generic([r.type for r in op.results], list(partial.results), inits,
                       [identity] * len(inits) + [output] * len(inits),
                       [False] * rank + [True] * split_rank)
    element_types = [ir.RankedTensorType(r.type).element_type for r in op.results]
    block = combine.regions[0].blocks.append(*element_types, *element_types)
    with ir.InsertionPoint(block):
        combined = []
        for number, combiner in enumerate(combiners):
            attributes = {name: combiner.attributes[name] for name in combiner.attributes}
            combined.append(ir.Operation.create(
                combiner.name, results=[element_types[number]],
                operands=[block.arguments[number], block.arguments[len(combiners) + number]],
                attributes=attributes).results[0])
        ir.Operation.create("linalg.yield", operands=combined)
    for old, result in zip(op.results, combine.results):
        old.replace_all_uses_with(result)
    op.erase()

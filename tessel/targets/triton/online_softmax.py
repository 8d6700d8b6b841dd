"""Online softmax: a row's max and its sum of exp(x - max) in one pass over the row.

A row longer than a block reduces in chunk loops, one per reduction, before the loop
that stores (row_kernel._looped_pass). softmax and log_softmax (cross_entropy's)
reduce twice: the max m of x, then the sum of exp(x - m), which needs m. Both fit one chunk
loop when each lane keeps its own running max and rescales its running sum by
exp(old max - new max) whenever that max grows; after the loop, each lane's sum is
rescaled to the row's max and the lanes are summed (Milakov and Gimelshein, "Online
normalizer calculation for softmax", 2018). The row is then read twice instead of
three times, as Inductor does it.

The pair is recognized on the row loop's linalg.generic ops: a max reduction, and the
very next reduction a sum whose summand is exp(a - m), where `a` is what the max
reduced (the same operand through the same map, or the same op) and `m` the max's
result. Each summand is then at most 1 for its lane's running max, as it is for the
row's: the rewrite cannot overflow where the two-pass one does not.
"""

from __future__ import annotations

from tessel import ir

_MAXIMA = ("arith.maximumf", "arith.maxnumf")


def running_maxima(reductions: list[ir.Operation]) -> dict[ir.Operation, ir.Operation]:
    """For each sum in `reductions` (a row loop's reductions, in order) that can
    accumulate in the same chunk loop as the max before it: sum -> max."""
    pairs = {}
    for maximum, total in zip(reductions, reductions[1:]):
        if maximum in pairs or _combiner(maximum) not in _MAXIMA \
                or _combiner(total) != "arith.addf":
            continue
        if any(str(op.results[0].type.element_type) != "f32" for op in (maximum, total)):
            continue  # tl.exp of the rescale factor wants f32
        if _sums_exp_below(total, maximum):
            pairs[total] = maximum
    return pairs


def rescale(old: str, new: str) -> str:
    """The factor that takes a sum of exp(x - old) to one of exp(x - new) (Triton source);
    1 where the two are equal, so that lanes that have seen only -inf stay finite."""
    return f"tl.where({old} == {new}, 1.0, tl.exp({old} - {new}))"


def _combiner(reduction: ir.Operation) -> str | None:
    combiner = ir.combining_op(reduction)
    return combiner.name if combiner is not None else None


def _summand(reduction: ir.Operation) -> ir.Value | None:
    """The value a reduction combines into its accumulator (its prologue's result)."""
    block = reduction.regions[0].blocks[0]
    accumulator = block.arguments[len(block.arguments) - 1]
    combiner = ir.combining_op(reduction)
    others = [v for v in combiner.operands if v != accumulator] if combiner else []
    return others[0] if len(others) == 1 else None


def _sums_exp_below(total: ir.Operation, maximum: ir.Operation) -> bool:
    """Whether `total` sums exp(a - m): `a` what `maximum` reduced, `m` its result."""
    summand = _summand(total)
    reduced = _summand(maximum)
    if summand is None or reduced is None:
        return False
    exp = ir.operation_of(_through_generics(summand).owner)
    if exp is None or exp.name != "math.exp":
        return False
    difference = ir.operation_of(_through_generics(exp.operands[0]).owner)
    if difference is None or difference.name != "arith.subf":
        return False
    minuend, subtrahend = (_through_generics(v) for v in difference.operands)
    return _read_of(subtrahend) == maximum.results[0] and \
        _origin(minuend) == _origin(_through_generics(reduced))


def _through_generics(value: ir.Value) -> ir.Value:
    """`value` followed out of block arguments into the element-wise generic of the same
    row loop that computed it, read through the identity map; where it is read from
    anything else (a slice of an input, a reduction's result), the block argument."""
    while isinstance(value, ir.BlockArgument):
        generic = ir.operation_of(value.owner.owner)
        if value.arg_number >= len(generic.operands) - len(generic.results):
            return value  # an output's init
        operand = generic.operands[value.arg_number]
        producer = ir.operation_of(operand.owner)
        affine_map = ir.indexing_maps(generic)[value.arg_number]
        if producer is None or producer.name != "linalg.generic" \
                or "reduction" in str(producer.attributes["iterator_types"]) \
                or not ir.is_identity_map(affine_map):
            return value
        yielded = list(producer.regions[0].blocks[0].operations)[-1].operation
        value = yielded.operands[list(producer.results).index(operand)]
    return value


def _read_of(value: ir.Value) -> ir.Value | None:
    """The tensor a generic's input block argument reads; None for anything else."""
    if not isinstance(value, ir.BlockArgument):
        return None
    return ir.operation_of(value.owner.owner).operands[value.arg_number]


def _origin(value: ir.Value):
    """What identifies a row value: the tensor and map an input block argument reads,
    else the value itself (an op's result)."""
    if isinstance(value, ir.BlockArgument):
        generic = ir.operation_of(value.owner.owner)
        return _read_of(value), str(ir.indexing_maps(generic)[value.arg_number])
    return value

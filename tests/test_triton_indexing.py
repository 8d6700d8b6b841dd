"""The Triton target's index expressions (targets/triton/indexing.py): built as sympy
values, printed to Triton text once."""

import sympy

from tessel.targets.triton.indexing import (
    LANES,
    ZERO,
    FloorDiv,
    Modulo,
    address,
    named,
    points,
    strides,
    symbol,
    text,
    walked,
)


def test_a_walk_of_the_lanes_divides_by_the_inner_extents_and_takes_the_modulo():
    size = symbol("size0")
    assert [text(index) for index in walked([4, 8, size], [2, 1, 0])] == [
        "((r // (8*size0)) % 4)", "((r // size0) % 8)", "(r % size0)"]
    # A dim of size 1 that the walk skips is 0.
    assert walked([3, 1, 5], [2, 0])[1] == ZERO


def test_an_address_folds_zero_offsets_and_unit_factors_and_keeps_one_term_per_dim():
    row = symbol("row0")
    offset = address(strides("in0", 3), [row, ZERO, sympy.Integer(2)],
                     [ZERO, Modulo(LANES, 8), sympy.Integer(0)])
    assert text(offset) == "in0_stride0*row0 + in0_stride1*(r % 8) + 2*in0_stride2"
    assert text(address(strides("out0", 2), [ZERO, ZERO], [ZERO, ZERO])) == "0"


def test_floor_division_and_modulo_fold_only_literals_and_unit_divisors():
    assert FloorDiv(sympy.Integer(17), sympy.Integer(5)) == 3
    assert Modulo(sympy.Integer(17), sympy.Integer(5)) == 2
    assert FloorDiv(LANES, 1) == LANES and Modulo(LANES, 1) == ZERO
    # No rewriting into rationals: (r + 4) // 8 prints as written.
    assert text(FloorDiv(LANES + 4, 8) * 3) == "3*((r + 4) // 8)"


def test_the_points_of_a_box_are_an_int_when_static_else_an_expression():
    assert points([2, 3, 4]) == 24 and isinstance(points([2, 3, 4]), int)
    assert text(points([8, symbol("size1")])) == "8*size1"


def test_a_size_times_itself_prints_as_a_product_not_a_power():
    """sympy collects size0 * size0 into size0**2; Triton's JIT takes no integer power."""
    size = symbol("size0")
    assert text(points([4, size, size])) == "4*size0*size0"
    assert text(walked([4, size, size], [2, 1, 0])[0]) == "((r // (size0*size0)) % 4)"


def test_a_body_value_used_as_an_index_keeps_its_precedence():
    assert text(named("v3") * symbol("in0_stride0")) == "in0_stride0*v3"
    assert text(named("2*x + 1") * symbol("in0_stride0")) == "(2*x + 1)*in0_stride0"
    assert named("7") == 7

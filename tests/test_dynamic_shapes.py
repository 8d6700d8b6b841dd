"""Dynamic shapes: one compiled graph per model across sizes, never a wrong answer, and
never an abort from a failed runtime check in compiled code."""

from dataclasses import dataclass

import pytest
import torch

import tessel
from conftest import assert_compiled


def test_linear_on_3d_input_matches_eager_for_every_size():
    """nn.Linear on [batch, seq, features] with dynamic=True views [s0, s1, 16] as
    [s0*s1, 16]: torch-mlir's lowering of that view was silently wrong. One compiled
    graph must give eager's answer for every size."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.LayerNorm(16))
    compiled = torch.compile(model, backend="mlir", dynamic=True)
    with torch.no_grad():
        for batch, seq in [(3, 5), (2, 7), (4, 9)]:
            x = torch.randn(batch, seq, 16)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert assert_compiled()["graphs_compiled"] == 1


def test_expand_to_own_size_is_dropped_and_compiles():
    def fn(x):
        return torch.softmax(x.expand(x.shape[0], x.shape[1]) * 2, -1)

    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for rows in (3, 6, 11):
        x = torch.randn(rows, 8)
        torch.testing.assert_close(compiled(x), fn(x))
    assert assert_compiled()["graphs_compiled"] == 1


@dataclass(frozen=True)
class FailingCheckPass(tessel.ModulePass):
    """insert-failing-check: add a runtime check that always fails at the top of @main
    (stands in for a size check of torch-mlir's lowering failing at run time)."""

    name = "insert-failing-check"

    def run(self, module):
        from torch_mlir.dialects import arith, cf

        from tessel import ir
        main = next(op for op in module.regions[0].blocks[0].operations
                    if ir.StringAttr(op.attributes["sym_name"]).value == "main")
        entry = main.regions[0].blocks[0]
        with module.context, ir.Location.unknown(), ir.InsertionPoint.at_block_begin(entry):
            never = arith.ConstantOp(ir.IntegerType.get_signless(1), 0)
            cf.AssertOp(never, "mismatched size for broadcast")


def test_failed_runtime_check_runs_eagerly_instead_of_aborting():
    """A failed check in compiled code used to abort() the process; now the call runs
    eagerly with one warning (or raises with fallback=False)."""
    tessel.register_pass(FailingCheckPass)
    x = torch.randn(4, 8)
    compiled = torch.compile(lambda t: t.exp() + 1, backend="mlir",
                             options={"pipeline": "builtin.module(insert-failing-check,cpu)"})
    with pytest.warns(UserWarning, match="runs eagerly for this call.*mismatched size"):
        torch.testing.assert_close(compiled(x), x.exp() + 1)
    assert tessel.stats()["graphs_compiled"] == 1
    strict = torch.compile(lambda t: t.exp() + 2, backend="mlir", options={
        "pipeline": "builtin.module(insert-failing-check,cpu)", "fallback": False})
    with pytest.raises(RuntimeError, match="runtime check of the compiled graph failed"):
        strict(x)

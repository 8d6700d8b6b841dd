"""A fixed subset of PyTorch's OpInfo ops through backend="mlir" (the full sweep runs
on demand: `python -m tests.opinfo.sweep`). A wrong answer fails the suite."""

import pytest
import torch
from conftest import assert_compiled
from opinfo.sweep import op_db, run_op

# Ops that exercise each tessel pass: elementwise math (approximate-math), reductions
# (fuse-tiles, reassociate-reductions), var/std (var_mean decomposition), contractions
# (library-calls, fold-transposes-into-matmul, convolutions-to-gemm).
SUBSET = ["add", "mul", "div", "neg", "abs", "pow", "sqrt", "rsqrt", "exp", "tanh", "sigmoid",
          "erf", "sin", "cos", "where", "maximum", "clamp", "nn.functional.relu",
          "nn.functional.gelu", "softmax", "log_softmax", "nn.functional.layer_norm", "sum",
          "mean", "var", "std", "var_mean", "mm", "bmm", "addmm", "matmul",
          "nn.functional.linear", "nn.functional.conv2d", "cumsum", "amax",
          # found by the sweep: a multi-result reduction fused into a row loop, expanded
          # outputs, TMTensor ops bufferized in place, unsound torch-mlir lowerings
          "nn.functional.adaptive_avg_pool3d", "expand", "permute", "cumulative_trapezoid",
          "logcumsumexp", "nn.functional.embedding_bag",
          # tessel's decompositions of ops torch-mlir cannot lower (lowerable_decompositions,
          # special_functions) and narrow integer tensors
          "index_reduce", "cummax", "cdist", "searchsorted", "special.i0e", "digamma",
          "lgamma", "special.bessel_j0", "special.erfcx", "char"]

NAN = float("nan")

# OpInfo's samples hold no NaN, and torch-mlir lowers these ops with compare-and-select,
# which drops NaNs; tessel's decompositions keep eager's NaN rule.
NAN_CASES = {
    "maximum": lambda x: torch.maximum(x, x.flip(-1)),
    "clamp": lambda x: x.clamp(0.0, 2.0),
    "hardtanh": torch.nn.functional.hardtanh,
    "argmax": lambda x: x.argmax(-1),
    "min.dim": lambda x: x.min(0),
    "sort": lambda x: x.sort(dim=-1, descending=True, stable=True),
    "cummax": lambda x: x.cummax(-1),
    "searchsorted": lambda x: torch.searchsorted(x[0].sort().values, x),
}


@pytest.mark.parametrize("name", SUBSET)
def test_opinfo_op_matches_eager(name):
    ops = [op for op in op_db if op.name == name]
    assert ops, f"no OpInfo entry named {name}"
    for op in ops:
        outcome = run_op(op, samples=2)
        assert outcome["status"] != "mismatch", f"{op.name}.{op.variant_test_name}: {outcome}"


@pytest.mark.parametrize("name", NAN_CASES)
def test_nan_follows_eager(name):
    fn = NAN_CASES[name]
    x = torch.tensor([[1.0, NAN, 3.0, -1.0, 3.0], [2.0, 5.0, NAN, 0.0, NAN], [4.0, 1.0, 2.0, 4.0, 3.0]])
    actual, expected = torch.compile(fn, backend="mlir")(x), fn(x)
    assert_compiled()
    torch.testing.assert_close(actual, expected, equal_nan=True)

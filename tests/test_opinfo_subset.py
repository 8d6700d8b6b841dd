"""A fixed subset of PyTorch's OpInfo ops through backend="mlir" (the full sweep runs
on demand: `python -m tests.opinfo.sweep`). A wrong answer fails the suite."""

import pytest

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
          "logcumsumexp", "nn.functional.embedding_bag"]


@pytest.mark.parametrize("name", SUBSET)
def test_opinfo_op_matches_eager(name):
    ops = [op for op in op_db if op.name == name]
    assert ops, f"no OpInfo entry named {name}"
    for op in ops:
        outcome = run_op(op, samples=2)
        assert outcome["status"] != "mismatch", f"{op.name}.{op.variant_test_name}: {outcome}"

"""Dynamic shapes: one compiled graph per model across sizes, never a wrong answer, and
never an abort from a failed runtime check in compiled code."""

import copy
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

import tessel
from conftest import assert_compiled


# These tests run on both targets. On the test device's CPU tensors (the default), the
# Triton target's kernels run in Triton's interpreter (TRITON_INTERPRET=1, set by
# conftest); a GPU run (TESSEL_TEST_DEVICE=cuda) runs them on the GPU, Triton only.
TARGETS = pytest.mark.parametrize("target", ["cpu", "triton"])


def compile_dynamic(fn, target, device, dynamic=True):
    if target == "cpu" and device.type != "cpu":
        pytest.skip("the CPU target takes CPU tensors")
    if isinstance(fn, torch.nn.Module):
        fn.to(device)
    return torch.compile(fn, backend="mlir", dynamic=dynamic,
                         options={"target": target, "fallback": False})


@TARGETS
def test_linear_on_3d_input_matches_eager_for_every_size(target, device):
    """nn.Linear on [batch, seq, features] with dynamic=True views [s0, s1, 16] as
    [s0*s1, 16]: torch-mlir's lowering of that view was silently wrong. One compiled
    graph must give eager's answer for every size."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.LayerNorm(16))
    compiled = compile_dynamic(model, target, device)
    with torch.no_grad():
        for batch, seq in [(3, 5), (2, 7), (4, 9)]:
            x = torch.randn(batch, seq, 16, device=device)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert assert_compiled()["graphs_compiled"] == 1


@TARGETS
def test_expand_to_own_size_is_dropped_and_compiles(target, device):
    def fn(x):
        return torch.softmax(x.expand(x.shape[0], x.shape[1]) * 2, -1)

    compiled = compile_dynamic(fn, target, device)
    for rows in (3, 6, 11):
        x = torch.randn(rows, 8, device=device)
        torch.testing.assert_close(compiled(x), fn(x))
    assert assert_compiled()["graphs_compiled"] == 1


@TARGETS
def test_five_batch_sizes_compile_once(target, device):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2),
                                torch.nn.Softmax(-1))
    compiled = compile_dynamic(model, target, device)
    with torch.no_grad():
        for batch in (2, 3, 4, 9, 17):
            x = torch.randn(batch, 8, device=device)
            torch.testing.assert_close(compiled(x), model(x))
    assert assert_compiled()["graphs_compiled"] == 1


@TARGETS
@pytest.mark.parametrize("layer", ["mlp", "transformer"])
def test_training_step_with_dynamic_sizes_matches_eager_gradients(target, layer, device):
    """Forward and backward with dynamic=True: the forward saves the linear's merged
    [batch * seq, 16] input for the backward. torch-mlir lowered that view with the
    wrong grouping, which sized a buffer by the batch alone; the gemm overran it (heap
    corruption on the CPU target) and the saved input was wrong."""
    model = (torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16))
             if layer == "mlp" else
             torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0))
    reference = copy.deepcopy(model).to(device)
    compiled = compile_dynamic(model, target, device)
    compiled_after_first_step = None
    for batch, seq in [(2, 6), (3, 5), (5, 7)]:
        x = torch.randn(batch, seq, 16, device=device)
        x_eager = x.clone().requires_grad_()
        x.requires_grad_()
        compiled(x).square().mean().backward()
        reference(x_eager).square().mean().backward()
        torch.testing.assert_close(x.grad, x_eager.grad, rtol=1e-4, atol=1e-5)
        compiled_after_first_step = compiled_after_first_step or tessel.stats()["graphs_compiled"]
    for p, p_eager in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, p_eager.grad, rtol=1e-4, atol=1e-5)
    # No recompile for new sizes (on CUDA, fused attention splits each graph in pieces).
    counters = assert_compiled()
    assert counters["backward_graphs_compiled"] >= 1
    assert counters["graphs_compiled"] == compiled_after_first_step


@TARGETS
def test_size_arithmetic_pads_to_a_multiple_and_sums_sizes(target, device):
    """`%` and `torch.sym_sum` on symbolic sizes (CUDA's SDPA pads a mask to a multiple
    of 16; Dynamo sums sizes), a pad by a computed width, and a tensor of a summed size."""
    def fn(x, y):
        width = (16 - x.shape[1] % 16) % 16
        total = torch.sym_sum([x.shape[0], y.shape[0], 1])
        return F.pad(x, (0, width)) * 2, torch.ones(total, device=x.device) * 3
    compiled = compile_dynamic(fn, target, device)
    for n in (5, 7, 19):
        x, y = torch.randn(3, n, device=device), torch.randn(n, device=device)
        for actual, expected in zip(compiled(x, y), fn(x, y)):
            torch.testing.assert_close(actual, expected)
    assert assert_compiled()["graphs_compiled"] == 1


class SelfAttention(torch.nn.Module):
    """Two-head self-attention with a residual and layer norm, over [batch, seq, 16]."""

    def __init__(self):
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(16, 48), torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        batch, seq, _ = x.shape
        q, k, v = (t.reshape(batch, seq, 2, 8).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        # Written out: CUDA's fused attention would stay native (native_ops.py), which
        # splits each graph into pieces and so changes the count of compiled graphs.
        attended = torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, dim=-1) @ v
        return self.norm(x + self.out(attended.transpose(1, 2).reshape(batch, seq, 16)))


@TARGETS
def test_automatic_dynamic_recompiles_once_for_new_sequence_lengths(target, device):
    """Without dynamic=True, Dynamo compiles the first shape statically and, when a size
    changes, once more with that size dynamic; later lengths reuse that graph."""
    model = SelfAttention()
    compiled = compile_dynamic(model, target, device, dynamic=None)
    with torch.no_grad():
        for seq in (5, 7, 12, 3):
            x = torch.randn(2, seq, 16, device=device)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert assert_compiled()["graphs_compiled"] == 2


def test_float_of_a_symbolic_size_compiles(device):
    """Symbolic sizes and ints turned float (a fill value that changes between calls,
    interpolation's scaled output size) arrive as torch.sym_float and math.trunc, which
    the FX importer has no mapping for: the graphs ran eagerly. The host program sizes
    the output as int(1.5 * s0). (The Triton target refuses a kernel that reads an i64
    scalar, the fill value.)"""
    def fn(x, value):
        return F.interpolate(x, scale_factor=1.5, mode="nearest"), x.masked_fill(x > 0, value)

    compiled = compile_dynamic(fn, "cpu", device)
    for size, value in [(4, 2), (6, 3), (9, -1)]:
        x = torch.randn(1, 2, size, device=device)
        torch.testing.assert_close(compiled(x, value), fn(x, value))
    assert_compiled()


def test_adaptive_pooling_to_a_symbolic_size_compiles(device):
    """Adaptive pooling's windows divide by the output size: a symbolic int where
    div.Tensor_mode takes a tensor, which the FX importer imported as an int, and a
    divisor signature.py took to be possibly 0 (a symbolic size is at least 2)."""
    def fn(x, size):
        return F.adaptive_avg_pool2d(x, size)

    compiled = compile_dynamic(fn, "cpu", device)
    for width, size in [(8, 3), (10, 4), (13, 5)]:
        x = torch.randn(2, 3, width, width, device=device)
        torch.testing.assert_close(compiled(x, size), fn(x, size))
    assert_compiled()


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


def test_as_strided_of_a_compiled_channels_last_copy_reads_eagers_layout():
    """With dynamic=True, as_strided of a symbolic base runs eagerly, the channels-last
    copy before it compiled (torch-mlir's e2e suite, AtenAsStridedChannelsLastInputModule):
    the compiled piece wrote the copy contiguous, so as_strided read the elements in the
    wrong order. The piece's result must come out laid out as eager's."""
    def fn(x):
        x = x.contiguous(memory_format=torch.channels_last) * 2
        return torch.as_strided(x, size=(1, 4, 5, 3), stride=(60, 15, 3, 1))

    x = torch.arange(60, dtype=torch.float32).reshape(1, 3, 4, 5)
    with pytest.warns(UserWarning, match="as_strided"):
        result = torch.compile(fn, backend="mlir", dynamic=True)(x)
    torch.testing.assert_close(result, fn(x), rtol=0, atol=0)
    stats = tessel.stats()
    assert stats["graphs_compiled"] == 1 and stats["graphs_split"] == 1, stats

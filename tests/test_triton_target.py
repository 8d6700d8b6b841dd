"""The Triton target on a machine without a GPU: kernels run in Triton's interpreter
(TRITON_INTERPRET=1) on CPU tensors, and compile to PTX for sm_90."""

import copy
import dataclasses
import inspect
import itertools
import json
import logging
import os
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import tessel
from conftest import assert_compiled, parameters_with_gradients


@pytest.fixture(autouse=True)
def kernel_cache(monkeypatch, tmp_path):
    assert os.environ["TRITON_INTERPRET"] == "1"  # set by conftest, before Triton loads
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))


# The mode that builds gemm templates (gpu-max-autotune) without CUDA graphs; the
# interpreter times nothing.
_AUTOTUNING = "max-autotune-no-cudagraphs"


def compile_triton(fn, dump_dir=None, mode="default"):
    options = {"target": "triton", "fallback": False, "mode": mode}
    if dump_dir is not None:
        options["dump_dir"] = str(dump_dir)
    return torch.compile(fn, backend="mlir", options=options)


def generated_files(dump_dir):
    (graph,) = list(dump_dir.iterdir())
    kernels = next(graph.glob("*_triton_kernels.py")).read_text()
    host = next(graph.glob("*_host_program.py")).read_text()
    return kernels, host


def checked_against_eager(model, x, dump_dir):
    """The compiled model's output on `x` matches eager's, with no fallback; returns the
    generated kernels and host program."""
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, dump_dir)(x), model(x))
    assert_compiled()
    return generated_files(dump_dir)


def test_pointwise_chain_with_broadcast_and_strided_input(tmp_path):
    def fn(a, b):
        return torch.sigmoid(a) * torch.tanh(b) + a * 0.5 - b.abs()
    a, b = torch.randn(96, 64).t(), torch.randn(96)  # `a` is a transposed view
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(a, b), fn(a, b))
    assert assert_compiled()["kernels"] == 1
    kernels, host = generated_files(tmp_path / "dump")
    assert kernels.count("@triton.jit") >= 2 and "tl.load" in kernels
    assert re.search(r"launch_main_kernel_0 = KernelLauncher\(k_\w+, grid=\(6,\)", host)
    # the transposed view's strides are the kernel's constants, read off its first launch
    assert "launch_main_kernel_0(direct, stream, arg0_1, arg1_1, buf" in host
    assert ".stride()" not in host and "tensors=('in0', 'in1', 'out0'), ranks=(2, 1, 2)" in host
    assert "in0_stride0: tl.constexpr" in kernels


def test_softmax_is_one_persistent_row_kernel(tmp_path):
    x = torch.randn(33, 200)
    torch.testing.assert_close(compile_triton(lambda x: torch.softmax(x, -1), tmp_path / "dump")(x),
                               torch.softmax(x, -1))
    assert assert_compiled()["kernels"] == 1
    kernels, host = generated_files(tmp_path / "dump")
    assert "tl.reduce(" in kernels and "tl.sum(" in kernels
    assert "grid=(33,), block=256" in host
    # Its rows lie along memory: one row per program, not a tile of rows (row_tiles.py).
    assert "[:, None]" not in kernels and "keep_dims" not in kernels


def _normalized_over_tokens(qkv):
    """xcit's cross-covariance attention: q and k L2-normalized over the tokens of a
    [B, N, 3, H, C] projection permuted to [3, B, H, C, N], k written transposed (q's
    rows lie along memory, k's result across it)."""
    q, k, _ = qkv.permute(2, 0, 3, 4, 1).unbind(0)
    return F.normalize(q, dim=-1), F.normalize(k, dim=-1).transpose(-2, -1).contiguous()


# Reductions whose rows lie across memory, with row counts that leave a partial tile.
_ACROSS_MEMORY = {
    "softmax_over_dim_1": (lambda x: torch.softmax(x, 1), (5, 37, 45), torch.float32, 1),
    "sum_over_dim_2": (lambda x: x.sum(2), (3, 4, 29, 33), torch.bfloat16, 1),
    # q and k both normalized where the projection lies, with no permuted copy of it
    # (slice-elementwise-producers: each is its slice of the permutation).
    "norm_over_tokens": (_normalized_over_tokens, (2, 37, 3, 2, 23), torch.bfloat16, 2),
    # Rows too long for one block: the tile walks them in chunks (2999 is prime: no
    # piece to split them into).
    "long_rows_over_dim_1": (lambda x: (x * x).sum(1), (4, 2999, 45), torch.float32, 1),
}


@pytest.mark.parametrize("case", sorted(_ACROSS_MEMORY))
def test_reductions_across_memory_hold_a_tile_of_rows_per_program(tmp_path, case):
    """A row whose points lie apart in memory (the reduced dim is not the innermost one
    of a tile it reads or writes): each program holds [ROWS, BLOCK], ROWS consecutive
    along memory, reduces along axis 1 and masks the rows of its last, partial tile."""
    fn, shape, dtype, tiled = _ACROSS_MEMORY[case]
    x = torch.randn(shape, dtype=dtype)
    actual, expected = compile_triton(fn, tmp_path / "dump")(x), fn(x)
    for got, want in zip(*((actual, expected) if isinstance(actual, tuple) else
                           ((actual,), (expected,)))):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    tiles = [kernel for kernel in kernels.split("@triton.jit")
             if "tl.arange(0, BLOCK)[None, :]" in kernel]
    assert len(tiles) == tiled
    for kernel in tiles:
        assert "row_mask = row < " in kernel and "mask=mask" in kernel
        assert "axis=1, keep_dims=True" in kernel and "axis=0" not in kernel


def test_a_bias_gradient_s_column_sums_split_over_programs(tmp_path):
    """A linear layer's bias gradient sums the columns of [tokens, features]: each
    program holds a tile of 32 columns, so 768 columns were 24 programs, each walking
    all 6304 rows, on a GPU of 132 SMs. Counted as 24 outputs (split-reductions), the
    rows split into pieces: partial sums over many programs, then their combine."""
    g = torch.randn(6304, 768, dtype=torch.bfloat16)
    torch.testing.assert_close(compile_triton(lambda g: g.sum(0), tmp_path / "dump")(g).float(),
                               g.float().sum(0), rtol=2e-2, atol=1.0)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    grids = [int(grid) for grid in re.findall(r"grid=\((\d+),\)", host)]
    assert len(grids) == 2 and max(grids) >= 264, host


def test_a_layer_norm_s_backward_sums_its_rows_in_kernels(tmp_path):
    """A layer norm's backward sums each row of its gradient times the weight: once the
    product fuses into the sum, that generic multiply-accumulates, and it was a cuBLAS
    gemv through torch.einsum on the host, beside the kernels of the row's other sums.
    It is a reduction kernel now (vector-products-as-reductions)."""
    torch.manual_seed(0)
    norm = torch.nn.LayerNorm(64)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    reference = copy.deepcopy(norm)
    x, grad = torch.randn(4, 17, 64), torch.randn(4, 17, 64)
    inputs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
    compile_triton(norm, tmp_path / "dump")(inputs[0]).backward(grad)
    reference(inputs[1]).backward(grad)
    torch.testing.assert_close(inputs[0].grad, inputs[1].grad, atol=1e-5, rtol=1e-5)
    for compiled, eager in zip(norm.parameters(), reference.parameters()):
        torch.testing.assert_close(compiled.grad, eager.grad, atol=1e-4, rtol=1e-4)
    assert assert_compiled(min_graphs=2)["backward_graphs_compiled"] == 1
    host = next((tmp_path / "dump").glob("*_backward/*_host_program.py")).read_text()
    assert "einsum" not in host and "torch.mm" not in host, host


def test_per_channel_sums_of_a_channels_last_image_hold_a_tile_of_channels(tmp_path):
    """A batch norm's statistics over an NHWC image: each channel's values lie C apart
    in memory, so a program reduces neighbouring channels side by side
    (layouts.innermost_dims), of the pieces split-reductions cuts the batch and
    positions into. The two sums over the same image are one kernel
    (fuse-sibling-reductions), which loads each tile once for both."""
    x = torch.randn(2, 64, 40, 40).to(memory_format=torch.channels_last)

    def fn(x):
        return x.sum((0, 2, 3)), (x * x).mean((0, 2, 3))
    for got, want in zip(compile_triton(fn, tmp_path / "dump")(x), fn(x)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    (tile,) = [kernel for kernel in kernels.split("@triton.jit")
               if "axis=1, keep_dims=True" in kernel]  # the combines read rows along memory
    assert tile.count("tl.sum(") == 2 and tile.count("tl.load(") == 1, tile


def test_layer_norm_gelu_residual_one_program_per_row(tmp_path):
    def fn(x, w, b, r):
        return r + F.gelu(F.layer_norm(x, (x.shape[-1],), w, b))
    args = (torch.randn(4, 12, 96), torch.randn(96), torch.randn(96), torch.randn(4, 12, 96))
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(*args), fn(*args),
                               rtol=1e-5, atol=1e-5)
    assert assert_compiled()["kernels"] <= 2
    _, host = generated_files(tmp_path / "dump")
    assert "grid=(48,)" in host  # one program per (batch, sequence) row


def _residual_rms_norm(residual, projected, weight):
    """A Llama layer's residual add and RMSNorm, as transformers writes them."""
    hidden = residual + projected
    variance = hidden.float().pow(2).mean(-1, keepdim=True)
    normed = weight * (hidden.float() * torch.rsqrt(variance + 1e-6)).to(hidden.dtype)
    return hidden, normed


def test_a_decode_steps_residual_rms_norm_is_one_row_kernel(tmp_path):
    """One token's hidden states ([1, 1, H]): with its unit dims folded, the norm's sum
    reduces the whole tensor; whole-reductions-as-rows gives it its row back, so the
    add, the sum and the normalize are one program (they had been three kernels), and
    it writes the residual too."""
    args = (torch.randn(1, 1, 64).bfloat16(), torch.randn(1, 1, 64).bfloat16(),
            torch.randn(64).bfloat16())
    compiled = compile_triton(_residual_rms_norm, tmp_path / "dump")(*args)
    for got, want in zip(compiled, _residual_rms_norm(*args)):
        torch.testing.assert_close(got, want)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert len(re.findall(r"^    launch_main_\w+\(", host, re.MULTILINE)) == 1, host
    assert "grid=(1,)" in host


def test_whole_tensor_reductions_keep_nans():
    def fn(x):
        return x.sum(), x.amax()
    x = torch.randn(300)
    torch.testing.assert_close(compile_triton(fn)(x), fn(x))
    x[17] = float("nan")
    torch._dynamo.reset()
    actual = compile_triton(fn)(x)
    assert torch.isnan(actual[0]) and torch.isnan(actual[1])


def test_mlp_gemms_are_aten_calls_and_epilogues_kernels(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    x = torch.randn(16, 32)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(x), model(x))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    # nn.Linear's weight is read transposed: a strided view, cuBLAS's transpose flag
    assert host.count("torch.mm(") == 2 and "torch.matmul(" not in host, host
    assert len(re.findall(r"reinterpret\(arg\d+_1, \((\d+), (\d+)\), \(1, \1\), 0\)", host)) == 2


class _DenseBlockNet(torch.nn.Module):
    """What densenet and resnet are made of: strided convolutions, batch norm, max and
    average pooling, concatenation, global average pooling and a classifier."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1, stride=2, bias=False), torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1))
        self.grow = torch.nn.Conv2d(8, 4, 3, padding=1)
        self.transition = torch.nn.Sequential(torch.nn.BatchNorm2d(12), torch.nn.ReLU(),
                                              torch.nn.Conv2d(12, 8, 1), torch.nn.AvgPool2d(2))
        self.head = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                        torch.nn.Linear(8, 5))

    def forward(self, x):
        x = self.stem(x)
        x = torch.cat([x, self.grow(x)], 1)
        return self.head(self.transition(x))


def test_convolutions_are_cudnn_calls_and_pooling_unrolled_windows(tmp_path):
    kernels, host = checked_against_eager(_DenseBlockNet().eval(), torch.randn(2, 3, 32, 32),
                                          tmp_path / "dump")
    assert host.count("torch.convolution(") == 3 and "(2, 2), (1, 1), (1, 1), False" in host
    # the concatenation is read point by point by the batch norm after it (concat-as-gather)
    assert "torch.cat(" not in host
    # max pooling reads its window's taps of the image in place (read-slices-in-place):
    # its padding is a masked load's `other`, not a padded copy the host makes
    assert "value=float('-inf')" not in host and "other=float('-inf'))" in kernels
    assert "*(2*(" in kernels  # a stride-2 pooling window, unrolled: 2 * point + offset


class _DenseBlock(torch.nn.Module):
    """densenet's dense block: every layer reads the concatenation of all features so far."""

    def __init__(self, channels=8, growth=4, layers=3):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.BatchNorm2d(channels + i * growth), torch.nn.ReLU(),
                                torch.nn.Conv2d(channels + i * growth, growth, 3, padding=1,
                                                bias=False))
            for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1).sum(dim=(2, 3))


def test_growing_concatenations_copy_each_piece_once_into_one_buffer(tmp_path):
    _, host = checked_against_eager(_DenseBlock().eval(), torch.randn(2, 8, 8, 8),
                                    tmp_path / "dump")
    assert "torch.cat(" not in host
    # x and the three layers' features, each copied once into the 20-channel buffer
    assert host.count(".copy_(") == 4 and "empty_strided((2, 20, 8, 8,)" in host


def _rotary_embedding(q, k, cos, sin):
    """Llama's and GPT-NeoX's rotary embedding of the query and key heads: rotate_half
    concatenates the negated second half before the first, and GPT-NeoX concatenates
    the rotated dims back before the ones it leaves as they were."""
    def rotated(x):
        head, rest = x[..., :16], x[..., 16:]
        half = torch.cat((-head[..., 8:], head[..., :8]), dim=-1)
        return torch.cat((head * cos + half * sin, rest), dim=-1)
    return rotated(q), rotated(k)


def test_concatenations_become_kernels_with_their_producers_and_readers(tmp_path):
    q, k = torch.randn(2, 4, 16, 24), torch.randn(2, 4, 16, 24)
    cos, sin = torch.randn(16, 16), torch.randn(16, 16)
    compiled = compile_triton(_rotary_embedding, tmp_path / "dump")
    for got, want in zip(compiled(q, k, cos, sin), _rotary_embedding(q, k, cos, sin)):
        torch.testing.assert_close(got, want)
    # one kernel for each of q and k (launched together, fuse-horizontally): the
    # negation, both concatenations and the multiply-add, each point choosing (a select
    # per concatenation) where it reads from
    assert_compiled()
    kernels, host = generated_files(tmp_path / "dump")
    assert "torch.cat(" not in host
    assert len(re.findall(r"^    launch_main_\w+\(", host, re.M)) == 1, host
    member = re.split(r"def k_\w+\(program", kernels)[1].split("@triton.jit")[0]
    assert member.count("tl.where(") == 2 and "tl.load" in member


def test_a_concatenation_along_channels_reduced_by_rows():
    """SqueezeNet's fire module ends in a channel concatenation that a global pool reads:
    each row is one channel, so the select between the parts is a condition on the row,
    which masks the parts' loads."""
    def fn(a, b):
        return torch.cat((torch.relu(a), torch.relu(b)), 1).mean((2, 3))
    a, b = torch.randn(2, 16, 7, 7), torch.randn(2, 8, 7, 7)
    torch.testing.assert_close(compile_triton(fn)(a, b), fn(a, b))
    assert_compiled()


def test_a_roll_is_one_kernel_with_its_reader():
    """torch.roll is a concatenation of two slices cast to a dynamic size: the gather
    reads the static slices (concat-as-gather), both shifts and the multiply one kernel."""
    def fn(x):
        return torch.roll(x, shifts=(-3, -3), dims=(1, 2)) * 2
    x = torch.randn(2, 8, 8, 8)
    torch.testing.assert_close(compile_triton(fn)(x), fn(x))
    assert assert_compiled()["kernels"] == 1


def test_segformer_s_decode_head_compiles_whole():
    """SegFormer (tiny config): features interpolated (bilinear, an arange's index read
    inside the interpolation's body), concatenated and fused. Once the concatenation
    gathered from the interpolations, fuse-tiles' copy of the arange for each reader
    was put inside a body, and the graph ran eagerly: copies go only to readers beside
    the fill."""
    from benchmarks.models import catalog
    from benchmarks.models.runner import find_spec
    built = catalog.build(find_spec("hf_segformer", "forward", "fp32"), "cpu", True)
    model = built.model.eval()
    with torch.no_grad():
        got = compile_triton(model)(*built.args, **built.kwargs).logits
        torch.testing.assert_close(got, model(*built.args, **built.kwargs).logits)
    assert_compiled()


class _SqueezeExcite(torch.nn.Module):
    """EfficientNet's and MobileNetV3's squeeze-excite: 1x1 convolutions with biases on
    the pooled [N, C, 1, 1] image."""

    def __init__(self):
        super().__init__()
        self.reduce, self.expand = torch.nn.Conv2d(32, 8, 1), torch.nn.Conv2d(8, 32, 1)

    def forward(self, x):
        scale = self.expand(F.silu(self.reduce(x.mean((2, 3), keepdim=True))))
        return x * torch.sigmoid(scale)


def test_squeeze_excite_convolutions_start_from_zeros_and_their_readers_add_the_bias(tmp_path):
    """Each 1x1 convolution starts from a plain zero fill (reshape-fills: no kernel
    fills it and no host add follows) and adds its bias in the kernel after it
    (convolution-bias-after): the mean, the SiLU and the gate are the three launches."""
    model = _SqueezeExcite().eval().to(torch.float16)
    x = torch.randn(2, 32, 8, 8, dtype=torch.float16)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(x), model(x),
                                   atol=2e-3, rtol=2e-3)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert host.count("torch.convolution(") == 2 and "+ torch.convolution" not in host
    assert len(re.findall(r"^    launch_main_kernel_\d+\(", host, re.M)) == 3, host


def test_batch_of_one_pools_the_right_points():
    """torch-mlir drops a batch of one, so the pooling (5 loop dims) and the kernel's
    result (3 dims) have different ranks: both must walk the rows in the same order."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(3, 2, 1)).eval()
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model)(x), model(x))
    assert_compiled()


def test_row_loop_results_bind_to_the_right_buffers():
    """densenet's transitions: a pooling loop whose zero init is shared (after CSE) with a
    later convolution of the same shape becomes a loop with two results, which its
    terminator inserts in the other order; each must land in its own buffer."""
    def transition(channels):
        return [torch.nn.BatchNorm2d(channels), torch.nn.ReLU(),
                torch.nn.Conv2d(channels, channels // 2, 1, bias=False), torch.nn.AvgPool2d(2, 2)]
    model = torch.nn.Sequential(*transition(8), torch.nn.Conv2d(4, 8, 1), *transition(8)).eval()
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1)
    x = torch.randn(2, 8, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model)(x), model(x))
    assert_compiled()


# bfloat16 only on a GPU: Triton's interpreter computes bf16 arithmetic wrongly (numpy
# has no bf16; x + 1.0 on a loaded bf16 tensor came out as garbage in triton 3.9).
@pytest.mark.parametrize("dtype", [torch.float16])
def test_half_precision_pointwise_and_softmax(dtype):
    def fn(x, y):
        return torch.softmax(x * y + 1.0, dim=-1)
    x, y = torch.randn(8, 64, dtype=dtype), torch.randn(64, dtype=dtype)
    actual = compile_triton(fn)(x, y)
    assert actual.dtype == dtype
    torch.testing.assert_close(actual, fn(x, y), rtol=2e-2, atol=2e-2)
    assert_compiled()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_sums_accumulate_in_f32(tmp_path, dtype):
    """A sum of f16/bf16 values accumulates in f32 and rounds once, as eager's does,
    in rows of one block and in looped rows, whose lanes would otherwise add 32 chunks
    each in half precision (a row of 131072 bf16 0.3s then sums to 40192 instead of
    39424, 1.9% over). bf16 runs here too: these kernels only load and widen it, which
    Triton's interpreter does right."""
    def fn(x, y):
        return x.sum(-1), y.sum(-1)
    x = torch.full((2, 131072), 0.3, dtype=dtype)  # looped rows
    y = torch.rand(4, 4096, dtype=dtype)            # a row in one block
    for actual, expected in zip(compile_triton(fn, tmp_path / "dump")(x, y), fn(x, y)):
        torch.testing.assert_close(actual, expected)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    half = {torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16"}[dtype]
    assert f"tl.full([BLOCK], 0, {half})" not in kernels
    assert kernels.count("tl.full([BLOCK], 0, tl.float32)") >= 2


def test_half_precision_global_average_pooling_reduces_from_its_constant_init(tmp_path):
    """A classifier's head in half precision (resnet50 and densenet121 in bf16): the
    pooling's sum widens its init, a 0.0 filled in the same kernel, to f32. A fill was
    held as a bare Python literal, and `0.0.to(tl.float32)` stopped every such net's
    kernel build ("'float' object has no attribute 'to'"). f16 here: Triton's
    interpreter computes bf16 arithmetic wrongly."""
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()).eval().half()
    kernels, _ = checked_against_eager(model, torch.randn(2, 3, 8, 8, dtype=torch.float16),
                                       tmp_path / "dump")
    assert re.search(r"= 0\.0 \+ v\d+\n", kernels)  # the init folded as a literal into the f32 sum


def _host_program_of_half_convolutions(model, x, dump_dir) -> str:
    """The host program of half `model` compiled for the Triton target, checked
    against eager on `x`."""
    model = model.eval().half()
    with torch.no_grad():
        # The bias is added to the convolution's half result (convolution-bias-after),
        # a second rounding that eager's convolution with its bias does not make.
        torch.testing.assert_close(compile_triton(model, dump_dir)(x), model(x),
                                   atol=1e-3, rtol=1e-2)
    assert_compiled()
    _, host = generated_files(dump_dir)
    return host


def test_half_kernel_results_that_readers_round_are_stored_in_half(tmp_path):
    """SqueezeNet's fire module in half precision: each expand convolution's bias is
    added in f32 by a kernel of its own, and the concatenation that reads both sums
    rounds them to half first (its gather inlines the ReLU). The sums were stored as
    f32 buffers, twice the bytes eager moves; stored rounded they give the gather the
    values it rounded to (host_program.narrowed_values)."""
    class Fire(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.squeeze = torch.nn.Conv2d(8, 4, 1)
            self.expand1x1 = torch.nn.Conv2d(4, 8, 1)
            self.expand3x3 = torch.nn.Conv2d(4, 8, 3, padding=1)

        def forward(self, x):
            x = self.squeeze(x).relu()
            return torch.cat([self.expand1x1(x).relu(), self.expand3x3(x).relu()], 1)

    host = _host_program_of_half_convolutions(
        Fire(), torch.randn(2, 8, 9, 9, dtype=torch.float16), tmp_path / "dump")
    assert host.count("torch.convolution(") == 3
    assert "torch.float32" not in host


def test_a_row_kernels_half_results_that_readers_round_are_stored_in_half(tmp_path):
    """EfficientNet's squeeze-excite block: one row kernel per channel computes batch
    norm and SiLU and their mean over the map; the SiLU's f32 values, which the scaling
    kernel rounds to half first, were stored as an f32 image (the row kernel is a loop
    nest of its own, which narrowed_values had passed over)."""
    class SqueezeExcite(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.depthwise = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
            self.norm = torch.nn.BatchNorm2d(16)
            self.reduce, self.expand = torch.nn.Conv2d(16, 4, 1), torch.nn.Conv2d(4, 16, 1)

        def forward(self, x):
            x = F.silu(self.norm(self.depthwise(x)))
            scale = self.expand(F.silu(self.reduce(x.mean((2, 3), keepdim=True))))
            return x * scale.sigmoid()

    host = _host_program_of_half_convolutions(
        SqueezeExcite(), torch.randn(2, 16, 12, 12, dtype=torch.float16), tmp_path / "dump")
    assert "torch.float32" not in host


def test_a_batch_norm_s_backward_sums_walk_32_channels_in_one_loop(tmp_path):
    """A training batch norm's backward sums over 28 x 28 points of a channels-last
    image (resnet50's second stage): its rows lie across memory, and a tile of the 4
    rows that fit a block beside 784 points read 8 bytes of each sector; 32 rows walked
    in chunks read whole sectors. Both sums (the gradient's, and its product with the
    centred image) read none of each other: one loop accumulates them, and no loop
    stores what is only the rows' sums."""
    def fn(grad, image):
        masked = torch.where(image <= 0, 0.0, grad)
        return masked.sum((2, 3)), (masked * (image - 0.5)).sum((2, 3))
    grad, image = (torch.randn(4, 64, 28, 28).to(memory_format=torch.channels_last)
                   for _ in range(2))
    for actual, expected in zip(compile_triton(fn, tmp_path / "dump")(grad, image),
                                fn(grad, image)):
        torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert "row = tl.program_id(0) * 32 + tl.arange(0, 32)[:, None]" in kernels, kernels
    assert kernels.count("for start in range(0, 784, BLOCK):") == 1, kernels


def test_a_batch_norm_s_backward_stores_its_masked_gradient_in_the_sums_loop(tmp_path):
    """The ReLU-masked gradient that a batch norm's backward sums is also an output (the
    next convolution's backward reads it): computed in the loop that takes the sums, it
    is stored there, not in a second loop that reads its inputs again (resnet50's
    28 x 28 sums kernels read three of their four inputs twice)."""
    def fn(grad, other, image):
        masked = torch.where(image <= 0, 0.0, grad + other)
        return masked.sum((2, 3)), (masked * (image - 0.5)).sum((2, 3)), masked
    inputs = [torch.randn(4, 64, 28, 28).to(memory_format=torch.channels_last)
              for _ in range(3)]
    for actual, expected in zip(compile_triton(fn, tmp_path / "dump")(*inputs), fn(*inputs)):
        torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert kernels.count("for start in range(0, 784, BLOCK):") == 1, kernels


def test_whole_tensor_reductions_larger_than_a_block_loop_in_one_program(tmp_path):
    """A loss's mean over more points than a block (19200 here, in blocks of 1024)
    stopped the graph's compile ("a reduction of 19200 elements in one block of 1024"):
    one program now walks the tensor in chunks, a pass per reduction (the variance
    takes two: its mean, then the squared deviations). 19207 values, a prime number:
    split-reductions cannot cut them into equal pieces, so one program reduces them."""
    def fn(x, y):
        return F.mse_loss(x, y), x.var(), x.sum() + y.amin()
    x, y = torch.randn(19207), torch.randn(19207)
    for actual, expected in zip(compile_triton(fn, tmp_path / "dump")(x, y), fn(x, y)):
        torch.testing.assert_close(actual, expected)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert kernels.count("for start in range(0, 19207, BLOCK):") >= 4


def test_half_precision_linear_multiplies_the_half_operands(tmp_path):
    """PyTorch's addmm decomposition widens a half linear's operands to f32 before the
    matmul; cuBLAS must get the half tensors themselves (narrow-matmul-operands), not
    f32 copies, with the bias in its addmm (fold-bias-into-gemm), since only a rounding
    to half reads the sum."""
    def fn(x, w, b):
        return F.linear(x, w, b).relu()
    x, w, b = (torch.randn(*shape, dtype=torch.float16) for shape in ((32, 64), (32, 64), (32,)))
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w, b), fn(x, w, b))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert ("torch.addmm(arg2_1, arg0_1, (reinterpret(arg1_1, (64, 32), (1, 64), 0) "
            "if arg1_1_as_traced else arg1_1.transpose(-2, -1)))") in host
    assert "arg1_1_as_traced = arg1_1.stride() == (64, 1)" in host


def test_half_operands_of_an_f32_product_go_to_the_mixed_precision_gemm(tmp_path):
    """Half tensors widened before a matmul whose f32 product is the result: cuBLAS
    multiplies the half tensors and returns f32 (matmul_in_f32), no f32 copies."""
    def fn(x, w):
        return x.float() @ w.float()
    x, w = (torch.randn(*shape, dtype=torch.float16) for shape in ((32, 64), (64, 32)))
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w), fn(x, w))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "matmul_in_f32(arg0_1, arg1_1)" in host


def test_half_matmul_rounded_by_its_reader_stays_half(tmp_path):
    """x @ w in f16 accumulates in f32 and rounds at once, as cuBLAS's half gemm does:
    the host keeps cuBLAS's half result and the epilogue kernel widens it on load."""
    def fn(x, w, b):
        return torch.relu(x @ w + b)
    x, w, b = (torch.randn(*shape, dtype=torch.float16) for shape in ((32, 64), (64, 32), (32,)))
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w, b), fn(x, w, b))
    assert_compiled()
    kernels, host = generated_files(tmp_path / "dump")
    assert "torch.mm(arg0_1, arg1_1)" in host and ".to(tl.float32)" in kernels


def test_an_autocast_linear_adds_its_rounded_bias_in_f32_before_the_next_gemm(tmp_path):
    """Under autocast a linear's bias is rounded to half and widened back, so the host
    adds it, an f32 tensor, to the gemm's product. The product was kept half as if only
    a rounding read it: the sum came out f32, and the next gemm got it in place of the
    half tensor ("expected m1 and m2 to have the same dtype"; on the H100, in the
    backward of an autocast BERT or ViT training step). Now a kernel rounds the bias to
    half and the host calls addmm in half, as eager's autocast linear does (the rounding
    stays out of the gemm's bias broadcast: outline-contractions). f16: Triton's
    interpreter truncates to bf16."""
    def fn(x, w, b, v):
        with torch.autocast("cpu", torch.float16):
            return F.linear(x, w, b) @ v
    x, w, b, v = torch.randn(16, 32), torch.randn(24, 32), torch.randn(24), torch.randn(24, 8)
    actual = compile_triton(fn, tmp_path / "dump")(x, w, b, v)
    assert actual.dtype == torch.float16
    torch.testing.assert_close(actual, fn(x, w, b, v), rtol=0, atol=0)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "torch.addmm(" in host and "matmul_in_f32" not in host, host


def test_kernel_without_a_triton_form_runs_its_op_eagerly_with_a_warning():
    def fn(x):
        return torch.cumsum(x, 0) * 2  # a scan of dynamic size: no Triton form in tessel yet
    x = torch.randn(64)
    compiled = torch.compile(fn, backend="mlir", options={"target": "triton"}, dynamic=True)
    with pytest.warns(UserWarning, match=r"aten\.cumsum\.default runs eagerly \(triton-codegen"):
        torch.testing.assert_close(compiled(x), fn(x))
    counters = tessel.stats()  # the multiply compiled, around the scan
    assert counters["graphs_split"] == 1 and counters["graphs_compiled"] == 1, counters


def test_triton_target_needs_cuda_tensors_unless_interpreting(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    compiled = torch.compile(torch.sin, backend="mlir", options={"target": "triton"})
    x = torch.randn(8)
    with pytest.warns(UserWarning, match="is on cpu"):
        torch.testing.assert_close(compiled(x), torch.sin(x))
    assert tessel.stats()["graphs_compiled"] == 0


# Compiled in a fresh process: this one imported Triton in interpreter mode.
_PTX_FOR_SM90 = """
import importlib.util, json, sys
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
path, name, pointer, constexprs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
pointers = json.loads(sys.argv[5])
spec = importlib.util.spec_from_file_location("generated_kernels", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
kernel = getattr(module, name)
# A kernel of static sizes takes its strides as constants (any will do for the PTX).
constexprs = {**{arg: 1 for arg in kernel.arg_names if "_stride" in arg}, **constexprs}
signature = {name: "constexpr" if name in constexprs else pointers.get(name, pointer)
             for name in kernel.arg_names}
# Pointers 16-byte aligned, as the JIT specializes the caching allocator's buffers.
aligned = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
           if signature[name] != "constexpr"}
compiled = compile(ASTSource(kernel, signature, constexprs=constexprs, attrs=aligned),
                   target=GPUTarget("cuda", 90, 32))
print(compiled.asm["ptx"])
"""


def _ptx_for_sm90(kernels_file, name: str, pointer: str, constexprs: dict,
                  pointers: dict | None = None) -> str:
    """PTX of the generated kernel `name` for sm_90, compiled without a GPU (in a
    process without TRITON_INTERPRET); its pointers are `pointer`s but those that
    `pointers` names another type."""
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", _PTX_FOR_SM90, str(kernels_file), name,
                             pointer, json.dumps(constexprs), json.dumps(pointers or {})],
                            capture_output=True, text=True, env=environment, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert ".target sm_90" in result.stdout
    return result.stdout


def test_generated_kernels_compile_to_ptx_for_sm90(tmp_path):
    x = torch.randn(64, 512)
    compile_triton(lambda x, w: torch.softmax(x, -1) * w, tmp_path / "dump")(x, torch.randn(512))
    kernels_file = next(tmp_path.glob("dump/*/*_triton_kernels.py"))
    name = re.search(r"def (k_\w+)\(", kernels_file.read_text()).group(1)
    assert "ld.global" in _ptx_for_sm90(kernels_file, name, "*fp32", {"BLOCK": 512})


def test_a_cache_update_compiles_to_ptx_for_sm90(tmp_path):
    """A scatter kernel that computes its index rows (int64 selects on constant
    columns, a gathered position) and its updates compiles for a GPU too."""
    def update(cache, positions, new):
        cache.index_copy_(2, positions, new * 2)
        return cache * 1
    update_args = (torch.randn(1, 2, 8, 4), torch.tensor([3]), torch.randn(1, 2, 1, 4))
    compile_triton(update, tmp_path / "dump")(*update_args)
    kernels_file = next(tmp_path.glob("dump/*/*_triton_kernels.py"))
    name = re.search(r"def (k_\w+)\((?:(?!\ndef ).)*scatter index out of bounds",
                     kernels_file.read_text(), re.DOTALL).group(1)
    ptx = _ptx_for_sm90(kernels_file, name, "*fp32", {"BLOCK": 1024}, {"in0": "*i64"})
    assert "st.global" in ptx


# Kernels holding a tile of rows: (function, bf16 input shape, the kernel's pattern, BLOCK).
_TILES_FOR_PTX = {
    "held": (_normalized_over_tokens, (2, 196, 3, 4, 48),
             r"row = tl.program_id\(0\) \* \d+ \+ tl.arange\(0, \d+\)\[:, None\]", 256),
    # Too long for one block: walked in chunks, its accumulators loop-carried tiles.
    "walked": (lambda x: (x * x).sum(1), (4, 2999, 45),
               r"tl.full\(\[32, BLOCK\], 0, tl.float32\)\n    for start", 128),
}


@pytest.mark.parametrize("case", sorted(_TILES_FOR_PTX))
def test_a_tile_of_rows_compiles_to_ptx_for_sm90(tmp_path, case):
    """The interpreter takes shapes that Triton's compiler refuses: a kernel holding a
    tile of rows (row_tiles.py) also compiles for a GPU."""
    fn, shape, pattern, block = _TILES_FOR_PTX[case]
    compile_triton(fn, tmp_path / "dump")(torch.randn(shape, dtype=torch.bfloat16))
    kernels_file = next(tmp_path.glob("dump/*/*_triton_kernels.py"))
    tiled = re.findall(r"def (k_\w+)\((?:(?!\ndef ).)*?" + pattern,
                       kernels_file.read_text(), re.DOTALL)
    assert tiled
    for name in tiled:
        assert "st.global" in _ptx_for_sm90(kernels_file, name, "*bf16", {"BLOCK": block})


def test_gemm_template_compiles_to_tensor_core_ptx_for_sm90(tmp_path):
    def fn(x, w):
        return torch.relu(x @ w)
    x, w = torch.randn(512, 256, dtype=torch.float16), torch.randn(256, 512, dtype=torch.float16)
    compile_triton(fn, tmp_path / "dump", mode=_AUTOTUNING)(x, w)
    kernels_file = next(tmp_path.glob("dump/*/*_triton_kernels.py"))
    name = re.search(r"def (k_\w+)\(", kernels_file.read_text()).group(1)
    ptx = _ptx_for_sm90(kernels_file, name, "*fp16",
                        {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64})
    assert "mma" in ptx  # tensor-core instructions: wgmma (or mma.sync)


def test_a_transposing_kernel_loads_vectors_along_its_input_in_ptx_for_sm90(tmp_path):
    """XCiT's q, k, v permute walks 2-D tiles (transposing_tiles): with the strides a
    launch compiles in, each thread loads one 16-byte vector along the input's
    contiguous dim, and the values go through shared memory to the stores along the
    result's. Walked 1-D, each thread loaded eight 2-byte scalars, lanes 576
    elements apart at XCiT's sizes."""
    x = torch.randn(4, 13, 3, 2, 24, dtype=torch.bfloat16)
    compile_triton(lambda x: x.permute(2, 0, 3, 4, 1) * 2, tmp_path / "dump")(x)
    kernels_file = next(tmp_path.glob("dump/*/*_triton_kernels.py"))
    name = re.search(r"def (k_\w+)\(.*\n    ry = ", kernels_file.read_text()).group(1)
    result = torch.empty(3, 4, 2, 24, 13)
    strides = {f"{pointer}_stride{d}": stride for pointer, tensor in (("in0", x), ("out0", result))
               for d, stride in enumerate(tensor.stride())}
    ptx = _ptx_for_sm90(kernels_file, name, "*bf16", {**strides, "BLOCK": 1024})
    assert "ld.global.v4.b32" in ptx and ".shared" in ptx, ptx


def test_a_training_batch_norm_s_statistics_are_one_kernel(tmp_path):
    """A training batch norm sums each channel, then computes over the channels its
    mean, its inverse deviation and the running statistics' updates: those epilogues
    run in the sums' row kernel (fuse-sibling-reductions), which writes the four
    vectors, so the forward launches it and the normalization (which the count's
    increment joins, fuse-horizontally): two launches, not three (four kernels), and
    it compiles for sm_90. Outputs and running statistics are eager's."""
    torch.manual_seed(0)
    norm = torch.nn.BatchNorm2d(8)
    reference = copy.deepcopy(norm)
    x = torch.randn(4, 8, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(lambda x: torch.relu(norm(x)),
                                                  tmp_path / "dump")(x),
                                   torch.relu(reference(x)))
    torch.testing.assert_close(norm.running_mean, reference.running_mean)
    torch.testing.assert_close(norm.running_var, reference.running_var)
    assert_compiled()
    kernels, host = generated_files(tmp_path / "dump")
    assert len(re.findall(r"^    launch_main_\w+\(", host, re.M)) == 2, host
    statistics = re.search(r"def (k_\w+)\(in0, in1, in2, in3, out0, out1, out2, out3,", kernels)
    assert statistics, kernels
    block = re.search(rf"KernelLauncher\({statistics[1]}, grid=\(8,\), block=(\d+)", host)
    strides = {f"in0_stride{d}": stride for d, stride in enumerate(x.stride())}
    strides |= {f"{vector}_stride0": 1 for vector in
                ("in1", "in2", "in3", "out0", "out1", "out2", "out3")}
    _ptx_for_sm90(next((tmp_path / "dump").glob("*/*_triton_kernels.py")), statistics[1],
                  "*fp32", {**strides, "BLOCK": int(block[1])})


def _foreach_adam(parameters):
    return torch.optim.Adam(parameters, lr=1e-2, foreach=True)


def _foreach_sgd(parameters):
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9, foreach=True)


def _launches_of_a_foreach_step(optimizer, shapes, dump_dir, monkeypatch,
                                warm_steps: int) -> int:
    """The kernels that a compiled step of the foreach `optimizer` over parameters of
    `shapes` launches after `warm_steps` steps; the parameters after it are eager's."""
    from tessel.targets.triton.launcher import KernelLauncher
    compiled_params = parameters_with_gradients(shapes)
    eager_params = parameters_with_gradients(shapes)
    step = compile_triton(optimizer(compiled_params).step, dump_dir)
    eager_step = optimizer(eager_params).step
    for _ in range(warm_steps):
        step()
        eager_step()
    calls = []
    original_call = KernelLauncher.__call__
    monkeypatch.setattr(KernelLauncher, "__call__",
                        lambda launcher, *args: calls.append(launcher) or original_call(
                            launcher, *args))
    step()
    eager_step()
    for actual, expected in zip(compiled_params, eager_params):
        torch.testing.assert_close(actual, expected)
    return len(calls)


@pytest.mark.parametrize("optimizer, launches", [(_foreach_adam, 2), (_foreach_sgd, 1)])
def test_a_foreach_optimizer_step_launches_a_few_combo_kernels(tmp_path, monkeypatch,
                                                               optimizer, launches):
    """A compiled foreach step updates each parameter with small pointwise kernels of
    its own (Adam: its step count, then the rest); fuse-horizontally launches the
    independent ones together, so a step over 8 parameters launches `launches` combo
    kernels, not `launches` per parameter, and updates as eager does."""
    shapes = [(16, 8), (8,), (4, 4, 4), (3,), (32, 2), (5, 7), (64,), (1,)]
    # SGD's first step makes its momentum buffers: a graph of its own
    assert _launches_of_a_foreach_step(optimizer, shapes, tmp_path / "dump", monkeypatch,
                                       warm_steps=2) == launches
    assert_compiled()
    for host in (tmp_path / "dump").glob("*/*_host_program.py"):
        text = host.read_text()
        assert text.count("KernelLauncher(") == len(re.findall(r"^launch_main_combo_\d+ =", text, re.M)) \
            == launches


def test_a_cnn_s_adam_step_launches_its_updates_in_combos_of_many(tmp_path, monkeypatch):
    """A CNN's Adam step (40 parameters: 3x3 and 1x1 convolution weights, norm vectors)
    launches its step counts in one combo and its updates in two: combos are grouped
    by dependence level, and their budget counts pointers (strides are the kernels'
    constants), 8 per update. It counted a stride per dim too (40 arguments for an
    update of a rank-4 weight): five launches. Parameters are eager's after two steps."""
    shapes = [(8, 8, 3, 3), (8,), (8,), (16, 8, 1, 1)] * 10
    launches = _launches_of_a_foreach_step(_foreach_adam, shapes, tmp_path / "dump",
                                           monkeypatch, warm_steps=1)
    assert_compiled()
    assert launches == 3, launches


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _split_around_zeta(x):
    y = torch.sin(x) * 2
    return torch.tanh(torch.special.zeta(y.abs() + 2, 2.0)) + y


def _encoder_of_permuted_features(conv):
    """Whisper's encoder in small: convolution features permuted into tokens (eager's
    residual stream is then laid out transposed, (L * C, 1, L)), layers split around
    their native attention."""
    def fn(x, pos):
        h = F.gelu(conv(x)).permute(0, 2, 1) + pos
        for scale in (2.0, 3.0):
            q = F.layer_norm(h, (32,)).view(2, 20, 4, 8).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, q * scale, q)
            h = h + a.transpose(1, 2).reshape(2, 20, 32)
        return F.layer_norm(h, (32,))
    return fn


def test_pieces_hand_each_other_their_results_as_written(tmp_path, monkeypatch):
    """A residual stream that only the next pieces read is returned as its kernels write
    it, rows in order, and the next pieces are compiled for that layout: no piece writes
    it transposed, as eager lays it out, nor copies it for a gemm."""
    _splitting_around_native_ops(monkeypatch)
    torch.manual_seed(0)
    fn = _encoder_of_permuted_features(torch.nn.Conv1d(16, 32, 3, padding=1))
    compiled = compile_triton(fn, dump_dir=tmp_path)
    with torch.no_grad():
        for _ in range(2):
            x, pos = torch.randn(2, 16, 20), torch.randn(20, 32)
            torch.testing.assert_close(compiled(x, pos), fn(x, pos), atol=1e-4, rtol=1e-4)
    assert_compiled()
    hosts = [path.read_text() for path in tmp_path.glob("*_piece/*_host_program.py")]
    assert len(hosts) == 3
    assert not any("(640, 1, 20,)" in host or ".contiguous()" in host for host in hosts), hosts


def _native_convolution_backward(monkeypatch):
    """Make the convolution's backward a native op, as it is on CUDA: a CNN's backward
    host program then calls it between its kernels (here aten's CPU kernel)."""
    from tessel.frontend import native_ops
    monkeypatch.setattr(native_ops, "on_cuda", lambda value: True)


def _splitting_around_native_ops(monkeypatch):
    """Have the Triton target split graphs around native ops, as a target whose host
    program cannot call PyTorch does, instead of calling them between its kernels."""
    from tessel.targets.triton.target import TritonTarget
    monkeypatch.setattr(TritonTarget, "calls_native_ops", False)


def _backward_host(dump_dir) -> str:
    """The one backward host program under `dump_dir`, which calls the convolutions'
    backwards itself (no piece split around them)."""
    (host,) = [path.read_text() for path in dump_dir.glob("*_backward/*_host_program.py")]
    assert "torch.ops.aten.convolution_backward.default(" in host, host
    assert not list(dump_dir.glob("*_piece")), list(dump_dir.iterdir())
    return host


def _launches_between_convolution_backwards(host: str) -> list[int]:
    """The kernel launches of `host` between each two calls of a convolution's backward."""
    between = host.split("torch.ops.aten.convolution_backward.default(")[1:-1]
    return [len(re.findall(r"^    launch_main_\w+\(", part, re.MULTILINE)) for part in between]


def _gradients_match_eager(model, x, dump_dir, tolerance=1e-4):
    """One backward of the compiled `model` (dumped to `dump_dir`) and of a copy run
    eagerly: the parameters' gradients agree (f32 sums of thousands of values in
    another order: `tolerance`)."""
    reference = copy.deepcopy(model)
    for net in (compile_triton(model, dump_dir), reference):
        net(x).square().sum().backward()
    for compiled, eager in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(compiled.grad, eager.grad, atol=tolerance, rtol=tolerance)


@pytest.mark.parametrize("size", [(32, 24), (8, 6)], ids=["upsample", "same_size"])
def test_a_bilinear_upsample_s_gradient_scatters_without_an_index_per_point(tmp_path, size):
    """A bilinear upsample's gradient is four accumulating index_puts of every point of
    the output's gradient: each scatters slices of the whole dims (N, C) at flat
    positions of the [H, W] index tensors, so no host buffer holds an int64 index per
    point (SegFormer's: 2.5 GB each, 52 GB at the step's peak on an H200), also where
    the interpolation keeps the size (SegFormer's decode head); the gradients are
    eager's."""
    def upsampled(x):
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)
    x = torch.randn(2, 6, 8, 6, requires_grad=True)
    weights = torch.randn(2, 6, *size)
    (compile_triton(upsampled, tmp_path)(x) * weights).sum().backward()
    compiled = x.grad
    x.grad = None
    (upsampled(x) * weights).sum().backward()
    torch.testing.assert_close(compiled, x.grad)
    assert_compiled()
    host = next(tmp_path.glob("*_backward/*_host_program.py")).read_text()
    assert "index_put" in host or "scatter" in host
    shape = ", ".join(str(n) for n in (2, 6, *size))
    assert not re.search(rf"empty_strided\(\({shape},\), [^)]*\), torch\.int64", host), host


def test_a_loss_over_gathered_labels_splits_over_many_programs(tmp_path):
    """A segmentation loss sums each pixel's log-probability of its label (a gather at
    the loop's position): its reduction splits into partials over many programs, as
    one without a gather does (SegFormer's walked 2M values in one program, 65 ms of
    its step on an H200)."""
    def loss(logits, labels):
        return F.cross_entropy(logits, labels, ignore_index=255)
    logits = torch.randn(4, 16, 64, 64)
    labels = torch.randint(0, 16, (4, 64, 64))
    labels[0, 0, :5] = 255
    torch.testing.assert_close(compile_triton(loss, tmp_path)(logits, labels), loss(logits, labels))
    assert_compiled()
    host = next(tmp_path.glob("*/06_host_program.py")).read_text()
    grids = re.findall(r"KernelLauncher\(k_\w*gather\w*, grid=\((\d+),\)", host)
    assert grids and all(int(grid) > 1 for grid in grids), host


def test_a_backward_that_runs_eagerly_takes_its_inputs_in_eager_s_layouts(monkeypatch):
    """The forward hands its saved activations to the backward as its kernels wrote
    them (channels-last); a backward that fails to compile runs eagerly, and eager's
    `nll_loss2d_backward` refuses a channels-last log-softmax ("grad_input must be
    contiguous", raised into the user's training step): it takes them copied into
    the layouts eager's trace had, and its gradients are eager's."""
    from tessel.frontend import compile_graph
    compile_or_split = compile_graph._compile_or_split

    def backward_fails(gm, options, kind, reasons, *args, **kwargs):
        if kind == "backward":
            reasons.append("graph runs eagerly (injected)")
            return kind, gm
        return compile_or_split(gm, options, kind, reasons, *args, **kwargs)
    monkeypatch.setattr(compile_graph, "_compile_or_split", backward_fails)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 5, 1))
    reference = copy.deepcopy(model)
    x, labels = torch.randn(2, 3, 8, 8), torch.randint(0, 5, (2, 8, 8))
    with pytest.warns(UserWarning, match="injected"):
        compile_triton(lambda x, y: F.cross_entropy(model(x), y))(x, labels).backward()
    F.cross_entropy(reference(x), labels).backward()
    for compiled, eager in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(compiled.grad, eager.grad, atol=1e-4, rtol=1e-4)


def test_a_cnn_s_backward_hands_convolutions_their_gradients_as_written(tmp_path,
                                                                        monkeypatch):
    """A CNN's backward, whose host program calls each convolution's backward (native on
    CUDA, so here too): it hands each the gradient as its kernel writes it,
    channels-last as the convolutions (their weights made channels-last) wrote the
    activations, not copied into eager's NCHW (which cuDNN would copy back), and the
    gradients are eager's."""
    _native_convolution_backward(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.GELU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
    _gradients_match_eager(model, torch.randn(2, 3, 8, 8), tmp_path)
    host = _backward_host(tmp_path)
    handed = host.rsplit("torch.ops.aten.convolution_backward.default(", 1)[0]
    assert ".contiguous()" not in handed, host


def test_a_batch_norm_s_split_statistics_read_the_image_once(tmp_path):
    """A batch norm over more values a channel than one program reduces: its statistics
    are split over programs, and both sums (of x less a shift, and of its squares) are
    one kernel over the image, where a mean's pass and then a variance's were two
    (var_mean's one-pass form; the shift, each channel's first value, computed on its
    slice of the image, not on a whole f32 copy). Output and running statistics are
    eager's, for values far from zero."""
    torch.manual_seed(0)
    x = (torch.randn(4, 8, 48, 48) * 3 + 100).to(memory_format=torch.channels_last)
    stats = [torch.zeros(8), torch.ones(8)]
    eager_stats = [t.clone() for t in stats]

    def norm(x, mean, var):
        return F.batch_norm(x, mean, var, training=True)
    torch.testing.assert_close(compile_triton(norm, tmp_path / "dump")(x, *stats),
                               norm(x, *eager_stats), atol=1e-4, rtol=1e-4)
    for compiled, eager in zip(stats, eager_stats):
        torch.testing.assert_close(compiled, eager, atol=1e-4, rtol=1e-4)
    assert_compiled()
    kernels, host = generated_files(tmp_path / "dump")
    image_sums = [kernel for kernel in kernels.split("@triton.jit")
                  if "tl.sum(" in kernel and "stride4" in kernel]  # reads the split image
    assert len(image_sums) == 1 and image_sums[0].count("tl.sum(") == 2, image_sums
    assert host.count("[0:1, 0:8, 0:1, 0:1]") == 1, host  # the shift: one view of x


@pytest.mark.parametrize("batch, side", [(4, 48), (32, 14)])
def test_a_half_convolution_s_result_is_read_where_aten_wrote_it(tmp_path, batch, side):
    """A bf16 convolution's result, which the IR accumulates in f32 and then rounds, is
    the bf16 tensor that aten's convolution returns: the batch norm's kernels read it
    there. Its statistics split over programs (rows longer than a program's, 4 x 48²;
    channels across memory, 32 x 14²), the rounding had been a copy of the whole image,
    a kernel of its own or written by the first pass of two (one pass, var_mean's
    shifted form, now for any per-channel statistics)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(8, 16, 1, bias=False).to(torch.bfloat16)
    x = torch.randn(batch, 8, side, side, dtype=torch.bfloat16)
    x = x.to(memory_format=torch.channels_last)

    def conv_norm(x):
        return F.batch_norm(conv(x), None, None, training=True)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(conv_norm, tmp_path / "dump")(x),
                                   conv_norm(x), atol=2e-2, rtol=2e-2)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    (convolved,) = re.findall(r"^    (\w+) = torch.convolution\(", host, re.MULTILINE)
    after = host.split(f"{convolved} = torch.convolution(")[1]
    # the statistics' partial sums, their combine, the norm; one image-sized buffer,
    # the norm's
    assert len(re.findall(r"^    launch_main_\w+\(", after, re.MULTILINE)) == 3, after
    assert after.count(f"empty_strided(({batch}, 16, {side}, {side},)") == 1, after


def test_a_relu_s_backward_and_a_batch_norm_s_sums_are_one_kernel(tmp_path, monkeypatch):
    """A ReLU's backward ahead of a batch norm's, over rows one program reduces: the
    kernel that masks the gradient (which the convolution's backward reads) also sums it,
    and sums it times x - mean (fuse-sibling-reductions: the second sum reads the tile
    the first writes, where it had read the masked gradient back in a kernel of its own).
    Gradients are eager's."""
    _native_convolution_backward(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.Conv2d(8, 8, 1, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 1, bias=False))
    _gradients_match_eager(model, torch.randn(2, 3, 8, 8), tmp_path)
    assert_compiled()
    host = _backward_host(tmp_path)
    # each norm's backward: its sums (and the ReLU's mask), then their combine and dx
    assert _launches_between_convolution_backwards(host) == [2, 2], host


def test_a_relu_s_backward_mask_is_computed_by_the_split_sums_and_dx(tmp_path, monkeypatch):
    """Where a batch norm's backward sums are split over programs, the ReLU's backward
    mask ahead of it (gradient and activation) is computed again by the partial sums'
    kernel and by dx's, instead of being written by a kernel of its own and read back
    by both (duplicate-cheap-producers' byte count). Gradients are eager's."""
    _native_convolution_backward(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 1, bias=False), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 8, 1, bias=False)).to(memory_format=torch.channels_last)
    x = torch.randn(4, 8, 48, 48).to(memory_format=torch.channels_last)
    _gradients_match_eager(model, x, tmp_path, tolerance=1e-3)
    assert_compiled()
    host = _backward_host(tmp_path)
    # the norm's backward: its partial sums, their combine, dx
    assert _launches_between_convolution_backwards(host) == [3], host


def test_a_dense_block_s_gradients_reach_its_convolutions_channels_last(tmp_path, monkeypatch):
    """In a DenseNet block's backward, the gradient of each layer's output is a slice of
    its concatenation's gradient, which cuDNN's convolution backward reads next to
    channels-last activations and weights: the backward writes it channels-last (a
    slice of a channels-last image keeps its layout), not NCHW for cuDNN to copy; and
    the kernels read cuDNN's input gradient's chunks in place, at their channel offsets
    (read-slices-in-place), where the host took a strided view of each. Gradients are
    eager's."""
    _native_convolution_backward(monkeypatch)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Sequential(
                torch.nn.BatchNorm2d(4 + 4 * i), torch.nn.ReLU(),
                torch.nn.Conv2d(4 + 4 * i, 4, 3, padding=1, bias=False)) for i in range(2))

        def forward(self, x):
            features = [x]
            for layer in self.layers:
                features.append(layer(torch.cat(features, 1)))
            return torch.cat(features, 1)
    torch.manual_seed(0)
    model = Block().to(memory_format=torch.channels_last)
    x = torch.randn(2, 4, 8, 8).to(memory_format=torch.channels_last)
    _gradients_match_eager(model, x, tmp_path)
    assert_compiled()
    host = _backward_host(tmp_path)
    images = re.findall(r"empty_strided\(\(2, \d+, 8, 8,\), \((\d+, \d+), \d+, \d+,\)", host)
    assert images and all(stride.endswith(", 1") for stride in images), (images, host)
    # The input gradient cuDNN returns, read by chunks: no view of it; the kernels read
    # the second chunk's channels at their offset, 4.
    assert not re.search(r"reinterpret\((buf\d+), [^\n]* if \1_laid_out else \1\[", host), host
    (kernels,) = [path.read_text() for path in tmp_path.glob("*_backward/*_triton_kernels.py")]
    assert re.search(r"in\d+_stride1\*\(\(r % 4\) \+ 4\)", kernels), kernels


@pytest.mark.parametrize("pool", [torch.nn.MaxPool2d(3, 2, 1), torch.nn.AvgPool2d(2)],
                         ids=["resnet_stem", "densenet_transition"])
def test_a_pool_and_its_gradient_are_channels_last_between_convolutions(pool, tmp_path,
                                                                        monkeypatch):
    """A ResNet stem's max pool (a DenseNet transition's average pool) reads a
    channels-last image, and its gradient reads channels-last gradients (and indices):
    both are written channels-last, walked along the channels, not NCHW across memory
    (resnet50's max pool gradient, walked NCHW on an H200, took 0.79 ms a step of
    uncoalesced taps; the average pool's had spread its shares through a row-major
    [N, C, H, 2, W, 2] buffer). Gradients are eager's."""
    _native_convolution_backward(monkeypatch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), pool,
        torch.nn.Conv2d(8, 8, 1, bias=False)).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 12, 12).to(memory_format=torch.channels_last)
    _gradients_match_eager(model, x, tmp_path)
    assert_compiled()
    programs = [path.read_text() for path in tmp_path.glob("*/*_host_program.py")]
    pooled = [stride for program in programs for stride in re.findall(
        r"empty_strided\(\(2, 8, [\d, ]+\), \((\d+, \d+), [\d, ]+\)", program)]
    assert pooled and all(stride.endswith(", 1") for stride in pooled), (pooled, programs)


def test_autocast_s_half_weights_are_written_as_cudnn_reads_them(tmp_path):
    """Under autocast a kernel rounds each convolution's weight to bf16 at every call:
    it writes the weight channels-last, as cuDNN reads it, where the host had converted
    its NCHW result (34 weight copies a resnet50 train step on an H200)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1, bias=False))
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    compiled = compile_triton(model, tmp_path / "dump")
    with torch.autocast("cpu", torch.bfloat16):
        torch.testing.assert_close(compiled(x), model(x), atol=1e-2, rtol=2e-2)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    weights = re.findall(r"empty_strided\(\(8, (3|8), 3, 3,\), \((\d+), 1, ", host)
    assert len(weights) == 2, host


def test_reduce_overhead_replays_a_split_inference_graph_whole(monkeypatch):
    """The pieces around an op that runs eagerly get no replay of their own: the whole
    split graph is one, so that one CUDA graph holds the eager op too."""
    from tessel.targets.triton import target
    replayed = []

    def recorded(host, *args):
        replayed.append(host)
        return replayed_in_tree(host, *args)
    replayed_in_tree = target.replayed_in_tree
    monkeypatch.setattr(target, "replayed_in_tree", recorded)
    compiled = torch.compile(_split_around_zeta, backend="mlir",
                             options={"target": "triton", "mode": "reduce-overhead"})
    x = torch.randn(8)
    with pytest.warns(UserWarning, match="special_zeta"):
        torch.testing.assert_close(compiled(x), _split_around_zeta(x))
    torch.testing.assert_close(compiled(x + 1), _split_around_zeta(x + 1))
    assert tessel.stats()["graphs_compiled"] == 2 and tessel.stats()["graphs_split"] == 1
    assert len(replayed) == 1 and isinstance(inspect.unwrap(replayed[0]), torch.fx.GraphModule)


@pytest.mark.parametrize("role, mutated, cpu_pieces, replayed_by", [
    ("inference", (), False, "trees"),
    ("forward", (3,), False, "trees"),       # a training step's: BatchNorm's statistics
    ("inference", (0,), False, "capture"),   # an optimizer step, a static cache's write
    ("inference", (), True, "capture"),      # hf_deberta_v2's split died in the trees
    ("forward", (), True, "capture"),        # and its training step's forward did too
])
def test_reduce_overhead_replays_each_graph_where_it_is_safe(monkeypatch, role, mutated,
                                                             cpu_pieces, replayed_by):
    from tessel.options import parse_options
    from tessel.targets.base import get_target
    from tessel.targets.triton import target as triton_target
    used = []
    monkeypatch.setattr(triton_target, "replayed_in_tree",
                        lambda run, *args: used.append("trees") or run)
    monkeypatch.setattr(triton_target, "CudaGraphRunner",
                        lambda run, *args: used.append("capture") or run)
    get_target("triton").replayed(lambda x: x, "000_inference",
                                  parse_options("reduce-overhead"),
                                  mutated_inputs=mutated, role=role, runs_cpu_pieces=cpu_pieces)
    assert used == [replayed_by]


def test_reduce_overhead_on_cpu_tensors_launches_plainly_with_a_log_line():
    compiled = torch.compile(lambda x: torch.softmax(x, -1) + 1, backend="mlir",
                             options={"target": "triton", "mode": "reduce-overhead"})
    x = torch.randn(8, 32)
    records, logger = _Records(), logging.getLogger("tessel")
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    try:
        torch.testing.assert_close(compiled(x), torch.softmax(x, -1) + 1)
        torch.testing.assert_close(compiled(x * 2), torch.softmax(x * 2, -1) + 1)
    finally:
        logger.removeHandler(records)
        logger.setLevel(logging.NOTSET)
    assert_compiled()
    plain = [m for m in records.messages if "launches kernels one by one" in m]
    assert len(plain) == 1 and "not all CUDA tensors" in plain[0]


def test_kernel_that_triton_cannot_build_makes_the_graph_run_eagerly(monkeypatch):
    """Triton builds kernels at their first launch; a build error there (here: one
    raised in its place) must not reach the user: the graph runs eagerly, warned once."""
    import ast

    from triton.compiler.errors import CompilationError

    from tessel.targets.triton import target

    building_kernels = target._building_kernels

    def failing_build(host, *settings):
        def launch(*args):
            raise CompilationError("x", ast.parse("x").body[0], "Expected dtype fp32")
        return building_kernels(launch, *settings)
    monkeypatch.setattr(target, "_building_kernels", failing_build)
    compiled = torch.compile(torch.sin, backend="mlir", options={"target": "triton"})
    x = torch.randn(8)
    with pytest.warns(UserWarning, match="Triton could not compile a kernel.*Expected dtype"):
        torch.testing.assert_close(compiled(x), torch.sin(x))
    torch.testing.assert_close(compiled(x + 1), torch.sin(x + 1))  # eager from now on
    assert any("kernel build" in r for r in tessel.stats()["fallback_reasons"])


def test_a_compiled_graph_comes_from_the_on_disk_cache_the_second_time(tmp_path):
    def fn(x, w):
        return torch.softmax(x * w, -1)
    x, w = torch.randn(16, 64), torch.randn(64)
    compile_triton(fn)(x, w)
    assert tessel.stats()["graphs_cached"] == 0
    pipeline_seconds = tessel.stats()["compile_seconds"]["gpu"]
    assert list((tmp_path / "cache" / "graphs").glob("*.json"))

    torch._dynamo.reset()  # as a new process would: Dynamo runs again, aot_autograd not
    torch.testing.assert_close(compile_triton(fn)(x, w), fn(x, w))
    counters = assert_compiled(min_graphs=2)
    assert counters["graphs_cached"] == counters["graphs_cached_before_aot"] == 1
    assert counters["compile_seconds"]["gpu"] == pipeline_seconds  # no pipeline ran

    torch._dynamo.reset()  # another shape is another graph: compiled, not loaded
    compile_triton(fn)(torch.randn(8, 64), w)
    assert tessel.stats()["graphs_cached"] == 1


def test_a_graph_split_around_a_native_op_comes_from_the_cache_before_aot_autograd(
        monkeypatch):
    """Its pieces' entries and the split graph's code are remembered under Dynamo's
    graph: a new process (as after a Dynamo reset) runs neither aot_autograd nor any
    pipeline, and records the native op as the compile did."""
    _splitting_around_native_ops(monkeypatch)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()

    def fn(x):
        return layer(x * 2).relu() + 1
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        expected = fn(x)
        torch.testing.assert_close(compile_triton(fn)(x), expected)
        cold = tessel.stats()
        assert cold["graphs_compiled"] == 2 and cold["graphs_cached_before_aot"] == 0
        assert len(cold["native_ops"]) == 1
        tessel.reset_stats()
        torch._dynamo.reset()
        torch.testing.assert_close(compile_triton(fn)(x), expected)
    warm = assert_compiled(min_graphs=2)
    assert warm["graphs_cached_before_aot"] == 1 and warm["graphs_cached"] == 2
    assert "gpu" not in warm["compile_seconds"]

    def ops(counters):  # "graph: op: why", less the graph's name (numbered per process)
        return [record.split(": ", 1)[1] for record in counters["native_ops"]]
    assert ops(warm) == ops(cold)


def test_a_split_graph_compiles_all_its_pieces_kernels_in_one_batch(monkeypatch):
    """Its first call dry-runs the whole split graph, the native op included, and
    compiles every piece's kernels together, before any piece runs. (The interpreter
    compiles nothing, so the batch is recorded here; each piece's own first call, which
    on a GPU finds its kernels compiled, does not ask under the interpreter.)"""
    from tessel.targets.triton import target
    _splitting_around_native_ops(monkeypatch)
    batches = []
    monkeypatch.setattr(target, "compile_in_parallel", batches.append)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()

    def fn(x):
        return layer(x * 2).relu() + 1
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(fn)(x), fn(x))
    counters = assert_compiled(min_graphs=2)
    assert len(counters["native_ops"]) == 1
    (batch,) = batches
    # Each piece has a kernels module of its own: both pieces' kernels are in the batch.
    assert len({launcher.kernel.fn.__module__ for launcher, _ in batch}) == 2


def _two_attention_layers(q, k, v):
    first = F.scaled_dot_product_attention(q.cos(), k, v).sin()
    return F.scaled_dot_product_attention(first, k, v) * 2


def _two_attention_layers_of_one_mask(q, k, v, mask):
    first = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sin()
    return F.scaled_dot_product_attention(first, k, v, attn_mask=mask)


def test_attentions_of_one_boolean_mask_share_its_additive_form(tmp_path):
    """Each fused attention (native) turns the boolean mask into an additive one: the
    inference graph's common subexpressions merged, one kernel computes it once and
    the host program hands it to both attentions (a kernel per layer of a decoder's
    decode step, before)."""
    q, k, v = torch.randn(1, 4, 1, 8), torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)
    mask = torch.rand(1, 1, 1, 8) > 0.3
    mask[..., 0] = True
    with torch.no_grad():
        compiled = compile_triton(_two_attention_layers_of_one_mask, tmp_path / "dump")
        torch.testing.assert_close(compiled(q, k, v, mask),
                                   _two_attention_layers_of_one_mask(q, k, v, mask))
    assert_compiled()
    (graph,) = tmp_path.glob("dump/*_inference")
    assert len(re.findall(r"torch.ops.aten.where", (graph / "00_fx_graph.py").read_text())) == 1
    host = (graph / "06_host_program.py").read_text()
    masks = re.findall(r"_scaled_dot_product_flash_attention_for_cpu\.default\(.*attn_mask=(\w+)",
                       host)
    assert len(masks) == 2 and len(set(masks)) == 1, host


@pytest.mark.parametrize("cold", [True, False], ids=["compiled", "from_the_cache"])
def test_a_split_graph_enters_its_inputs_device_once_per_call(monkeypatch, cold):
    """Split around its two fused attentions (native), the graph runs three compiled
    pieces per call: the split is put on its inputs' device once for all of them, as a
    split loaded from the inference cache is, not once more per piece."""
    from tessel.targets.triton import target
    _splitting_around_native_ops(monkeypatch)
    entered = []

    def counting(run):
        def on_device(*args):
            entered.append(run)
            return run(*args)
        return on_device
    monkeypatch.setattr(target, "on_device_of_inputs", counting)
    q, k, v = (torch.randn(2, 4, 8, 16) for _ in range(3))
    with torch.no_grad():
        expected = _two_attention_layers(q, k, v)
        if not cold:
            compile_triton(_two_attention_layers)(q, k, v)
            torch._dynamo.reset()
            tessel.reset_stats()
        compiled = compile_triton(_two_attention_layers)
        compiled(q, k, v)
        entered.clear()
        torch.testing.assert_close(compiled(q, k, v), expected)
    counters = assert_compiled(min_graphs=3)
    assert counters["graphs_cached_before_aot"] == (0 if cold else 1)
    assert len(counters["native_ops"]) == 1
    assert len(entered) == 1


def test_a_split_graph_s_pieces_find_out_their_launch_mode_once_per_call(monkeypatch):
    """What launch_mode reads for a whole call (the environment, Triton's launch hooks,
    the stream) is read once for the three pieces around the two attentions."""
    from tessel.targets.triton import launcher
    _splitting_around_native_ops(monkeypatch)
    found = []
    call_mode = launcher._call_mode

    def counted(device):
        found.append(device)
        return call_mode(device)
    monkeypatch.setattr(launcher, "_call_mode", counted)
    q, k, v = (torch.randn(2, 4, 8, 16) for _ in range(3))
    with torch.no_grad():
        compiled = compile_triton(_two_attention_layers)
        compiled(q, k, v)
        found.clear()
        torch.testing.assert_close(compiled(q, k, v), _two_attention_layers(q, k, v))
    counters = assert_compiled(min_graphs=3)
    assert len(counters["native_ops"]) == 1
    assert found == [torch.device("cpu")]


def test_pieces_sharing_a_launch_mode_still_check_their_own_tensors_alignment(monkeypatch):
    """Within one call of a split graph, a piece reading an unaligned view (a native
    op's result may be one) launches through the JIT, while the others launch directly
    on the stream found once for all of them."""
    from tessel.targets.triton import launcher
    found = []
    monkeypatch.setattr(launcher, "_call_mode", lambda device: found.append(device) or (True, 7))
    cuda, buffer = torch.device("cuda", 0), torch.empty(64)
    modes = []

    def pieces():
        modes.append(launcher.launch_mode(cuda, buffer))
        modes.append(launcher.launch_mode(cuda, buffer[1:]))  # 4 bytes past an aligned start
        modes.append(launcher.launch_mode(cuda, buffer))
    launcher.sharing_launch_mode(pieces)()
    assert modes == [(True, 7), (False, 7), (True, 7)] and found == [cuda]
    launcher.launch_mode(cuda, buffer)  # outside a split graph's call: found again
    assert found == [cuda, cuda]


def test_a_classifier_s_backward_compiles_whole():
    """The torch.compile tutorial's densenet121 train step ran its backward graph
    eagerly on the GPU; three of its parts, each of which had stopped the graph's
    compile, are here: cross_entropy's backward builds its scatter's indices and values
    in one generic of three result types (left unwrapped), a strided convolution's
    weight gradient is a multiply-accumulate that no gemm takes (it reads
    `h * 2 + kh`), and 2x2 average pooling's backward has no torch-mlir lowering."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2), torch.nn.ReLU(),
                                torch.nn.AvgPool2d(2, 2), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 3 * 3, 5))
    reference = copy.deepcopy(model)
    x, target = torch.randn(2, 3, 15, 15), torch.tensor([1, 4])
    F.cross_entropy(compile_triton(model)(x), target).backward()
    F.cross_entropy(reference(x), target).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    assert assert_compiled(min_graphs=2)["backward_graphs_compiled"] == 1


@pytest.mark.parametrize("window", [
    dict(kernel_size=3, stride=2, padding=1),                      # resnet's stem
    dict(kernel_size=2),                                           # tiling windows
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True)])
def test_max_pooling_s_backward_gathers_instead_of_scattering(window, tmp_path):
    """max_pool2d's backward was a scatter with accumulation of each output gradient at
    its window's argmax (a sorted index_put_ on the GPU): it is a gather now, in the
    kernel of the batch norm's backward before it (whose reduction reads the gathered
    gradients: the kernel compares each window's argmax with its point, a condition
    that masks a load)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4),
                                torch.nn.ReLU(), torch.nn.MaxPool2d(**window))
    reference = copy.deepcopy(model)
    x = torch.randn(2, 3, 13, 12)
    weights = torch.randn_like(reference(x))
    (compile_triton(model, tmp_path / "dump")(x) * weights).sum().backward()
    (reference(x) * weights).sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    assert assert_compiled(min_graphs=2)["backward_graphs_compiled"] == 1
    (backward,) = (tmp_path / "dump").glob("*_backward")
    host = (backward / "06_host_program.py").read_text()
    assert "scatter(" not in host and "index_put_" not in host
    # the windows that hold a point are found in integers, not through float64 floors
    assert "float64" not in (backward / "05_triton_kernels.py").read_text()


@pytest.mark.parametrize("window", [
    dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),  # poolformer's
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2))])
def test_average_pooling_s_backward_is_a_gather(window, tmp_path):
    """avg_pool2d's backward over overlapping or padded windows: each input point sums
    the shares of the windows that hold it, in one kernel with what reads it. It had
    added each window offset's shares into a padded gradient, strided: a kernel and a
    host copy per offset (poolformer's 3 x 3 pooling: 22 launches a backward)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.GroupNorm(1, 4), torch.nn.AvgPool2d(**window))
    reference = copy.deepcopy(model)
    x = torch.randn(2, 4, 11, 12, requires_grad=True)
    weights = torch.randn_like(reference(x))
    (compile_triton(model, tmp_path / "dump")(x) * weights).sum().backward()
    compiled, x.grad = x.grad, None
    (reference(x) * weights).sum().backward()
    torch.testing.assert_close(compiled, x.grad)
    assert assert_compiled(min_graphs=2)["backward_graphs_compiled"] == 1
    (backward,) = (tmp_path / "dump").glob("*_backward")
    host = (backward / "06_host_program.py").read_text()
    assert "] = " not in host and ".clone()" not in host, host


@pytest.mark.parametrize("native_backward", [False, True])
def test_a_training_step_s_saved_activations_are_returned_as_written(
        native_backward, tmp_path, monkeypatch):
    """The forward's kernels write a conv net's activations channels-last; those saved
    for the backward are returned so, not copied into eager's layout (`.contiguous()`
    in the host program), their strides reported to aot_autograd, which traces the
    backward with them: its kernels (and cuDNN's convolution_backward, left native on
    CUDA, which its host program calls) read and write them channels-last. A second compile, of a graph cache
    hit, reports the same strides: its backward graphs are hits too."""
    from tessel.frontend import native_ops
    monkeypatch.setattr(native_ops, "on_cuda", lambda value: native_backward)
    torch.manual_seed(0)

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1))

    x = torch.randn(2, 3, 6, 5)
    weights = torch.randn(2, 4, 1, 1)
    reference = model()
    (reference(x) * weights).sum().backward()
    for run in ("compiled", "cached"):
        torch._dynamo.reset()
        tessel.reset_stats()
        net = model()
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t,
                                                      lambda t: t):
            y = compile_triton(net, tmp_path / run)(x)
        (y * weights).sum().backward()
        activations = [t for t in saved if t.shape == (2, 4, 6, 5)]
        assert activations and all(
            t.is_contiguous(memory_format=torch.channels_last) for t in activations)
        for (name, p), q in zip(net.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=name)
        counters = assert_compiled(min_graphs=2)
        assert counters["backward_graphs_compiled"] == 1
        if run == "cached":
            assert counters["graphs_cached"] == counters["graphs_compiled"], counters
            break
        (forward,) = (tmp_path / run).glob("*_forward")
        assert ".contiguous()" not in (forward / "06_host_program.py").read_text()
        # The backward's kernels write images channels-last, as it gets them.
        (backward,) = (tmp_path / run).glob("*_backward/06_host_program.py")
        backward = backward.read_text()
        assert "(2, 4, 6, 5,), (120, 1, 20, 4,)" in backward
        assert ("torch.ops.aten.convolution_backward" in backward) == native_backward


@pytest.mark.parametrize("backward_compiles", [True, False])
def test_a_saved_activation_that_the_backward_views_as_traced_is_right(
        backward_compiles, monkeypatch):
    """The forward returns the ReLU's result channels-last as written, but the backward
    views it [N, C * H * W] for the linear layer's weight gradient, which only the
    traced (contiguous) layout allows: run eagerly (here, its compiler failing), the
    backward raised. It takes that input copied into its traced layout instead."""
    from tessel.frontend import compile_graph
    real_native_ops_in = compile_graph.native_ops_in

    def raising_for_backward(gm):
        if any(n.op == "placeholder" and n.name.startswith("tangents") for n in gm.graph.nodes):
            raise RuntimeError("an injected compiler failure")
        return real_native_ops_in(gm)

    if not backward_compiles:
        monkeypatch.setattr(compile_graph, "native_ops_in", raising_for_backward)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 5, 3))
    reference = copy.deepcopy(model)
    x = torch.randn(2, 3, 6, 5)
    compiled = torch.compile(model, backend="mlir", options={"target": "triton"})
    compiled(x).square().sum().backward()
    reference(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    counters = tessel.stats()
    assert counters["forward_graphs_compiled"] == 1, counters
    assert counters["graphs_fallback"] == (0 if backward_compiles else 1), counters


def test_a_group_norm_training_step_compiles_whole(tmp_path):
    """A group norm's backward: the per-group sums over each group's channels are row
    kernels, and the gradient over every point of the group ([C/G, H*W] per group,
    wider than those rows) an element-wise kernel (fuse-tiles no longer makes it the
    root of the sums' row kernel, which the generator refused)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.GroupNorm(4, 8),
                                torch.nn.ReLU())
    reference = copy.deepcopy(model)
    x = torch.randn(2, 4, 6, 6)
    for net in (compile_triton(model, tmp_path / "dump"), reference):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        net(x).square().mean().backward()
        optimizer.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
        torch.testing.assert_close(p, q, msg=name)
    assert assert_compiled(min_graphs=2)["backward_graphs_compiled"] == 1
    assert tessel.stats()["graphs_split"] == 0


def test_check_accuracy_on_the_triton_target_says_bisection_needs_the_cpu_target(monkeypatch):
    """A wrong kernel is caught and eager's result returned; the warning says why no
    kernel is named (bisection rebuilds the CPU target's kernel IR) instead of failing
    with an AttributeError."""
    from tessel.targets.triton import op_table
    # x * 3 becomes x + 3
    monkeypatch.setitem(op_table.OPS, "arith.mulf", op_table.OPS["arith.addf"])
    compiled = torch.compile(lambda t: t * 3, backend="mlir",
                             options={"target": "triton", "check_accuracy": True})
    x = torch.randn(8, 8)
    with pytest.warns(UserWarning, match="differs from eager") as caught:
        torch.testing.assert_close(compiled(x), x * 3)
    (message,) = [str(w.message) for w in caught if "differs from eager" in str(w.message)]
    assert "kernel bisection needs the CPU target" in message


def test_a_damaged_cache_entry_is_a_miss(tmp_path):
    """An entry that cannot be read (a truncated write, another tessel's format) must
    not break the program: the graph compiles again."""
    import json

    def fn(x):
        return torch.tanh(x) * 2
    x = torch.randn(8, 8)
    compile_triton(fn)(x)
    for path in (tmp_path / "cache" / "graphs").glob("*.json"):
        entry = json.loads(path.read_text())
        if "signature" in entry:
            path.write_text(json.dumps({**entry, "signature": "not a signature"}))
    torch._dynamo.reset()
    torch.testing.assert_close(compile_triton(fn)(x), fn(x))
    assert tessel.stats()["graphs_cached_before_aot"] == 0


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: (x.add_(1).sin(),), id="input-mutation"),
    pytest.param(lambda x: (x.sin(), x.t()), id="output-aliases-input"),
])
def test_a_graph_that_aot_autograd_wraps_comes_from_the_cache_below_it(fn, tmp_path):
    """aot_autograd's wrapper writes mutated inputs back and recreates aliased outputs:
    such a graph must go through aot_autograd even when it comes from the cache."""
    def run(function):
        x = torch.arange(6.0).reshape(2, 3)
        return function(x), x
    expected = run(fn)
    for _ in range(2):  # the second time as a new process would: from the cache
        torch._dynamo.reset()
        torch.testing.assert_close(run(compile_triton(fn)), expected)
    counters = tessel.stats()
    assert counters["graphs_cached"] == 1 and counters["graphs_cached_before_aot"] == 0


def test_channels_last_weights_convert_once_per_weight_version():
    from tessel.targets.triton.host_program import channels_last_weights

    convert, weight = channels_last_weights(), torch.randn(8, 4, 3, 3)
    first = convert(weight, False)
    assert first.is_contiguous(memory_format=torch.channels_last)
    assert convert(weight, False) is first  # no copy per call
    with torch.no_grad():
        weight.mul_(2)  # an optimizer step: a new version of the same storage
    torch.testing.assert_close(convert(weight, False), weight)
    # Inside a CUDA graph capture the conversion is captured: a fresh copy each time
    assert convert(weight, True) is not convert(weight, True)


_UNSIGNED_KERNEL = """
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<5xi8>, %y: tensor<5xi8>) -> tensor<5xi32> {
  %e = tensor.empty() : tensor<5xi32>
  %r = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%x, %y : tensor<5xi8>, tensor<5xi8>) outs(%e : tensor<5xi32>) {
    ^bb0(%a: i8, %b: i8, %out: i32):
      %less = arith.cmpi ult, %a, %b : i8
      %wide = arith.extui %a : i8 to i32
      %flag = arith.extui %less : i1 to i32
      %big = arith.constant 1000 : i32
      %sum = arith.muli %flag, %big : i32
      %v = arith.addi %wide, %sum : i32
      linalg.yield %v : i32
    } -> tensor<5xi32>
    "tkern.yield"(%g) : (tensor<5xi32>) -> ()
  }) {sym_name = "main_kernel_0", tessel.gpu = {block = array<i64: 8>, kind = "pointwise", num_warps = 1 : i64}} : () -> tensor<5xi32>
  return %r : tensor<5xi32>
}
"""


def test_unsigned_integer_ops_read_the_bits_unsigned(tmp_path):
    """arith's unsigned ops on signless integers (a uint8 200 is i8 -56): comparisons
    and zero-extension must not treat the bits as signed."""
    x = torch.tensor([0, 5, 130, 200, 255], dtype=torch.uint8).view(torch.int8)
    y = torch.tensor([1, 4, 200, 100, 255], dtype=torch.uint8).view(torch.int8)
    out = run_generated_kernel(_UNSIGNED_KERNEL, x, y, torch.empty(5, dtype=torch.int32))
    assert out.tolist() == [1000, 5, 1130, 200, 255]


# An op on constants alone in a body (canonicalize usually folds them): an integer
# division, then a cast of the quotient.
_CONSTANT_OPERANDS_KERNEL = """
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %out: f32):
      %minus_seven = arith.constant -7 : i32
      %two = arith.constant 2 : i32
      %quotient = arith.divsi %minus_seven, %two : i32
      %widened = arith.sitofp %quotient : i32 to f32
      %v = arith.addf %a, %widened : f32
      linalg.yield %v : f32
    } -> tensor<4xf32>
    "tkern.yield"(%g) : (tensor<4xf32>) -> ()
  }) {sym_name = "main_kernel_0", tessel.gpu = {block = array<i64: 4>, kind = "pointwise", num_warps = 1 : i64}} : () -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def test_ops_on_constants_alone_compute_typed_triton_values():
    """An op whose operands are all constants computes on Triton values of its type,
    with Triton's semantics: on Python literals, -7 // 2 floored to -4 (divsi
    truncates: -3)."""
    x = torch.zeros(4)
    out = run_generated_kernel(_CONSTANT_OPERANDS_KERNEL, x, torch.empty(4))
    assert out.tolist() == [-3.0] * 4


def run_generated_kernel(mlir: str, *tensors: torch.Tensor) -> torch.Tensor:
    """Run the Triton kernel generated for the one tkern.kernel in `mlir`, whose inputs
    and output buffer are `tensors`; returns the output."""
    from tessel import ir
    from tessel.targets.triton import kernel_source, target
    from tessel.targets.triton.prelude import PRELUDE

    module = ir.parse_module(mlir)
    (kernel,) = ir.ops_where(module.operation, lambda op: op.name == "tkern.kernel")
    generated = kernel_source.generate(kernel)
    kernels = target._load_kernels(PRELUDE + "\n\n" + generated.source)
    strides = [s for t in tensors for s in t.stride()]
    getattr(kernels, generated.name)[generated.grid](*tensors, *strides, BLOCK=generated.block)
    return tensors[-1]


# What max_pool2d's backward does on CUDA with a saved flat index: row and column by a
# floor division (floordivsi), here with its ceiling twin too.
_FLOOR_DIVISION_KERNEL = """
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<8xi32>, %y: tensor<8xi32>) -> tensor<8xi32> {
  %e = tensor.empty() : tensor<8xi32>
  %r = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%x, %y : tensor<8xi32>, tensor<8xi32>) outs(%e : tensor<8xi32>) {
    ^bb0(%a: i32, %b: i32, %out: i32):
      %floor = arith.floordivsi %a, %b : i32
      %ceil = arith.ceildivsi %a, %b : i32
      %hundred = arith.constant 100 : i32
      %scaled = arith.muli %floor, %hundred : i32
      %v = arith.addi %scaled, %ceil : i32
      linalg.yield %v : i32
    } -> tensor<8xi32>
    "tkern.yield"(%g) : (tensor<8xi32>) -> ()
  }) {sym_name = "main_kernel_0", tessel.gpu = {block = array<i64: 8>, kind = "pointwise", num_warps = 1 : i64}} : () -> tensor<8xi32>
  return %r : tensor<8xi32>
}
"""


def test_floor_and_ceiling_division_of_signed_integers():
    a = [7, -7, 7, -7, 6, -6, 0, 5]
    b = [2, 2, -2, -2, 3, 3, 4, -1]
    out = run_generated_kernel(_FLOOR_DIVISION_KERNEL, torch.tensor(a, dtype=torch.int32),
                               torch.tensor(b, dtype=torch.int32),
                               torch.empty(8, dtype=torch.int32))
    assert out.tolist() == [(p // q) * 100 - (-p // q) for p, q in zip(a, b)]


def test_power_with_a_tensor_exponent():
    """Adam's bias correction raises a beta to the step count, a tensor: powf with a
    non-constant exponent, including negative bases, zeros and NaN cases."""
    def fn(x, y):
        return torch.pow(x, y) + torch.pow(0.9, y)
    x = torch.tensor([2.0, -2.0, -2.0, 0.0, 0.0, 1.0, 0.5, -0.5, 3.0, 1.5])
    y = torch.tensor([3.0, 3.0, 0.5, 2.0, -1.0, float("nan"), 10.0, 2.0, 0.0, -2.5])
    torch.testing.assert_close(compile_triton(fn)(x, y), fn(x, y), equal_nan=True)
    assert_compiled()


@pytest.mark.parametrize("fn", [lambda x: x.sum(-1), lambda x: x.amax(1) * 2,
                                lambda x: x.mean(dim=(0, 2, 3))],
                         ids=["row_sum", "row_max", "batch_norm_statistics"])
def test_reductions_without_producers_run_one_program_per_row(fn):
    x = torch.randn(4, 6, 10, 20)
    torch.testing.assert_close(compile_triton(fn)(x), fn(x))
    assert_compiled()


def test_batch_norm_in_training_mode():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU()).train()
    reference = copy.deepcopy(model)
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(compile_triton(model)(x), reference(x))
    torch.testing.assert_close(model[1].running_mean, reference[1].running_mean)
    assert_compiled()


def test_group_norm_backward_compiles_whole():
    """A group norm's backward sums over each group's 4 x 36 values, read by an
    epilogue over all of them: with the sums of rows of 4 in its row kernel, the
    epilogue's 144 values a program had too few lanes ("a result of [1, 1, 4, 36]
    points beside the kernel's row of [4]"), and the backward ran eagerly. Those sums
    now stay out of the epilogue's kernel."""
    model = torch.nn.GroupNorm(4, 16)
    reference = copy.deepcopy(model)
    x = torch.randn(2, 16, 6, 6, requires_grad=True)
    compile_triton(model)(x).sum().backward()
    expected = x.detach().clone().requires_grad_()
    reference(expected).sum().backward()
    torch.testing.assert_close(x.grad, expected.grad)
    torch.testing.assert_close(model.weight.grad, reference.weight.grad)
    assert assert_compiled()["backward_graphs_compiled"] == 1


def test_max_pooling_indices_read_the_loop_indices_and_gather():
    """Training-mode max pooling also returns argmax indices: torch-mlir computes them
    from linalg.index and a tensor.extract of the input at the window position."""
    def fn(x):
        values, indices = F.max_pool2d(x, 2, return_indices=True)
        return values * 2, indices
    x = torch.randn(2, 3, 8, 8)
    actual, expected = compile_triton(fn)(x), fn(x)
    torch.testing.assert_close(actual[0], expected[0])
    assert torch.equal(actual[1], expected[1])
    assert_compiled()


def test_all_and_any_reduce_with_bitwise_combiners():
    def fn(x):
        return torch.all(x > -1.5, dim=-1), torch.any(x > 2.0, dim=-1), (x > -3).all()
    x = torch.randn(8, 40)
    for actual, expected in zip(compile_triton(fn)(x), fn(x)):
        assert torch.equal(actual, expected)
    assert_compiled()


@pytest.mark.parametrize("columns", [32, 100, 9000], ids=["window", "persistent-row", "looped-row"])
def test_max_with_indices_is_a_kernel(columns, tmp_path):
    """torch.max(x, dim) with its indices (torch-mlir: a reduction of two results, the
    index selected by comparing each element with the value) compiles on the Triton
    target, with ties, NaNs and rows of -inf: unrolled in a window of 32 points, a
    row in registers, a row in chunks (index_reductions.py)."""
    def fn(x):
        values, indices = x.max(dim=-1)
        return values * 2, indices, x.argmin(-1)
    torch.manual_seed(0)
    x = torch.randn(6, columns)
    x[1] = 0.5
    x[2, columns // 3], x[2, columns // 2] = float("nan"), 100.0
    x[3, -1] = float("nan")
    x[4] = float("-inf")
    for actual, expected in zip(compile_triton(fn, tmp_path / "dump")(x), fn(x)):
        torch.testing.assert_close(actual, expected, equal_nan=True, rtol=0, atol=0)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert ("tl.max(" in kernels) == (columns > 32), kernels


# An argmax as torch-mlir lowers aten.max.dim, over rows of 100 (one block) and 9000
# (chunks): applied in order, a NaN makes the value NaN and no later comparison holds.
_ARGMAX = """
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<6xNxf32>) -> (tensor<6xf32>, tensor<6xi64>) {
  %zero = arith.constant 0 : i64
  %minus_inf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<6xi64>
  %i0 = linalg.fill ins(%zero : i64) outs(%e0 : tensor<6xi64>) -> tensor<6xi64>
  %e1 = tensor.empty() : tensor<6xf32>
  %v0 = linalg.fill ins(%minus_inf : f32) outs(%e1 : tensor<6xf32>) -> tensor<6xf32>
  %r:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<6xNxf32>) outs(%v0, %i0 : tensor<6xf32>, tensor<6xi64>) {
  ^bb0(%in: f32, %value: f32, %index: i64):
    %k = linalg.index 1 : index
    %candidate = arith.index_cast %k : index to i64
    %max = arith.maximumf %in, %value : f32
    %greater = arith.cmpf ogt, %in, %value : f32
    %chosen = arith.select %greater, %candidate, %index : i64
    linalg.yield %max, %chosen : f32, i64
  } -> (tensor<6xf32>, tensor<6xi64>)
  return %r#0, %r#1 : tensor<6xf32>, tensor<6xi64>
}
"""


@pytest.mark.parametrize("columns", [100, 9000], ids=["persistent-row", "looped-row"])
def test_an_index_reduction_counts_no_element_from_the_first_nan_on(columns):
    from tessel import ir
    from tessel.passes.form_kernels import is_kernel
    from tessel.passes.pipeline import run_pipeline
    from tessel.passes.registry import lookup_pipeline
    from tessel.targets.triton import kernel_source, target
    from tessel.targets.triton.prelude import PRELUDE

    module = ir.parse_module(_ARGMAX.replace("6xN", f"6x{columns}"))
    run_pipeline(module, lookup_pipeline("gpu"))
    (kernel,) = ir.ops_where(module.operation, lambda op: is_kernel(op) and len(op.results) == 2)
    generated = kernel_source.generate(kernel)
    kernels = target._load_kernels(PRELUDE + "\n\n" + generated.source)
    torch.manual_seed(0)
    x = torch.randn(6, columns)
    x[1, 3], x[1, 7], x[1, 50] = 5.0, float("nan"), 9.0  # 9.0 comes after the NaN
    x[2, 0] = float("nan")
    x[3] = 2.0
    x[4] = float("-inf")
    x[5, -2], x[5, -1] = 50.0, float("nan")
    values, indices = torch.empty(6), torch.empty(6, dtype=torch.int64)
    getattr(kernels, generated.name)[generated.grid](
        x, values, indices, *x.stride(), *values.stride(), *indices.stride(), BLOCK=generated.block)
    in_order = [(float("-inf"), 0)] * 6
    for row, elements in enumerate(x.tolist()):
        for k, element in enumerate(elements):
            value, index = in_order[row]
            in_order[row] = (value if value != value else element if element != element
                             else max(value, element), k if element > value else index)
    assert indices.tolist() == [index for _, index in in_order] == [
        int(x[0].argmax()), 3, 0, 0, 0, columns - 2]
    torch.testing.assert_close(values, torch.tensor([value for value, _ in in_order]),
                               equal_nan=True)


def test_a_transformer_layers_backward_row_loops_are_kernels_of_one_result(tmp_path):
    """A transformer layer's backward: every row loop is a tkern.kernel of one result.
    The zero fill that CSE shares between its sums had joined one row loop as a second
    result (form-kernels then left the loop unwrapped), and the sum that read the fill
    next ran as a kernel of its own (fuse-tiles now gives each reader its own fill)."""
    model = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                             batch_first=True, dropout=0.0)
    reference = copy.deepcopy(model)
    x = torch.randn(2, 10, 32, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    compile_triton(model, tmp_path / "dump")(x).sum().backward()
    reference(x_eager).sum().backward()
    torch.testing.assert_close(x.grad, x_eager.grad)
    torch.testing.assert_close(model.linear1.weight.grad, reference.linear1.weight.grad)
    counters = assert_compiled(2)
    assert counters["backward_graphs_compiled"] == 1
    (backward,) = tmp_path.glob("dump/*_backward/*_gpu.mlir")
    text = backward.read_text()
    assert "scf.forall" in text and "tessel.kernel = " not in text


def test_max_pooling_backward_is_eager_s_exactly(tmp_path):
    """Windows that tile the input: each point gets at most one window's gradient, which
    the gather passes on unchanged."""
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    compile_triton(lambda t: F.max_pool2d(t, 2), tmp_path / "dump")(x).sum().backward()
    F.max_pool2d(x_eager, 2).sum().backward()
    assert torch.equal(x.grad, x_eager.grad)
    assert_compiled(2)
    (host,) = tmp_path.glob("dump/*_backward/*_host_program.py")
    assert "scatter(" not in host.read_text()


def test_a_dry_run_skips_scatters_whose_indices_no_kernel_wrote():
    """Before compiling, a dry run of the host program records its launches without
    running kernels: a scatter's indices are then garbage and must not be used."""
    from tessel.targets.triton.host_program import scatter
    from tessel.targets.triton.launcher import recorded_launches
    buffer = torch.zeros(4)
    out_of_range = torch.tensor([[7]])
    assert recorded_launches(lambda: scatter(buffer, out_of_range, torch.ones(1), True), ()) == []
    assert not buffer.any()
    scatter(buffer, torch.tensor([[1], [1]]), torch.ones(2), True)
    assert buffer.tolist() == [0, 2, 0, 0]


def test_an_embedding_s_gradient_scatters_rows_into_the_table(tmp_path):
    """torch-mlir scatters an embedding's gradient as [N, 1, D] updates into the [V, D]
    table; index_put_ took them as is and raised in every transformer's backward
    ("expand(... [N, 1, D], size=[N, D])"). Token 1 and 3 come twice: they accumulate."""
    weight = torch.randn(10, 4, requires_grad=True)
    ids, grad = torch.tensor([[1, 3, 1], [0, 9, 3]]), torch.randn(2, 3, 4)
    compile_triton(lambda w, i: F.embedding(i, w), tmp_path / "dump")(weight, ids).backward(grad)
    compiled_grad, weight.grad = weight.grad, None
    F.embedding(ids, weight).backward(grad)
    torch.testing.assert_close(compiled_grad, weight.grad)
    assert_compiled(2)
    # The rows add into the table in a scatter kernel, atomically, not on the host.
    (backward,) = tmp_path.glob("dump/*_backward")
    assert "scatter(" not in (backward / "06_host_program.py").read_text()
    assert "tl.atomic_add(" in (backward / "05_triton_kernels.py").read_text()


def test_deterministic_mode_scatters_an_embedding_s_gradient_through_index_put(tmp_path):
    """Atomic adds land in no fixed order: under torch.use_deterministic_algorithms the
    gradient is aten's index_put_ (which sorts its indices), as eager's is."""
    weight = torch.randn(10, 4, requires_grad=True)
    ids, grad = torch.tensor([[1, 3, 1], [0, 9, 3]]), torch.randn(2, 3, 4)
    torch.use_deterministic_algorithms(True)
    try:
        compile_triton(lambda w, i: F.embedding(i, w), tmp_path / "dump")(weight, ids).backward(grad)
    finally:
        torch.use_deterministic_algorithms(False)
    compiled_grad, weight.grad = weight.grad, None
    F.embedding(ids, weight).backward(grad)
    torch.testing.assert_close(compiled_grad, weight.grad)
    assert_compiled(2)
    (backward,) = tmp_path.glob("dump/*_backward")
    assert "accumulate=True" in (backward / "06_host_program.py").read_text()
    assert "tl.atomic_add(" not in (backward / "05_triton_kernels.py").read_text()


def test_a_tied_embedding_s_rows_scatter_onto_the_lm_head_s_gradient(tmp_path):
    """A tied embedding's gradient is the LM head's gemm's plus the rows its lookup
    scatters: scatter-onto-addends adds the rows onto the gemm's gradient, where the
    backward filled a [vocabulary, dims] tensor with zeros, scattered into it, and
    added the two."""
    weight = torch.randn(50, 8, requires_grad=True)
    ids = torch.tensor([[1, 3, 1, 7], [0, 49, 3, 3]])

    def language_model(w, i):
        return F.linear(torch.tanh(F.embedding(i, w)), w).logsumexp(-1).sum()
    compile_triton(language_model, tmp_path / "dump")(weight, ids).backward()
    compiled, weight.grad = weight.grad, None
    language_model(weight, ids).backward()
    torch.testing.assert_close(compiled, weight.grad)
    assert_compiled(2)
    (backward,) = tmp_path.glob("dump/*_backward")
    host = (backward / "06_host_program.py").read_text()
    assert "torch.full((50, 8,)" not in host, host
    assert "tl.atomic_add(" in (backward / "05_triton_kernels.py").read_text()


def test_scatters_into_zeros_start_from_fills_of_their_own_not_copies(tmp_path):
    """Two tables' gradients (T5's relative position biases, an embedding's rows)
    accumulate into one zero constant of the backward: each scatter starts from a
    `torch.full` of its own, where it started from a clone of one shared fill (a fill, a
    read and a write of the table per scatter)."""
    first, second = torch.randn(10, 4, requires_grad=True), torch.randn(10, 4, requires_grad=True)
    ids, grad = torch.tensor([[1, 3, 1], [0, 9, 3]]), torch.randn(2, 3, 4)

    def embed(a, b, i):
        return F.embedding(i, a) * F.embedding(i.flip(1), b)
    compile_triton(embed, tmp_path / "dump")(first, second, ids).backward(grad)
    compiled = first.grad, second.grad
    first.grad = second.grad = None
    embed(first, second, ids).backward(grad)
    torch.testing.assert_close(compiled, (first.grad, second.grad))
    assert_compiled(2)
    (host,) = tmp_path.glob("dump/*_backward/*_host_program.py")
    host = host.read_text()
    assert host.count("torch.full((10, 4,)") == 2 and ".clone()" not in host, host


@pytest.mark.parametrize("shape, index_rows, update_shape", [
    ((10, 4), [[1], [3], [1], [0], [9], [3]], (6, 1, 4)),           # an embedding's rows
    ((3, 5, 7), [[0, 1, 2], [2, 4, 6], [0, 1, 2], [1, 0, 0]], (4,)),  # a gather's elements
])
def test_an_accumulating_scatter_adds_at_offsets_as_index_put_would(shape, index_rows,
                                                                    update_shape):
    """host_program.scatter's atomic path (index_add_ at each element's flat offset)
    against index_put_'s (taken where deterministic algorithms are asked for)."""
    from tessel.targets.triton.host_program import scatter
    torch.manual_seed(0)
    indices, updates = torch.tensor(index_rows), torch.randn(update_shape)
    added = torch.randn(shape)
    put = added.clone()
    scatter(added, indices, updates, accumulate=True)
    torch.use_deterministic_algorithms(True)
    try:
        scatter(put, indices, updates, accumulate=True)
    finally:
        torch.use_deterministic_algorithms(False)
    torch.testing.assert_close(added, put)


def test_a_gather_s_backward_is_one_scatter_kernel_computing_its_index_rows(tmp_path):
    """torch-mlir scatters a gather's gradient with one index row per element, its
    columns inserted one by one into an index tensor. The scatter kernel computes each
    row's columns where it adds the element (fuse-into-scatters): the host neither
    fills nor inserts the rows (DeBERTa's relative attention: 8 x 12 x 512 x 512 of
    them, 24 times a step), nor computes offsets from them."""
    x = torch.randn(2, 3, 8, requires_grad=True)
    index = torch.randint(0, 8, (2, 3, 5))

    def pick(x, i):
        return torch.gather(x, 2, i) * 2
    grad = torch.randn(2, 3, 5)
    compile_triton(pick, tmp_path / "dump")(x, index).backward(grad)
    compiled, x.grad = x.grad, None
    pick(x, index).backward(grad)
    torch.testing.assert_close(compiled, x.grad)
    assert_compiled(2)
    (backward,) = tmp_path.glob("dump/*_backward")
    host = (backward / "06_host_program.py").read_text()
    assert "scatter(" not in host and "] = " not in host and ".clone()" not in host, host
    kernels = (backward / "05_triton_kernels.py").read_text()
    assert kernels.count("tl.atomic_add(") == 1, kernels


def test_a_static_cache_update_scatters_single_elements():
    """transformers' static KV cache writes new positions with index_copy_, which
    torch-mlir scatters as [N, 1, 1, 1, 1] updates into the [B, H, S, D] cache, one
    index column per dim; index_put_'s indexing result is [N]. It raised in every
    step of generate() with cache_implementation="static"."""
    def fn(cache, positions, new):
        return torch.index_copy(cache, 2, positions, new) * 2
    args = (torch.randn(2, 3, 10, 4), torch.tensor([4, 5]), torch.randn(2, 3, 2, 4))
    torch.testing.assert_close(compile_triton(fn)(*args), fn(*args))
    assert_compiled()


def _rotary_angles_and_cache_update(cache, positions, new, inverse_frequencies):
    """A decode step's cache update next to its rotary angles, as transformers computes
    them: the angles' halves concatenated (cat((freqs, freqs))), the new entries
    scattered into the cache."""
    freqs = positions[:, None].float() * inverse_frequencies[None, :]
    angles = torch.cat((freqs, freqs), dim=-1)
    cache.index_copy_(2, positions, new)
    return angles.cos(), angles.sin(), cache * 2


def test_a_decode_steps_concatenations_are_gathered(tmp_path):
    """torch-mlir scatters the new entries one element at a time, one index column per
    cache dim (iotas for the dims not indexed, the positions for the one indexed), each
    flattened and unsqueezed, then concatenated: gathered through those reshapes, the
    columns are one generic with their iotas, not a kernel each and a torch.cat, and
    the scatter kernel computes them where it stores (fuse-into-scatters): no
    index_put_ on the host. The angles' halves, one tensor twice, are gathered into the
    cos and sin kernel."""
    cache, new = torch.randn(2, 3, 10, 4), torch.randn(2, 3, 1, 4)
    positions, inverse_frequencies = torch.tensor([6]), torch.randn(2)
    expected_cache = cache.clone()
    compiled = compile_triton(_rotary_angles_and_cache_update, tmp_path / "dump")
    for got, want in zip(compiled(cache, positions, new, inverse_frequencies),
                         _rotary_angles_and_cache_update(expected_cache, positions, new,
                                                         inverse_frequencies)):
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(cache, expected_cache)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "torch.cat(" not in host and "scatter(" not in host, host
    # the cache update, cos and sin (one combo kernel: the views of cos between them
    # follow it), the doubled cache
    assert len(re.findall(r"^    launch_main_\w+\(", host, re.M)) == 2, host


@pytest.mark.parametrize("fn, args", [
    # rows of a table, one index negative
    (lambda x, i, v: torch.index_put(x, (i,), v) * 2,
     (torch.randn(6, 4), torch.tensor([-1, 2, 0]), torch.randn(3, 4))),
    # single elements, one index tensor per dim
    (lambda x, i, j, v: torch.index_put(x, (i, j), v) * 2,
     (torch.randn(5, 7), torch.tensor([4, 0, 2]), torch.tensor([6, 1, 3]), torch.randn(3))),
    # whole slices along dim 1, an input's index
    (lambda x, i, v: torch.index_copy(x, 1, i, v) * 2,
     (torch.randn(3, 8, 2), torch.tensor([5, 1]), torch.randn(3, 2, 2))),
], ids=["negative_row", "elements", "slices"])
def test_a_scatter_that_stores_is_a_kernel(fn, args, tmp_path):
    """index_put without accumulation and index_copy scatter in a Triton kernel of
    their own (scatter_kernel.py), which loads or computes the index rows: negative
    indices count from the end, as index_put_'s."""
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(*args), fn(*args))
    assert_compiled()
    kernels, host = generated_files(tmp_path / "dump")
    assert "scatter(" not in host and "scatter index out of bounds" in kernels


def _tiny_decoder(name):
    """A tiny Llama, or Gemma (one key/value head), with random weights."""
    import transformers
    config = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
              "num_key_value_heads": 2 if name == "Llama" else 1, "head_dim": 8,
              "intermediate_size": 64, "vocab_size": 128, "max_position_embeddings": 64,
              "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}
    torch.manual_seed(0)
    return getattr(transformers, f"{name}ForCausalLM")(
        getattr(transformers, f"{name}Config")(**config)).eval()


@pytest.mark.parametrize("name", ["Llama", "Gemma"])
def test_a_static_cache_is_updated_by_kernels_that_compute_their_addresses(name, tmp_path):
    """generate() with a static KV cache and a compiled forward picks eager's tokens.
    Each step writes its new keys and values into the cache with scatter kernels that
    compute their index rows and the keys' rotary embedding themselves
    (fuse-into-scatters), not with index_put_ on host-built index columns."""
    model = _tiny_decoder(name)
    ids = torch.randint(3, 128, (1, 6))
    settings = {"max_new_tokens": 4, "min_new_tokens": 4, "do_sample": False,
                "cache_implementation": "static"}
    expected = model.generate(ids, **settings)
    model.forward = torch.compile(model.forward, backend="mlir", fullgraph=True, options={
        "target": "triton", "fallback": False, "dump_dir": str(tmp_path / "dump")})
    assert model.generate(ids, **settings).tolist() == expected.tolist()
    assert_compiled()
    hosts = [path.read_text() for path in tmp_path.glob("dump/*/*_host_program.py")]
    kernels = "".join(path.read_text() for path in tmp_path.glob("dump/*/*_triton_kernels.py"))
    assert hosts and not any("scatter(" in host for host in hosts)
    # a prompt's and a step's K and V (the layers launch the same two kernels)
    assert kernels.count("scatter index out of bounds") >= 4, kernels


def _scattered_as_tm_tensor(original, indices, updates):
    """tm_tensor.scatter's scalar loop (accumulating): update slice dim j addresses
    original dim rank - slice rank + j, plus the index where that dim is indexed."""
    result = original.clone()
    depth, slice_rank = indices.shape[1], updates.dim() - 1
    for n in range(updates.shape[0]):
        for position in itertools.product(*map(range, updates.shape[1:])):
            at = [0] * (original.dim() - slice_rank) + list(position)
            for dim in range(depth):
                at[dim] += int(indices[n, dim])
            result[tuple(at)] += updates[(n, *position)]
    return result


@pytest.mark.parametrize("original, indices, update_shape", [
    ((6, 4), [[1], [4], [1]], (3, 1, 4)),               # an embedding's gradient
    ((2, 3, 5, 2), [[0, 2, 3, 1], [1, 0, 4, 0]], (2, 1, 1, 1, 1)),  # a static cache
    ((6, 4), [[1], [3]], (2, 2, 4)),                    # two rows from the index on
    ((3, 6, 2), [[1, 0], [2, 3]], (2, 3, 2)),           # three from the second index on
    ((3, 6, 2), [[1, 0], [2, 3]], (2, 2)),              # the dims after the indexed ones
], ids=["one_row", "single_elements", "two_rows", "inner_window", "trailing_dims_only"])
def test_scatter_slices_start_at_the_index_in_the_dims_it_addresses(
        original, indices, update_shape):
    from tessel.targets.triton.host_program import scatter
    original, indices = torch.randn(original), torch.tensor(indices, dtype=torch.int32)
    updates = torch.randn(update_shape)
    buffer = original.clone()
    scatter(buffer, indices, updates, accumulate=True)
    torch.testing.assert_close(buffer, _scattered_as_tm_tensor(original, indices, updates))


def test_a_causal_lm_loss_returns_its_shifted_labels_contiguous():
    """A causal LM's loss shifts its labels (pad, slice, .contiguous(), view(-1)) and
    the forward returns them for the backward. torch-mlir drops the copy, so the host
    returned a slice of the padded labels, whose strides aot_autograd's view(-1) of it
    rejected ("view size is not compatible with input tensor's size and stride")."""
    def loss(logits, labels):
        shifted = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), shifted.view(-1))
    logits, labels = torch.randn(2, 8, 10, requires_grad=True), torch.randint(0, 10, (2, 8))
    actual = compile_triton(loss)(logits, labels)
    actual.backward()
    compiled_grad, logits.grad = logits.grad, None
    expected = loss(logits, labels)
    expected.backward()
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(compiled_grad, logits.grad)
    assert_compiled(2)


def test_slice_scatter_copies_into_a_view_on_the_host(tmp_path):
    """tensor.insert_slice at the host level (slice_scatter; CUDA's max pooling
    backward) is a clone of the destination and a copy into a strided view of it."""
    def fn(x, y):
        return torch.slice_scatter(x * 3, y * 2, dim=0, start=2, end=6, step=2)
    x, y = torch.randn(8, 5), torch.randn(2, 5)
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, y), fn(x, y))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "[2:5:2, 0:5] = " in host


def test_row_loop_index_read_in_a_body():
    """Position ids (an arange) gathered from a table in the same row loop: the body
    reads the loop's index."""
    def fn(table):
        positions = torch.arange(8)
        return table[positions] * 2, positions
    table = torch.randn(16, 32)
    actual, expected = compile_triton(fn)(table), fn(table)
    torch.testing.assert_close(actual[0], expected[0])
    assert torch.equal(actual[1], expected[1])
    assert_compiled()


def test_repeated_blocks_share_one_kernel_function(tmp_path):
    """Two identical layers generate the same kernel twice: the module defines it once,
    and both launches call it, each through its own launcher."""
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 32), torch.nn.GELU())
    kernels, host = checked_against_eager(model, torch.randn(8, 32), tmp_path / "dump")
    (function,) = set(re.findall(r"KernelLauncher\((\w+),", host))
    assert host.count(f"KernelLauncher({function},") == 2
    assert kernels.count(f"def {function}(") == 1
    assert len(re.findall(r"def k_\w+\(in0", kernels)) == 1
    # named for the ops it computes and its body, as a profiler lists it
    assert re.fullmatch(r"k_add_erf_mul_[0-9a-f]{8}", function), function


_IOTA_KERNEL = """
#id = affine_map<(d0) -> (d0)>
func.func @main() -> tensor<8xi64> {
  %e = tensor.empty() : tensor<8xi64>
  %r = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e : tensor<8xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %v = arith.index_cast %i : index to i64
      linalg.yield %v : i64
    } -> tensor<8xi64>
    "tkern.yield"(%g) : (tensor<8xi64>) -> ()
  }) {sym_name = "main_kernel_0", tessel.gpu = {block = array<i64: 8>, kind = "pointwise", num_warps = 1 : i64}} : () -> tensor<8xi64>
  return %r : tensor<8xi64>
}
"""


def test_a_kernel_without_inputs_that_computes_its_values_is_no_constant_fill():
    """An iota (a generic with no input whose body reads linalg.index) is launched, not
    folded into its readers as a constant; it fills its buffer with the indices."""
    from tessel import ir
    from tessel.targets.triton.writer import fill_constant

    module = ir.parse_module(_IOTA_KERNEL)
    (kernel,) = ir.ops_where(module.operation, lambda op: op.name == "tkern.kernel")
    assert fill_constant(kernel.results[0]) is None
    out = run_generated_kernel(_IOTA_KERNEL, torch.empty(8, dtype=torch.int64))
    assert out.tolist() == list(range(8))


@pytest.mark.parametrize("fn, shape, with_nans", [
    (lambda x: x.sum(-1), (3, 10007), False),
    (lambda x: torch.softmax(x, -1), (3, 10007), False),
    (lambda x: F.layer_norm(x, (9001,)) * 2 + 1, (2, 3, 9001), False),
    (lambda x: x.amax(-1) + 1, (4, 12007), True),
], ids=["sum", "softmax", "layer_norm", "max_with_nans"])
def test_rows_longer_than_a_block_loop_over_chunks(fn, shape, with_nans, tmp_path):
    """Rows over 8192 elements: one chunk loop per run of reductions that read none of
    each other (recomputing what feeds it), then one that computes and stores the outputs. Their lengths are prime, so
    that split-reductions leaves these few rows whole."""
    x = torch.randn(*shape)
    if with_nans:
        x.view(-1)[::5003] = float("nan")
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x), fn(x),
                               equal_nan=True, atol=1e-4, rtol=1e-4)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert "for start in range(0, " in kernels


@pytest.mark.parametrize("fn", [lambda x: torch.softmax(x, -1), lambda x: F.log_softmax(x, -1)],
                         ids=["softmax", "log_softmax"])
def test_long_rows_sum_exponentials_with_a_running_max(fn, tmp_path):
    """softmax's max and sum of exp(x - max) over a row longer than a block accumulate
    in one chunk loop (online softmax: each lane rescales its sum as its max grows),
    then one loop stores. Lanes that have seen only -inf, a row of -inf and a NaN give
    eager's results. Rows of a prime length: split-reductions leaves them whole."""
    x = torch.randn(4, 10007) * 10
    x[0] = float("-inf")
    x[1, :5000] = float("-inf")  # some lanes see -inf in two chunks, then numbers
    x[2, ::3] = float("-inf")
    x[3, 7] = float("nan")
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x), fn(x),
                               equal_nan=True, atol=1e-5, rtol=1e-5)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert kernels.count("for start in range(0, 10007, BLOCK):") == 2


# softmax over long rows plus twice the row's max, read by a generic of one point that
# sits between the max and the sum: computed in the online pass from the lanes' running
# max, which is not yet the row's.
_ONLINE_SOFTMAX_WITH_A_SCALAR_OF_THE_MAX = """
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0)>
func.func @main(%arg0: tensor<3x10000xf32>) -> tensor<3x10000xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 0xFF800000 : f32
  %two = arith.constant 2.000000e+00 : f32
  %0 = tensor.empty() : tensor<3xf32>
  %1 = tensor.empty() : tensor<3x10000xf32>
  %2 = "tkern.kernel"() ({
    %3 = scf.forall (%arg1) in (3) shared_outs(%arg2 = %1) -> (tensor<3x10000xf32>) {
      %x = tensor.extract_slice %arg0[%arg1, 0] [1, 10000] [1, 1] : tensor<3x10000xf32> to tensor<1x10000xf32>
      %s1 = tensor.extract_slice %0[%arg1] [1] [1] : tensor<3xf32> to tensor<1xf32>
      %4 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%s1 : tensor<1xf32>) {
      ^bb0(%out: f32):
        linalg.yield %cst_0 : f32
      } -> tensor<1xf32>
      %5 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<1x10000xf32>) outs(%4 : tensor<1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %10 = arith.maximumf %in, %out : f32
        linalg.yield %10 : f32
      } -> tensor<1xf32>
      %twice = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%5 : tensor<1xf32>) outs(%s1 : tensor<1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %10 = arith.mulf %in, %two : f32
        linalg.yield %10 : f32
      } -> tensor<1xf32>
      %o = tensor.extract_slice %arg2[%arg1, 0] [1, 10000] [1, 1] : tensor<3x10000xf32> to tensor<1x10000xf32>
      %6 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%x, %5 : tensor<1x10000xf32>, tensor<1xf32>) outs(%o : tensor<1x10000xf32>) {
      ^bb0(%in: f32, %in_3: f32, %out: f32):
        %10 = arith.subf %in, %in_3 : f32
        %11 = math.exp %10 : f32
        linalg.yield %11 : f32
      } -> tensor<1x10000xf32>
      %7 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%s1 : tensor<1xf32>) {
      ^bb0(%out: f32):
        linalg.yield %cst : f32
      } -> tensor<1xf32>
      %8 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%6 : tensor<1x10000xf32>) outs(%7 : tensor<1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %10 = arith.addf %in, %out : f32
        linalg.yield %10 : f32
      } -> tensor<1xf32>
      %9 = linalg.generic {indexing_maps = [#map1, #map2, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%6, %8, %twice : tensor<1x10000xf32>, tensor<1xf32>, tensor<1xf32>) outs(%o : tensor<1x10000xf32>) {
      ^bb0(%in: f32, %in_3: f32, %in_4: f32, %out: f32):
        %10 = arith.divf %in, %in_3 : f32
        %11 = arith.addf %10, %in_4 : f32
        linalg.yield %11 : f32
      } -> tensor<1x10000xf32>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %9 into %arg2[%arg1, 0] [1, 10000] [1, 1] : tensor<1x10000xf32> into tensor<3x10000xf32>
      }
    }
    "tkern.yield"(%3) : (tensor<3x10000xf32>) -> ()
  }) {sym_name = "main_kernel_0", tessel.gpu = {block = array<i64: 4096>, kind = "row_looped", num_warps = 16 : i64}} : () -> tensor<3x10000xf32>
  return %2 : tensor<3x10000xf32>
}
"""


def test_a_row_loop_reads_a_whole_row_value_through_its_row_dims():
    """A causal mask in a row loop (every transformers model's prefill with a static
    cache): each [1, 6] tile compares the positions, a [6] arange the loop computes
    whole, read as (d0, d1) -> (d1). The read was taken for a broadcast ("a row value
    read through a map other than the identity") and the graph ran eagerly."""
    def fn(x):
        positions = torch.arange(x.shape[-1])
        mask = torch.where(positions[None, :] - positions[:, None] <= 0, 0.0, float("-inf"))
        return (x + mask).softmax(-1), positions * 2
    x = torch.randn(6, 6)
    for actual, expected in zip(compile_triton(fn)(x), fn(x)):
        torch.testing.assert_close(actual, expected)
    assert_compiled()


def test_a_value_of_the_running_max_is_recomputed_from_the_row_s_max():
    x = torch.randn(3, 10000)
    out = run_generated_kernel(_ONLINE_SOFTMAX_WITH_A_SCALAR_OF_THE_MAX, x, torch.empty(3, 10000))
    torch.testing.assert_close(out, torch.softmax(x, -1) + 2 * x.amax(-1, keepdim=True))


def test_a_value_of_one_point_from_a_chunk_loop_is_recomputed_in_later_loops(tmp_path):
    """The same kernel with a min, which no online pass pairs with the sum: the twice-min
    generic is computed in the sum's chunk loop, whose variables Triton scopes to it, so
    the storing loop computes it again (reusing it failed the GPU compile: NameError)."""
    from tessel import ir
    from tessel.targets.triton import kernel_source
    from tessel.targets.triton.prelude import PRELUDE

    mlir = _ONLINE_SOFTMAX_WITH_A_SCALAR_OF_THE_MAX.replace(
        "arith.maximumf", "arith.minimumf").replace("0xFF800000", "0x7F800000")
    x = torch.randn(3, 10000)
    minimum = x.amin(-1, keepdim=True)
    exponentials = torch.exp(x - minimum)
    torch.testing.assert_close(run_generated_kernel(mlir, x, torch.empty(3, 10000)),
                               exponentials / exponentials.sum(-1, keepdim=True) + 2 * minimum)
    module = ir.parse_module(mlir)
    (kernel,) = ir.ops_where(module.operation, lambda op: op.name == "tkern.kernel")
    kernels_file = tmp_path / "kernels.py"
    kernels_file.write_text(PRELUDE + "\n\n" + kernel_source.generate(kernel).source)
    _ptx_for_sm90(kernels_file, "main_kernel_0", "*fp32", {"BLOCK": 4096})


def test_max_autotune_keeps_the_fastest_warp_count_and_stores_the_choice(monkeypatch):
    """max-autotune times half, the same and twice each launch's warps, keeps the
    fastest, and a later tuning of the same launch reads the stored choice instead of
    timing. (Timing itself needs a GPU: here it is a table.)"""
    import triton
    import triton.language as tl

    from tessel.targets.triton import autotune
    from tessel.targets.triton.launcher import KernelLauncher

    @triton.jit
    def copy(x, y, BLOCK: tl.constexpr):
        tl.store(y + tl.arange(0, BLOCK), tl.load(x + tl.arange(0, BLOCK)))

    timings = {2: 3.0, 4: 2.0, 8: 1.0}
    timed, compiled = [], []
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "a GPU")
    monkeypatch.setattr(autotune, "compile_in_parallel", lambda launches: compiled.extend(
        launcher.num_warps for launcher, _ in launches))

    def milliseconds(launcher, args):
        timed.append(launcher.num_warps)
        return timings[launcher.num_warps]
    monkeypatch.setattr(autotune, "milliseconds", milliseconds)
    x, y = torch.zeros(64), torch.zeros(64)

    def launches():
        return [(KernelLauncher(copy, grid=(1,), block=64, num_warps=4), (x, y)),
                (KernelLauncher(copy, grid=lambda size0: (1,), block=64, num_warps=4, sizes=1),
                 (x, y, 64))]
    first = launches()
    best = {"block": 64, "num_warps": 8, "num_stages": None}
    assert autotune.choose_configs(first) == {"copy": best}
    assert [launcher.num_warps for launcher, _ in first] == [8, 4]  # dynamic sizes: kept
    assert sorted(timed) == sorted(compiled) == [2, 4, 8]

    timed.clear()
    again = launches()
    assert autotune.choose_configs(again) == {"copy": best} and not timed
    assert again[0][0].num_warps == 8


def test_max_autotune_times_gemm_templates_over_tiles(monkeypatch):
    """max-autotune times a gemm template's launch with nine tiles, clamped to the
    gemm's dims; the fastest tile is kept, with the grid of one program per output
    tile, and stored."""
    import triton
    import triton.language as tl

    from tessel.targets.triton import autotune
    from tessel.targets.triton.launcher import KernelLauncher

    @triton.jit
    def template(x, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pass

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "a GPU")
    monkeypatch.setattr(autotune, "compile_in_parallel", lambda launches: None)
    tried = []

    def milliseconds(launcher, args):
        tried.append((tuple(launcher.block.values()), launcher.num_warps, launcher.num_stages))
        return 1.0 if launcher.block["BLOCK_M"] == 64 and launcher.num_stages == 4 else 2.0
    monkeypatch.setattr(autotune, "milliseconds", milliseconds)
    block = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    launcher = KernelLauncher(template, grid=(4 * 8,), block=block, num_warps=8, num_stages=3,
                              gemm=(512, 1000, 48))
    tuned = autotune.choose_configs([(launcher, (torch.zeros(1),))])
    assert len(tried) == 9
    assert ((64, 64, 64), 4, 4) in tried and all(k == 64 for (_, _, k), _, _ in tried)  # K: 48
    block = (("BLOCK_M", 64), ("BLOCK_N", 64), ("BLOCK_K", 64))
    assert tuned == {"template": {"block": block, "num_warps": 4, "num_stages": 4}}
    assert launcher.block == dict(block) and launcher.grid == (8 * 16,)

    tried.clear()
    again = KernelLauncher(template, grid=(4 * 8,), block=dict(launcher.block, BLOCK_M=128,
                                                              BLOCK_N=128),
                           num_warps=8, num_stages=3, gemm=(512, 1000, 48))
    assert autotune.choose_configs([(again, (torch.zeros(1),))]) == tuned
    assert not tried and again.grid == (8 * 16,)  # the stored choice


def test_the_host_program_frees_each_buffer_after_its_last_use(tmp_path):
    """Intermediates are deleted after their last use, so that the caching allocator
    can give their memory to later buffers of the same call."""
    import re

    def fn(x, w):
        return torch.softmax(torch.layer_norm(x @ w, (64,)).relu() @ w, -1)

    x, w = torch.randn(8, 64), torch.randn(64, 64)
    torch.testing.assert_close(compile_triton(fn, dump_dir=tmp_path / "dump")(x, w), fn(x, w))
    _, host = generated_files(tmp_path / "dump")
    lines = [line.strip() for line in host.splitlines()]
    body = lines[lines.index(next(line for line in lines if line.startswith("def host"))) + 1:]
    buffers = {name for line in body for name in re.findall(r"\bbuf\d+\b", line)}
    assert len(buffers) >= 4
    for name in buffers:
        uses = [i for i, line in enumerate(body)
                if re.search(rf"\b{name}\b", line) and not line.startswith("del ")]
        deletion = next(i for i, line in enumerate(body)
                        if line.startswith("del ") and re.search(rf"\b{name}\b", line))
        assert deletion == uses[-1] + 1, (name, body)


@pytest.mark.parametrize("rows", [(32,), (2, 16)], ids=["2-D", "3-D"])
def test_a_half_linear_with_a_bias_is_one_addmm(rows, tmp_path):
    """fold-bias-into-gemm: a bf16 linear's bias goes into cuBLAS's addmm, which rounds
    once to bf16 as eager's does; no kernel adds the bias to an f32 product, and none
    copies the rounded result."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(16, 24).bfloat16()
    x = torch.randn(*rows, 16).bfloat16()
    with torch.no_grad():
        compiled = compile_triton(linear, dump_dir=tmp_path / "dump")(x)
        torch.testing.assert_close(compiled, linear(x))
    _, host = generated_files(tmp_path / "dump")
    assert "torch.addmm(" in host and "KernelLauncher" not in host, host


def test_relative_positions_are_computed_in_the_kernels_that_gather_with_them(tmp_path):
    """DeBERTa's disentangled attention: relative positions computed from aranges index
    a gather along the row (c2p) and, transposed, across rows (p2c), in each layer.
    recompute-index-values computes them in each softmax kernel from its indices: no
    kernel writes them to an int64 tensor for the others to load."""
    def attention(c2p, p2c):
        tokens = torch.arange(16)
        relative = (tokens[:, None] - tokens[None, :]).clamp(-4, 3) + 4
        index = relative.expand(2, 16, 16)
        scores = torch.gather(c2p, -1, index) + torch.gather(p2c, -1, index).transpose(-1, -2)
        # A gather of its own (p2c's scaled): the same gather would be computed once
        # (common subexpressions) and written for its transposed reader.
        return torch.softmax(scores, -1), torch.softmax(torch.gather(p2c * 2, -1, index), -1)

    c2p, p2c = torch.randn(2, 16, 8), torch.randn(2, 16, 8)
    torch.testing.assert_close(compile_triton(attention, tmp_path / "dump")(c2p, p2c),
                               attention(c2p, p2c))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "torch.int64" not in host, host
    # one kernel for both softmaxes, siblings over the rows of p2c
    # (fuse-sibling-reductions), which writes the two results and nothing else
    assert len(re.findall(r"^    launch_main_\w+\(", host, re.MULTILINE)) == 1, host
    assert host.count("empty_strided((") == 2, host


def test_a_half_linear_with_a_concatenated_bias_is_one_addmm(tmp_path):
    """BEiT's qkv projection, `F.linear(x, w, cat((q_bias, k_bias, v_bias)))`: the
    concatenation is a kernel of its own and addmm takes its result as the bias; fused
    into the bias broadcast, it had left an f32 gemm and an f32 add on the host."""
    torch.manual_seed(0)
    weight = torch.randn(48, 16).bfloat16()
    q_bias, k_bias, v_bias = torch.randn(16).bfloat16(), torch.zeros(16).bfloat16(), \
        torch.randn(16).bfloat16()

    def qkv(x, weight, q_bias, k_bias, v_bias):
        return F.linear(x, weight, torch.cat((q_bias, k_bias, v_bias)))

    inputs = (torch.randn(2, 8, 16).bfloat16(), weight, q_bias, k_bias, v_bias)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(qkv, dump_dir=tmp_path / "dump")(*inputs),
                                   qkv(*inputs))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "torch.addmm(" in host and "matmul_in_f32" not in host, host
    assert host.count("KernelLauncher(") == 1, host


def test_a_half_linear_applied_twice_is_an_addmm_each_time(tmp_path):
    """One Linear applied again (ALBERT's layers share their weights): CSE merges the
    bias broadcasts that its two gemms start from into one, which each call still
    takes as addmm's bias; it had left two f32 gemms, each added to a launched f32
    broadcast on the host."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(16, 16).bfloat16()

    def twice(x):
        return linear(torch.relu(linear(x)))

    x = torch.randn(2, 8, 16).bfloat16()
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(twice, dump_dir=tmp_path / "dump")(x),
                                   twice(x))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert host.count("torch.addmm(") == 2 and "matmul_in_f32" not in host, host
    assert host.count("KernelLauncher(") == 1, host  # the relu


def test_gemm_templates_sharing_a_bias_each_read_it_whole(tmp_path):
    """fuse-gemm-epilogues: two gemms of one Linear start from one bias broadcast (CSE
    merged theirs); each template computes it from the 1-D bias in registers, where the
    broadcast had been a kernel of its own, written to memory for both to read."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 64).half()

    def twice(x):
        return linear(torch.relu(linear(x)))

    x = torch.randn(2048, 64, dtype=torch.float16)
    with torch.no_grad():
        compiled = compile_triton(twice, tmp_path / "dump", mode=_AUTOTUNING)(x)
        torch.testing.assert_close(compiled, twice(x), atol=2e-3, rtol=2e-3)
    assert assert_compiled()["kernels"] == 2
    _, host = generated_files(tmp_path / "dump")
    templates = re.findall(r"KernelLauncher\(.*ranks=\((\d), .*gemm=", host)
    assert templates == ["1", "1"], host  # each reads the 1-D bias first


def test_a_half_linear_before_a_residual_norm_is_an_addmm_in_its_dtype(tmp_path):
    """BERT's output block: the row kernel of the residual add and the layer norm
    rounds the linear's result to bf16 where it reads each row's slice, so cuBLAS's bf16
    addmm serves it; it had been an f32 product plus a separate bias add."""
    torch.manual_seed(0)
    linear, norm = torch.nn.Linear(64, 64).bfloat16(), torch.nn.LayerNorm(64).bfloat16()
    x = torch.randn(2, 16, 64).bfloat16()

    def block(x):
        return norm(linear(x) + x)

    with torch.no_grad():
        compiled = compile_triton(block, dump_dir=tmp_path / "dump")(x)
        torch.testing.assert_close(compiled, block(x), atol=2e-2, rtol=2e-2)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "torch.addmm(" in host and "matmul_in_f32" not in host, host
    assert host.count("KernelLauncher(") == 1, host


def test_a_half_linear_of_ragged_width_is_an_addmm_of_padded_operands(tmp_path):
    """pad-contractions on a half gemm that accumulates in f32 (BERT's MLM head, whose
    N = 30522 made cuBLAS run an unaligned kernel): the weight and the bias are padded
    to N = 1008 (once per version: they are parameters), addmm multiplies them in the
    half type, and the padding is sliced away; the output is contiguous, as eager's.
    512 x 768 x 1001 is compute-bound enough to pay for it (235 multiply-adds an
    element moved)."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(768, 1001).half()
    x = torch.randn(2, 256, 768).half()
    with torch.no_grad():
        compiled = compile_triton(linear, dump_dir=tmp_path / "dump")(x)
        torch.testing.assert_close(compiled, linear(x))
    assert compiled.is_contiguous()
    assert_compiled()
    (gpu_ir,) = tmp_path.glob("dump/*/*_gpu.mlir")
    assert re.search(r"linalg.matmul .*tensor<1008x768xf16>\) outs\(%\w+ : tensor<512x1008xf32>\)",
                     gpu_ir.read_text())
    _, host = generated_files(tmp_path / "dump")
    weight, bias = re.search(r"torch.addmm\((\w+), \w+, (\w+).transpose", host).group(2, 1)
    # the parameters padded once per version, not at every call
    assert f"{weight} = padded_weight(" in host, host
    assert f"{bias} = padded_weight(" in host, host
    # the padding sliced away: a strided view of the product's buffer
    assert re.search(r"reinterpret\(buf\d+, \(512, 1001\), \(1008, 1\), 0\)", host), host
    assert "KernelLauncher" not in host, host


def test_a_half_gemm_and_its_element_wise_neighbours_are_one_tl_dot_template(tmp_path):
    """fuse-gemm-epilogues (max-autotune's pipeline): a half linear's bias (the initial
    accumulator), the gemm, the activation and a residual add are one kernel: a tl.dot
    template whose ragged M, N and K are masked, reading a transposed input through its
    strides; no library gemm. The default mode keeps the cuBLAS call."""
    def fn(x, w, b, residual):
        return F.silu(F.linear(x, w, b)) + residual
    torch.manual_seed(0)
    x = torch.randn(72, 200, dtype=torch.float16).t()  # 200 x 72, column-major
    w = torch.randn(700, 72, dtype=torch.float16) * 72 ** -0.5
    b, residual = torch.randn(700, dtype=torch.float16), torch.randn(200, 700, dtype=torch.float16)
    compiled = compile_triton(fn, tmp_path / "dump", mode=_AUTOTUNING)(x, w, b, residual)
    torch.testing.assert_close(compiled, fn(x, w, b, residual), atol=2e-3, rtol=2e-3)
    assert assert_compiled()["kernels"] == 1
    kernels, host = generated_files(tmp_path / "dump")
    assert "tl.dot(" in kernels and "(rk[None, :] < 72)" in kernels and "rm[:, None] < 200" in kernels
    assert "torch.addmm" not in host and "torch.matmul" not in host
    assert "num_stages=4" in host and "'BLOCK_M': 64" in host and "gemm=(200, 700, 72)" in host

    torch._dynamo.reset()
    compile_triton(fn, tmp_path / "default")(x, w, b, residual)
    _, host = generated_files(tmp_path / "default")
    assert "torch.addmm" in host and "gemm=" not in host


def test_f32_gemm_template_multiplies_exactly(tmp_path):
    """With f32 operands admitted (fuse-gemm-epilogues{element-types=f32}), the template
    multiplies in IEEE f32, as torch's matmul does without TF32; a tile forced by
    choose-gpu-blocks{template-tile} is launched untuned."""
    from tessel.passes.registry import lookup_pipeline
    pipeline = lookup_pipeline("gpu-max-autotune").replace(
        "fuse-gemm-epilogues{", "fuse-gemm-epilogues{element-types=f32 min-output-tiles=1 "
    ).replace("choose-gpu-blocks", "choose-gpu-blocks{template-tile=32x32x16/4/2}")
    def fn(a, b, c):
        return torch.relu(a @ b + c)
    a, b, c = torch.randn(96, 40), torch.randn(40, 80), torch.randn(96, 80)
    options = {"target": "triton", "fallback": False, "pipeline": pipeline,
               "dump_dir": str(tmp_path / "dump")}
    torch.testing.assert_close(torch.compile(fn, backend="mlir", options=options)(a, b, c),
                               fn(a, b, c))
    assert assert_compiled()["kernels"] == 1
    kernels, host = generated_files(tmp_path / "dump")
    assert 'input_precision="ieee"' in kernels
    assert "'BLOCK_M': 32, 'BLOCK_N': 32, 'BLOCK_K': 16" in host and "gemm=" not in host


def test_buffer_planning_reuses_memory_only_once_nothing_reads_it():
    """An allocation takes the memory of an earlier buffer of the same signature once no
    name that may hold that memory (the buffer, its views, outputs) is read again; a
    buffer is deleted after the record that reads it last. Planned on the host
    program's records, never on its text."""
    from tessel.targets.triton.host_records import (
        Allocate,
        Bind,
        Free,
        Return,
        Reuse,
        Statement,
        freeing_buffers,
        reusing_buffers,
    )
    allocate = "torch.empty_strided((4,), (1,), dtype=torch.float32, device=device)"
    records = [Allocate("buf1", allocate), Statement(("launch(buf1)",), ("buf1",)),
               Bind("buf2", "buf1[0:2]", ("buf1",), fresh=False),
               Allocate("buf3", allocate),         # buf1 is still read, through buf2
               Statement(("launch(buf2, buf3)",), ("buf2", "buf3")),
               Allocate("buf4", allocate),         # buf1's memory is free now
               Statement(("launch(buf3, buf4)",), ("buf3", "buf4")),
               Bind("out0", "buf3", ("buf3",), fresh=False, output=True),
               Allocate("buf5", allocate),         # buf3 is an output: never free
               Statement(("launch(buf4, buf5)",), ("buf4", "buf5")),
               Return("(out0, buf5, )", ("out0", "buf5"))]
    planned = reusing_buffers(records)
    assert planned[3] == records[3] and planned[8] == records[8]
    assert planned[5] == Reuse("buf4", "buf1")
    freed = freeing_buffers(planned)
    assert freed[freed.index(planned[4]) + 1] == Free(("buf2",))
    assert Free(("buf3",)) in freed and freed[-1] == records[-1]


def test_a_chain_of_same_shaped_intermediates_reuses_their_buffers(tmp_path):
    def fn(x, w):
        # The gemms' results read transposed: their readers cannot write over them.
        return (torch.relu((torch.sin(x) @ w).t()) @ w).t().tanh()
    x, w = torch.randn(32, 32), torch.randn(32, 32)
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w), fn(x, w))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "# reuses buf" in host, host


def _overwritten(host: str) -> list[tuple[str, str]]:
    """(buffer, the tensor whose memory it takes where strides allow) in `host`."""
    return re.findall(r"^    (buf\d+) = (buf\d+) if \2\.stride\(\) == ", host, re.M)


def test_a_pointwise_kernel_writes_its_result_over_a_dead_input(tmp_path):
    """A gemm's (or a convolution's) result, which a kernel reads at the points it writes
    and nothing reads after it, takes the kernel's result: the two are never held at
    once (Inductor's in-place buffers)."""
    def fn(x, w, b):
        return torch.relu(x @ w + b) * 2
    x, w, b = torch.randn(32, 48), torch.randn(48, 64), torch.randn(64)
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w, b), fn(x, w, b))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    (taken,) = _overwritten(host)
    assert f"{taken[1]} = torch.mm(" in host, host


def test_a_half_convolution_s_bias_and_activation_write_over_its_result(tmp_path):
    """aten returns a half convolution's result in half (the IR accumulates in f32):
    the kernel that adds its bias and applies the ReLU writes over it all the same."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).bfloat16().eval()
    x = torch.randn(2, 3, 10, 10).bfloat16()
    with torch.no_grad():
        # the bias added in f32 and rounded once, where eager's convolution rounds twice
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(x), model(x),
                                   atol=1e-2, rtol=2e-2)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    (taken,) = _overwritten(host)
    assert f"{taken[1]} = torch.convolution(" in host, host


@pytest.mark.parametrize("fn", [
    lambda x, w: (torch.relu(x @ w), x @ w),        # the gemm's result is returned
    lambda x, w: torch.relu(x @ w).t() + (x @ w),    # read again, transposed
    lambda x, w: torch.relu(x) + w,                  # a graph input is never written
], ids=["returned", "read-after", "graph-input"])
def test_negative_inputs_read_after_the_kernel_are_not_written_over(fn, tmp_path):
    x, w = torch.randn(32, 32), torch.randn(32, 32)
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w), fn(x, w))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert not _overwritten(host), host


@pytest.mark.parametrize("fn, x", [
    (lambda x: torch.cumsum(x.exp(), -1) * 2, torch.randn(6, 2500)),            # 3 chunks
    (lambda x: torch.cumsum(x, 1), torch.randn(3, 40, 5)),                      # middle dim
    (lambda x: torch.cumprod(1 + x / 10, 0), torch.randn(30, 7)),
    (lambda x: torch.cumsum((x > 0).long(), -1) - 1, torch.randn(4, 33)),        # position ids
], ids=["long-rows", "middle-dim", "cumprod", "int64"])
def test_scans_run_one_program_per_row_in_chunks(fn, x, tmp_path):
    """tm_tensor.scan (cumsum, cumprod) is a kernel: each program scans one row in
    chunks with tl.cumsum / tl.cumprod, carrying the total of the chunks before."""
    # A chunked scan adds in another order than torch's sequential one: over 2500 f32
    # terms the relative error reaches 1.1e-6 (eight seeds), at the edge of
    # assert_close's default rtol (1.3e-6).
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x), fn(x),
                               rtol=1e-5, atol=1e-5)
    assert_compiled()
    kernels, _ = generated_files(tmp_path / "dump")
    assert "tl.cumsum(" in kernels or "tl.cumprod(" in kernels
    assert "carry = " in kernels


def test_scan_kernel_compiles_to_ptx_for_sm90(tmp_path):
    compile_triton(lambda x: torch.cumsum(x, -1), tmp_path / "dump")(torch.randn(16, 3000))
    kernels_file = next(tmp_path.glob("dump/*/*_triton_kernels.py"))
    (name,) = [re.search(r"def (\w+)\(", function).group(1)
               for function in kernels_file.read_text().split("@triton.jit") if "tl.cumsum(" in function]
    assert "st.global" in _ptx_for_sm90(kernels_file, name, "*fp32", {"BLOCK": 1024})


def test_a_clone_of_an_input_is_returned_as_new_memory():
    """torch-mlir folds a clone of an input into the input itself: the host program
    copies it, as it does a result returned twice. An optimizer's first step returns
    `grad.clone()` as the momentum buffer, which must not be the gradient."""
    def fn(a, b):
        return a.clone(), b + 1, a.clone()
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    outputs = torch.compile(fn, backend="mlir", options={"target": "triton"})(a, b)
    for output, expected in zip(outputs, fn(a, b)):
        torch.testing.assert_close(output, expected)
    storages = [t.untyped_storage().data_ptr() for t in (a, *outputs)]
    assert len(set(storages)) == len(storages), "an output shares an input's or another's memory"
    assert_compiled()


@pytest.mark.parametrize("kernel,stride,padding", [(7, 2, 3), (1, 2, 0), (3, 2, 1)])
def test_a_strided_convolution_s_weight_gradient_is_one_grouped_library_convolution(
        kernel, stride, padding, tmp_path):
    """torch-mlir computes it as a grouped convolution (the batch as groups, the stride
    as dilation): the host program calls aten's, not a loop kernel."""
    weight = torch.randn(8, 3, kernel, kernel, requires_grad=True)
    x = torch.randn(2, 3, 17, 17)

    def fn(x, weight):
        return F.conv2d(x, weight, stride=stride, padding=padding).square().sum()
    compile_triton(fn, dump_dir=tmp_path)(x, weight).backward()
    compiled_grad, weight.grad = weight.grad, None
    fn(x, weight).backward()
    torch.testing.assert_close(compiled_grad, weight.grad, rtol=1e-4, atol=1e-4)
    backward = next(tmp_path.glob("*backward*/*host_program.py")).read_text()
    assert re.search(r"torch\.convolution\(.*, False, \(0, 0\), 2\)", backward), backward
    assert_compiled(min_graphs=2)


def test_views_of_a_convolution_s_result_are_strided_views(tmp_path):
    """aten lays a convolution's result out channels-last where the host gives it a
    channels-last weight: the host checks that layout once after the call, and takes
    the views of the result (a training batch norm's shift, the groups and crop of a
    strided convolution's weight gradient) as strided views under that check instead
    of slicing and reshaping at every call (53 slices and 138 reshapes a step of
    resnet50's default-mode train step on the H200). The gradients are eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
                                torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3, padding=1))
    _gradients_match_eager(model, torch.randn(2, 3, 9, 9), tmp_path)
    assert_compiled(min_graphs=2)
    for host in tmp_path.glob("*/*host_program.py"):
        text = host.read_text()
        lines = text.splitlines()
        for result in re.findall(r"^    (buf\d+) = torch\.convolution\(", text, re.M):
            assert f"    {result}_laid_out = {result}.stride() == (" in text, text
        # no view of a result is taken unchecked (a slice, a reshape of a bound tensor)
        unchecked = [line for line in lines if re.match(r"    buf\d+ = buf\d+(\[|\.reshape\()", line)]
        assert not unchecked, unchecked
    backward = next(tmp_path.glob("*backward*/*host_program.py")).read_text()
    assert re.search(r"reinterpret\(buf\d+, .*\) if buf\d+_laid_out else", backward), backward


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_depthwise_convolution_is_one_cudnn_call_with_its_padding(dtype, tmp_path):
    """A convolution with as many groups as channels is aten's (cuDNN's, channels-last)
    with groups = C, its zero padding folded in: no pad copy, no window kernel (a
    ConvNeXt block's 7x7 depthwise kernel and its padded copy had taken most of the
    block's GPU time). Its bias is added by the kernel that reads its result
    (convolution-bias-after): neither aten's add after cuDNN's call nor an f32
    broadcast materialized by a kernel and added to the product by the host."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1, groups=8),
                                torch.nn.BatchNorm2d(8), torch.nn.ReLU6(),
                                torch.nn.Conv2d(8, 16, 1)).eval().to(dtype)
    x = torch.randn(2, 8, 8, 8, dtype=dtype)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(x), model(x),
                                   atol=2e-2 if dtype == torch.bfloat16 else None,
                                   rtol=2e-2 if dtype == torch.bfloat16 else None)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert re.search(r"torch\.convolution\(\w+, channels_last_weight\(\w+\.reshape\(8, 1, 3, 3\), "
                     r"capturing\), None, \(1, 1\), \(1, 1\), \(1, 1\), False, \(0, 0\), 8\)",
                     host), host
    assert "functional.pad" not in host and not re.search(r"\+ torch\.convolution", host)
    # the depthwise bias, batch norm and ReLU6 in one kernel; the 1x1's bias in another
    assert len(re.findall(r"^    launch_main_kernel_\d+\(", host, re.M)) == 2, host


@pytest.mark.parametrize("fn", [
    lambda x, w: F.conv2d(x, w, padding=1, groups=8) * 2 + x,
    lambda x, w: F.layer_norm(F.conv2d(x, w, padding=1, groups=8).permute(0, 2, 3, 1),
                              (8,)).permute(0, 3, 1, 2) + x,
], ids=["residual", "channels_first_layer_norm"])
def test_generics_around_a_depthwise_convolution_walk_its_result(fn):
    """The depthwise convolution loops over N, H, W, C; the generics fused with it loop
    over its NCHW result. Each kernel's row walked its generics' loops, and refused to
    mix the two orders ("iteration space [2, 8, 16, 16] differs from the kernel's
    [2, 16, 16, 8]": MobileNet, EfficientNet, ConvNeXt, Segformer ran those eagerly)."""
    x, w = torch.randn(2, 8, 6, 6), torch.randn(8, 1, 3, 3)
    torch.testing.assert_close(compile_triton(fn)(x, w), fn(x, w), rtol=1e-4, atol=1e-4)
    assert_compiled()


@pytest.mark.parametrize("fn", [
    torch.nn.functional.gelu,
    lambda x: torch.nn.functional.layer_norm(x * 3 + 1, (32,)),
    lambda x: torch.softmax(x * 0.5, -1) + x.sum(-1, keepdim=True),
], ids=["gelu", "layer_norm", "softmax_sum"])
def test_bf16_kernels_compute_in_f32_and_round_where_they_store(fn):
    """f16/bf16 values are held in f32 and rounded when stored, as Inductor's kernels
    and eager's opmath compute: rounding after every op lost precision in fused chains,
    and Triton's interpreter computed bf16 arithmetic on raw bits (a bf16 GELU came out
    up to 1.7e38 off)."""
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    expected = fn(x.double())
    actual = compile_triton(fn)(x)
    assert actual.dtype == torch.bfloat16
    # A few bf16 ulps: the interpreter truncates f32 to bf16 where a GPU rounds.
    torch.testing.assert_close(actual.double(), expected, rtol=2e-2, atol=1e-2)
    assert_compiled()


def test_embeddings_added_together_are_one_kernel_in_half_precision(tmp_path):
    """BERT's embeddings: two lookups and their sum. Fusion left each lookup's own
    kernel beside the fused one (their index asserts kept them alive), so each gather
    ran twice; and the gathered bf16 values were added in bf16, which Triton's
    interpreter computes on raw bits (a tiny bf16 BERT came out uncorrelated)."""
    words, positions = torch.randn(100, 32, dtype=torch.bfloat16), torch.randn(64, 32, dtype=torch.bfloat16)

    def fn(ids):
        return F.embedding(ids, words) + F.embedding(torch.arange(16)[None], positions)
    ids = torch.randint(0, 100, (2, 16))
    actual = compile_triton(fn, tmp_path / "dump")(ids)
    torch.testing.assert_close(actual, fn(ids), rtol=8e-3, atol=1e-2)
    _, host = generated_files(tmp_path / "dump")
    assert len(re.findall(r"launch_main_kernel_\d+\(direct", host)) == 1, host


def test_padded_weights_pad_once_per_weight_version():
    from tessel.targets.triton.host_program import padded_weights
    pad, weight = padded_weights(), torch.randn(1001, 64)
    first = pad(weight, (0, 0, 0, 7), False)
    assert first.shape == (1008, 64) and not first[1001:].any()
    assert pad(weight, (0, 0, 0, 7), False) is first  # no copy per call
    assert pad(weight, (0, 7), False).shape == (1001, 71)  # another padding, its own
    with torch.no_grad():
        weight.mul_(2)
    torch.testing.assert_close(pad(weight, (0, 0, 0, 7), False)[:1001], weight)
    assert pad(weight, (0, 0, 0, 7), True) is not pad(weight, (0, 0, 0, 7), True)
    del weight, first
    assert len(pad.converted) == 0


def test_channels_last_weights_go_with_their_weights():
    """Converted weights were kept by address: never freed, and a new weight at a freed
    one's address with the same version and shape would have been given its copy."""
    from tessel.targets.triton.host_program import channels_last_weights
    weights = channels_last_weights()
    weight = torch.randn(16, 8, 3, 3)
    converted = weights(weight, False)
    assert converted.is_contiguous(memory_format=torch.channels_last)
    assert weights(weight, False) is converted
    weight.add_(1)  # a new version: converted again
    torch.testing.assert_close(weights(weight, False), weight)
    del weight, converted
    assert len(weights.converted) == 0


def test_index_arithmetic_in_a_kernel_body():
    """An arange reshaped computes its values from the loop indices through
    affine.apply ("affine.apply: no Triton equivalent in tessel yet")."""
    fn = lambda x: (x.sin(), torch.arange(12.0).reshape(4, 3) * 2 + x)  # noqa: E731
    x = torch.randn(4, 3)
    for actual, expected in zip(compile_triton(fn)(x), fn(x)):
        torch.testing.assert_close(actual, expected)
    assert_compiled()


def test_log1p_and_expm1_keep_the_low_bits_of_small_arguments():
    x = torch.tensor([0.0, 1e-10, -1e-7, 1e-3, 0.5, -0.5, -1.0, 3.0, 88.0, float("inf"),
                      float("nan"), -2.0, 1e30])
    for fn in (torch.log1p, torch.expm1):
        torch._dynamo.reset()
        torch.testing.assert_close(compile_triton(fn)(x), fn(x), equal_nan=True)
        assert_compiled()


class _Pooler(torch.nn.Module):
    """A layer norm over channels, then the mean over tokens (ViT's and BEiT's pooling)
    or the pooling of the tokens transposed (Swin's), then a layer norm again."""

    def __init__(self, transposed):
        super().__init__()
        self.norm, self.head_norm = torch.nn.LayerNorm(32), torch.nn.LayerNorm(32)
        self.transposed = transposed

    def forward(self, x):
        x = self.norm(x)
        if self.transposed:
            x = F.adaptive_avg_pool1d(x.transpose(1, 2), 1).flatten(1)
        else:
            x = x.mean(1)
        return self.head_norm(x)


@pytest.mark.parametrize("transposed", [False, True])
def test_a_mean_over_tokens_of_a_layer_norm_compiles_whole(transposed):
    model, x = _Pooler(transposed).eval(), torch.randn(2, 96, 32)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model)(x), model(x))
    assert_compiled()



class _PatchesThenHeads(torch.nn.Module):
    """A convolution's patches, then a 4-D tensor that is no image (attention's heads)."""

    def __init__(self):
        super().__init__()
        self.patches = torch.nn.Conv2d(3, 16, 4, stride=4)
        self.query = torch.nn.Linear(16, 16)

    def forward(self, x):
        tokens = self.query(self.patches(x).flatten(2).transpose(1, 2))      # [2, 16, 16]
        heads = tokens.reshape(2, 16, 2, 8).transpose(1, 2).sigmoid()       # [2, 2, 16, 8]
        return heads.reshape(2, 2, 128) + 1


class _Convolutions1d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = torch.nn.Conv1d(8, 16, 3, padding=1), torch.nn.Conv1d(16, 8, 3)

    def forward(self, x):
        return self.second(F.gelu(self.first(x)))


def test_only_images_are_channels_last(tmp_path):
    """A convolution's image and result and what kernels compute from them point for
    point are channels-last, with kernels walking them channels fastest; a 4-D tensor
    that is no image stays row-major, so that reshaping it is a view."""
    _, host = checked_against_eager(_PatchesThenHeads().eval(), torch.randn(2, 3, 16, 16),
                                    tmp_path / "images")
    # the patches' bias added by the kernel that writes them as tokens (NHWC order)
    assert "(2, 4, 4, 16,), (256, 64, 16, 1,)" in host
    assert "(2, 2, 16, 8,), (256, 128, 8, 1,)" in host       # the heads: row-major
    kernels, host = checked_against_eager(_Convolutions1d().eval(), torch.randn(2, 8, 32),
                                          tmp_path / "sequences")
    assert "(2, 16, 32,), (512, 1, 16,)" in host             # gelu(conv1d): NLC
    assert "in0_stride1*(r % 16)" in kernels                 # channels fastest


class _UpsampledTokensConcatenated(torch.nn.Module):
    """SegFormer's decode head: tokens of two sizes projected, made images, upsampled to
    one size and concatenated along the channels for a 1x1 convolution."""

    def __init__(self):
        super().__init__()
        self.small, self.large = torch.nn.Linear(16, 8), torch.nn.Linear(16, 8)
        self.fuse = torch.nn.Conv2d(16, 4, 1)

    def forward(self, small, large):
        maps = [projection(tokens).transpose(1, 2).reshape(2, 8, size, size)
                for projection, tokens, size in ((self.small, small, 4), (self.large, large, 8))]
        upsampled = [F.interpolate(m, size=(8, 8), mode="bilinear", align_corners=False)
                     for m in maps]
        return self.fuse(torch.cat(upsampled, dim=1))


def test_maps_concatenated_for_a_convolution_are_written_channels_last(tmp_path):
    """The upsampled maps are computed only for the concatenation that the convolution
    reads channels-last: they are written channels-last too, each walked channels
    fastest, so that the tokens they read are read along memory."""
    model = _UpsampledTokensConcatenated().eval()
    inputs = (torch.randn(2, 16, 16), torch.randn(2, 64, 16))
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(*inputs),
                                   model(*inputs))
    assert_compiled()
    kernels, host = generated_files(tmp_path / "dump")
    assert "(2, 8, 8, 8,), (512, 1, 64, 8,)" in host
    assert "(2, 8, 8, 8,), (512, 64, 8, 1,)" not in host
    assert "out0_stride1*(r % 8)" in kernels


def test_a_result_laid_out_as_eagers_is_returned_without_copies(tmp_path):
    """A channels-last image in, a channels-last result out, as eager's: the kernel
    writing the result writes it channels-last, and the host returns that buffer (it
    had copied it to a contiguous one, then back into eager's layout: SegFormer's
    logits, two copies a call)."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 3, 10, 10).to(memory_format=torch.channels_last)
    with torch.no_grad():
        result = compile_triton(model, tmp_path / "dump")(x)
        torch.testing.assert_close(result, model(x))
        assert result.stride() == model(x).stride()
    _, host = generated_files(tmp_path / "dump")
    assert ".contiguous()" not in host and ".copy_(" not in host


def test_a_reshape_to_zero_dims_passes_its_shape_as_one_tuple():
    """`x.reshape()` is a TypeError: a 0-d shape is `x.reshape(())` (ELECTRA's
    binary cross-entropy loss of a training step reshapes to 0-d)."""
    fn = lambda x: (x * 2).reshape(()) + 1  # noqa: E731
    x = torch.randn(1, 1)
    torch.testing.assert_close(compile_triton(fn)(x), fn(x))
    assert_compiled()


def test_a_symbolic_size_read_by_a_kernel_is_a_size_parameter():
    """Under dynamic=True, `x * x.shape[0]` multiplies by an integer of main's (a symbolic
    size): the kernel takes it as a size parameter, one kernel for every size."""
    def fn(x):
        return x * x.shape[0]
    compiled = torch.compile(fn, backend="mlir", dynamic=True,
                             options={"target": "triton", "fallback": False})
    for rows in (4, 6):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(compiled(x), fn(x))
    assert assert_compiled()["graphs_compiled"] == 1


class _StandardizedConvolution(torch.nn.Conv2d):
    """timm's ScaledStdConv2d (nfnet): the weight standardized per output channel at
    every call, times a gain."""

    def __init__(self, channels, out_channels, kernel_size, **options):
        super().__init__(channels, out_channels, kernel_size, **options)
        self.gain = torch.nn.Parameter(torch.rand(out_channels, 1, 1, 1) + 0.5)

    def forward(self, x):
        weight = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                              weight=self.gain.view(-1), training=True, momentum=0.0,
                              eps=1e-5).reshape_as(self.weight)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, 1, self.groups)


class _NormalizerFreeBlock(torch.nn.Module):
    """nfnet's bottleneck: standardized 3x3, grouped 3x3 and 1x1 convolutions, then a
    squeeze-excite gate."""

    def __init__(self):
        super().__init__()
        self.first = _StandardizedConvolution(8, 16, 3, padding=1)
        self.grouped = _StandardizedConvolution(16, 16, 3, padding=1, groups=2)
        self.last = _StandardizedConvolution(16, 8, 1)
        self.squeeze, self.excite = torch.nn.Conv2d(8, 4, 1), torch.nn.Conv2d(4, 8, 1)

    def forward(self, x):
        y = self.last(F.gelu(self.grouped(F.gelu(self.first(x)))))
        gate = torch.sigmoid(self.excite(F.relu(self.squeeze(y.mean((2, 3), keepdim=True)))))
        return y * gate + x


def _normalizer_free_host(dump_dir):
    """The block's host program, its result checked against eager's (the standardized
    weights' f32 statistics differ from eager's in the last bits, the main branch's
    too, hence the tolerance)."""
    model, x = _NormalizerFreeBlock().eval(), torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, dump_dir)(x), model(x),
                                   rtol=1e-3, atol=1e-3)
    assert_compiled()
    return generated_files(dump_dir)[1]


def test_a_grouped_convolution_reads_and_writes_channels_last(tmp_path):
    """The grouped convolution's image [N, G, C, H, W] is laid out [N, H, W, G, C], so
    that aten's [N, G * C, H, W] is a channels-last view of it, its padding goes into
    the convolution, and what kernels compute from its result is channels-last again:
    cuDNN transposes none of them (it had transposed image, weight and result)."""
    host = _normalizer_free_host(tmp_path / "dump")
    assert "torch.nn.functional.pad" not in host
    assert "(2, 2, 8, 12, 12,), (2304, 8, 1, 192, 16,)" in host
    assert re.search(r"torch\.convolution\(reinterpret\(\w+, \(2, 16, 12, 12\), "
                     r"\(2304, 1, 192, 16\), 0\), .*, \(1, 1\), \(1, 1\), \(1, 1\), False, "
                     r"\(0, 0\), 2\)", host)


def test_weights_a_kernel_standardizes_are_written_channels_last(tmp_path):
    """Each standardized weight's rows are taken in (KH, KW, I) order: the kernel reads
    the parameter converted channels-last once per version and writes the weight
    channels-last, which the convolution takes as it is (it had been converted at
    every call)."""
    host = _normalizer_free_host(tmp_path / "dump")
    assert re.search(r"reinterpret\(\w+, \(16, 8, 3, 3\), \(72, 1, 24, 8\), 0\)", host)
    assert host.count("reinterpret(channels_last_weight(arg") == 3
    assert not re.search(r"channels_last_weight\(buf", host)


def test_a_squeeze_excite_block_is_channels_last(tmp_path):
    """The row kernel that writes the squeeze-excite block's mean also writes the f32
    image it averaged (a loop nest of two result types): channels-last, as the kernel
    reading it walks it (it had been written row-major). The mean, [N, C, 1, 1], has
    the strides by which torch tells it channels-last, so that cuDNN runs its 1x1
    convolutions NHWC without transposing them (row-major ones are the same memory,
    but torch then picks NCHW)."""
    host = _normalizer_free_host(tmp_path / "dump")
    assert "(2, 8, 12, 12,), (1152, 1, 96, 8,), torch.float32)" in host
    assert "(1152, 144, 12, 1,)" not in host
    assert re.search(r"reinterpret\(\w+, \(2, 8, 1, 1\), \(8, 1, 8, 8\), 0\)", host)
    assert re.search(r"reinterpret\(\w+, \(2, 4, 1, 1\), \(4, 1, 4, 4\), 0\)", host)


class _GroupNormOfTokens(torch.nn.Module):
    """A 1x1 convolution's result centered as [N, C, L] tokens, then normalized over all
    of [N, 1, C, H, W] and used as an image again: the views GroupNorm(1, C) makes of a
    channels-last image (poolformer's norm before its pooling)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 1)

    def forward(self, x):
        tokens = self.conv(x).reshape(2, 8, 36)
        tokens = tokens - tokens.mean(-1, keepdim=True)
        grouped = tokens.reshape(2, 1, 8, 6, 6)
        image = (grouped - grouped.mean((2, 3, 4), keepdim=True)).reshape(2, 8, 6, 6)
        return torch.sigmoid(image) * image.sum(1, keepdim=True)


def test_an_image_viewed_as_one_group_stays_channels_last(tmp_path):
    """[N, C, L] -> [N, 1, C, H, W] -> [N, C, H, W] keeps the image's channels (the
    last view merges the group of 1 into the batch): what kernels compute from it is
    channels-last (poolformer's normalized image had been written NCHW, then read
    across memory by its channels-last pooling)."""
    _, host = checked_against_eager(_GroupNormOfTokens().eval(), torch.randn(2, 3, 6, 6),
                                    tmp_path / "dump")
    # The image, viewed channels-last straight from the buffer the 5-D view was of: the
    # 5-D view itself, which nothing else reads, is not made.
    assert re.search(r"reinterpret\(buf\d+, \(2, 8, 6, 6\), \(288, 1, 48, 8\), 0\)", host)
    assert "(2, 1, 8, 6, 6)" not in host
    assert "(2, 8, 6, 6,), (288, 1, 48, 8,), torch.float32)" in host
    assert "(288, 36, 6, 1,)" not in host


@pytest.mark.parametrize("pool", [
    lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False) - x,
    lambda x: F.avg_pool2d(x, 3, 2, 1),
    lambda x: F.max_pool2d(x, 3, 2, 1),
], ids=["poolformer_mixer", "average_counting_the_border", "max"])
def test_a_pooling_kernel_reads_its_padded_image_through_masked_loads(pool, tmp_path):
    """The border a pooling pads its image with is read as the pad value by the
    kernel's masked loads of the image itself: the host pads nothing (it had padded
    with F.pad, a fill and a copy of the image, every call)."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 1), torch.nn.GroupNorm(1, 8))
    fn = lambda x: pool(model(x))  # noqa: E731
    kernels, host = checked_against_eager(fn, torch.randn(2, 3, 7, 7), tmp_path / "dump")
    assert "functional.pad" not in host
    assert re.search(r"tl\.load\(in\d+ \+ .*other=", kernels)


@pytest.mark.parametrize("size", [15, 14], ids=["windows-fit", "windows-past"])
def test_a_ceil_mode_pooling_reads_its_image_in_place(size, tmp_path):
    """A ceil-mode max pooling pads its image at the end, then slices it to the extent
    of its windows (torch-mlir's lowering). Where the windows end inside the image
    (SqueezeNet's pools), the slice is of the image itself; where they pass it, the
    kernel reads its taps of the padded image in place (read-slices-in-place), masked
    (-inf past the image). Either way the host pads no copy of the image: it had padded
    one with -inf every call, and held both at once."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(3, 2, ceil_mode=True))
    kernels, host = checked_against_eager(model.eval(), torch.randn(2, 3, size, size),
                                          tmp_path / "dump")
    assert "functional.pad" not in host, host
    assert size == 15 or "other=float('-inf'))" in kernels, kernels


def test_a_native_op_given_none_for_a_tensor_is_split_around_not_called():
    """ATen's fused attention backwards take `Tensor attn_bias` and are given None when
    there is no bias; torch-mlir's importer cannot import None as a tensor operand, so
    the host program does not call such an op (importing it failed, and the whole graph
    ran split as a fallback, on the H200's deit and bert train rows): it is split around,
    as a native op. Given a bias, it is called."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from tessel.frontend import native_ops
    with FakeTensorMode():
        image, statistics = torch.empty(2, 4, 64, 32), torch.empty(2, 4, 64)
        seed = torch.empty((), dtype=torch.int64)
    graph = torch.fx.Graph()
    values = {"grad": image, "q": image, "k": image, "v": image, "bias": image, "out": image,
              "lse": statistics, "seed": seed, "offset": seed}
    nodes = {}
    for name, value in values.items():
        nodes[name] = graph.placeholder(name)
        nodes[name].meta["val"] = value
    arguments = [nodes[name] for name in ("grad", "q", "k", "v")]
    rest = [nodes[name] for name in ("out", "lse", "seed", "offset")] + [0.0, [True] * 3 + [False]]
    backward = graph.call_function(
        torch.ops.aten._scaled_dot_product_efficient_attention_backward.default,
        (*arguments, None, *rest))
    backward.meta["val"] = (image, image, image, None)
    assert native_ops.native_reason(backward) is not None
    assert not native_ops.called_in_place(backward)
    backward.args = (*arguments, nodes["bias"], *rest)
    assert native_ops.called_in_place(backward)


@pytest.mark.parametrize("on_cpu", [True, False], ids=["cpu_scalar", "on_the_device"])
def test_a_zero_dim_input_is_moved_to_the_device_only_when_traced_on_the_cpu(
        on_cpu, tmp_path, monkeypatch):
    """A 0-d CPU tensor is a scalar that PyTorch mixes with tensors of any device: the
    host program moves it to the graph's device. One traced on the device (an Adam
    step's counts on a GPU: one per parameter) is not moved: a call per input per step.
    (Here every tensor is a CPU one; the traced device is what the host reads.)"""
    from tessel.frontend import prepare_graph
    checked = prepare_graph._check_input
    monkeypatch.setattr(prepare_graph, "_check_input", lambda node, value, devices: (
        lambda found: dataclasses.replace(found, on_cpu=on_cpu)
        if getattr(found, "rank", None) == 0 else found)(checked(node, value, devices)))
    x, scale = torch.randn(4, 8), torch.tensor(3.0)
    torch.testing.assert_close(compile_triton(lambda x, s: x * s, tmp_path / "dump")(x, scale),
                               x * scale)
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert (".to(device)" in host) == on_cpu, host


def test_a_native_result_laid_out_otherwise_than_traced_is_laid_out_as_traced(
        tmp_path, monkeypatch):
    """The host predicts the strides of a native call's result from its fake tensor, and
    the kernels that read it take those strides as constants. Where aten returns it laid
    out otherwise (here cuDNN's input gradient made NCHW after the first step), the host
    lays it out as predicted after the call; it was read with the predicted strides, and
    the weights' gradients came out wrong."""
    _native_convolution_backward(monkeypatch)
    original = torch.ops.aten.convolution_backward.default

    def input_gradient_nchw(*args):
        results = list(original(*args))
        if results[0] is not None:
            results[0] = results[0].contiguous()
        return tuple(results)

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(4, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(4)).to(memory_format=torch.channels_last)
    reference = copy.deepcopy(model)
    compiled = compile_triton(model, tmp_path / "dump")
    x = torch.randn(2, 4, 8, 8).to(memory_format=torch.channels_last)
    for step in range(2):
        if step:
            monkeypatch.setattr(torch.ops.aten.convolution_backward, "default",
                                input_gradient_nchw)
        for network in (model, reference):
            network.zero_grad()
        compiled(x).square().sum().backward()
        reference(x).square().sum().backward()
        for ours, eager in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(ours.grad, eager.grad, atol=1e-4, rtol=1e-4)
    assert_compiled()
    assert "as_laid_out(" in _backward_host(tmp_path / "dump")

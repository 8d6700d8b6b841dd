"""The Triton host program's views and gemm calls (targets/triton/strided_views.py,
host_program.py): a view of a tensor whose layout the host knows (its buffers, a
gemm's result, an input by its traced strides) is one strided view (`reinterpret`), a
gemm is torch.mm, addmm or bmm, and where the layout is unknown, or not the traced
one, the view ops run as before. Kernels run in Triton's
interpreter on CPU tensors."""

import os
import re

import pytest
import torch
from conftest import assert_compiled
from test_triton_target import compile_triton, generated_files

from tessel.targets.triton import target


@pytest.fixture(autouse=True)
def kernel_cache(monkeypatch, tmp_path):
    assert os.environ["TRITON_INTERPRET"] == "1"  # set by conftest, before Triton loads
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))


class _Attention(torch.nn.Module):
    """Eager attention as transformers spells it: projections, heads split and
    transposed, a 4-D matmul of queries and transposed keys, softmax, a 4-D matmul of
    the weights and values, heads merged."""

    def __init__(self, width: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(3))
        self.out = torch.nn.Linear(width, width)

    def forward(self, x):
        batch, tokens, width = x.shape
        q, k, v = (projection(x).view(batch, tokens, self.heads, -1).transpose(1, 2)
                   for projection in self.qkv)
        weights = torch.softmax(q @ k.transpose(-2, -1) / 4, -1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, tokens, width))


def test_views_of_host_buffers_are_strided_views_and_gemms_are_mm_and_bmm(tmp_path):
    torch.manual_seed(0)
    model, x = _Attention().eval(), torch.randn(2, 8, 32)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(x), model(x))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "torch.matmul(" not in host, host
    # the weights, read transposed, by the strides they were traced with (checked once)
    weights = re.findall(r"\(reinterpret\((arg\d+_1), \(32, 32\), \(1, 32\), 0\) "
                         r"if \1_as_traced else \1.transpose\(-2, -1\)\)", host)
    assert weights and all(f"{weight}_as_traced = {weight}.stride() == (32, 1)" in host
                           for weight in weights), host
    gemms = re.findall(r"^    (buf\d+) = torch\.(mm|bmm)\(", host, re.MULTILINE)
    assert [kind for _, kind in gemms].count("bmm") == 2 and len(gemms) == 6, host
    # their results viewed as laid out contiguously
    viewed = [result for result, _ in gemms if re.search(rf"= reinterpret\({result}, ", host)]
    assert len(viewed) == 5 and not re.search(r"= buf\d+\.reshape\(", host), host


def _residual_after_seq_first_projection(x, weight):
    """nn.MultiheadAttention(batch_first=True)'s residual: the projection computed
    (tokens, batch, dims), transposed back without a copy, added first, so that eager's
    sum is laid out (tokens, batch, dims) in memory too."""
    batch, tokens, width = x.shape
    projected = (x.transpose(0, 1).reshape(-1, width) @ weight).view(tokens, batch, width)
    return projected.transpose(0, 1) + x


def test_a_result_eager_returns_strided_is_written_so_by_its_kernel(tmp_path):
    """No kernel writes it row-major for the host to copy into eager's layout (a ViT
    split around its attentions copied its residual stream once a layer)."""
    x, weight = torch.randn(2, 8, 32), torch.randn(32, 32)
    expected = _residual_after_seq_first_projection(x, weight)
    assert expected.stride() == (32, 64, 1)
    actual = compile_triton(_residual_after_seq_first_projection, tmp_path / "dump")(x, weight)
    torch.testing.assert_close(actual, expected)
    assert actual.stride() == expected.stride()
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert "copy_(" not in host, host
    assert re.search(r"= empty_strided\(\(2, 8, 32,\), \(32, 64, 1,\), torch.float32\)", host), host


@pytest.mark.parametrize("bias", [False, True], ids=["cudnn-s-layout", "copying-view"])
def test_views_of_unknown_layout_or_that_copy_stay_reshapes(bias, tmp_path):
    """cuDNN picks the layout of a convolution's result, which the host cannot know;
    a bias kernel's channels-last result is known, but flattening it copies."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=bias), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(model, tmp_path / "dump")(x), model(x))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    (convolved,) = re.findall(r"(buf\d+) = torch\.convolution\(", host)
    (flattened,) = re.findall(r"= (buf\d+)\.reshape\(\(2, 144,\)\)", host)
    if bias:
        # The bias kernel writes over the convolution's result where cuDNN laid it out
        # so (in_place_writes.py), else into a new buffer.
        assert re.search(rf"{flattened} = (buf\d+ if buf\d+\.stride\(\) == \(144, 1, 24, 4,\) "
                         rf"else )?empty_strided\(\(2, 4, 6, 6,\), \(144, 1, 24, 4,\)", host), host
    else:
        assert flattened == convolved, host
    assert "reinterpret(buf" not in host, host


def test_an_input_laid_out_otherwise_than_traced_is_viewed_by_its_view_op(monkeypatch,
                                                                          tmp_path):
    """A graph split around a native op gets that op's results, whose strides are the
    fake tensors' prediction: the host program checks an input's strides before it
    takes the strided view the traced ones give, and takes the view op otherwise."""
    hosts = []
    building = target._building_kernels

    def recording(host, *args, **kwargs):
        hosts.append(host)
        return building(host, *args, **kwargs)
    monkeypatch.setattr(target, "_building_kernels", recording)

    def fn(x, w):
        return torch.relu(x @ w.t())
    x, w = torch.randn(8, 16), torch.randn(12, 16)
    torch.testing.assert_close(compile_triton(fn, tmp_path / "dump")(x, w), fn(x, w))
    _, source = generated_files(tmp_path / "dump")
    (weight,) = re.findall(r"\(reinterpret\((arg\d)_1, \(16, 12\), \(1, 16\), 0\) "
                           r"if \1_1_as_traced else \1_1.transpose\(-2, -1\)\)", source)
    assert f"{weight}_1_as_traced = {weight}_1.stride() == (16, 1)" in source
    column_major = w.t().contiguous().t()
    assert column_major.stride() != w.stride()
    (host,) = hosts
    args = (column_major, x) if weight == "arg0" else (x, column_major)
    (result,) = host(*args)
    torch.testing.assert_close(result, fn(x, w))


def _heads_merged(attention, weight):
    batch, heads, tokens, dims = attention.shape
    return (attention.transpose(1, 2).reshape(batch, tokens, heads * dims) @ weight).relu()


def test_an_input_the_graph_permutes_into_its_memory_order_is_a_view(tmp_path):
    """Attention's output as fused attention lays it out, (batch, tokens, heads, dims)
    in memory, transposed to that and merged before the projection: the host permutes
    it into memory order, the transposes cancel, and the gemm reads a view of it; no
    kernel copies it first."""
    torch.manual_seed(0)
    attention = torch.randn(2, 16, 4, 8).transpose(1, 2)
    weight = torch.randn(32, 16)
    compiled = compile_triton(_heads_merged, tmp_path / "dump")
    torch.testing.assert_close(compiled(attention, weight), _heads_merged(attention, weight))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    first_kernel = host.index("launch_main_kernel", host.index("def host"))
    assert ".permute([0, 2, 1, 3])" in host and host.index("torch.mm(") < first_kernel, host
    # Laid out otherwise than traced, it is still read right.
    contiguous = attention.contiguous()
    torch.testing.assert_close(compiled(contiguous, weight), _heads_merged(contiguous, weight))


def test_negative_a_channels_last_input_of_a_convolution_is_passed_as_it_is(tmp_path):
    """A permuted input that the graph does not permute into memory order (a
    convolution's channels-last image) reaches cuDNN as the caller passed it."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(8, 16, 3, padding=1).eval()
    image = torch.randn(2, 8, 16, 16).to(memory_format=torch.channels_last)
    with torch.no_grad():
        torch.testing.assert_close(compile_triton(conv, tmp_path / "dump")(image), conv(image))
    _, host = generated_files(tmp_path / "dump")
    assert ".permute(" not in host and "torch.convolution(arg" in host, host


def _tokens_to_image(tokens, norm_weight, conv_weight):
    """SegFormer's spatial reduction: normalized [B, N, C] tokens as the [B, C, H, W]
    image of a strided convolution, whose result is tokens again."""
    image = torch.nn.functional.layer_norm(tokens, (8,), norm_weight)
    image = image.view(2, 6, 6, 8).permute(0, 3, 1, 2)
    return torch.nn.functional.conv2d(image, conv_weight, stride=2).flatten(2).transpose(1, 2)


def test_a_transpose_to_the_layout_its_buffer_would_have_is_a_view_not_a_copy(tmp_path):
    """Row-major [B, H, W, C] tokens permuted to [B, C, H, W] are a channels-last image:
    the memory a copy kernel would write, so the host takes the view instead."""
    torch.manual_seed(0)
    arguments = torch.randn(2, 36, 8), torch.randn(8), torch.randn(8, 8, 2, 2)
    actual = compile_triton(_tokens_to_image, tmp_path / "dump")(*arguments)
    torch.testing.assert_close(actual, _tokens_to_image(*arguments))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    launched = re.findall(r"KernelLauncher\((k_\w+),", host)
    assert launched and not any(name.startswith("k_permute") for name in launched), host
    assert re.search(r"reinterpret\(buf\d+, \(2, 8, 6, 6\), \(288, 1, 48, 8\), 0\)", host), host


def test_a_transpose_of_an_input_of_unknown_layout_is_still_copied(tmp_path):
    """A graph input's strides are only known at run time: its transpose stays a kernel."""
    def tokens_as_image(tokens, conv_weight):
        image = tokens.view(2, 6, 6, 8).permute(0, 3, 1, 2)
        return torch.nn.functional.conv2d(image, conv_weight, stride=2)

    arguments = torch.randn(2, 36, 8), torch.randn(8, 8, 2, 2)
    torch.testing.assert_close(compile_triton(tokens_as_image, tmp_path / "dump")(*arguments),
                               tokens_as_image(*arguments))
    assert_compiled()
    _, host = generated_files(tmp_path / "dump")
    assert re.search(r"KernelLauncher\(k_permute_\w+,", host), host


def _embedded_heads(ids, token_table, position_table, weight):
    """GPT-2's first forward piece in training, before its attention: token and position
    embeddings, and the heads of a projection transposed for the attention kernel."""
    positions = torch.arange(ids.shape[1]).unsqueeze(0)
    hidden = torch.nn.functional.embedding(ids, token_table) + \
        torch.nn.functional.embedding(positions, position_table)
    heads = (hidden.view(-1, 8) @ weight).view(1, ids.shape[1], 2, 4).transpose(1, 2)
    return positions, hidden, heads


def test_a_kernel_with_no_results_is_launched_not_taken_for_a_view(tmp_path):
    """At 512 positions the position embedding's gather, fused into its reader, leaves a
    kernel that only checks its indices (cf.assert) and returns nothing; the host asked
    such a kernel for its result to see whether it was a permuted copy, and
    hf_gpt2's and hf_t5's training forwards ran a piece eagerly (IndexError)."""
    torch.manual_seed(0)
    arguments = (torch.randint(0, 10, (1, 512)), torch.randn(10, 8), torch.randn(1024, 8),
                 torch.randn(8, 8))
    with torch.no_grad():
        actual = compile_triton(_embedded_heads, tmp_path / "dump")(*arguments)
    for got, expected in zip(actual, _embedded_heads(*arguments)):
        torch.testing.assert_close(got, expected)
    assert_compiled()
    (graph,) = (tmp_path / "dump").iterdir()
    assert re.search(r'^    "tkern.kernel"\(\) \(\{', (graph / "04_gpu.mlir").read_text(),
                     re.MULTILINE)

"""The CPU runtime: dtypes, layouts, 0-d tensors, several outputs, symbolic sizes."""

import pytest
import torch

import tessel
from conftest import assert_compiled

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.bool]


def make(shape, dtype):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(-100, 100, shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes(dtype):
    def fn(a, b):
        if dtype == torch.bool:
            return a & ~b, a | b
        return a * b + a, torch.maximum(a, b)

    a, b = make((5, 7), dtype), make((5, 7), dtype)
    compiled = torch.compile(fn, backend="mlir")
    for actual, expected in zip(compiled(a, b), fn(a, b)):
        assert actual.dtype == expected.dtype
        torch.testing.assert_close(actual, expected)
    assert_compiled()


def test_reduction_and_cast_between_dtypes():
    def fn(x, mask):
        return (x.to(torch.float16) * 2).float().sum(dim=1), mask.int().sum()

    x, mask = torch.randn(4, 6), torch.rand(4, 6) > 0.3
    compiled = torch.compile(fn, backend="mlir")
    for actual, expected in zip(compiled(x, mask), fn(x, mask)):
        torch.testing.assert_close(actual, expected, rtol=1e-3, atol=1e-3)
    assert_compiled()


@pytest.mark.parametrize(("dtype", "bits"), [(torch.bfloat16, 8), (torch.float16, 11)], ids=str)
def test_double_rounds_to_half_types_as_eager(dtype, bits):
    """f64 -> bf16/f16 by way of f32, as c10's conversions round (the JIT had no
    __truncdfbf2): 1 + 2^-bits + 2^-40 rounds up to the half type directly, but to
    1 + 2^-bits in f32, a tie that then rounds to even, 1.0."""
    def fn(x):
        return (x + x).to(dtype)

    x = torch.tensor([(1 + 2**-bits + 2**-40) / 2, 0.1, -3.3], dtype=torch.float64)
    actual = torch.compile(fn, backend="mlir")(x)
    assert_compiled()
    assert torch.equal(actual, fn(x)), (actual, fn(x))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_fused_half_chain_rounds_once(dtype):
    """A fused f16/bf16 chain holds f32 between its ops and rounds once, as the Triton
    target and Inductor do (hold-half-in-f32): it had rounded after every op."""
    def fn(x, y):
        return ((x * y + x) * y - x) * 3

    torch.manual_seed(0)
    x, y = torch.randn(4096, dtype=dtype), torch.randn(4096, dtype=dtype)
    actual = torch.compile(fn, backend="mlir")(x, y)
    assert_compiled()
    once = fn(x.float(), y.float()).to(dtype)
    torch.testing.assert_close(actual, once, rtol=torch.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_non_contiguous_inputs(layout):
    base = torch.randn(8, 6)
    x = {"transposed": base.t(), "sliced": base[::2, 1:], "expanded": base[:1].expand(8, 6)}[layout]

    def fn(x):
        return torch.tanh(x) + 1

    compiled = torch.compile(fn, backend="mlir")
    torch.testing.assert_close(compiled(x), fn(x))
    assert_compiled()


def test_zero_dim_tensors_and_scalar_outputs():
    def fn(x, scale):
        return (x * scale).sum(), scale + 1

    x, scale = torch.randn(3, 3), torch.tensor(2.5)
    compiled = torch.compile(fn, backend="mlir")
    for actual, expected in zip(compiled(x, scale), fn(x, scale)):
        assert actual.shape == expected.shape == ()
        torch.testing.assert_close(actual, expected)
    assert_compiled()


def test_multiple_outputs_including_input_and_duplicates():
    def fn(x, y):
        z = x + y
        return z, z, x, z.t(), y.shape[0] * 2

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    compiled = torch.compile(fn, backend="mlir")
    actual, expected = compiled(x, y), fn(x, y)
    assert len(actual) == len(expected)
    for a, e in zip(actual[:4], expected[:4]):
        torch.testing.assert_close(a, e)
    assert actual[4] == expected[4]
    assert actual[3].stride() == expected[3].stride()
    assert_compiled()


def test_dynamic_batch_compiles_once():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    compiled = torch.compile(model, backend="mlir", dynamic=True)
    with torch.no_grad():
        for batch in (2, 3, 4, 9, 17):  # Dynamo specializes sizes 0 and 1
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x))
    counters = assert_compiled()
    assert counters["graphs_compiled"] == 1


def test_symbolic_size_in_output_shape():
    def fn(x):
        return torch.cat([x, x * 2], dim=0).reshape(-1), x.shape[0] + 1

    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for rows in (2, 5):
        x = torch.randn(rows, 3)
        actual, expected = compiled(x), fn(x)
        torch.testing.assert_close(actual[0], expected[0])
        assert actual[1] == expected[1]
    assert tessel.stats()["graphs_compiled"] == 1
    assert_compiled()


def test_zero_size_input():
    def fn(x):
        return torch.relu(x) * 3

    x = torch.randn(0, 4)
    compiled = torch.compile(fn, backend="mlir")
    assert compiled(x).shape == (0, 4)
    assert_compiled()


def test_views_of_empty_tensors():
    """torch-mlir's view lowering divided by a size of 0 (SIGFPE in the compile worker):
    empty_values allocates such tensors instead."""
    def fn(x, y):
        return torch.nn.functional.pixel_shuffle(x, 1), y.repeat(0, 2).sum(0)

    x, y = torch.randn(1, 0, 1, 1), torch.randn(3, 4)
    actual = torch.compile(fn, backend="mlir")(x, y)
    assert_compiled()
    for a, e in zip(actual, fn(x, y)):
        torch.testing.assert_close(a, e)


def test_concurrent_calls_from_threads():
    from concurrent.futures import ThreadPoolExecutor

    def fn(x):
        return torch.sin(x) * 2 + x

    compiled = torch.compile(fn, backend="mlir")
    inputs = [torch.randn(64, 64) for _ in range(16)]
    compiled(inputs[0])
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(compiled, inputs))
    for x, result in zip(inputs, results):
        torch.testing.assert_close(result, fn(x))
    assert_compiled()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_loops_split_rows_across_threads(tmp_path, threads):
    """Big loops run on OpenMP threads (GOMP_parallel in the LLVM IR); every row count,
    including ones that do not divide by the thread count, gives eager's answer."""
    def fn(x):
        return torch.softmax(x, dim=-1) * 2 + torch.tanh(x)

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        compiled = torch.compile(fn, backend="mlir", dynamic=True,
                                 options={"dump_dir": str(tmp_path)})
        for rows in (257, 1000, 64):
            x = torch.randn(rows, 384)
            torch.testing.assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-5)
    finally:
        torch.set_num_threads(previous)
    assert assert_compiled()["graphs_compiled"] == 1
    (llvm_ir,) = tmp_path.glob("*/*cpu-lower-to-llvm.mlir")
    assert "llvm.call @GOMP_parallel" in llvm_ir.read_text()

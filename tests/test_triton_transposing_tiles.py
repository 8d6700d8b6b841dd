"""Pointwise kernels that transpose walk 2-D tiles (targets/triton/transposing_tiles.py):
kernels run in Triton's interpreter, and their source shows the tile's two lanes."""

import re

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_compiled


@pytest.fixture(autouse=True)
def kernel_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))


def compiled_kernels(fn, inputs, dump_dir, dynamic=False, **tolerances) -> str:
    """The Triton kernels `fn` compiled to, checked against eager on `inputs` with
    nothing run eagerly."""
    options = {"target": "triton", "fallback": False, "dump_dir": str(dump_dir)}
    compiled = torch.compile(fn, backend="mlir", options=options, dynamic=dynamic)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), fn(*inputs), **tolerances)
    assert_compiled()
    return "\n".join(path.read_text() for path in dump_dir.glob("*/*_triton_kernels.py"))


def tiled(kernels: str) -> list[str]:
    """The kernels that walk 2-D tiles."""
    return re.findall(r"def (k_\w+)\([^\n]*\n    ry = [^\n]*\n    rx = ", kernels)


@pytest.mark.parametrize("shape, order, dtype", [
    ((5, 37, 19), (0, 2, 1), torch.float32),
    ((3, 20, 7, 33), (0, 3, 1, 2), torch.float32),
    # xcit's q, k, v permute ([B, N, 3, H, D] -> [3, B, H, D, N]), in bf16
    ((4, 13, 3, 2, 24), (2, 0, 3, 4, 1), torch.bfloat16),
], ids=["3d", "4d", "5d_bf16"])
def test_a_permute_copy_walks_tiles_along_both_contiguous_dims(tmp_path, shape, order, dtype):
    x = torch.randn(shape).to(dtype)
    kernels = compiled_kernels(lambda x: x.permute(order) * 2, (x,), tmp_path)
    assert len(tiled(kernels)) == 1, kernels
    # the read's contiguous dim steps along the tile's rows, the result's along its columns
    read = re.search(r"tl\.load\(in0 \+ (.*?), mask=", kernels).group(1)
    assert f"in0_stride{len(shape) - 1}*(ry[:, None] % {shape[-1]})" in read, read
    store = re.search(r"tl\.store\(out0 \+ (.*?), v", kernels).group(1)
    assert re.search(rf"out0_stride{len(shape) - 1}\*\(?rx\[None, :\]", store), store


def test_odd_sizes_are_masked_on_both_axes(tmp_path):
    x = torch.randn(3, 45, 29)
    kernels = compiled_kernels(lambda x: x.transpose(1, 2) + 1, (x,), tmp_path)
    assert "mask = (ry[:, None] < 87) & (rx[None, :] < 45)" in kernels, kernels


def test_an_nchw_read_into_a_channels_last_result_is_tiled(tmp_path):
    """The convolution's result is channels-last, so the kernel adding `y` to it writes
    channels fastest; `y` is NCHW, contiguous along W: the tile's rows step along W."""
    def fn(x, w, y):
        return F.conv2d(x, w, padding=1) * 2 + y
    x, w, y = torch.randn(2, 5, 9, 11), torch.randn(20, 5, 3, 3), torch.randn(2, 20, 9, 11)
    kernels = compiled_kernels(fn, (x, w, y), tmp_path, rtol=1e-4, atol=1e-4)
    assert len(tiled(kernels)) == 1, kernels
    assert "out0_stride1*rx[None, :]" in kernels  # channels along the columns
    assert re.search(r"in\d_stride3\*\(ry\[:, None\] % 11\)", kernels), kernels


def test_a_pooling_window_over_an_nchw_map_into_a_channels_last_result_is_tiled(tmp_path):
    """PoolFormer's pooling: a 3 x 3 window summed over an NCHW map (its padding read
    through masked loads: padded_reads.py) for a channels-last result; every tap is
    read along W, down the tile."""
    def fn(x, w, y):
        return F.conv2d(x, w, padding=1) + F.avg_pool2d(y, 3, 1, 1, count_include_pad=False)
    x, w, y = torch.randn(2, 5, 9, 11), torch.randn(20, 5, 3, 3), torch.randn(2, 20, 9, 11)
    kernels = compiled_kernels(fn, (x, w, y), tmp_path, rtol=1e-4, atol=1e-4)
    assert len(tiled(kernels)) == 1, kernels
    taps = re.findall(r"in0_stride3\*\(+ry\[:, None\] % 11\)( [+-] 1)?", kernels)
    assert sorted(set(taps)) == ["", " + 1", " - 1"], kernels


def test_operands_broadcast_along_one_axis_of_a_tile(tmp_path):
    def fn(x, columns, rows):
        return x.transpose(1, 2) * columns + rows[:, None]
    x, columns, rows = torch.randn(2, 40, 24), torch.randn(40), torch.randn(24)
    kernels = compiled_kernels(fn, (x, columns, rows), tmp_path)
    assert len(tiled(kernels)) == 1, kernels


def test_tiled_kernels_launched_together_split_the_combo_s_programs(tmp_path):
    def fn(x, y):
        return x.transpose(1, 2) * 2, y.transpose(1, 2) * 3
    x, y = torch.randn(2, 40, 24), torch.randn(2, 40, 24)
    options = {"target": "triton", "fallback": False, "dump_dir": str(tmp_path)}
    for got, want in zip(torch.compile(fn, backend="mlir", options=options)(x, y), fn(x, y)):
        torch.testing.assert_close(got, want)
    assert_compiled()
    kernels = "\n".join(path.read_text() for path in tmp_path.glob("*/*_triton_kernels.py"))
    assert re.search(r"def k_\w+\(k0_", kernels) and "ry = 32*(program // 2)" in kernels, kernels


def test_dynamic_sizes_make_the_tile_count_a_function_of_the_size_parameters(tmp_path):
    def fn(x):
        return x.transpose(0, 1) * 2
    options = {"target": "triton", "fallback": False, "dump_dir": str(tmp_path)}
    compiled = torch.compile(fn, backend="mlir", options=options, dynamic=True)
    for rows in (40, 70):
        x = torch.randn(rows, 33)
        torch.testing.assert_close(compiled(x), fn(x))
    assert_compiled()
    kernels = "\n".join(path.read_text() for path in tmp_path.glob("*/*_triton_kernels.py"))
    assert tiled(kernels) and "size0" in kernels, kernels


def test_negative_kernels_read_along_their_results_stay_one_dimensional(tmp_path):
    """Operands contiguous along the result's fastest dim, and a broadcast that is
    contiguous along another (a per-channel scale over NCHW), read coalesced in 1-D."""
    def fn(x, y, scale):
        return x * 2 + y * scale
    x, y, scale = torch.randn(2, 6, 5, 7), torch.randn(2, 6, 5, 7), torch.randn(2, 6, 1, 1)
    kernels = compiled_kernels(fn, (x, y, scale), tmp_path)
    assert not tiled(kernels) and "r = tl.program_id(0) * BLOCK" in kernels, kernels

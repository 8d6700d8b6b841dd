"""F.interpolate's linear modes on the CPU target, one spatial dim at a time
(frontend/separable_interpolation.py): each pass picks rows or columns with
index_select instead of gathering every corner of every output point with aten.index,
a dim whose size and scale do not change is no pass at all, and every result matches
eager's."""

import re

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_compiled


def _decomposed_graph(dump) -> str:
    (graph,) = dump.glob("*/*decomposed_graph.py")
    return graph.read_text()


@pytest.mark.parametrize("shape, arguments", [
    ((2, 8, 16, 16), {"size": (64, 64), "align_corners": False}),
    ((2, 8, 16, 16), {"size": (64, 64), "align_corners": True}),
    ((1, 3, 5, 7), {"size": (13, 9), "align_corners": False}),
    ((1, 3, 6, 10), {"scale_factor": 2.5}),
    ((1, 3, 6, 10), {"scale_factor": 2}),
    ((1, 3, 6, 10), {"scale_factor": (1.5, 0.5), "recompute_scale_factor": True}),
])
def test_bilinear_by_dims(tmp_path, shape, arguments):
    def upsample(x):
        return F.interpolate(x, mode="bilinear", **arguments) * 2

    compiled = torch.compile(upsample, backend="mlir", options={"dump_dir": str(tmp_path)})
    x = torch.randn(shape)
    torch.testing.assert_close(compiled(x), upsample(x), rtol=1e-5, atol=1e-5)
    assert_compiled()
    graph = _decomposed_graph(tmp_path)
    assert "aten.index_select" in graph
    assert "aten.index.Tensor" not in graph


def test_trilinear_by_dims(tmp_path):
    def upsample(x):
        return F.interpolate(x, size=(4, 6, 8), mode="trilinear", align_corners=False)

    compiled = torch.compile(upsample, backend="mlir", options={"dump_dir": str(tmp_path)})
    x = torch.randn(1, 2, 3, 4, 5)
    torch.testing.assert_close(compiled(x), upsample(x), rtol=1e-5, atol=1e-5)
    assert_compiled()
    assert _decomposed_graph(tmp_path).count("aten.index_select") == 6


def test_same_size_is_no_pass(tmp_path):
    """A segmentation head upsamples its largest map to its own size: a copy, as
    eager's kernel makes it."""
    def head(x, y):
        size = x.shape[2:]
        return torch.cat([F.interpolate(x, size=size, mode="bilinear", align_corners=False),
                          F.interpolate(y, size=size, mode="bilinear", align_corners=False)], 1)

    compiled = torch.compile(head, backend="mlir", options={"dump_dir": str(tmp_path)})
    x, y = torch.randn(2, 4, 16, 16), torch.randn(2, 4, 8, 8)
    torch.testing.assert_close(compiled(x, y), head(x, y), rtol=1e-5, atol=1e-5)
    assert_compiled()
    assert _decomposed_graph(tmp_path).count("aten.index_select") == 4  # y's two passes


def test_differentiated_interpolation_keeps_pytorchs_form(tmp_path):
    def upsample(x):
        return F.interpolate(x, scale_factor=2.0, mode="bilinear").sum()

    compiled = torch.compile(upsample, backend="mlir", options={"dump_dir": str(tmp_path)})
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    compiled(x).backward()
    expected = x.detach().clone().requires_grad_()
    upsample(expected).backward()
    torch.testing.assert_close(x.grad, expected.grad)
    assert_compiled()
    assert "aten.index_select" not in "".join(
        graph.read_text() for graph in tmp_path.glob("*/*decomposed_graph.py"))


def test_a_channels_last_map_is_interpolated_in_memory_order(tmp_path):
    """SegFormer's decode head upsamples token rows viewed as a [N, C, H, W] map, which
    is channels-last in memory: each pass blends whole rows of channels (the spatial
    dims of [N, H, W, C] are 1 and 2), and the result is channels-last, as eager's."""
    def head(tokens):
        x = tokens.permute(0, 2, 1).reshape(2, 8, 6, 10)
        return F.interpolate(x, size=(24, 40), mode="bilinear", align_corners=False) * 2

    compiled = torch.compile(head, backend="mlir", options={"dump_dir": str(tmp_path)})
    tokens = torch.randn(2, 60, 8)
    result, expected = compiled(tokens), head(tokens)
    torch.testing.assert_close(result, expected, rtol=1e-5, atol=1e-5)
    assert result.stride() == expected.stride()
    assert_compiled()
    dims = re.findall(r"aten\.index_select\.default\(\w+, (\d+),", _decomposed_graph(tmp_path))
    assert sorted(set(dims)) == ["1", "2"], dims

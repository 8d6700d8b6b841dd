"""Convolutions on the CPU target: f32 ones (1x1 ones too), and depthwise ones on small
maps, run as PyTorch's own (oneDNN) convolution, called from the compiled code
(library-calls, targets/cpu/convolution_runner.py); every result matches eager."""

import pytest
import torch
from torch.profiler import profile

import tessel
from tessel.targets.cpu import convolution_runner

from conftest import assert_compiled


def aten_calls(call) -> tuple[int, int]:
    """How many oneDNN convolutions that add into their output buffer, and fills of an
    output with zeros first, one call of `call` runs."""
    with profile() as prof:
        call()
    counts = {e.key: e.count for e in prof.key_averages()}
    return counts.get("mkldnn::_convolution_pointwise_", 0), counts.get("aten::zero_", 0)


class ConcatenatedConvolutions(torch.nn.Module):
    """Two convolutions written into one concatenated buffer: each output is a strided
    slice of it, and the second reads an image trimmed to its stride's windows."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 4, 3, stride=2)
        self.second = torch.nn.Conv2d(3, 5, 3, stride=2, bias=False)

    def forward(self, x):
        return torch.relu(torch.cat([self.first(x), self.second(x)], 1))


CASES = {
    # name: (model, input shape, (oneDNN convolutions, outputs zeroed) a call): one with
    # a bias adds into it, one without overwrites its output (overwrite-zero-accumulators)
    "padded_with_bias": (torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()),
                         (2, 3, 12, 12), (1, 0)),
    "strided_dilated": (torch.nn.Conv2d(4, 6, 3, stride=2, dilation=2, bias=False),
                        (2, 4, 15, 15), (1, 1)),
    "conv_batch_norm_relu": (torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1)), (2, 3, 20, 20), (2, 1)),
    "concatenated": (ConcatenatedConvolutions(), (2, 3, 10, 10), (2, 1)),
    # 1x1 convolutions are oneDNN's too; depthwise ones on maps over 14x14 tessel's own
    # loops.
    "pointwise_and_depthwise": (torch.nn.Sequential(
        torch.nn.Conv2d(4, 8, 1), torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)),
        (2, 4, 15, 15), (1, 0)),
    "small_depthwise": (torch.nn.Sequential(
        torch.nn.Conv2d(8, 8, 7, padding=3, groups=8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False)),
        (2, 8, 14, 14), (2, 1)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_convolutions_match_eager_as_aten_calls(name):
    model, shape, expected_calls = CASES[name]
    model.eval()
    x = torch.randn(shape)
    compiled = torch.compile(model, backend="mlir")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert aten_calls(lambda: compiled(x)) == expected_calls
    assert_compiled()


def test_dynamic_batch_convolution_is_an_aten_call():
    model = torch.nn.Conv2d(3, 4, 3, padding=1).eval()
    compiled = torch.compile(model, backend="mlir", dynamic=True)
    with torch.no_grad():
        for batch in (2, 3):
            x = torch.randn(batch, 3, 8, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert aten_calls(lambda: compiled(x)) == (1, 0)
    assert_compiled()


def test_failing_convolution_runs_the_graph_eagerly(monkeypatch):
    """What the convolution raises inside the compiled code reaches the host program,
    which runs the graph eagerly and records why, instead of returning garbage."""
    def fail(self, slots):
        raise RuntimeError("injected")

    monkeypatch.setattr(convolution_runner._CallSite, "run", fail)
    model = torch.nn.Conv2d(3, 4, 3).eval()
    x = torch.randn(1, 3, 8, 8)
    compiled = torch.compile(model, backend="mlir")
    with torch.no_grad():
        with pytest.warns(UserWarning, match="injected"):
            actual = compiled(x)
        torch.testing.assert_close(actual, model(x))
    reasons = tessel.stats()["fallback_reasons"]
    assert len(reasons) == 1 and "injected" in reasons[0], reasons


def test_memory_viewed_under_inference_mode_is_writable_after_it():
    """The runner keeps its views of the compiled code's memory across calls; one made
    under inference_mode must take writes outside it (an inference tensor would not)."""
    memory = torch.zeros(2, 3)
    with torch.inference_mode():
        viewed = convolution_runner.view(memory.data_ptr(), (3, 2), (1, 3))
    viewed.add_(1.0)
    torch.testing.assert_close(memory, torch.ones(2, 3))


def _slots(*tensors) -> tuple[int, ...]:
    """Each tensor as the runner's slots have it: address, 4 sizes, 4 strides."""
    slots = []
    for tensor in tensors:
        pad = [0] * (4 - tensor.dim())
        slots += [tensor.data_ptr(), *tensor.shape, *pad, *tensor.stride(), *pad]
    return tuple(slots)


@pytest.mark.parametrize("rows, cut", [(114, False), (115, True)])
def test_strided_window_images_are_cut_only_where_aten_would_add_a_row(rows, cut):
    """A stride-2 3x3 depthwise convolution to 56x56: from 114 padded rows aten makes 56
    outputs too, so the runner hands over the whole (dense) image; from 115 it would
    make 57, so the image is cut to the 113 rows the windows read. The result is the
    windows' either way."""
    image = torch.randn(2, rows, rows, 8).permute(0, 3, 1, 2)
    weight, output = torch.randn(8, 3, 3), torch.zeros(2, 56, 56, 8).permute(0, 3, 1, 2)
    site = convolution_runner._CallSite(
        "linalg.depthwise_conv_2d_nchw_chw strides=2,2 dilations=1,1 overwrites=1")
    handed, _, _, _ = site._operands(_slots(image, weight, output))
    assert handed.shape[2:] == ((113, 113) if cut else (rows, rows))
    assert handed.is_contiguous(memory_format=torch.channels_last) != cut
    site.run(_slots(image, weight, output))
    expected = torch.nn.functional.conv2d(image[:, :, :113, :113], weight.unsqueeze(1),
                                          stride=2, groups=8)
    torch.testing.assert_close(output, expected, rtol=1e-4, atol=1e-4)


class MixFFN(torch.nn.Module):
    """SegFormer's Mix-FFN: a depthwise convolution over a transformer's rows, viewed as
    an NCHW image and back."""

    def __init__(self, channels: int = 16):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, channels), torch.nn.Linear(channels, 8)
        self.depthwise = torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, rows, height: int, width: int):
        y = self.fc1(rows)
        image = y.transpose(1, 2).reshape(y.shape[0], y.shape[2], height, width)
        y = self.depthwise(image).flatten(2).transpose(1, 2)
        return self.fc2(torch.nn.functional.gelu(y))


def test_depthwise_convolution_on_rows_runs_channels_last(tmp_path):
    # 15 x 16 output pixels: more than the library's maps (depthwise-channels-last).
    model, rows = MixFFN().eval(), torch.randn(2, 15 * 16, 8)
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    tessel.reset_stats()
    with torch.no_grad():
        torch.testing.assert_close(compiled(rows, 15, 16), model(rows, 15, 16))
    assert_compiled()
    (fused,) = tmp_path.glob("*/04_cpu-fuse.mlir")
    # The rows padded as NHWC (2, 17, 18, 16), not the NCHW image (2, 16, 17, 18).
    assert "tensor<2x17x18x16xf32>" in fused.read_text()
    assert "tensor<2x16x17x18xf32>" not in fused.read_text()


def fused_ir_matching_eager(model, images: list, tmp_path) -> str:
    """`model` compiled with a dump: each of `images` gives eager's result, and the
    compiled path ran; the kernels' IR (cpu-fuse's output)."""
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        for x in images:
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert_compiled()
    (kernels,) = tmp_path.glob("*/*cpu-fuse.mlir")
    return kernels.read_text()


def test_a_mobilenet_block_runs_channels_last(tmp_path):
    """channels-last-convolutions: oneDNN runs the block's library convolutions on
    NHWC views, its depthwise convolution is a loop over NHWC, and the batch norms
    between them, fused with the transposes, read and write NHWC: no [N, C, H, W]
    image is left inside the block."""
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Conv2d(8, 24, 1), torch.nn.BatchNorm2d(24), torch.nn.ReLU6(),
        torch.nn.Conv2d(24, 24, 3, padding=1, groups=24), torch.nn.BatchNorm2d(24),
        torch.nn.ReLU6(), torch.nn.Conv2d(24, 8, 1)).eval()
    for norm in (block[1], block[4]):
        norm.running_mean.normal_()
        norm.running_var.uniform_(0.5, 2.0)
    text = fused_ir_matching_eager(block, [torch.randn(2, 8, 20, 20) for _ in range(2)], tmp_path)
    assert text.count("linalg.conv_2d_nhwc_fhwc") == 2
    assert "tensor<2x24x20x20xf32>" not in text and "tensor<2x20x20x24xf32>" in text


class ResidualBlock(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.branch = torch.nn.Sequential(
            torch.nn.Conv2d(width, width, 1, bias=False), torch.nn.BatchNorm2d(width),
            torch.nn.ReLU(), torch.nn.Conv2d(width, width, 1, bias=False),
            torch.nn.BatchNorm2d(width))

    def forward(self, x):
        return torch.relu(self.branch(x) + x)


def test_a_residual_stream_runs_channels_last(tmp_path):
    """read-transposed-copies: the stream between residual blocks is read by the next
    block's convolution (NHWC) and by its add; the add reads the NHWC copy, so the
    stream is written NHWC only, never as an [N, C, H, W] image."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1), ResidualBlock(16),
                                ResidualBlock(16), torch.nn.Conv2d(16, 4, 1)).eval()
    text = fused_ir_matching_eager(model, [torch.randn(2, 8, 10, 10)], tmp_path)
    assert text.count("linalg.conv_2d_nhwc_fhwc") == 6
    assert "tensor<2x16x10x10xf32>" not in text and "tensor<2x10x10x16xf32>" in text

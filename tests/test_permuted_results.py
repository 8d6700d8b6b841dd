"""Results eager lays out as a permutation of a contiguous tensor (a channels-last
convolution's output) are computed by the CPU target in memory order and returned as a
permuted view with eager's strides, not transposed by a kernel and copied back."""

import torch
from conftest import assert_compiled


def _host_program(dump_dir) -> str:
    return next(dump_dir.glob("*/*_host_program.py")).read_text()


def test_a_channels_last_result_is_a_view_of_its_kernel_s_result(tmp_path):
    """A 1x1 convolution's logits on a channels-last map (SegFormer's classifier):
    eager's are channels-last; the compiled ones too, and nothing copies them."""
    conv = torch.nn.Conv2d(16, 5, 1).eval()
    compiled = torch.compile(lambda x: conv(x) * 2, backend="mlir",
                             options={"dump_dir": str(tmp_path)})
    x = torch.randn(2, 16, 6, 6).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        result, expected = compiled(x), conv(x) * 2
    torch.testing.assert_close(result, expected)
    assert result.stride() == expected.stride() == (180, 1, 30, 5)
    assert_compiled()
    host = _host_program(tmp_path)
    assert "_reinterpret_tensor(out0, (2, 5, 6, 6), (180, 1, 30, 5)" in host, host
    assert "copy_(" not in host, host


def test_negative_an_input_returned_permuted_keeps_its_layout(tmp_path):
    compiled = torch.compile(lambda x: (x.permute(0, 2, 3, 1), x + 1), backend="mlir",
                             options={"dump_dir": str(tmp_path)})
    x = torch.randn(2, 3, 4, 5)
    view, added = compiled(x)
    assert view.data_ptr() == x.data_ptr()
    torch.testing.assert_close(added, x + 1)

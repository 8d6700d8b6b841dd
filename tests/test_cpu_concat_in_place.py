"""A concatenation on the CPU target whose operands are computed in another order than
they are concatenated (a segmentation head's upsampled maps, last stage first): each
operand's kernel writes its own slice of the result (insert-slices-early,
eliminate-empty-tensors), with no copy into it afterwards, and the result is eager's."""

import torch
from conftest import assert_compiled


def test_operands_written_in_place(tmp_path):
    def concat(x, y, w):
        first = x.sin()
        second = torch.relu(y @ w).transpose(1, 2)
        return torch.cat([second, first], 1)

    compiled = torch.compile(concat, backend="mlir", options={"dump_dir": str(tmp_path)})
    x, y, w = torch.randn(2, 32, 64), torch.randn(2, 64, 48), torch.randn(48, 32)
    torch.testing.assert_close(compiled(x, y, w), concat(x, y, w))
    assert assert_compiled()["kernels"] >= 2
    (buffers,) = tmp_path.glob("*/*cpu-bufferize.mlir")
    assert "memref.copy" not in buffers.read_text()

"""Gemms into zeros on the CPU target: a matmul and a linear layer without bias write
their BLAS gemm's output (beta = 0), and a 1x1 convolution without bias its oneDNN
call's, instead of filling it with zeros first and adding into it
(overwrite-zero-accumulators, library-calls); every result matches eager, call after
call (the output buffers then held earlier values)."""

import re

import torch
from conftest import assert_compiled


class PointwiseThenLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pointwise = torch.nn.Conv2d(16, 8, 1, bias=False)
        self.norm = torch.nn.BatchNorm2d(8)
        self.linear = torch.nn.Linear(36, 12, bias=False)

    def forward(self, x, y):
        features = torch.relu(self.norm(self.pointwise(x))).flatten(2)
        return self.linear(features) @ y


def test_gemms_overwrite_their_outputs(tmp_path):
    model = PointwiseThenLinear().eval()
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        for _ in range(3):
            x, y = torch.randn(2, 16, 6, 6), torch.randn(12, 5)
            torch.testing.assert_close(compiled(x, y), model(x, y), rtol=1e-4, atol=1e-4)
    assert assert_compiled()["graphs_compiled"] == 1
    (kernels,) = tmp_path.glob("*/*cpu-fuse.mlir")
    gemms = re.findall(r'"tkern.library_call"\(\) \(\{\n(.*?)"tkern.yield"', kernels.read_text(),
                       re.DOTALL)
    assert len(gemms) == 3, gemms
    assert all("tessel.overwrites_output" in gemm for gemm in gemms), gemms
    (llvm_ir,) = tmp_path.glob("*/*cpu-lower-to-llvm.mlir")
    assert "llvm.call @sgemm_" in llvm_ir.read_text()

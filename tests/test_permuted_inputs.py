"""Inputs laid out as a permutation of a contiguous tensor (a transposed weight saved
for the backward) reach the CPU target's compiled code as that contiguous tensor,
permuted by the host program (a view), not copied."""

import torch
from conftest import assert_compiled


def _host_program(dump_dir) -> str:
    return next(dump_dir.glob("*/*_host_program.py")).read_text()


def test_a_transposed_input_is_permuted_not_copied(tmp_path):
    weight = torch.randn(16, 32)  # nn.Linear(32, 16).weight
    compiled = torch.compile(lambda x, w: torch.relu(x @ w) + 1, backend="mlir",
                             options={"dump_dir": str(tmp_path)})
    x = torch.randn(8, 32)
    torch.testing.assert_close(compiled(x, weight.t()), torch.relu(x @ weight.t()) + 1)
    assert_compiled()
    assert ".permute([1, 0])" in _host_program(tmp_path)


def test_a_permuted_3d_input_computes_as_eager():
    base = torch.randn(4, 6, 5)
    compiled = torch.compile(lambda x: (x * 2).sum(-1), backend="mlir")
    permuted = base.permute(2, 0, 1)
    torch.testing.assert_close(compiled(permuted), (permuted * 2).sum(-1))
    assert_compiled()


def test_negative_a_returned_view_of_the_input_keeps_its_layout(tmp_path):
    compiled = torch.compile(lambda x: (x.t(), x * 3), backend="mlir",
                             options={"dump_dir": str(tmp_path)})
    x = torch.randn(6, 4).t()
    view, tripled = compiled(x)
    assert view.data_ptr() == x.data_ptr() and view.stride() == x.t().stride()
    torch.testing.assert_close(tripled, x * 3)
    assert ".permute(" not in _host_program(tmp_path)

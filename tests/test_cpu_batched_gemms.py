"""Batched gemms on the CPU target: a batch of small matrices runs one single-threaded
BLAS gemm per matrix across OpenMP threads (library-calls); a batch of large matrices
does so where the thread count divides it, else runs one multi-threaded gemm per
matrix. Every result matches eager."""

import re

import pytest
import torch

from conftest import assert_compiled


def attention(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_small_matrices_of_a_batch_run_across_threads(tmp_path, threads):
    """MobileViT-like attention (32 matrices of 64x48 a product): both products run
    their matrices in a launched loop; 1, 2 and 3 threads (32 matrices not divisible by
    3) give eager's answer."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        q, k, v = (torch.randn(8, 4, 64, 48) for _ in range(3))
        compiled = torch.compile(attention, backend="mlir", options={"dump_dir": str(tmp_path)})
        torch.testing.assert_close(compiled(q, k, v), attention(q, k, v), rtol=1e-5, atol=1e-5)
    finally:
        torch.set_num_threads(previous)
    assert assert_compiled()["graphs_compiled"] == 1
    (llvm_ir,) = tmp_path.glob("*/*cpu-lower-to-llvm.mlir")
    text = llvm_ir.read_text()
    launched = set(re.findall(r"llvm\.func (?:\w+ )?@(tessel_gemm_batch_\d+)__launch\(", text))
    assert len(launched) == 2, launched
    assert "llvm.call @GOMP_parallel" in text


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_matrices_choose_threads_at_run_time(tmp_path, threads):
    """Two large matrices (a bmm of two 512x256 products): one single-threaded gemm per
    thread where the thread count divides them (1 and 2 threads), one multi-threaded
    gemm after another where it does not (3); both ways give eager's answer."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        q, k, v = (torch.randn(2, 512, 256) for _ in range(3))
        compiled = torch.compile(attention, backend="mlir", options={"dump_dir": str(tmp_path)})
        torch.testing.assert_close(compiled(q, k, v), attention(q, k, v), rtol=1e-4, atol=1e-4)
    finally:
        torch.set_num_threads(previous)
    assert assert_compiled()["graphs_compiled"] == 1
    (llvm_ir,) = tmp_path.glob("*/*cpu-lower-to-llvm.mlir")
    text = llvm_ir.read_text()
    launched = set(re.findall(r"llvm\.func (?:\w+ )?@(tessel_gemm_batch_\d+)__launch\(", text))
    assert len(launched) == 2, launched
    assert text.count("llvm.call @omp_get_max_threads()") == 2

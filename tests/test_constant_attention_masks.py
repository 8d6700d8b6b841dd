"""Attention masks that no input reaches are folded into their SDPA calls
(frontend/constant_attention_masks.py): transformers builds such masks from aranges
under torch.compile, and any mask keeps PyTorch's SDPA off its fused kernels. A mask
that lets everything through goes, a causal one becomes `is_causal`, and the others,
constant or not, stay; every result matches eager's."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_compiled


class Attention(torch.nn.Module):
    def __init__(self, mask: str):
        super().__init__()
        self.mask = mask
        self.project = torch.nn.Linear(16, 48)

    def forward(self, x):
        batch, length, _ = x.shape
        query, key, value = self.project(x).view(batch, length, 3, 2, 8).permute(2, 0, 3, 1, 4)
        positions = torch.arange(length, device=x.device)
        if self.mask == "everything":  # transformers' bidirectional mask under compile
            mask = (positions >= 0)[None, None, None, :].expand(batch, 1, length, length)
        elif self.mask == "causal":
            mask = positions[None, :] <= positions[:, None]
        elif self.mask == "zeros":
            mask = torch.zeros(length, length, device=x.device)
        elif self.mask == "a prefix":
            mask = positions[None, :] < 5
        else:  # read from the input
            mask = x[:, None, :, :1] > 0
        return F.scaled_dot_product_attention(query, key, value, attn_mask=mask)


def _attention_arguments(dump) -> list[str]:
    """The arguments of the CPU flash attention in the graph aot_autograd made."""
    call = "_scaled_dot_product_flash_attention_for_cpu.default("
    (graph,) = dump.glob("*_inference/00_fx_graph.py")
    (line,) = [line for line in graph.read_text().splitlines() if call in line]
    return line.split(call)[1].split(")")[0].split(", ")


@pytest.mark.parametrize("mask, folded", [
    ("everything", ["select", "select_1", "select_2"]),
    ("causal", ["select", "select_1", "select_2", "0.0", "True"]),
    ("zeros", ["select", "select_1", "select_2"]),
])
def test_constant_mask_folded(tmp_path, mask, folded):
    model = Attention(mask).eval()
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    x = torch.randn(2, 10, 16)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert_compiled()
    assert _attention_arguments(tmp_path) == folded


@pytest.mark.parametrize("mask", ["a prefix", "input"])
def test_informative_mask_kept(tmp_path, mask):
    model = Attention(mask).eval()
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    x = torch.randn(2, 10, 16)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert_compiled()
    assert any(a.startswith("attn_mask") for a in _attention_arguments(tmp_path))

"""Hugging Face transformers models (tiny configs, random weights, nothing downloaded)
under backend="mlir": forward with fullgraph=True matches eager, and `generate()`
with a compiled forward picks eager's tokens."""

import pytest
import torch
from conftest import assert_compiled
from transformers import (
    AlbertConfig,
    AlbertModel,
    BertConfig,
    BertModel,
    GemmaConfig,
    GemmaForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
)

VOCAB = 128
TOKENS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}


def gpt2():
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB,
                                      n_positions=64, **TOKENS))


def bert():
    return BertModel(BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                intermediate_size=128, vocab_size=VOCAB,
                                max_position_embeddings=64, **TOKENS))


def gemma():
    # Grouped-query attention (2 KV heads for 4 query heads), RMSNorm, rotary positions.
    return GemmaForCausalLM(GemmaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=64,
        **TOKENS))


MODELS = {"gpt2": gpt2, "bert": bert, "gemma": gemma}


def tiny_batch(device):
    ids = torch.randint(3, VOCAB, (2, 8))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # the second sequence is left-padded
    return ids.to(device), mask.to(device)


def assert_one_graph():
    """One graph, nothing run eagerly but its fused attention (CUDA's, or the CPU flash
    attention of an inference graph), which stays native by choice
    (frontend/native_ops.py): compiled as pieces around it."""
    counters = assert_compiled()
    assert counters["graphs_split"] == 0 and not counters["fallback_reasons"], counters
    assert counters["native_ops"], counters


@pytest.mark.parametrize("name", MODELS)
def test_forward_matches_eager_in_one_graph(name, device):
    model = MODELS[name]().eval().to(device)
    ids, mask = tiny_batch(device)
    # fullgraph=True: a graph break would be an error naming it.
    compiled = torch.compile(model, backend="mlir", fullgraph=True)
    with torch.no_grad():
        expected, actual = model(ids, attention_mask=mask), compiled(ids, attention_mask=mask)
    output = "last_hidden_state" if name == "bert" else "logits"
    torch.testing.assert_close(actual[output], expected[output], rtol=1e-4, atol=1e-4)
    assert_one_graph()
    if device.type == "cuda":
        return  # there, eager's own out-of-range embedding is a device-side assert
    # A token id outside the vocabulary is eager's IndexError, not a crash.
    ids[0, 0] = VOCAB
    with pytest.raises(IndexError, match=f"index {VOCAB} is out of range"):
        compiled(ids, attention_mask=mask)


@pytest.mark.parametrize("name", ["gpt2", "gemma"])
def test_generate_with_a_compiled_forward_picks_eagers_tokens(name, device):
    model = MODELS[name]().eval().to(device)
    ids, mask = tiny_batch(device)
    settings = {"attention_mask": mask, "max_new_tokens": 4, "min_new_tokens": 4,
                "do_sample": False}
    expected = model.generate(ids, **settings)
    # What users do to keep generate()'s Python loop eager and compile the model step.
    model.forward = torch.compile(model.forward, backend="mlir", fullgraph=True)
    actual = model.generate(ids, **settings)
    assert actual.tolist() == expected.tolist()
    counters = assert_compiled()
    assert counters["graphs_split"] == 0


@pytest.mark.parametrize("name", MODELS)
def test_forward_with_dynamic_sizes_compiles_once(name, device):
    """dynamic=True: one graph serves every batch and sequence length (GPT-2's GELU
    divides 0-d float tensors, BERT's masks take the minimum of sizes)."""
    model = MODELS[name]().eval().to(device)
    compiled = torch.compile(model, backend="mlir", dynamic=True, fullgraph=True)
    output = "last_hidden_state" if name == "bert" else "logits"
    with torch.no_grad():
        for batch, length in [(2, 6), (3, 9), (2, 13)]:
            ids = torch.randint(3, VOCAB, (batch, length), device=device)
            mask = torch.ones_like(ids)
            mask[1, :2] = 0
            torch.testing.assert_close(compiled(ids, attention_mask=mask)[output],
                                       model(ids, attention_mask=mask)[output],
                                       rtol=1e-4, atol=1e-4)
    assert_one_graph()


def test_albert_runs_each_linear_as_one_half_addmm(monkeypatch, tmp_path):
    """ALBERT's layers share one layer's weights, so its gemms share their biases: each
    Linear call is still one addmm in the half type on the Triton target, where the
    shared layer's six had each been an f32 gemm and an f32 add. Eager attention keeps
    the graph whole (CPU flash attention would cut it into one piece per layer); f16
    rather than the suite's bf16, which Triton's interpreter computes wrongly
    (docs/limits.md)."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))
    model = AlbertModel(AlbertConfig(
        num_hidden_layers=2, embedding_size=32, hidden_size=64, num_attention_heads=4,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=64,
        attn_implementation="eager", **TOKENS)).eval().half()
    # Linear calls of the eager forward: 6 a layer, the embeddings' projection, the pooler.
    calls = []
    hooks = [m.register_forward_hook(lambda *_: calls.append(1))
             for m in model.modules() if isinstance(m, torch.nn.Linear)]
    ids, mask = tiny_batch("cpu")
    with torch.no_grad():
        expected = model(ids, attention_mask=mask).last_hidden_state
    for hook in hooks:
        hook.remove()
    compiled = torch.compile(model, backend="mlir", fullgraph=True, options={
        "target": "triton", "fallback": False, "dump_dir": str(tmp_path / "dump")})
    with torch.no_grad():
        actual = compiled(ids, attention_mask=mask).last_hidden_state
    # Fused kernels round to half once where eager rounds after every op.
    torch.testing.assert_close(actual, expected, rtol=1e-2, atol=1e-2)
    assert_compiled()
    (host_file,) = tmp_path.glob("dump/*/*_host_program.py")
    host = host_file.read_text()
    assert host.count("torch.addmm(") == len(calls), host
    assert "matmul_in_f32" not in host, host

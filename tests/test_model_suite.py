"""The model suite (benchmarks/models/): its list, rows of tiny hf models under the mlir
backend judged as PyTorch's harness judges them, a generate row, and the suite's
timeout and resume."""

import json

import pytest
import torch

from benchmarks.models import catalog, hf, measure, report, suite
from benchmarks.models.generation import NEW_TOKENS
from benchmarks.models.runner import run_row


def test_list_names_45_forward_models_and_the_generate_rows():
    specs = catalog.load_catalog()
    forward = [s for s in specs if s.kind == "forward"]
    assert len(forward) >= 45
    assert len({s.name for s in forward}) == len(forward)
    assert {s.source for s in forward} == set(catalog.SOURCES)
    assert all(s.batch_size > 0 and s.size > 0 for s in specs)
    generate = {s.name for s in specs if s.kind == "generate"}
    assert {"hf_llama", "hf_gemma"} <= generate


@pytest.mark.parametrize("name", ["hf_gpt2", "hf_bert", "hf_convnext", "hf_mobilenet_v2"])
def test_tiny_model_passes_compiled(name):
    row = run_row(name, "mlir", tiny=True, warmup=1, repeats=0)
    assert row["status"] == "pass", row
    assert row["reference"] == "fp64"
    assert row["graphs_compiled"] >= 1, row


def test_tiny_model_on_the_triton_target_in_the_interpreter(monkeypatch, tmp_path):
    """Kernels run in Triton's interpreter (conftest sets TRITON_INTERPRET=1 before
    Triton loads). Graphs the Triton target cannot generate yet fall back with a reason:
    the row records them, and only the result must be right."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    row = run_row("hf_gpt2", "mlir", tiny=True, options={"target": "triton"}, warmup=1,
                  repeats=0)
    assert row["status"] == "pass", row
    print("fallback reasons on the Triton target:", row["fallback_reasons"])


def test_deberta_compiles_whole_on_the_triton_target(monkeypatch, tmp_path):
    """DeBERTa's attention: a mask over [1, S, S] that a kernel over [H, S, S] reads,
    and log-bucketed relative positions (log1p)."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    row = run_row("hf_deberta_v2", "mlir", tiny=True, options={"target": "triton"},
                  warmup=1, repeats=0)
    assert row["status"] == "pass", row
    assert row["graphs_compiled"] >= 1 and not row["fallback_reasons"], row


def test_generate_with_a_compiled_forward_picks_eagers_tokens():
    row = run_row("hf_llama", "mlir", kind="generate", tiny=True, warmup=1, repeats=0)
    assert row["status"] == "pass", row
    assert row["matching_tokens"] == NEW_TOKENS
    assert row["first_logits_same"]
    assert row["graphs_compiled"] >= 1, row


def test_verdict_takes_rounding_and_rejects_a_wrong_output():
    torch.manual_seed(0)
    fp64 = torch.randn(4, 64, dtype=torch.float64)
    eager = fp64.to(torch.bfloat16)
    rounded_otherwise = (fp64 + 1e-3 * torch.randn_like(fp64)).to(torch.bfloat16)
    wrong = eager.clone()
    wrong[0, :8] += 1.0
    assert measure.accurate([eager], [rounded_otherwise], [fp64], torch.bfloat16)
    assert not measure.accurate([eager], [wrong], [fp64], torch.bfloat16)
    assert not measure.accurate([eager], [wrong], None, torch.bfloat16)


def test_ratio_to_inductor_normalizes_by_each_rows_eager():
    def row(backend, speedup, status="pass"):
        return {"model": "m", "kind": "forward", "mode": "default", "backend": backend,
                "status": status, "speedup": speedup,
                "peak_memory": 100 if backend == "mlir" else 200}
    rows = [row("inductor", 4.0), row("mlir", 2.0)]
    report.add_derived(rows)
    assert rows[1]["vs_inductor"] == 0.5
    assert rows[1]["memory_vs_inductor"] == 0.5
    rows = [row("inductor", 4.0, "fail_accuracy"), row("mlir", 2.0)]
    report.add_derived(rows)
    assert "vs_inductor" not in rows[1]


def test_suite_records_a_timeout_and_skips_it_when_run_again(tmp_path):
    results = tmp_path / "results.jsonl"
    args = ["--models", "hf_gpt2", "--kinds", "forward", "--backends", "mlir", "--tiny",
            "--timeout", "1", "--results", str(results)]
    assert suite.run(suite.parse_args(args)) == 0
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert (row["model"], row["status"], row["backend"]) == ("hf_gpt2", "timeout", "mlir")
    assert suite.run(suite.parse_args(args)) == 0
    assert len(results.read_text().splitlines()) == 1


def test_every_hf_entry_has_a_config_class_and_a_model_class():
    transformers = pytest.importorskip("transformers")
    for name, entry in hf.MODELS.items():
        assert hasattr(transformers, entry.config), name
        assert hasattr(transformers, entry.model), name
        assert entry.inputs in ("text", "seq2seq", "image", "speech"), name

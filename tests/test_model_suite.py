"""The model suite (benchmarks/models/): its list, rows of tiny hf models under the mlir
backend judged as PyTorch's harness judges them, a generate row, train rows on both
targets, and the suite's timeout and resume."""

import json
import os
import subprocess
import time

import pytest
import torch
import triton
import triton.language as tl

from benchmarks.models import catalog, hf, measure, report, suite, train
from benchmarks.models.generation import NEW_TOKENS
from benchmarks.models.interpreter_rounding import rounding_bfloat16_to_nearest_even
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


def test_deberta_over_rows_longer_than_a_block_compiles_whole(monkeypatch, tmp_path):
    """At 64 tokens, 4 heads, DeBERTa's masked scores are a looped row of [4, 64, 64]
    points that also stores the [1, 64, 64] mask: its chunks store the mask too."""
    from conftest import assert_compiled

    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)
    model = hf.build_model("hf_deberta_v2", tiny=True).eval()
    ids = torch.randint(hf.SPECIAL_TOKENS, hf.TINY_VOCAB, (2, 64))
    compiled = torch.compile(model, backend="mlir",
                             options={"target": "triton", "fallback": False})
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids).logits, model(ids).logits)
    assert_compiled()


def test_debertas_transposed_position_scores_are_read_by_a_tile_of_rows(monkeypatch, tmp_path):
    """DeBERTa's attention scores add p2c[bh, key, bucket(query - key)] over a query's
    row of keys: a gather across memory along the row, so its kernel holds a tile of
    consecutive queries (row_tiles.py); the forward still matches eager's."""
    from conftest import assert_compiled

    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    model = hf.build_model("hf_deberta_v2", tiny=True).eval()
    ids = torch.randint(hf.SPECIAL_TOKENS, hf.TINY_VOCAB, (2, 16))
    compiled = torch.compile(model, backend="mlir", options={
        "target": "triton", "fallback": False, "dump_dir": str(tmp_path / "dump")})
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids).logits, model(ids).logits)
    assert_compiled()
    kernels = next(tmp_path.glob("dump/*/*_triton_kernels.py")).read_text().split("@triton.jit")
    tiles = [kernel for kernel in kernels if "tl.arange(0, BLOCK)[None, :]" in kernel]
    # The softmax over keys, with the gathers' bounds checks.
    assert tiles and all("tl.exp(" in kernel and "tl.device_assert(" in kernel
                         for kernel in tiles)


def test_generate_with_a_compiled_forward_picks_eagers_tokens():
    row = run_row("hf_llama", "mlir", kind="generate", tiny=True, warmup=1, repeats=0)
    assert row["status"] == "pass", row
    assert row["matching_tokens"] == NEW_TOKENS
    assert row["first_logits_same"]
    assert row["graphs_compiled"] >= 1, row


def test_list_names_20_train_models_of_every_source_and_a_few_fp32_rows():
    specs = [s for s in catalog.load_catalog() if s.kind == "train"]
    autocast = {s.name for s in specs if s.dtype is None}
    fp32 = {s.name for s in specs if s.dtype == "fp32"}
    assert len(autocast) >= 20
    assert {s.source for s in specs} == set(catalog.SOURCES)
    assert fp32 and fp32 <= autocast
    assert "hf_dinov2" not in autocast  # no loss head: hf.training_labels refuses it


def test_a_train_row_pinned_to_fp32_runs_once_in_an_fp32_run():
    def dtypes(*argv):
        args = suite.parse_args(["--kinds", "train", "--models", "hf_bert", "--backends",
                                 "mlir", *argv])
        return sorted(task.dtype for task in suite.tasks_of(args))
    assert dtypes() == ["fp32"]  # the CPU's default dtype
    assert dtypes("--dtype", "bf16") == ["bf16", "fp32"]


@pytest.mark.parametrize("name, dtype, options", [
    ("hf_bert", "fp32", None),
    # bf16 autocast, kernels in Triton's interpreter (conftest sets TRITON_INTERPRET=1)
    ("hf_gpt2", "bf16", {"target": "triton"}),
])
def test_tiny_train_row_compiles_forward_and_backward(name, dtype, options, monkeypatch,
                                                      tmp_path):
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    row = run_row(name, "mlir", dtype=dtype, kind="train", options=options, tiny=True,
                  warmup=1, repeats=0)
    assert row["status"] == "pass", row
    assert row["reference"] == "fp64"
    assert row["forward_graphs_compiled"] >= 1 and row["backward_graphs_compiled"] >= 1, row
    assert report.nothing_eager(row), row["fallback_reasons"]


def test_train_verdict_names_a_wrong_gradient():
    torch.manual_seed(0)
    fp64 = {"loss": torch.tensor(2.0, dtype=torch.float64),
            "grad['w.grad']": torch.randn(64, dtype=torch.float64)}
    eager = {name: t.float() for name, t in fp64.items()}
    wrong = dict(eager, **{"grad['w.grad']": eager["grad['w.grad']"] * 1.5})
    assert train.inaccurate(eager, dict(eager), fp64, "cpu") == []
    assert train.inaccurate(eager, wrong, fp64, "cpu") == ["grad['w.grad']"]


def test_train_rows_run_without_dropout():
    """Two forward calls of a model in train mode give the same output: dropout, in
    its modules and in the attention probabilities the config holds, is off."""
    torch.manual_seed(0)
    model = train.without_dropout(hf.build_model("hf_bert", tiny=True).train())
    ids = hf.token_ids(model.config, 2, 16, "cpu")
    torch.testing.assert_close(model(ids).logits, model(ids).logits, rtol=0, atol=0)


@triton.jit
def _stored_as_bfloat16(source, destination, size: tl.constexpr):
    offsets = tl.arange(0, size)
    tl.store(destination + offsets, tl.load(source + offsets).to(tl.bfloat16))


def test_a_row_runs_the_interpreters_bfloat16_conversion_rounding_to_nearest_even():
    """Triton's interpreter truncates float32 to bfloat16 (a GPU rounds to nearest
    even): a row, and only a row, runs with the GPU's rounding."""
    x = torch.randn(1024)

    def converted() -> torch.Tensor:
        y = torch.empty(1024, dtype=torch.bfloat16)
        _stored_as_bfloat16[(1,)](x, y, 1024)
        return y
    with rounding_bfloat16_to_nearest_even():
        assert torch.equal(converted(), x.bfloat16())
    assert not torch.equal(converted(), x.bfloat16())  # Triton's own, outside a row


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
        return {"model": "m", "kind": "forward", "dtype": "bf16", "mode": "default",
                "backend": backend, "status": status, "speedup": speedup,
                "peak_memory": 100 if backend == "mlir" else 200}
    rows = [row("inductor", 4.0), row("mlir", 2.0)]
    report.add_derived(rows)
    assert rows[1]["vs_inductor"] == 0.5
    assert rows[1]["memory_vs_inductor"] == 0.5
    rows = [row("inductor", 4.0, "fail_accuracy"), row("mlir", 2.0)]
    report.add_derived(rows)
    assert "vs_inductor" not in rows[1]


def test_a_row_run_in_several_processes_reports_its_median_one(tmp_path):
    """suite --processes 3: three rows of one key, each its own process; the report
    takes the one of median tokens/s with the range, and a failed run shows."""
    args = suite.parse_args(["--models", "hf_llama", "--kinds", "generate", "--backends",
                             "mlir", "--processes", "3"])
    assert [task.process for task in suite.tasks_of(args)] == [1, 2, 3]

    def run(process, tokens, status="pass"):
        return {"model": "hf_llama", "kind": "generate", "backend": "mlir",
                "mode": "default", "device": "cuda", "dtype": "bf16", "tiny": False,
                "options": None, "process": process, "status": status,
                "tokens_per_s": tokens}
    results = tmp_path / "rows.jsonl"
    results.write_text("".join(json.dumps(run(p, t)) + "\n"
                               for p, t in ((1, 900.0), (2, 1400.0), (3, 1100.0))))
    (row,) = report.load_rows(results)
    assert (row["process"], row["tokens_per_s"], row["measure_range"]) == (3, 1100.0, (900.0, 1400.0))
    assert "1100 (900 to 1400, 3 processes)" == report.measured_cell(row, "tokens_per_s", ".0f")
    with open(results, "a") as out:
        out.write(json.dumps(run(2, None, "fail_to_run")) + "\n")  # a rerun of process 2
    (row,) = report.load_rows(results)
    assert row["status"] == "fail_to_run" and row["processes"] == 3


def test_a_finished_row_records_which_of_its_processes_it_is(tmp_path):
    """The runner writes its row without the process number, which only the suite
    knows: without it, the three processes of a row were one key, the report showed the
    last one written, and a rerun ran processes 2 and 3 again."""
    from types import SimpleNamespace
    args = suite.parse_args(["--models", "hf_llama", "--kinds", "generate", "--backends",
                             "mlir", "--processes", "3"])
    task = suite.tasks_of(args)[1]
    row_file = tmp_path / "row.json"
    written = task.fields(args) | {"phase": "done", "status": "pass", "tokens_per_s": 1000.0}
    del written["process"]
    row_file.write_text(json.dumps(written))
    process = SimpleNamespace(row_file=row_file, fields=task.fields(args))
    row = suite.Process.row(process, timed_out=False)
    assert (row["process"], row["tokens_per_s"]) == (2, 1000.0)
    assert suite.row_key(row) == suite.row_key(task.fields(args))


def test_a_train_row_runs_nothing_eagerly_only_with_a_compiled_backward():
    row = {"model": "m", "kind": "train", "backend": "mlir", "graphs_compiled": 2,
           "forward_graphs_compiled": 2, "backward_graphs_compiled": 0, "graphs_fallback": 0,
           "fallback_reasons": []}
    assert not report.nothing_eager(row)
    assert report.nothing_eager(row | {"backward_graphs_compiled": 1})


def test_suite_records_a_timeout_and_skips_it_when_run_again(tmp_path):
    results = tmp_path / "results.jsonl"
    args = ["--models", "hf_gpt2", "--kinds", "forward", "--backends", "mlir", "--tiny",
            "--timeout", "1", "--results", str(results)]
    assert suite.run(suite.parse_args(args)) == 0
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert (row["model"], row["status"], row["backend"]) == ("hf_gpt2", "timeout", "mlir")
    assert suite.run(suite.parse_args(args)) == 0
    assert len(results.read_text().splitlines()) == 1


def test_suite_records_a_row_whose_process_dies_before_the_budget(tmp_path, monkeypatch):
    # A crash is a row (the next command must not run it again), not a budget stop.
    monkeypatch.setattr(suite.sys, "executable", "false")
    results = tmp_path / "results.jsonl"
    args = ["--models", "hf_gpt2", "--kinds", "forward", "--backends", "mlir", "--tiny",
            "--budget", "600", "--results", str(results)]
    assert suite.run(suite.parse_args(args)) == 0
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["status"] == "eager_fail" and "exited with 1" in row["error"]


@pytest.mark.parametrize("grace, recorded", [(0, 0), (60, 1)])
def test_a_row_running_at_the_budget_is_recorded_only_if_it_ends_within_the_grace(
        tmp_path, monkeypatch, grace, recorded):
    """A row still running at --budget is stopped and left to the next command, unless it
    ends within --grace: the work of the rows in flight is not thrown away."""
    slow_runner = tmp_path / "slow_runner"
    slow_runner.write_text("#!/bin/sh\nsleep 2\nexit 1\n")
    slow_runner.chmod(0o755)
    monkeypatch.setattr(suite.sys, "executable", str(slow_runner))
    results = tmp_path / "results.jsonl"
    args = ["--models", "hf_gpt2", "--kinds", "forward", "--backends", "mlir", "--tiny",
            "--budget", "0.5", "--grace", str(grace), "--results", str(results)]
    assert suite.run(suite.parse_args(args)) == 1 - recorded
    rows = results.read_text().splitlines() if results.exists() else []
    assert len(rows) == recorded


def test_suite_starts_another_row_only_while_the_host_has_memory_to_spare(tmp_path,
                                                                          monkeypatch):
    """With the host's available memory below --reserve-gb, rows run one at a time
    (the first always starts); twelve train rows at once had two killed by the OOM
    killer on a 128 GiB host."""
    monkeypatch.setattr(suite.sys, "executable", "false")
    monkeypatch.setattr(suite, "available_memory_gb", lambda: 10.0)
    unfinished, beside = [], []

    class Recorded(suite.Process):
        def __init__(self, *args, **kwargs):
            beside.append(len(unfinished))
            super().__init__(*args, **kwargs)
            unfinished.append(self)

        def remove(self):
            unfinished.remove(self)
            super().remove()
    monkeypatch.setattr(suite, "Process", Recorded)
    args = ["--models", "hf_gpt2,hf_bert", "--kinds", "forward", "--backends", "mlir",
            "--tiny", "--jobs", "2", "--reserve-gb", "24", "--results",
            str(tmp_path / "results.jsonl")]
    assert suite.run(suite.parse_args(args)) == 0
    assert beside == [0, 0]  # each row started with no other running


def test_every_hf_entry_has_a_config_class_and_a_model_class():
    transformers = pytest.importorskip("transformers")
    for name, entry in hf.MODELS.items():
        assert hasattr(transformers, entry.config), name
        assert hasattr(transformers, entry.model), name
        assert entry.inputs in ("text", "seq2seq", "image", "speech"), name


def _becomes_stopped(pid: int, stopped: bool) -> bool:
    """Whether process `pid` is (or is not) stopped within a second: a signal lands after
    kill() returns."""
    for _ in range(50):
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        if (state == "T") == stopped:
            return True
        time.sleep(0.02)
    return False


def test_timing_pauses_the_suites_other_rows_and_resumes_them(tmp_path, monkeypatch):
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        peers = tmp_path / "peers"
        peers.write_text(f"{other.pid} {os.getpgrp()}")
        monkeypatch.setenv(measure.PEERS_ENV, str(peers))
        with measure.others_paused():
            assert _becomes_stopped(other.pid, True)
        assert _becomes_stopped(other.pid, False)
        medians = measure.timed(lambda: None, lambda: None, "cpu", 2)
        assert all(m is not None for m in medians) and _becomes_stopped(other.pid, False)
    finally:
        other.kill()
        other.wait()


def test_suite_spreads_rows_over_the_cards_it_is_given(tmp_path, monkeypatch):
    # Each row process sees one card: the least loaded one when it starts.
    seen = []

    class Recorded:
        def __init__(self, command, env, **kwargs):
            seen.append(env["CUDA_VISIBLE_DEVICES"])
            self.pid, self.returncode = os.getpid(), 1

        def poll(self):
            return None if len(seen) < 3 else 1

    monkeypatch.setattr(suite.subprocess, "Popen", Recorded)
    monkeypatch.setattr(suite.os, "killpg", lambda *args: None)
    monkeypatch.setattr(suite, "available_memory_gb", lambda: float("inf"))
    args = ["--device", "cuda", "--gpus", "2", "--jobs", "3", "--models", "hf_gpt2,hf_bert",
            "--kinds", "forward", "--modes", "default", "--commit", "test",
            "--results", str(tmp_path / "r.jsonl")]
    suite.run(suite.parse_args(args))
    assert seen[:3] == ["0", "1", "0"]


def test_the_profile_tool_runs_each_model_and_backend_in_a_process_of_its_own(monkeypatch):
    """A backend measured after another in one process ran slower (vit_b_16's train
    step on an H200: mlir 26.7 ms after Inductor, 16.9 ms alone): the profile tool
    starts one process per model and backend, as the suite does per row."""
    from benchmarks.models import profile
    launched = []
    monkeypatch.setattr(profile.subprocess, "run",
                        lambda command, check: launched.append(command[3:]))
    profile.main(["hf_bert", "hf_vit", "--tiny", "--backends", "eager,mlir"])
    assert launched == [[model, "--tiny", "--backends", "eager,mlir", "--backends", backend]
                        for model in ("hf_bert", "hf_vit") for backend in ("eager", "mlir")]


def test_shared_caches_run_one_mode_after_the_other_and_mark_the_later_warm(tmp_path,
                                                                          monkeypatch):
    """--share-caches: the modes of one model and backend compile into one set of cache
    directories, never at once, and the later row says its first call found them filled
    (the report leaves it out of the first-call mean)."""
    runner = tmp_path / "runner"
    runner.write_text(f'#!/bin/sh\necho "start $TESSEL_CACHE_DIR" >> {tmp_path}/log\n'
                      f'mkdir -p "$TESSEL_CACHE_DIR"\nsleep 1\necho end >> {tmp_path}/log\n'
                      'exit 1\n')
    runner.chmod(0o755)
    monkeypatch.setattr(suite.sys, "executable", str(runner))
    results = tmp_path / "results.jsonl"
    args = ["--models", "hf_gpt2", "--kinds", "forward", "--backends", "mlir", "--tiny",
            "--device", "cuda", "--jobs", "2", "--share-caches", "--results", str(results)]
    assert suite.run(suite.parse_args(args)) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["mode"], r["warm_caches"]) for r in rows] == [("default", False),
                                                            ("reduce-overhead", True)]
    start, first, end, start_again, second, end_again = (tmp_path / "log").read_text().split()
    assert (start, end, start_again, end_again) == ("start", "end", "start", "end")
    assert first == second

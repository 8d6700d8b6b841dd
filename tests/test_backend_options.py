"""Backend registration, modes and options, fallback, errors with repros, the dump directory."""

import re
import subprocess
import sys

import pytest
import torch
import torch._dynamo

import tessel
from conftest import assert_compiled


def zeta_plus_one(x):
    # torch-mlir has no lowering for aten.special_zeta
    return torch.special.zeta(x, 2.0) + 1


def test_backend_registered_by_entry_point_without_importing_tessel():
    code = ("import sys, torch, torch._dynamo\n"
            "assert 'mlir' in torch._dynamo.list_backends()\n"
            "f = torch.compile(lambda x: x.sin() + 1, backend='mlir')\n"
            "x = torch.linspace(-1, 1, 4)\n"
            "torch.testing.assert_close(f(x), x.sin() + 1)\n"
            "assert 'tessel' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_modes_are_accepted(mode):
    fn = torch.compile(lambda x: x * 2, backend="mlir", mode=mode)
    x = torch.randn(3)
    torch.testing.assert_close(fn(x), x * 2)
    assert_compiled()


@pytest.mark.parametrize("mode, options, message", [
    ("fastest", None, "unknown mode 'fastest'; valid modes are: default, reduce-overhead"),
    (None, {"dumpdir": "/tmp"}, "unknown option 'dumpdir'; valid options are: check_accuracy, compile_in_worker"),
    (None, {"fallback": "no"}, "option 'fallback' expects bool, got str"),
    (None, {"opt_level": 7}, "option 'opt_level' got 7; valid values are: 0, 1, 2, 3"),
    (None, {"target": "tpu"}, "option 'target' got 'tpu'; valid values are: 'auto', 'cpu'"),
])
def test_bad_mode_or_option_is_a_clear_error(mode, options, message):
    kwargs = {"options": options} if options else {"mode": mode}
    fn = torch.compile(lambda x: x + 1, backend="mlir", **kwargs)
    with pytest.raises(Exception, match=message.replace("(", r"\(")):
        fn(torch.randn(2))


def test_list_options_describes_every_option():
    options = tessel.list_options()
    assert set(options) == {"fallback", "dump_dir", "target", "pipeline", "opt_level",
                            "compile_in_worker", "check_accuracy", "mode", "profile_kernels",
                            "partitioner"}
    for name, description in options.items():
        assert description["doc"], name
        assert "default" in description


def test_unsupported_op_runs_eagerly_between_compiled_pieces_with_one_warning():
    x = torch.rand(5) + 1
    fn = torch.compile(zeta_plus_one, backend="mlir")
    with pytest.warns(UserWarning, match="aten.special_zeta") as caught:
        torch.testing.assert_close(fn(x), zeta_plus_one(x))
    assert len([w for w in caught if "tessel" in str(w.message)]) == 1
    counters = tessel.stats()
    # zeta runs eagerly; the `+ 1` after it is a compiled piece.
    assert counters["graphs_split"] == 1 and counters["graphs_fallback"] == 0
    assert counters["graphs_compiled"] == 1
    assert "special_zeta" in counters["fallback_reasons"][0]


def test_split_compiles_the_pieces_on_both_sides():
    def fn(x):
        y = torch.sin(x) * 2
        z = torch.special.zeta(y.abs() + 2, 2.0)
        return torch.tanh(z) + y

    x = torch.randn(8)
    with pytest.warns(UserWarning, match="special_zeta"):
        torch.testing.assert_close(torch.compile(fn, backend="mlir")(x), fn(x))
    assert tessel.stats()["graphs_compiled"] == 2 and tessel.stats()["graphs_split"] == 1


def test_complex_input_falls_back():
    x = torch.randn(3, dtype=torch.complex64)
    fn = torch.compile(lambda t: t * 2, backend="mlir")
    with pytest.warns(UserWarning, match="input arg0_1 has dtype torch.complex64"):
        torch.testing.assert_close(fn(x), x * 2)
    assert tessel.stats()["graphs_fallback"] == 1


def test_sparse_input_runs_eagerly():
    # Dynamo itself does not capture sparse tensors, so no graph reaches tessel.
    x = torch.randn(4, 4).to_sparse()
    fn = torch.compile(lambda t: t * 2, backend="mlir")
    torch.testing.assert_close(fn(x).to_dense(), (x * 2).to_dense())
    assert tessel.stats()["graphs_compiled"] == 0


def test_fallback_false_raises_naming_the_op_and_writes_a_repro(tmp_path):
    fn = torch.compile(zeta_plus_one, backend="mlir",
                       options={"fallback": False, "dump_dir": str(tmp_path)})
    with pytest.raises(Exception, match="aten.special_zeta") as raised:
        fn(torch.rand(5) + 1)
    assert "tessel-opt" in str(raised.value)
    (replay,) = tmp_path.glob("*/repro/replay.sh")
    (ir_file,) = tmp_path.glob("*/repro/*.input.mlir")
    assert "torch.aten.special_zeta" in ir_file.read_text()
    command = replay.read_text().splitlines()[-1]
    result = subprocess.run(command, shell=True, capture_output=True, text=True)
    assert result.returncode != 0
    assert "special_zeta" in result.stderr


def test_dump_dir_holds_every_stage_and_llvm_ir(tmp_path):
    fn = torch.compile(lambda x, y: torch.relu(x @ y) + 1, backend="mlir",
                       options={"dump_dir": str(tmp_path)})
    fn(torch.randn(4, 3), torch.randn(3, 5))
    assert_compiled()
    (graph_dir,) = tmp_path.iterdir()
    names = sorted(p.name for p in graph_dir.iterdir())
    assert names == ["00_fx_graph.py", "01_decomposed_graph.py", "02_torch.mlir",
                     "03_linalg.mlir", "04_cpu-fuse.mlir", "05_cpu-bufferize.mlir",
                     "06_cpu-lower-to-llvm.mlir", "07_host_program.py"]
    llvm_ir = (graph_dir / "06_cpu-lower-to-llvm.mlir").read_text()
    assert "llvm.func @main" in llvm_ir and "linalg." not in llvm_ir
    assert "torch.aten.mm" in (graph_dir / "02_torch.mlir").read_text()
    assert "def host(" in (graph_dir / "07_host_program.py").read_text()


def test_tessel_opt_replays_the_cpu_pipeline_exactly(tmp_path):
    fn = torch.compile(lambda x: torch.softmax(x, dim=-1) * 2, backend="mlir",
                       options={"dump_dir": str(tmp_path)})
    fn(torch.randn(4, 8))
    (graph_dir,) = tmp_path.iterdir()
    replay = subprocess.run(
        [sys.executable, "-m", "tessel.passes.opt", str(graph_dir / "03_linalg.mlir"), "-p", "cpu"],
        capture_output=True, text=True, check=True)
    assert replay.stdout.strip() == (graph_dir / "06_cpu-lower-to-llvm.mlir").read_text().strip()


def test_custom_pipeline_option():
    pipeline = "builtin.module(cpu-fuse,cpu-bufferize,cpu-lower-to-llvm)"
    fn = torch.compile(lambda x: x.exp() - 1, backend="mlir", options={"pipeline": pipeline})
    x = torch.randn(6)
    torch.testing.assert_close(fn(x), x.exp() - 1)
    assert_compiled()


def test_broken_custom_pipeline_falls_back_with_a_repro():
    fn = torch.compile(lambda x: x.exp() - 1, backend="mlir", options={"pipeline": "cpu-fuse"})
    x = torch.randn(6)
    with pytest.warns(UserWarning, match="tessel"):
        torch.testing.assert_close(fn(x), x.exp() - 1)
    assert tessel.stats()["graphs_fallback"] == 1


def test_compile_seconds_by_stage_and_reset():
    torch.compile(lambda x: x + 1, backend="mlir")(torch.randn(3))
    seconds = tessel.stats()["compile_seconds"]
    assert {"import", "linalg", "cpu-fuse", "llvm-jit"} <= set(seconds)
    tessel.reset_stats()
    assert tessel.stats()["graphs_compiled"] == 0 and tessel.stats()["compile_seconds"] == {}


# bufferizing a function that returns one value twice, with results hoisted to
# out-params and no distinct-results pass first, crashes MLIR (SIGSEGV).
CRASHING_PIPELINE = (
    "builtin.module(one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{modify-public-functions hoist-static-allocs})")


def returns_one_value_twice(x):
    y = x + 1
    return y, y.clone()  # the clone folds away: the kernel returns y twice


def test_native_crash_in_compile_worker_becomes_a_fallback(tmp_path):
    fn = torch.compile(returns_one_value_twice, backend="mlir",
                       options={"pipeline": CRASHING_PIPELINE, "dump_dir": str(tmp_path)})
    x = torch.randn(4, 4)
    with pytest.warns(UserWarning, match=r"compile worker crashed \(SIGSEGV\)"):
        result = fn(x)
    for actual, expected in zip(result, returns_one_value_twice(x)):
        torch.testing.assert_close(actual, expected)
    assert "SIGSEGV" in tessel.stats()["fallback_reasons"][0]
    assert list(tmp_path.glob("*/repro/pipeline.input.mlir"))
    # The worker restarts for the next graph.
    torch.compile(lambda t: t * 2, backend="mlir")(x)
    assert tessel.stats()["graphs_compiled"] == 1


def test_fallback_false_reports_the_crash():
    fn = torch.compile(returns_one_value_twice, backend="mlir",
                       options={"pipeline": CRASHING_PIPELINE, "fallback": False})
    with pytest.raises(Exception, match="compile worker crashed"):
        fn(torch.randn(4, 4))


def test_explain_reports_graphs_kernels_and_what_runs_eagerly():
    def fn(x, w):
        y = torch.softmax(x @ w, -1)
        return torch.special.zeta(y + 2, 2.0).sum(-1)

    with pytest.warns(UserWarning, match="special_zeta"):
        report = tessel.explain(fn, torch.randn(8, 16), torch.randn(16, 32))
    names = [graph.name for graph in report.graphs]
    assert len(names) == 3 and names[0].endswith("_inference")
    pieces = report.graphs[1:]
    assert "gemm" in pieces[0].kernels            # x @ w as a library call
    assert any("special_zeta" in reason for reason in report.fallback_reasons)
    assert report.stats["graphs_split"] == 1 and report.stats["graphs_compiled"] == 2
    assert "runs eagerly" in str(report)


def test_check_accuracy_passes_and_flags_a_wrong_pipeline(tmp_path):
    x = torch.randn(16)
    fn = torch.compile(lambda t: t.exp() + 1, backend="mlir", options={"check_accuracy": True})
    torch.testing.assert_close(fn(x), x.exp() + 1)
    assert tessel.stats()["accuracy_failures"] == 0
    # A user pipeline that drops the exp (canonicalize cannot: rewrite it to identity by
    # replacing math.exp with its argument through a registered test pass).
    tessel.register_pass(DropExpPass)
    wrong = torch.compile(lambda t: t.exp() + 2, backend="mlir", options={
        "check_accuracy": True, "dump_dir": str(tmp_path),
        "pipeline": "builtin.module(drop-exp,cpu)"})
    with pytest.warns(UserWarning, match="differs from eager"):
        result = wrong(x)
    torch.testing.assert_close(result, x.exp() + 2)  # the eager result is returned
    assert tessel.stats()["accuracy_failures"] == 1


@__import__("dataclasses").dataclass(frozen=True)
class DropExpPass(tessel.ModulePass):
    """drop-exp: a deliberately wrong pass (exp(x) -> x) for the accuracy check test."""

    name = "drop-exp"

    def run(self, module):
        from tessel import ir
        for op in ir.ops_where(module, lambda op: op.name == "math.exp"):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()


def _divisions_become_multiplications(self, module):
    """A deliberately wrong reciprocal-division (x / d -> x * d), for the test below."""
    from torch_mlir.dialects import arith

    from tessel import ir
    for op in ir.ops_where(module, lambda op: op.name == "arith.divf"):
        with ir.InsertionPoint(op), op.location:
            product = arith.MulFOp(op.operands[0], op.operands[1])
        op.results[0].replace_all_uses_with(product.result)
        op.erase()


def test_check_accuracy_names_the_first_wrong_kernel(tmp_path, monkeypatch):
    """A wrong pass in the default pipeline: the warning names the first kernel whose
    result differs from eager (not the correct one before it), and its IR and replay
    command are written next to the graph's dump."""
    from tessel.passes.reciprocal_division import ReciprocalDivisionPass
    monkeypatch.setattr(ReciprocalDivisionPass, "run", _divisions_become_multiplications)

    def fn(t):
        scores = t.exp() @ t.T          # kernel 0 (exp, right), then a library gemm
        return torch.softmax(scores, dim=-1) + 1   # kernel 1: its division is wrong

    x = torch.randn(8, 8)
    compiled = torch.compile(fn, backend="mlir", options={
        "check_accuracy": True, "dump_dir": str(tmp_path),
        "compile_in_worker": False})    # the patched pass runs in this process
    with pytest.warns(UserWarning) as caught:
        result = compiled(x)
    torch.testing.assert_close(result, fn(x))  # the eager result is returned
    (message,) = [str(w.message) for w in caught if "differs from eager" in str(w.message)]
    # The exp kernel and the gemm are right: the first wrong one computes the softmax's
    # sum (node add), where the division is.
    culprit = re.search(r"first differing kernel: (main_kernel_\d+) \(computes FX node add,",
                        message)
    assert culprit, message
    (kernel_ir,) = tmp_path.glob(f"*_inference/accuracy/{culprit.group(1)}.mlir")
    assert "tkern.kernel" in kernel_ir.read_text()
    assert f"tessel-opt {kernel_ir} -p cpu-bufferize,cpu-lower-to-llvm" in message


def test_profile_kernels_times_each_kernel_of_every_call():
    """Each kernel gets a label naming what it computes, and a time for every call; the
    marks change nothing in the results."""
    from tessel.targets.cpu import kernel_timer

    def fn(x, w):
        return torch.softmax(x @ w, dim=-1).sin() + x.sum(-1, keepdim=True)

    x, w = torch.randn(32, 64), torch.randn(64, 64)
    compiled = torch.compile(fn, backend="mlir", options={"profile_kernels": True})
    tessel.reset_stats()
    kernel_timer.reset()
    for _ in range(3):
        torch.testing.assert_close(compiled(x, w), fn(x, w))
    assert_compiled()
    timed = kernel_timer.times()
    assert len(timed) == tessel.stats()["kernels"]
    assert all(entry.calls == 3 and entry.seconds > 0 for entry in timed)
    labels = [entry.label for entry in timed]
    assert "library_call gemm [mulf, addf, matmul] (32x64xf32, 64x64xf32) -> (32x64xf32)" in labels
    assert any(label.startswith("main_kernel_") and "-> (32x64xf32)" in label for label in labels)

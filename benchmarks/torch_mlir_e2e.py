"""torch-mlir's end-to-end test suite run against tessel, on demand (not in CI).

Each of the suite's tests (a small torch.nn.Module and the calls made on it) runs as
torch-mlir's framework runs it for a backend: an eager golden trace first
(`generate_golden_trace`), then the module compiled with `torch.compile(module,
backend="mlir")` (CPU target, default options, fallback on, as a user runs it) called on
the same inputs, its outputs judged by the framework's own report (`SingleTestReport`:
allclose at rtol 1e-3, atol 1e-7, dtypes and shapes equal). Per test: pass; pass_fp64
(off eager's, and as close as eager's to a float64 run); wrong; error (the exception's
type and first line, and whether it reached the caller as Dynamo's
BackendCompilerFailed); timeout; crash. Reported apart: eager_error (the eager reference
itself raised), random (eager's own outputs differ from seed to seed), dynamo_error
(Dynamo raises it with no compiler behind it), and the tests torch-mlir expects to fail
in every config (`COMMON_TORCH_MLIR_LOWERING_XFAILS`), which run too.

The suite's source is not part of tessel: `--source` names the python directory of a
torch-mlir checkout (`projects/pt1/python`). Tests run one after another in a worker
process, restarted after a crash or a timeout, so one test cannot stop the run; every
result is appended to the JSONL file as it comes, and the markdown report is written
from that file at the end.

    python -m benchmarks.torch_mlir_e2e --source /tmp/torch-mlir/projects/pt1/python \
        --source-commit 0029fc2e [--filter 'Softmax'] [--timeout 300]
"""

from __future__ import annotations

import argparse
import ast
import collections
import datetime
import importlib
import inspect
import itertools
import json
import multiprocessing
import re
import sys
import time
import types
import warnings
from multiprocessing.connection import Connection
from pathlib import Path

from benchmarks.models.measure import environment
from benchmarks.models.suite import git_commit, shard_arg
from benchmarks.run import table

RESULTS = Path(__file__).resolve().parent / "results" / "torch_mlir_e2e_cpu.jsonl"
COUNTED_STATUSES = ("pass", "pass_fp64", "wrong", "error", "timeout", "crash")
# Listed apart: eager raised; the outputs are random samples; Dynamo raised with no
# compiler behind it.
APART_STATUSES = ("eager_error", "random", "dynamo_error")
# Seconds a worker may take to start and import the suite before its first test.
START_SECONDS = 300


def import_suite(source: str) -> tuple[dict, dict]:
    """The suite's tests by name, imported from `source`, and the suite modules that
    could not be imported (name: error), such as vision_models without torchvision.
    The modules are those `register_all_tests` imports, read from its source and
    imported one by one, so that one missing package costs only its module's tests.
    torch-mlir's framework imports the `multiprocess` package (a fork of
    multiprocessing) for its own parallel runner, which this runner does not use:
    where that package is missing, a stand-in that only satisfies the import takes
    its place."""
    if "multiprocess" not in sys.modules:
        try:
            import multiprocess  # noqa: F401
        except ImportError:
            stand_in = types.ModuleType("multiprocess")
            stand_in.set_start_method = lambda *args, **kwargs: None
            stand_in.cpu_count = multiprocessing.cpu_count
            sys.modules["multiprocess"] = stand_in
    sys.path.insert(0, source)
    from torch_mlir_e2e_test import test_suite
    from torch_mlir_e2e_test.registry import GLOBAL_TEST_REGISTRY

    registering = next(node for node in ast.parse(inspect.getsource(test_suite)).body
                       if isinstance(node, ast.FunctionDef) and node.name == "register_all_tests")
    missing = {}
    for node in ast.walk(registering):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            for alias in node.names:
                try:
                    importlib.import_module(f"{test_suite.__name__}.{alias.name}")
                except ImportError as error:
                    missing[alias.name] = f"{type(error).__name__}: {error}"
    return {test.unique_name: test for test in GLOBAL_TEST_REGISTRY}, missing


def expected_failures() -> set[str]:
    """Tests torch-mlir lists as failing before any backend, in every config."""
    from torch_mlir_e2e_test.test_suite import COMMON_TORCH_MLIR_LOWERING_XFAILS

    return set(COMMON_TORCH_MLIR_LOWERING_XFAILS)


def tessel_config(dynamic: bool | None):
    """torch-mlir's TestConfig for tessel: `compile` wraps the module in torch.compile
    with the mlir backend (`dynamic` as torch.compile takes it); `run` calls it on each
    traced call's inputs (fresh clones, so that a module that writes its inputs leaves
    the golden trace's alone)."""
    import torch
    from torch_mlir_e2e_test.framework import (
        TestConfig,
        TraceItem,
        clone_torch_script_value,
    )

    from tessel.frontend.backend import mlir_backend

    class TesselTestConfig(TestConfig):
        def compile(self, program, verbose: bool = False):
            return torch.compile(program, backend=mlir_backend, dynamic=dynamic)

        def run(self, artifact, trace):
            result = []
            for item in trace:
                method = artifact if item.symbol == "forward" else getattr(artifact, item.symbol)
                output = method(*clone_torch_script_value(item.inputs))
                result.append(TraceItem(symbol=item.symbol, inputs=item.inputs, output=output))
            return result

    return TesselTestConfig()


def first_line(text: str) -> str:
    return next((line.strip() for line in text.strip().splitlines() if line.strip()), "")[:300]


def error_fields(error: Exception) -> dict:
    """An exception as a result records it: for Dynamo's BackendCompilerFailed, the
    backend's own exception inside it (its first line says only which backend raised)."""
    from torch._dynamo.exc import BackendCompilerFailed

    cause = error.inner_exception if isinstance(error, BackendCompilerFailed) else error
    return {"error_type": type(cause).__name__, "error": first_line(str(cause)),
            "backend_compiler_failed": isinstance(error, BackendCompilerFailed)}


def eager_runs(test, golden, seeds) -> list:
    """The golden trace's calls run eagerly again on a fresh module, once per seed, each
    as a trace."""
    import torch
    from torch_mlir_e2e_test.framework import TraceItem, clone_torch_script_value

    traces = []
    for seed in seeds:
        torch.manual_seed(seed)
        module = test.program_factory()
        traces.append([TraceItem(symbol=item.symbol, inputs=item.inputs,
                                 output=getattr(module, item.symbol)(
                                     *clone_torch_script_value(item.inputs)))
                       for item in golden])
    return traces


def mismatch(test, golden, trace) -> str | None:
    """How `trace` fails the framework's check against the golden trace; None where it
    passes."""
    from torch_mlir_e2e_test.framework import TestResult
    from torch_mlir_e2e_test.reporting import ErrorContext, SingleTestReport

    result = TestResult(unique_name=test.unique_name, compilation_error=None,
                        runtime_error=None, trace=trace, golden_trace=golden)
    report = SingleTestReport(result, ErrorContext.empty())
    return report.error_str() if report.failed else None


def random_outputs(test, golden) -> int | None:
    """For a test whose outputs depend on the random state (eager's differ bitwise from
    one seed to the next: a mean or deviation of random samples), how many of 3 eager
    runs under other seeds fail the framework's check themselves: its rtol of 1e-3 judges
    sampling noise there, not the compiler. None for a test that does not."""
    import torch
    import torch.utils._pytree as pytree

    traces = eager_runs(test, golden, seeds=(1, 2, 3))
    leaves = [pytree.tree_leaves([item.output for item in trace]) for trace in traces]
    if all(len(a) == len(b) and all(
            torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
            for x, y in zip(a, b)) for a, b in itertools.pairwise(leaves)):
        return None
    return sum(mismatch(test, golden, trace) is not None for trace in traces)


def dynamo_fails_alone(module, golden, error: Exception, dynamic: bool | None) -> bool:
    """Whether Dynamo raises the same error with its `eager` backend (no compiler
    behind it) and the same `dynamic`: an error of Dynamo's own tracing, raised before
    tessel gets a graph."""
    import torch
    from torch_mlir_e2e_test.framework import clone_torch_script_value

    torch._dynamo.reset()
    traced = torch.compile(module, backend="eager", dynamic=dynamic)
    try:
        for item in golden:
            method = traced if item.symbol == "forward" else getattr(traced, item.symbol)
            method(*clone_torch_script_value(item.inputs))
    except Exception as again:  # noqa: BLE001 - compared with the first error
        return type(again) is type(error)
    return False


def closer_to_float64(test, golden, trace) -> bool:
    """Whether outputs the framework found off eager's are as close to the exact value as
    eager's are, as PyTorch's benchmark harness judges (`torch._dynamo.utils.same` with
    an fp64 reference: the compiled output's RMSE against the module run in float64 at
    most a small multiple of eager's). Eager's own half-precision kernels round where
    the exact value does not (its fp16 instance norm over 8M elements is 1e-4 off), and
    the framework's rtol of 1e-3 counts that against the compiler. False where the
    module cannot run in float64."""
    import torch
    import torch.utils._pytree as pytree
    from torch._dynamo.utils import same

    def widened(value):
        return pytree.tree_map_only(
            torch.Tensor, lambda t: t.double() if t.is_floating_point() else t.clone(), value)

    try:
        module = test.program_factory().double()
        reference = [getattr(module, item.symbol)(*widened(item.inputs)) for item in golden]
    except Exception:  # noqa: BLE001 - a module that cannot run in float64 has no such reference
        return False
    return all(same(item.output, compiled.output, fp64_ref=exact, tol=1e-3, equal_nan=True,
                    log_error=lambda *args: None)
               for item, compiled, exact in zip(golden, trace, reference, strict=True))


def run_test(test, dynamic: bool | None) -> dict:
    """One test, eager reference then tessel, as a result row."""
    import torch
    from torch_mlir_e2e_test.framework import generate_golden_trace

    import tessel

    torch._dynamo.reset()
    tessel.reset_stats()
    row = {"test": test.unique_name}
    try:
        golden = generate_golden_trace(test)
    except Exception as error:  # noqa: BLE001 - any failure of eager is the test's own
        return row | {"status": "eager_error"} | error_fields(error)
    config = tessel_config(dynamic)
    start = time.perf_counter()
    trace = error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            trace = config.run(config.compile(test.program_factory()), golden)
        except Exception as raised:  # noqa: BLE001 - the error is the result
            error = raised
    stats = tessel.stats()
    row |= {
        "seconds": round(time.perf_counter() - start, 2),
        "graphs_compiled": stats["graphs_compiled"],
        "graphs_fallback": stats["graphs_fallback"],
        "graphs_split": stats["graphs_split"],
        "fallback_reasons": sorted(set(stats["fallback_reasons"])),
        "tessel_warnings": sorted({first_line(str(w.message)) for w in caught
                                   if str(w.message).startswith("tessel")}),
    }
    if error is not None:
        dynamo = dynamo_fails_alone(test.program_factory(), golden, error, dynamic)
        return row | {"status": "dynamo_error" if dynamo else "error"} | error_fields(error)
    found = mismatch(test, golden, trace)
    if found is None:
        return row | {"status": "pass"}
    row["mismatch"] = found[-600:]
    eager_failures = random_outputs(test, golden)
    if eager_failures is not None:
        return row | {"status": "random", "eager_reruns_failing": eager_failures}
    return row | {"status": "pass_fp64" if closer_to_float64(test, golden, trace) else "wrong"}


def serve(connection: Connection, source: str, dynamic: bool | None) -> None:
    """Worker process: runs the tests whose names arrive, sends back each row."""
    tests, _ = import_suite(source)
    connection.send("ready")
    while True:
        name = connection.recv()
        if name is None:
            return
        connection.send(run_test(tests[name], dynamic))


class Worker:
    """The process that runs tests, started again after one crashed or timed out."""

    def __init__(self, source: str, dynamic: bool | None):
        self.source, self.dynamic = source, dynamic
        self.process = None

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, self.source, self.dynamic),
                                               daemon=True)
        self.process.start()
        if not self.connection.poll(START_SECONDS) or self.connection.recv() != "ready":
            raise RuntimeError("the test worker did not start")

    def stop(self) -> None:
        self.process.kill()
        self.process.join()
        self.process = None

    def run(self, name: str, timeout: float) -> dict:
        if self.process is None:
            self.start()
        self.connection.send(name)
        try:
            if self.connection.poll(timeout):
                return self.connection.recv()
        except EOFError:
            pass
        status = "timeout" if self.process.is_alive() else "crash"
        exit_code = self.process.exitcode
        self.stop()
        row = {"test": name, "status": status}
        if status == "crash":
            row["error"] = f"the worker process exited with code {exit_code}"
        else:
            row["error"] = f"no result within {timeout:.0f} s"
        return row


def load_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_rows(path: Path) -> list[dict]:
    """The results file's test rows."""
    return [line for line in load_lines(path) if "test" in line]


def load_header(path: Path) -> dict:
    """The header of the results file's last run (a line of its own, `{"run": ...}`)."""
    return next((line["run"] for line in reversed(load_lines(path)) if "run" in line), {})


def reason_kind(reason: str) -> str:
    """A fallback reason without what differs from graph to graph: the graph's name
    and source locations."""
    reason = re.sub(r"^\d+_\w+?: ", "", reason)
    reason = re.sub(r"loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)(: )?", "", reason)
    # An op listed with its location ('ml_program.global' at loc(...); ...), perhaps cut.
    return reason.split(" at ", 1)[0].split("loc(", 1)[0][:160]


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def report(rows: list[dict], header: dict) -> str:
    """The markdown report: counts, then every test that did not pass."""
    # A test rerun keeps its last row.
    rows = list({row["test"]: row for row in rows}.values())
    xfails = {row["test"] for row in rows if row.get("expected_failure")}
    counted = [row for row in rows if row["test"] not in xfails
               and row["status"] not in APART_STATUSES]
    counts = collections.Counter(row["status"] for row in counted)
    raised = [row for row in rows if row.get("backend_compiler_failed")]
    fallback = [row for row in counted
                if row["status"] in ("pass", "pass_fp64")
                and (row.get("graphs_fallback") or row.get("graphs_split"))]
    lines = ["# torch-mlir end-to-end suite on tessel (CPU target)", ""]
    lines += [f"- {key}: {value}" for key, value in header.items()]
    lines += ["", (f"{len(rows)} tests run; {len(counted)} counted below, "
                   f"{len(rows) - len(counted)} listed apart (see the end)."), ""]
    lines += table(["status", "tests"], [[s, str(counts[s])] for s in COUNTED_STATUSES])
    lines += ["", f"BackendCompilerFailed raised to the caller: {len(raised)}.",
              f"Passing tests where tessel ran part or all of a graph eagerly: {len(fallback)}.",
              ""]
    for status in ("pass_fp64", "wrong", "error", "timeout", "crash"):
        failed = sorted((row for row in counted if row["status"] == status),
                        key=lambda row: row["test"])
        if failed:
            lines += [f"## {status}", ""]
            if status == "pass_fp64":
                lines += [("Off eager's output by more than the framework's tolerance, and "
                           "as close as eager's to the module run in float64 "
                           "(`torch._dynamo.utils.same` with an fp64 reference): eager's "
                           "own rounding."), ""]
            lines += table(["test", "what"], [
                [row["test"], cell(row.get("mismatch") or
                                   f"{row.get('error_type', '')}: {row.get('error', '')}")[:300]]
                for row in failed])
            lines.append("")
    apart = sorted((row for row in rows
                    if row["test"] in xfails or row["status"] in APART_STATUSES),
                   key=lambda row: row["test"])
    if apart:
        lines += ["## Listed apart", "",
                  ("Tests torch-mlir expects to fail in every config "
                   "(`COMMON_TORCH_MLIR_LOWERING_XFAILS`); `eager_error`: the eager "
                   "reference raised; `random`: off eager's, where eager's own outputs "
                   "differ from one random seed to the next (statistics of random samples; "
                   "how many of 3 eager reruns fail the same check in brackets); "
                   "`dynamo_error`: Dynamo raised the same error with its `eager` backend, "
                   "before any compiler:"), ""]
        lines += table(["test", "expected to fail", "status", "what"], [
            [row["test"], "yes" if row["test"] in xfails else "no",
             row["status"] + (f" ({row['eager_reruns_failing']}/3)"
                              if "eager_reruns_failing" in row else ""),
             cell(row.get("mismatch") or
                  f"{row.get('error_type', '')}: {row.get('error', '')}")[:300]]
            for row in apart])
        lines.append("")
    reasons = collections.Counter(
        kind for row in fallback
        for kind in {reason_kind(reason) for reason in row.get("fallback_reasons", [])})
    if reasons:
        lines += ["## What ran eagerly in passing tests", ""]
        lines += table(["fallback reason", "tests"],
                       [[cell(reason), str(n)] for reason, n in
                        sorted(reasons.items(), key=lambda item: (-item[1], item[0]))])
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source",
                        help="python directory of a torch-mlir checkout (projects/pt1/python)")
    parser.add_argument("--source-commit", default="unknown",
                        help="the torch-mlir commit --source was taken from, for the report")
    parser.add_argument("--filter", default="", help="run the tests whose names match this regex")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per test (default: the test's own, as torch-mlir sets it)")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="JSONL results file; the markdown report goes next to it")
    parser.add_argument("--dynamic", action="store_true", default=None,
                        help="torch.compile(..., dynamic=True): every size symbolic from the "
                             "first call (default: Dynamo's automatic dynamic shapes)")
    parser.add_argument("--shard", type=shard_arg, default=(1, 1),
                        help="i/n: run every n-th test from the i-th, for n runs at once "
                             "into n results files")
    parser.add_argument("--resume", action="store_true",
                        help="keep the results file's rows and run only the tests it lacks")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: write the markdown report of the results file")
    args = parser.parse_args(argv)
    markdown = args.results.with_suffix(".md")
    if args.report_only:
        markdown.write_text(report(load_rows(args.results), load_header(args.results)))
        return
    if args.source is None:
        parser.error("--source is required to run tests")

    tests, missing = import_suite(args.source)
    xfails = expected_failures()
    shard, shards = args.shard
    names = sorted(name for name in tests if re.search(args.filter, name))[shard - 1::shards]
    done = {row["test"] for row in load_rows(args.results)} if args.resume else set()
    header = {"date": datetime.date.today().isoformat(), "tessel commit": git_commit(),
              "torch-mlir suite commit": args.source_commit,
              "filter": args.filter or "none",
              "shard": f"{shard}/{shards}",
              "torch.compile": f"backend='mlir', dynamic={args.dynamic}",
              "suite modules not imported": "; ".join(f"{name} ({error})" for name, error
                                                      in sorted(missing.items())) or "none",
              } | environment("cpu")
    header.pop("load_average")
    with args.results.open("a" if args.resume else "w") as handle:
        handle.write(json.dumps({"run": header}) + "\n")
    worker = Worker(args.source, args.dynamic)
    todo = [name for name in names if name not in done]
    for index, name in enumerate(todo, 1):
        timeout = args.timeout or tests[name].timeout_seconds
        row = worker.run(name, timeout) | {"expected_failure": name in xfails}
        with args.results.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(f"[{index}/{len(todo)}] {row['status']:11} {name}", flush=True)
    if worker.process is not None:
        worker.connection.send(None)
        worker.process.join()
    markdown.write_text(report(load_rows(args.results), load_header(args.results)))


if __name__ == "__main__":
    main()

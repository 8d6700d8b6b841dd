"""Side-by-side benchmark of eager PyTorch, inductor and tessel's `mlir` backend.

Usage:
    python -m benchmarks.run [--device cpu] [--workloads pointwise,softmax]
                             [--repeats 20] [--threads N] [--output benchmarks/results/cpu.md]

Each workload runs in this one process under every backend in turn: eager (the
plain function), inductor (`torch.compile(fn)`) and mlir
(`torch.compile(fn, backend="mlir")`). Per workload the harness resets Dynamo,
times each backend's first call (compile included), warms all up, then times
`repeats` calls per backend in 5 alternating rounds and reports medians, so that
drift in the machine's speed hits every backend alike. Outputs are compared with
eager's. A backend that raises
is recorded in the status column and the run goes on; an mlir run that fell
back to eager (tessel.stats()) is flagged "fallback" rather than timed.

First calls are cold for both compilers: Inductor gets an empty cache directory
(TORCHINDUCTOR_CACHE_DIR) unless --warm-inductor-cache is given, and tessel has no
cache across processes. On a shared machine, run it as `chrt -f 10 python -m
benchmarks.run` (root): two OpenMP threads on two cores stall by a whole scheduler
slice whenever another process runs, which distorts every multi-threaded backend.

The markdown table is printed and written to --output, with the same data as
JSON next to it (same name, .json suffix). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._pytree import tree_leaves

import tessel

BACKENDS = ("eager", "inductor", "mlir")
ROUNDS = 5
WARMUP_CALLS = 2
PACKAGES = ("torch", "torch-mlir", "triton", "tessel")


# --------------------------------------------------------------------------- workloads

def pointwise(device: str):
    def fn(a, b):
        return torch.sigmoid(a) * torch.tanh(b) + a * 0.5 - torch.abs(b)
    n = 1 << 20
    return fn, (torch.randn(n, device=device), torch.randn(n, device=device))


def layernorm_gelu_residual(device: str):
    rows, dim = 2048, 512
    weight = torch.randn(dim, device=device)
    bias = torch.randn(dim, device=device)

    def fn(x):
        return x + F.gelu(F.layer_norm(x, (dim,), weight, bias))
    return fn, (torch.randn(rows, dim, device=device),)


def softmax(device: str):
    def fn(x):
        return torch.softmax(x, dim=-1)
    return fn, (torch.randn(2048, 512, device=device),)


def mlp(device: str):
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    return model.to(device).eval(), (torch.randn(64, 256, device=device),)


def convnet(device: str):
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )
    return model.to(device).eval(), (torch.randn(4, 3, 32, 32, device=device),)


def transformer_layer(device: str):
    """In eval mode without grad, the layer calls PyTorch's fused inference kernel
    (aten._transformer_encoder_layer_fwd), which Inductor and tessel both leave native."""
    model = nn.TransformerEncoderLayer(
        d_model=128, nhead=4, dim_feedforward=256, batch_first=True, dropout=0.0)
    return model.to(device).eval(), (torch.randn(4, 64, 128, device=device),)


def transformer_layer_composite(device: str):
    """The same layer in train mode (dropout 0, so the same math): the fused kernel is
    off, and every compiler builds the layer from its ops (attention, layer norms, FFN)."""
    model, inputs = transformer_layer(device)
    return model.train(), inputs


WORKLOADS: dict[str, Callable] = {
    w.__name__: w
    for w in (pointwise, layernorm_gelu_residual, softmax, mlp, convnet, transformer_layer,
              transformer_layer_composite)
}


# --------------------------------------------------------------------------- measuring

@dataclass
class BackendResult:
    ms: float | None = None             # median per-call milliseconds
    first_call_s: float | None = None   # first call, compile included
    max_err: float | None = None        # max abs difference from eager's output
    error: str | None = None            # exception text when the backend raised
    stats: dict | None = None           # tessel.stats() after the mlir run

    @property
    def fell_back(self) -> bool:
        """True for an mlir run that did not (entirely) run compiled code, other than
        the ops tessel leaves to PyTorch on purpose (stats()["native_ops"])."""
        return self.stats is not None and (
            self.stats["graphs_fallback"] > 0 or self.stats["graphs_split"] > 0
            or (self.stats["graphs_compiled"] == 0 and not self.stats["native_ops"]))


@dataclass
class WorkloadResult:
    name: str
    backends: dict[str, BackendResult] = field(default_factory=dict)

    def speedup(self, backend: str) -> float | None:
        eager, other = self.backends["eager"], self.backends[backend]
        if eager.ms is None or other.ms is None or other.fell_back:
            return None
        return eager.ms / other.ms

    def status(self) -> str:
        problems = [f"{name} error: {r.error}" for name, r in self.backends.items() if r.error]
        mlir = self.backends.get("mlir")
        if mlir and mlir.fell_back:
            reasons = "; ".join(mlir.stats["fallback_reasons"]) or "no graph compiled"
            problems.append(f"mlir fallback: {reasons}")
        if mlir and mlir.stats and mlir.stats["native_ops"]:
            ops = sorted({reason.split(": ")[1] for reason in mlir.stats["native_ops"]})
            problems.append(f"mlir calls {', '.join(ops)} natively, by choice")
        return " / ".join(problems) or "ok"


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def build(backend: str, fn: Callable) -> Callable:
    if backend == "eager":
        return fn
    if backend == "inductor":
        return torch.compile(fn)
    return torch.compile(fn, backend="mlir")


def first_call(fn: Callable, inputs: tuple, device: str) -> tuple[float, object]:
    """(seconds of the first call, compile included; its output)."""
    start = time.perf_counter()
    output = fn(*inputs)
    synchronize(device)
    return time.perf_counter() - start, output


def max_abs_error(output, reference) -> float:
    pairs = zip(tree_leaves(output), tree_leaves(reference), strict=True)
    return max((o.float() - r.float()).abs().max().item() for o, r in pairs)


def interleaved_medians(callables: dict[str, Callable], inputs: tuple, device: str,
                        repeats: int) -> dict[str, float]:
    """Median ms per backend, timed in alternating rounds so that drift in the
    machine's speed (other load, CPU frequency) affects every backend alike."""
    for fn in callables.values():
        for _ in range(WARMUP_CALLS):
            fn(*inputs)
    synchronize(device)
    samples: dict[str, list[float]] = {name: [] for name in callables}
    per_round = max(1, repeats // ROUNDS)
    for _ in range(ROUNDS):
        for name, fn in callables.items():
            for _ in range(per_round):
                start = time.perf_counter()
                fn(*inputs)
                synchronize(device)
                samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) * 1e3 for name, times in samples.items()}


def run_workload(name: str, device: str, repeats: int) -> WorkloadResult:
    """Compile every backend (first-call times), then time them side by side."""
    torch.manual_seed(0)
    fn, inputs = WORKLOADS[name](device)
    result = WorkloadResult(name)
    callables: dict[str, Callable] = {}
    reference = None
    torch._dynamo.reset()
    tessel.reset_stats()
    with torch.no_grad():
        for backend in BACKENDS:
            backend_result = result.backends[backend] = BackendResult()
            try:
                compiled = build(backend, fn)
                backend_result.first_call_s, output = first_call(compiled, inputs, device)
                if reference is None:
                    reference = output
                backend_result.max_err = max_abs_error(output, reference)
                callables[backend] = compiled
            except Exception as exc:  # noqa: BLE001 - a backend failure is recorded, not fatal
                backend_result.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        for backend, ms in interleaved_medians(callables, inputs, device, repeats).items():
            result.backends[backend].ms = ms
    result.backends["mlir"].stats = tessel.stats()
    return result


# --------------------------------------------------------------------------- reporting

def cpu_model() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def environment(device: str, threads: int, repeats: int) -> dict:
    env = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": f"{cpu_model()} ({platform.machine()}), {os.cpu_count()} cores",
        "device": device,
        "torch threads": threads,
        "repeats": repeats,
        "python": platform.python_version(),
    }
    env.update({name: package_version(name) for name in PACKAGES})
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name()
    return env


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def mlir_ms_cell(mlir: BackendResult) -> str:
    if mlir.error:
        return "error"
    return "fallback" if mlir.fell_back else fmt(mlir.ms, ".3f")


def table_row(w: WorkloadResult) -> list[str]:
    eager, inductor, mlir = (w.backends[b] for b in BACKENDS)
    return [
        w.name,
        fmt(eager.ms, ".3f"),
        "error" if inductor.error else fmt(inductor.ms, ".3f"),
        mlir_ms_cell(mlir),
        fmt(w.speedup("inductor"), ".2f", "x"),
        fmt(w.speedup("mlir"), ".2f", "x"),
        fmt(inductor.first_call_s, ".2f"),
        fmt(mlir.first_call_s, ".2f"),
        fmt(mlir.max_err, ".2e"),
        str(mlir.stats["kernels"]) if mlir.stats else "—",
        w.status().replace("|", "\\|"),
    ]


HEADER = ["workload", "eager ms", "inductor ms", "mlir ms", "inductor speedup",
          "mlir speedup", "inductor first call s", "mlir first call s", "mlir max err",
          "mlir kernels", "status"]


def geomeans(results: list[WorkloadResult]) -> dict[str, dict]:
    out = {}
    for backend in ("inductor", "mlir"):
        speedups = [s for w in results if (s := w.speedup(backend)) is not None]
        out[backend] = {"geomean_speedup": geomean(speedups), "workloads": len(speedups)}
    return out


def markdown(env: dict, results: list[WorkloadResult], means: dict) -> str:
    lines = ["# tessel benchmark: eager vs inductor vs mlir", ""]
    lines += [f"- {key}: {value}" for key, value in env.items()]
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(table_row(w)) + " |" for w in results]
    lines.append("")
    for backend, mean in means.items():
        lines.append(f"Geomean speedup of {backend} over eager: "
                     f"{fmt(mean['geomean_speedup'], '.2f', 'x')} "
                     f"(over {mean['workloads']} of {len(results)} workloads)")
    return "\n".join(lines) + "\n"


def as_json(env: dict, results: list[WorkloadResult], means: dict) -> dict:
    workloads = []
    for w in results:
        backends = {}
        for name, r in w.backends.items():
            backends[name] = asdict(r) | {"fell_back": r.fell_back, "speedup": (
                None if name == "eager" else w.speedup(name))}
        workloads.append({"name": w.name, "status": w.status(), "backends": backends})
    return {"environment": env, "workloads": workloads, "geomean": means}


# --------------------------------------------------------------------------- entry point

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of: {', '.join(WORKLOADS)}")
    parser.add_argument("--repeats", type=int, default=50, help="timed calls per backend")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="torch.set_num_threads value (default: the machine's core count)")
    parser.add_argument("--output", type=Path, default=None,
                        help="markdown file (default: benchmarks/results/<device>.md); "
                             "JSON goes next to it")
    parser.add_argument("--warm-inductor-cache", action="store_true",
                        help="keep Inductor's on-disk caches (default: a fresh, empty one, "
                             "so that its first calls compile from scratch, as tessel's do)")
    args = parser.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    if args.output is None:
        args.output = Path("benchmarks/results") / f"{args.device.split(':')[0]}.md"
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if not args.warm_inductor_cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
    env = environment(args.device, args.threads, args.repeats)
    env["first calls"] = ("Inductor with a warm on-disk cache" if args.warm_inductor_cache
                          else "cold: Inductor with an empty cache directory, tessel uncached")
    env["scheduling"] = ("SCHED_FIFO (chrt)" if os.sched_getscheduler(0) == os.SCHED_FIFO
                         else "default (SCHED_OTHER)")
    load_at_start = os.getloadavg()[0]

    results = []
    for name in args.workloads:
        start = time.perf_counter()
        results.append(run_workload(name, args.device, args.repeats))
        print(f"[{name}] done in {time.perf_counter() - start:.1f} s", file=sys.stderr)

    env["load average (1 min) at start / end"] = f"{load_at_start:.2f} / {os.getloadavg()[0]:.2f}"
    means = geomeans(results)
    report = markdown(env, results, means)
    print(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.output.with_suffix(".json").write_text(
        json.dumps(as_json(env, results, means), indent=2) + "\n")
    print(f"wrote {args.output} and {args.output.with_suffix('.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()

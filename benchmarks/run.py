"""Side-by-side benchmark of eager PyTorch, inductor and tessel's `mlir` backend.

Usage:
    python -m benchmarks.run [--device cpu|cuda] [--workloads pointwise,softmax]
                             [--repeats 50] [--threads N] [--output benchmarks/results/<device>.md]

Each workload runs in this one process under every backend of its device in turn:
on CPU eager (the plain function), inductor (`torch.compile(fn)`) and mlir
(`torch.compile(fn, backend="mlir")`); on CUDA also inductor-reduce-overhead and
mlir-reduce-overhead (the same with mode="reduce-overhead": CUDA graphs), over the
GPU workload set of issue 4. Per workload the harness resets Dynamo,
times each backend's first call (compile included), warms all up, then times
`repeats` calls per backend in 5 alternating rounds and reports medians, so that
drift in the machine's speed hits every backend alike. Outputs are compared with
eager's, within a tolerance for their dtype. A backend that raises
is recorded in the status column and the run goes on; an mlir run that fell
back to eager (tessel.stats()) is flagged "fallback" rather than timed.

On CUDA each call is timed with CUDA events, the calls of a round queued back to
back; the run also measures device-to-device copy bandwidth and reports, against
it, the bandwidth that the memory-bound workloads reach, plus the matmul's TFLOP/s
and mlir's throughput relative to Inductor in the same mode.

First calls are cold for both compilers: Inductor gets an empty cache directory
(TORCHINDUCTOR_CACHE_DIR), and tessel empty graph and Triton caches (TESSEL_CACHE_DIR,
TRITON_CACHE_DIR), unless --warm-inductor-cache is given (then Inductor's cache stays;
tessel's stay cold). `python -m benchmarks.compile_cache` measures warm compiles. On a shared machine, run it as `chrt -f 10 python -m
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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._pytree import tree_leaves

import tessel
from tessel.targets.cpu.freed_memory import keep_freed_memory

# Per device type, the backends in the order they run and appear in the report.
BACKENDS = {
    "cpu": ("eager", "inductor", "mlir"),
    "cuda": ("eager", "inductor", "inductor-reduce-overhead", "mlir", "mlir-reduce-overhead"),
}
COMPILE_ARGS = {
    "inductor": {},
    "inductor-reduce-overhead": {"mode": "reduce-overhead"},
    "mlir": {"backend": "mlir"},
    "mlir-reduce-overhead": {"backend": "mlir", "mode": "reduce-overhead"},
}
ROUNDS = 5
# More on CUDA: reduce-overhead records its CUDA graph only on a call after the first
# (cudagraph trees warm up, record, then replay), and Triton may autotune on early calls.
WARMUP_CALLS = {"cpu": 2, "cuda": 5}
PACKAGES = ("torch", "torch-mlir", "triton", "tessel")
GPU_PACKAGES = ("torchvision", "transformers")
# (rtol, atol) of an output against eager's, by dtype; other dtypes must match exactly.
# atol is a fraction of the output's largest magnitude (see within_tolerance).
TOLERANCES = {
    torch.float64: (1e-4, 1e-4),
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (1e-2, 1e-2),
    torch.float16: (1e-2, 1e-2),
}
COPY_BYTES = 1 << 30
COPY_CALLS = 20
MEMORY_BOUND_BAR = 0.85     # issue 4: of the copy bandwidth, by bytes that must move
MATMUL_BAR = 0.95           # issue 4: mlir's matmul throughput over Inductor's


# --------------------------------------------------------------------------- CPU workloads

def pointwise_chain(a, b):
    return torch.sigmoid(a) * torch.tanh(b) + a * 0.5 - torch.abs(b)


def pointwise(device: str):
    n = 1 << 20
    return pointwise_chain, (torch.randn(n, device=device), torch.randn(n, device=device))


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


# --------------------------------------------------------------------------- GPU workloads

def gpu_pointwise(device: str):
    """pointwise_chain on 64M float32 elements per input (768 MiB moved per call):
    enough traffic that the per-call launch cost is small beside it."""
    n = 8192 * 8192
    return pointwise_chain, (torch.randn(n, device=device), torch.randn(n, device=device))


def gpu_layernorm_gelu_residual(device: str):
    """Weight and bias are inputs rather than constants, so that the bytes that must
    move (inputs_and_output_bytes) count them."""
    rows = dim = 8192

    def fn(x, weight, bias):
        return x + F.gelu(F.layer_norm(x, (dim,), weight, bias))
    return fn, (torch.randn(rows, dim, device=device), torch.randn(dim, device=device),
                torch.randn(dim, device=device))


def gpu_softmax(device: str):
    def fn(x):
        return torch.softmax(x, dim=-1)
    return fn, (torch.randn(8192, 8192, device=device),)


def gpu_softmax_long_rows(device: str):
    """Rows of 131072 floats: longer than one block, so tessel loops over each row
    (row_kernel.py's looped rows: a pass per reduction, then the outputs)."""
    def fn(x):
        return torch.softmax(x, dim=-1)
    return fn, (torch.randn(512, 131072, device=device),)


def gpu_group_norm(device: str):
    """poolformer_s12's first norm: GroupNorm(1, 64) over a batch of 32 bf16 maps of
    64 x 56 x 56, whose statistics reduce 200704 values per image (few, long rows:
    split-reductions spreads them over many programs)."""
    model = nn.GroupNorm(1, 64).to(device, torch.bfloat16).eval()
    return model, (torch.randn(32, 64, 56, 56, device=device, dtype=torch.bfloat16),)


def gpu_matmul_bias_relu(device: str):
    m = n = k = 4096

    def fn(x, weight, bias):
        return torch.relu(x @ weight + bias)
    shapes = ((m, k), (k, n), (n,))
    return fn, tuple(torch.randn(s, device=device, dtype=torch.bfloat16) for s in shapes)


def torchvision_model(name: str, device: str):
    """Random weights (weights=None: nothing to download), eval mode, batch 16 x 3 x 128 x 128."""
    import torchvision  # here, not at the top: only the GPU set needs it

    model = getattr(torchvision.models, name)(weights=None)
    return model.to(device).eval(), (torch.randn(16, 3, 128, 128, device=device),)


def densenet121(device: str):
    return torchvision_model("densenet121", device)


def resnet50(device: str):
    return torchvision_model("resnet50", device)


def gpt2_block(device: str):
    """One GPT-2-small-sized block (768 wide, 12 heads, MLP 3072), random weights, bf16,
    on 8 sequences of 512 tokens; causal attention through PyTorch's SDPA, as GPT-2
    models run it (transformers' own default is its unfused attention)."""
    # imported here, not at the top: only the GPU set needs transformers
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    config = GPT2Config(n_embd=768, n_head=12, attn_implementation="sdpa")
    block = GPT2Block(config, layer_idx=0).to(device, torch.bfloat16).eval()
    return block, (torch.randn(8, 512, 768, device=device, dtype=torch.bfloat16),)


WORKLOADS: dict[str, dict[str, Callable]] = {
    "cpu": {w.__name__: w for w in (
        pointwise, layernorm_gelu_residual, softmax, mlp, convnet, transformer_layer,
        transformer_layer_composite)},
    "cuda": {w.__name__: w for w in (
        gpu_pointwise, gpu_layernorm_gelu_residual, gpu_softmax, gpu_softmax_long_rows,
        gpu_group_norm, gpu_matmul_bias_relu, densenet121, resnet50, gpt2_block)},
}


def inputs_and_output_bytes(inputs: tuple, output) -> int:
    """Bytes that must move in a memory-bound call: each input read and each output
    written once."""
    return sum(t.nbytes for t in tree_leaves((inputs, output)) if isinstance(t, torch.Tensor))


def matmul_flops(inputs: tuple, output) -> int:
    x, weight, _ = inputs
    (m, k), n = x.shape, weight.shape[1]
    return 2 * m * n * k


# Work per call of the workloads that issue 4 sets a bar for: bytes that must move
# (the memory-bound ones, against the copy bandwidth) and floating-point operations.
BYTES_MOVED = {name: inputs_and_output_bytes
               for name in ("gpu_pointwise", "gpu_layernorm_gelu_residual", "gpu_softmax",
                            "gpu_softmax_long_rows", "gpu_group_norm")}
FLOPS = {"gpu_matmul_bias_relu": matmul_flops}


# --------------------------------------------------------------------------- measuring

def device_type(device: str) -> str:
    return torch.device(device).type


def uses_tessel(backend: str) -> bool:
    return backend.startswith("mlir")


@dataclass
class BackendResult:
    ms: float | None = None             # median per-call milliseconds
    first_call_s: float | None = None   # first call, compile included
    max_err: float | None = None        # max abs difference from eager's output
    matches: bool | None = None         # every output within TOLERANCES of eager's
    error: str | None = None            # exception text when the backend raised
    stats: dict | None = None           # tessel.stats() after an mlir backend's first call

    @property
    def fell_back(self) -> bool:
        """True for an mlir run that did not (entirely) run compiled code, other than
        the ops tessel leaves to PyTorch on purpose (stats()["native_ops"])."""
        return self.stats is not None and (
            self.stats["graphs_fallback"] > 0 or self.stats["graphs_split"] > 0
            or (self.stats["graphs_compiled"] == 0 and not self.stats["native_ops"]))

    def problems(self) -> list[str]:
        """What the status column says of this backend, after its name."""
        problems = []
        if self.error:
            problems.append(f"error: {self.error}")
        if self.matches is False:
            problems.append(f"output off eager's beyond tolerance (max err {self.max_err:.2e})")
        if self.fell_back:
            reasons = "; ".join(self.stats["fallback_reasons"]) or "no graph compiled"
            problems.append(f"fallback: {reasons}")
        if self.stats and self.stats["native_ops"]:
            ops = sorted({reason.split(": ")[1] for reason in self.stats["native_ops"]})
            problems.append(f"calls {', '.join(ops)} natively, by choice")
        return problems


@dataclass
class WorkloadResult:
    name: str
    backends: dict[str, BackendResult] = field(default_factory=dict)
    bytes_moved: int | None = None      # per call, for the memory-bound GPU workloads
    flops: int | None = None            # per call, for the matmul

    def timed_ms(self, backend: str) -> float | None:
        """The backend's median ms where it ran compiled (or is eager), else None."""
        result = self.backends[backend]
        return None if result.fell_back else result.ms

    def speedup(self, backend: str) -> float | None:
        return ratio(self.timed_ms("eager"), self.timed_ms(backend))

    def vs_inductor(self, backend: str) -> float | None:
        """An mlir backend's throughput over Inductor's in the same mode."""
        return ratio(self.timed_ms(backend.replace("mlir", "inductor")), self.timed_ms(backend))

    def gb_per_s(self, backend: str) -> float | None:
        ms = self.timed_ms(backend)
        return None if self.bytes_moved is None or ms is None else self.bytes_moved / ms / 1e6

    def tflop_per_s(self, backend: str) -> float | None:
        ms = self.timed_ms(backend)
        return None if self.flops is None or ms is None else self.flops / ms / 1e9

    def status(self) -> str:
        """`ok`, or each problem once, after the backends that have it (the two mlir
        backends of a CUDA run usually share their fallback reasons)."""
        backends_by_problem: dict[str, list[str]] = {}
        for name, r in self.backends.items():
            for problem in r.problems():
                backends_by_problem.setdefault(problem, []).append(name)
        return " / ".join(f"{', '.join(names)} {problem}"
                          for problem, names in backends_by_problem.items()) or "ok"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return None if numerator is None or denominator is None else numerator / denominator


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def build(backend: str, fn: Callable) -> Callable:
    return fn if backend == "eager" else torch.compile(fn, **COMPILE_ARGS[backend])


def first_call(fn: Callable, inputs: tuple, device: str) -> tuple[float, object]:
    """(seconds of the first call, compile included; its output)."""
    start = time.perf_counter()
    output = fn(*inputs)
    synchronize(device)
    return time.perf_counter() - start, output


def tensor_pairs(output, reference) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(output tensor, eager's) pairs, skipping leaves that are no tensors (None)."""
    pairs = zip(tree_leaves(output), tree_leaves(reference), strict=True)
    return [(o, r) for o, r in pairs if isinstance(r, torch.Tensor)]


def max_abs_error(output, reference) -> float:
    pairs = tensor_pairs(output, reference)
    return max(((o.float() - r.float()).abs().max().item() for o, r in pairs), default=0.0)


def within_tolerance(output, reference) -> bool:
    """Whether |out - ref| <= rtol * |ref| + atol * max|ref| everywhere, with the
    TOLERANCES of ref's dtype. atol scales with the largest magnitude because a sum's
    rounding error follows its terms, not its result: an element of a matmul or
    convolution that cancels to near zero keeps the error of its large terms."""
    for out, ref in tensor_pairs(output, reference):
        rtol, atol = TOLERANCES.get(ref.dtype, (0.0, 0.0))
        ref = ref.float()
        scale = ref.abs().max().item() if ref.numel() else 0.0
        if not torch.allclose(out.float(), ref, rtol=rtol, atol=atol * scale, equal_nan=True):
            return False
    return True


def compare(result: BackendResult, output, reference) -> None:
    """Fold one output's difference from eager's into `result` (the worst over calls)."""
    result.max_err = max(result.max_err or 0.0, max_abs_error(output, reference))
    result.matches = result.matches is not False and within_tolerance(output, reference)


def time_calls(fn: Callable, inputs: tuple, device: str, calls: int) -> list[float]:
    """Seconds of each of `calls` calls. On CUDA, from events recorded around each call
    with no synchronization in between: the GPU's queue stays fed, as in a model's
    steady state, and a call's time is the GPU's, including any wait for the host to
    launch its kernels (which host-bound backends pay), but not the round trip of a
    synchronization, a sizable share of a 0.2 ms kernel."""
    if device_type(device) == "cuda":
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(calls)]
        for start, end in events:
            start.record()
            fn(*inputs)
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in events]
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*inputs)
        times.append(time.perf_counter() - start)
    return times


def interleaved_medians(callables: dict[str, Callable], inputs: tuple, device: str,
                        repeats: int) -> dict[str, float]:
    """Median ms per backend, timed in alternating rounds so that drift in the
    machine's speed (other load, CPU frequency) affects every backend alike."""
    samples: dict[str, list[float]] = {name: [] for name in callables}
    per_round = max(1, repeats // ROUNDS)
    for _ in range(ROUNDS):
        for name, fn in callables.items():
            samples[name] += time_calls(fn, inputs, device, per_round)
    return {name: statistics.median(times) * 1e3 for name, times in samples.items()}


def copy_bandwidth_gbs(device: str) -> float:
    """Device-to-device copy bandwidth, bytes read + written per second (GB/s), timed
    like the workloads: the yardstick of the memory-bound ones."""
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    for _ in range(WARMUP_CALLS[device_type(device)]):
        dst.copy_(src)
    seconds = statistics.median(time_calls(dst.copy_, (src,), device, COPY_CALLS))
    return 2 * COPY_BYTES / seconds / 1e9


def error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def warm_up_and_check(callables: dict[str, Callable], results: dict[str, BackendResult],
                      inputs: tuple, reference, device: str) -> None:
    """Warm each backend up, comparing the last warm-up call's output with eager's too: a
    reduce-overhead backend's timed calls replay a CUDA graph recorded after its first
    call. A backend that raises here leaves `callables`, its error recorded."""
    for backend, compiled in list(callables.items()):
        try:
            for _ in range(WARMUP_CALLS[device_type(device)] - 1):
                compiled(*inputs)
            compare(results[backend], compiled(*inputs), reference)
        except Exception as exc:  # noqa: BLE001 - a backend failure is recorded, not fatal
            results[backend].error = error_text(exc)
            del callables[backend]


def run_workload(name: str, device: str, repeats: int) -> WorkloadResult:
    """Compile every backend (first-call times), then time them side by side."""
    torch.manual_seed(0)
    fn, inputs = WORKLOADS[device_type(device)][name](device)
    result = WorkloadResult(name)
    callables: dict[str, Callable] = {}
    reference = None
    torch._dynamo.reset()
    with torch.no_grad():
        for backend in BACKENDS[device_type(device)]:
            backend_result = result.backends[backend] = BackendResult()
            # tessel's counters are process-wide and it compiles on the first call:
            # read them right after it, per mlir backend.
            tessel.reset_stats()
            try:
                compiled = build(backend, fn)
                backend_result.first_call_s, output = first_call(compiled, inputs, device)
                if reference is None:
                    reference = output
                compare(backend_result, output, reference)
                del output  # a CUDA-graph backend's output lives in its pool: keep none alive
                callables[backend] = compiled
            except Exception as exc:  # noqa: BLE001 - a backend failure is recorded, not fatal
                backend_result.error = error_text(exc)
            if uses_tessel(backend):
                backend_result.stats = tessel.stats()
        warm_up_and_check(callables, result.backends, inputs, reference, device)
        for backend, ms in interleaved_medians(callables, inputs, device, repeats).items():
            result.backends[backend].ms = ms
    if reference is not None and name in BYTES_MOVED:
        result.bytes_moved = BYTES_MOVED[name](inputs, reference)
    if reference is not None and name in FLOPS:
        result.flops = FLOPS[name](inputs, reference)
    return result


# --------------------------------------------------------------------------- reporting

@dataclass
class Run:
    env: dict
    device: str                         # device type: a key of BACKENDS
    results: list[WorkloadResult]
    copy_gbs: float | None = None       # device-to-device copy bandwidth (CUDA runs)

    @property
    def backends(self) -> tuple[str, ...]:
        return BACKENDS[self.device]

    @property
    def compiled_backends(self) -> tuple[str, ...]:
        return tuple(b for b in self.backends if b != "eager")

    @property
    def tessel_backends(self) -> tuple[str, ...]:
        return tuple(b for b in self.backends if uses_tessel(b))

    def pct_of_copy(self, gb_per_s: float | None) -> float | None:
        return None if gb_per_s is None or self.copy_gbs is None else 100 * gb_per_s / self.copy_gbs


def cpu_model() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def gpu_driver() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=True).stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def one_malloc_policy(device: str) -> str:
    """Give every backend's process on the CPU the malloc policy that tessel's CPU target
    sets at its first compile (targets/cpu/freed_memory.py: glibc keeps freed memory),
    and say which policy the process runs under.

    Eager and Inductor allocate large tensors at every call too, and under glibc's
    default they fault in fresh zeroed pages each time: eager timed in an mlir row's
    process, after the compile, ran faster than in an Inductor row's, which skewed every
    ratio over eager (benchmarks/README.md). PyTorch's CPU launcher
    (torch.backends.xeon.run_cpu) likewise runs every backend under one allocator."""
    if torch.device(device).type != "cpu":
        return "caching allocator (CUDA)"
    return "glibc, freed memory kept (mallopt)" if keep_freed_memory() else "default"


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
    if device_type(device) == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["cuda"] = torch.version.cuda
        env["driver"] = gpu_driver()
        env.update({name: package_version(name) for name in GPU_PACKAGES})
    return env


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def ms_cell(result: BackendResult) -> str:
    if result.error:
        return "error"
    return "fallback" if result.fell_back else fmt(result.ms, ".3f")


def header(run: Run) -> list[str]:
    return (["workload"] + [f"{b} ms" for b in run.backends]
            + [f"{b} speedup" for b in run.compiled_backends]
            + [f"{b} first call s" for b in run.compiled_backends]
            + [f"{b} max err" for b in run.tessel_backends]
            + [f"{b} kernels" for b in run.tessel_backends] + ["status"])


def table_row(run: Run, w: WorkloadResult) -> list[str]:
    r = w.backends
    return ([w.name] + [ms_cell(r[b]) for b in run.backends]
            + [fmt(w.speedup(b), ".2f", "x") for b in run.compiled_backends]
            + [fmt(r[b].first_call_s, ".2f") for b in run.compiled_backends]
            + [fmt(r[b].max_err, ".2e") for b in run.tessel_backends]
            + [str(r[b].stats["kernels"]) if r[b].stats else "—" for b in run.tessel_backends]
            + [w.status().replace("|", "\\|")])


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def geomeans(run: Run) -> dict[str, dict]:
    out = {}
    for backend in run.compiled_backends:
        speedups = [s for w in run.results if (s := w.speedup(backend)) is not None]
        out[backend] = {"geomean_speedup": geomean(speedups), "workloads": len(speedups)}
    return out


def bandwidth_cell(run: Run, w: WorkloadResult, backend: str) -> str:
    gb_per_s = w.gb_per_s(backend)
    if gb_per_s is None:
        return "—"
    return f"{gb_per_s:.0f} ({fmt(run.pct_of_copy(gb_per_s), '.0f')}%)"


def gpu_sections(run: Run) -> list[str]:
    """The tables that measure the GPU run against issue 4's bars; each only where
    the run has workloads for it."""
    lines = []
    memory_bound = [w for w in run.results if w.bytes_moved is not None]
    if memory_bound:
        lines += ["", (f"## Memory-bound workloads: GB/s by bytes that must move (% of the "
                       f"{fmt(run.copy_gbs, '.0f')} GB/s copy; bar: mlir at "
                       f"{MEMORY_BOUND_BAR:.0%} or more)"), ""]
        lines += table(["workload", "MB moved"] + [f"{b} GB/s" for b in run.backends],
                       [[w.name, f"{w.bytes_moved / 1e6:.0f}"]
                        + [bandwidth_cell(run, w, b) for b in run.backends]
                        for w in memory_bound])
    matmuls = [w for w in run.results if w.flops is not None]
    if matmuls:
        lines += ["", (f"## Matmul throughput, TFLOP/s (2·M·N·K per call; bar: mlir at "
                       f"{MATMUL_BAR}x Inductor's or more)"), ""]
        lines += table(["workload", "GFLOP per call"] + [f"{b} TFLOP/s" for b in run.backends],
                       [[w.name, f"{w.flops / 1e9:.0f}"]
                        + [fmt(w.tflop_per_s(b), ".0f") for b in run.backends]
                        for w in matmuls])
    pairs = [f"{b} / {b.replace('mlir', 'inductor')}" for b in run.tessel_backends]
    lines += ["", ("## mlir vs Inductor in the same mode: throughput ratio "
                   "(inductor ms / mlir ms; above 1, mlir is faster)"), ""]
    lines += table(["workload"] + pairs,
                   [[w.name] + [fmt(w.vs_inductor(b), ".2f", "x") for b in run.tessel_backends]
                    for w in run.results])
    return lines


def markdown(run: Run) -> str:
    lines = [f"# tessel benchmark: {' vs '.join(run.backends)}", ""]
    lines += [f"- {key}: {value}" for key, value in run.env.items()]
    lines += [""] + table(header(run), [table_row(run, w) for w in run.results])
    lines.append("")
    for backend, mean in geomeans(run).items():
        lines.append(f"Geomean speedup of {backend} over eager: "
                     f"{fmt(mean['geomean_speedup'], '.2f', 'x')} "
                     f"(over {mean['workloads']} of {len(run.results)} workloads)")
    if run.device == "cuda":
        lines += gpu_sections(run)
    return "\n".join(lines) + "\n"


def gpu_measures(run: Run, w: WorkloadResult, backend: str) -> dict:
    """The JSON twin of gpu_sections' cells for one backend, where they apply."""
    measures = {}
    if w.bytes_moved is not None:
        gb_per_s = w.gb_per_s(backend)
        measures |= {"gb_per_s": gb_per_s, "pct_of_copy": run.pct_of_copy(gb_per_s)}
    if w.flops is not None:
        measures["tflop_per_s"] = w.tflop_per_s(backend)
    if run.device == "cuda" and uses_tessel(backend):
        measures["vs_inductor"] = w.vs_inductor(backend)
    return measures


def as_json(run: Run) -> dict:
    workloads = []
    for w in run.results:
        backends = {}
        for name, r in w.backends.items():
            backends[name] = asdict(r) | {"fell_back": r.fell_back, "speedup": (
                None if name == "eager" else w.speedup(name))} | gpu_measures(run, w, name)
        work = {key: value for key, value in (("bytes_moved", w.bytes_moved), ("flops", w.flops))
                if value is not None}
        workloads.append({"name": w.name, "status": w.status()} | work | {"backends": backends})
    out = {"environment": run.env, "workloads": workloads, "geomean": geomeans(run)}
    if run.copy_gbs is not None:
        out["copy_gb_per_s"] = run.copy_gbs
    return out


# --------------------------------------------------------------------------- entry point

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu",
                        help="torch device: cpu (default), cuda or cuda:N; each has its "
                             "own backends and workloads")
    parser.add_argument("--workloads", default=None,
                        help="comma-separated subset of the device's workloads (default: all); "
                             + "; ".join(f"{kind}: {', '.join(names)}"
                                         for kind, names in WORKLOADS.items()))
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
    try:
        kind = device_type(args.device)
    except RuntimeError as exc:
        parser.error(f"--device {args.device}: {exc}")
    if kind not in WORKLOADS:
        parser.error(f"no workloads for device type {kind!r}; choose from {list(WORKLOADS)}")
    workloads = WORKLOADS[kind]
    args.workloads = (list(workloads) if args.workloads is None
                      else [w.strip() for w in args.workloads.split(",") if w.strip()])
    unknown = sorted(set(args.workloads) - set(workloads))
    if unknown:
        parser.error(f"unknown {kind} workloads {unknown}; choose from {list(workloads)}")
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    if args.output is None:
        args.output = Path("benchmarks/results") / f"{kind}.md"
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    kind = device_type(args.device)
    if kind == "cuda":
        if not torch.cuda.is_available():
            sys.exit("--device cuda: torch sees no CUDA device")
        # CUDA events and synchronize() act on the current device: make it the one benchmarked.
        torch.cuda.set_device(torch.device(args.device).index or 0)
    torch.set_num_threads(args.threads)
    if not args.warm_inductor_cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-cold-")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cold-")
    env = environment(args.device, args.threads, args.repeats)
    env["malloc"] = one_malloc_policy(args.device)
    env["first calls"] = ("Inductor with a warm on-disk cache" if args.warm_inductor_cache
                          else "cold: empty Inductor, tessel and Triton cache directories")
    env["scheduling"] = ("SCHED_FIFO (chrt)" if os.sched_getscheduler(0) == os.SCHED_FIFO
                         else "default (SCHED_OTHER)")
    load_at_start = os.getloadavg()[0]
    copy_gbs = None
    if kind == "cuda":
        copy_gbs = copy_bandwidth_gbs(args.device)
        env["device-to-device copy"] = (f"{copy_gbs:.0f} GB/s (dst.copy_(src) of "
                                        f"{COPY_BYTES >> 30} GiB, bytes read + written, "
                                        f"median of {COPY_CALLS})")

    results = []
    for name in args.workloads:
        start = time.perf_counter()
        results.append(run_workload(name, args.device, args.repeats))
        print(f"[{name}] done in {time.perf_counter() - start:.1f} s", file=sys.stderr)

    env["load average (1 min) at start / end"] = f"{load_at_start:.2f} / {os.getloadavg()[0]:.2f}"
    run = Run(env, kind, results, copy_gbs)
    report = markdown(run)
    print(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.output.with_suffix(".json").write_text(json.dumps(as_json(run), indent=2) + "\n")
    print(f"wrote {args.output} and {args.output.with_suffix('.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""What every row of the suite measures the same way: compiling under a backend and mode,
the fp64 reference, the accuracy verdict, the suite's lock, timing, peak memory and the
compilers' counters.

Accuracy follows PyTorch's benchmarks/dynamo/common.py: `torch._dynamo.utils.same(eager's
output, the compiled one, fp64 reference)`: allclose at the tolerance first, else the
compiled output's RMSE against an fp64 run of the same model at most a few times eager's
(3x in bf16, 2x in fp32); cosine similarity where the fp64 copy does not fit. Tolerances
are the suites' inference ones: 1e-3 in fp32 (huggingface.py, timm_models.py), 1e-2 in
bf16 (torchbench.py's higher_bf16); training's is 1e-2 (train.py).
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import importlib.util
import json
import os
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from torch._dynamo.utils import counters as dynamo_counters
from torch._dynamo.utils import same
from torch.utils._pytree import tree_leaves, tree_map

import tessel
from benchmarks.run import cpu_model, error_text, interleaved_medians, package_version

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 1e-2}
STATUSES = ("pass", "fail_accuracy", "fail_to_run", "timeout", "eager_fail")
# tessel.stats() counters that a row keeps.
TESSEL_STATS = ("graphs_compiled", "forward_graphs_compiled", "backward_graphs_compiled",
                "graphs_split", "graphs_fallback", "kernels", "fallback_reasons", "native_ops")
VERSIONS = ("torch", "triton", "torch-mlir", "transformers", "timm", "torchvision")


class Row(dict):
    """A row of results, written to `path` (when given) at each phase, so that the suite
    can tell how far a process got before it crashed or ran out of time."""

    def __init__(self, path: Path | None, **fields):
        super().__init__(fields, phase_s={})
        self.path = path
        self.since = time.perf_counter()

    def phase(self, name: str) -> None:
        """Enter phase `name`; the seconds of the one before go to phase_s."""
        now = time.perf_counter()
        if "phase" in self:
            self["phase_s"][self["phase"]] = now - self.since
        self["phase"], self.since = name, now
        if self.path is not None:
            # Replaced whole, never left half-written by a kill.
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps(self))
            os.replace(partial, self.path)

    @contextlib.contextmanager
    def exclusive(self, lock: Path | None):
        """Held while this process runs what must not overlap another's timed calls: its
        own timed calls, and its stretches of GPU work (the references, warm-up). The
        suite's processes compile side by side, but run those one at a time; the wait
        adds up in lock_wait_s. No lock when `lock` is None (one process alone)."""
        if lock is None:
            yield
            return
        with open(lock, "a") as handle:
            start = time.perf_counter()
            fcntl.flock(handle, fcntl.LOCK_EX)
            self["lock_wait_s"] = self.get("lock_wait_s", 0.0) + time.perf_counter() - start
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def environment(device: str) -> dict:
    env = {"cpu": f"{cpu_model()}, {os.cpu_count()} cores", "python": platform.python_version(),
           # Other work on the machine slows every backend's timed calls: say how much.
           "load_average": round(os.getloadavg()[0], 2)}
    for name in VERSIONS:
        env[name] = package_version(name)
    if env["torch-mlir"] == "not installed" and importlib.util.find_spec("torch_mlir"):
        env["torch-mlir"] = "unpacked, without package metadata"
    if torch.device(device).type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def compile_fn(fn: Callable, backend: str, mode: str, options: dict | None = None,
               fullgraph: bool = False) -> Callable:
    """torch.compile(fn) under `backend` (inductor or mlir) and `mode`. The mlir backend is
    passed as tessel's callable rather than by name: the name comes from an entry point,
    which a checkout used through PYTHONPATH alone (the GPU machines) does not install.
    torch.compile takes `mode` or `options`, not both: with options, tessel reads the
    mode from them."""
    if backend == "inductor":
        return torch.compile(fn, mode=mode, fullgraph=fullgraph)
    from tessel.frontend.backend import mlir_backend

    if options:
        return torch.compile(fn, backend=mlir_backend, options=options | {"mode": mode},
                             fullgraph=fullgraph)
    return torch.compile(fn, backend=mlir_backend, mode=mode, fullgraph=fullgraph)


def with_mark_step(fn: Callable, mode: str) -> Callable:
    """fn, preceded on every call by cudagraph_mark_step_begin() under reduce-overhead, as
    PyTorch's harness does: each call is a new step of Inductor's CUDA graph trees, whose
    replays may then overwrite the previous call's outputs."""
    if mode != "reduce-overhead":
        return fn

    def step(*args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        return fn(*args, **kwargs)
    return step


def cpu_tensors(output) -> list[torch.Tensor]:
    """The output's tensors (a ModelOutput's fields too), copied to the CPU: a CUDA
    graph's outputs are overwritten by its next replay, and references kept on the CPU
    leave the GPU's peak memory to the model."""
    return [t.detach().cpu() for t in tree_leaves(output) if isinstance(t, torch.Tensor)]


def cast_floats(tree, dtype: torch.dtype):
    """The tree with its floating-point tensors cast to `dtype` (token ids stay)."""
    return tree_map(lambda t: t.to(dtype)
                    if isinstance(t, torch.Tensor) and t.is_floating_point() else t, tree)


def fp64_run(model: torch.nn.Module, run: Callable) -> list[torch.Tensor] | None:
    """run(copy) on a float64 copy of `model` (run casts its inputs), as the accuracy
    reference; None where it cannot run (out of memory, an op without float64), which
    turns the verdict to cosine similarity, as in PyTorch's harness."""
    try:
        copy64 = copy.deepcopy(model).to(torch.float64)
        with torch.no_grad():
            return cpu_tensors(run(copy64))
    except Exception:  # noqa: BLE001 - any failure only loses the fp64 reference
        return None
    finally:
        copy64 = None
        release_cached_memory()


def release_cached_memory() -> None:
    """Give the memory PyTorch's allocator keeps cached back to the GPU, for the suite's
    other processes (a no-op without CUDA)."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def on_device(tensors: list[torch.Tensor] | None, device: str) -> list[torch.Tensor] | None:
    """The references back on the device for the verdict: a CPU takes half a minute over
    a 256k vocabulary's logits in float64."""
    return None if tensors is None else [t.to(device) for t in tensors]


def accurate(eager: list[torch.Tensor], compiled: list[torch.Tensor],
             fp64: list[torch.Tensor] | None, dtype: torch.dtype,
             tolerance: float | None = None) -> bool:
    """PyTorch's verdict (same): allclose, else the fp64 RMSE rule, else cosine; at
    `tolerance`, by default the inference one of `dtype`."""
    try:
        return same(eager, compiled, fp64_ref=fp64, cos_similarity=fp64 is None,
                    tol=tolerance or TOLERANCE[dtype])
    except Exception:  # noqa: BLE001 - same() raises on mismatched structure: not the same
        return False


# A file the suite keeps listing its running rows' process groups in (suite.py).
PEERS_ENV = "TESSEL_SUITE_PEERS"


def timed(eager: Callable, compiled: Callable, device: str,
          repeats: int) -> tuple[float | None, float | None]:
    """(eager median ms, compiled median ms), alternated in rounds, with the suite's
    other rows paused; no timing (None, None) for 0 repeats, a run that checks accuracy
    alone."""
    if repeats == 0:
        return None, None
    with others_paused():
        medians = interleaved_medians({"eager": eager, "compiled": compiled}, (), device,
                                      repeats)
    return medians["eager"], medians["compiled"]


@contextlib.contextmanager
def others_paused():
    """The suite's other row processes stopped (SIGSTOP to their process groups, compile
    workers included) while this one times, continued after. The suite's lock keeps
    their timed calls and GPU work apart already, but not their compiles: the 7 other
    processes of an 8-job run compiling beside a host-bound model's timed calls moved
    its median by up to 2x between runs, eager's as much as a compiled one's."""
    peers = os.environ.get(PEERS_ENV)
    groups = set()
    if peers and os.path.exists(peers):
        groups = {int(g) for g in Path(peers).read_text().split()} - {os.getpgrp()}
    paused = []
    try:
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGSTOP)
                paused.append(group)
        yield
    finally:
        for group in paused:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGCONT)


def reset_peak_memory(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_memory(device: str) -> int | None:
    """Bytes allocated at most since reset_peak_memory; None off CUDA."""
    if torch.device(device).type != "cuda":
        return None
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def reset_counters() -> None:
    tessel.reset_stats()
    dynamo_counters.clear()


def compiler_counters(backend: str) -> dict:
    """Dynamo's graphs and graph breaks, and for mlir tessel's counters."""
    out = {"dynamo_graphs": dynamo_counters["stats"]["unique_graphs"],
           "graph_breaks": sum(dynamo_counters["graph_break"].values())}
    if backend == "mlir":
        stats = tessel.stats()
        out |= {key: stats[key] for key in TESSEL_STATS}
    return out


def failure(row: Row, status: str, exc: BaseException) -> Row:
    """The row of a failed run: its status and the exception's first line; the whole
    traceback goes to stderr (the suite's log of the row)."""
    traceback.print_exception(exc, file=sys.stderr)
    row.update(status=status, error=error_text(exc))
    return row

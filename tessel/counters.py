"""Process-wide compile counters, read with `tessel.stats()`."""

from __future__ import annotations

import copy
import logging
import time
from contextlib import contextmanager

_EMPTY = {
    "graphs_compiled": 0,           # graphs that run through MLIR-generated code
    "forward_graphs_compiled": 0,
    "backward_graphs_compiled": 0,
    "graphs_fallback": 0,           # graphs that run entirely eagerly
    "graphs_cached": 0,             # compiled graphs loaded from the on-disk graph cache
    "graphs_cached_before_aot": 0,  # ... of those, inference graphs that skipped aot_autograd
    "graphs_split": 0,              # graphs whose unsupported ops run eagerly between compiled pieces
    "fallback_reasons": [],         # "graph N: op: reason" per op or graph run eagerly
    "native_ops": [],               # "graph N: op: reason" per op left to PyTorch on purpose
    "kernels": 0,                   # kernels over all compiled graphs
    "kernels_loaded_from_cubins": 0,  # ... loaded from the graph cache without Triton's JIT
    "accuracy_failures": 0,         # calls whose compiled result differed (check_accuracy)
    "cuda_graphs_declined": 0,      # reduce-overhead captures slower than plain launches
    # Per call of a compiled graph that writes its inputs (not per CUDA graph replay):
    "inputs_written_in_place": 0,   # inputs its kernels wrote in place
    "inputs_copied_back": 0,        # inputs written from a result after the call
    # Per joint graph partitioned (frontend/partitioner.py): what its forward computes
    # and saves for the backward.
    "tensors_saved_for_backward": 0,
    "bytes_saved_for_backward": 0,
    "compile_seconds": {},          # stage name -> seconds, summed over graphs
}
_stats = copy.deepcopy(_EMPTY)
log = logging.getLogger("tessel")


def stats() -> dict:
    """A snapshot of the counters: graphs_compiled, graphs_fallback, kernels, compile_seconds, ..."""
    return copy.deepcopy(_stats)


def reset_stats() -> None:
    """Zero every counter."""
    _stats.clear()
    _stats.update(copy.deepcopy(_EMPTY))


def count(name: str, amount: int = 1) -> None:
    _stats[name] += amount


def record_fallback(reason: str) -> None:
    _stats["fallback_reasons"].append(reason)


def record_native(reason: str) -> None:
    _stats["native_ops"].append(reason)


@contextmanager
def timed_stage(stage: str):
    """Add the wall time of the `with` body to compile_seconds[stage]."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds = _stats["compile_seconds"]
        seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - start


def count_compiled(graph_name: str, kind: str, kernels: int) -> None:
    """A graph of `kind` compiled into `kernels` kernels (or loaded so from the cache)."""
    count("graphs_compiled")
    count("backward_graphs_compiled" if kind.startswith("backward") else "forward_graphs_compiled")
    count("kernels", kernels)
    log.info("tessel: compiled graph %s into %d kernel(s)", graph_name, kernels)

"""A forward row: one model's inference call under a backend and mode, against eager.

In order, as PyTorch's harness: build the model and inputs (seeded), the fp64 reference,
eager's output, then the compiled first call (timed: compile included), its accuracy,
warm-up (peak memory from its start; the last warm-up call's output is judged too: under
reduce-overhead it replays the CUDA graph that the timed calls replay), and eager and
compiled calls alternated in rounds, medians of each. The references, the warm-up and
the timed calls hold the suite's lock (Row.exclusive); the first call, which
compiles, runs beside other processes.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from benchmarks.models import catalog, measure
from benchmarks.run import max_abs_error, ratio, synchronize


def run_forward(spec: catalog.ModelSpec, row: measure.Row, backend: str, mode: str,
                device: str, dtype: torch.dtype, options: dict | None, tiny: bool,
                warmup: int, repeats: int, lock: Path | None) -> measure.Row:
    torch.manual_seed(0)
    built = catalog.build(spec, device, tiny)
    row.update(batch_size=built.batch_size, size=built.size)
    model = built.model
    compiled = measure.with_mark_step(measure.compile_fn(model, backend, mode, options), mode)
    inputs = measure.cast_floats((built.args, built.kwargs), dtype)

    def call(module, inputs=inputs):
        args, kwargs = inputs
        return module(*args, **kwargs)

    with torch.no_grad():
        with row.exclusive(lock):
            row.phase("fp64 reference")
            fp64 = measure.fp64_run(model, lambda copy64: call(
                copy64, measure.cast_floats((built.args, built.kwargs), torch.float64)))
            row["reference"] = "cosine" if fp64 is None else "fp64"
            row.phase("eager")
            model.to(dtype)
            try:
                eager_out = measure.cpu_tensors(call(model))
            except Exception as exc:  # noqa: BLE001 - a model eager cannot run is its own status
                return measure.failure(row, "eager_fail", exc)

        row.phase("compile")
        measure.reset_counters()
        try:
            start = time.perf_counter()
            first = call(compiled)
            synchronize(device)
            row["first_call_s"] = time.perf_counter() - start
            first = measure.cpu_tensors(first)
            with row.exclusive(lock):
                row.phase("warm-up")
                measure.reset_peak_memory(device)
                for _ in range(warmup):
                    call(model)
                row["eager_peak_memory"] = measure.peak_memory(device)
                measure.reset_peak_memory(device)
                for _ in range(warmup):
                    last = call(compiled)
                row["peak_memory"] = measure.peak_memory(device)
                last = measure.cpu_tensors(last)
                row.update(measure.compiler_counters(backend))
                row.phase("timing")
                row["eager_ms"], row["compiled_ms"] = measure.timed(
                    lambda: call(model), lambda: call(compiled), device, repeats)
        except Exception as exc:  # noqa: BLE001 - the compiled model's failure is the row's
            row.update(measure.compiler_counters(backend))
            return measure.failure(row, "fail_to_run", exc)

    row.phase("accuracy")
    row["speedup"] = ratio(row["eager_ms"], row["compiled_ms"])
    eager_out, fp64, first, last = (measure.on_device(tensors, device)
                                    for tensors in (eager_out, fp64, first, last))
    row["max_abs_error"] = max(max_abs_error(first, eager_out), max_abs_error(last, eager_out))
    passes = all(measure.accurate(eager_out, out, fp64, dtype) for out in (first, last))
    row["status"] = "pass" if passes else "fail_accuracy"
    return row

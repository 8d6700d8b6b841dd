"""Kernel launches and host time per training step on the Triton target, without a GPU.

The steps are the tests' tiny models (tests/test_models.py: an MLP, a CNN with batch
norms, a transformer encoder layer) trained as tests/test_training.py trains them:
zero_grad, forward, MSE loss, backward and a foreach Adam step, compiled as one
function with options={"target": "triton"}. Each runs under TRITON_INTERPRET=1 on CPU
tensors, with the gpu pipeline as it is, without fuse-horizontally and without
write-inputs-in-place, each against an eager copy of the model (the loss after the
last warm-up step must match eager's). Then the optimizer's step alone, a foreach Adam over 160 parameters, compiled
and run as dry runs only.

Per step, after warm-up:
- launches: the host programs' kernel launches (forward, backward and the optimizer's
  graph together);
- buffers: the buffers the host programs allocate (torch.empty_strided calls of a dry
  run's step), and of the inputs the graphs write (parameters, optimizer states,
  running statistics), how many their kernels wrote in place and how many were copied
  back from a result (tessel.stats()'s per-call counters);
- host ms: the median CPU time (time.process_time, on one thread: on a shared
  machine, other processes' load inflates wall time, not this) of a whole step run
  as a dry run (launcher.recorded_launches:
  each launch is recorded, not run, so Triton's interpreter does not run, and
  scatters, whose indices no kernel wrote, are skipped). It is the CPU time of
  Dynamo's guards, aot_autograd's wrappers, the host programs (allocations, views,
  stride reads, aten's library calls on CPU tensors) and eager's zero_grad and
  backward bookkeeping; it leaves out what a launch costs on a GPU (benchmarks/host_costs.py measured about
  10 us a launch through a loaded kernel's launcher on an H100) and the work of the
  library calls on a GPU.

Usage:
    TRITON_INTERPRET=1 python -m benchmarks.train_step_launches [--steps 20]
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import statistics
import sys
import time
from pathlib import Path

import torch

import tessel
from tessel.passes.registry import lookup_pipeline
from tessel.targets.triton.launcher import recorded_launches

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_models import cnn_with_batch_norm, mlp, transformer_encoder_layer

MODELS = {"mlp": mlp, "cnn_with_batch_norm": cnn_with_batch_norm,
          "transformer_encoder_layer": transformer_encoder_layer}
WARMUP_STEPS = 3


def train_step(model: torch.nn.Module):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)

    def step(inputs: tuple, target: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(True)
        loss = torch.nn.functional.mse_loss(model(*inputs), target)
        loss.backward()
        optimizer.step()
        return loss
    return step


def without(pass_name: str) -> str:
    """The gpu pipeline less its pass `pass_name`."""
    text = lookup_pipeline("gpu")
    # The pass with its options, if any (write-inputs-in-place{kernel-checks-abort=true}).
    found = re.search(rf",{re.escape(pass_name)}(\{{[^}}]*\}})?(?=[,)])", text)
    assert found, text
    return text[:found.start()] + text[found.end():]


def measure(build, pipeline: str | None, steps: int) -> dict:
    torch.manual_seed(0)
    model, inputs = build()
    model.train()
    reference = copy.deepcopy(model)
    target = torch.randn_like(model(*inputs))
    options = {"target": "triton", "fallback": False}
    if pipeline is not None:
        options["pipeline"] = pipeline
    torch._dynamo.reset()
    tessel.reset_stats()
    compiled = torch.compile(train_step(model), backend="mlir", options=options)
    eager = train_step(reference)
    for _ in range(WARMUP_STEPS):
        loss, expected = compiled(inputs, target), eager(inputs, target)
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)
    stats = tessel.stats()
    assert stats["graphs_fallback"] == 0 and stats["graphs_compiled"] >= 2, stats

    def step():
        compiled(inputs, target)
    return {**counted_step(step), "host_ms": host_milliseconds(step, steps)}


def counted_step(step) -> dict:
    """Launches, host buffer allocations and input writes of one dry run of `step`."""
    allocations = 0
    empty_strided = torch.empty_strided

    def counted(*args, **kwargs):
        nonlocal allocations
        allocations += 1
        return empty_strided(*args, **kwargs)
    tessel.reset_stats()
    torch.empty_strided = counted
    try:
        launches = len(recorded_launches(step, ()))
    finally:
        torch.empty_strided = empty_strided
    stats = tessel.stats()
    return {"launches": launches, "buffers": allocations,
            "in_place": stats["inputs_written_in_place"],
            "copied_back": stats["inputs_copied_back"]}


def host_milliseconds(step, steps: int) -> float:
    """The median CPU time of `steps` dry runs of `step`, in ms."""
    times = []
    for _ in range(steps):
        start = time.process_time()
        recorded_launches(step, ())
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3


# The optimizer's step alone: foreach Adam over 160 parameters, small so that the CPU's
# copies of their values (the write-back of the updated parameters and states, a
# device copy on a GPU) cost little beside the host's work per tensor.
OPTIMIZER_SHAPES = [(16, 16), (16,), (8, 8, 3, 3), (8,)] * 40


def measure_optimizer_step(pipeline: str | None, steps: int) -> dict:
    """Launches and host time of a compiled foreach Adam step, compiled and timed as
    dry runs (its kernels never run: only the host matters here)."""
    parameters = [torch.nn.Parameter(torch.zeros(shape)) for shape in OPTIMIZER_SHAPES]
    for parameter in parameters:
        parameter.grad = torch.zeros_like(parameter)
    options = {"target": "triton", "fallback": False}
    if pipeline is not None:
        options["pipeline"] = pipeline
    torch._dynamo.reset()
    compiled = torch.compile(torch.optim.Adam(parameters, foreach=True).step,
                             backend="mlir", options=options)
    for _ in range(WARMUP_STEPS):
        recorded_launches(compiled, ())
    return {**counted_step(compiled), "host_ms": host_milliseconds(compiled, steps)}


def row(result: dict) -> str:
    return (f"{result['launches']} | {result['buffers']} | {result['in_place']} / "
            f"{result['copied_back']} | {result['host_ms']:.2f} |")


def on_the_interpreter() -> None:
    """Set a process up to run Triton kernels in the interpreter on CPU tensors, as these
    measurements do, or exit saying how to run it."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("run with TRITON_INTERPRET=1 (kernels run in Triton's interpreter)")
    torch.set_num_threads(1)  # the 2-core VM: no thread pool waiting on a busy core
    torch.set_flush_denormal(True)  # dry-run buffers hold garbage, denormals among it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    on_the_interpreter()
    print("| model | pipeline | launches a step | buffers allocated a step | inputs written "
          "in place / copied back a step | host ms a step (median) |")
    print("|---|---|---|---|---|---|")
    pipelines = (("gpu", None),
                 *((f"gpu without {name}", without(name))
                   for name in ("fuse-horizontally", "write-inputs-in-place")))
    for name, build in MODELS.items():
        for label, pipeline in pipelines:
            print(f"| {name} | {label} | {row(measure(build, pipeline, args.steps))}",
                  flush=True)
    for label, pipeline in pipelines:
        print(f"| Adam step alone, {len(OPTIMIZER_SHAPES)} parameters | {label} | "
              f"{row(measure_optimizer_step(pipeline, args.steps))}", flush=True)


if __name__ == "__main__":
    main()

"""The torch.compile tutorial's train step, side by side: eager, Inductor and mlir.

Usage (on a GPU machine):
    python -m benchmarks.train_step [--backends eager,inductor-reduce-overhead,...]
                                    [--steps 20] [--rounds 0]
                                    [--output benchmarks/results/train_step_cuda.md]

The step is the tutorial's (../shared/reference): densenet121 with random weights,
Adam, cross-entropy, `opt.zero_grad(True)` / forward / `loss.backward()` /
`opt.step()` compiled as one function, a batch of 16 3x128x128 images. Each backend
trains its own copy of the same initial model on the same batches, in this one
process. Per backend: the first step (compile included, cold caches), the median
step time over `--steps` timed steps after 3 warm-up steps (each step synchronized,
as a training loop that reads its loss is), and the first step's loss against
eager's. The step is bound by host time, which moves by 20% and more from one process
or machine to the next: with `--rounds N`, the backends, once compiled and warmed up,
are timed in N alternating rounds of `--steps` / N steps each instead of one after the
other, so that each sees the same spells of a busy host. Backends: eager, inductor and mlir, each compiled ones also with
mode="reduce-overhead" (the tutorial's mode).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import tessel
from benchmarks.run import environment

BACKENDS = ("eager", "inductor", "inductor-reduce-overhead", "mlir", "mlir-reduce-overhead")
WARMUP_STEPS = 3


def train_step(model: torch.nn.Module):
    optimizer = torch.optim.Adam(model.parameters())

    def step(data: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(True)
        loss = torch.nn.CrossEntropyLoss()(model(data), labels)
        loss.backward()
        optimizer.step()
        return loss
    return step


def compiled(backend: str, step):
    if backend == "eager":
        return step
    compiler, _, mode = backend.partition("-")
    return torch.compile(step, backend=compiler, mode=mode or None)


def batches(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    torch.manual_seed(1)
    return [(torch.randn(16, 3, 128, 128, device="cuda"),
             torch.randint(1000, (16,), device="cuda")) for _ in range(count)]


def prepared(backend: str, initial: torch.nn.Module, data: list, reset: bool = True
             ) -> tuple[dict, object]:
    """`backend`'s step on its own copy of the model, compiled and warmed up: its first
    step's time and loss (and for mlir, its graphs), and the step. Dynamo's caches are
    emptied first where `reset`; kept, they hold the other backends' compiled steps."""
    if reset:
        torch._dynamo.reset()
    tessel.reset_stats()
    step = compiled(backend, train_step(copy.deepcopy(initial)))
    start = time.perf_counter()
    first_loss = step(*data[0]).item()
    first_step_s = time.perf_counter() - start
    for batch in data[1:1 + WARMUP_STEPS]:
        step(*batch).item()
    result = {"backend": backend, "first_step_s": first_step_s, "first_loss": first_loss}
    if backend.startswith("mlir"):
        stats = tessel.stats()
        result.update(graphs_compiled=stats["graphs_compiled"],
                      graphs_fallback=stats["graphs_fallback"])
    return result, step


def timed(step, batches: list) -> list[float]:
    times = []
    for batch in batches:
        start = time.perf_counter()
        step(*batch).item()
        times.append(time.perf_counter() - start)
    return times


def measure(backends: list[str], initial: torch.nn.Module, data: list, rounds: int
            ) -> list[dict]:
    """Each backend's result: its median step over data[1 + WARMUP_STEPS:], timed right
    after its compile, or with `rounds`, in that many rounds alternating between the
    backends (all compiled first)."""
    timing = data[1 + WARMUP_STEPS:]
    if not rounds:
        results = []
        for backend in backends:
            result, step = prepared(backend, initial, data)
            results.append({**result, "times": timed(step, timing)})
    else:
        # Dynamo keeps each backend's code (the steps' closures differ): reset once.
        torch._dynamo.reset()
        prepared_steps = [prepared(backend, initial, data, reset=False) for backend in backends]
        results = [{**result, "times": []} for result, _ in prepared_steps]
        size = max(1, len(timing) // rounds)
        for round_index in range(rounds):
            batches = timing[round_index * size:(round_index + 1) * size] or timing[:size]
            for result, (_, step) in zip(results, prepared_steps):
                result["times"] += timed(step, batches)
    for result in results:
        times = result.pop("times")
        result.update(step_ms=1000 * statistics.median(times), steps=len(times))
        print(f"[{result['backend']}] {result}", file=sys.stderr)
    return results


def markdown(env: dict, results: list[dict]) -> str:
    eager = next((r for r in results if r["backend"] == "eager"), None)
    lines = ["# The tutorial's train step (densenet121, Adam, batch 16, 3x128x128)", ""]
    lines += [f"- {key}: {value}" for key, value in env.items()] + [""]
    lines += ["| backend | step ms (median) | vs eager | first step s | first loss - eager's |"
              " graphs compiled / fallen back |", "|---|---|---|---|---|---|"]
    for r in results:
        speedup = f"{eager['step_ms'] / r['step_ms']:.2f}x" if eager else "—"
        loss = f"{r['first_loss'] - eager['first_loss']:+.2e}" if eager else "—"
        graphs = (f"{r['graphs_compiled']} / {r['graphs_fallback']}"
                  if "graphs_compiled" in r else "—")
        lines.append(f"| {r['backend']} | {r['step_ms']:.2f} | {speedup} | "
                     f"{r['first_step_s']:.2f} | {loss} | {graphs} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=0,
                        help="time the backends in this many alternating rounds")
    parser.add_argument("--output", type=Path,
                        default=Path("benchmarks/results/train_step_cuda.md"))
    args = parser.parse_args(argv)
    backends = args.backends.split(",")
    if unknown := set(backends) - set(BACKENDS):
        parser.error(f"unknown backends {sorted(unknown)}; known: {', '.join(BACKENDS)}")
    if not torch.cuda.is_available():
        sys.exit("benchmarks.train_step needs a CUDA device")
    for variable, prefix in (("TORCHINDUCTOR_CACHE_DIR", "inductor-cold-"),
                             ("TESSEL_CACHE_DIR", "tessel-cold-"),
                             ("TRITON_CACHE_DIR", "triton-cold-")):
        os.environ[variable] = tempfile.mkdtemp(prefix=prefix)
    from torchvision.models import densenet121
    torch.manual_seed(0)
    initial = densenet121().cuda().train()
    data = batches(1 + WARMUP_STEPS + args.steps)
    env = environment("cuda", torch.get_num_threads(), args.steps)
    env["first steps"] = "cold: empty Inductor, tessel and Triton cache directories"
    if args.rounds:
        env["timed steps"] = f"{args.rounds} rounds alternating between the backends"
    results = measure(backends, initial, data, args.rounds)
    report = markdown(env, results)
    print(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.output.with_suffix(".json").write_text(
        json.dumps({"environment": env, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()

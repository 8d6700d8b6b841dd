"""First-call time of a workload in a fresh process, with empty caches and then with the
caches the first process left (tessel's graph cache and Triton's kernel cache).

Usage:
    python -m benchmarks.compile_cache [--device cuda] [--workloads gpu_softmax,...]
        [--inductor] [--profile DIR]

Each measurement is its own `python -m benchmarks.compile_cache --child` process, so
that nothing but the on-disk caches carries over (imports, Dynamo, in-memory caches
all start cold). Prints a markdown table: cold s, warm s, their ratio, and how many of the
warm process's graphs came from the cache, and of those how many skipped aot_autograd.

It also splits each first call into Dynamo's own part (bytecode tracing and guards:
Dynamo's compile time less the time in the backend, from torch._dynamo's
compilation_time_metrics) and the rest, which is tessel's (aot_autograd, tessel's
compile or cache lookup, the first run with its kernel loads). Only the rest is what a
backend's cache can shorten.

`--inductor` measures Inductor's first calls the same way (its FX graph and AOTAutograd
caches, in a fresh TORCHINDUCTOR_CACHE_DIR), for scale. `--profile DIR` writes a cProfile
of a third first call (warm, and not the one timed) to DIR/<workload>.prof and prints its
costliest functions.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

import torch

from benchmarks.run import WORKLOADS


def child(device: str, workload: str, backend: str, profile: str | None) -> None:
    import tessel

    fn, inputs = WORKLOADS[device][workload](device)
    compiled = torch.compile(fn, backend=backend)
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    with torch.no_grad(), profiler or contextlib.nullcontext():
        compiled(*inputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if profiler:
        profiler.dump_stats(profile)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    stats = tessel.stats()
    metrics = {name: sum(times) for name, times in
               torch._dynamo.utils.compilation_time_metrics.items()}
    dynamo = metrics["_compile.compile_inner"] - metrics["OutputGraph.call_user_compiler"]
    print(json.dumps({"seconds": seconds, "dynamo": dynamo, "cached": stats["graphs_cached"],
                      "before_aot": stats["graphs_cached_before_aot"],
                      "compiled": stats["graphs_compiled"],
                      "stages": stats["compile_seconds"]}))


def first_call(device: str, workload: str, cache: str, backend: str = "mlir",
               profile: str | None = None, environment: dict[str, str] | None = None) -> dict:
    """The first call of `workload` in a fresh process, with the caches in `cache`."""
    environment = dict(os.environ, TESSEL_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache,
                       TRITON_CACHE_DIR=f"{cache}/triton-kernels", **(environment or {}))
    command = [sys.executable, "-m", "benchmarks.compile_cache", "--child", "--device", device,
               "--workloads", workload, "--backend", backend]
    result = subprocess.run(command + (["--profile", profile] if profile else []),
                            capture_output=True, text=True, env=environment, check=True)
    if profile:
        print(f"<!-- warm first call of {workload}, costliest functions:\n"
              f"{result.stderr[-6000:]}\n-->", file=sys.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workloads", default=None, help="comma-separated (default: all)")
    parser.add_argument("--inductor", action="store_true",
                        help="also measure Inductor's cold and warm first calls")
    parser.add_argument("--profile", default=None,
                        help="directory for a cProfile of each warm first call")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="mlir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.workloads.split(",") if args.workloads else list(WORKLOADS[args.device])
    if args.child:
        child(args.device, names[0], args.backend, args.profile)
        return
    print("| workload | cold first call s | warm first call s | cold / warm | graphs from cache "
          "| of those, without aot_autograd | Dynamo's part cold / warm s "
          "| the rest cold / warm s | the rest, cold / warm |"
          + (" Inductor cold / warm s | Inductor cold / warm |" if args.inductor else ""))
    print("|---" * (11 if args.inductor else 9) + "|")
    for name in names:
        with tempfile.TemporaryDirectory(prefix="tessel-cache-") as cache:
            cold = first_call(args.device, name, cache)
            warm = first_call(args.device, name, cache)
            if args.profile:  # a third process: profiling slows the call it times
                first_call(args.device, name, cache, profile=f"{args.profile}/{name}.prof")
        row = (f"| {name} | {cold['seconds']:.2f} | {warm['seconds']:.2f} | "
               f"{cold['seconds'] / warm['seconds']:.1f}x | {warm['cached']} of {warm['compiled']} "
               f"| {warm['before_aot']} | {cold['dynamo']:.2f} / {warm['dynamo']:.2f} "
               f"| {cold['seconds'] - cold['dynamo']:.2f} / {warm['seconds'] - warm['dynamo']:.2f} "
               f"| {(cold['seconds'] - cold['dynamo']) / (warm['seconds'] - warm['dynamo']):.1f}x |")
        if args.inductor:
            with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache:
                cold = first_call(args.device, name, cache, "inductor")
                warm = first_call(args.device, name, cache, "inductor")
            row += (f" {cold['seconds']:.2f} / {warm['seconds']:.2f} "
                    f"| {cold['seconds'] / warm['seconds']:.1f}x |")
        print(row, flush=True)


if __name__ == "__main__":
    main()

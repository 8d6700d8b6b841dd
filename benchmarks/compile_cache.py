"""First-call time of a workload in a fresh process, with empty caches and then with the
caches the first process left (tessel's graph cache and Triton's kernel cache).

Usage:
    python -m benchmarks.compile_cache [--device cuda] [--workloads gpu_softmax,...]

Each measurement is its own `python -m benchmarks.compile_cache --child` process, so
that nothing but the on-disk caches carries over (imports, Dynamo, in-memory caches
all start cold). Prints a markdown table: cold s, warm s, their ratio, and how many of the
warm process's graphs came from the cache, and of those how many skipped aot_autograd.

It also splits each first call into Dynamo's own part (bytecode tracing and guards:
Dynamo's compile time less the time in the backend, from torch._dynamo's
compilation_time_metrics) and the rest, which is tessel's (aot_autograd, tessel's
compile or cache lookup, the first run with its kernel loads). Only the rest is what a
backend's cache can shorten.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

from benchmarks.run import WORKLOADS


def child(device: str, workload: str) -> None:
    import tessel

    fn, inputs = WORKLOADS[device][workload](device)
    compiled = torch.compile(fn, backend="mlir")
    start = time.perf_counter()
    with torch.no_grad():
        compiled(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    stats = tessel.stats()
    metrics = {name: sum(times) for name, times in
               torch._dynamo.utils.compilation_time_metrics.items()}
    dynamo = metrics["_compile.compile_inner"] - metrics["OutputGraph.call_user_compiler"]
    print(json.dumps({"seconds": seconds, "dynamo": dynamo, "cached": stats["graphs_cached"],
                      "before_aot": stats["graphs_cached_before_aot"],
                      "compiled": stats["graphs_compiled"]}))


def first_call(device: str, workload: str, cache: str) -> dict:
    environment = dict(os.environ, TESSEL_CACHE_DIR=cache, TRITON_CACHE_DIR=f"{cache}/triton-kernels")
    result = subprocess.run([sys.executable, "-m", "benchmarks.compile_cache", "--child",
                             "--device", device, "--workloads", workload],
                            capture_output=True, text=True, env=environment, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workloads", default=None, help="comma-separated (default: all)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.workloads.split(",") if args.workloads else list(WORKLOADS[args.device])
    if args.child:
        child(args.device, names[0])
        return
    print("| workload | cold first call s | warm first call s | cold / warm | graphs from cache "
          "| of those, without aot_autograd | Dynamo's part cold / warm s "
          "| the rest cold / warm s | the rest, cold / warm |")
    print("|---" * 9 + "|")
    for name in names:
        with tempfile.TemporaryDirectory(prefix="tessel-cache-") as cache:
            cold = first_call(args.device, name, cache)
            warm = first_call(args.device, name, cache)
        print(f"| {name} | {cold['seconds']:.2f} | {warm['seconds']:.2f} | "
              f"{cold['seconds'] / warm['seconds']:.1f}x | {warm['cached']} of {warm['compiled']} "
              f"| {warm['before_aot']} | {cold['dynamo']:.2f} / {warm['dynamo']:.2f} "
              f"| {cold['seconds'] - cold['dynamo']:.2f} / {warm['seconds'] - warm['dynamo']:.2f} "
              f"| {(cold['seconds'] - cold['dynamo']) / (warm['seconds'] - warm['dynamo']):.1f}x |")


if __name__ == "__main__":
    main()

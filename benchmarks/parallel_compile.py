"""Whether Triton compiles in parallel on threads or processes: the kernels of a dumped
`*_triton_kernels.py` compiled for sm_90 (no GPU needed) one by one, then on a thread
pool, then on a process pool (its start counted in), each time into an empty Triton
cache, after one compile that warms the compiler. Kernels are compiled with every
argument an fp32 pointer or an i32 stride, which is enough to time the compiler.

The figures quoted in targets/triton/compile_pool.py and launcher.py come from this
script on the 16-core H100 machine (triton 3.6, 2026-11-22), on densenet121's 186
distinct kernels: 16.84 s one by one, 7.60 s on 16 threads, 3.59 s on 16 processes.

Usage:
    python -m benchmarks.parallel_compile DUMP/000_inference/04_triton_kernels.py [--threads N]
    python -m benchmarks.parallel_compile --first-calls densenet121,resnet50 [--device cuda]

`--first-calls` times, instead, whole first calls of benchmark workloads, each in a fresh
process with empty caches (benchmarks/compile_cache.py's measurement): kernels compiled
on the parent's threads only (TESSEL_COMPILE_PROCESSES=0), then on tessel's compile pool
(its default size), with the `triton-compile` stage of each.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile


def _kernels(path: str) -> list[triton.JITFunction]:
    spec = importlib.util.spec_from_file_location("dumped_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [value for value in vars(module).values()
            if isinstance(value, triton.runtime.jit.JITFunction) and "BLOCK" in value.arg_names]


def _compile(kernel: triton.JITFunction) -> None:
    signature = {name: "constexpr" if name == "BLOCK" else "i32" if "stride" in name else "*fp32"
                 for name in kernel.arg_names}
    compile(ASTSource(kernel, signature, constexprs={"BLOCK": 512}),
            target=GPUTarget("cuda", 90, 32))


def _compile_in_worker(path: str, name: str) -> None:
    _compile(next(k for k in _kernels(path) if k.__name__ == name))


def first_calls(device: str, workloads: list[str]) -> None:
    from benchmarks.compile_cache import first_call

    print("| workload | first call s, threads / pool | triton-compile s, threads / pool |")
    print("|---|---|---|")
    for workload in workloads:
        calls = []
        for processes in ({"TESSEL_COMPILE_PROCESSES": "0"}, {}):
            with tempfile.TemporaryDirectory(prefix="tessel-cache-") as cache:
                calls.append(first_call(device, workload, cache, environment=processes))
        print(f"| {workload} | {calls[0]['seconds']:.2f} / {calls[1]['seconds']:.2f} "
              f"| {calls[0]['stages']['triton-compile']:.2f} / "
              f"{calls[1]['stages']['triton-compile']:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="?", help="a dumped *_triton_kernels.py")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--first-calls", default=None,
                        help="comma-separated benchmark workloads to time whole first calls of")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    if args.first_calls:
        first_calls(args.device, args.first_calls.split(","))
        return
    if not args.kernels:
        parser.error("give a dumped *_triton_kernels.py, or --first-calls")
    kernels = _kernels(args.kernels)
    # The first compile of a process also initializes the compiler: keep it out of both.
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-warm-up-")
    _compile(kernels[0])
    for label, threads in (("one by one", 1), (f"{args.threads} threads", args.threads)):
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cold-")
        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(_compile, kernels))
        print(f"{len(kernels)} kernels, {label}: {time.perf_counter() - start:.2f} s")
    # Processes: the pool's start (interpreters importing Triton) counted in.
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cold-")
    start = time.perf_counter()
    with ProcessPoolExecutor(args.threads) as pool:
        list(pool.map(_compile_in_worker, [args.kernels] * len(kernels),
                      [k.__name__ for k in kernels]))
    print(f"{len(kernels)} kernels, {args.threads} processes: "
          f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()

"""Whether Triton compiles in parallel on threads: the kernels of a dumped
`*_triton_kernels.py` compiled for sm_90 (no GPU needed) one by one, then on a thread
pool, each time into an empty Triton cache, after one compile that warms the compiler. Kernels are compiled with every argument
an fp32 pointer or an i32 stride, which is enough to time the compiler.

The figures quoted in targets/triton/launcher.py come from this script on the 2-core
development VM (triton 3.9.0, 2026-11-22), on the 18 kernels of a densenet-like test
graph (tests/test_triton_target.py's _DenseBlockNet): one by one against two threads,
1.48 / 1.07 s, 2.26 / 1.37 s and 2.35 / 1.12 s in three runs.

Usage:
    python -m benchmarks.parallel_compile DUMP/000_inference/04_triton_kernels.py [--threads N]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", help="a dumped *_triton_kernels.py")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
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

"""Peak GPU memory of one call beyond what is allocated before it (weights, inputs), for
eager, Inductor and mlir side by side, after three warm-up calls.

Usage:
    python -m benchmarks.peak_memory gpt2_block resnet50 densenet121
"""

from __future__ import annotations

import sys

import torch

from benchmarks.run import WORKLOADS


def peak_mib(fn, inputs: tuple) -> float:
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        output = fn(*inputs)
        torch.cuda.synchronize()
        del output
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def main() -> None:
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name in sys.argv[1:]:
        fn, inputs = WORKLOADS["cuda"][name]("cuda")
        cells = []
        for backend in ("eager", "inductor", "mlir"):
            torch._dynamo.reset()
            compiled = fn if backend == "eager" else torch.compile(fn, backend=backend)
            cells.append(f"{backend} {peak_mib(compiled, inputs):.0f} MiB")
        print(f"{name}: peak memory of a call beyond weights and inputs: {', '.join(cells)}",
              flush=True)


if __name__ == "__main__":
    main()

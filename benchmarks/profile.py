"""Where a compiled workload's time goes: torch.profiler over a few calls, top GPU
kernels by total time, and the host time per call; with --host, cProfile's view of the
host side instead (which Python and aten calls a call spends its time in).

Usage:
    python -m benchmarks.profile --device cuda --workload resnet50 [--backend mlir|inductor]
        [--host]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.run import WORKLOADS, build

CALLS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--workload", required=True)
    parser.add_argument("--backend", default="mlir")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--host", action="store_true",
                        help="profile the host side with cProfile instead of torch.profiler")
    args = parser.parse_args()
    fn, inputs = WORKLOADS[args.device.split(":")[0]][args.workload](args.device)
    compiled = build(args.backend, fn)
    with torch.no_grad():
        for _ in range(3):
            compiled(*inputs)
        torch.cuda.synchronize()
        if args.host:
            profile_host(compiled, inputs, args.top)
            return
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
            for _ in range(CALLS):
                compiled(*inputs)
            torch.cuda.synchronize()
    table = trace.key_averages().table(sort_by="cuda_time_total", row_limit=args.top,
                                       max_name_column_width=60)
    print(f"{args.workload} under {args.backend}, {CALLS} calls")
    print(table)


def profile_host(compiled, inputs: tuple, top: int) -> None:
    """Host time per call (no synchronization inside the timed calls, so the GPU runs
    behind), then cProfile's functions by own time."""
    start = time.perf_counter()
    for _ in range(CALLS):
        compiled(*inputs)
    host_ms = (time.perf_counter() - start) * 1e3 / CALLS
    torch.cuda.synchronize()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(CALLS):
        compiled(*inputs)
    profiler.disable()
    torch.cuda.synchronize()
    print(f"host time per call: {host_ms:.3f} ms; cProfile over {CALLS} calls:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


if __name__ == "__main__":
    main()

"""Where a compiled workload's time goes: torch.profiler over a few calls, top GPU
kernels by total time, and the host time per call.

Usage:
    python -m benchmarks.profile --device cuda --workload resnet50 [--backend mlir|inductor]
"""

from __future__ import annotations

import argparse

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
    args = parser.parse_args()
    fn, inputs = WORKLOADS[args.device.split(":")[0]][args.workload](args.device)
    compiled = build(args.backend, fn)
    with torch.no_grad():
        for _ in range(3):
            compiled(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
            for _ in range(CALLS):
                compiled(*inputs)
            torch.cuda.synchronize()
    table = trace.key_averages().table(sort_by="cuda_time_total", row_limit=args.top,
                                       max_name_column_width=60)
    print(f"{args.workload} under {args.backend}, {CALLS} calls")
    print(table)


if __name__ == "__main__":
    main()

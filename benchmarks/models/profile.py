"""Where a suite model's time goes: torch.profiler over a few calls of eager and of each
compiled backend, in one process, the GPU kernels (or CPU ops) that take the most time.

    python -m benchmarks.models.profile hf_segformer hf_whisper --device cuda

prints, per model and backend, the device time of a call, its kernel launches and the
kernels that take most of it, so that a slow model's loss is named (a kernel family,
launches, eager pieces between compiled graphs) before it is worked on.
"""

from __future__ import annotations

import argparse
import functools

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.models import catalog, measure
from benchmarks.models.runner import find_spec


def device_profile(call, device: str, calls: int) -> list:
    """The profiler's events averaged by name over `calls` calls, after a warm-up call."""
    call()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(calls):
            call()
        if device == "cuda":
            torch.cuda.synchronize()
    return prof.key_averages()


def summary_lines(events, device: str, calls: int, top: int) -> list[str]:
    attribute = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    kernels = [e for e in events if getattr(e, attribute) > 0 and
               (device != "cuda" or e.device_type == torch.autograd.DeviceType.CUDA)]
    kernels.sort(key=lambda e: getattr(e, attribute), reverse=True)
    total = sum(getattr(e, attribute) for e in kernels) / calls / 1000
    launches = sum(e.count for e in kernels) // calls
    lines = [f"  {total:.3f} ms a call, {launches} kernels a call"]
    for event in kernels[:top]:
        share = getattr(event, attribute) / calls / 1000
        lines.append(f"    {share:8.3f} ms  x{event.count // calls:<4} {event.key[:110]}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backends", default="eager,inductor,mlir")
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default=None)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args(argv)
    dtype_name = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    for name in args.models:
        torch.manual_seed(0)
        built = catalog.build(find_spec(name, "forward", dtype_name), args.device, args.tiny)
        model = built.model.to(dtype)
        inputs = measure.cast_floats((built.args, built.kwargs), dtype)
        for backend in args.backends.split(","):
            fn = model if backend == "eager" else measure.compile_fn(model, backend, "default")
            torch._dynamo.reset()
            with torch.no_grad():
                events = device_profile(functools.partial(fn, *inputs[0], **inputs[1]),
                                        args.device, args.calls)
            print(f"{name} {backend}:")
            print("\n".join(summary_lines(events, args.device, args.calls, args.top)),
                  flush=True)


if __name__ == "__main__":
    main()

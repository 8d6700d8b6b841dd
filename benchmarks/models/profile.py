"""Where a suite model's time goes: torch.profiler over a few calls of eager and of each
compiled backend, each in a process of its own, the GPU kernels (or CPU ops) that take
the most time.

    python -m benchmarks.models.profile hf_segformer hf_whisper --device cuda
    python -m benchmarks.models.profile hf_mobilenet_v2 --device cpu --threads 2
    python -m benchmarks.models.profile resnet50 --device cuda --kind train
    python -m benchmarks.models.profile hf_llama --device cuda --kind generate --host
    python -m benchmarks.models.profile hf_whisper --device cuda --mode reduce-overhead
    python -m benchmarks.models.profile squeezenet1_1 --device cuda --memory

Each model and backend runs in a process of its own, as the suite's rows do: in one
process, a backend measured after another ran slower (vit_b_16's default-mode train step on an
H200: mlir 26.7 ms after Inductor, 16.9 ms alone;
benchmarks/results/profile_cuda_train_twenty_fifth_session.md).

prints, per model and backend, the time of a call (`--kind train`: of a training step,
train.py's, each backend on its own copy of the model; `--kind generate`: of a generate
row's generate() call), its kernel launches and the kernels
that take most of it, so that a slow model's loss is named (a kernel family, launches,
eager pieces between compiled graphs) before it is worked on. `--memory` lists what
is live at a call's peak, and which line allocated it. On the CPU, Inductor's
C++ kernels appear by name (its `cpp.enable_kernel_profile`), and tessel's JIT-compiled
kernels, which torch.profiler cannot see, are timed by tessel itself
(`profile_kernels`: a mark after each kernel), each with what it computes and on which
shapes; the aten ops tessel leaves native still come from torch.profiler.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import functools
import io
import linecache
import pstats
import statistics
import subprocess
import sys
import time

import torch
import torch._inductor.config as inductor_config
from torch.profiler import ProfilerActivity, profile

from benchmarks.models import catalog, generation, measure, train
from benchmarks.models.runner import MODES, find_spec
from benchmarks.run import one_malloc_policy
from tessel.targets.cpu import kernel_timer


def device_profile(call, device: str, calls: int, warmup: int = 3) -> list:
    """The profiler's events averaged by name over `calls` calls, after `warmup` calls: as
    many as the suite's rows take, since a training step's second call compiles again
    (the optimizer's state exists from then on) and Inductor autotunes in it."""
    for _ in range(warmup):
        call()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    kernel_timer.reset()
    with profile(activities=activities) as prof:
        for _ in range(calls):
            call()
        if device == "cuda":
            torch.cuda.synchronize()
    return prof.key_averages()


def wall_ms(call, calls: int, device: str = "cpu") -> tuple[float, float]:
    """The median wall time of a call, unprofiled (the profiler's own cost left out), and
    the median time the call takes to return: on CUDA, where kernels run after their
    launch, that is the host's share (launches, the host program, Python), the GPU
    idle for it whenever it exceeds the GPU time."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times, returns = [], []
    for _ in range(calls):
        sync()
        start = time.perf_counter()
        call()
        returned = time.perf_counter()
        sync()
        times.append(time.perf_counter() - start)
        returns.append(returned - start)
    return statistics.median(times) * 1e3, statistics.median(returns) * 1e3


def host_profile_lines(call, calls: int, top: int) -> list[str]:
    """cProfile of `calls` calls: the Python functions where the host's time goes, by
    their own time and by the time of all they call (a host program's, a wrapper's)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    lines = []
    for order, title in (("tottime", "own time"), ("cumtime", "time with their callees")):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        printed = out.getvalue().splitlines()
        start = next(i for i, line in enumerate(printed) if "ncalls" in line)
        lines += [f"  host functions by {title}, over all calls:"] + [
            "    " + line.strip()[:150] for line in printed[start:] if line.strip()]
    return lines


def peak_memory_lines(call, top: int) -> list[str]:
    """The allocations live at the peak of one CUDA call (after three warm-up calls),
    largest first, each with the line of generated code (a host program's, Inductor's
    wrapper's) or of the model that allocated it: where a peak above Inductor's comes
    from. What was allocated before the call (weights, inputs) is not counted."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    try:
        result = call()
        torch.cuda.synchronize()
        del result
        events = torch.cuda.memory._snapshot()["device_traces"][0]
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    live: dict[int, dict] = {}
    total = peak = 0
    at_peak: list[dict] = []
    for event in events:
        if event["action"] == "alloc":
            live[event["addr"]] = event
            total += event["size"]
            if total > peak:
                peak, at_peak = total, list(live.values())
        elif event["action"] == "free_completed" and event["addr"] in live:
            total -= live.pop(event["addr"])["size"]
    lines = [f"  peak of the call: {peak / 2**20:.1f} MiB in {len(at_peak)} allocations"]
    for event in sorted(at_peak, key=lambda e: -e["size"])[:top]:
        frame = next((f for f in event["frames"] if "host program" in f["filename"]
                      or "torchinductor" in f["filename"]), None) or \
            next((f for f in event["frames"] if f["filename"].endswith(".py")
                  and "/torch/" not in f["filename"]), {"filename": "?", "line": 0})
        code = linecache.getline(frame["filename"], frame["line"]).strip()
        lines.append(f"  {event['size'] / 2**20:9.1f} MiB  {frame['filename'].split('/')[-1]}"
                     f":{frame['line']}  {code[:110]}")
    return lines


def summary_lines(events, device: str, calls: int, top: int) -> list[str]:
    attribute = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    kernels = [e for e in events if getattr(e, attribute) > 0 and
               (device != "cuda" or e.device_type == torch.autograd.DeviceType.CUDA)]
    kernels.sort(key=lambda e: getattr(e, attribute), reverse=True)
    total = sum(getattr(e, attribute) for e in kernels) / calls / 1000
    launches = sum(e.count for e in kernels) // calls
    what = "kernels" if device == "cuda" else "profiled ops"
    lines = [f"  {total:.3f} ms a call, {launches} {what} a call"]
    for event in kernels[:top]:
        share = getattr(event, attribute) / calls / 1000
        lines.append(f"    {share:8.3f} ms  x{event.count // calls:<4} {event.key[:110]}")
    return lines


def tessel_kernel_lines(calls: int, top: int) -> list[str]:
    """tessel's CPU kernels by time a call (kernel_timer), the costliest first."""
    timed = kernel_timer.times()
    if not timed:
        return []
    total = sum(t.seconds for t in timed) / calls * 1e3
    lines = [f"  tessel kernels: {total:.3f} ms a call, {len(timed)} kernels"]
    for entry in timed[:top]:
        lines.append(f"    {entry.seconds / calls * 1e3:8.3f} ms  {entry.graph} {entry.label[:150]}")
    return lines


def _inference_call(built: catalog.Built, backend: str, mode: str, dtype: torch.dtype,
                    options: dict | None):
    model = built.model.to(dtype)
    inputs = measure.cast_floats((built.args, built.kwargs), dtype)
    fn = model if backend == "eager" else measure.with_mark_step(
        measure.compile_fn(model, backend, mode, options), mode)
    return functools.partial(fn, *inputs[0], **inputs[1])


def _generation_call(spec: catalog.ModelSpec, built: catalog.Built, backend: str, mode: str,
                     dtype: torch.dtype, options: dict | None):
    """A generate row's call: greedy tokens with a static cache, the forward compiled
    as generation.py compiles it (each call is NEW_TOKENS decode steps)."""
    model = built.model.to(dtype)
    ids = built.kwargs["input_ids"]
    generate = generation.greedy_generate(model, ids, torch.ones_like(ids))
    forward = model.forward if backend == "eager" else measure.with_mark_step(
        measure.compile_fn(model.forward, backend, mode, options, fullgraph=True), mode)
    return functools.partial(generate, forward)


def _training_call(spec: catalog.ModelSpec, built: catalog.Built, backend: str, mode: str,
                   device: str, dtype_name: str, options: dict | None):
    """A training step as the suite's train rows take it (bf16: autocast over float32
    weights), on a copy of the model of its own."""
    model = train.without_dropout(copy.deepcopy(built.model).train())
    args, kwargs, loss_of = train.training_batch(spec, built, device)
    step = train.train_step(model, loss_of, device, autocast=dtype_name == "bf16")
    fn = step if backend == "eager" else measure.with_mark_step(
        measure.compile_fn(step, backend, mode, options), mode)
    return functools.partial(fn, args, kwargs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backends", default="eager,inductor,mlir")
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default=None)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads value")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--host", action="store_true",
                        help="also cProfile the host's Python functions of each call")
    parser.add_argument("--memory", action="store_true",
                        help="also list the allocations live at one CUDA call's peak")
    parser.add_argument("--kind", choices=catalog.KINDS, default="forward",
                        help="an inference call (default), generate() or a training step")
    parser.add_argument("--mode", choices=MODES, default="default",
                        help="the compiled backends' torch.compile mode")
    parser.add_argument("--dump-dir", default=None,
                        help="tessel's dump_dir: each mlir graph's stages, kernels and host "
                             "program, to find a profiled kernel by its name")
    args = parser.parse_args(argv)
    backends = args.backends.split(",")
    if len(args.models) > 1 or len(backends) > 1:
        options = list(sys.argv[1:] if argv is None else argv)
        options = [o for o in options if o not in args.models]
        for name in args.models:
            for backend in backends:  # the last --backends given is the one taken
                subprocess.run([sys.executable, "-m", "benchmarks.models.profile", name,
                                *options, "--backends", backend], check=False)
        return
    profile_one(args, args.models[0], backends[0])


def profile_one(args: argparse.Namespace, name: str, backend: str) -> None:
    """Print the profile of model `name` under `backend`, in this process."""
    if args.threads:
        torch.set_num_threads(args.threads)
    cpu = args.device == "cpu"
    one_malloc_policy(args.device)  # as the suite's rows run (benchmarks/run.py)
    inductor_config.cpp.enable_kernel_profile = cpu
    dtype_name = args.dtype or ("fp32" if cpu else "bf16")
    dtype = measure.DTYPES[dtype_name]
    torch.manual_seed(0)
    spec = find_spec(name, args.kind, dtype_name)
    built = catalog.build(spec, args.device, args.tiny)
    options = None
    if backend == "mlir":
        options = {**({"profile_kernels": True} if cpu else {}),
                   **({"dump_dir": args.dump_dir} if args.dump_dir else {})} or None
    if args.kind == "train":
        call = _training_call(spec, built, backend, args.mode, args.device, dtype_name, options)
    elif args.kind == "generate":
        call = _generation_call(spec, built, backend, args.mode, dtype, options)
    else:
        call = _inference_call(built, backend, args.mode, dtype, options)
    with (contextlib.nullcontext() if args.kind == "train" else torch.no_grad()):
        events = device_profile(call, args.device, args.calls)
        kernels = tessel_kernel_lines(args.calls, args.top)
        wall, returned = wall_ms(call, max(args.calls, 10), args.device)
        host = host_profile_lines(call, args.calls, args.top) if args.host else []
        if args.memory and not cpu:
            host += peak_memory_lines(call, args.top)
    timing = f" {wall:.3f} ms a call (median, unprofiled)"
    if not cpu:
        timing += f", returns after {returned:.3f} ms (the host's share)"
    print(f"{name} {backend}:" + timing)
    print("\n".join(summary_lines(events, args.device, args.calls, args.top)
                    + kernels + host), flush=True)


if __name__ == "__main__":
    main()

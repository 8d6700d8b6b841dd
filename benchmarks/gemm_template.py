"""Where tessel's tl.dot template (fuse-gemm-epilogues) beats a library gemm: bf16
linear + bias + gelu, the MLP pattern, over a range of shapes.

Per shape, for eager, Inductor (cuBLAS plus a fused epilogue kernel), tessel with every
gemm a cuBLAS call plus an epilogue kernel ("mlir-library") and tessel with every gemm
a template ("mlir-template"), two figures: the median call (what a lone call costs,
host included: a single small gemm is host-bound), and the GPU time of one call, the
sum of its kernels' durations in torch.profiler (what it costs inside a model, where
the host runs ahead of the GPU). The GPU times are the measurement behind
fuse-gemm-epilogues' cost rule. With --sweep-tiles, the GPU time of the template with
each of several tiles instead (forced, so untuned), behind choose-gpu-blocks' tile
rule and the tiles autotuning tries.

Usage:
    python -m benchmarks.gemm_template [--sweep-tiles] [--repeats 50] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import tempfile

import torch
import torch.nn.functional as F

import tessel
from benchmarks.run import first_call, interleaved_medians, within_tolerance
from tessel.passes.registry import lookup_pipeline

# (rows, in features, out features): GPT-2's MLP and attention projections at a few
# token counts, a classifier head, square gemms.
SHAPES = [(64, 2048, 1000), (256, 768, 768), (512, 768, 3072), (1024, 1024, 1024),
          (2048, 768, 3072), (4096, 768, 2304), (4096, 3072, 768), (2048, 2048, 2048),
          (8192, 768, 3072), (4096, 4096, 4096), (8192, 8192, 8192)]
# MxNxK/warps/stages, for --sweep-tiles.
TILES = ["128x128x64/8/3", "128x128x64/4/4", "128x256x64/8/3", "256x128x64/8/3",
         "128x64x64/4/4", "64x128x64/4/4", "64x64x64/4/4", "64x64x128/4/3", "32x64x128/4/4"]


def _gpu_pipeline(max_multiply_adds: int, tile: str = "") -> str:
    """max-autotune's gpu pipeline, fusing gemms up to `max_multiply_adds` (0: none,
    else all that are large enough), with every template's tile `tile` if given; the
    default mode's tiles, untimed, unless the mode is given too."""
    fuse = (f"fuse-gemm-epilogues{{max-multiply-adds={max_multiply_adds}"
            + (" min-output-tiles=0}" if max_multiply_adds else "}"))
    choose = f"choose-gpu-blocks{{template-tile={tile}}}" if tile else "choose-gpu-blocks"
    return (lookup_pipeline("gpu-max-autotune").replace("fuse-gemm-epilogues", fuse)
            .replace("choose-gpu-blocks", choose))


def _linear_gelu(x, weight, bias):
    return F.gelu(F.linear(x, weight, bias), approximate="tanh")


def gpu_microseconds(fn, inputs: tuple, calls: int = 20) -> float:
    """Kernel time of one call of `fn`: the durations of the CUDA kernels (and copies)
    that `calls` calls ran, from torch.profiler, divided by `calls`."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        for _ in range(calls):
            fn(*inputs)
        torch.cuda.synchronize()
    on_gpu = [e for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(e.time_range.elapsed_us() for e in on_gpu) / calls


def _compiled(settings: dict, inputs: tuple, reference) -> tuple:
    """The compiled linear + gelu after its first call (into an empty tessel cache, so
    that each pipeline compiles), and a note when its output is off."""
    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-gemm-")
    torch._dynamo.reset()
    compiled = torch.compile(_linear_gelu, **settings)
    graphs = tessel.stats()["graphs_compiled"]
    _, output = first_call(compiled, inputs, "cuda")
    if settings.get("backend") == "mlir" and tessel.stats()["graphs_compiled"] == graphs:
        return compiled, " (NOT COMPILED: ran eagerly)"
    return compiled, "" if within_tolerance(output, reference) else " (WRONG OUTPUT)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep-tiles", action="store_true")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    # Every backend compiles the same function: more than Dynamo's default of 8 would
    # otherwise run eagerly once the limit is hit.
    torch._dynamo.config.recompile_limit = 64
    if args.sweep_tiles:
        backends = {tile: {"backend": "mlir", "options": {"pipeline": _gpu_pipeline(1 << 62, tile)}}
                    for tile in TILES}
        header = "GPU us per call; mlir-template with each tile (MxNxK/warps/stages)"
    else:
        backends = {
            "inductor": {},
            "mlir-library": {"backend": "mlir", "options": {"pipeline": _gpu_pipeline(0)}},
            "mlir-template": {"backend": "mlir", "options": {"pipeline": _gpu_pipeline(1 << 62)}},
        }
        header = "median call ms / GPU us per call"
    lines = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
             f"date {datetime.datetime.now().isoformat(timespec='minutes')}", "",
             f"Per cell: {header}.", "",
             "| m x k x n (bf16) | eager | " + " | ".join(backends)
             + ("" if args.sweep_tiles else " | template / library, GPU time") + " |",
             "|---" * (len(backends) + (2 if args.sweep_tiles else 3)) + "|"]
    print("\n".join(lines), flush=True)
    for m, k, n in SHAPES:
        torch.manual_seed(0)
        inputs = (torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
                  torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * k ** -0.5,
                  torch.randn(n, device="cuda", dtype=torch.bfloat16))
        with torch.no_grad():
            reference = _linear_gelu(*inputs)
            callables, notes = {"eager": _linear_gelu}, {"eager": ""}
            for name, settings in backends.items():
                callables[name], notes[name] = _compiled(settings, inputs, reference)
            # Each compile reset Dynamo, so the others compile again at their next call
            # (from Triton's cache): before any timing.
            for fn in callables.values():
                fn(*inputs)
            gpu = {name: gpu_microseconds(fn, inputs) for name, fn in callables.items()}
            if args.sweep_tiles:
                cells = [f"{gpu[b]:.1f}{notes[b]}" for b in callables]
            else:
                medians = interleaved_medians(callables, inputs, "cuda", args.repeats)
                cells = [f"{medians[b]:.4f} / {gpu[b]:.1f}{notes[b]}" for b in callables]
                cells.append(f"{gpu['mlir-template'] / gpu['mlir-library']:.2f}")
        lines.append(f"| {m} x {k} x {n} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    if args.output:
        with open(args.output, "w") as out:
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

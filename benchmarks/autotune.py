"""tessel's max-autotune against its default mode (and Inductor's, eager), side by side:
first-call seconds, median ms, and whether the output matches eager's.

Usage:
    python -m benchmarks.autotune [--workloads gpt2_block,...] [--repeats 50]

Runs on CUDA only (autotuning times kernels on the GPU). The mlir modes compile into
empty caches, so max-autotune's first call includes its timing of every launch. Modes
without CUDA graphs throughout, so the columns compare kernels and launches alike.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import torch

from benchmarks.run import WORKLOADS, first_call, interleaved_medians, within_tolerance

MODES = {
    "inductor": {},
    "inductor-max-autotune": {"mode": "max-autotune-no-cudagraphs"},
    "mlir": {"backend": "mlir"},
    "mlir-max-autotune": {"backend": "mlir", "mode": "max-autotune-no-cudagraphs"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="gpu_layernorm_gelu_residual,gpu_softmax,"
                        "gpu_softmax_long_rows,gpt2_block,resnet50")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-cold-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
    modes = args.modes.split(",")
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| workload | " + " | ".join(f"{m} ms (first call s)" for m in ["eager"] + modes) + " |")
    print("|---" * (len(modes) + 2) + "|")
    for name in args.workloads.split(","):
        torch.manual_seed(0)
        fn, inputs = WORKLOADS["cuda"][name]("cuda")
        with torch.no_grad():
            reference = fn(*inputs)
            callables, cells = {"eager": fn}, {"eager": ""}
            for mode in modes:
                torch._dynamo.reset()
                compiled = torch.compile(fn, **MODES[mode])
                seconds, output = first_call(compiled, inputs, "cuda")
                matches = within_tolerance(output, reference)
                callables[mode] = compiled
                cells[mode] = f" ({seconds:.2f} s{'' if matches else ', WRONG OUTPUT'})"
            for compiled in callables.values():
                for _ in range(3):
                    compiled(*inputs)
            medians = interleaved_medians(callables, inputs, "cuda", args.repeats)
        print(f"| {name} | " + " | ".join(f"{medians[m]:.3f}{cells[m]}" for m in callables)
              + " |", flush=True)


if __name__ == "__main__":
    main()

"""The memory instructions of a generated Triton kernel's PTX for sm_90, compiled on a
machine without a GPU: a proxy for how a kernel reads and writes memory (vector width
of its global loads and stores, shared memory for a layout conversion) where no GPU is
at hand to time it.

    python -m benchmarks.ptx_memory dump/<graph>/05_triton_kernels.py main_kernel_22 \\
        --pointer '*bf16' BLOCK=1024 in0_stride0=112896 ... out0_stride4=1

A kernel of static sizes compiles its strides in (KernelLauncher reads them off the
first launch): pass each one, as a launch would have it. Pointers are taken as 16-byte
aligned, as the JIT specializes the caching allocator's buffers. Counts are per
program of the kernel's code (each thread runs each instruction once, unrolled).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
from collections import Counter

_MEMORY = re.compile(r"\b((?:ld|st)\.(?:global|shared)[\w.:]*|(?:ld|st)matrix[\w.:]*)")


def memory_instructions(kernels_file: str, name: str, pointer: str,
                        constexprs: dict[str, int], num_warps: int = 4) -> tuple[Counter, int]:
    """Counts of the PTX's memory instructions by form, and the shared memory bytes."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise SystemExit("run without TRITON_INTERPRET: the interpreter compiles nothing")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    spec = importlib.util.spec_from_file_location("generated_kernels", kernels_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, name)
    signature = {arg: "constexpr" if arg in constexprs else pointer for arg in kernel.arg_names}
    aligned = {(i,): [["tt.divisibility", 16]] for i, arg in enumerate(kernel.arg_names)
               if signature[arg] != "constexpr"}
    compiled = compile(ASTSource(kernel, signature, constexprs=constexprs, attrs=aligned),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    return Counter(_MEMORY.findall(compiled.asm["ptx"])), compiled.metadata.shared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernels_file")
    parser.add_argument("name")
    parser.add_argument("constexprs", nargs="*", metavar="NAME=VALUE",
                        help="constexpr parameters: BLOCK and the strides")
    parser.add_argument("--pointer", default="*fp32", help="the tensors' pointer type")
    parser.add_argument("--num-warps", type=int, default=4)
    args = parser.parse_intermixed_args()
    constexprs = {}
    for pair in args.constexprs:
        key, _, value = pair.partition("=")
        constexprs[key] = int(value)
    counts, shared = memory_instructions(args.kernels_file, args.name, args.pointer,
                                         constexprs, args.num_warps)
    for form, count in sorted(counts.items()):
        print(f"{count:5d}  {form}")
    print(f"shared memory: {shared} bytes")


if __name__ == "__main__":
    main()

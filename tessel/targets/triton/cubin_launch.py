"""Launching compiled Triton kernels from their cubins through PyTorch's static CUDA
launcher (`torch._C._StaticCudaLauncher`, the one Inductor uses) instead of Triton's.

Triton (3.6) builds its launcher, a C extension, with gcc for each kernel signature the
first time it loads a kernel of that signature: with empty caches, that was most of
the GPT-2 block's `triton-compile` time (summed over the loading threads). PyTorch's
launcher is compiled into torch: loading a kernel is one cuModuleLoad, and a launch
costs about what calling Triton's launcher directly does (within a few per cent, for a
kernel of three arguments).

A loaded kernel is described by plain data (`CubinKernel`), which tessel's graph cache
keeps: a second process loads a cached graph's kernels without Triton's JIT, so without
its cache-key hashing of Triton's sources and its argument binding.

Where PyTorch's launcher cannot take a kernel (a torch without it, a kernel that needs
global scratch memory or a cluster, an argument type it has no code for), `describe`
says so and the kernel launches through Triton's launcher.
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from typing import Callable

import torch

from tessel import cache

# (stream, launch arguments) -> None, on the grid it was loaded for
Launch = Callable[[int, tuple], None]


@dataclass(frozen=True)
class CubinKernel:
    """What loading and launching one compiled kernel needs."""

    name: str             # the kernel function's symbol in the cubin
    cubin: str            # the cubin's path, in tessel's cache
    arch: int             # the compute capability it was compiled for (90 for sm_90)
    num_warps: int
    shared: int           # bytes of shared memory per program
    argument_types: str   # _StaticCudaLauncher's type code of each argument passed
    kept: tuple[int, ...]  # the launch arguments the kernel takes: Triton folds ints
    #                        equal to 1 into the binary, as constants
    arguments: int        # how many arguments the host program's launch passes
    scratch: int          # null scratch pointers appended, as Triton's kernel ABI has them


def available() -> bool:
    """Whether this torch has the static launcher (a CUDA build of torch 2.8 or later)."""
    return hasattr(torch._C, "_StaticCudaLauncher")


def describe(compiled, arguments: int) -> CubinKernel | None:
    """The CubinKernel of a kernel that Triton compiled for a launch of `arguments`
    arguments (its constexpr block sizes not counted), its cubin written to tessel's
    cache; None where PyTorch's launcher cannot launch it."""
    if not available() or "cubin" not in compiled.asm:
        return None
    from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
    # Inductor's parse of Triton's metadata, which follows Triton's versions: the
    # argument type codes, the constants folded in, the scratch pointers the ABI adds.
    # It refuses (NotImplementedError, or KeyError for a type) what the launcher can't do.
    compiled._cubin_path = None
    try:
        parsed = StaticallyLaunchedCudaKernel(compiled)
    except (NotImplementedError, KeyError):
        return None
    scratch = int(parsed.has_global_scratch) + int(parsed.has_profile_scratch)
    path = cache.cache_root() / "triton" / "cubins" / f"{compiled.hash}.cubin"
    if not path.exists():
        cache.write_atomically(path, compiled.asm["cubin"])
    target = compiled.metadata.target
    return CubinKernel(name=compiled.metadata.name, cubin=str(path), arch=target.arch,
                       num_warps=parsed.num_warps, shared=parsed.shared,
                       argument_types=parsed.arg_tys + "O" * scratch,
                       kept=tuple(i for i in range(arguments)
                                  if i not in parsed.full_constexprs),
                       arguments=arguments, scratch=scratch)


def loadable(kernel: CubinKernel, device: int) -> bool:
    """Whether a (cached) CubinKernel can load on `device`: its cubin is still there,
    compiled for the device's architecture."""
    major, minor = torch.cuda.get_device_capability(device)
    return kernel.arch == major * 10 + minor and os.path.exists(kernel.cubin)


def load(kernel: CubinKernel, device: int, grid: tuple[int, int, int]) -> Launch:
    """Load `kernel` on `device`; returns its launch function on `grid`. A host
    program launches at every call: the function is one Python frame, the grid and
    the kernel's constants bound, and where the kernel takes every argument (the
    common case: Triton folded no int in), no selecting function either."""
    launcher = torch._C._StaticCudaLauncher
    # (function, registers, spills) in torch 2.11; later versions put the module first.
    function = launcher._load_kernel(kernel.cubin, kernel.name, kernel.shared, device)[-3]
    scratch = (None,) * kernel.scratch
    launch_kernel, num_warps, shared = launcher._launch_kernel, kernel.num_warps, kernel.shared
    argument_types = kernel.argument_types
    grid_x, grid_y, grid_z = grid
    if tuple(kernel.kept) == tuple(range(kernel.arguments)):  # a list, from JSON
        def launch(stream: int, args: tuple) -> None:
            launch_kernel(function, grid_x, grid_y, grid_z, num_warps, shared, argument_types,
                          args + scratch, stream)
        return launch
    select = _selecting(tuple(kernel.kept))

    def launch_selected(stream: int, args: tuple) -> None:
        launch_kernel(function, grid_x, grid_y, grid_z, num_warps, shared, argument_types,
                      select(args) + scratch, stream)
    return launch_selected


def _selecting(kept: tuple[int, ...]) -> Callable[[tuple], tuple]:
    """A function that picks the `kept` positions of a tuple, as a tuple."""
    if len(kept) == 1:
        (index,) = kept
        return lambda args: (args[index],)
    if not kept:
        return lambda args: ()
    return operator.itemgetter(*kept)

"""How host programs launch their Triton kernels.

Triton's JIT launch, `kernel[grid](*args)`, binds the arguments, works out their
specialization (16-byte aligned pointers, ints equal to 1 or multiples of 16) and looks
the compiled kernel up, at every call. Measured on an H100 (triton 3.6; see
benchmarks/host_costs.py), that is 43 us per launch for a kernel with 6 tensors and 24
strides, against 10 us for calling the compiled kernel's launcher directly, which is
what a launch after the first does here.

That is sound because a host program's launches specialize the same way at every
call: shapes, strides and view offsets are fixed by the graph (a kernel with static
shapes; Dynamo guards the inputs' sizes and strides), and buffers come
from the caching allocator, aligned. What can change is the alignment of the graph's
tensor inputs, so `launch_mode` checks it once per call; a call with an unaligned
input launches through the JIT, which specializes for it. So does every launch of a
kernel with dynamic sizes.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import torch
import triton
from triton.runtime import driver

from tessel.passes.choose_gpu_blocks import template_programs
from tessel.targets.triton import compile_pool

try:  # Triton 3.4 and later: compiles that JIT warm-ups start go to an executor
    from triton.runtime._async_compile import AsyncCompileMode
except ImportError:
    AsyncCompileMode = None

# Triton specializes pointers on this alignment.
_ALIGNMENT = 16


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def launch_mode(device: torch.device, *tensors: torch.Tensor) -> tuple[bool, int | None]:
    """(direct, stream) for one call of a host program: whether launches may skip the
    JIT (CUDA, not interpreting, no launch hooks, `tensors` aligned), and the stream."""
    if device.type != "cuda" or interpreting():
        return False, None
    stream = driver.active.get_current_stream(device.index)
    # A hook is a function or None in older Tritons, a chain of them (HookChain) in newer.
    hooked = any(getattr(hook, "calls", hook) for hook in (
        triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook))
    aligned = all(t.data_ptr() % _ALIGNMENT == 0 for t in tensors)
    return aligned and not hooked, stream


# While `recorded_launches` runs: the launches a host program makes, recorded instead
# of run.
_recorded: list | None = None


def dry_running() -> bool:
    """Whether a host program runs as `recorded_launches`' dry run, on buffers no kernel
    has written."""
    return _recorded is not None


def recorded_launches(host, args: tuple) -> list[tuple[KernelLauncher, tuple]]:
    """The kernel launches of `host(*args)`, with their arguments (which set the
    kernels' specializations), from a dry run that launches nothing: the library calls
    in it run on uninitialized buffers, whose values nothing reads, and calls that
    would read them as indices (`scatter`) are skipped."""
    global _recorded
    _recorded = []
    try:
        host(*args)
        return _recorded
    finally:
        _recorded = None


def compile_in_parallel(launches: list[tuple[KernelLauncher, tuple]]) -> None:
    """Compile and load the kernels of `launches`: on the compile pool's worker
    processes (compile_pool.py), then on a thread per core, which find the workers'
    binaries in Triton's cache and compile what they could not. Threads alone are the
    fallback: Triton releases the GIL in its MLIR, LLVM and ptxas stages, not in its
    front end (186 kernels of densenet121 for sm_90 on the 16-core H100 machine: 16.8 s
    one by one, 7.6 s on 16 threads, 3.6 s on 16 processes)."""
    if AsyncCompileMode is None or not launches:
        return
    pool = compile_pool.shared_pool()
    if pool is not None:
        pool.compile(launches)
    device = torch.cuda.current_device()
    with ThreadPoolExecutor(os.cpu_count() or 1) as threads:
        with AsyncCompileMode(threads):
            for launcher, args in launches:
                launcher.warm_up(args)
        # Compiled now: a warm-up finds each kernel in the JIT's cache. Loading a kernel
        # builds its launcher, a C extension that older Tritons compile for each
        # signature: in parallel too.
        kernels = [launcher.warm_up(args) for launcher, args in launches]
        list(threads.map(lambda kernel: _load(kernel, device), kernels))


def _load(kernel, device: int) -> None:
    with torch.cuda.device(device):
        kernel.run  # noqa: B018 -- the property loads the binary and builds the launcher


class KernelLauncher:
    """One kernel of a host program, with its grid and launch options. The first
    direct launch goes through the JIT, which compiles the kernel (or finds it in
    Triton's cache); later ones call the compiled kernel's launcher."""

    def __init__(self, kernel: triton.JITFunction, grid, block: int | dict[str, int],
                 num_warps: int, sizes: int = 0, num_stages: int | None = None,
                 gemm: tuple[int, int, int] | None = None):
        self.kernel = kernel
        # A gemm template's (m, n, k): its grid is one program per BLOCK_M x BLOCK_N tile,
        # recomputed when autotuning configures other tiles.
        self.gemm = gemm
        # With `sizes` (dynamic sizes, the launch's last arguments), `grid` is a function
        # of them, and every launch goes through the JIT: new sizes and strides may
        # specialize the kernel differently.
        self.grid = grid
        self.sizes = sizes
        self.grid_xyz = None if sizes else tuple(grid) + (1,) * (3 - len(grid))
        self.configure(block, num_warps, num_stages)

    def configure(self, block: int | dict[str, int], num_warps: int,
                  num_stages: int | None) -> None:
        """Launch with this configuration from now on (also autotuning's choice).
        `block` is the kernel's BLOCK, or its constexpr block sizes by name (a gemm
        template's BLOCK_M, BLOCK_N and BLOCK_K), in the order of its parameters;
        `num_stages` pipelines a gemm template's K loop (Triton's default if None)."""
        self.block = block
        self.constants = block if isinstance(block, dict) else {"BLOCK": block}
        self.num_warps, self.num_stages, self.compiled = num_warps, num_stages, None
        if self.gemm is not None:
            m, n, _ = self.gemm
            self.grid = (template_programs(m, n, block["BLOCK_M"], block["BLOCK_N"]),)
            self.grid_xyz = self.grid + (1, 1)

    def variant(self, block: int | dict[str, int], num_warps: int,
                num_stages: int | None) -> KernelLauncher:
        """A launcher of the same kernel with another configuration."""
        variant = KernelLauncher(self.kernel, self.grid, self.block, self.num_warps,
                                 self.sizes, self.num_stages, self.gemm)
        variant.configure(block, num_warps, num_stages)
        return variant

    def options(self) -> dict[str, int]:
        stages = {"num_stages": self.num_stages} if self.num_stages else {}
        return {"num_warps": self.num_warps, **stages}

    def grid_for(self, args: tuple) -> tuple[int, ...]:
        return self.grid(*args[len(args) - self.sizes:]) if self.sizes else self.grid

    def warm_up(self, args: tuple):
        """Compile the kernel for `args` without launching it (the JIT's warm-up)."""
        return self.kernel.warmup(*args, grid=self.grid_for(args), **self.constants,
                                  **self.options())

    def __call__(self, direct: bool, stream: int | None, *args) -> None:
        if _recorded is not None:
            _recorded.append((self, args))
            return
        compiled = self.compiled
        if direct and compiled is not None:
            # The JIT's own launch call (triton/runtime/jit.py), less binding and lookup:
            # no launch metadata or hooks (launch_mode checked there are none), and the
            # constexpr block sizes last, as the JIT's bound arguments have them.
            compiled.run(*self.grid_xyz, stream, compiled.function, compiled.packed_metadata,
                         None, None, None, *args, *self.constants.values())
            return
        compiled = self.kernel[self.grid_for(args)](*args, **self.constants, **self.options())
        if direct and not self.sizes:
            self.compiled = compiled

"""How host programs launch their Triton kernels.

Triton's JIT launch, `kernel[grid](*args)`, binds the arguments, works out their
specialization (16-byte aligned pointers, ints equal to 1 or multiples of 16) and looks
the compiled kernel up, at every call. For a kernel with 6 tensors and 24 strides
that is several times what calling the compiled kernel's launcher directly costs
(triton 3.6; benchmarks/host_costs.py measures both). So a
launcher compiles its kernel (or finds it in Triton's cache) once, at its first direct
launch, loads the binary into PyTorch's static launcher (cubin_launch.py; Triton's own
where that one cannot take the kernel) and calls it from then on.

That is sound because a host program's launches specialize the same way at every
call: shapes, strides and view offsets are fixed by the graph (a kernel with static
shapes; Dynamo guards the inputs' sizes and strides), and buffers come
from the caching allocator, aligned. What can change is the alignment of the graph's
tensor inputs, so `launch_mode` checks it once per call; a call with an unaligned
input launches through the JIT, which specializes for it. So does every launch of a
kernel with dynamic sizes.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Callable

import torch
import triton
import triton.testing
from triton.runtime import driver

from tessel.passes.choose_gpu_blocks import template_programs
from tessel import counters
from tessel.targets.triton import compile_pool, cubin_launch

try:  # Triton 3.4 and later: compiles that JIT warm-ups start go to an executor
    from triton.runtime._async_compile import AsyncCompileMode
except ImportError:
    AsyncCompileMode = None

# Triton specializes pointers on this alignment.
_ALIGNMENT = 16


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# Per device, `_call_mode` of the call of a split graph running in this context
# (`sharing_launch_mode`); None outside one.
_SPLIT_CALL_MODES: ContextVar[dict[torch.device, tuple[bool, int | None]] | None] = \
    ContextVar("tessel_split_call_modes", default=None)


def launch_mode(device: torch.device, *tensors: torch.Tensor) -> tuple[bool, int | None]:
    """(direct, stream) for one call of a host program: whether launches may skip the
    JIT (CUDA, not interpreting, no launch hooks, `tensors` aligned), and the stream."""
    modes = _SPLIT_CALL_MODES.get()
    if modes is None:
        launchable, stream = _call_mode(device)
    else:
        found = modes.get(device)
        if found is None:
            found = modes[device] = _call_mode(device)
        launchable, stream = found
    return launchable and all(t.data_ptr() % _ALIGNMENT == 0 for t in tensors), stream


def _call_mode(device: torch.device) -> tuple[bool, int | None]:
    """`launch_mode`'s part that holds for a whole call on `device`, whatever the
    tensors: (whether launches may skip the JIT, the current stream)."""
    if device.type != "cuda" or interpreting():
        return False, None
    stream = driver.active.get_current_stream(device.index)
    # A hook is a function or None in older Tritons, a chain of them (HookChain) in newer.
    hooked = any(getattr(hook, "calls", hook) for hook in (
        triton.knobs.runtime.launch_enter_hook, triton.knobs.runtime.launch_exit_hook))
    return not hooked, stream


def sharing_launch_mode(split: Callable) -> Callable:
    """`split`, a split graph whose host programs find out `_call_mode` once per call
    for all of them: its pieces run one after the other on one stream, and the native
    ops between them change neither the stream nor the hooks. (Reading TRITON_INTERPRET,
    Triton's launch hooks and the current stream takes several Python calls, made once
    per piece otherwise: 13 times a call of a model split around 12 attentions.) Each
    piece still checks its own tensors' alignment: a native op's result may be a view."""
    @functools.wraps(split)
    def shared(*args):
        token = _SPLIT_CALL_MODES.set({})
        try:
            return split(*args)
        finally:
            _SPLIT_CALL_MODES.reset(token)
    return shared


def on_device_of_inputs(run: Callable) -> Callable:
    """`run`, with its first CUDA tensor argument's device made current while it runs
    where another one is: kernels load and launch, and CUDA graphs capture and replay,
    on the current device, and a graph's tensors may live on any (Inductor's wrapper
    guards its device the same way)."""
    def on_device(*args):
        for arg in args:
            if isinstance(arg, torch.Tensor) and arg.is_cuda:
                if arg.get_device() != torch.cuda.current_device():
                    with torch.cuda.device(arg.device):
                        return run(*args)
                break
        return run(*args)
    return on_device


def gpu_milliseconds(call: Callable[[], object]) -> float:
    """Median time of `call` on the GPU (Triton's do_bench: CUDA events, L2 flushed);
    a host-bound call's time is its host's."""
    return triton.testing.do_bench(call, warmup=2, rep=10, return_mode="median")


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
    """Compile the kernels of `launches`: on the compile pool's worker processes
    (compile_pool.py), then on a thread per core, which find the workers' binaries in
    Triton's cache and compile what they could not. Threads alone are the
    fallback: Triton releases the GIL in its MLIR, LLVM and ptxas stages, not in its
    front end (densenet121's 186 kernels compiled about twice as fast on processes as
    on threads: benchmarks/results/parallel_compile_cuda.md). The interpreter runs
    kernels from their source: nothing to compile."""
    if AsyncCompileMode is None or not launches or interpreting():
        return
    pool = compile_pool.shared_pool()
    if pool is not None:
        pool.compile(launches)
    with ThreadPoolExecutor(os.cpu_count() or 1) as threads:
        with AsyncCompileMode(threads):
            for launcher, args in launches:
                launcher.warm_up(args)
        if cubin_launch.available():
            return
        # Compiled now: a warm-up finds each kernel in the JIT's cache. Without PyTorch's
        # static launcher, loading a kernel builds Triton's launcher, a C extension that
        # older Tritons compile for each signature: in parallel too.
        kernels = [launcher.warm_up(args) for launcher, args in launches]
        device = torch.cuda.current_device()
        list(threads.map(lambda kernel: _load_into_triton(kernel, device), kernels))


def _load_into_triton(kernel, device: int) -> None:
    with torch.cuda.device(device):
        kernel.run  # noqa: B018 -- the property loads the binary and builds the launcher


class KernelLauncher:
    """One kernel of a host program, with its grid and launch options. The first
    direct launch compiles the kernel (or finds it in Triton's cache, or is handed its
    cubin from tessel's graph cache) and loads it; later ones only launch it."""

    def __init__(self, kernel: triton.JITFunction, grid, block: int | dict[str, int],
                 num_warps: int, sizes: int = 0, num_stages: int | None = None,
                 gemm: tuple[int, int, int] | None = None,
                 tensors: tuple[str, ...] | None = None, ranks: tuple[int, ...] = ()):
        self.kernel = kernel
        # A kernel of static sizes takes its tensors' strides as constants (constexpr
        # parameters): the graph fixes them, as it fixes the shapes, so the host passes
        # only the tensors (`tensors`: their parameter names, `in0`, `k1_out0`; `ranks`:
        # their ranks) and they are read off the first launch. The host program then
        # computes and passes no strides, and the compiled kernel has them folded in.
        self.tensors, self.ranks = tensors, ranks
        self.strides: dict[str, int] = {}
        # A gemm template's (m, n, k): its grid is one program per BLOCK_M x BLOCK_N tile,
        # recomputed when autotuning configures other tiles.
        self.gemm = gemm
        # With `sizes` (dynamic sizes, the launch's last arguments), `grid` is a function
        # of them, and every launch goes through the JIT: new sizes and strides may
        # specialize the kernel differently.
        self.grid = grid
        self.sizes = sizes
        self.grid_xyz = None if sizes else tuple(grid) + (1,) * (3 - len(grid))
        # A cubin from the graph cache, for the configuration it was compiled with.
        self.cached: tuple[list, cubin_launch.CubinKernel] | None = None
        self.configure(block, num_warps, num_stages)

    def configure(self, block: int | dict[str, int], num_warps: int,
                  num_stages: int | None) -> None:
        """Launch with this configuration from now on (also autotuning's choice).
        `block` is the kernel's BLOCK, or its constexpr block sizes by name (a gemm
        template's BLOCK_M, BLOCK_N and BLOCK_K), in the order of its parameters;
        `num_stages` pipelines a gemm template's K loop (Triton's default if None)."""
        self.block = block
        self.constants = {**self.strides,
                          **(block if isinstance(block, dict) else {"BLOCK": block})}
        self.num_warps, self.num_stages = num_warps, num_stages
        self.launch: cubin_launch.Launch | None = None
        self.cubin: cubin_launch.CubinKernel | None = None
        if self.gemm is not None:
            m, n, _ = self.gemm
            self.grid = (template_programs(m, n, block["BLOCK_M"], block["BLOCK_N"]),)
            self.grid_xyz = self.grid + (1, 1)

    def configuration(self) -> list:
        """The configuration as JSON has it: [block, num_warps, num_stages], and the
        strides compiled in, if any."""
        return [self.block, self.num_warps, self.num_stages] + (
            [self.strides] if self.strides else [])

    def variant(self, block: int | dict[str, int], num_warps: int,
                num_stages: int | None) -> KernelLauncher:
        """A launcher of the same kernel with another configuration."""
        variant = KernelLauncher(self.kernel, self.grid, self.block, self.num_warps,
                                 self.sizes, self.num_stages, self.gemm, self.tensors, self.ranks)
        variant.strides = self.strides
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
        launch = self.launch
        if direct and launch is not None and _recorded is None:
            launch(stream, args)  # every launch of a call after the first
            return
        if self.tensors is not None and not self.strides:
            self._take_strides(args)
        if _recorded is not None:
            _recorded.append((self, args))
            return
        if direct and not self.sizes:
            self.launch = self._loaded(args)
            self.launch(stream, args)
            return
        self.kernel[self.grid_for(args)](*args, **self.constants, **self.options())

    def _take_strides(self, tensors: tuple) -> None:
        for tensor, name, rank in zip(tensors, self.tensors, self.ranks):
            for dim, stride in enumerate(tensor.stride()[:rank]):
                self.strides[f"{name}_stride{dim}"] = stride
        self.configure(self.block, self.num_warps, self.num_stages)

    def _loaded(self, args: tuple) -> cubin_launch.Launch:
        """The launch function of the kernel compiled for `args`, loaded on the current
        device: from the graph cache's cubin when it has one for this configuration,
        else compiled (or found in Triton's cache) by the JIT."""
        device = torch.cuda.current_device()
        if self.cached is not None:
            configuration, cubin = self.cached
            if configuration == self.configuration() and cubin_launch.loadable(cubin, device):
                self.cubin = cubin
                counters.count("kernels_loaded_from_cubins")
                return cubin_launch.load(cubin, device, self.grid_xyz)
        compiled = self.warm_up(args)
        self.cubin = cubin_launch.describe(compiled, len(args))
        if self.cubin is not None:
            return cubin_launch.load(self.cubin, device, self.grid_xyz)
        # Triton's launcher, called as its JIT calls it (triton/runtime/jit.py) less
        # binding and lookup: no launch metadata or hooks (launch_mode checked there are
        # none), and the constexpr block sizes last, as the JIT's bound arguments have them.
        constants = tuple(self.constants.values())
        grid_x, grid_y, grid_z = self.grid_xyz

        def launch(stream: int, args: tuple) -> None:
            compiled.run(grid_x, grid_y, grid_z, stream, compiled.function,
                         compiled.packed_metadata, None, None, None, *args, *constants)
        return launch

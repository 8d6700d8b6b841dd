"""mode="max-autotune" on the Triton target: each launch's warp count chosen by timing.

The gpu pipeline picks one block size and warp count per kernel (choose-gpu-blocks),
from its kind and extents; the default mode launches that, because timing candidates
costs compile time at the first call. max-autotune also compiles each launch with half
and twice the warps, times the variants on the first call's arguments (the pre-compile
dry run's buffers, which only these launches write), and keeps the fastest.

A choice is stored in tessel's cache, keyed by the kernel's source, its launch (grid,
block, argument shapes, strides and alignment) and the GPU: a later process that
compiles the same launch takes the choice without timing anything.
"""

from __future__ import annotations

import hashlib
import inspect
import json

import torch
import triton
import triton.testing

from tessel.frontend import graph_cache
from tessel.targets.triton.launcher import KernelLauncher, compile_in_parallel

# Triton's limit is 32 warps (1024 threads) a program.
_MAX_WARPS = 32


def _candidates(num_warps: int) -> list[int]:
    return [n for n in (num_warps // 2, num_warps, num_warps * 2) if 1 <= n <= _MAX_WARPS]


def _describe(arg) -> str:
    if isinstance(arg, torch.Tensor):
        aligned = arg.data_ptr() % 16 == 0
        return f"{arg.dtype}{list(arg.shape)}{list(arg.stride())}{aligned}"
    return repr(arg)


def _key(launcher: KernelLauncher, args: tuple) -> str:
    text = json.dumps([inspect.getsource(launcher.kernel.fn), repr(launcher.grid), launcher.block,
                       launcher.num_warps, [_describe(a) for a in args],
                       torch.cuda.get_device_name(), triton.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _choice_path(key: str):
    return graph_cache.cache_root() / "autotune" / f"{key}.json"


def _stored_choice(key: str) -> int | None:
    try:
        return int(json.loads(_choice_path(key).read_text())["num_warps"])
    except (OSError, ValueError, KeyError):
        return None  # not tuned yet, or damaged: tuned again


def milliseconds(launcher: KernelLauncher, args: tuple) -> float:
    """Median time of one launch (Triton's do_bench: CUDA events, L2 flushed)."""
    stream = torch.cuda.current_stream().cuda_stream
    return triton.testing.do_bench(lambda: launcher(True, stream, *args), warmup=2, rep=10,
                                   return_mode="median")


def choose_warps(launches: list[tuple[KernelLauncher, tuple]]) -> dict[str, int]:
    """Set each launcher's num_warps to the fastest of its candidates, timed on the
    recorded `args` (or stored by an earlier tuning); returns {kernel: warps} for the
    launches whose warps changed. Launches with dynamic sizes keep theirs (their
    extents change from call to call)."""
    first = {}
    for launcher, args in launches:
        if not launcher.sizes:
            first.setdefault(launcher, args)
    keys = {launcher: _key(launcher, args) for launcher, args in first.items()}
    choices = {launcher: _stored_choice(key) for launcher, key in keys.items()}
    untuned = [(launcher, args) for launcher, args in first.items() if choices[launcher] is None]
    variants = {(launcher, warps): KernelLauncher(launcher.kernel, launcher.grid, launcher.block,
                                                  warps, num_stages=launcher.num_stages)
                for launcher, _ in untuned for warps in _candidates(launcher.num_warps)}
    compile_in_parallel([(variant, first[launcher])
                         for (launcher, _), variant in variants.items()])
    for launcher, args in untuned:
        timed = {warps: milliseconds(variants[launcher, warps], args)
                 for warps in _candidates(launcher.num_warps)}
        choices[launcher] = min(timed, key=timed.get)
        graph_cache.write_atomically(_choice_path(keys[launcher]), json.dumps(
            {"num_warps": choices[launcher],
             "milliseconds": {str(w): t for w, t in timed.items()}}))
    changed = {}
    for launcher, best in choices.items():
        if best != launcher.num_warps:
            changed[launcher.kernel.fn.__name__] = best
            launcher.num_warps, launcher.compiled = best, None
    return changed

"""mode="max-autotune" on the Triton target: each launch's configuration chosen by timing.

The gpu pipeline picks one configuration per kernel (choose-gpu-blocks), from its kind
and extents by rules measured on one GPU model; the default mode launches that, because
timing candidates costs first-call time. max-autotune times each kernel kind's space
of configurations on the first call's arguments (the pre-compile dry run's buffers,
which only these launches write) and keeps the fastest:

- gemm templates (fuse-gemm-epilogues, which only max-autotune's pipeline runs): the
  nine tiles of benchmarks/gemm_template.py's sweep, clamped to the gemm's dims;
- every other kernel: half, the same and twice its warps.

A choice is stored in tessel's cache, keyed by the kernel's source, its launch (grid,
block, argument shapes, strides and alignment) and the GPU: a later process that
compiles the same launch takes the choice without timing anything.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import asdict, dataclass

import torch
import triton

from tessel import cache
from tessel.passes.choose_gpu_blocks import template_block
from tessel.targets.triton.launcher import KernelLauncher, compile_in_parallel, gpu_milliseconds

# Triton's limit is 32 warps (1024 threads) a program.
_MAX_WARPS = 32
# Gemm template tiles: ((BLOCK_M, BLOCK_N, BLOCK_K), warps, stages).
_TEMPLATE_TILES = [((128, 128, 64), 8, 3), ((64, 64, 64), 4, 4), ((128, 128, 64), 4, 4),
                   ((128, 256, 64), 8, 3), ((256, 128, 64), 8, 3), ((128, 64, 64), 4, 4),
                   ((64, 128, 64), 4, 4), ((64, 64, 128), 4, 3), ((32, 64, 128), 4, 4)]


@dataclass(frozen=True)
class Config:
    """A launch's configuration: its constexpr block sizes, warps and stages."""
    block: int | tuple[tuple[str, int], ...]
    num_warps: int
    num_stages: int | None = None

    @staticmethod
    def of(launcher: KernelLauncher) -> Config:
        block = launcher.block
        return Config(tuple(block.items()) if isinstance(block, dict) else block,
                      launcher.num_warps, launcher.num_stages)

    def launcher_block(self) -> int | dict[str, int]:
        return dict(self.block) if isinstance(self.block, tuple) else self.block


def candidates(launcher: KernelLauncher) -> list[Config]:
    """The configurations timing chooses `launcher`'s from (its own first)."""
    current = Config.of(launcher)
    found = [current]
    if launcher.gemm is not None:
        for tile, warps, stages in _TEMPLATE_TILES:
            block = template_block(tile, *launcher.gemm)
            found.append(Config(tuple(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), block)), warps, stages))
    else:
        found += [Config(current.block, n, current.num_stages)
                  for n in (current.num_warps // 2, current.num_warps * 2) if 1 <= n <= _MAX_WARPS]
    return list(dict.fromkeys(found))


def _describe(arg) -> str:
    if isinstance(arg, torch.Tensor):
        aligned = arg.data_ptr() % 16 == 0
        return f"{arg.dtype}{list(arg.shape)}{list(arg.stride())}{aligned}"
    return repr(arg)


def _key(launcher: KernelLauncher, args: tuple) -> str:
    text = json.dumps([inspect.getsource(launcher.kernel.fn), repr(launcher.grid),
                       repr(launcher.block), launcher.num_warps, launcher.num_stages,
                       [_describe(a) for a in args],
                       torch.cuda.get_device_name(), triton.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _choice_path(key: str):
    return cache.cache_root() / "autotune" / f"{key}.json"


def _stored_choice(key: str) -> Config | None:
    try:
        stored = json.loads(_choice_path(key).read_text())["config"]
        block = stored["block"]
        return Config(tuple((name, size) for name, size in block) if isinstance(block, list)
                      else int(block), int(stored["num_warps"]), stored["num_stages"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not tuned yet, or damaged: tuned again


def milliseconds(launcher: KernelLauncher, args: tuple) -> float:
    """Median time of one launch."""
    stream = torch.cuda.current_stream().cuda_stream
    return gpu_milliseconds(lambda: launcher(True, stream, *args))


def choose_configs(launches: list[tuple[KernelLauncher, tuple]]) -> dict[str, dict]:
    """Configure each launcher as the fastest of its candidates, timed on the recorded
    `args` (or stored by an earlier tuning); returns {kernel: config} for the launches
    whose configuration changed. Launches with dynamic sizes keep theirs (their extents
    change from call to call)."""
    first = {}
    for launcher, args in launches:
        if not launcher.sizes:
            first.setdefault(launcher, args)
    keys = {launcher: _key(launcher, args) for launcher, args in first.items()}
    choices = {launcher: _stored_choice(key) for launcher, key in keys.items()}
    untuned = [(launcher, args) for launcher, args in first.items() if choices[launcher] is None]
    variants = {(launcher, config): launcher.variant(config.launcher_block(), config.num_warps,
                                                     config.num_stages)
                for launcher, _ in untuned for config in candidates(launcher)}
    compile_in_parallel([(variant, first[launcher])
                         for (launcher, _), variant in variants.items()])
    for launcher, args in untuned:
        timed = {config: milliseconds(variants[launcher, config], args)
                 for config in candidates(launcher)}
        choices[launcher] = min(timed, key=timed.get)
        cache.write_atomically(_choice_path(keys[launcher]), json.dumps(
            {"config": asdict(choices[launcher]),
             "milliseconds": [[asdict(c), t] for c, t in timed.items()]}))
    changed = {}
    for launcher, best in choices.items():
        if best != Config.of(launcher):
            changed[launcher.kernel.fn.__name__] = asdict(best)
            launcher.configure(best.launcher_block(), best.num_warps, best.num_stages)
    return changed

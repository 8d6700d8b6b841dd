"""Options of the `mlir` backend: one frozen dataclass, each field documented.

`torch.compile(fn, backend="mlir", mode=..., options={...})` hands `mode` and
`options` to the backend, which validates them here before compiling anything.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from tessel.errors import TesselError

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# The modes that replay whole graphs (CUDA graphs, as torch.compile documents them), and
# each one's mode of the same kernels without replays.
_WITHOUT_REPLAY = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}


class OptionError(TesselError, ValueError):
    """A bad `mode` or `options` entry; the message names it and lists valid values."""


def _option(default: Any, doc: str, types: tuple[type, ...], choices: tuple | None = None):
    return field(default=default, metadata={"doc": doc, "types": types, "choices": choices})


@dataclass(frozen=True)
class Options:
    fallback: bool = _option(
        True, "run a graph eagerly (with one warning) when it cannot be compiled; "
        "False raises an error that names the op and writes a repro", (bool,))
    dump_dir: str | None = _option(
        None, "directory that receives, per compiled graph, one file per stage "
        "(FX graph, torch IR, linalg IR, pipeline output, LLVM IR, host program)", (str, os.PathLike))
    target: str = _option(
        "auto", "code generator: 'cpu' (MLIR -> LLVM JIT), 'triton' (Triton kernels; on CPU "
        "tensors under TRITON_INTERPRET=1); 'auto' picks triton for CUDA inputs or "
        "results, else cpu",
        (str,), ("auto", "cpu", "triton"))
    pipeline: str | None = _option(
        None, "pass pipeline run on linalg-on-tensors IR instead of the target's named one "
        "(a registered name like 'cpu', or 'builtin.module(...)')", (str,))
    # 2, not 3: same kernel speed on the benchmark set, 25-45% less JIT time on larger graphs.
    opt_level: int = _option(2, "LLVM optimization level of the JIT (0-3)", (int,), (0, 1, 2, 3))
    check_accuracy: bool = _option(
        False, "also run every compiled graph eagerly and compare; a mismatch warns (naming "
        "the graph, output and dump) and the eager result is returned", (bool,))
    profile_kernels: bool = _option(
        False, "CPU target, its default pipeline: time each kernel of every call (a profile: "
        "tessel.targets.cpu.kernel_timer.times(); benchmarks/models/profile.py prints it)",
        (bool,))
    compile_in_worker: bool = _option(
        True, "run pass pipelines in a separate process, so that a crash or hang in native "
        "compiler code becomes a fallback (False: in this process, for debugging)", (bool,))
    partitioner: str = _option(
        "min-cut", "how aot_autograd splits a training graph into forward and backward: "
        "'min-cut' (Inductor's) saves the fewest bytes and recomputes cheap element-wise ops "
        "in the backward; 'save-all' (aot_autograd's default) saves every intermediate the "
        "backward reads", (str,), ("min-cut", "save-all"))
    mode: str = _option(
        "default", "torch.compile mode; on the Triton target 'reduce-overhead' replays CUDA "
        "graphs, 'max-autotune-no-cudagraphs' builds gemm templates (fuse-gemm-epilogues) "
        "and times each launch's configuration (warps; a template's tile) on the first "
        "call, 'max-autotune' does both; give it here to combine it with other options "
        "(torch.compile takes `mode` or `options`, not both)", (str,), MODES)

    def replays(self) -> bool:
        """Whether the mode replays whole graphs (on the Triton target, CUDA graphs)."""
        return self.mode in _WITHOUT_REPLAY

    def without_replay(self) -> Options:
        """These options with a mode that compiles the same kernels but replays nothing."""
        return dataclasses.replace(self, mode=_WITHOUT_REPLAY.get(self.mode, self.mode))


def list_options() -> dict[str, dict[str, Any]]:
    """Every option with its default, accepted types or values, and a description."""
    described = {}
    for f in dataclasses.fields(Options):
        described[f.name] = {
            "default": f.default,
            "choices": f.metadata["choices"],
            "types": [t.__name__ for t in f.metadata["types"]],
            "doc": f.metadata["doc"],
        }
    return described


def parse_options(mode: str | None = None, options: dict[str, Any] | None = None) -> Options:
    """Validate torch.compile's `mode` and `options` and return an Options value."""
    if mode is not None and mode not in MODES:
        raise OptionError(f"tessel: unknown mode {mode!r}; valid modes are: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise OptionError(f"tessel: `options` must be a dict, got {type(options).__name__}")
    options = dict(options or {})
    known = {f.name: f for f in dataclasses.fields(Options)}
    for name, value in options.items():
        if name not in known:
            raise OptionError(
                f"tessel: unknown option {name!r}; valid options are: {', '.join(sorted(known))}")
        meta = known[name].metadata
        if value is None and known[name].default is None:
            continue
        # bool is an int subclass: an int option must not silently accept True.
        if not isinstance(value, meta["types"]) or (isinstance(value, bool) and bool not in meta["types"]):
            expected = " or ".join(t.__name__ for t in meta["types"])
            raise OptionError(
                f"tessel: option {name!r} expects {expected}, got {type(value).__name__} ({value!r})")
        if meta["choices"] is not None and value not in meta["choices"]:
            choices = ", ".join(repr(c) for c in meta["choices"])
            raise OptionError(f"tessel: option {name!r} got {value!r}; valid values are: {choices}")
    if options.get("dump_dir") is not None:
        options["dump_dir"] = _dump_directory(os.fspath(options["dump_dir"]))
    if mode is not None:
        options["mode"] = mode
    return Options(**options)


def _dump_directory(path: str) -> str:
    """`path`, created if missing. A dump_dir that cannot hold files is an error before
    anything compiles: the user asked for the dumps, and a run without them would
    leave nothing to debug with."""
    if not path:
        raise OptionError("tessel: option 'dump_dir' is an empty path; "
                          "give a directory, or None for no dumps")
    if os.path.exists(path) and not os.path.isdir(path):
        raise OptionError(f"tessel: option 'dump_dir' {path!r} is a file, not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise OptionError(
            f"tessel: option 'dump_dir' {path!r} cannot be created: {error.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OptionError(f"tessel: option 'dump_dir' {path!r} is not writable")
    return path

"""Pass and pipeline registry: kebab-case names -> Python pass classes and pipeline strings.

Built-in passes register on import of their module (listed in `_BUILTIN_PASS_MODULES`,
imported on the first pass lookup). Users add passes and pipelines with `register` /
`register_pipeline`, or from a package through the `tessel.plugins` entry point group,
whose objects are called once with no arguments on the first lookup of a pipeline or
pass. Looking up a pipeline imports no pass module: the backend expands its named
pipelines in its own process, for the worker that runs them, and importing every pass
module there would slow its first compile (less so on the Triton target, which imports a
few of them itself).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, ClassVar

from tessel import ir

_BUILTIN_PASS_MODULES = (
    "tessel.passes.approximate_math",
    "tessel.passes.bitcast_dtype_views",
    "tessel.passes.bufferize",
    "tessel.passes.call_native_ops",
    "tessel.passes.channels_last_convolutions",
    "tessel.passes.check_contract",
    "tessel.passes.concat_as_gather",
    "tessel.passes.choose_gpu_blocks",
    "tessel.passes.contiguous_innermost_loop",
    "tessel.passes.convolution_bias_after",
    "tessel.passes.convolutions_to_gemm",
    "tessel.passes.depthwise_channels_last",
    "tessel.passes.distinct_results",
    "tessel.passes.duplicate_cheap_producers",
    "tessel.passes.collapse_elementwise_producers",
    "tessel.passes.fold_bias_into_gemm",
    "tessel.passes.fold_transposes_into_matmul",
    "tessel.passes.form_kernels",
    "tessel.passes.fuse_gemm_epilogues",
    "tessel.passes.fuse_horizontally",
    "tessel.passes.fuse_returned_producers",
    "tessel.passes.fuse_sibling_reductions",
    "tessel.passes.fuse_into_scatters",
    "tessel.passes.fuse_tiles",
    "tessel.passes.generalize_named_ops",
    "tessel.passes.hoist_broadcast_invariants",
    "tessel.passes.hoist_size_computations",
    "tessel.passes.inline_gathered_producers",
    "tessel.passes.hold_half_in_f32",
    "tessel.passes.inline_kernels",
    "tessel.passes.insert_slices_early",
    "tessel.passes.internalize_functions",
    "tessel.passes.launch_with_openmp",
    "tessel.passes.library_calls",
    "tessel.passes.narrow_matmul_operands",
    "tessel.passes.outline_contractions",
    "tessel.passes.outline_parallel_loops",
    "tessel.passes.overwrite_zero_accumulators",
    "tessel.passes.pad_contractions",
    "tessel.passes.plan_buffers",
    "tessel.passes.prefer_vector_width",
    "tessel.passes.read_slices_in_place",
    "tessel.passes.read_transposed_copies",
    "tessel.passes.reassociate_reductions",
    "tessel.passes.reciprocal_division",
    "tessel.passes.recompute_index_values",
    "tessel.passes.report_failed_checks",
    "tessel.passes.reshape_fills",
    "tessel.passes.scatter_onto_addends",
    "tessel.passes.slice_elementwise_producers",
    "tessel.passes.split_reductions",
    "tessel.passes.tile_for_threads",
    "tessel.passes.time_kernels",
    "tessel.passes.transpose_in_blocks",
    "tessel.passes.trim_window_inputs",
    "tessel.passes.truncate_through_f32",
    "tessel.passes.vector_products_as_reductions",
    "tessel.passes.whole_reductions_as_rows",
    "tessel.passes.wrap_scatter_indices",
    "tessel.passes.write_inputs_in_place",
)

_passes: dict[str, type[ModulePass]] = {}
_pipelines: dict[str, tuple[str, str]] = {}  # name -> (pipeline text, one-line description)
_passes_loaded = False
_plugins_loaded = False
_loading_plugins = False
# Passes registered by a call at run time, which only this process knows, as opposed
# to those any process gets by loading tessel (built-in modules and plugins).
_registered_at_run_time: set[str] = set()


@dataclass(frozen=True)
class ModulePass:
    """Base class of tessel's Python passes: IR in, IR out, options as dataclass fields."""

    name: ClassVar[str]

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    @classmethod
    def description(cls) -> str:
        """The docstring's first sentence, without its leading `name:`."""
        paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
        text = " ".join(line.strip() for line in paragraph.splitlines())
        sentence = text.removeprefix(f"{cls.name}:").strip()
        end = sentence.find(". ")
        return sentence[:end + 1] if end >= 0 else sentence

    @classmethod
    def from_options(cls, options: dict[str, str]) -> ModulePass:
        """Build the pass from `{key=value ...}` text options (kebab-case keys)."""
        fields = {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, text in options.items():
            if key not in fields:
                valid = ", ".join(sorted(fields)) or "none"
                raise ValueError(f"pass {cls.name!r} has no option {key!r} (options: {valid})")
            values[fields[key].name] = _parse_option_value(cls.name, key, fields[key], text)
        return cls(**values)


def _parse_option_value(pass_name: str, key: str, field: dataclasses.Field, text: str) -> Any:
    kind = field.type if isinstance(field.type, str) else field.type.__name__
    try:
        if kind == "bool":
            if text not in ("true", "false", "1", "0"):
                raise ValueError
            return text in ("true", "1")
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind.startswith("tuple"):
            return tuple(int(part) for part in text.split(",") if part)
        return text
    except ValueError:
        raise ValueError(f"pass {pass_name!r}: option {key!r} expects {kind}, got {text!r}") from None


def register(cls: type[ModulePass]) -> type[ModulePass]:
    """Class decorator: make a ModulePass available under its `name`."""
    if cls.name in _passes and _passes[cls.name] is not cls:
        raise ValueError(f"a pass named {cls.name!r} is already registered")
    _passes[cls.name] = cls
    if cls.__module__ not in _BUILTIN_PASS_MODULES and not _loading_plugins:
        _registered_at_run_time.add(cls.name)
    return cls


def register_pipeline(name: str, text: str, description: str) -> None:
    """Make `text` (a pipeline string) available under `name`, e.g. `-p name`."""
    _pipelines[name] = (text, description)


def _load_pipelines_and_plugins() -> None:
    global _plugins_loaded, _loading_plugins
    if _plugins_loaded:
        return
    _plugins_loaded = True
    importlib.import_module("tessel.passes.pipelines")
    _loading_plugins = True
    try:
        for plugin in entry_points(group="tessel.plugins"):
            plugin.load()()
    finally:
        _loading_plugins = False


def _load() -> None:
    global _passes_loaded
    if not _passes_loaded:
        _passes_loaded = True
        for module in _BUILTIN_PASS_MODULES:
            importlib.import_module(module)
    _load_pipelines_and_plugins()


def lookup_pass(name: str) -> type[ModulePass] | None:
    _load()
    return _passes.get(name)


def lookup_pipeline(name: str) -> str | None:
    _load_pipelines_and_plugins()
    entry = _pipelines.get(name)
    return entry[0] if entry else None


def loadable_everywhere(name: str) -> bool:
    """Whether a fresh process that loads tessel knows the pass `name` too: any pass
    but those registered by a call at run time."""
    return name not in _registered_at_run_time


def all_passes() -> dict[str, type[ModulePass]]:
    _load()
    return dict(sorted(_passes.items()))


def all_pipelines() -> dict[str, tuple[str, str]]:
    _load()
    return dict(sorted(_pipelines.items()))

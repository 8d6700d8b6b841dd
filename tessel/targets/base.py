"""The target interface and the registry the frontend uses to find targets by name."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Callable, ClassVar

from tessel import ir
from tessel.errors import TesselError

# Imported lazily, so a target's toolchain loads only when a graph asks for it.
_TARGETS = {"cpu": "tessel.targets.cpu.target:CpuTarget",
            "triton": "tessel.targets.triton.target:TritonTarget"}


class RuntimeCheckFailed(TesselError, RuntimeError):
    """A runtime check of compiled code failed (sizes the lowering cannot handle)."""


class KernelBuildFailed(TesselError, RuntimeError):
    """A kernel the target builds at its first launch (Triton's JIT) failed to build:
    the FX nodes it computes (`nodes`, from its locations; none if unknown) run
    eagerly from then on, or the whole graph."""

    def __init__(self, message: str, nodes: frozenset[str] = frozenset()):
        super().__init__(message)
        self.nodes = nodes


class Target(ABC):
    """Turns linalg-on-tensors IR plus a graph signature into a callable host program."""

    name: ClassVar[str]
    # The named pipeline (tessel/passes/pipelines.py) the target runs by default.
    default_pipeline: ClassVar[str]
    # Whether compiled graphs can be stored on disk (see load_cached).
    caches_graphs: ClassVar[bool] = False
    # Whether compiled code reads inputs and writes results through their strides;
    # where not, the host program gets inputs contiguous (frontend/permuted_inputs.py)
    # and results eager lays out permuted in memory order (permuted_results.py); where
    # so, it gets in memory order only the inputs that the graph permutes into it.
    strided_tensors: ClassVar[bool] = False
    # Whether its host program calls the native ops it can (native_ops.called_in_place)
    # between its kernels; where not, the graph is split around every native op.
    calls_native_ops: ClassVar[bool] = False

    @staticmethod
    def devices() -> frozenset[str]:
        """The torch device types whose tensors the compiled code takes."""
        return frozenset({"cpu"})

    def load_cached(self, key: str | None, signature, options, stages
                    ) -> tuple[Callable, int] | None:
        """What `compile` returned for the graph cached under `key` (tessel/cache.py)
        in this or an earlier process, or None. Targets whose code cannot be stored (the
        CPU target's JIT) have no cache."""
        return None

    def replayed(self, run: Callable, graph_name: str, options, *,
                 static_inputs: frozenset[int] = frozenset(),
                 mutated_inputs: tuple[int, ...] = (), role: str = "inference",
                 output_stack_traces: list[str | None] = (),
                 runs_cpu_pieces: bool = False) -> Callable:
        """`run`, graph `graph_name`'s whole callable, as `options.mode` runs it (replayed,
        where the target can). `static_inputs`: the positions of inputs that are read in
        place (parameters, buffers); `mutated_inputs`, the positions of those `run`
        writes; `role` and `output_stack_traces`: GraphSignature's; `runs_cpu_pieces`:
        whether `run` is a split graph some of whose pieces compute on CPU tensors. This
        target replays nothing."""
        return run

    def checking_once_per_call(self, split: Callable) -> Callable:
        """`split`, a split inference graph that runs its compiled pieces one after the
        other, whose pieces find out once per call for all of them what the target's
        code checks at every call (and is the same for every piece of a call). This
        target's code checks nothing so."""
        return split

    def building_pieces_together(self, split: Callable, stages) -> Callable:
        """`split`, a split graph that calls compiled pieces with only native ops
        (frontend/native_ops.py) between them, as its first call should run where the
        target builds code at a piece's first call. This target builds nothing then."""
        return split

    @abstractmethod
    def compile(self, module: ir.Module, signature, options, stages,
                cache_key: str | None = None) -> tuple[Callable, int]:
        """Compile `module` (entry point `main`); returns (f(*graph_inputs), kernel count),
        storing the result under `cache_key` where the target caches compiled graphs.

        Every pipeline runs through `stages` (tessel.stages.Stages), which times it,
        dumps its output and leaves a repro when it fails.
        """


def get_target(name: str) -> Target:
    if name not in _TARGETS:
        raise ValueError(f"tessel: unknown target {name!r}; known targets: {', '.join(_TARGETS)}")
    module_name, class_name = _TARGETS[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)()

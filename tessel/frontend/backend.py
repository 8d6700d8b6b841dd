"""The `mlir` Dynamo backend: torch.compile(fn, backend="mlir", mode=..., options={...})."""

from __future__ import annotations

import functools
import threading
import warnings

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.exc import RestartAnalysis, ShortenTraceback, SkipFrame

from tessel import counters
from tessel.compile_worker import start_worker
from tessel.frontend.compile_graph import compile_graph
from tessel.frontend.constant_attention_masks import fold_constant_attention_masks
from tessel.frontend.decompositions import before_autograd_table
from tessel.frontend.inference_cache import (
    cached_inference,
    inference_key,
    remembering_inference,
)
from tessel.frontend.partitioner import partition_function
from tessel.frontend.separable_interpolation import interpolate_by_dims
from tessel.options import parse_options


def _hash_triton_sources() -> None:
    from triton.runtime.cache import triton_key
    triton_key()


@functools.cache
def _hashing_triton_sources() -> None:
    """Triton's key of its own sources, which its every compile and cache lookup needs:
    computed once per process, it hashes libtriton with the GIL released, on a thread
    started at the first compile, while aot_autograd traces (on a GPU machine the
    Triton target will need it). Importing tessel starts nothing."""
    if torch.cuda.is_available():
        threading.Thread(target=_hash_triton_sources, daemon=True).start()


def mlir_backend(gm: torch.fx.GraphModule, example_inputs, mode: str | None = None,
                 options: dict | None = None):
    """Dynamo backend entry point (registered as `mlir` via the torch_dynamo_backends group).

    aot_autograd lifts parameters to graph inputs and splits forward and backward;
    each of those graphs goes through `compile_graph`. An inference graph that an
    earlier process compiled skips aot_autograd too (`cached_inference`). A graph
    aot_autograd cannot trace runs eagerly (`_eager_when_aot_fails`).
    """
    parsed = parse_options(mode, options)
    _hashing_triton_sources()
    key = inference_key(gm, example_inputs, parsed)
    cached = cached_inference(gm, key, parsed)
    if cached is not None:
        return cached
    if parsed.compile_in_worker:
        # The worker warms up while aot_autograd traces; started again if it has
        # exited (after a crash) since.
        start_worker()

    with remembering_inference(key, example_inputs) as memo:
        def compiler(kind: str):
            return functools.partial(compile_graph, options=parsed, kind=kind, memo=memo)

        backend = aot_autograd(
            fw_compiler=compiler("forward"),
            bw_compiler=compiler("backward"),
            inference_compiler=compiler("inference"),
            partition_fn=partition_function(parsed.partitioner),
            decompositions=before_autograd_table(),
            # Input mutations stay in the graph (frontend/input_mutations.py).
            keep_inference_input_mutations=True,
        )
        try:
            return backend(fold_constant_attention_masks(interpolate_by_dims(gm)), example_inputs)
        # What Dynamo itself handles: its restarts and skips, and the user's errors
        # (an IndexError of a dim out of range) that it raises as they are.
        except (RestartAnalysis, SkipFrame, ShortenTraceback, IndexError):
            raise
        except Exception as error:
            if not parsed.fallback:
                raise
            return _eager_when_aot_fails(gm, error)


def _eager_when_aot_fails(gm: torch.fx.GraphModule, error: Exception):
    """Dynamo's graph `gm`, run eagerly, where aot_autograd (or Dynamo inside it) failed
    on it: it refuses ops it cannot functionalize (prims.squeeze, prims.view_of and the
    other aliasing prims), which Dynamo raised to the user as BackendCompilerFailed."""
    line = next(iter(str(error).strip().splitlines()), "")
    counters.count("graphs_fallback")
    counters.record_fallback(f"aot_autograd: graph: {type(error).__name__}: {line}")
    warnings.warn(f"tessel: a graph runs eagerly: aot_autograd failed on it: "
                  f"{type(error).__name__}: {line}", stacklevel=2)
    return gm.forward

"""Inference graphs remembered across processes: a later process that meets the same
Dynamo graph loads its compiled code without aot_autograd's tracing (tessel/cache.py
keys it).

`remembering_inference` wraps aot_autograd's compile of Dynamo's graph and yields an
`InferenceMemo` that the compile fills in as it goes: the compiled graph's entry
when aot_autograd compiles it whole, as an inference graph whose wrapper only passes
arguments and results through; or the pieces of a graph split around native ops
only, and the split graph's code that calls them. `cached_inference` loads them.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import math
import pickle
import types

import torch
import torch._guards
import torch.fx
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree
from torch._functorch._aot_autograd.schemas import OutputType, PlainTensorMeta

from tessel import cache, counters
from tessel.dump import GraphDump
from tessel.frontend.eager_fallback import eager_when_it_fails
from tessel.frontend.run_time import checking_indices, replayed
from tessel.frontend.split_graph import as_module_call
from tessel.frontend.traced_facts import input_values, resolve_target, static_inputs
from tessel.options import Options
from tessel.signature import GraphSignature
from tessel.stages import Stages
from tessel.targets.base import get_target

log = logging.getLogger("tessel")

# The globals of the code FX generates for a graph of aten ops, by name (its
# `python_code().globals`): a split graph whose code needs no others is stored as source.
_FX_CODE_GLOBALS = {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": torch,
                    "device": torch.device, "fx_pytree": fx_pytree, "pytree": pytree}


def _encoded(value) -> str:
    return base64.b64encode(pickle.dumps(value)).decode()


def _decoded(text: str):
    return pickle.loads(base64.b64decode(text))


class InferenceMemo:
    """The cache entry of one Dynamo graph (with `inputs` inputs), filled in while
    aot_autograd compiles it."""

    def __init__(self, inputs: int):
        self.entry: dict = {"inputs": inputs}

    def complete(self) -> bool:
        return "graph" in self.entry or "split" in self.entry

    def remember(self, kind: str, cache_key: str | None, signature: GraphSignature,
                 target: str) -> None:
        """A graph of `kind` compiled under `cache_key`: the whole inference graph, or
        the next piece of a split one, in order."""
        if kind == "inference":
            if cache_key is not None and self._passes_through(len(signature.inputs)):
                self.entry.update(target=target, graph=cache_key,
                                  signature=_encoded(signature))
        elif kind == "inference_piece":
            self.entry.setdefault("pieces", []).append(
                None if cache_key is None
                else {"graph": cache_key, "signature": _encoded(signature)})

    def remember_split(self, gm: torch.fx.GraphModule, split: torch.fx.GraphModule,
                       pieces: dict[str, torch.fx.GraphModule], native: dict[str, str],
                       target: str) -> None:
        """After the pieces of inference graph `gm` compiled, `split` calling them and
        the `native` ops between them: remembered where every piece has an entry and
        the split's code needs only FX's usual globals."""
        code = split.graph.python_code(root_module="self")
        records = self.entry.get("pieces", [])
        if (len(records) != len(pieces) or None in records
                or not set(code.globals) <= set(_FX_CODE_GLOBALS)
                or not self._passes_through(len(input_values(gm)))):
            return
        try:
            modules = [_encoded(piece) for piece in pieces.values()]
        except (pickle.PicklingError, TypeError, AttributeError):  # a piece holding odd state
            log.debug("tessel: split graph not remembered: a piece does not pickle",
                      exc_info=True)
            return
        self.entry.update(
            target=target, split=code.src, native=native,
            static_inputs=sorted(static_inputs(gm, "inference")),
            pieces=[{**record, "name": name, "module": module}
                    for record, name, module in zip(records, pieces, modules)])

    def _passes_through(self, inputs: int) -> bool:
        """Whether aot_autograd's wrapper of the graph being compiled only passes its
        `inputs` arguments and its results through, so that a later process may skip it."""
        metadata = getattr(torch._guards.TracingContext.try_get(), "fw_metadata", None)
        return not (metadata is None or inputs != self.entry["inputs"]
                    or any(i.mutates_data or i.mutates_metadata for i in metadata.input_info)
                    or any(o.output_type != OutputType.non_alias
                           for o in metadata.output_info)
                    or metadata.num_intermediate_bases or metadata.tokens
                    or any(not isinstance(m, PlainTensorMeta) or m.memory_format is not None
                           for m in metadata.subclass_inp_meta))


@contextlib.contextmanager
def remembering_inference(key: str | None, example_inputs):
    """Around aot_autograd's compile of Dynamo's graph (of `inference_key` `key`): an
    `InferenceMemo` for the compile to fill in (None without a key), stored if the
    compile completed it."""
    memo = InferenceMemo(len(example_inputs)) if key else None
    yield memo
    if memo is not None and memo.complete():
        cache.store(key, memo.entry)


def inference_key(gm: torch.fx.GraphModule, example_inputs, options: Options) -> str | None:
    """The graph cache's key of Dynamo's `gm` as `cached_inference` reads it, or None
    where the target caches no graphs or the graph is not such an inference graph."""
    target = get_target(resolve_target(options, gm, example_inputs))
    # check_accuracy needs the kernel IR of a compile, which the cache lacks.
    if not target.caches_graphs or options.check_accuracy:
        return None
    return cache.inference_key(gm, example_inputs, options, target.name)


def cached_inference(gm: torch.fx.GraphModule, key: str | None, options: Options):
    """Dynamo's `gm` (of `inference_key` `key`) as an earlier process compiled it, without
    aot_autograd, or None."""
    entry = cache.load(key)
    if entry is None:
        return None
    dump = GraphDump(options.dump_dir, "inference")
    stages = Stages(dump, in_worker=options.compile_in_worker)
    stages.write("fx_graph.py", lambda: gm.print_readable(print_output=False))
    try:
        with stages.timed("prepare"):
            loaded = (_loaded_split(entry, dump.graph_name, options) if "split" in entry
                      else _loaded_graph(entry, gm, dump.graph_name, options, stages))
    except Exception:  # a damaged entry is a miss: the compile below rewrites it
        log.debug("tessel: cache entry of graph %s unreadable", dump.graph_name, exc_info=True)
        return None
    if loaded is not None:
        counters.count("graphs_cached_before_aot")
    return loaded


def _loaded_graph(entry: dict, gm: torch.fx.GraphModule, graph_name: str, options: Options,
                  stages: Stages):
    """A whole graph's cache entry, loaded; None if the target's entry is gone."""
    signature = _decoded(entry["signature"])
    target = get_target(entry["target"])
    loaded = target.load_cached(entry["graph"], signature, options, stages)
    if loaded is None:
        return None
    host, kernels = loaded
    counters.count("graphs_cached")
    counters.count_compiled(graph_name, "inference", kernels)
    run = replayed(target, host, signature, graph_name, options, "inference")
    return eager_when_it_fails(checking_indices(run, signature), gm, graph_name, options)


def _loaded_split(entry: dict, graph_name: str, options: Options):
    """A split graph's cache entry, loaded: its code (FX's), calling each piece as its
    own entry loads it; None if one of those is gone."""
    target = get_target(entry["target"])
    namespace = dict(_FX_CODE_GLOBALS)
    exec(compile(entry["split"], f"<tessel split graph {graph_name}>", "exec"), namespace)
    forward, pieces = namespace["forward"], {}
    for record in entry["pieces"]:
        piece, signature = _decoded(record["module"]), _decoded(record["signature"])
        dump = GraphDump(options.dump_dir, "inference_piece")
        stages = Stages(dump, in_worker=options.compile_in_worker)
        loaded = target.load_cached(record["graph"], signature, options.without_replay(),
                                    stages)
        if loaded is None:
            return None
        host, kernels = loaded
        counters.count("graphs_cached")
        counters.count_compiled(dump.graph_name, "inference_piece", kernels)
        pieces[record["name"]] = as_module_call(eager_when_it_fails(
            checking_indices(host, signature), piece, dump.graph_name, options), piece)
    for op, why in entry["native"].items():
        counters.record_native(f"{graph_name}: {op}: {why}")
    calls = types.SimpleNamespace(**pieces)

    def split(*args):
        return forward(calls, *args)
    return target.replayed(target.checking_once_per_call(split), graph_name, options,
                           static_inputs=frozenset(entry["static_inputs"]))

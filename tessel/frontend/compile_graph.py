"""Compile one aot_autograd graph: FX -> torch -> linalg -> target, or fall back to eager."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import logging
import math
import pickle
import tempfile
import types
import warnings
from pathlib import Path
from typing import Callable

import torch
import torch._guards
import torch.fx
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree
from torch._functorch._aot_autograd.schemas import OutputType, PlainTensorMeta
from torch._functorch.aot_autograd import make_boxed_func

from tessel import counters, ir
from tessel.accuracy import first_divergent_kernel
from tessel.dump import GraphDump
from tessel.errors import TesselError
from tessel.frontend import graph_cache
from tessel.frontend.collectives import communicates
from tessel.frontend.cpu_norm_statistics import call_mixed_cpu_norms_as_kernels_take_them
from tessel.frontend.decompose import DecompositionFailed, decomposed, origins
from tessel.frontend.dynamic_views import rewrite_dynamic_views
from tessel.frontend.empty_values import allocate_empty_values
from tessel.frontend.importer import import_graph, torch_op_named_in
from tessel.frontend.input_mutations import mutated_inputs, mutations_as_results, writing_inputs
from tessel.frontend.lift_constants import lifted_constants, passing_constants
from tessel.frontend.native_ops import native_ops_in, native_reason
from tessel.frontend.partition import MAX_ROUNDS, split_around, target_names
from tessel.frontend.permuted_inputs import permuting_inputs
from tessel.frontend.signature import GraphSignature, UnsupportedGraph, prepare_graph
from tessel.frontend.traced_outputs import as_traced
from tessel.options import Options
from tessel.stages import CompileFailure, Stages
from tessel.targets.base import KernelBuildFailed, RuntimeCheckFailed, get_target

log = logging.getLogger("tessel")


class TesselCompileError(TesselError, RuntimeError):
    """Raised instead of falling back when options={"fallback": False}."""


class IndexOutOfRange(TesselError, IndexError, RuntimeError):
    """An index input out of range. Eager raises IndexError (embedding, x[i]) or
    RuntimeError (gather, index_select): this is caught as either."""


def resolve_target(options: Options, inputs) -> str:
    """options.target, or with "auto": triton for a graph with CUDA inputs, else cpu
    (inputs on other devices are refused by prepare_graph, naming them)."""
    if options.target != "auto":
        return options.target
    devices = {v.device.type for v in inputs if isinstance(v, torch.Tensor)}
    return "triton" if "cuda" in devices else "cpu"


def _input_values(gm: torch.fx.GraphModule) -> list:
    """The (fake) values of `gm`'s inputs, as Dynamo and aot_autograd traced them."""
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]


def _static_inputs(gm: torch.fx.GraphModule, kind: str) -> frozenset[int]:
    """Indices of the inputs aot_autograd marks static (parameters, buffers), for a
    whole inference or forward graph, whose inputs are Dynamo's graph's (a backward
    and the pieces of a split graph have others)."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context else None
    indices = getattr(metadata, "static_input_indices", None) or []
    count = sum(1 for n in gm.graph.nodes if n.op == "placeholder")
    if kind not in ("inference", "forward") or any(i >= count for i in indices):
        return frozenset()
    return frozenset(indices)


# While `remembering_inference` runs: the number of Dynamo's graph inputs, and the entry
# to store for that graph once aot_autograd has compiled it.
_remembered: dict | None = None


@contextlib.contextmanager
def remembering_inference(key: str | None, example_inputs):
    """Around aot_autograd's compile of Dynamo's graph (its `inference_key`): when that
    compiles it whole, as an inference graph which aot_autograd's wrapper only passes
    arguments and results through, store what `cached_inference` needs to skip
    aot_autograd next time. So for a graph split around native ops only (pieces that
    compiled whole, and the split graph's code that calls them)."""
    global _remembered
    _remembered = {"inputs": len(example_inputs)} if key else None
    try:
        yield
        if _remembered and ("graph" in _remembered or "split" in _remembered):
            graph_cache.store(key, _remembered)
    finally:
        _remembered = None


def inference_key(gm: torch.fx.GraphModule, example_inputs, options: Options) -> str | None:
    """The graph cache's key of Dynamo's `gm` as `cached_inference` reads it, or None
    where the target caches no graphs or the graph is not such an inference graph."""
    target = get_target(resolve_target(options, example_inputs))
    # check_accuracy needs the kernel IR of a compile, which the cache lacks.
    if not target.caches_graphs or options.check_accuracy:
        return None
    return graph_cache.inference_key(gm, example_inputs, options, target.name)


def _passes_through(inputs: int) -> bool:
    """Whether aot_autograd's wrapper of the graph being remembered only passes its
    `inputs` arguments and its results through, so that a later process may skip it."""
    metadata = getattr(torch._guards.TracingContext.try_get(), "fw_metadata", None)
    return not (_remembered is None or metadata is None or inputs != _remembered["inputs"]
                or any(i.mutates_data or i.mutates_metadata for i in metadata.input_info)
                or any(o.output_type != OutputType.non_alias for o in metadata.output_info)
                or metadata.num_intermediate_bases or metadata.tokens
                or any(not isinstance(m, PlainTensorMeta) or m.memory_format is not None
                       for m in metadata.subclass_inp_meta))


def _encoded(value) -> str:
    return base64.b64encode(pickle.dumps(value)).decode()


def _decoded(text: str):
    return pickle.loads(base64.b64decode(text))


def _remember_inference(cache_key: str | None, signature: GraphSignature, target: str) -> None:
    if cache_key is not None and _passes_through(len(signature.inputs)):
        _remembered.update(target=target, graph=cache_key, signature=_encoded(signature))


def _remember_piece(cache_key: str | None, signature: GraphSignature) -> None:
    """While the pieces of a split inference graph compile, in order: each one's entry."""
    if _remembered is not None:
        _remembered.setdefault("pieces", []).append(
            None if cache_key is None else {"graph": cache_key, "signature": _encoded(signature)})


# The globals of the code FX generates for a graph of aten ops, by name (its
# `python_code().globals`): a split graph whose code needs no others is stored as source.
_FX_CODE_GLOBALS = {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": torch,
                    "device": torch.device, "fx_pytree": fx_pytree, "pytree": pytree}


def _remember_split(gm: torch.fx.GraphModule, split: torch.fx.GraphModule,
                    pieces: dict[str, torch.fx.GraphModule], native: dict[str, str],
                    target: str) -> None:
    """After the pieces of inference graph `gm` compiled, `split` calling them and the
    `native` ops between them: store them for `cached_inference`, where every piece has
    an entry and the split's code needs only FX's usual globals."""
    code = split.graph.python_code(root_module="self")
    records = _remembered.get("pieces", []) if _remembered is not None else []
    if (len(records) != len(pieces) or None in records
            or not set(code.globals) <= set(_FX_CODE_GLOBALS)
            or not _passes_through(len(_input_values(gm)))):
        return
    try:
        modules = [_encoded(piece) for piece in pieces.values()]
    except (pickle.PicklingError, TypeError, AttributeError):  # a piece holding odd state
        log.debug("tessel: split graph not remembered: a piece does not pickle", exc_info=True)
        return
    _remembered.update(
        target=target, split=code.src, native=native,
        static_inputs=sorted(_static_inputs(gm, "inference")),
        pieces=[{**record, "name": name, "module": module}
                for record, name, module in zip(records, pieces, modules)])


def cached_inference(gm: torch.fx.GraphModule, key: str | None, options: Options):
    """Dynamo's `gm` (of `inference_key` `key`) as an earlier process compiled it (see
    `remembering_inference`), without aot_autograd, or None."""
    entry = graph_cache.load(key)
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
    _count_compiled(graph_name, "inference", kernels)
    return _eager_when_it_fails(
        _checking_indices(_replayed(target, host, signature, graph_name, options), signature), gm,
        graph_name, options)


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
        _count_compiled(dump.graph_name, "inference_piece", kernels)
        pieces[record["name"]] = _as_module_call(_eager_when_it_fails(
            _checking_indices(host, signature), piece, dump.graph_name, options), piece)
    for op, why in entry["native"].items():
        counters.record_native(f"{graph_name}: {op}: {why}")
    calls = types.SimpleNamespace(**pieces)

    def split(*args):
        return forward(calls, *args)
    return target.replayed(split, graph_name, options,
                           static_inputs=frozenset(entry["static_inputs"]))


def _count_compiled(graph_name: str, kind: str, kernels: int) -> None:
    counters.count("graphs_compiled")
    counters.count("backward_graphs_compiled" if kind.startswith("backward")
                   else "forward_graphs_compiled")
    counters.count("kernels", kernels)
    log.info("tessel: compiled graph %s into %d kernel(s)", graph_name, kernels)


def _remember(kind: str, cache_key: str | None, signature: GraphSignature, target: str) -> None:
    if kind == "inference":
        _remember_inference(cache_key, signature, target)
    elif kind == "inference_piece":
        _remember_piece(cache_key, signature)


def _compile(gm: torch.fx.GraphModule, options: Options, stages: Stages, kind: str):
    """`gm` compiled: (host, kernels, locate), or CompileFailure naming in `nodes` the
    nodes of `gm` that it is pinned on (none where nothing pins it)."""
    with stages.timed("decompose"):
        try:
            traced = decomposed(gm)
        except DecompositionFailed as error:
            raise CompileFailure("decompose", str(error), nodes=frozenset({error.node})) from error
    stages.write("decomposed_graph.py", lambda: traced.print_readable(print_output=False))
    try:
        lifted, constants = lifted_constants(traced)
        # A graph cache entry is called with Dynamo's inputs alone: no entry for these.
        host, kernels, locate = _compile_decomposed(lifted, options, stages, kind,
                                                    cacheable=not constants)
        host = passing_constants(host, constants)
        if locate is not None:
            locate = passing_constants(locate, constants)
        return _pinning_build_failures(host, gm, traced), kernels, locate
    except UnsupportedGraph as error:
        failure = CompileFailure("prepare", error.reason, error.op)
    except CompileFailure as error:
        failure = error
    failure.nodes = frozenset(_pinned_on(gm, traced, failure))
    raise failure


def _pinned_on(gm: torch.fx.GraphModule, traced: torch.fx.GraphModule,
               failure: CompileFailure) -> set[str]:
    """The nodes of `gm` whose decompositions (nodes of `traced`) `failure` names:
    by their locations, else every call of the op it names."""
    names = {node.name for node in traced.graph.nodes}
    located = (failure.nodes | ir.location_names(failure.message)) & names
    if not located and failure.op:
        located = {node.name for node in traced.graph.nodes
                   if node.op == "call_function" and failure.op in target_names(node)}
    return origins(traced, located) & {node.name for node in gm.graph.nodes}


def _compile_decomposed(gm: torch.fx.GraphModule, options: Options, stages: Stages, kind: str,
                        cacheable: bool = True):
    with stages.timed("prepare"):
        target = get_target(resolve_target(options, _input_values(gm)))
        prepared = rewrite_dynamic_views(allocate_empty_values(mutations_as_results(gm)))
        orders = {}
        if not target.reads_strided_inputs:
            prepared, orders = permuting_inputs(prepared)
        import_module, signature = prepare_graph(prepared, target.devices())
        signature.inputs = [dataclasses.replace(arg, permutation=orders[arg.name])
                            if arg.name in orders else arg for arg in signature.inputs]
        signature.mutated_inputs = mutated_inputs(gm)
        signature.static_inputs = _static_inputs(gm, kind)
        signature.device = _computing_device(gm)
        if kind in ("forward", "backward"):
            signature.role = kind
            outputs = next(n for n in reversed(gm.graph.nodes) if n.op == "output").args[0]
            signature.output_stack_traces = [
                o.meta.get("stack_trace") if isinstance(o, torch.fx.Node) else None
                for o in outputs]
        # check_accuracy needs the kernel IR of this compile, which the cache lacks.
        cache_key = (graph_cache.graph_key(gm, options, target.name)
                     if cacheable and target.caches_graphs and not options.check_accuracy
                     else None)
        cached = target.load_cached(cache_key, signature, options, stages)
    if cached is not None:
        counters.count("graphs_cached")
        host, kernels = cached
        _remember(kind, cache_key, signature, target.name)
        host = _replayed(target, host, signature, stages.dump.graph_name, options)
        return _checking_indices(host, signature), kernels, None
    with stages.timed("import"):
        try:
            module = import_graph(import_module.graph)
        except Exception as error:  # the importer raises many kinds
            message = f"{type(error).__name__}: {error}"
            raise CompileFailure("import", message, torch_op_named_in(message)) from error
    stages.write("torch.mlir", module.__str__)
    module = stages.run_pipeline(module, "linalg", "torch-to-linalg", torch_op_named_in)
    host, kernels = target.compile(module, signature, options, stages, cache_key=cache_key)
    _remember(kind, cache_key, signature, target.name)
    host = _replayed(target, host, signature, stages.dump.graph_name, options)
    locate = None
    if options.check_accuracy:
        def locate(*args):
            """Which kernel first differs from eager on `args` (tessel.accuracy)."""
            debug_stages = Stages(GraphDump(options.dump_dir, "accuracy"),
                                  in_worker=options.compile_in_worker)
            folder = (stages.dump.path / "accuracy") if stages.dump.path else Path(
                tempfile.mkdtemp(prefix=f"tessel-accuracy-{stages.dump.graph_name}-"))
            return first_divergent_kernel(gm, host, signature, args, target, options,
                                          debug_stages, folder)
    return _checking_indices(host, signature), kernels, locate


def _computing_device(gm: torch.fx.GraphModule) -> str | None:
    """The device of the tensors `gm` computes, as traced: its first tensor with dims
    (a 0-d CPU scalar mixes with tensors of any device), else its first tensor."""
    values = [n.meta.get("val") for n in gm.graph.nodes if n.op != "output"]
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    ranked = [v for v in tensors if v.dim()] or tensors
    return str(ranked[0].device) if ranked else None


def _replayed(target, host, signature: GraphSignature, graph_name: str, options: Options):
    """A compiled graph's `host`, writing the inputs the graph mutates, replayed as
    `options.mode` says (the writes too)."""
    return target.replayed(writing_inputs(host, signature.mutated_inputs), graph_name, options,
                           static_inputs=signature.static_inputs,
                           mutated_inputs=signature.mutated_inputs, role=signature.role,
                           output_stack_traces=signature.output_stack_traces)


def _checking_indices(host, signature: GraphSignature):
    """`host`, raising eager's IndexError for out-of-range index inputs before any
    native code runs: the kernel would abort the process or read out of bounds."""
    if not signature.index_checks:
        return host
    names = [arg.name for arg in signature.inputs]
    checks = [(names.index(check.name), check) for check in signature.index_checks]

    def checked(*args):
        for position, check in checks:
            index = args[position]
            if index.numel() == 0:
                continue
            low, high = (int(v) for v in torch.aminmax(index))
            lowest = -check.size if check.from_end else 0
            if low < lowest or high >= check.size:
                raise IndexOutOfRange(f"tessel: {check.op}: index {low if low < lowest else high} "
                                      f"is out of range for a dimension of size {check.size}")
        return host(*args)
    return checked


def compile_graph(gm: torch.fx.GraphModule, example_inputs, options: Options, kind: str):
    """The compiled callable for `gm` (boxed, as aot_autograd calls it). Ops tessel
    cannot compile run eagerly between compiled pieces, with one warning per graph.
    Whatever tessel raises in here runs the graph eagerly: aot_autograd compiles a
    backward graph at its first backward call, where nothing else would stop it before
    the user's `loss.backward()`."""
    reasons: list[str] = []
    gm = call_mixed_cpu_norms_as_kernels_take_them(gm)
    try:
        graph_name, compiled = _compile_or_split(gm, options, kind, reasons)
        if compiled is not gm:
            compiled = as_traced(compiled, gm, graph_name, options.fallback)
    except Exception as error:  # a compiler bug must not break the program
        if not options.fallback:
            raise
        log.debug("tessel: internal error compiling a %s graph", kind, exc_info=True)
        summary = f"{type(error).__name__}: {_first_error_line(str(error))}"
        counters.count("graphs_fallback")
        counters.record_fallback(f"{kind} graph: internal compiler error: {summary}")
        graph_name, compiled = kind, gm
        reasons.append(f"graph runs eagerly (internal compiler error: {summary[:240]})")
    if reasons:
        warnings.warn(f"tessel: graph {graph_name}: " + "; ".join(reasons), stacklevel=2)
    return make_boxed_func(compiled)


def _compile_or_split(gm: torch.fx.GraphModule, options: Options, kind: str,
                      reasons: list[str], depth: int = 0):
    """(graph name, callable): compiled whole, else split around the nodes its failure
    is pinned on (which run eagerly, as the user's own ops), else eager. Appends what
    runs eagerly, and why, to `reasons`. Calls left native on purpose (native_ops.py)
    are split around first, silently."""
    dump = GraphDump(options.dump_dir, kind)
    stages = Stages(dump, in_worker=options.compile_in_worker)
    stages.write("fx_graph.py", lambda: gm.print_readable(print_output=False))
    calls_native = native_ops_in(gm)
    if calls_native:
        for op, why in calls_native.items():
            counters.record_native(f"{dump.graph_name}: {op}: {why}")
        log.info("tessel: graph %s calls %s natively", dump.graph_name, ", ".join(calls_native))
        split = _split(gm, stages, options, kind, frozenset(), reasons, depth)
        # Its pieces run eagerly when they fail; the graph itself would communicate
        # again on every rank, which other ranks do not expect.
        if split is None or communicates(gm):
            return dump.graph_name, gm if split is None else split
        return dump.graph_name, _eager_when_it_fails(split, gm, dump.graph_name, options)
    try:
        host, kernels, locate = _compile(gm, options, stages, kind)
    except CompileFailure as error:
        failure = error
    except Exception as error:  # a compiler bug must not break the program
        log.debug("tessel: internal error compiling %s", dump.graph_name, exc_info=True)
        failure = CompileFailure("internal", f"internal compiler error: {type(error).__name__}: {error}")
    else:
        _count_compiled(dump.graph_name, kind, kernels)
        if options.check_accuracy:
            host = _checked_against_eager(host, gm, dump, locate)

        def resplit(failing: frozenset[str]):
            later: list[str] = []
            split = _split(gm, stages, options, kind, failing, later, depth)
            if split is not None:
                counters.count("graphs_split")
            return split
        return dump.graph_name, _eager_when_it_fails(host, gm, dump.graph_name, options,
                                                     resplit)

    failing = _ops_of(gm, failure.nodes) or failure.op or "graph"
    summary = _first_error_line(failure.message)
    if not options.fallback:
        raise TesselCompileError(
            f"tessel could not compile graph {dump.graph_name} (stage {failure.stage}), "
            f"op {failing}: {failure.message}")
    reason = f"{failing} runs eagerly ({failure.stage}: {summary[:240]})"
    counters.record_fallback(f"{dump.graph_name}: {failing}: {summary}")
    split = None
    if failure.nodes:
        try:
            split = _split(gm, stages, options, kind, failure.nodes, reasons, depth)
        except Exception:  # splitting is best effort; eager is always right
            log.debug("tessel: could not split graph %s", dump.graph_name, exc_info=True)
    reasons.append(reason)
    if split is None:
        counters.count("graphs_fallback")
        return dump.graph_name, gm
    counters.count("graphs_split")
    return dump.graph_name, _eager_when_it_fails(split, gm, dump.graph_name, options)


def _ops_of(gm: torch.fx.GraphModule, names: frozenset[str]) -> str:
    """The ops the nodes `names` of `gm` call, for a message: 'aten.gelu.default, ...'."""
    return ", ".join(sorted({str(node.target) for node in gm.graph.nodes if node.name in names}))


def _split(gm: torch.fx.GraphModule, stages: Stages, options: Options, kind: str,
           failing: frozenset[str], reasons: list[str], depth: int):
    """`gm` with every piece around its native calls and the `failing` nodes compiled,
    or None if no piece is left to compile (or the split went MAX_ROUNDS deep).

    An inference graph is replayed whole as the mode says (on the Triton target,
    reduce-overhead captures it in one CUDA graph), its pieces without replays of their
    own: one capture then holds the eager calls between the pieces too, and no piece
    copies its inputs into a capture's buffers and its outputs out (for GPT-2's block,
    split around its attention, those copies were most of its GPU time). Split around
    native ops only, it is also remembered for a later process, as a whole graph is
    (`remembering_inference`), and its first call builds all its pieces' code at once
    (`Target.building_pieces_together`), from a dry run in which those ops run on
    unwritten buffers: a node split around because it failed to compile might read
    indices from them, and is never run so. A graph that communicates has neither
    replay nor dry run (they would run its collectives), nor a remembered split (it
    names this process's groups)."""
    inference = kind == "inference"
    found = _split_pieces(gm, options.without_replay() if inference else options, kind,
                          failing, reasons, depth)
    if found is None:
        return None
    split, pieces = found
    stages.write("split_graph.py", lambda: split.print_readable(print_output=False))
    if not inference or communicates(gm):
        return split
    target = get_target(resolve_target(options, _input_values(gm)))
    if not failing:
        _remember_split(gm, split, pieces, native_ops_in(gm), target.name)
        # Its checks would compare the dry run's garbage, and its writes store it.
        if not options.check_accuracy and not mutated_inputs(gm):
            split = target.building_pieces_together(split, stages)
    return target.replayed(split, stages.dump.graph_name, options,
                           static_inputs=_static_inputs(gm, kind),
                           mutated_inputs=mutated_inputs(gm))


def _split_pieces(gm: torch.fx.GraphModule, options: Options, kind: str,
                  failing: frozenset[str], reasons: list[str], depth: int
                  ) -> tuple[torch.fx.GraphModule, dict[str, torch.fx.GraphModule]] | None:
    """`_split`'s pieces, compiled as `options` say, in a graph module that calls them;
    with the pieces' own graph modules, by name."""
    def eager(node: torch.fx.Node) -> bool:
        return node.name in failing or native_reason(node) is not None

    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    if depth >= MAX_ROUNDS or all(eager(n) for n in calls) or not any(eager(n) for n in calls):
        return None
    split, names = split_around(gm, eager)
    if not names:
        return None
    pieces = {}
    for name in names:
        piece = pieces[name] = getattr(split, name)
        _, compiled = _compile_or_split(piece, options, f"{kind}_piece", reasons, depth + 1)
        delattr(split, name)  # a submodule slot only takes modules; the call is a function
        setattr(split, name, _as_module_call(compiled, piece))
    split.recompile()
    return split, pieces


def _as_module_call(compiled, piece: torch.fx.GraphModule):
    """A callable that `call_module` can use: positional args in, the piece's own output
    structure out (a host program always returns a tuple; the piece itself, or its own
    split, returns that structure)."""
    output = next(n for n in piece.graph.nodes if n.op == "output").args[0]
    if isinstance(compiled, torch.fx.GraphModule) or isinstance(output, (tuple, list)):
        return compiled

    def call(*args):
        results = compiled(*args)
        return results[0] if isinstance(results, (tuple, list)) else results
    return call


def _eager_when_it_fails(host, gm: torch.fx.GraphModule, graph_name: str, options: Options,
                         resplit: Callable[[frozenset[str]], Callable | None] | None = None):
    """`host`, which raises nothing that eager `gm` would not; with fallback=False,
    every failure is raised instead.

    - A runtime check of the compiled code fails (sizes torch-mlir's lowering cannot
      handle; see report-failed-checks): that call runs eagerly, warned once per graph.
    - A kernel built at its first launch fails to build: from then on the graph runs
      split around the nodes that kernel computes (`resplit`), or else (no nodes, or
      the split fails) eagerly.
    - Anything else the compiled code raises: the call runs eagerly. Where eager raises
      too, that is the user's error, raised as eager raises it; where it does not, the
      compiled code has a bug: recorded, warned once, and the graph runs eagerly from
      then on.
    """
    running = host
    warned = False

    def guarded(*args):
        nonlocal running, warned
        try:
            return running(*args)
        except RuntimeCheckFailed as failure:
            if not options.fallback:
                raise
            if not warned:
                warned = True
                counters.record_fallback(f"{graph_name}: runtime check: {failure}")
                warnings.warn(f"tessel: graph {graph_name} runs eagerly for this call: "
                              f"{failure}", stacklevel=2)
            return gm(*args)
        except KernelBuildFailed as failure:
            if not options.fallback:
                raise
            try:
                split = resplit(failure.nodes) if failure.nodes and resplit else None
            except Exception:  # splitting is best effort; eager is always right
                log.debug("tessel: could not split graph %s", graph_name, exc_info=True)
                split = None
            running = gm if split is None else split
            where = (f"{_ops_of(gm, failure.nodes)} run eagerly" if split is not None
                     else "runs eagerly")
            counters.record_fallback(f"{graph_name}: kernel build: {failure}")
            warnings.warn(f"tessel: graph {graph_name} {where}: {failure}", stacklevel=2)
            return running(*args)
        except IndexOutOfRange:  # eager's error for the index inputs, checked before any kernel
            raise
        except Exception as error:  # compiled code must not raise what eager would not
            if not options.fallback or running is gm:
                raise
            results = gm(*args)
            running = gm
            log.debug("tessel: graph %s raised at run time", graph_name, exc_info=True)
            counters.record_fallback(f"{graph_name}: run time: {type(error).__name__}: "
                                     f"{_first_error_line(str(error))}")
            warnings.warn(f"tessel: graph {graph_name} runs eagerly: its compiled code "
                          f"raised {type(error).__name__}: {error}", stacklevel=2)
            return results
    return guarded


def _pinning_build_failures(host, gm: torch.fx.GraphModule, traced: torch.fx.GraphModule):
    """`host` (compiled from `traced`, `gm` decomposed), whose KernelBuildFailed names
    nodes of `gm` instead of `traced`."""
    def pinning(*args):
        try:
            return host(*args)
        except KernelBuildFailed as failure:
            failure.nodes = frozenset(
                origins(traced, set(failure.nodes)) & {n.name for n in gm.graph.nodes})
            raise
    return pinning


def _checked_against_eager(host, gm: torch.fx.GraphModule, dump: GraphDump, locate):
    """`host`, compared with eager `gm` on every call (options={"check_accuracy": True}),
    outputs and the inputs it writes; on a difference, `locate` names the first kernel
    that computes something else. Eager writes copies of those inputs."""
    where = f" (stages in {dump.path})" if dump.path else " (set dump_dir to keep its IR)"
    mutated = mutated_inputs(gm)

    def checked(*args):
        def copied() -> list:
            return [a.clone() if i in mutated else a for i, a in enumerate(args)]
        before, eager_args = copied(), copied()
        expected = gm(*eager_args)
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        compiled = host(*args)
        pairs = [*zip(compiled, expected), *((args[i], eager_args[i]) for i in mutated)]
        for index, (actual, reference) in enumerate(pairs):
            if not isinstance(reference, torch.Tensor):
                continue
            try:
                torch.testing.assert_close(actual, reference, equal_nan=True)
            except AssertionError as error:
                counters.count("accuracy_failures")
                try:
                    culprit = locate(*before)
                except Exception as failure:  # the diagnosis must not break the program
                    log.debug("tessel: bisecting graph %s failed", dump.graph_name, exc_info=True)
                    culprit = f"kernel bisection failed: {type(failure).__name__}: {failure}"
                what = (f"output {index}" if index < len(expected)
                        else f"input {mutated[index - len(expected)]} (written)")
                warnings.warn(f"tessel: graph {dump.graph_name} {what} differs from "
                              f"eager{where}: {str(error).splitlines()[0]}; {culprit}",
                              stacklevel=2)
                for i in mutated:
                    args[i].copy_(eager_args[i])
                return tuple(expected)
        return compiled
    return checked


def _first_error_line(message: str) -> str:
    lines = message.strip().splitlines()
    return next((line.strip() for line in lines if "error:" in line), lines[0] if lines else "")

"""Compile one aot_autograd graph: FX -> torch -> linalg -> target, or fall back to eager.

The path, top to bottom: `compile_graph` (never raises into the user's program) ->
`_compile_or_split` (native ops split around first; a failure pinned on nodes splits
the graph around them, split_graph.py, else the graph runs eagerly) -> `_compile`
(decompose, lift constants) -> `_compile_decomposed` (prepare the signature, load
from the cache or import, lower to linalg and hand to the target) -> the host
program, wrapped for run time (run_time.py, eager_fallback.py, eager_comparison.py).
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import warnings
from pathlib import Path

import torch
import torch.fx
from torch._functorch.aot_autograd import make_boxed_func

from tessel import cache, counters, ir
from tessel.accuracy import first_divergent_kernel
from tessel.dump import GraphDump
from tessel.errors import TesselError
from tessel.frontend.collectives import communicates
from tessel.frontend.common_subexpressions import without_common_subexpressions
from tessel.frontend.complex_pairs import as_real_pairs, with_complex_boundaries
from tessel.frontend.constant_values import constants_on_their_readers_devices, folded_constants
from tessel.frontend.cpu_norm_statistics import call_mixed_cpu_norms_as_kernels_take_them
from tessel.frontend.decompose import DecompositionFailed, decomposed, origins
from tessel.frontend.dynamic_views import rewrite_dynamic_views
from tessel.frontend.eager_comparison import checked_against_eager
from tessel.frontend.eager_fallback import (
    eager_when_it_fails,
    first_error_line,
    ops_of,
    pinning_build_failures,
)
from tessel.frontend.empty_values import allocate_empty_values
from tessel.frontend.importer import import_graph, node_being_imported, torch_op_named_in
from tessel.frontend.inference_cache import InferenceMemo
from tessel.frontend.input_mutations import mutated_inputs, mutations_as_results
from tessel.frontend.lift_constants import lifted_constants, passing_constants
from tessel.frontend.native_ops import native_ops_in, splits_around
from tessel.frontend.partition import target_names
from tessel.frontend.permuted_inputs import permuting_inputs
from tessel.frontend.permuted_results import permuting_results
from tessel.frontend.prepare_graph import UnsupportedGraph, prepare_graph
from tessel.frontend.run_time import checking_indices, replayed
from tessel.frontend.saved_layouts import (
    SavedLayouts,
    report_strides,
    restrided_inputs,
    saved_positions,
    taking_traced_layouts,
    traced_layouts,
)
from tessel.frontend.split_graph import split_graph
from tessel.frontend.traced_outputs import as_traced
from tessel.frontend.traced_facts import (
    computing_device,
    output_stack_traces,
    resolve_target,
    static_inputs,
)
from tessel.options import Options
from tessel.stages import CompileFailure, Stages
from tessel.targets.base import get_target

log = logging.getLogger("tessel")


class TesselCompileError(TesselError, RuntimeError):
    """Raised instead of falling back when options={"fallback": False}."""


def compile_graph(gm: torch.fx.GraphModule, example_inputs, options: Options, kind: str,
                  memo: InferenceMemo | None = None):
    """The compiled callable for `gm` (boxed, as aot_autograd calls it). Ops tessel
    cannot compile run eagerly between compiled pieces, with one warning per graph.
    Whatever tessel raises in here runs the graph eagerly: aot_autograd compiles a
    backward graph at its first backward call, where nothing else would stop it before
    the user's `loss.backward()`. `memo` takes what a later process needs to skip
    aot_autograd for this graph (inference_cache.py)."""
    reasons: list[str] = []
    gm = call_mixed_cpu_norms_as_kernels_take_them(gm)
    if kind == "inference":  # aot_autograd merged those of the others
        gm = without_common_subexpressions(gm)
    saved = SavedLayouts(saved_positions(gm, kind))
    relaid = {}  # the inputs that this graph takes copied into their traced layouts
    traced = traced_layouts(gm, example_inputs) if kind == "backward" else {}
    try:
        if kind == "backward":
            relaid = restrided_inputs(gm, example_inputs, traced)
        graph_name, compiled = _compile_or_split(gm, options, kind, reasons, memo, saved)
        if compiled is not gm:
            compiled = as_traced(compiled, gm, graph_name, options.fallback, saved.strides)
        report_strides(gm, saved.strides)
    except Exception as error:  # a compiler bug must not break the program
        if not options.fallback:
            raise
        log.debug("tessel: internal error compiling a %s graph", kind, exc_info=True)
        summary = f"{type(error).__name__}: {first_error_line(str(error))}"
        counters.count("graphs_fallback")
        counters.record_fallback(f"{kind} graph: internal compiler error: {summary}")
        graph_name, compiled = kind, gm
        reasons.append(f"graph runs eagerly (internal compiler error: {summary[:240]})")
    if reasons:
        warnings.warn(f"tessel: graph {graph_name}: " + "; ".join(reasons), stacklevel=2)
    if compiled is gm:  # eager's kernels, which may require eager's layouts
        relaid = traced
    return make_boxed_func(taking_traced_layouts(compiled, relaid))


def _compile_or_split(gm: torch.fx.GraphModule, options: Options, kind: str,
                      reasons: list[str], memo: InferenceMemo | None,
                      saved: SavedLayouts | None = None, depth: int = 0):
    """(graph name, callable): compiled whole, else split around the nodes its failure
    is pinned on (which run eagerly, as the user's own ops), else eager. Appends what
    runs eagerly, and why, to `reasons`. Calls left native on purpose (native_ops.py)
    are split around first, silently. Compiled whole, the outputs at `saved.positions`
    may be returned as written, their strides put in `saved.strides`."""
    gm = constants_on_their_readers_devices(gm)
    dump = GraphDump(options.dump_dir, kind)
    stages = Stages(dump, in_worker=options.compile_in_worker)
    stages.write("fx_graph.py", lambda: gm.print_readable(print_output=False))

    def split(failing: frozenset[str], reasons: list[str]):
        def compile_piece(piece, piece_options, piece_kind, piece_depth, piece_saved):
            return _compile_or_split(piece, piece_options, piece_kind, reasons, memo,
                                     piece_saved, depth=piece_depth)[1]
        return split_graph(gm, stages, options, kind, failing, depth, compile_piece, memo)

    calls_native = native_ops_in(gm)
    for op, why in calls_native.items():
        counters.record_native(f"{dump.graph_name}: {op}: {why}")
    if calls_native:
        log.info("tessel: graph %s calls %s natively", dump.graph_name, ", ".join(calls_native))
    calls_native_ops = get_target(resolve_target(options, gm)).calls_native_ops
    if any(splits_around(node, calls_native_ops) for node in gm.graph.nodes):
        split_gm = split(frozenset(), reasons)
        # Its pieces run eagerly when they fail; the graph itself would communicate
        # again on every rank, which other ranks do not expect.
        if split_gm is None or communicates(gm):
            return dump.graph_name, gm if split_gm is None else split_gm
        return dump.graph_name, eager_when_it_fails(split_gm, gm, dump.graph_name, options)
    paired = as_real_pairs(gm)
    if paired is not None:
        # A later process could not call the pairs' code with complex inputs: not memoized.
        graph_name, run = _compile_or_split(paired, options, kind, reasons, None, depth=depth)
        return graph_name, with_complex_boundaries(run, gm)
    try:
        host, kernels, locate = _compile(gm, options, stages, kind, memo, saved)
    except CompileFailure as error:
        failure = error
    except Exception as error:  # a compiler bug must not break the program
        log.debug("tessel: internal error compiling %s", dump.graph_name, exc_info=True)
        failure = CompileFailure("internal", f"internal compiler error: {type(error).__name__}: {error}")
    else:
        counters.count_compiled(dump.graph_name, kind, kernels)
        if options.check_accuracy:
            host = checked_against_eager(host, gm, dump, locate)

        def resplit(failing: frozenset[str]):
            split_gm = split(failing, [])
            if split_gm is not None:
                counters.count("graphs_split")
            return split_gm
        return dump.graph_name, eager_when_it_fails(host, gm, dump.graph_name, options, resplit)

    if saved is not None:
        saved.strides = {}  # what runs instead returns outputs as traced
    failing = ops_of(gm, failure.nodes) or failure.op or "graph"
    summary = first_error_line(failure.message)
    if not options.fallback:
        raise TesselCompileError(
            f"tessel could not compile graph {dump.graph_name} (stage {failure.stage}), "
            f"op {failing}: {failure.message}")
    reason = f"{failing} runs eagerly ({failure.stage}: {summary[:240]})"
    counters.record_fallback(f"{dump.graph_name}: {failing}: {summary}")
    split_gm = None
    if failure.nodes:
        try:
            split_gm = split(failure.nodes, reasons)
        except Exception:  # splitting is best effort; eager is always right
            log.debug("tessel: could not split graph %s", dump.graph_name, exc_info=True)
    reasons.append(reason)
    if split_gm is None:
        counters.count("graphs_fallback")
        return dump.graph_name, gm
    counters.count("graphs_split")
    return dump.graph_name, eager_when_it_fails(split_gm, gm, dump.graph_name, options)


def _compile(gm: torch.fx.GraphModule, options: Options, stages: Stages, kind: str,
             memo: InferenceMemo | None, saved: SavedLayouts | None = None):
    """`gm` compiled: (host, kernels, locate), or CompileFailure naming in `nodes` the
    nodes of `gm` that it is pinned on (none where nothing pins it)."""
    with stages.timed("decompose"):
        try:
            traced = folded_constants(decomposed(gm))
        except DecompositionFailed as error:
            raise CompileFailure("decompose", str(error), nodes=frozenset({error.node})) from error
    stages.write("decomposed_graph.py", lambda: traced.print_readable(print_output=False))
    try:
        lifted, constants = lifted_constants(traced)
        # A graph cache entry is called with Dynamo's inputs alone: no entry for these.
        host, kernels, locate = _compile_decomposed(lifted, options, stages, kind, memo,
                                                    cacheable=not constants, saved=saved)
        host = passing_constants(host, constants)
        if locate is not None:
            locate = passing_constants(locate, constants)
        return pinning_build_failures(host, gm, traced), kernels, locate
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
                        memo: InferenceMemo | None, cacheable: bool = True,
                        saved: SavedLayouts | None = None):
    with stages.timed("prepare"):
        target = get_target(resolve_target(options, gm))
        prepared = rewrite_dynamic_views(allocate_empty_values(mutations_as_results(gm)))
        prepared, orders = permuting_inputs(prepared, target.strided_tensors)
        if not target.strided_tensors:
            prepared = permuting_results(prepared)
        any_layout = saved.positions if saved is not None else frozenset()
        import_module, signature = prepare_graph(prepared, target.devices(), mutated_inputs(gm),
                                                 any_layout)
        signature.inputs = [dataclasses.replace(arg, permutation=orders[arg.name])
                            if arg.name in orders else arg for arg in signature.inputs]
        signature.mutated_inputs = mutated_inputs(gm)
        signature.static_inputs = static_inputs(gm, kind)
        signature.device = computing_device(gm)
        if kind in ("forward", "backward"):
            signature.role = kind
        if not kind.endswith("_piece"):  # a piece replays in its split graph (split_graph.py)
            signature.output_stack_traces = output_stack_traces(gm)
        # check_accuracy needs the kernel IR of this compile, which the cache lacks.
        cache_key = (cache.graph_key(gm, options, target.name, any_layout)
                     if cacheable and target.caches_graphs and not options.check_accuracy
                     else None)
        cached = target.load_cached(cache_key, signature, options, stages)
    if cached is not None:
        counters.count("graphs_cached")
        host, kernels = cached
        if memo is not None:
            memo.remember(kind, cache_key, signature, target.name)
        host = replayed(target, host, signature, stages.dump.graph_name, options, kind)
        if saved is not None:
            saved.returned(signature)
        return checking_indices(host, signature), kernels, None
    with stages.timed("import"):
        try:
            module = import_graph(import_module.graph, signature.new_values)
        except Exception as error:  # the importer raises many kinds
            message = f"{type(error).__name__}: {error}"
            node = node_being_imported(error, import_module.graph)
            raise CompileFailure("import", message, torch_op_named_in(message),
                                 nodes=frozenset({node.name} if node else ())) from error
    stages.write("torch.mlir", module.__str__)
    module = stages.run_pipeline(module, "linalg", "torch-to-linalg", torch_op_named_in)
    host, kernels = target.compile(module, signature, options, stages, cache_key=cache_key)
    if memo is not None:
        memo.remember(kind, cache_key, signature, target.name)
    host = replayed(target, host, signature, stages.dump.graph_name, options, kind)
    if saved is not None:
        saved.returned(signature)
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
    return checking_indices(host, signature), kernels, locate

"""Compile one aot_autograd graph: FX -> torch -> linalg -> target, or fall back to eager."""

from __future__ import annotations

import logging
import warnings

import torch
import torch.fx
from torch._functorch.aot_autograd import make_boxed_func

from tessel import counters
from tessel.dump import GraphDump
from tessel.frontend.importer import import_graph, torch_op_named_in
from tessel.frontend.signature import UnsupportedGraph, prepare_graph
from tessel.options import Options
from tessel.stages import CompileFailure, Stages
from tessel.targets.base import get_target

log = logging.getLogger("tessel")


class TesselCompileError(RuntimeError):
    """Raised instead of falling back when options={"fallback": False}."""


def resolve_target(options: Options, example_inputs) -> str:
    if options.target != "auto":
        return options.target
    devices = {t.device.type for t in example_inputs if isinstance(t, torch.Tensor)}
    if devices - {"cpu"}:
        raise UnsupportedGraph(f"no tessel target for device(s) {sorted(devices - {'cpu'})} yet")
    return "cpu"


def _compile(gm: torch.fx.GraphModule, example_inputs, options: Options, stages: Stages):
    with stages.timed("prepare"):
        import_module, signature = prepare_graph(gm)
        target = get_target(resolve_target(options, example_inputs))
    with stages.timed("import"):
        try:
            module = import_graph(import_module.graph)
        except Exception as error:  # noqa: BLE001 -- the importer raises many kinds
            message = f"{type(error).__name__}: {error}"
            raise CompileFailure("import", message, torch_op_named_in(message)) from error
    stages.write("torch.mlir", str(module))
    module = stages.run_pipeline(module, "linalg", "torch-to-linalg", torch_op_named_in)
    return target.compile(module, signature, options, stages)


def compile_graph(gm: torch.fx.GraphModule, example_inputs, options: Options, kind: str):
    """The compiled callable for `gm`, or `gm` itself (eager) after a warning."""
    dump = GraphDump(options.dump_dir, kind)
    stages = Stages(dump, in_worker=options.compile_in_worker)
    stages.write("fx_graph.py", gm.print_readable(print_output=False))
    try:
        host, kernels = _compile(gm, example_inputs, options, stages)
    except UnsupportedGraph as error:
        failure = CompileFailure("prepare", error.reason, error.op)
    except CompileFailure as error:
        failure = error
    except Exception as error:  # noqa: BLE001 -- a compiler bug must not break the program
        log.debug("tessel: internal error compiling %s", dump.graph_name, exc_info=True)
        failure = CompileFailure("internal", f"internal compiler error: {type(error).__name__}: {error}")
    else:
        counters.count("graphs_compiled")
        counters.count("backward_graphs_compiled" if kind == "backward" else "forward_graphs_compiled")
        counters.count("kernels", kernels)
        log.info("tessel: compiled graph %s into %d kernel(s)", dump.graph_name, kernels)
        return make_boxed_func(host)

    op = failure.op or "graph"
    summary = _first_error_line(failure.message)
    if not options.fallback:
        raise TesselCompileError(
            f"tessel could not compile graph {dump.graph_name} (stage {failure.stage}), "
            f"op {op}: {failure.message}")
    counters.record_fallback(f"{dump.graph_name}: {op}: {summary}")
    warnings.warn(f"tessel: graph {dump.graph_name} runs eagerly: {op} is not supported "
                  f"({failure.stage}: {summary})", stacklevel=2)
    return make_boxed_func(gm)


def _first_error_line(message: str) -> str:
    lines = message.strip().splitlines()
    return next((line.strip() for line in lines if "error:" in line), lines[0] if lines else "")

"""A compiled graph that never raises into the user's program what eager would not:
run-time failures of its compiled code run the graph eagerly (or split, for a kernel
that fails to build), recorded and warned once."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

import torch.fx

from tessel import counters
from tessel.frontend.decompose import origins
from tessel.frontend.run_time import IndexOutOfRange
from tessel.options import Options
from tessel.targets.base import KernelBuildFailed, RuntimeCheckFailed

log = logging.getLogger("tessel")


def eager_when_it_fails(host, gm: torch.fx.GraphModule, graph_name: str, options: Options,
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
            where = (f"{ops_of(gm, failure.nodes)} run eagerly" if split is not None
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
                                     f"{first_error_line(str(error))}")
            warnings.warn(f"tessel: graph {graph_name} runs eagerly: its compiled code "
                          f"raised {type(error).__name__}: {error}", stacklevel=2)
            return results
    return guarded


def pinning_build_failures(host, gm: torch.fx.GraphModule, traced: torch.fx.GraphModule):
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


def ops_of(gm: torch.fx.GraphModule, names: frozenset[str]) -> str:
    """The ops the nodes `names` of `gm` call, for a message: 'aten.gelu.default, ...'."""
    return ", ".join(sorted({str(node.target) for node in gm.graph.nodes if node.name in names}))


def first_error_line(message: str) -> str:
    lines = message.strip().splitlines()
    return next((line.strip() for line in lines if "error:" in line), lines[0] if lines else "")

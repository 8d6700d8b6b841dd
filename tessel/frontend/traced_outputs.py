"""Results as Dynamo traced them: a compiled graph hands back what eager `gm` would.

Dynamo traces the code after a graph (the rest of the frame after a graph break, the
next frame) on fake copies of the real tensors that graph returned. A result of the
compiled code laid out otherwise than the FX graph's `meta["val"]` says (eager's
layout) changes what that trace sees: a `.view()` that eager's contiguous result takes
fails on a strided one, and Dynamo raises "RuntimeError when making fake tensor call"
into the user's program, where no fallback of tessel's can catch it. A result of
another dtype, shape or device is a wrong answer.

So the first call of a compiled graph compares its results with the traced ones:
results laid out otherwise are copied into eager's layout on every call; a result of
another dtype, shape or device sends the graph to eager for good (recorded as a
fallback, warned once). A result that shares memory with an input is left alone:
a copy would break the aliasing eager has (an input returned, a view of one). So is the
device of a native op's result (native_ops.py): the compiled code returns what eager's
own op returned, which is eager's answer where its fake kernel says otherwise (the
fused attentions' philox seed and offset: CPU tensors outside a CUDA graph capture,
traced on the query's device).
"""

from __future__ import annotations

import logging
import operator
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType

import torch
import torch.fx

from tessel import counters
from tessel.frontend.native_ops import native_reason
from tessel.frontend.traced_facts import result_nodes

log = logging.getLogger("tessel")


def _traced_results(gm: torch.fx.GraphModule) -> list:
    """`gm`'s results as traced (`meta["val"]`; None where a result is no node)."""
    return [r.meta.get("val") if isinstance(r, torch.fx.Node) else None
            for r in result_nodes(gm)]


def _native_results(gm: torch.fx.GraphModule) -> set[int]:
    """The positions of `gm`'s results that a native op returns (or an item of one's)."""
    def computing(node: torch.fx.Node) -> torch.fx.Node:
        return node.args[0] if node.target is operator.getitem else node
    return {index for index, node in enumerate(result_nodes(gm))
            if isinstance(node, torch.fx.Node) and native_reason(computing(node)) is not None}


def _storages(tensors) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors
            if isinstance(t, torch.Tensor) and t.layout == torch.strided}


def _differs(actual: torch.Tensor, traced: torch.Tensor, native: bool) -> str | None:
    """What makes `actual` another tensor than `traced` describes, or None; a `native`
    op's result may be on another device (module docstring)."""
    if actual.dtype != traced.dtype:
        return f"dtype {actual.dtype}, traced {traced.dtype}"
    if actual.device != traced.device and not native:
        return f"device {actual.device}, traced {traced.device}"
    if actual.shape != traced.shape:
        return f"shape {tuple(actual.shape)}, traced {tuple(traced.shape)}"
    return None


def _relaid(actual: torch.Tensor, traced: torch.Tensor) -> tuple[int, ...] | None:
    """The strides `actual` must be copied into, `traced`'s, where they differ where
    they matter (dims of size 1 have any stride) and `traced` is a layout a tensor of
    its own can have (dense and not overlapping: an expand's zero strides cannot);
    else None."""
    if actual.numel() <= 1 or not torch._prims_common.is_non_overlapping_and_dense_or_false(
            traced):
        return None
    strides = _concrete_strides(actual, traced)
    if strides is None or not any(size > 1 and a != t for size, a, t in
                                  zip(actual.shape, actual.stride(), strides)):
        return None
    return strides


def _concrete_strides(actual: torch.Tensor, traced: torch.Tensor) -> tuple[int, ...] | None:
    """`traced`'s strides at `actual`'s sizes: strides symbolic in sizes (dynamic shapes)
    evaluated with the symbols its sizes bind; None where one stays symbolic."""
    sizes = {size.node.expr: real for size, real in zip(traced.shape, actual.shape)
             if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol}
    strides = []
    for stride in traced.stride():
        value = stride.node.expr.xreplace(sizes) if isinstance(stride, torch.SymInt) else stride
        if not (isinstance(value, int) or value.is_Integer):
            return None
        strides.append(int(value))
    return tuple(strides)


def _in_layout(tensor: torch.Tensor, stride) -> torch.Tensor:
    return torch.empty_strided(tensor.shape, stride, dtype=tensor.dtype,
                               device=tensor.device).copy_(tensor)


def as_traced(compiled: Callable, gm: torch.fx.GraphModule, graph_name: str,
              fallback: bool, reported: Mapping[int, tuple[int, ...]] = MappingProxyType({})
              ) -> Callable:
    """`compiled` (called with `gm`'s inputs, unboxed), whose results match `gm`'s traced
    ones (module docstring), but for the strides `reported` to aot_autograd instead
    (saved_layouts.py), by position; with `fallback` False, a wrong result raises
    instead."""
    traced = [value.as_strided(value.shape, reported[index])
              if index in reported and isinstance(value, torch.Tensor) else value
              for index, value in enumerate(_traced_results(gm))]
    if not any(isinstance(value, torch.Tensor) for value in traced):
        return compiled
    native = _native_results(gm)
    running = None  # decided at the first call

    def first_call(*args):
        nonlocal running
        results = compiled(*args)
        listed = results if isinstance(results, (tuple, list)) else (results,)
        inputs = _storages(args)
        relaid: dict[int, tuple[int, ...]] = {}
        for index, (actual, value) in enumerate(zip(listed, traced)):
            if not isinstance(actual, torch.Tensor) or not isinstance(value, torch.Tensor):
                continue
            wrong = _differs(actual, value, index in native)
            if wrong is not None:
                message = f"result {index} has {wrong}"
                if not fallback:
                    raise RuntimeError(f"tessel: graph {graph_name}: {message}")
                counters.record_fallback(f"{graph_name}: results: {message}")
                warnings.warn(f"tessel: graph {graph_name} runs eagerly: its compiled code's "
                              f"{message}", stacklevel=2)
                running = gm
                return gm(*args)
            strides = _relaid(actual, value)
            if strides is not None and actual.untyped_storage().data_ptr() not in inputs:
                relaid[index] = strides
        if relaid:
            log.debug("tessel: graph %s: results %s copied into eager's layout",
                      graph_name, sorted(relaid))
            running = _copying(compiled, relaid)
            return _laid_out(results, relaid)
        running = compiled
        return results

    def call(*args):
        return (first_call if running is None else running)(*args)
    return call


def _laid_out(results, relaid: dict[int, tuple[int, ...]]):
    """`results` (a tuple or list, or one tensor) with those at `relaid` copied into
    their layouts."""
    listed = results if isinstance(results, (tuple, list)) else (results,)
    laid = [_in_layout(r, relaid[i]) if i in relaid else r for i, r in enumerate(listed)]
    if isinstance(results, list):
        return laid
    return tuple(laid) if isinstance(results, tuple) else laid[0]


def _copying(compiled: Callable, relaid: dict[int, tuple[int, ...]]) -> Callable:
    def copying(*args):
        return _laid_out(compiled(*args), relaid)
    return copying

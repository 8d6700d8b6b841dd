"""A training step's saved activations, handed from forward to backward as written.

The Triton target's kernels write a conv net's activations channels-last (the layout of
cuDNN's tensor-core convolutions, targets/triton/layouts.py), where eager's trace has
them contiguous. Returned as traced, every activation the forward saves for the backward
was copied into eager's layout, and the backward read it back across memory (cuDNN's
backward convolutions converted it again): on an H100, resnet50's train step spent 5.2 ms
of 26.9 in 124 such copies, and 1.3 ms in cuDNN's conversions.

A saved activation is no output the user sees, so its layout is the compilers' business,
as Inductor's layout optimization has it: the forward compiler reports the strides of
what it returns (`TracingContext.output_strides`, one entry per output, None where the
traced strides hold), and aot_autograd compiles the backward for them (it re-strides the
backward's example inputs, `_aot_stage2b_bw_compile` in torch 2.13, in
`aot_dispatch_autograd` before; "saved activations can have different stride to
eager"). So the forward returns those (`saved_positions`) as its kernels wrote them, and
reports their strides (`report_strides`); the backward takes its inputs' traced layouts
from its example inputs (`restrided_inputs`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch._guards
import torch.fx

from tessel.signature import GraphSignature

log = logging.getLogger("tessel")


@dataclass
class SavedLayouts:
    """The outputs of a forward graph that its compiled code may return as written, by
    position, and, once compiled, the strides of those it does."""
    positions: frozenset[int]
    strides: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def returned(self, signature: GraphSignature) -> None:
        """Take the strides of what `signature`'s compiled code returns as written."""
        by_name = {f"out{index}": strides for index, strides in signature.result_strides.items()}
        self.strides = {position: by_name[returned]
                        for position, returned in enumerate(signature.returns)
                        if returned in by_name}


def saved_positions(gm: torch.fx.GraphModule, kind: str) -> frozenset[int]:
    """The positions of the outputs of `gm`, a whole forward graph of aot_autograd, that
    only the backward reads (`fw_metadata.tensors_saved_for_backwards_slice`), where the
    forward's compiler may report their strides; none for any other graph, or where this
    torch does not say."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context else None
    if kind != "forward" or getattr(context, "output_strides", None) is None:
        return frozenset()
    try:
        saved = metadata.tensors_saved_for_backwards_slice
    except (AttributeError, AssertionError):
        return frozenset()
    (outputs,) = next(n for n in gm.graph.nodes if n.op == "output").args
    return frozenset(range(len(outputs))[saved])


def report_strides(gm: torch.fx.GraphModule, strides: dict[int, tuple[int, ...]]) -> None:
    """Tell aot_autograd the strides of the outputs of `gm` (a forward graph) that its
    compiled code returns otherwise than traced, by position."""
    context = torch._guards.TracingContext.try_get()
    reported = getattr(context, "output_strides", None) if context else None
    if not strides or reported is None or reported:
        return
    (outputs,) = next(n for n in gm.graph.nodes if n.op == "output").args
    reported.extend(strides.get(position) for position in range(len(outputs)))


def traced_layouts(gm: torch.fx.GraphModule, example_inputs) -> dict[int, tuple[int, ...]]:
    """The inputs of `gm` that `example_inputs` give in other strides than traced (of
    the traced shape, static strides), by position, with their traced strides: eager's
    layouts, which `restrided_inputs` then replaces in the trace. A backward that runs
    eagerly as a whole takes its inputs copied into them: eager's kernels may require
    them where their fake kernels do not (`nll_loss2d_backward` of a channels-last
    log-softmax)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return {}
    traced = {}
    for position, (node, example) in enumerate(zip(placeholders, example_inputs)):
        value = node.meta.get("val")
        if (isinstance(value, torch.Tensor) and isinstance(example, torch.Tensor)
                and value.shape == example.shape
                and all(isinstance(s, int) for s in (*value.stride(), *example.stride()))
                and value.stride() != example.stride()):
            traced[position] = tuple(value.stride())
    return traced


def restrided_inputs(gm: torch.fx.GraphModule, example_inputs,
                     traced: dict[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """Trace the inputs of `gm` (`meta["val"]`) with the strides of `example_inputs`:
    a backward graph's, those the forward reported; a piece's, those the pieces before
    it return (piece_layouts.py); so that it is compiled for the layouts it gets. Where
    the graph, run eagerly (all of it as a fallback, or some of its nodes between
    compiled pieces), cannot take inputs so laid out (a `view` that only the traced
    layout allows), its inputs are left as traced, and returned: the positions of those
    to copy into their traced strides at every call (`taking_traced_layouts`).
    `traced`: `traced_layouts(gm, example_inputs)`, taken before this changes the trace."""
    if not traced:
        return {}
    fake_mode = torch._guards.detect_fake_mode(example_inputs)
    if fake_mode is None:  # real example inputs: running the graph would compute it
        return traced
    try:
        with fake_mode:
            torch.fx.Interpreter(gm).run(*example_inputs)
    except Exception:  # noqa: BLE001 -- whatever eager raises on these layouts
        log.debug("tessel: a graph takes its inputs in their traced layouts",
                  exc_info=True)
        return traced
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for position in traced:
        placeholders[position].meta["val"] = example_inputs[position]
        placeholders[position].meta.pop("tensor_meta", None)  # the importer reads it first
    return {}


def taking_traced_layouts(compiled: Callable, relaid: dict[int, tuple[int, ...]]
                          ) -> Callable:
    """`compiled` (unboxed), its inputs at `relaid` first copied into those strides."""
    if not relaid:
        return compiled

    def relaying(*args):
        args = [torch.empty_strided(arg.shape, relaid[i], dtype=arg.dtype,
                                    device=arg.device).copy_(arg)
                if i in relaid and arg.stride() != relaid[i] else arg
                for i, arg in enumerate(args)]
        return compiled(*args)
    return relaying

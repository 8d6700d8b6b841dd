"""Graphs that write their inputs.

tessel asks aot_autograd to keep input mutations in the graph (as Inductor does): an
optimizer step's new parameters and states, and batch norm's running statistics, end
its graph as `aten.copy_(input, new_value)`. Returned as outputs instead, each would be
copied into its input by aot_autograd's wrapper, one `copy_` call at a time (Adam on
densenet121 writes 1,456 tensors a step), and under reduce-overhead cloned first out of
the CUDA graph's buffers (torch.profiler: 1,456 clones and 3,641 `copy_` calls a
step in all, and with their allocations about half the step's host time).

The compiled graph computes the new values as extra results instead (MLIR functions
take no mutable inputs), and its host writes them into the inputs with one
`torch._foreach_copy_`, inside the CUDA graph where the mode replays one. Where the
kernel that computes a new value is free to write it straight into its input
(passes/write_inputs_in_place.py: an element-wise kernel, the input's only reader),
the host hands it the input as that result's buffer and returns the input itself:
that input is neither allocated for nor copied into.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.fx

from tessel import counters

_COPY = torch.ops.aten.copy_.default


def _placeholders(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def input_copies(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The `copy_` nodes that write a graph input."""
    return [n for n in gm.graph.nodes
            if n.op == "call_function" and n.target is _COPY and n.args[0].op == "placeholder"]


def mutated_inputs(gm: torch.fx.GraphModule) -> tuple[int, ...]:
    """The positions of the inputs `gm` writes, in the order it writes them."""
    positions = {node: i for i, node in enumerate(_placeholders(gm))}
    return tuple(positions[copy.args[0]] for copy in input_copies(gm))


def mutations_as_results(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` that returns the value of each input it writes (in
    `mutated_inputs` order) after its own results, instead of writing it."""
    if not input_copies(gm):
        return gm
    graph = torch.fx.Graph()
    output = graph.output(graph.graph_copy(gm.graph, {}))
    pure = torch.fx.GraphModule(gm, graph)
    new_values = []
    for copy in input_copies(pure):
        value = copy.args[1]
        # copy_ returns its destination: what read it reads the new value.
        copy.replace_all_uses_with(value)
        graph.erase_node(copy)
        new_values.append(value)
    results = output.args[0]
    # A piece of a split graph may return one value, not a tuple.
    results = tuple(results) if isinstance(results, (tuple, list)) else (results,)
    output.args = ((*results, *new_values),)
    pure.recompile()
    return pure


def writing_inputs(run: Callable, mutated: tuple[int, ...]) -> Callable:
    """`run`, a compiled `mutations_as_results` graph, writing its extra results into
    the inputs at `mutated` and returning the rest. A result that is its input itself
    was written in place by the compiled code: not copied."""
    if not mutated:
        return run

    def written(*args):
        results = run(*args)
        kept = len(results) - len(mutated)
        inputs, new_values = [], []
        for i, value in zip(mutated, results[kept:]):
            if value is not args[i]:
                inputs.append(args[i])
                new_values.append(value)
        if inputs:
            torch._foreach_copy_(inputs, new_values)
        counters.count("inputs_written_in_place", len(mutated) - len(inputs))
        counters.count("inputs_copied_back", len(inputs))
        return results[:kept]
    return written

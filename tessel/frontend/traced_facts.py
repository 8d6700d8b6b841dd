"""What a graph's trace says about it: its inputs' values, which of them are static,
the device it computes on, and so the target that compiles it."""

from __future__ import annotations

import torch
import torch._guards
import torch.fx

from tessel.options import Options


def resolve_target(options: Options, gm: torch.fx.GraphModule, inputs=None) -> str:
    """options.target, or with "auto": triton for a graph with CUDA inputs (`inputs`,
    else those traced) or that computes CUDA tensors (a mask or positions made on the
    GPU from sizes and CPU scalars alone), else cpu (inputs on other devices are
    refused by prepare_graph, naming them)."""
    if options.target != "auto":
        return options.target
    inputs = input_values(gm) if inputs is None else inputs
    devices = {v.device.type for v in inputs if isinstance(v, torch.Tensor)}
    computing = computing_device(gm)
    if computing is not None:
        devices.add(torch.device(computing).type)
    return "triton" if "cuda" in devices else "cpu"


def input_values(gm: torch.fx.GraphModule) -> list:
    """The (fake) values of `gm`'s inputs, as Dynamo and aot_autograd traced them."""
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]


def static_inputs(gm: torch.fx.GraphModule, kind: str) -> frozenset[int]:
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


def result_nodes(gm: torch.fx.GraphModule) -> list:
    """What `gm` returns, in order: nodes, or constants (None) where a result is no node."""
    (output,) = gm.graph.find_nodes(op="output")
    results = output.args[0]
    return list(results) if isinstance(results, (tuple, list)) else [results]


def output_stack_traces(gm: torch.fx.GraphModule) -> list[str | None]:
    """The stack trace of each of `gm`'s outputs (None for one without), which the CUDA
    graph trees name in their errors."""
    return [o.meta.get("stack_trace") if isinstance(o, torch.fx.Node) else None
            for o in result_nodes(gm)]


def computing_device(gm: torch.fx.GraphModule) -> str | None:
    """The device of the tensors `gm` computes, as traced: its first result with dims,
    else its first tensor with dims (a 0-d CPU scalar mixes with tensors of any
    device), else its first tensor. Results first: a graph may make a CPU tensor on
    its way to the GPU (positions from `torch.arange(n)`, moved where it computes)."""
    values = [n.meta.get("val") for n in result_nodes(gm) if isinstance(n, torch.fx.Node)]
    values += [n.meta.get("val") for n in gm.graph.nodes if n.op != "output"]
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    ranked = [v for v in tensors if v.dim()] or tensors
    return str(ranked[0].device) if ranked else None

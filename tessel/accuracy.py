"""Kernel-level accuracy checking: which kernel first computes something else than eager.

When options={"check_accuracy": True} finds a compiled graph's output differing from
eager, tessel rebuilds the graph from its kernel-forming stage with every kernel's
result exposed as an extra output, runs it on the same inputs, and compares each
kernel's result with the eager value of the FX node it computes. Kernels know their
node from their location: with check_accuracy the importer names every op's location
after its FX node, and fusion keeps the location of the op a kernel ends with. The
first kernel, in program order, that differs is reported with its IR, written next to
a `tessel-opt` command that replays the rest of the pipeline on it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
import torch.fx

from tessel import ir
from tessel.passes.form_kernels import KERNEL_OPS
from tessel.signature import GraphSignature, TensorResult

_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                 "bf16": torch.bfloat16}


@dataclasses.dataclass(frozen=True)
class KernelOutput:
    kernel: str               # the tkern.kernel's sym_name, or the library call
    node: str                 # the FX node whose value it computes
    result_type: ir.RankedTensorType


def _kernel_name(op: ir.Operation) -> str:
    if "sym_name" in op.attributes:
        return ir.StringAttr(op.attributes["sym_name"]).value
    return f"library call {ir.StringAttr(op.attributes['callee']).value}"


def _node_name(location: ir.Location, graph_order: dict[str, int]) -> str | None:
    """The FX node a location names (the latest in the graph, for fused locations)."""
    names = [n for n in ir.location_names(str(location)) if n in graph_order]
    return max(names, key=graph_order.__getitem__) if names else None


def expose_kernel_results(module: ir.Module, graph_order: dict[str, int]
                          ) -> list[KernelOutput]:
    """Append to `main`'s results every static-shaped floating-point kernel result that
    names an FX node (the last such kernel per node); returns those kernels, in the
    order of the new results."""
    main = ir.function_named(module, "main")
    block = main.regions[0].blocks[0]
    return_op = block.operations[len(block.operations) - 1]
    exposed, values = [], []
    for op in block.operations:
        op = op.operation
        if op.name not in KERNEL_OPS or len(op.results) != 1:
            continue
        if not isinstance(op.results[0].type, ir.RankedTensorType):
            continue
        result_type = ir.RankedTensorType(op.results[0].type)
        if not (result_type.has_static_shape and str(result_type.element_type) in _TORCH_DTYPES):
            continue
        yielded = op.regions[0].blocks[0].operations[0]
        node = _node_name(yielded.location, graph_order)
        if node is None:
            continue
        if node in [k.node for k in exposed]:
            # A node lowered to several kernels (a decomposition that did not fuse):
            # only the last one computes the node's value.
            earlier = [k.node for k in exposed].index(node)
            del exposed[earlier], values[earlier]
        exposed.append(KernelOutput(_kernel_name(op), node, result_type))
        values.append(op.results[0])
    with module.context, return_op.location:
        new_return = ir.Operation.create("func.return", operands=[*return_op.operands, *values],
                                         ip=ir.InsertionPoint(return_op))
        return_op.erase()
        main.operation.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            main.type.inputs, [v.type for v in new_return.operands]))
        # The bisection's build leaves the caller's inputs as they are: nothing is
        # written in place (write-inputs-in-place), and no result attributes are left
        # for results the function no longer has alone.
        if "res_attrs" in main.operation.attributes:
            del main.operation.attributes["res_attrs"]
    return exposed


def _extended_signature(signature: GraphSignature,
                        exposed: list[KernelOutput]) -> GraphSignature:
    extra = [TensorResult(_TORCH_DTYPES[str(k.result_type.element_type)],
                          tuple(str(d) for d in k.result_type.shape), None) for k in exposed]
    first = len(signature.results)
    return dataclasses.replace(
        signature, results=[*signature.results, *extra],
        returns=[*signature.returns, *(f"out{first + i}" for i in range(len(exposed)))])


def eager_node_values(gm: torch.fx.GraphModule, args) -> dict[str, object]:
    """The value of every node of `gm` when run eagerly on `args`."""
    interpreter = torch.fx.Interpreter(gm, garbage_collect_values=False)
    interpreter.run(*args)
    return {node.name: value for node, value in interpreter.env.items()}


def first_divergent_kernel(gm: torch.fx.GraphModule, host, signature: GraphSignature,
                           args, target, options, stages, folder: Path) -> str:
    """A sentence naming the first kernel whose result differs from eager (or saying that
    none does), with the path of its IR and the command that replays it."""
    # The CPU target keeps its kernel-forming stage's IR; the Triton target keeps none.
    kept = getattr(host, "kernel_ir", None)
    if options.pipeline is not None or kept is None:
        return ("kernel bisection needs the CPU target, the default pipeline's stages (no "
                "options.pipeline) and a graph with kernels")
    stage, kernel_ir = kept
    graph_order = {node.name: n for n, node in enumerate(gm.graph.nodes)}
    module = ir.parse_module(kernel_ir)
    exposed = expose_kernel_results(module, graph_order)
    if not exposed:
        return "no kernel result could be traced to an FX node"
    debug_signature = _extended_signature(signature, exposed)
    debug_host, _ = target.compile(module, debug_signature, options, stages,
                                   resume_after=stage)
    outputs = debug_host(*args)[len(signature.returns):]
    eager = eager_node_values(gm, args)
    for kernel, actual in zip(exposed, outputs):
        expected = eager.get(kernel.node)
        if not isinstance(expected, torch.Tensor) or expected.shape != actual.shape:
            continue
        try:
            torch.testing.assert_close(actual, expected.to(actual.dtype), equal_nan=True)
        except AssertionError:
            error = (actual.double() - expected.double()).abs().nan_to_num(float("inf")).max()
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{kernel.kernel.replace(' ', '_')}.mlir"
            path.write_text(kernel_ir)
            return (f"first differing kernel: {kernel.kernel} (computes FX node {kernel.node}, "
                    f"max abs error {error.item():.3g}); the graph's kernel IR is in {path}, "
                    f"replay the rest of the pipeline with: tessel-opt {path} -p "
                    f"{','.join(target.stage_names_after(stage))}")
    return "every kernel traced to an FX node matches eager: the difference arises after them"


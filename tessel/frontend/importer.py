"""FX graph -> torch dialect (torch-mlir's FxImporter) -> linalg-on-tensors."""

from __future__ import annotations

import re

import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch_mlir.extras.fx_importer import ContextCache, FxImporter

from tessel import ir
from tessel.frontend.native_ops import native_reason
from tessel.passes.call_native_ops import NATIVE, NATIVE_STRIDES
from tessel.passes.write_inputs_in_place import NEW_VALUE_OF, set_result_attributes

ENTRY_POINT = "main"
_TORCH_OP = re.compile(r"torch\.(?:aten|prims|prim|operator)\.[A-Za-z0-9_.]+|aten\.[A-Za-z0-9_.]+")


def import_graph(graph: torch.fx.Graph, new_values: dict[int, int] | None = None) -> ir.Module:
    """Import an aot_autograd graph into the shared context as `func.func @main`.

    The entry point is marked `llvm.emit_c_interface` so that a JIT can call it with
    memref descriptors built from torch tensors. Every op's location is named after
    the FX node it comes from (`loc("mul_1"(...))`), so that a kernel can be traced
    back to the nodes whose values it computes: a kernel that fails to build falls
    back for those nodes alone, and check_accuracy names the kernel that differs.
    Result i in `new_values` is marked `tessel.new_value_of` the input position
    new_values[i] (passes/write_inputs_in_place.py). The ops of native nodes (left in
    the graph for the host program to call, native_ops.called_in_place) are marked
    `tessel.native` with their overload's name (passes/call_native_ops.py).
    """
    importer = FxImporter(context=ir.context())
    _name_locations_after_nodes(importer)
    # A one-element constant is imported as a literal, its value read with tolist(): a
    # CUDA one's copy to the CPU made under Dynamo's fake mode (a forward compiles in
    # it) would be a fake tensor without storage.
    with unset_fake_temporarily():
        importer.import_stateless_graph(graph, func_name=ENTRY_POINT)
    module = importer.module
    with ir.context():
        for op in module.body.operations:
            if op.operation.name == "func.func":
                op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
                if new_values:
                    index_type = ir.IntegerType.get_signless(64)
                    set_result_attributes(op.operation, [
                        {NEW_VALUE_OF: ir.IntegerAttr.get(index_type, new_values[i])}
                        if i in new_values else {}
                        for i in range(len(op.type.results))])
        _mark_native_ops(module, graph)
    return module


def _mark_native_ops(module: ir.Module, graph: torch.fx.Graph) -> None:
    natives = {node.name: node for node in graph.nodes if native_reason(node) is not None}
    if not natives:
        return
    block = ir.function_named(module, ENTRY_POINT).regions[0].blocks[0]
    for op in block.operations:
        # The node's constant arguments are imported at its location too.
        if op.operation.name.startswith(("torch.constant.", "torch.prim.ListConstruct")):
            continue
        located = ir.location_names(str(op.location)) & natives.keys()
        if located:
            node = natives[located.pop()]
            op.operation.attributes[NATIVE] = ir.StringAttr.get(str(node.target))
            op.operation.attributes[NATIVE_STRIDES] = _traced_strides(node)


def _traced_strides(node: torch.fx.Node) -> ir.ArrayAttr:
    """Each result's strides as `node` was traced (unit where a result is None or a
    stride symbolic)."""
    value = node.meta.get("val")
    results = value if isinstance(value, (tuple, list)) else (value,)
    return ir.ArrayAttr.get([
        ir.DenseI64ArrayAttr.get(list(result.stride()))
        if isinstance(result, torch.Tensor) and all(isinstance(s, int) for s in result.stride())
        else ir.UnitAttr.get() for result in results])


class _NodeNamedLocations(ContextCache):
    """torch-mlir's context cache, whose node locations (file:line from the stack
    trace) are wrapped in a name location carrying the FX node's name."""

    __slots__ = ()

    def get_node_location(self, node: torch.fx.Node) -> ir.Location:
        child = super().get_node_location(node) or ir.Location.unknown(self._c)
        return ir.Location.name(node.name, childLoc=child, context=self._c)


def _name_locations_after_nodes(importer: FxImporter) -> None:
    # The importer asks its context cache (a private attribute) for node locations.
    importer._cc = _NodeNamedLocations(importer._c, py_attr_tracker=importer._py_attr_tracker)


def node_being_imported(error: BaseException, graph: torch.fx.Graph) -> torch.fx.Node | None:
    """The node of `graph` the importer was importing when it raised `error`: the
    innermost frame of its traceback whose `node` is one (torch-mlir's importer walks
    the graph with that name). A failure whose message names no op is pinned on it,
    so that the graph splits around that node instead of running eagerly whole."""
    found = None
    trace = error.__traceback__
    while trace is not None:
        node = trace.tb_frame.f_locals.get("node")
        if isinstance(node, torch.fx.Node) and node.graph is graph:
            found = node
        trace = trace.tb_next
    return found


def torch_op_named_in(message: str) -> str | None:
    """The first torch op named in a compiler message (e.g. 'torch.aten.unfold')."""
    match = _TORCH_OP.search(message)
    return match.group(0) if match else None

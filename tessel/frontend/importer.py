"""FX graph -> torch dialect (torch-mlir's FxImporter) -> linalg-on-tensors."""

from __future__ import annotations

import re

import torch.fx
from torch_mlir.extras.fx_importer import FxImporter

from tessel import ir

ENTRY_POINT = "main"
_TORCH_OP = re.compile(r"torch\.(?:aten|prims|prim|operator)\.[A-Za-z0-9_.]+|aten\.[A-Za-z0-9_.]+")


def import_graph(graph: torch.fx.Graph) -> ir.Module:
    """Import an aot_autograd graph into the shared context as `func.func @main`.

    The entry point is marked `llvm.emit_c_interface` so that a JIT can call it with
    memref descriptors built from torch tensors.
    """
    importer = FxImporter(context=ir.context())
    importer.import_stateless_graph(graph, func_name=ENTRY_POINT)
    module = importer.module
    with ir.context():
        for op in module.body.operations:
            if op.operation.name == "func.func":
                op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    return module


def torch_op_named_in(message: str) -> str | None:
    """The first torch op named in a compiler message (e.g. 'torch.aten.unfold')."""
    match = _TORCH_OP.search(message)
    return match.group(0) if match else None

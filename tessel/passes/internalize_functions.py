from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register

C_INTERFACE = "llvm.emit_c_interface"
C_INTERFACE_PREFIX = "_mlir_ciface_"


@register
@dataclass(frozen=True)
class InternalizeFunctionsPass(ModulePass):
    """internalize-functions: give internal linkage to every defined LLVM function
    that the host does not call.

    The host calls only entry points (`llvm.emit_c_interface` functions and their
    `_mlir_ciface_` wrappers). Everything else (outlined loop bodies, OpenMP launchers,
    gemm helpers) is internal: LLVM may then inline and drop it, and the ExecutionEngine
    builds no packed wrapper for it. Measured on the transformer-layer graph (58
    functions): JIT time nearly halved, at the same kernel speed.
    """

    name: ClassVar[str] = "internalize-functions"

    def run(self, module: ir.Operation) -> None:
        functions = ir.defined_functions(module, "llvm.func")
        with module.context:
            internal = ir.Attribute.parse("#llvm.linkage<internal>")
            for function in functions:
                name = ir.StringAttr(function.attributes["sym_name"]).value
                if C_INTERFACE in function.attributes or name.startswith(C_INTERFACE_PREFIX):
                    continue
                function.attributes["linkage"] = internal

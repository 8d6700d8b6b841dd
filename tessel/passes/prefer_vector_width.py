from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register


@register
@dataclass(frozen=True)
class PreferVectorWidthPass(ModulePass):
    """prefer-vector-width: ask LLVM's vectorizer for `width`-bit vectors in every
    defined LLVM function.

    On AVX-512 CPUs LLVM's x86 backend prefers 256-bit vectors by default (wide
    vectors once lowered clock speeds). tessel's kernels are long, compute-bound loops
    (polynomial exp/tanh/erf), where 512-bit vectors win (measured on one thread,
    2048x512 f32: exp, softmax and gelu all ran faster, gelu nearly twice as fast). On
    CPUs without 512-bit vectors the hint is capped at what the CPU has.
    """

    name: ClassVar[str] = "prefer-vector-width"
    width: int = 512

    def run(self, module: ir.Operation) -> None:
        functions = ir.defined_functions(module, "llvm.func")
        with module.context:
            hint = ir.Attribute.parse(f'[["prefer-vector-width", "{self.width}"]]')
            for function in functions:
                function.attributes["passthrough"] = hint

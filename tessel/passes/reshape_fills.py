from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.buffer_views import RESHAPES
from tessel.passes.contractions import constant_filled
from tessel.passes.linalg_builders import constant_fill
from tessel.passes.registry import ModulePass, register



@register
@dataclass(frozen=True)
class ReshapeFillsPass(ModulePass):
    """reshape-fills: a reshape of a constant fill becomes a fill of the reshaped type.

    linalg-fold-unit-extent-dims fills a convolution's zero accumulator without its unit
    dims (an SE block's 1x1 convolution on [N, C, 1, 1]) and expands it back: the
    library call then starts from a view of a kernel's result, which the host program
    launched and added (`zeros + conv`), where it skips a plain zero fill.
    """

    name: ClassVar[str] = "reshape-fills"

    def run(self, module: ir.Operation) -> None:
        reshapes = ir.ops_where(module, lambda op: op.name in RESHAPES)
        with module.context:
            for reshape in reshapes:
                constant = constant_filled(reshape.operands[0])
                result = ir.RankedTensorType(reshape.results[0].type)
                if constant is None or not result.has_static_shape:
                    continue
                with ir.InsertionPoint(reshape), reshape.location:
                    fill = constant_fill(result, constant)
                reshape.results[0].replace_all_uses_with(fill)
                reshape.erase()

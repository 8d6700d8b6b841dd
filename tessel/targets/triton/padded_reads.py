"""Reads of a padded tensor folded into the kernels that read it.

A `tensor.pad` of main (pooling's zero or -inf border, as torch-mlir lowers avg_pool2d
and max_pool2d) is a host-level copy: the host program padded with
`torch.nn.functional.pad`, a fill and a copy of the whole image, which the pooling
kernel then read. A kernel that reads the padded tensor through its indexing maps reads
the unpadded source instead, at the point less the low padding, masked to the source's
bounds with the pad value elsewhere, as Inductor's pooling kernels do; the host then
pads nothing where every reader of the pad is such a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from tessel import ir
from tessel.targets.triton.dtypes import scalar_literal


@dataclass(frozen=True)
class Padding:
    source: ir.Value        # the tensor padded
    low: list[int]          # per dim, the padding before it
    high: list[int]         # and after it
    value: str              # the literal padded with


def pad_literal(pad: ir.Operation) -> str | None:
    """The literal a tensor.pad pads with, or None (a value computed in its body)."""
    (yielded,) = [o.operation for o in pad.regions[0].blocks[0].operations]
    source = ir.operation_of(yielded.operands[0].owner)
    if source is None or source.name != "arith.constant":
        return None
    return scalar_literal(source.attributes["value"])


def padding_of(value: ir.Value) -> Padding | None:
    """How `value` pads its source, where it is a tensor.pad of static widths, of a
    source of static shape, with a literal; else None."""
    pad = ir.operation_of(value.owner)
    if pad is None or pad.name != "tensor.pad" or len(pad.operands) != 1 or \
            not ir.ShapedType(pad.operands[0].type).has_static_shape:
        return None
    literal = pad_literal(pad)
    if literal is None:
        return None
    low, high = (list(ir.DenseI64ArrayAttr(pad.attributes[name]))
                 for name in ("static_low", "static_high"))
    return Padding(pad.operands[0], low, high, literal)

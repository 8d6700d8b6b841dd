"""The zero-or-constant pad that torch-mlir puts before a convolution: a tensor.pad of an
NCHW image's H and W only, read by the passes that rewrite convolutions."""

from __future__ import annotations

from dataclasses import dataclass

from tessel import ir


@dataclass(frozen=True)
class SpatialPad:
    source: ir.Value        # the image padded
    low: list[int]          # per dim (N and C: 0), the padding before it
    high: list[int]         # and after it
    value: ir.Attribute     # the constant padded with


def spatial_pad(image: ir.Value) -> SpatialPad | None:
    """How `image` pads its source, where it is a tensor.pad of static widths, of H and
    W only, with a constant; else None."""
    pad = ir.operation_of(image.owner)
    if pad is None or pad.name != "tensor.pad" or len(pad.operands) != 1:
        return None
    low, high = (list(ir.DenseI64ArrayAttr(pad.attributes[name]))
                 for name in ("static_low", "static_high"))
    (yielded,) = pad.regions[0].blocks[0].operations
    constant = ir.operation_of(yielded.operands[0].owner)
    if constant is None or constant.name != "arith.constant" or any(low[:2]) \
            or any(high[:2]) or min(low + high) < 0:  # a dynamic width reads negative
        return None
    return SpatialPad(pad.operands[0], low, high, constant.attributes["value"])

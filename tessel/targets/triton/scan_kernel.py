"""Scans (tm_tensor.scan: cumsum, cumprod): one program per row along the scanned dim."""

from __future__ import annotations

from tessel import ir
from tessel.targets.triton.dtypes import TRITON_DTYPES, cast_literal, element_name
from tessel.targets.triton.indexing import (
    LANES,
    ZERO,
    address,
    points,
    strides,
    symbol,
    text,
    walked,
)
from tessel.targets.triton.reductions import ReductionWriter
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import KernelResult

# Scans, by combiner: a chunk's scan, its total, the identity, and how a value merges
# with the carry of the chunks before.
_SUM = ("tl.cumsum({x}, axis=0)", "tl.sum({x}, axis=0)", "0", "{carry} + {x}")
_PRODUCT = ("tl.cumprod({x}, axis=0)", "tl.reduce({x}, 0, _product)", "1", "{carry} * {x}")
_SCANS = {"arith.addf": _SUM, "arith.addi": _SUM, "arith.mulf": _PRODUCT, "arith.muli": _PRODUCT}


def scan_kernel(writer: ReductionWriter, scan: ir.Operation) -> tuple[int]:
    """tm_tensor.scan, inclusive (cumsum, cumprod): one program per row along the
    scanned dim, which it walks in BLOCK-element chunks: each chunk is scanned with
    tl.cumsum / tl.cumprod and merged with the carry of the chunks before it (one pass
    over memory, for rows of any length). The carry at the end is the scan's second
    result, the accumulator."""
    dim = ir.IntegerAttr(scan.attributes["dimension"]).value
    if not ir.BoolAttr(scan.attributes["inclusive"]).value:
        raise UnsupportedKernel(scan.name, "an exclusive scan")
    block = scan.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    combiner = body[0]
    if len(body) != 2 or combiner.name not in _SCANS \
            or set(combiner.operands) != set(block.arguments):
        raise UnsupportedKernel(scan.name, "a scan whose body is not one add or multiply")
    source = scan.operands[0]
    shape = list(ir.RankedTensorType(source.type).shape)
    if not ir.RankedTensorType(source.type).has_static_shape:
        raise UnsupportedKernel(scan.name, "a scan of dynamic size")
    scan_call, total, identity, merge = _SCANS[combiner.name]
    element = element_name(scan.results[0])
    identity = cast_literal(identity, element)
    rows = [d for d in range(len(shape)) if d != dim]
    writer.emit("row = tl.program_id(0)")
    row_indices = walked([shape[d] for d in rows], list(reversed(range(len(rows)))),
                         symbol("row"))
    pointer = writer.input_pointer(source)
    for result in scan.results:
        writer.results.append(KernelResult(list(ir.RankedTensorType(result.type).shape),
                                           element_name(result)))
    # The scanned dim is the chunk's lanes; the accumulator has the rows' dims, in order.
    chunk = dict(zip(rows, row_indices))
    chunk[dim] = LANES
    chunk_indices = [chunk[d] for d in range(len(shape))]
    source_offset, result_offset = (
        text(address(strides(name, len(shape)), [ZERO] * len(shape), chunk_indices))
        for name in (pointer, "out0"))
    accumulator = address(strides("out1", len(rows)), [ZERO] * len(rows), row_indices)
    dtype = TRITON_DTYPES[element]
    writer.emit(f"carry = tl.full([], {identity}, {dtype})")
    with writer.section() as chunk_loop:
        writer.emit("r = start + tl.arange(0, BLOCK)")
        writer.emit(f"mask = r < {shape[dim]}")
        writer.emit(f"chunk = tl.load({pointer} + {source_offset}, mask=mask, other={identity})")
        scanned = merge.format(carry="carry", x=scan_call.format(x="chunk"))
        writer.emit(f"tl.store(out0 + {result_offset}, {scanned}, mask=mask)")
        writer.emit(f"carry = {merge.format(carry='carry', x=total.format(x='chunk'))}")
    writer.emit(f"for start in range(0, {shape[dim]}, BLOCK):")
    writer.place(chunk_loop)
    writer.emit(f"tl.store(out1 + {text(accumulator)}, carry)")
    return (points([shape[d] for d in rows]),)

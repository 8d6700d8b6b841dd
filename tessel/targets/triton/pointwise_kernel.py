"""Pointwise kernels: linalg.generic ops over a whole tensor, each program computing
BLOCK consecutive points of the row-major iteration space (NHWC order for channels-last
images), or a 2-D tile of them where an operand is contiguous along another dim than
the results (transposing_tiles.py); or a reduction of the whole tensor, in one program.
"""

from __future__ import annotations

from tessel import ir
from tessel.passes.tile_for_threads import loop_ranges
from tessel.targets.triton.indexing import FloorDiv, points, text
from tessel.targets.triton.reductions import ReductionWriter, row_reductions
from tessel.targets.triton.row_kernel import reduction_passes
from tessel.targets.triton.stores import store_results
from tessel.targets.triton.transposing_tiles import transposing_tile
from tessel.targets.triton.unsupported import UnsupportedKernel


def pointwise_kernel(writer: ReductionWriter, body: list[ir.Operation],
                     channels_last: frozenset[ir.Value] = frozenset()) -> tuple[int | str, ...]:
    """The kernel's lines; its grid. A kernel whose operands are contiguous along
    another dim than its results walks 2-D tiles (transposing_tiles); `channels_last`
    are the values of main the host lays out so (layouts.py)."""
    if body[-1].name == "tkern.yield":
        ops, results = body[:-1], list(body[-1].operands)
    else:  # a generic left unwrapped (results of several types, e.g. nll_loss's
        # backward building a scatter's indices and values): its results are the kernel's
        ops, results = body, list(body[-1].results)
    generics = [op for op in ops if op.name == "linalg.generic"]
    if not generics or len(generics) != len(ops):
        names = sorted({op.name for op in ops if op.name != "linalg.generic"})
        raise UnsupportedKernel(names[0] if names else "tkern.kernel",
                                "only linalg.generic ops outside a row loop are supported")
    whole = row_reductions(generics)
    reducing = bool(whole)
    writer.row_shape = writer.row_extent(whole[0] if reducing else generics[-1])
    size = points(writer.row_shape)
    if reducing:
        # A whole-tensor reduction: one program holds everything, or loops over it.
        if not isinstance(size, int):
            raise UnsupportedKernel("linalg.generic", "a whole-tensor reduction of dynamic size")
        if size > writer.block:
            return _looped_whole_reduction(writer, generics, whole, results, size)
        writer.emit("r = tl.arange(0, BLOCK)")
        writer.emit(f"mask = r < {text(size)}")
        grid = (1,)
    else:
        writer.transposing = transposing_tile(writer, generics, results, channels_last)
        if writer.transposing is not None:
            grid = (writer.transposing.start(writer),)
        else:
            writer.emit(f"r = {writer.program()} * BLOCK + tl.arange(0, BLOCK)")
            writer.emit(f"mask = r < {text(size)}")
            grid = (-(-size // writer.block) if isinstance(size, int)
                    else text(FloorDiv(size + writer.block - 1, writer.block)),)
    for op in generics:
        writer.generic(op)
    store_results(writer, results)
    return grid


def _looped_whole_reduction(writer: ReductionWriter, generics: list[ir.Operation],
                            reductions: list[ir.Operation], results: list[ir.Value],
                            size: int) -> tuple[int]:
    """A whole-tensor reduction of more points than a block (a loss's mean over a
    batch of images): one program walks the tensor in chunks of BLOCK, one pass per
    reduction, as a looped row does, then computes what follows from the reductions'
    results. Those ops and the kernel's results must be of one point each (what
    follows a whole-tensor reduction usually is); a result of the tensor's size would
    need one more pass, which is not built."""
    rest = generics[generics.index(reductions[-1]) + 1:]
    if any(extent != 1 for op in rest for extent in loop_ranges(op)) or \
            any(points(ir.RankedTensorType(v.type).shape) != 1 for v in results):
        raise UnsupportedKernel("linalg.generic", f"a reduction of {size} elements, in one "
                                f"block of {writer.block}, with results of more than one point")
    reduction_passes(writer, generics, {}, size, reductions)
    for op in rest:
        writer.generic(op)
    store_results(writer, results)
    return (1,)

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register
from tessel.passes.tile_for_threads import loop_ranges
from tessel.passes.transform_script import apply_to_marked, grouped, match_marked

MARK = "tessel.transpose_in_blocks"


@register
@dataclass(frozen=True)
class TransposeInBlocksPass(ModulePass):
    """transpose-in-blocks: walk a pointwise linalg.generic that transposes in square
    blocks of its two contiguous dims, so that each cache line it reads or writes is
    used whole while it is in the cache.

    A kernel that writes out[n, c, h, w] from in[n, h, w, c] (tokens back to an NCHW
    map, NHWC to NCHW around a convolution, MobileViT's patch folds) walks `w`
    innermost: each read is `C` floats away from the last, and by the time the next
    `c` comes back to a line, the whole image has gone through the cache, so every
    line is fetched once per element of it. Rule: a generic of parallel loops only
    whose results all have loop d_out as their last dim, and some input whose last dim
    is another loop d_in, both running at least `block` times, is tiled by `block` along
    d_out and d_in and by 1 along every other loop: each tile reads `block` lines of
    `block` elements of that input and writes `block` rows of `block` elements of each
    result. Elements and their order within a result are unchanged.

    The CPU pipeline runs it on buffers, after bufferization: on tensors, its loops
    carry the result through `iter_args`, and where one-shot bufferization could not
    prove those writes in place (a BERT backward's attention-probability transposes),
    every 8 x 8 block copied the whole result: 45 ms for a 2x12x128x128 transpose.
    Tiling buffers makes loops of subviews, with nothing to copy.
    """

    name: ClassVar[str] = "transpose-in-blocks"
    # 8 x 8 blocks of f32 (a 256-bit vector a row) ran a 2x128x128x256 transpose 1.7x
    # faster than unblocked; 4, 16 and 64 less so.
    block: int = 8

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        for number, (sizes, ops) in enumerate(grouped(generics, self.tile_sizes).items()):
            handle = f"%transposes{number}"
            loops = ", ".join("!transform.any_op" for size in sizes if size)
            apply_to_marked(module, ops, MARK, [
                match_marked(handle, MARK),
                (f"%tile{number}, %loops{number}:{sum(1 for s in sizes if s)} = "
                 f"transform.structured.tile_using_for {handle} tile_sizes {list(sizes)} "
                 f": (!transform.any_op) -> (!transform.any_op, {loops})"),
            ])

    def tile_sizes(self, op: ir.Operation) -> tuple[int, ...] | None:
        """Tile sizes for `op` (0: untiled), or None when it is not a transpose."""
        iterators = [str(a) for a in op.attributes["iterator_types"]]
        if any("parallel" not in kind for kind in iterators):
            return None
        maps = ir.indexing_maps(op)
        outputs = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[1]
        last_dims = {_last_dim(m) for m in maps[-outputs:]}
        if len(last_dims) != 1 or None in last_dims:
            return None
        (d_out,) = last_dims
        ranges = loop_ranges(op)
        transposed = {_last_dim(m) for m in maps[:-outputs]
                      if _reads_outer(m, d_out)} - {d_out, None}
        long_enough = [d for d in sorted(transposed) if self._spans_blocks(ranges[d])]
        if not long_enough or not self._spans_blocks(ranges[d_out]):
            return None
        d_in = long_enough[0]
        return tuple(self.block if d in (d_in, d_out) else 0 if ranges[d] == 1 else 1
                     for d in range(len(iterators)))

    def _spans_blocks(self, extent: int | None) -> bool:
        return extent is not None and extent >= self.block


def _reads_outer(affine_map, dim: int) -> bool:
    """Whether the map reads loop `dim` in a dim other than its last (a broadcast
    operand, which does not read `dim` at all, is no transpose)."""
    return any(dim in ir.dims_read(expr) for expr in list(affine_map.results)[:-1])


def _last_dim(affine_map) -> int | None:
    """The loop dim that indexes the map's last result directly, if one does."""
    results = list(affine_map.results)
    if results and isinstance(results[-1], ir.AffineDimExpr):
        return results[-1].position
    return None

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.registry import ModulePass, register
from tessel.passes.tile_for_threads import loop_ranges
from tessel.passes.transform_script import apply_to_marked, grouped, match_marked

MARK = "tessel.contiguous_innermost_loop"


@register
@dataclass(frozen=True)
class ContiguousInnermostLoopPass(ModulePass):
    """contiguous-innermost-loop: move the loop that walks memory contiguously inside
    the reductions of a linalg.generic, so that the CPU's innermost loop vectorizes.

    torch-mlir puts reduction dims last. For a window (depthwise and grouped
    convolutions, pooling: out[n, c, oh, ow] += x[n, c, oh + kh, ow + kw] * w[c, kh, kw])
    or a reduction over a dim that is not the innermost one (a norm over the channels of
    NCHW: out[n, h, w] += x[n, c, h, w]), the innermost loop is then a short reduction
    (3 taps) or a strided walk, and LLVM leaves it scalar. Rule: when every result's
    last dim is the same parallel loop d, d reads the last dim of each input that it
    indexes at all (contiguous there, or at a constant stride), and d runs at least
    `min-extent` times over at least `min-terms` reduction iterations a result (a 2x2
    pooling window, read at stride 2, ran faster as it was), d becomes the innermost
    loop. Each result element still sums
    its terms in the same order: only parallel iterations move. Contractions are left
    to BLAS (library-calls).
    """

    name: ClassVar[str] = "contiguous-innermost-loop"
    # Short rows (MobileNetV2's 14x14 and 7x7 maps) vectorize in part: still far better
    # than a scalar chain over the window.
    min_extent: int = 4
    min_terms: int = 8

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        for number, (order, ops) in enumerate(grouped(generics, self.loop_order).items()):
            handle = f"%generics{number}"
            interchange = (f"transform.structured.interchange {handle} iterator_interchange"
                           f" = {list(order)} : (!transform.any_op) -> !transform.any_op")
            apply_to_marked(module, ops, MARK, [match_marked(handle, MARK), interchange])

    def loop_order(self, op: ir.Operation) -> tuple[int, ...] | None:
        """The new loop order of `op` (old dims, outermost first), or None to keep it."""
        if is_contraction(op):
            return None
        iterators = [str(a) for a in op.attributes["iterator_types"]]
        if not any("reduction" in kind for kind in iterators):
            return None
        maps = ir.indexing_maps(op)
        outputs = len(op.results)
        inputs = maps[:-outputs]
        last_dims = {m.results[-1] for m in maps[-outputs:] if len(m.results)}
        if len(last_dims) != 1 or not all(len(m.results) for m in maps[-outputs:]):
            return None
        (last,) = last_dims
        if not isinstance(last, ir.AffineDimExpr):
            return None
        inner = last.position
        if inner == len(iterators) - 1 or "parallel" not in iterators[inner]:
            return None
        ranges = loop_ranges(op)
        if ranges[inner] is not None and ranges[inner] < self.min_extent:
            return None
        terms = math.prod(r or self.min_terms for r, kind in zip(ranges, iterators)
                          if "reduction" in kind)
        if terms < self.min_terms:
            return None
        walks_rows = False
        for affine_map in inputs:
            results = list(affine_map.results)
            if not results:
                continue
            reads = [inner in ir.dims_read(expr) for expr in results]
            if any(reads[:-1]):
                return None  # d strides through an outer dim of this input
            walks_rows |= reads[-1]
        if not walks_rows:
            return None
        return tuple(d for d in range(len(iterators)) if d != inner) + (inner,)

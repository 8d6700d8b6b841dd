from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import is_contraction
from tessel.passes.registry import ModulePass, register
from tessel.passes.transform_script import apply_to_marked, grouped, match_marked

MARK = "tessel.tile_for_threads"


def loop_ranges(generic: ir.Operation) -> list[int | None]:
    """Static trip count of each loop dim of a linalg op on tensors (None: dynamic),
    read from the operand shapes through the indexing maps."""
    maps = ir.indexing_maps(generic)
    ranges: list[int | None] = [None] * maps[0].n_dims
    for operand, affine_map in zip(generic.operands, maps):
        if not isinstance(operand.type, ir.ShapedType):
            continue
        shape = ir.ShapedType(operand.type)
        for tensor_dim, expr in enumerate(affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and not shape.is_dynamic_dim(tensor_dim):
                ranges[expr.position] = shape.get_dim_size(tensor_dim)
    return ranges


@register
@dataclass(frozen=True)
class TileForThreadsPass(ModulePass):
    """tile-for-threads: tile big loop nests along their first parallel dim into
    scf.forall, so that the CPU target can split them across cores.

    Rule: a top-level linalg.generic (contractions go to the library, which threads on
    its own) is tiled when its iteration space has at least `min-elements` points
    (dynamic dims count as large) and its first parallel dim has more than one
    iteration. Each tile covers about `tile-elements` points, never less than one
    index of the tiled dim, so the inner loops stay long enough to vectorize. Loop
    nests that fuse-tiles already tiled are left alone: their scf.forall is the
    parallel loop. `outline-parallel-loops` later hands the loops to OpenMP threads.
    """

    name: ClassVar[str] = "tile-for-threads"
    min_elements: int = 32768
    tile_elements: int = 4096

    def run(self, module: ir.Operation) -> None:
        top_level = [op.operation for function in module.regions[0].blocks[0].operations
                     if function.operation.name == "func.func" and function.regions[0].blocks
                     for op in function.regions[0].blocks[0].operations]
        for number, (sizes, ops) in enumerate(grouped(top_level, self.tile_sizes).items()):
            handle = f"%tiled{number}"
            apply_to_marked(module, ops, MARK, [
                match_marked(handle, MARK),
                f"%t{number}, %loop{number} = transform.structured.tile_using_forall {handle} "
                f"tile_sizes {list(sizes)} : (!transform.any_op) -> "
                "(!transform.any_op, !transform.any_op)",
            ])

    def tile_sizes(self, op: ir.Operation) -> tuple[int, ...] | None:
        """Tile sizes for `op` (0: untiled dim), or None when it stays whole."""
        if op.name != "linalg.generic" or is_contraction(op):
            return None
        ranges = loop_ranges(op)
        if 0 in ranges:
            return None  # an empty loop nest: nothing to split
        iterators = [str(a) for a in op.attributes["iterator_types"]]
        parallel = [d for d, kind in enumerate(iterators) if "parallel" in kind]
        if not parallel or ranges[parallel[0]] == 1:
            return None
        dim = parallel[0]
        large = self.min_elements  # stands in for a dynamic dim
        if math.prod(r or large for r in ranges) < self.min_elements:
            return None
        inner = math.prod(r or large for d, r in enumerate(ranges) if d != dim)
        size = max(1, self.tile_elements // inner)
        return tuple(size if d == dim else 0 for d in range(len(ranges)))

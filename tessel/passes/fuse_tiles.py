from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import NAMED_CONVOLUTIONS, is_contraction
from tessel.passes.fuse_returned_producers import elementwise
from tessel.passes.registry import ModulePass, register
from tessel.passes.tile_for_threads import loop_ranges
from tessel.passes.transform_script import TransformError, apply_transform_script

OP_ID = "tessel.op_id"
MAX_POOLING_WINDOW = 64  # the Triton target unrolls windows up to this many positions
log = logging.getLogger("tessel")


@dataclass
class _Node:
    op: ir.Operation
    op_id: int
    maps: list           # indexing maps: one per operand (inputs, then outputs)
    parallel: list[bool]  # per loop dim
    contraction: bool    # a gemm (library call): joins a group only as a producer


# Rounds of planning and fusing for GPU rows: the first fuses all it can; later ones
# group the producers that a stopped group left behind. The CPU target keeps one round,
# the fusion its committed benchmarks measured: a left-behind loop nest runs there as a
# loop, and re-planning it was not shown to pay (timings of the composite transformer
# layer varied from run to run by more than the difference).
_GPU_PLANNING_ROUNDS = 3

# Programs a GPU row kernel needs at least: an H100 has 132 SMs, each running two
# programs at a time; with fewer rows, SMs idle while each program loops over its row.
_MIN_GPU_ROWS = 264


@dataclass
class FusionGroup:
    root: _Node
    tiled_dim: int | None                 # root loop dim tiled, None: not tiled
    producers: list[_Node]                # fused into the root's loop, consumer first
    tile_size: int = 1                    # along tiled_dim
    row_dims: list[int] = field(default_factory=list)  # more root dims tiled by 1
    rows: bool = False                    # one tile per row (GPU), even with no producer

    @property
    def has_contraction(self) -> bool:
        return any(p.contraction for p in self.producers)

    @property
    def has_reduction(self) -> bool:
        return not all(all(node.parallel) for node in [self.root, *self.producers])


def _node(op: ir.Operation, op_id: int) -> _Node:
    maps = ir.indexing_maps(op)
    if "iterator_types" in op.attributes:
        parallel = ["parallel" in str(a) for a in op.attributes["iterator_types"]]
    else:  # named matmul / batch_matmul: the last loop dim is the reduction
        parallel = [True] * (maps[0].n_dims - 1) + [False]
    return _Node(op, op_id, maps, parallel, is_contraction(op))


def _tiled_producer_dim(consumer: _Node, consumer_dim: int, operand_index: int,
                        producer: _Node) -> int | None:
    """The producer loop dim that follows the consumer's tiled dim, or None if the slice
    the consumer reads does not shrink with the tile (fusing would recompute it)."""
    operand_dims = ir.dim_positions(consumer.maps[operand_index])
    if consumer_dim not in operand_dims:
        return None
    tensor_dim = operand_dims.index(consumer_dim)
    producer_dims = ir.dim_positions(producer.maps[-1])
    producer_dim = producer_dims[tensor_dim] if tensor_dim < len(producer_dims) else None
    if producer_dim is None or not producer.parallel[producer_dim]:
        return None
    return producer_dim


@register
@dataclass(frozen=True)
class FuseTilesPass(ModulePass):
    """fuse-tiles: fuse producer chains (reductions included) into row-tiled loops.

    Heuristic: walk linalg.generic ops from last to first; an op not yet in a group
    roots a new group, tiled by 1 along its first parallel loop dim (ops of rank < 2
    stay untiled, alone). A producer joins a group when (1) every linalg user of it is
    already in the group, so nothing outside needs it (never recompute an expensive
    producer for another consumer; a fill, cheap to clone, is first copied for each
    reader, so it always qualifies); (2) the slice its consumer reads shrinks with the tile, i.e. the
    tiled dim indexes it, so no tile recomputes another tile's work; (3) it is in the
    same block (fusion only moves a producer next to its consumer: no cycle can form);
    (4) it does not initialize the root's result (that init becomes the loop's output);
    (5) it has one result (another result could be read whole by some consumer).
    Each group becomes one loop nest, i.e. one kernel: softmax and layer_norm become one.

    With `gemm-epilogues`, a gemm (a contraction) never roots a group, but joins its
    epilogue's group as a producer when the tiled dim is its first loop dim (rows of a
    matmul, images of a batched one): each tile then computes a block of rows of the
    gemm and runs the epilogue (bias, activation, residual, cast) on it while it is in
    cache. Such groups are tiled in `cores` blocks of rows (0: the machine's cores),
    one gemm per thread, instead of by single rows. Without it, gemms join no group.

    With `tile-leading-dims` (the GPU's one program per row), a group with a reduction
    is tiled by 1 along every loop dim of its root that indexes rows (see _row_dims),
    not only the first: layer_norm over the last dim of (batch, sequence, features)
    gets one tile per (batch, sequence) row instead of a whole sequence per tile. A
    reduction with no producer is tiled too (`x.sum(-1)`, batch norm's statistics per
    channel): whole, it would be one program per output point. An element-wise root
    that writes more points per row than the group's widest reduction reduces roots no
    row group: it stays element-wise, and its reductions group on their own.
    """

    name: ClassVar[str] = "fuse-tiles"
    gemm_epilogues: bool = True
    cores: int = 0
    tile_leading_dims: bool = False

    def run(self, module: ir.Operation) -> None:
        rounds = _GPU_PLANNING_ROUNDS if self.tile_leading_dims else 1
        for _ in range(rounds):
            if not self.fuse_planned_groups(module):
                break

    def fuse_planned_groups(self, module: ir.Operation) -> bool:
        """Plan the groups of every function and fuse them; whether a group stopped
        early. Every transform step preserves semantics: a group that cannot fuse
        further keeps its remaining producers as separate loop nests. On the GPU, the
        next round plans them as groups of their own: a reduction left behind is then
        still tiled by rows, instead of running as one GPU program per output point."""
        groups = []
        for function in ir.defined_functions(module):
            _fill_per_reader(function.regions[0].blocks[0])
            groups += self.plan(function.regions[0].blocks[0], self.cores or os.cpu_count() or 1,
                                self.gemm_epilogues, self.tile_leading_dims)
        stopped = False
        for group in groups:
            script = _script(group)
            if not script:
                continue
            try:
                apply_transform_script(module, script)
            except TransformError as error:
                stopped = True
                log.debug("fuse-tiles: group rooted at op %d stopped early: %s",
                          group.root.op_id, error)
        self._clear_ids(module)
        return stopped

    @staticmethod
    def plan(block: ir.Block, cores: int, gemm_epilogues: bool = True,
             tile_leading_dims: bool = False) -> list[FusionGroup]:
        """Assign every linalg.generic of the block to a fusion group (and gemms to the
        group of their epilogue, where they qualify)."""
        nodes: dict[ir.Operation, _Node] = {}
        with block.owner.context:
            for op in block.operations:
                contraction = is_contraction(op.operation)
                if (op.operation.name == "linalg.generic" and not contraction) or (
                        contraction and gemm_epilogues):
                    node = _node(op.operation, len(nodes))
                    op.operation.attributes[OP_ID] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), node.op_id)
                    nodes[op.operation] = node
        users = {op: {ir.operation_of(use.owner) for result in op.results for use in result.uses}
                 for op in nodes}
        assigned: dict[ir.Operation, FusionGroup] = {}
        groups = []
        for op in reversed(list(nodes)):
            if op in assigned or nodes[op].contraction:
                continue  # a gemm left alone stays one whole library call
            root = nodes[op]
            parallel_dims = [d for d, p in enumerate(root.parallel) if p]
            tiled = parallel_dims[0] if len(root.parallel) >= 2 and parallel_dims else None
            if 0 in loop_ranges(root.op):
                tiled = None  # nothing to compute: tiling an empty loop nest would crash
            if tile_leading_dims and _is_pooling_window(root):
                tiled = None  # one GPU program per output point would starve the GPU
            group = FusionGroup(root, tiled, [])
            assigned[op] = group
            groups.append(group)
            if tiled is not None:
                _grow(group, nodes, users, assigned, [tiled], gpu_rows=tile_leading_dims)
                if group.has_contraction:
                    group.tile_size = _gemm_rows_per_tile(root.op, tiled, cores)
                elif tile_leading_dims and not group.has_reduction and \
                        _too_few_rows(root, tiled):
                    # No row to keep in one program, and too few of them: tiled by its
                    # leading dim, the GPU kernel would run one program per slice of it
                    # (a batch of 8: 8 programs, each looping over millions of points).
                    # Element-wise over all points instead; its producers form their
                    # own kernels.
                    _release_producers(group, assigned)
                    group.tiled_dim = None
                elif tile_leading_dims and group.has_reduction:
                    # Grown again for the tiling by rows: producers follow every dim
                    # tiled (else each tile would recompute what a producer computes
                    # for them all: a layer norm over channels, for a mean over tokens
                    # tiled per channel), and keep no reduction of windows per tile.
                    row_dims = [d for d in _row_dims(group, nodes) if d != tiled]
                    _release_producers(group, assigned)
                    _grow(group, nodes, users, assigned, [tiled, *row_dims], gpu_rows=True,
                          rows_tiled=True)
                    group.row_dims = [d for d in _row_dims(group, nodes) if d in row_dims]
                    group.rows = True
                    if not group.has_reduction or _root_wider_than_rows(group):
                        # Its reductions become row kernels of their own (also those
                        # the regrowth left out, their rows shorter than its tile), and
                        # the root an element-wise kernel over all its points.
                        _release_producers(group, assigned)
                        group.row_dims = []
                        group.tiled_dim, group.rows = None, False
        return groups

    @staticmethod
    def _clear_ids(module: ir.Operation) -> None:
        for op in ir.ops_where(module, lambda op: OP_ID in op.attributes):
            del op.attributes[OP_ID]


def _release_producers(group: FusionGroup, assigned: dict) -> None:
    """Take `group`'s producers out of it, free to join other groups."""
    for producer in group.producers:
        assigned.pop(producer.op, None)
    group.producers = []


def _writes_a_constant(op: ir.Operation) -> bool:
    """A linalg.generic that reads no tensor: a fill, cheap to clone per tile."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    return all(not isinstance(v.type, ir.ShapedType) for v in list(op.operands)[:-1])


def _fill_per_reader(block: ir.Block) -> None:
    """Give every reader of a fill its own copy. CSE leaves one zero fill initializing
    every sum of a graph (each layer norm's mean and variance); a group fusing it made
    it a result of its loop, so the next reader (the mean of the same norm, not yet
    fused) read that result, after the loop that needs it, and stayed a kernel of its
    own, reading the values the loop then read again."""
    for op in [op.operation for op in block.operations if _writes_a_constant(op.operation)]:
        # Readers in this block: one inside a generic's body (a gather's tensor.extract,
        # an arange's index read by an interpolation) would get its copy there, nested.
        uses = [(reader, use.operand_number) for use in op.results[0].uses
                if (reader := ir.operation_of(use.owner)) is not None
                and reader.parent == op.parent]
        for reader, operand in uses[1:]:
            copy = op.clone(ip=ir.InsertionPoint(reader))
            reader.operands[operand] = copy.results[0]


def _grow(group: FusionGroup, nodes, users, assigned, root_dims: list[int],
          gpu_rows: bool, rows_tiled: bool = False) -> None:
    """Add producers to `group` until none qualifies (a fixed point: a producer may
    qualify only once all its users have joined); each must follow every one of the
    root's `root_dims` (the tiled dim, and once `rows_tiled`, the dims a GPU row kernel
    tiles by 1, where no producer may reduce a wide window per tile). For
    `gpu_rows` (a GPU row kernel),
    pooling windows stay out: a group tiled by rows would run one GPU program per
    output point (densenet's average pooling ran slowly that way);
    on their own they become pointwise kernels with the window unrolled. So do
    producers their consumer reads transposed: a row kernel walks every op's row in one
    order."""
    tiled_dims = {group.root.op: root_dims}
    changed = True
    while changed:
        changed = False
        for consumer_op, consumer_dims in list(tiled_dims.items()):
            consumer = nodes[consumer_op]
            operands = list(consumer_op.operands)
            if consumer is group.root:
                # The root's inits become the loop's shared outputs: they stay outside.
                operands = operands[:len(operands) - len(consumer_op.results)]
            for index, operand in enumerate(operands):
                producer_op = ir.operation_of(operand.owner)
                if producer_op not in nodes or producer_op in assigned or producer_op in tiled_dims:
                    continue
                if len(producer_op.results) != 1:
                    continue  # its other results may be read untiled: fusing recomputes
                producer = nodes[producer_op]
                if gpu_rows and (_slides_a_window(producer)
                                 or _reads_transposed(consumer_op, index)):
                    continue
                if not users[producer_op] <= set(tiled_dims) and not (
                        rows_tiled and _yields_for_later_users(
                            producer_op, users[producer_op] - set(tiled_dims), group.root.op)):
                    continue
                producer_dims = [_tiled_producer_dim(consumer, d, index, producer)
                                 for d in consumer_dims]
                if None in producer_dims or (producer.contraction and producer_dims[0] != 0):
                    continue  # a gemm is split by rows (or batch) only: whole-row blocks
                if rows_tiled and (_wide_window_per_tile(producer, producer_dims) or
                                   _row_shorter_than_tile(producer, producer_dims, group.root,
                                                          root_dims)):
                    continue
                tiled_dims[producer_op] = producer_dims
                group.producers.append(producer)
                if not _writes_a_constant(producer_op):
                    assigned[producer_op] = group
                changed = True


def _yields_for_later_users(producer: ir.Operation, outside: set, root: ir.Operation) -> bool:
    """Whether a GPU row kernel may take in `producer`, an element-wise op that users
    `outside` the group read too, and also write its value for them: the tiled loop
    that replaces `root` gains a result (fuse_into_containing_op does it where those
    users all come after the loop in its block). A residual add and the layer norm that
    reads it become one kernel instead of two. Not the rounding of a convolution's
    result, which the host already holds rounded."""
    if not elementwise(producer) or len(producer.results) != 1 or \
            _rounds_a_convolution(producer):
        return False
    block = root.parent.operation
    return all(user is not None and user.parent.operation == block
               and root.is_before_in_block(user) for user in outside)


def _rounds_a_convolution(producer: ir.Operation) -> bool:
    """Whether `producer` only rounds a convolution's f32 result to a half type: the host
    holds that result rounded already (aten's convolution returns the half tensor,
    host_program.rounding_only), so a copy written for later users costs a write and
    saves nothing."""
    source = ir.operation_of(producer.operands[0].owner)
    return len(producer.operands) == 2 and source is not None and \
        source.name in NAMED_CONVOLUTIONS and ir.sole_cast(producer) == "arith.truncf"


def pooling_window(generic: ir.Operation) -> list[int] | None:
    """The reduction dims of a linalg.generic that reduces a window per output point
    (pooling: some other dim is larger than 1), else None (no reduction, or one that
    reduces whole rows to single values)."""
    ranges = loop_ranges(generic)
    reduced = [d for d, t in enumerate(generic.attributes["iterator_types"])
               if "reduction" in str(t)]
    if reduced and any(ranges[d] != 1 for d in range(len(ranges)) if d not in reduced):
        return reduced
    return None


def _is_pooling_window(node: _Node) -> bool:
    """A reduction over a small static window per output point: the GPU unrolls the
    window inside a pointwise kernel rather than tiling it by rows."""
    window = pooling_window(node.op)
    if window is None:
        return False
    sizes = [loop_ranges(node.op)[d] for d in window]
    return None not in sizes and math.prod(sizes) <= MAX_POOLING_WINDOW


def _wide_window_per_tile(node: _Node, tiled_dims: list[int]) -> bool:
    """Whether `node`, tiled by 1 along `tiled_dims`, reduces a window of more than
    MAX_POOLING_WINDOW points for each of several output points of its tile (a mean
    over tokens, per channel, inside a program per image): a row kernel computes one
    row per program; that reduction is a row kernel of its own (a program per channel)."""
    ranges = loop_ranges(node.op)
    reduced = [d for d, parallel in enumerate(node.parallel) if not parallel]
    kept = [ranges[d] for d, parallel in enumerate(node.parallel)
            if parallel and d not in tiled_dims]
    window = math.prod(ranges[d] or MAX_POOLING_WINDOW + 1 for d in reduced)
    return bool(reduced) and any(size != 1 for size in kept) and window > MAX_POOLING_WINDOW


def _tile_points(node: _Node, tiled_dims: list[int]) -> int | None:
    """Points of one tile of `node` tiled by 1 along `tiled_dims` (None: dynamic)."""
    kept = [r for d, r in enumerate(loop_ranges(node.op)) if d not in tiled_dims]
    return None if None in kept else math.prod(kept)


def _row_shorter_than_tile(node: _Node, tiled_dims: list[int], root: _Node,
                           root_dims: list[int]) -> bool:
    """Whether `node` reduces rows shorter than the root's tile (a sum over 32 values
    that an outer product with 64 weights reads): a row kernel walks its results with
    the lanes of its row, too few for the root's."""
    if all(node.parallel):
        return False
    row, tile = _tile_points(node, tiled_dims), _tile_points(root, root_dims)
    return row is not None and tile is not None and row < tile


def _slides_a_window(node: _Node) -> bool:
    """Pooling proper: a small window whose input index adds a window dim to an output
    dim (`2 * d2 + d4`), or that its body gathers (torch-mlir's max pooling indices
    extract the padded image at such sums), where a row reduction reads its row through
    plain dims."""
    if not _is_pooling_window(node):
        return False
    inputs = len(node.op.operands) - len(node.op.results)
    return any(isinstance(result, ir.AffineAddExpr) for affine_map in node.maps[:inputs]
               for result in affine_map.results) or any(
        op.operation.name == "tensor.extract" for op in node.op.regions[0].blocks[0].operations)


def _reads_transposed(consumer: ir.Operation, operand: int) -> bool:
    """Whether `consumer` reads its operand `operand` with dims out of loop order."""
    affine_map = ir.AffineMapAttr(
        ir.ArrayAttr(consumer.attributes["indexing_maps"])[operand]).value
    positions = [e.position for e in affine_map.results if isinstance(e, ir.AffineDimExpr)]
    return positions != sorted(positions)


def _root_wider_than_rows(group: FusionGroup) -> bool:
    """Whether the element-wise root of a GPU row group writes more points per row than
    the group's widest reduction reduces (a group norm's backward: [C/G, H*W] points per
    group, from sums over its C/G channels). A row kernel's row is its widest
    reduction's; the root's tile would not fit it, and one program per row would
    write it all (few programs, each a long loop): the root is better element-wise."""
    if not all(group.root.parallel):
        return False
    tiled = {group.tiled_dim, *group.row_dims}
    root_ranges = loop_ranges(group.root.op)
    rows = [[loop_ranges(p.op)[d] for d, parallel in enumerate(p.parallel) if not parallel]
            for p in group.producers if not all(p.parallel)]
    extents = [size for d, size in enumerate(root_ranges) if d not in tiled]
    extents += [size for row in rows for size in row]
    if not rows or None in extents:
        return False  # a dynamic size: nothing to compare
    root_points = math.prod(size for d, size in enumerate(root_ranges) if d not in tiled)
    return root_points > max(math.prod(row) for row in rows)


def _too_few_rows(root: _Node, dim: int) -> bool:
    """Whether tiling `root` by `dim` gives fewer GPU programs than _MIN_GPU_ROWS (or
    a number unknown at compile time)."""
    extent = loop_ranges(root.op)[dim]
    return extent is None or extent < _MIN_GPU_ROWS


def _row_dims(group: FusionGroup, nodes) -> list[int]:
    """The root's loop dims that index rows, i.e. that a reduction in the group keeps:
    all its parallel dims if it reduces itself; else those that every reduction it
    reads indexes (layer_norm's root reads the row statistics through (d0, d1), so d2
    is inside a row). Without such a read, all parallel dims but the last."""
    root = group.root
    parallel = [d for d, p in enumerate(root.parallel) if p]
    if not all(root.parallel):
        return parallel
    members = {p.op for p in group.producers}
    inputs = list(root.op.operands)[:len(root.op.operands) - len(root.op.results)]
    dims, read_a_reduction = parallel, False
    for index, operand in enumerate(inputs):
        producer = ir.operation_of(operand.owner)
        if producer in members and not all(nodes[producer].parallel):
            positions = ir.dim_positions(root.maps[index])
            dims = [d for d in dims if d in positions]
            read_a_reduction = True
    return dims if read_a_reduction else parallel[:-1]


def _gemm_rows_per_tile(root: ir.Operation, dim: int, cores: int) -> int:
    """Rows per tile for a group holding a gemm: one block of rows per core, so that
    each thread makes one gemm call on it (a call per row would be a matrix-vector
    product, far slower); dynamic sizes get blocks of 32 rows."""
    extent = loop_ranges(root)[dim]
    return -(-extent // cores) if extent else 32


def _match(name: str, op_id: int) -> str:
    return (f"%{name} = transform.structured.match attributes {{{OP_ID} = {op_id} : i64}} "
            f"in %module : (!transform.any_op) -> !transform.any_op")


def _script(group: FusionGroup) -> list[str]:
    """Transform-dialect lines that tile the group's root and fuse its producers."""
    if group.tiled_dim is None or not (group.producers or group.rows):
        return []
    root = group.root
    sizes = ", ".join(str(group.tile_size) if d == group.tiled_dim
                      else "1" if d in group.row_dims else "0"
                      for d in range(len(root.parallel)))
    g = f"g{root.op_id}"
    # A loop of one row (whole-reductions-as-rows) is mapped to GPU programs, so that
    # canonicalize keeps it instead of inlining its single iteration.
    one_row = group.rows and not group.row_dims and loop_ranges(root.op)[group.tiled_dim] == 1
    mapping = " (mapping = [#gpu.block<x>])" if one_row else ""
    lines = [
        _match(f"{g}_root", root.op_id),
        (f"%{g}_tiled, %{g}_loop0 = transform.structured.tile_using_forall %{g}_root "
         f"tile_sizes [{sizes}]{mapping} : (!transform.any_op) -> "
         "(!transform.any_op, !transform.any_op)"),
    ]
    for step, producer in enumerate(group.producers):
        lines += [
            _match(f"{g}_p{step}", producer.op_id),
            f"%{g}_f{step}, %{g}_loop{step + 1} = transform.structured.fuse_into_containing_op "
            f"%{g}_p{step} into %{g}_loop{step} : (!transform.any_op, !transform.any_op) -> "
            f"(!transform.any_op, !transform.any_op)",
            "transform.apply_cse to %module : !transform.any_op",
        ]
    return lines

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.form_kernels import is_kernel, kernel_body
from tessel.passes.fuse_tiles import pooling_window
from tessel.passes.registry import ModulePass, register
from tessel.passes.split_reductions import MULTIPROCESSORS
from tessel.passes.tile_for_threads import loop_ranges

ATTRIBUTE = "tessel.gpu"


def is_pointwise_kernel(op: ir.Operation) -> bool:
    """A tkern.kernel that this pass gave the kind "pointwise" (one program per block
    of its points)."""
    return op.name == "tkern.kernel" and ATTRIBUTE in op.attributes and \
        ir.StringAttr(ir.DictAttr(op.attributes[ATTRIBUTE])["kind"]).value == "pointwise"


def _next_power_of_two(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


def _numel(shaped) -> int | None:
    if not shaped.has_static_shape:
        return None
    total = 1
    for size in shaped.shape:
        total *= size
    return total


@register
@dataclass(frozen=True)
class ChooseGpuBlocksPass(ModulePass):
    """choose-gpu-blocks: record Triton block sizes on every kernel (a `tessel.gpu` dict).

    Rules, per kernel kind: another library call (a convolution) gets nothing to size
    (kind "library"); a gemm library call gets a tensor-core tile (128x128x64 for
    f16/bf16, 64x64x32 otherwise); a kernel around a matmul (fuse-gemm-epilogues) is a
    "gemm_template" with M x N x K tiles, warps and pipeline stages (see
    _gemm_template, or `template-tile` "MxNxK/warps/stages" for every template, which
    is how benchmarks/gemm_template.py sweeps tiles); a row-fused kernel (scf.forall
    over rows) whose row fits `max-persistent-row` elements is "persistent" (one block holds the row, block =
    next power of two) and otherwise "looped" over the row in `looped-block` chunks, or
    `dynamic-row-block` chunks for a row of dynamic size (rows as short as attention's,
    a sequence long, must not each loop over a mostly masked 4096-element chunk); any
    other kernel is "pointwise" with `pointwise-block` elements per program, fewer
    where it reduces at each point (a split reduction's combine) and would otherwise
    leave SMs idle (two programs for each of `multiprocessors`); a reduction to one
    point keeps its block, whose lanes share the reduced values (a loss over a batch
    of images that split-reductions could not split walked 2M values 32 at a time:
    65 ms of SegFormer's training step on an H200). Warps grow with the
    block: block / 256, between 1 and 16.
    """

    name: ClassVar[str] = "choose-gpu-blocks"
    max_persistent_row: int = 8192
    looped_block: int = 4096
    dynamic_row_block: int = 1024
    pointwise_block: int = 1024
    multiprocessors: int = MULTIPROCESSORS
    template_tile: str = ""

    def __post_init__(self):
        if self.template_tile and not re.fullmatch(r"\d+x\d+x\d+/\d+/\d+", self.template_tile):
            raise ValueError(f"pass 'choose-gpu-blocks': option 'template-tile' expects "
                             f"MxNxK/warps/stages (e.g. 128x128x64/8/3), got {self.template_tile!r}")

    def run(self, module: ir.Operation) -> None:
        kernels = ir.ops_where(module, is_kernel)
        with module.context:
            for kernel in kernels:
                kernel.attributes[ATTRIBUTE] = self.decide(kernel)

    def decide(self, kernel: ir.Operation) -> ir.Attribute:
        result_type = kernel.results[0].type if len(kernel.results) else None
        if kernel.name == "tkern.library_call" and \
                ir.StringAttr(kernel.attributes["callee"]).value != "gemm":
            return _dictionary("library", [], 0)  # no Triton kernel: nothing to size
        if kernel.name == "tkern.library_call":
            tensor_core = str(result_type.element_type) in ("f16", "bf16")
            block = [128, 128, 64] if tensor_core else [64, 64, 32]
            return _dictionary("gemm", block, 8 if tensor_core else 4)
        if kernel.name == "tm_tensor.scan":
            # A scan walks its rows in chunks of up to 1024 elements.
            extent = ir.ShapedType(kernel.operands[0].type).shape[
                ir.IntegerAttr(kernel.attributes["dimension"]).value]
            block = min(1024, _next_power_of_two(extent)) if extent > 0 else 1024
            return _dictionary("scan", [block], _warps(block))
        matmul = next((op for op in kernel_body(kernel) if op.name == "linalg.matmul"), None)
        if matmul is not None:
            return _gemm_template(matmul, self.template_tile)
        forall = next((op for op in kernel_body(kernel) if op.name == "scf.forall"), None)
        if forall is not None and result_type is not None:
            row = _row_points(forall, _numel(result_type))
            if row is not None and row <= self.max_persistent_row:
                block = _next_power_of_two(row)
                return _dictionary("row_persistent", [block], _warps(block))
            block = self.looped_block if row is not None else self.dynamic_row_block
            return _dictionary("row_looped", [block], _warps(block))
        block = self.pointwise_block
        points = _numel(result_type) if result_type is not None else None
        if points is not None and points > 1 and _reduces_at_each_point(kernel):
            block = _filling_the_gpu(points, block, self.multiprocessors)
        return _dictionary("pointwise", [block], _warps(block))


def _reduces_at_each_point(kernel: ir.Operation) -> bool:
    """Whether a pointwise kernel reduces values at each of its points (a split
    reduction's combine of its partials, unrolled per point)."""
    return bool(ir.ops_where(kernel, lambda op: op.name == "linalg.generic"
                             and "reduction" in str(op.attributes["iterator_types"])))


def _filling_the_gpu(points: int, block: int, multiprocessors: int) -> int:
    """`block`, halved (down to a warp's 32 points) until the kernel's programs give
    every SM two: a batch norm's combine of its partial sums, 1024 channels of 32
    partials each, ran in one program of 1024 lanes, one SM summing 128 KB (19 us on
    the H200, where 32 programs share it out)."""
    while block > 32 and -(-points // block) < 2 * multiprocessors:
        block //= 2
    return block


def _row_points(forall: ir.Operation, numel: int | None) -> int | None:
    """Points of the largest loop nest in one tile of a row loop (None: dynamic); a
    pooling window is not part of a row (the kernel unrolls it per point). A loop with
    no loop nest (copies) has rows of its result's size: `numel` over the row count."""
    generics = ir.ops_where(forall, lambda op: op.name == "linalg.generic")
    if not generics:
        rows = math.prod(ir.DenseI64ArrayAttr(forall.attributes["staticUpperBound"]))
        return numel // rows if numel is not None and rows > 0 else None
    largest = 1
    for op in generics:
        ranges = loop_ranges(op)
        if None in ranges:
            return None
        window = pooling_window(op) or []
        largest = max(largest, math.prod(r for d, r in enumerate(ranges) if d not in window))
    return largest


def _gemm_template(matmul: ir.Operation, forced: str = "") -> ir.Attribute:
    """Tiles of a tl.dot template (fuse-gemm-epilogues). Measured (bf16 linear +
    gelu, `python -m benchmarks.gemm_template --sweep-tiles`;
    benchmarks/results/gemm_template_tiles_cuda.md): 128x128
    outputs, 64-deep K slices, 8 warps and a 3-stage pipeline were the fastest where
    they give at least 256 programs (two per SM); with fewer, 64x64x64 in 4 warps and
    4 stages, whose 4x more programs fill the GPU (1024^3, for one);
    max-autotune times nine tiles (targets/triton/autotune.py). `forced`,
    "MxNxK/warps/stages", replaces the rule, and the target launches it untuned."""
    m, n, k = loop_ranges(matmul)
    if forced:
        sizes, warps, stages = forced.split("/")
        tile, num_warps, num_stages = [int(t) for t in sizes.split("x")], int(warps), int(stages)
    elif template_programs(m, n, 128, 128) >= 256:
        tile, num_warps, num_stages = [128, 128, 64], 8, 3
    else:
        tile, num_warps, num_stages = [64, 64, 64], 4, 4
    decision = _dictionary("gemm_template", template_block(tile, m, n, k), num_warps,
                           num_stages=num_stages)
    if forced:  # the Triton target launches a forced tile as it is, untuned
        decision = ir.DictAttr.get({**{a.name: a.attr for a in decision},
                                    "forced": ir.BoolAttr.get(True)})
    return decision


def template_block(tile: list[int] | tuple[int, ...], m: int, n: int, k: int) -> list[int]:
    """A gemm template's block sizes for `tile`: no larger than each dim's next power
    of two, nor smaller than 16 (tl.dot's minimum)."""
    return [min(t, max(16, _next_power_of_two(d))) for t, d in zip(tile, (m, n, k))]


def template_programs(m: int, n: int, block_m: int, block_n: int) -> int:
    """A gemm template's grid: one program per BLOCK_M x BLOCK_N output tile."""
    return -(-m // block_m) * -(-n // block_n)


def _warps(block: int) -> int:
    return min(16, max(1, block // 256))


def _dictionary(kind: str, block: list[int], num_warps: int,
                num_stages: int | None = None) -> ir.Attribute:
    i64 = ir.IntegerType.get_signless(64)
    stages = {"num_stages": ir.IntegerAttr.get(i64, num_stages)} if num_stages else {}
    return ir.DictAttr.get({
        "kind": ir.StringAttr.get(kind),
        "block": ir.DenseI64ArrayAttr.get(block),
        "num_warps": ir.IntegerAttr.get(i64, num_warps),
        **stages,
    })

"""The gemm template: a linalg.matmul with element-wise generics before (its initial
accumulator) and after (its epilogue), each program computing a 2-D tile with tl.dot and
applying the epilogue in registers."""

from __future__ import annotations

from tessel import ir
from tessel.passes.tile_for_threads import loop_ranges
from tessel.targets.triton.dtypes import TRITON_DTYPES, cast, element_name
from tessel.targets.triton.indexing import ZERO, Index, address, strides, symbol, text
from tessel.targets.triton.reductions import ReductionWriter
from tessel.targets.triton.stores import store_results
from tessel.targets.triton.unsupported import UnsupportedKernel

# The largest M, N and K tiles a template is launched with (choose-gpu-blocks and
# autotuning): dims they divide need no masks in the K loop.
_LARGEST_TILE = (256, 256, 128)
# Programs walk the output tiles in groups of this many tile rows, column by column, so
# that programs running at the same time share their A rows and B columns in L2.
_GROUP_M = 8


def gemm_template(writer: ReductionWriter, body: list[ir.Operation]) -> tuple[int, int, int]:
    """A tl.dot template (fuse-gemm-epilogues): each program computes one BLOCK_M x
    BLOCK_N tile of `C = init + A B`, with f32 accumulation over BLOCK_K slices of K,
    then runs the epilogue's generics on the tile in registers and stores their results.
    The prologue's generics compute the initial accumulator on the same tile. Operands
    are read through the matmul's indexing maps and the strides the host passes, so
    a transposed A or B needs no copy; ragged edges are masked (loads give 0). Returns
    the gemm's (m, n, k)."""
    matmul = next(op for op in body if op.name == "linalg.matmul")
    position = body.index(matmul)
    m, n, k = loop_ranges(matmul)
    writer.constants = ("BLOCK_M", "BLOCK_N", "BLOCK_K")
    writer.tile = "[BLOCK_M, BLOCK_N]"
    writer.tile_indices = [symbol("rm[:, None]"), symbol("rn[None, :]")]
    # The source holds for any block sizes (autotuning launches it with others).
    writer.emit("program = tl.program_id(0)")
    writer.emit(f"group = {_GROUP_M} * tl.cdiv({n}, BLOCK_N)")
    writer.emit(f"first_m = program // group * {_GROUP_M}")
    writer.emit(f"group_m = tl.minimum(tl.cdiv({m}, BLOCK_M) - first_m, {_GROUP_M})")
    writer.emit("rm = (first_m + program % group % group_m) * BLOCK_M + tl.arange(0, BLOCK_M)")
    writer.emit("rn = program % group // group_m * BLOCK_N + tl.arange(0, BLOCK_N)")
    writer.emit(f"mask = (rm[:, None] < {m}) & (rn[None, :] < {n})")
    for op in body[:position]:
        writer.generic(op)
    identity = ir.AffineMap.get_identity(2, context=matmul.context)
    init, init_kind = writer.read(matmul.operands[2], identity, writer.tile_indices, "row")
    if init_kind.startswith("literal"):
        writer.emit(f"acc = tl.full([BLOCK_M, BLOCK_N], {init}, tl.float32)")
    else:
        # f32 + (a broadcast tile or literal of any float type): an f32 tile.
        writer.emit(f"acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32) + {init}")
    a_map, b_map, _ = ir.indexing_maps(matmul)
    element = element_name(matmul.operands[0])
    with writer.section() as k_loop:
        writer.emit("rk = k + tl.arange(0, BLOCK_K)")
        # Tile indices per loop dim (m, n, k) of A's [BLOCK_M, BLOCK_K] and B's
        # [BLOCK_K, BLOCK_N].
        a = _operand_tile(writer, matmul.operands[0], a_map,
                          {0: (symbol("rm[:, None]"), m, _LARGEST_TILE[0]),
                           2: (symbol("rk[None, :]"), k, _LARGEST_TILE[2])})
        b = _operand_tile(writer, matmul.operands[1], b_map,
                          {2: (symbol("rk[:, None]"), k, _LARGEST_TILE[2]),
                           1: (symbol("rn[None, :]"), n, _LARGEST_TILE[1])})
        # f32 operands multiply exactly, as torch's matmul does unless TF32 is allowed.
        precision = ", input_precision=\"ieee\"" if element == "f32" else ""
        writer.emit(f"acc = tl.dot({a}, {b}, acc{precision})")
    writer.emit(f"for k in range(0, {k}, BLOCK_K):")
    writer.place(k_loop)
    result = element_name(matmul.results[0])
    writer.registers[matmul.results[0]] = (
        "acc" if result == "f32" else cast("acc", result), "row")
    for op in body[position + 1:-1]:
        if op.name != "linalg.generic":
            raise UnsupportedKernel(op.name, "only element-wise generics around a gemm template")
        writer.generic(op)
    store_results(writer, list(body[-1].operands))
    return m, n, k


def _operand_tile(writer: ReductionWriter, operand: ir.Value, affine_map: ir.AffineMap,
                  dims: dict[int, tuple[Index, int, int]]) -> str:
    """Load a matmul operand's tile in the K loop: `dims` gives each loop dim it is
    indexed by as (tile index, extent, largest block); dims whose extent such a block
    might not divide are masked, with 0 (which adds nothing to the product)."""
    if operand in writer.registers or operand in writer.literals or operand in writer.slices:
        raise UnsupportedKernel("linalg.matmul", "an operand computed in the kernel")
    pointer = writer.input_pointer(operand)
    positions = [ir.AffineDimExpr(e).position for e in affine_map.results]
    offset = address(strides(pointer, len(positions)), [ZERO] * len(positions),
                     [dims[p][0] for p in positions])
    ragged = [f"({text(index)} < {extent})" for index, extent, largest in dims.values()
              if extent % largest]
    load = f"tl.load({pointer} + {text(offset)}" + (
        f", mask={' & '.join(ragged)}, other=0.0)" if ragged else ")")
    if operand in writer.narrowed:
        load += f".to({TRITON_DTYPES[element_name(operand)]})"
    tile = writer.fresh("tile")
    writer.emit(f"{tile} = {load}")
    return tile

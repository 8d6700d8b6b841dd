from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.choose_gpu_blocks import is_pointwise_kernel
from tessel.passes.registry import ModulePass, register


def _static_slice(op: ir.Operation | None) -> bool:
    """A tensor.extract_slice of static offsets, sizes and strides, taken at the
    function's level (not inside a kernel)."""
    return op is not None and op.name == "tensor.extract_slice" and len(op.operands) == 1 \
        and op.parent.name == "func.func"


def _kept_dims(piece: ir.Operation) -> list[int | None]:
    """Per dim of the sliced tensor, the slice's dim it becomes, None where the slice
    drops it (a rank-reducing slice drops unit dims; matched from the left, as MLIR's
    rank-reduction mask is)."""
    sizes = ir.DenseI64ArrayAttr(piece.attributes["static_sizes"])
    part = piece.results[0].type.shape
    kept, next_dim = [], 0
    for size in sizes:
        if next_dim < len(part) and part[next_dim] == size:
            kept.append(next_dim)
            next_dim += 1
        else:
            kept.append(None)
    return kept


@register
@dataclass(frozen=True)
class ReadSlicesInPlacePass(ModulePass):
    """read-slices-in-place: a pointwise kernel's linalg.generic that reads a static
    slice of a tensor from outside the kernel reads the tensor itself, the slice's
    offsets and steps folded into its indexing map (`(d0, d1)` of a slice at [0, 48]
    becomes `(d0, d1 + 48)`; a dim the slice drops is read at its offset), as
    Inductor's kernels index a view's buffer at an offset.

    A DenseNet layer's backward reads its input concatenation, its statistics and its
    gradient one chunk per earlier layer: the Triton host took each chunk as a strided
    view, thousands a training step of densenet121, each a tensor made in Python. Read
    in place, the kernel takes the whole tensor and the host makes no view; a slice
    nothing else reads is erased. A dim read plainly (d1, not d1 + 48) must span its
    whole extent, as linalg requires: a chunk at offset 0 stays a slice. Last in the
    gpu pipeline: the passes before it, and the Triton target's layouts, see the slice.
    """

    name: ClassVar[str] = "read-slices-in-place"

    def run(self, module: ir.Operation) -> None:
        sliced = []
        for kernel in ir.ops_where(module, is_pointwise_kernel):
            for generic in ir.ops_where(kernel, lambda op: op.name == "linalg.generic"):
                for number in range(len(generic.operands) - len(generic.results)):
                    piece = ir.operation_of(generic.operands[number].owner)
                    if _static_slice(piece):
                        folded = _folded(ir.indexing_maps(generic)[number], piece)
                        if folded is not None:
                            _read_through(generic, number, piece.operands[0], folded)
                            sliced.append(piece)
        for piece in dict.fromkeys(sliced):
            if not any(True for _ in piece.results[0].uses):
                piece.erase()


def _folded(read: ir.AffineMap, piece: ir.Operation) -> ir.AffineMap | None:
    """The map that reads the sliced tensor where `read` reads the slice `piece`: the
    tensor's element at offset + k * step for the slice's element k, per dim; None
    where that would read a dim plainly that the slice does not span whole."""
    offsets = ir.DenseI64ArrayAttr(piece.attributes["static_offsets"])
    steps = ir.DenseI64ArrayAttr(piece.attributes["static_strides"])
    whole = piece.operands[0].type.shape
    sizes = ir.DenseI64ArrayAttr(piece.attributes["static_sizes"])
    results = []
    for kept, offset, step, extent, size in zip(_kept_dims(piece), offsets, steps, whole, sizes):
        if kept is None:
            results.append(ir.AffineConstantExpr.get(offset, read.context))
            continue
        expr = read.results[kept]
        if isinstance(expr, ir.AffineDimExpr) and not offset and step == 1 and size != extent:
            return None
        results.append(expr * step + offset)
    return ir.AffineMap.get(read.n_dims, read.n_symbols, results)


def _read_through(generic: ir.Operation, number: int, tensor: ir.Value,
                  read: ir.AffineMap) -> None:
    maps = ir.indexing_maps(generic)
    maps[number] = read
    generic.attributes["indexing_maps"] = ir.ArrayAttr.get(
        [ir.AffineMapAttr.get(m) for m in maps], context=generic.context)
    generic.operands[number] = tensor

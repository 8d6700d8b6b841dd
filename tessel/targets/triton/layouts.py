"""Which buffers of a host program are channels-last.

cuDNN's tensor-core convolutions read and write NHWC: the images a convolution reads or
writes, and what kernels compute from them point for point (batch norm, activations,
residual adds) or concatenate, stay NHWC, and those kernels walk their points in NHWC
order (kernel_source), so that a network's activations are never transposed. Every
other 4-D tensor keeps PyTorch's row-major layout: attention's [B, H, S, D], a
transformer block's [B, H, W, C] after a permute. Laid out channels-last, a reshape of
such a tensor is a copy, and the kernels that walk it NHWC read across it (a ViT's patch
embedding made every 4-D buffer of the graph channels-last: 14 copies a call).

A 1-D convolution is a 2-D one over [N, C, 1, L]: its image and result, and views of
them that keep N and C ([N, C, L]), are channels-last too, with the channels (dim 1)
innermost in memory, so that the kernels between Whisper's convolutions read them along
memory (walked row-major, a GELU read [8, 384, 3000] across it, uncoalesced).
"""

from __future__ import annotations

from tessel import ir
from tessel.passes.contractions import NAMED_CONVOLUTIONS

VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape")
RANKS = (3, 4)  # [N, C, L] and [N, C, H, W]


def strides(shape: list[int], channels_last: bool) -> list[int]:
    """Contiguous strides of `shape`, or channels-last ones (dim 1 innermost: NHWC for
    NCHW, NLC for NCL): those of a buffer the host allocates."""
    order = [0, *range(2, len(shape)), 1] if channels_last else list(range(len(shape)))
    found = [0] * len(shape)
    step = 1
    for dim in reversed(order):
        found[dim] = step
        step *= max(shape[dim], 1)
    return found


def _image(value: ir.Value) -> bool:
    return isinstance(value.type, ir.RankedTensorType) and value.type.rank in RANKS


def channels_last_values(main: ir.Operation) -> frozenset[ir.Value]:
    """The values of `main` held channels-last: each convolution's image (under the pad
    the host folds into it), accumulator (its bias) and result, then, in program order, views of them that keep
    their batch and channels, the results of kernels that read one of them with their
    own shape, and concatenations of them; then, in reverse, the images that views of
    them or kernels computing only for them are made from."""
    held: set[ir.Value] = set()
    ops = [op.operation for op in main.regions[0].blocks[0].operations]
    for op in ops:
        if op.name == "tkern.library_call":
            contraction = op.regions[0].blocks[0].operations[0].operation
            if contraction.name in NAMED_CONVOLUTIONS:
                image, accumulator = contraction.operands[0], contraction.operands[2]
                owner = ir.operation_of(image.owner)
                if owner is not None and owner.name == "tensor.pad":
                    held.add(owner.operands[0])
                held.update(v for v in (image, accumulator, *op.results) if _image(v))
        elif op.name in VIEWS:
            source, view = op.operands[0], op.results[0]
            if source in held and _image(view) and \
                    list(view.type.shape[:2]) == list(source.type.shape[:2]):
                held.add(view)
        elif op.name in ("tkern.kernel", "tensor.concat"):
            for result in op.results:
                if _image(result) and any(
                        value in held and (op.name == "tensor.concat" or
                                           value.type.shape == result.type.shape)
                        for value in _read(op)):
                    held.add(result)
    readers: dict[ir.Value, list[ir.Operation]] = {}
    for op in ops:
        for value in _read(op):
            readers.setdefault(value, []).append(op)
    for op in reversed(ops):
        # A kernel's result that a view makes into an image (a 1-D convolution's bias as
        # [N, C, 1, L]) is one too.
        if op.name in VIEWS and op.results[0] in held and _image(op.operands[0]) and \
                list(op.operands[0].type.shape[:2]) == list(op.results[0].type.shape[:2]):
            held.add(op.operands[0])
        # So is an image a kernel computes only for kernels (or concatenations) whose
        # results are held images of its batch and points: SegFormer's upsampled maps,
        # concatenated along the channels for a 1x1 convolution, were written row-major
        # from tokens read across memory, then read across it again by the concatenation.
        elif op.name == "tkern.kernel":
            for result in op.results:
                users = readers.get(result, ())
                if _image(result) and users and all(
                        user.name in ("tkern.kernel", "tensor.concat") and user.results and
                        all(r in held and _same_points(r, result) for r in user.results)
                        for user in users):
                    held.add(result)
    return frozenset(held)


def _read(op: ir.Operation) -> list[ir.Value]:
    """The values `op` reads: a kernel's from above its body, any other op's operands."""
    return ir.values_read_from_above(op) if op.name == "tkern.kernel" else list(op.operands)


def _same_points(image: ir.Value, other: ir.Value) -> bool:
    """Whether two images share their batch and positions (any channels)."""
    first, second = list(image.type.shape), list(other.type.shape)
    return len(first) == len(second) and first[0] == second[0] and first[2:] == second[2:]


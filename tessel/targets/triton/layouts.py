"""Which buffers of a host program are channels-last.

cuDNN's tensor-core convolutions read and write NHWC: the images a convolution reads or
writes, and what kernels compute from them point for point (batch norm, activations,
residual adds) or concatenate, stay NHWC, and those kernels walk their points in NHWC
order (kernel_source), so that a network's activations are never transposed. So do the
images a graph gets channels-last, and what kernels compute from them: a training step's
backward gets the activations as the forward wrote them (frontend/saved_layouts.py), and
so do the images cuDNN's backward convolutions read and write (native calls). Every
other 4-D tensor keeps PyTorch's row-major layout: attention's [B, H, S, D], a
transformer block's [B, H, W, C] after a permute. Laid out channels-last, a reshape of such a tensor is a copy, and the kernels
that walk it NHWC read across it (a ViT's patch embedding made every 4-D buffer of the
graph channels-last: 14 copies a call).

A 1-D convolution is a 2-D one over [N, C, 1, L]: its image and result, and views of
them that keep N and C ([N, C, L]), are channels-last too, with the channels (dim 1)
innermost in memory, so that the kernels between Whisper's convolutions read them along
memory (walked row-major, a GELU read [8, 384, 3000] across it, uncoalesced).

A grouped convolution's image is [N, G, C, H, W], aten's [N, G * C, H, W] split: held
channels-last it is laid out [N, H, W, G, C], so that the aten image it is a view of, and
views of it that merge G and C back (GroupNorm's [N, G, C, L] of an NLC image) are
channels-last too. Laid out otherwise, cuDNN transposed the image, the weight and the
result of every grouped convolution of nfnet_l0 (327 transposes a call).
"""

from __future__ import annotations

from tessel import ir
from tessel.passes.call_native_ops import NativeCall, Operand, native_call, native_functions
from tessel.passes.contractions import NAMED_CONVOLUTIONS
from tessel.passes.form_kernels import UNWRAPPED_KERNEL
from tessel.signature import GraphSignature, TensorInput

VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape")
# Native ops the host program calls (passes/call_native_ops.py) that are convolutions:
# the positions of their image arguments and results (cuDNN's backward reads the
# output's gradient and the input, and writes the input's gradient, channels-last).
_NATIVE_CONVOLUTION_IMAGES = {"aten.convolution_backward.default": ((0, 1), (0,))}
RANKS = (3, 4, 5)  # [N, C, L], [N, C, H, W] and a grouped [N, G, C, H, W]


def memory_order(rank: int) -> list[int]:
    """The dims of a channels-last tensor of `rank` from outermost to innermost in
    memory: N, the positions, then the channels (G, C for a grouped image)."""
    channels = [1, 2] if rank == 5 else [1]
    return [0, *range(channels[-1] + 1, rank), *channels]


def strides(shape: list[int], channels_last: bool) -> list[int]:
    """Contiguous strides of `shape`, or channels-last ones (`memory_order`: NHWC for
    NCHW, NLC for NCL, NHWGC for a grouped NGCHW): those of a buffer the host allocates."""
    order = memory_order(len(shape)) if channels_last else list(range(len(shape)))
    found = [0] * len(shape)
    step = 1
    for dim in reversed(order):
        found[dim] = step
        step *= max(shape[dim], 1)
    return found


def laid_out_channels_last(shape: list[int], stride: list[int]) -> bool:
    """Whether `stride` are channels-last strides of `shape`, and not also row-major ones
    (a tensor with one channel or one position is both)."""
    return list(stride) == strides(shape, True) != strides(shape, False)


def _image(value: ir.Value) -> bool:
    return isinstance(value.type, ir.RankedTensorType) and value.type.rank in RANKS


def channels_last_inputs(main: ir.Operation, signature: GraphSignature) -> frozenset[int]:
    """The positions of the inputs of `main` traced channels-last (and so not
    contiguous) at static sizes: a training step's activations, which the forward
    returns as written, for the backward's pieces (frontend/saved_layouts.py)."""
    found = set()
    arguments = main.regions[0].blocks[0].arguments
    for position, (argument, graph_input) in enumerate(zip(arguments, signature.inputs)):
        if (isinstance(graph_input, TensorInput) and graph_input.stride is not None
                and graph_input.permutation is None and _image(argument)
                and ir.ShapedType(argument.type).has_static_shape):
            shape = list(ir.ShapedType(argument.type).shape)
            if laid_out_channels_last(shape, graph_input.stride):
                found.add(position)
    return frozenset(found)


def channels_last_values(main: ir.Operation, inputs: frozenset[int] = frozenset()
                         ) -> frozenset[ir.Value]:
    """The values of `main` held channels-last: its arguments at `inputs`, each
    convolution's image (under the pad the host folds into it), accumulator (its bias),
    result and the weight a kernel computes for it, then, in program order, views of
    them that keep their batch and channels, slices and pads of them, the results of
    kernels that read one of them with their own batch and channels (pointwise kernels,
    pooling windows and their gradients), and concatenations of them; then, in reverse,
    the images that views of them or kernels computing only for them are made from."""
    arguments = main.regions[0].blocks[0].arguments
    held: set[ir.Value] = {arguments[position] for position in inputs
                           if _image(arguments[position])}
    ops = [op.operation for op in main.regions[0].blocks[0].operations]
    natives = native_functions(main.operation.parent)
    for op in ops:
        if (call := native_call(op, natives)) is not None:
            held.update(v for v in _native_convolution_images(op, call) if _image(v))
        elif op.name == "tkern.library_call":
            contraction = op.regions[0].blocks[0].operations[0].operation
            if contraction.name in NAMED_CONVOLUTIONS:
                image, accumulator = contraction.operands[0], contraction.operands[2]
                owner = ir.operation_of(image.owner)
                if owner is not None and owner.name == "tensor.pad":
                    held.add(owner.operands[0])
                held.update(v for v in (image, accumulator, *op.results) if _image(v))
                # A weight a kernel computes (autocast's bf16 copy of the parameter) is
                # written as cuDNN reads it, not converted after (a resnet50 train step
                # copied its 17 weights other than 1 x 1 ones in the forward and again in
                # the backward).
                weight = contraction.operands[1]
                producer = ir.operation_of(weight.owner)
                if contraction.name == "linalg.conv_2d_nchw_fchw" and \
                        producer is not None and generated_kernel(producer):
                    held.add(weight)
        elif op.name in VIEWS:
            if op.operands[0] in held and _keeps_channels(op):
                held.add(op.results[0])
        elif op.name in ("tensor.extract_slice", "tensor.pad"):
            # A slice of an image is a view that keeps its layout (a densenet layer's
            # channels of its concatenation's gradient); aten pads an image in its own
            # (a max pool's -inf border).
            if op.operands[0] in held and _image(op.results[0]) and \
                    op.results[0].type.rank == op.operands[0].type.rank:
                held.add(op.results[0])
        elif generated_kernel(op) or op.name == "tensor.concat":
            for result in op.results:
                if _image(result) and any(
                        value in held and (op.name == "tensor.concat" or
                                           _same_channels(value, result))
                        for value in _read(op)):
                    held.add(result)
    readers: dict[ir.Value, list[ir.Operation]] = {}
    for op in ops:
        for value in _read(op):
            readers.setdefault(value, []).append(op)
    for op in reversed(ops):
        # A kernel's result that a view makes into an image (a 1-D convolution's bias as
        # [N, C, 1, L]) is one too.
        if op.name in VIEWS and op.results[0] in held and _keeps_channels(op):
            held.add(op.operands[0])
        # So is an image a kernel computes only for kernels (or concatenations) whose
        # results are held images of its batch and points: SegFormer's upsampled maps,
        # concatenated along the channels for a 1x1 convolution, were written row-major
        # from tokens read across memory, then read across it again by the concatenation.
        elif generated_kernel(op):
            for result in op.results:
                users = readers.get(result, ())
                if _image(result) and users and all(
                        (generated_kernel(user) or user.name == "tensor.concat") and
                        user.results and
                        all(r in held and _same_points(r, result) for r in user.results)
                        for user in users):
                    held.add(result)
    return frozenset(held)


def _native_convolution_images(op: ir.Operation, call: NativeCall) -> list[ir.Value]:
    """The images a native convolution's call `op` reads and writes (none for other ops)."""
    arguments, results = _NATIVE_CONVOLUTION_IMAGES.get(call.overload, ((), ()))
    read = [op.operands[call.arguments[position].index] for position in arguments
            if isinstance(call.arguments[position], Operand)]
    return read + [op.results[call.results.index(position)] for position in results
                   if position in call.results]


def innermost_dims(main: ir.Operation, channels_last: frozenset[ir.Value]
                   ) -> dict[ir.Value, int]:
    """The dim innermost in memory of each value of `main` laid out otherwise than
    row-major in its shape: the `channels_last` values (their channels), and, in
    program order, views of such values (a split reduction's [S, N / S, C, H, W] view of
    an NHWC image keeps C innermost, at dim 2). A kernel reading one of them along its
    other dims reads across memory (row_tiles.py)."""
    block = main.regions[0].blocks[0]
    found = {argument: memory_order(argument.type.rank)[-1]
             for argument in block.arguments if argument in channels_last}
    for op in block.operations:
        op = op.operation
        if op.name in ("tensor.expand_shape", "tensor.collapse_shape") \
                and op.operands[0] in found:
            groups, inner = ir.reassociation(op), found[op.operands[0]]
            result = op.results[0]
            dim = groups[inner][-1] if op.name == "tensor.expand_shape" else next(
                index for index, group in enumerate(groups) if inner in group)
            if dim != result.type.rank - 1:
                found[result] = dim
            continue
        for result in op.results:
            if result in channels_last:
                found[result] = memory_order(result.type.rank)[-1]
    return found


def _keeps_channels(view: ir.Operation) -> bool:
    """Whether a view between images keeps their batch and channels: the same first two
    dims, or a grouped image's G and C as the other's channels (an expand or collapse
    that splits or merges just those, or merges a G of 1 into the batch, as a collapse
    of GroupNorm(1, C)'s [N, 1, C, H, W] is written)."""
    source, result = view.operands[0], view.results[0]
    if not (_image(source) and _image(result)):
        return False
    first, second = list(source.type.shape), list(result.type.shape)
    if (len(first) == 5) == (len(second) == 5):
        return first[:2] == second[:2]
    if view.name == "tensor.reshape":
        return False
    grouped = first if len(first) == 5 else second
    groups = ir.reassociation(view)
    return groups[0] + groups[1] == [0, 1, 2] and groups[1][-1] == 2 and \
        (groups[0] == [0] or grouped[1] == 1)


def _read(op: ir.Operation) -> list[ir.Value]:
    """The values `op` reads: a kernel's from above its body, any other op's operands."""
    return ir.values_read_from_above(op) if generated_kernel(op) else list(op.operands)


def generated_kernel(op: ir.Operation) -> bool:
    """Whether `op` is a kernel tessel generates: a tkern.kernel, or a loop nest left
    unwrapped as one (a row kernel with a result of another type: a squeeze-excite
    block's mean beside the f32 image it is the mean of)."""
    return op.name == "tkern.kernel" or UNWRAPPED_KERNEL in op.attributes


def _same_channels(image: ir.Value, other: ir.Value) -> bool:
    """Whether two images of a rank share their batch and channels (any positions): a
    pooling window's result or gradient, or an upsampled map, of a held image, whose
    taps then lie along memory in both."""
    first, second = list(image.type.shape), list(other.type.shape)
    channels = 3 if len(first) == 5 else 2
    return len(first) == len(second) and first[:channels] == second[:channels]


def _same_points(image: ir.Value, other: ir.Value) -> bool:
    """Whether two images share their batch and positions (any channels)."""
    first, second = list(image.type.shape), list(other.type.shape)
    return len(first) == len(second) and first[0] == second[0] and first[2:] == second[2:]



# Convolutions whose weight is [O..., I, KH, KW] (a depthwise one's is [C, KH, KW]).
_WEIGHTS_READ_4D = ("linalg.conv_2d_nchw_fchw", "linalg.conv_2d_ngchw_gfchw")
# Ops of a kernel's body that treat every point of its rows alike, whatever their order.
_ROW_ORDER_FREE = ("scf.forall", "scf.forall.in_parallel", "tensor.extract_slice",
                   "tensor.parallel_insert_slice", "tensor.empty", "linalg.fill",
                   "linalg.yield", "tkern.yield")


def channels_last_weight_views(main: ir.Operation) -> frozenset[ir.Operation]:
    """The views that make a kernel's [O, I * KH * KW] rows convolution weights (a
    weight-standardized convolution's, normalized per output channel at every call),
    and those that make its weight inputs such rows, where the kernel treats every
    point of a row alike: the host then takes the rows in (KH, KW, I) order, reading
    each input weight converted channels-last once per version and writing the
    weight channels-last, as cuDNN takes it (converted at every call, 52 copies a
    call of nfnet_l0). Each op returned is such a collapse or expand."""
    views = set()
    for op in main.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "tkern.kernel" and len(op.results) == 1:
            views.update(_weight_rows(op))
    return frozenset(views)


def _weight_rows(kernel: ir.Operation) -> list[ir.Operation]:
    """The views of `kernel`'s rows (channels_last_weight_views), or none where any
    use or read of its rows is another, or its body may tell a row's points apart."""
    (rows,) = kernel.results
    if not isinstance(rows.type, ir.RankedTensorType) or not rows.type.has_static_shape:
        return []
    shape = list(rows.type.shape)
    if len(shape) != 2 or shape[0] == shape[1]:
        return []
    expands = [ir.operation_of(use.owner) for use in rows.uses]
    if not expands or not all(view is not None and _weight_expand(view) for view in expands):
        return []
    kernel_dims = [tuple(view.results[0].type.shape[len(ir.reassociation(view)[0]):])
                   for view in expands]
    collapses = []
    for value in ir.values_read_from_above(kernel):
        owner = ir.operation_of(value.owner)
        if not isinstance(value.type, ir.RankedTensorType) or value.type.rank == 0 or \
                (owner is not None and owner.name == "tensor.empty"):
            continue
        if list(value.type.shape) == shape and owner is not None and \
                owner.name == "tensor.collapse_shape" and \
                isinstance(owner.operands[0].owner, ir.Block) and \
                ir.reassociation(owner) == [[0], list(range(1, owner.operands[0].type.rank))]:
            collapses.append(owner)
            kernel_dims.append(tuple(owner.operands[0].type.shape[1:]))
        elif value.type.rank != 1 or value.type.shape[0] != shape[0]:
            return []
    if not collapses or len(set(kernel_dims)) != 1 or not _order_free(kernel):
        return []
    return expands + collapses


def _weight_expand(view: ir.Operation) -> bool:
    """Whether `view` splits rows [O, J] into a weight [O..., I, KH, KW] that only
    2-D convolutions read (aten's, or a grouped one's [G, F, C, KH, KW])."""
    if view.name != "tensor.expand_shape":
        return False
    groups = ir.reassociation(view)
    if len(groups) != 2 or len(groups[1]) != 3:
        return False
    for use in view.results[0].uses:
        user = ir.operation_of(use.owner)
        if user is None or user.name not in _WEIGHTS_READ_4D or use.operand_number != 1:
            return False
    return True


def _order_free(kernel: ir.Operation) -> bool:
    """Whether every op of `kernel`'s body treats each point of a row alike: slices of
    whole rows, element-wise math and reductions through projected permutations, and
    no op that reads a loop index."""
    body = [op for top in kernel.regions[0].blocks[0].operations
            for op in ir.ops_where(top, lambda _: True)]
    for op in body:
        if op.name == "linalg.generic":
            if not all(m.is_projected_permutation for m in ir.indexing_maps(op)):
                return False
        elif op.name in ("tensor.extract_slice", "tensor.parallel_insert_slice"):
            piece, whole = ((op.results[0], op.operands[0]) if op.name == "tensor.extract_slice"
                            else op.operands[:2])
            if whole.type.rank > 1 and list(piece.type.shape[1:]) != list(whole.type.shape[1:]):
                return False
        elif op.name not in _ROW_ORDER_FREE and op.name.split(".")[0] not in ("arith", "math"):
            return False
    return True

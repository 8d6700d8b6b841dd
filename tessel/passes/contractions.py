"""Recognizing contractions (matmul-like linalg ops), shared by the passes that treat
them differently from other loop nests."""

from __future__ import annotations

from tessel import ir

NAMED_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")
# Convolutions a target may leave to its library (cuDNN through aten on the GPU).
# The grouped one is what torch-mlir makes of a strided convolution's weight gradient;
# the depthwise one, of a convolution with as many groups as channels (MobileNets,
# EfficientNet, ConvNeXt), which cuDNN runs channels-last.
DEPTHWISE_CONVOLUTION = "linalg.depthwise_conv_2d_nchw_chw"
NAMED_CONVOLUTIONS = ("linalg.conv_2d_nchw_fchw", "linalg.conv_2d_ngchw_gfchw",
                      DEPTHWISE_CONVOLUTION)
# An NCHW convolution's NHWC form -> that NCHW convolution (channels-last-convolutions,
# on the CPU).
CHANNELS_LAST_CONVOLUTIONS = {"linalg.conv_2d_nhwc_fhwc": "linalg.conv_2d_nchw_fchw",
                              "linalg.depthwise_conv_2d_nhwc_hwc": DEPTHWISE_CONVOLUTION}


def convolution_pair(op: ir.Operation, name: str) -> tuple[int, int]:
    """A 2-D convolution's `strides` or `dilations` (1, 1 where the op has none)."""
    if name not in op.attributes:
        return (1, 1)
    values = list(ir.DenseIntElementsAttr(op.attributes[name]))
    return (values[0], values[1])


def constant_filled(value: ir.Value) -> ir.Value | None:
    """The arith.constant that the op computing `value` writes at every point, if it is
    a fill: a linalg.fill, or a linalg.generic whose body only yields a value defined
    outside it (a fill after generalize-named-ops); else None."""
    op = ir.operation_of(value.owner)
    filled = None
    if op is not None and op.name == "linalg.fill":
        filled = op.operands[0]
    elif op is not None and op.name == "linalg.generic" and len(op.operands) == 1:
        body = [o.operation for o in op.regions[0].blocks[0].operations]
        filled = body[-1].operands[0] if len(body) == 1 else None
    owner = ir.operation_of(filled.owner) if filled is not None else None
    return filled if owner is not None and owner.name == "arith.constant" else None


def is_zero_fill(value: ir.Value) -> bool:
    """`value` is a fill (constant_filled) of the float constant 0 (a contraction's fresh
    accumulator)."""
    constant = constant_filled(value)
    attribute = constant.owner.attributes["value"] if constant is not None else None
    return isinstance(attribute, ir.FloatAttr) and attribute.value == 0.0


def _argument_number(value: ir.Value, block: ir.Block) -> int | None:
    for number, argument in enumerate(block.arguments):
        if value == argument:
            return number
    return None


def is_multiply_accumulate(op: ir.Operation) -> bool:
    """The body is exactly `yield out + a * b` over the block's (a, b, out) arguments."""
    if len(op.regions) != 1 or not op.regions[0].blocks:
        return False
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    if [o.name for o in body] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    if len(block.arguments) != 3:
        return False
    multiply, add, _ = body
    return ({_argument_number(v, block) for v in multiply.operands} == {0, 1}
            and {_argument_number(v, block) for v in add.operands} == {2, None}
            and multiply.results[0] in list(add.operands))


# On a multiply-accumulate generic that a target computes as a reduction kernel, not
# a library gemm (vector-products-as-reductions).
AS_REDUCTION = "tessel.as_reduction"


def is_contraction(op: ir.Operation) -> bool:
    """A matmul-like op: named matmul/batch_matmul, or a generic with a reduction whose
    body multiply-accumulates two inputs (what BLAS gemm computes), each operand read
    along loop dims (a convolution's weight gradient reads `h * stride + kh`: no gemm
    takes that, and it stays a loop nest), unless marked AS_REDUCTION."""
    if op.name in NAMED_CONTRACTIONS:
        return True
    return (op.name == "linalg.generic" and AS_REDUCTION not in op.attributes
            and any("reduction" in str(t) for t in op.attributes["iterator_types"])
            and is_multiply_accumulate(op)
            and all(isinstance(e, ir.AffineDimExpr)
                    for m in ir.indexing_maps(op) for e in m.results))


def is_vector_product(op: ir.Operation) -> bool:
    """A contraction (is_contraction) in which an input reads no parallel dim that the
    other does not read: a matrix times a vector, or a dot of two rows, where gemm's M
    or N is missing and every value read is used once."""
    if op.name != "linalg.generic" or not is_contraction(op):
        return False
    parallel = {d for d, t in enumerate(op.attributes["iterator_types"])
                if "parallel" in str(t)}
    a, b = ({e.position for e in m.results} & parallel for m in ir.indexing_maps(op)[:2])
    return not (a - b) or not (b - a)


def stores_updates(scatter: ir.Operation) -> bool:
    """Whether the tm_tensor.scatter `scatter` stores its updates as they are
    (index_copy_, index_put_ without accumulate, a static KV cache's update): its body
    yields the update, and combines nothing with the original."""
    block = scatter.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    return len(body) == 1 and body[0].operands[0] == block.arguments[0]


def yields_sum_of(block: ir.Block, arguments: list, adds: tuple[str, ...]) -> bool:
    """Whether the region body `block` is one add (of `adds`) of its two `arguments`,
    yielded."""
    body = [op.operation for op in block.operations]
    return len(body) == 2 and body[0].name in adds and \
        set(body[0].operands) == set(arguments) and body[1].operands[0] == body[0].results[0]


def adds_updates(scatter: ir.Operation) -> bool:
    """Whether the tm_tensor.scatter `scatter` adds each update to the element it
    addresses (index_put_ with accumulate, scatter_add: an embedding's or a gather's
    gradient): its body yields the sum of its two arguments."""
    block = scatter.regions[0].blocks[0]
    return yields_sum_of(block, list(block.arguments), ("arith.addf", "arith.addi"))


# The element types whose adds Triton compiles as atomics (tl.atomic_add; bf16's on a
# GPU only: Triton's interpreter computes in numpy, which has no bf16).
ATOMIC_ADD_TYPES = ("f16", "bf16", "f32", "f64", "i32", "i64")


def library_callee(op: ir.Operation,
                   atomic_add_types: tuple[str, ...] = ATOMIC_ADD_TYPES) -> str | None:
    """The library routine that implements `op`, if any: "gemm" for contractions,
    "conv2d" for a named convolution (NCHW, grouped or not, or an NHWC form), "scatter" for
    tm_tensor.scatter (aten's index_put_ on the GPU, which accumulates colliding
    indices atomically), but for one of static sizes that stores its updates, or adds
    them in one of `atomic_add_types`: that is a kernel of its own (Triton's
    scatter_kernel.py), one launch where index_put_ made several, with host work to
    shape its index columns and, for a gather's gradient, an offset per element."""
    if op.name in NAMED_CONVOLUTIONS or op.name in CHANNELS_LAST_CONVOLUTIONS:
        return "conv2d"
    if op.name == "tm_tensor.scatter":
        static = all(ir.ShapedType(v.type).has_static_shape for v in op.operands)
        element = str(ir.ShapedType(op.results[0].type).element_type)
        kernel = stores_updates(op) or (
            adds_updates(op) and element in atomic_add_types)
        return None if static and kernel else "scatter"
    if op.name.startswith("linalg.") and is_contraction(op):
        return "gemm"
    return None

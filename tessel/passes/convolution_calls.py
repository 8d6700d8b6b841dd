"""Named f32 convolutions on memrefs as calls to the CPU target's convolution routine.

`library-calls` replaces each `linalg.conv_2d_nchw_fchw` and
`linalg.depthwise_conv_2d_nchw_chw` (left named by `generalize-named-ops`: marked
`tessel.library_call` by `convolutions-to-gemm`) with
`tessel_convolution(id, slots)`: `slots` holds, for the image, the weight and the
output in turn, the element address, 4 sizes and 4 strides (a rank-3 weight leaves its
last size and stride 0). A channels-last convolution (`linalg.conv_2d_nhwc_fhwc`,
`linalg.depthwise_conv_2d_nhwc_hwc`: channels-last-convolutions) is handed over as its
NCHW form on transposed views of its memrefs, which PyTorch runs channels-last. The id
indexes the module attribute `tessel.convolutions`, one description per call site (ConvolutionCall: the op, its strides and dilations, and
whether it overwrites its output); the target runs the convolution with PyTorch's own
(oneDNN) kernel, accumulating into the output as the linalg op does, or overwriting
it.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir.dialects import arith, func, memref

from tessel import ir
from tessel.passes.contractions import (
    CHANNELS_LAST_CONVOLUTIONS,
    DEPTHWISE_CONVOLUTION,
    convolution_pair,
)

CONVOLUTION_CALL = "tessel_convolution"
# Unit attribute of a named convolution that library-calls will turn into the call
# (convolutions-to-gemm sets it): generalize-named-ops leaves it named.
LIBRARY_CALL = "tessel.library_call"
# Unit attribute of a library convolution whose result is the convolution alone,
# whatever its output held (overwrite-zero-accumulators); the call overwrites it.
OVERWRITES_OUTPUT = "tessel.overwrites_output"
# Module attribute: per call id, the ConvolutionCall's text.
CONVOLUTION_DESCRIPTIONS = "tessel.convolutions"
# A channels-last convolution -> the permutations that view its image (and result) and
# its weight as its NCHW form's.
_CHANNELS_FIRST_VIEWS = {"linalg.conv_2d_nhwc_fhwc": ([0, 3, 1, 2], [0, 3, 1, 2]),
                         "linalg.depthwise_conv_2d_nhwc_hwc": ([0, 3, 1, 2], [2, 0, 1])}
LIBRARY_CONVOLUTIONS = ("linalg.conv_2d_nchw_fchw", DEPTHWISE_CONVOLUTION,
                        *CHANNELS_LAST_CONVOLUTIONS)
SLOTS_PER_OPERAND = 9

_DECLARATION = "llvm.func @{call}(i64, !llvm.ptr)"


def is_library_convolution(op: ir.Operation) -> bool:
    """A named NCHW (or depthwise) f32 convolution on memrefs of any strides."""
    return (op.name in LIBRARY_CONVOLUTIONS and len(op.operands) == 3
            and all(isinstance(v.type, ir.MemRefType)
                    and str(ir.MemRefType(v.type).element_type) == "f32"
                    for v in op.operands))


def _dynamic_type(rank: int) -> str:
    question = ",".join("?" * rank)
    return f"memref<{'x'.join('?' * rank)}xf32, strided<[{question}], offset: ?>>"


def _helper_text(helper: str, ranks: tuple[int, int, int]) -> str:
    """A function that fills the slots from three memrefs and makes the call."""
    names = ("x", "w", "out")
    arguments = ", ".join(f"%{n}: {_dynamic_type(r)}" for n, r in zip(names, ranks))
    slots = f"!llvm.array<{3 * SLOTS_PER_OPERAND} x i64>"
    lines = [f"func.func private @{helper}(%id: i64, {arguments}) {{",
             "  %count = llvm.mlir.constant(1 : i32) : i32",
             f"  %slots = llvm.alloca %count x {slots} : (i32) -> !llvm.ptr",
             "  %element_bytes = arith.constant 4 : index"]

    def store(value: str, slot: int, suffix: str) -> None:
        lines.append(f"  %as_i64_{suffix} = arith.index_cast {value} : index to i64")
        lines.append(f"  %slot_{suffix} = llvm.getelementptr %slots[0, {slot}] : "
                     f"(!llvm.ptr) -> !llvm.ptr, {slots}")
        lines.append(f"  llvm.store %as_i64_{suffix}, %slot_{suffix} : i64, !llvm.ptr")

    for position, (name, rank) in enumerate(zip(names, ranks)):
        first = position * SLOTS_PER_OPERAND
        sizes = ", ".join(f"%{name}_size{i}" for i in range(rank))
        strides = ", ".join(f"%{name}_stride{i}" for i in range(rank))
        lines.append(f"  %{name}_base, %{name}_offset, {sizes}, {strides} = "
                     f"memref.extract_strided_metadata %{name} : {_dynamic_type(rank)} -> "
                     f"memref<f32>, index, {', '.join(['index'] * (2 * rank))}")
        lines.append(f"  %{name}_aligned = memref.extract_aligned_pointer_as_index "
                     f"%{name}_base : memref<f32> -> index")
        lines.append(f"  %{name}_offset_bytes = arith.muli %{name}_offset, %element_bytes : index")
        lines.append(f"  %{name}_address = arith.addi %{name}_aligned, %{name}_offset_bytes : index")
        store(f"%{name}_address", first, f"{name}_address")
        for i in range(rank):
            store(f"%{name}_size{i}", first + 1 + i, f"{name}_size{i}")
            store(f"%{name}_stride{i}", first + 5 + i, f"{name}_stride{i}")
    lines.append(f"  llvm.call @{CONVOLUTION_CALL}(%id, %slots) : (i64, !llvm.ptr) -> ()")
    lines += ["  return", "}"]
    return "\n".join(lines)


@dataclass(frozen=True)
class ConvolutionCall:
    """What the target needs to know of a call besides its memrefs."""
    op: str
    strides: tuple[int, int]
    dilations: tuple[int, int]
    overwrites: bool     # the output's values are replaced, not accumulated into

    def text(self) -> str:
        """e.g. 'linalg.conv_2d_nchw_fchw strides=2,2 dilations=1,1 overwrites=1'"""
        return (f"{self.op} strides={self.strides[0]},{self.strides[1]} "
                f"dilations={self.dilations[0]},{self.dilations[1]} "
                f"overwrites={int(self.overwrites)}")

    @staticmethod
    def parse(text: str) -> ConvolutionCall:
        op, *pairs = text.split()
        values = {key: tuple(int(v) for v in value.split(","))
                  for key, value in (pair.split("=") for pair in pairs)}
        return ConvolutionCall(op, values["strides"], values["dilations"],
                               bool(values["overwrites"][0]))


def call_of(op: ir.Operation) -> ConvolutionCall:
    name = CHANNELS_LAST_CONVOLUTIONS.get(op.name, op.name)
    return ConvolutionCall(name, convolution_pair(op, "strides"),
                           convolution_pair(op, "dilations"), OVERWRITES_OUTPUT in op.attributes)


def _channels_first_operands(op: ir.Operation) -> list[ir.Value]:
    """The image, weight and output of `op` as its NCHW form reads them: transposed
    views of a channels-last convolution's memrefs (at the insertion point)."""
    if op.name not in _CHANNELS_FIRST_VIEWS:
        return list(op.operands)
    image_order, weight_order = _CHANNELS_FIRST_VIEWS[op.name]
    return [_transposed_view(value, order) for value, order in
            zip(op.operands, (image_order, weight_order, image_order))]


def _transposed_view(value: ir.Value, order: list[int]) -> ir.Value:
    """memref.transpose of `value` whose dim i is `value`'s dim order[i]."""
    source = ir.MemRefType(value.type)
    strides, offset = source.get_strides_and_offset()
    shape = [source.shape[d] for d in order]
    layout = ir.StridedLayoutAttr.get(offset, [strides[d] for d in order])
    result = ir.MemRefType.get(shape, source.element_type, layout, source.memory_space)
    permutation = ir.AffineMapAttr.get(ir.AffineMap.get_permutation(order))
    return memref.TransposeOp(result, value, permutation).result


def replace_with_calls(module: ir.Operation, convolutions: list[ir.Operation]) -> None:
    """Replace each of `convolutions` (see is_library_convolution) with a call, and
    record their descriptions in the module attribute."""
    if not convolutions:
        return
    first = module.regions[0].blocks[0].operations[0]  # helpers go before it, in order
    helpers: dict[tuple[int, int, int], str] = {}
    descriptions = []
    for op in convolutions:
        ranks = tuple(ir.MemRefType(v.type).rank for v in op.operands)
        if ranks not in helpers:
            helpers[ranks] = f"{CONVOLUTION_CALL}_ranks_{'_'.join(map(str, ranks))}"
            # Each helper is parsed with the declaration it calls; only one copy stays.
            text = _DECLARATION.format(call=CONVOLUTION_CALL) + "\n" + _helper_text(
                helpers[ranks], ranks)
            with module.context:
                parsed = ir.Module.parse(text)
                declaration, *_ = parsed.body.operations
                if len(helpers) > 1:
                    declaration.operation.erase()
                for helper in list(parsed.body.operations):
                    helper.operation.move_before(first)
        with ir.InsertionPoint(op), op.location:
            identifier = arith.constant(ir.IntegerType.get_signless(64), len(descriptions))
            operands = [memref.cast(ir.Type.parse(_dynamic_type(rank)), value)
                        for value, rank in zip(_channels_first_operands(op), ranks)]
            func.call([], ir.FlatSymbolRefAttr.get(helpers[ranks]), [identifier, *operands])
        descriptions.append(call_of(op).text())
        op.erase()
    with module.context:
        module.attributes[CONVOLUTION_DESCRIPTIONS] = ir.ArrayAttr.get(
            [ir.StringAttr.get(d) for d in descriptions])

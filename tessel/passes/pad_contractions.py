from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register
from tessel.passes.transform_script import apply_to_marked

_MARK = "tessel.pad"
# Loop dims (m, n, k) of each named contraction; a batch dim is never padded.
_MNK_DIMS = {"linalg.matmul": [0, 1, 2], "linalg.batch_matmul": [1, 2, 3]}
# Element-wise ops whose result is zero where all their operands are.
_ZERO_PRESERVING = {"arith.extf", "arith.truncf", "arith.addf", "arith.subf", "arith.mulf",
                    "arith.negf", "linalg.yield"}


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _element_types(op: ir.Operation) -> tuple[str, ...]:
    return tuple(str(v.type.element_type) for v in op.operands)


@register
@dataclass(frozen=True)
class PadContractionsPass(ModulePass):
    """pad-contractions: pad matmul M/N/K up to a multiple the target prefers, then
    slice the result back.

    Cost rule: pad a matmul or batch_matmul only when (1) its operands' element type is
    one of `element-types` (tensor-core types on the GPU by default; the CPU's BLAS
    handles ragged sizes itself, so the cpu pipeline does not run this pass), whatever
    its accumulator's (a half gemm accumulates in f32), (2) its shape is static and
    some m/n/k is not a multiple of `multiple`, (3) padding grows m*n*k by at most
    `max-overhead` (a fraction), (4) m*n*k is at least `min-multiply-adds`, so that
    the copies the padding costs are small next to the multiply, and (5) the gemm is
    compute-bound: its multiply-adds per element it reads or writes,
    m*n*k / (m*k + k*n + m*n), are at least `min-intensity`. Only there does an aligned
    kernel gain more than the pad costs: a pad of an operand computed at each call is an
    allocation, a fill and a copy in the host program (MLP-Mixer's token-mixing gemms,
    24576 x 196 x 384 in a training step, intensity 129: 113 pads a step, which Inductor
    does not pad). The default is Inductor's pad_mm threshold on an H100: half its bf16
    machine balance, 989 TFLOP/s over 3.35 TB/s.

    An accumulator that an element-wise generic computes from smaller tensors (a bias
    broadcast along the rows, widened) is padded at those tensors: the padded gemm
    then still starts from a broadcast the host passes to cuBLAS as addmm's bias,
    instead of from a padded copy of the whole f32 broadcast.
    """

    name: ClassVar[str] = "pad-contractions"
    multiple: int = 16
    element_types: str = "f16,bf16"
    max_overhead: float = 0.25
    min_multiply_adds: int = 1 << 20
    min_intensity: float = 150.0

    def run(self, module: ir.Operation) -> None:
        types = set(self.element_types.split(","))
        marked: dict[tuple[str, tuple[str, ...]], list[ir.Operation]] = {}
        for op in ir.ops_where(module, lambda op: op.name in _MNK_DIMS and self.pays(op, types)):
            marked.setdefault((op.name, _element_types(op)), []).append(op)
        for (name, elements), ops in marked.items():
            zeros = ", ".join(f"0.0 : {element}" for element in elements)
            apply_to_marked(module, ops, _MARK, [
                (f'%ops = transform.structured.match ops{{["{name}"]}} attributes {{{_MARK}}} '
                 "in %module : (!transform.any_op) -> !transform.any_op"),
                # No copy back into the unpadded accumulator: the slice is the result.
                (f"%padded, %pad, %copy = transform.structured.pad %ops pad_to_multiple_of "
                 f"[{', '.join([str(self.multiple)] * 3)}] {{padding_values = [{zeros}], "
                 f'copy_back_op = "none", padding_dimensions = {_MNK_DIMS[name]}}} : '
                 "(!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)"),
            ])
        padded_operands = [ir.operation_of(v.owner) for op in ir.ops_where(
            module, lambda op: op.name in _MNK_DIMS) for v in op.operands] if marked else []
        for pad in padded_operands:
            if pad is not None and pad.name == "tensor.pad":
                _pad_producer_inputs(pad)

    def pays(self, op: ir.Operation, element_types: set[str]) -> bool:
        """The cost rule of the docstring, for one contraction."""
        operand_types = [v.type for v in op.operands]
        if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in operand_types):
            return False
        if operand_types[0].element_type != operand_types[1].element_type \
                or str(operand_types[0].element_type) not in element_types:
            return False
        a_shape, c_shape = operand_types[0].shape, operand_types[2].shape
        m, n = c_shape[-2], c_shape[-1]
        k = a_shape[-1] if a_shape[-2] == m else a_shape[-2]  # A may be read transposed
        sizes = [m, n, k]
        padded = [_round_up(s, self.multiple) for s in sizes]
        work, padded_work = m * n * k, padded[0] * padded[1] * padded[2]
        intensity = work / (m * k + k * n + m * n)
        return (padded != sizes and work >= self.min_multiply_adds
                and padded_work <= work * (1 + self.max_overhead)
                and intensity >= self.min_intensity)


def _is_zero(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "arith.constant" \
        and isinstance(owner.attributes["value"], ir.FloatAttr) \
        and ir.FloatAttr(owner.attributes["value"]).value == 0.0


def _zero_pad_high(pad: ir.Operation) -> list[int] | None:
    """The static high padding of `pad` when it pads with zero at the high end only."""
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    (yielded,) = pad.regions[0].blocks[0].operations
    if len(pad.operands) != 1 or any(low) or ir.ShapedType.get_dynamic_size() in high \
            or not _is_zero(yielded.operands[0]):
        return None
    return high


def _pad_producer_inputs(pad: ir.Operation) -> None:
    """Rewrite `pad` of an element-wise generic that maps zeros to zero into that
    generic over zero-padded inputs (each padded along the dims its map reads)."""
    high = _zero_pad_high(pad)
    generic = ir.operation_of(pad.operands[0].owner)
    if high is None or generic is None or generic.name != "linalg.generic" \
            or len(generic.results) != 1 or len(list(generic.results[0].uses)) != 1:
        return
    maps = ir.indexing_maps(generic)
    iterators = [str(a) for a in ir.ArrayAttr(generic.attributes["iterator_types"])]
    block = generic.regions[0].blocks[0]
    inputs = list(generic.operands)[:-1]
    if not ir.is_identity_map(maps[-1]) or any("parallel" not in i for i in iterators) \
            or any(p is None for m in maps for p in ir.dim_positions(m)) \
            or not all(isinstance(v.type, ir.RankedTensorType) for v in inputs) \
            or not _maps_zeros_to_zero(block):
        return
    with pad.location, ir.InsertionPoint(pad):
        padded_inputs = [_padded(value, [high[p] for p in ir.dim_positions(m)])
                         for value, m in zip(inputs, maps)]
        result_type = pad.results[0].type
        empty = ir.Operation.create("tensor.empty", results=[result_type], operands=[])
        rewritten = ir.Operation.create(
            "linalg.generic", results=[result_type], operands=[*padded_inputs, empty.result],
            attributes=dict(generic.attributes.items()), regions=1)
    block.append_to(rewritten.regions[0])
    pad.results[0].replace_all_uses_with(rewritten.results[0])
    pad.erase()
    generic.erase()


def _maps_zeros_to_zero(block: ir.Block) -> bool:
    """Whether a generic's body yields zero where its inputs are zero: its ops preserve
    zero and read only the inputs and each other (no constant, nor the output)."""
    computed = set(list(block.arguments)[:-1])
    for op in block.operations:
        if op.name not in _ZERO_PRESERVING or any(v not in computed for v in op.operands):
            return False
        computed.update(op.results)
    return True


def _padded(value: ir.Value, high: list[int]) -> ir.Value:
    """`value` zero-padded by `high` at the end of each dim (at the insertion point)."""
    if not any(high):
        return value
    source = ir.RankedTensorType(value.type)
    element = source.element_type
    shape = [size + extra for size, extra in zip(source.shape, high)]
    zero = ir.Operation.create("arith.constant", results=[element], operands=[],
                               attributes={"value": ir.FloatAttr.get(element, 0.0)})
    padded = ir.Operation.create(
        "tensor.pad", results=[ir.RankedTensorType.get(shape, element)], operands=[value],
        attributes={"static_low": ir.DenseI64ArrayAttr.get([0] * len(high)),
                    "static_high": ir.DenseI64ArrayAttr.get(high),
                    "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0])},
        regions=1)
    body = ir.Block.create_at_start(padded.regions[0], [ir.IndexType.get()] * len(high))
    with ir.InsertionPoint(body):
        ir.Operation.create("tensor.yield", results=[], operands=[zero.result])
    return padded.results[0]

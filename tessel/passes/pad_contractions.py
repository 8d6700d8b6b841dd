from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register
from tessel.passes.transform_script import apply_to_marked

_MARK = "tessel.pad"
# Loop dims (m, n, k) of each named contraction; a batch dim is never padded.
_MNK_DIMS = {"linalg.matmul": [0, 1, 2], "linalg.batch_matmul": [1, 2, 3]}


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


@register
@dataclass(frozen=True)
class PadContractionsPass(ModulePass):
    """pad-contractions: pad matmul M/N/K up to a multiple the target prefers, then
    slice the result back.

    Cost rule: pad a matmul or batch_matmul only when (1) its element type is one of
    `element-types` (tensor-core types on the GPU by default; the CPU's BLAS handles
    ragged sizes itself, so the cpu pipeline does not run this pass), (2) its shape is
    static and some m/n/k is not a multiple of `multiple`, (3) padding grows m*n*k by
    at most `max-overhead` (a fraction), and (4) m*n*k is at least `min-multiply-adds`,
    so that the copies the padding costs are small next to the multiply.
    """

    name: ClassVar[str] = "pad-contractions"
    multiple: int = 16
    element_types: str = "f16,bf16"
    max_overhead: float = 0.25
    min_multiply_adds: int = 1 << 20

    def run(self, module: ir.Operation) -> None:
        types = set(self.element_types.split(","))
        marked: dict[str, list[ir.Operation]] = {}
        for op in ir.ops_where(module, lambda op: op.name in _MNK_DIMS and self.pays(op, types)):
            marked.setdefault(op.name, []).append(op)
        for name, ops in marked.items():
            element = str(ops[0].operands[0].type.element_type)
            zero = f"0.0 : {element}"
            apply_to_marked(module, ops, _MARK, [
                f'%ops = transform.structured.match ops{{["{name}"]}} attributes {{{_MARK}}} '
                "in %module : (!transform.any_op) -> !transform.any_op",
                f"%padded, %pad, %copy = transform.structured.pad %ops pad_to_multiple_of "
                f"[{', '.join([str(self.multiple)] * 3)}] {{padding_values = [{zero}, {zero}, {zero}], "
                f"padding_dimensions = {_MNK_DIMS[name]}}} : (!transform.any_op) -> "
                "(!transform.any_op, !transform.any_op, !transform.any_op)",
            ])

    def pays(self, op: ir.Operation, element_types: set[str]) -> bool:
        """The cost rule of the docstring, for one contraction."""
        operand_types = [v.type for v in op.operands]
        if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in operand_types):
            return False
        if len({str(t.element_type) for t in operand_types}) != 1:
            return False
        if str(operand_types[0].element_type) not in element_types:
            return False
        a_shape, c_shape = operand_types[0].shape, operand_types[2].shape
        m, n = c_shape[-2], c_shape[-1]
        k = a_shape[-1] if a_shape[-2] == m else a_shape[-2]  # A may be read transposed
        sizes = [m, n, k]
        padded = [_round_up(s, self.multiple) for s in sizes]
        work, padded_work = m * n * k, padded[0] * padded[1] * padded[2]
        return (padded != sizes and work >= self.min_multiply_adds
                and padded_work <= work * (1 + self.max_overhead))

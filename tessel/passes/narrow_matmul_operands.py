from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg

from tessel import ir
from tessel.passes.registry import ModulePass, register

_MATMULS = ("linalg.matmul", "linalg.batch_matmul")


def widened_from(value: ir.Value) -> ir.Value | None:
    """The narrower float tensor that `value` is an element-wise `arith.extf` of (a
    linalg.generic with identity maps whose body only widens), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "linalg.generic":
        return None
    generic = owner.operation
    if len(generic.operands) != 2 or len(generic.results) != 1:
        return None
    maps = ir.indexing_maps(generic)
    if not all(m == ir.AffineMap.get_identity(m.n_dims) for m in maps) \
            or ir.sole_cast(generic) != "arith.extf":
        return None
    return generic.operands[0]


@register
@dataclass(frozen=True)
class NarrowMatmulOperandsPass(ModulePass):
    """narrow-matmul-operands: multiply bf16/f16 operands as they are, accumulating in f32.

    PyTorch's decompositions of a bf16 linear widen its operands to f32 before the
    matmul, which torch-mlir lowers as element-wise `extf` generics feeding an f32
    `linalg.matmul`. Computed that way the GPU writes f32 copies of the weights and
    activations and cuBLAS runs an fp32 gemm: GPT-2's 768x2304 projection ran an
    order of magnitude slower than in bf16. A matmul whose inputs are all widened from
    the same narrower type takes the narrow tensors instead: linalg.matmul widens its
    inputs to the accumulator's type itself, so the result is the same, and the
    widening generics die.
    """

    name: ClassVar[str] = "narrow-matmul-operands"

    def run(self, module: ir.Operation) -> None:
        matmuls = ir.ops_where(module, lambda op: op.name in _MATMULS)
        for op in matmuls:
            narrow = [widened_from(v) for v in list(op.operands)[:2]]
            if any(v is None for v in narrow) or narrow[0].type.element_type != narrow[1].type.element_type:
                continue
            maps = op.attributes["indexing_maps"] if "indexing_maps" in op.attributes else None
            with ir.InsertionPoint(op), op.location:
                build = linalg.matmul if op.name == "linalg.matmul" else linalg.batch_matmul
                replacement = build(*narrow, outs=[op.operands[2]], indexing_maps=maps)
            op.results[0].replace_all_uses_with(replacement)
            op.erase()

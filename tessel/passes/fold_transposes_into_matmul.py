from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg

from tessel import ir
from tessel.passes.registry import ModulePass, register

# (m, n, k) maps of matmul; batch_matmul prepends the batch dim b.
_MATMUL_DIMS = {"linalg.matmul": ("m", "n", "k"), "linalg.batch_matmul": ("b", "m", "n", "k")}
_OPERAND_DIMS = {0: ("m", "k"), 1: ("k", "n")}


def _maps(kind: str, transposed: tuple[bool, bool]) -> list[ir.AffineMap]:
    names = _MATMUL_DIMS[kind]
    dims = {name: ir.AffineDimExpr.get(i) for i, name in enumerate(names)}
    batch = [dims["b"]] if "b" in dims else []
    results = []
    for operand, (row, col) in _OPERAND_DIMS.items():
        order = (col, row) if transposed[operand] else (row, col)
        results.append(batch + [dims[order[0]], dims[order[1]]])
    results.append(batch + [dims["m"], dims["n"]])
    return [ir.AffineMap.get(len(names), 0, r) for r in results]


def _has_default_maps(op: ir.Operation) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    default = _maps(op.name, (False, False))
    return ([str(ir.AffineMapAttr(m).value) for m in op.attributes["indexing_maps"]]
            == [str(m) for m in default])


def _swapped_input(value: ir.Value) -> ir.Value | None:
    """The input of a linalg.transpose that swaps the last two dims, else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "linalg.transpose":
        return None
    permutation = list(ir.DenseI64ArrayAttr(owner.operation.attributes["permutation"]))
    rank = len(permutation)
    if permutation != list(range(rank - 2)) + [rank - 1, rank - 2]:
        return None
    return owner.operation.operands[0]


@register
@dataclass(frozen=True)
class FoldTransposesIntoMatmulPass(ModulePass):
    """fold-transposes-into-matmul: read transposed matmul operands in place.

    nn.Linear multiplies by the weight's transpose; materializing it costs a copy of
    the weight per call. A matmul whose operand is a last-two-dims transpose takes
    the transpose's input with swapped indexing map instead, which `library-calls`
    turns into BLAS's transpose flag. The transpose itself dies if nothing else uses it.
    """

    name: ClassVar[str] = "fold-transposes-into-matmul"

    def run(self, module: ir.Operation) -> None:
        with module.context:
            matmuls = ir.ops_where(
                module, lambda op: op.name in _MATMUL_DIMS and _has_default_maps(op))
        for op in matmuls:
            inputs = [_swapped_input(v) for v in list(op.operands)[:2]]
            if all(v is None for v in inputs):
                continue
            operands = [new if new is not None else old
                        for new, old in zip(inputs, list(op.operands)[:2])]
            with ir.InsertionPoint(op), op.location:
                build = linalg.matmul if op.name == "linalg.matmul" else linalg.batch_matmul
                replacement = build(*operands, outs=[op.operands[2]],
                                    indexing_maps=_maps(op.name, tuple(v is not None for v in inputs)))
            op.results[0].replace_all_uses_with(replacement)
            op.erase()

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg

from tessel import ir
from tessel.passes.contractions import is_zero_fill
from tessel.passes.narrow_matmul_operands import widened_from
from tessel.passes.registry import ModulePass, register

_ROW_BROADCAST_MAPS = ["(d0, d1) -> (d1)", "(d0, d1) -> (d0, d1)"]


def _generic_body(op: ir.Operation) -> list[ir.Operation]:
    return [inner.operation for inner in op.regions[0].blocks[0].operations]


def _only_user(value: ir.Value) -> ir.Operation | None:
    users = [use.owner for use in value.uses]
    return users[0] if len(users) == 1 else None


def _bias_add(result: ir.Value, half: ir.Type) -> tuple[ir.Operation, ir.Value, ir.Value] | None:
    """(add, read, bias) when `result` (a gemm's, or a view of it that splits its rows)
    is read only by `add`: an element-wise generic adding `bias`, a 1-D tensor read
    along the last dim, whose sum only a rounding to a narrower float reads; `read` is
    the value `add` takes for the gemm's result."""
    read = result
    user = _only_user(read)
    if user is not None and user.name == "tensor.expand_shape":
        if len(ir.reassociation(user)[-1]) != 1:
            return None  # the last dim is split: the bias no longer runs along it
        read = user.results[0]
        user = _only_user(read)
    if user is None or user.name != "linalg.generic" or len(user.operands) != 3:
        return None
    rank = ir.RankedTensorType(read.type).rank
    maps = ir.indexing_maps(user)
    row = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)])
    identity = ir.AffineMap.get_identity(rank)
    if user.operands[0] != read or maps != [identity, row, identity]:
        return None
    block = user.regions[0].blocks[0]
    body = _generic_body(user)
    if len(body) != 2 or body[0].name != "arith.addf" \
            or set(body[0].operands) != {block.arguments[0], block.arguments[1]}:
        return None
    sum_user = _only_user(user.results[0])
    if sum_user is None or sum_user.name != "linalg.generic":
        return None
    rounding = _generic_body(sum_user)
    if len(rounding) != 2 or rounding[0].name != "arith.truncf" \
            or rounding[0].results[0].type != half:
        return None
    return user, read, user.operands[1]


def is_row_bias_broadcast(generic: ir.Operation) -> bool:
    """Whether the linalg.generic `generic` is a bias broadcast that this pass starts a
    gemm's accumulator from: it widens a 1-D tensor along the rows of a 2-D one."""
    return len(generic.operands) == 2 and ir.sole_cast(generic) == "arith.extf" \
        and [str(m) for m in ir.indexing_maps(generic)] == _ROW_BROADCAST_MAPS


def _row_broadcast(bias: ir.Value, rows: int, element: str) -> str:
    """A function broadcasting the widened 1-D `bias` to a rows x len(bias) accumulator."""
    bias_type = ir.RankedTensorType(bias.type)
    (columns,) = bias_type.shape
    out = f"tensor<{rows}x{columns}x{element}>"
    return f"""
func.func private @rewrite(%bias: {bias_type}) -> {out} {{
  %empty = tensor.empty() : {out}
  %init = linalg.generic {{
      indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>],
      iterator_types = ["parallel", "parallel"]}}
      ins(%bias : {bias_type}) outs(%empty : {out}) {{
  ^bb0(%in: {bias_type.element_type}, %unused: {element}):
    %wide = arith.extf %in : {bias_type.element_type} to {element}
    linalg.yield %wide : {element}
  }} -> {out}
  return %init : {out}
}}"""


@register
@dataclass(frozen=True)
class FoldBiasIntoGemmPass(ModulePass):
    """fold-bias-into-gemm: start a half gemm's accumulator at its bias.

    A bf16/f16 linear with a bias, as PyTorch decomposes it, is an f32 gemm (its
    operands narrowed by narrow-matmul-operands) whose result an element-wise add of
    the widened bias reads, and a rounding to the half type reads the sum. With the
    bias broadcast into the gemm's initial accumulator instead of a zero fill, the sum
    is the gemm's own result, which only a rounding reads: the host program then calls
    cuBLAS's addmm in the half type (the bias folded in, the result rounded once, as
    eager's addmm), where it had written an f32 product for a separate kernel to add
    the bias to. GPT-2's 4096x2304 projection wrote 36 MiB of f32 for its
    epilogue kernel to read back.

    Only 2-D gemms (linalg.matmul) whose result, or a view of it that splits its rows,
    only the bias add reads.
    """

    name: ClassVar[str] = "fold-bias-into-gemm"

    def run(self, module: ir.Operation) -> None:
        for op in ir.ops_where(module, lambda op: op.name == "linalg.matmul"):
            a, b, init = op.operands
            half = ir.RankedTensorType(a.type).element_type
            if str(half) not in ("bf16", "f16") or not is_zero_fill(init):
                continue
            found = _bias_add(op.results[0], half)
            if found is None:
                continue
            add, read, bias = found
            narrow_bias = widened_from(bias)
            if narrow_bias is None or ir.RankedTensorType(narrow_bias.type).element_type != half:
                continue
            result_type = ir.RankedTensorType(op.results[0].type)
            text = _row_broadcast(narrow_bias, result_type.shape[0], str(result_type.element_type))
            parsed = ir.Module.parse(text, module.context)
            block = parsed.body.operations[0].regions[0].blocks[0]
            block.arguments[0].replace_all_uses_with(narrow_bias)
            *body, terminator = block.operations
            for inner in body:
                inner.operation.move_before(op)
            maps = op.attributes["indexing_maps"] if "indexing_maps" in op.attributes else None
            with ir.InsertionPoint(op), op.location:
                biased = linalg.matmul(a, b, outs=[terminator.operands[0]], indexing_maps=maps)
            # The add's sum is now the gemm's result, or the view of it that `read` is.
            read = biased if read == op.results[0] else read
            op.results[0].replace_all_uses_with(biased)
            op.erase()
            add.results[0].replace_all_uses_with(read)
            add.erase()

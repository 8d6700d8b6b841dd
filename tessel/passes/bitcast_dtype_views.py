from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.linalg_builders import tensor_text
from tessel.passes.registry import ModulePass, register

_VALUE_TENSOR = re.compile(r"!torch\.vtensor<\[([^\]]*)\],([a-z]+)(\d*)>")


def _builtin(value_type) -> tuple[list[str], str, int] | None:
    """The sizes, builtin element type and bit width of a torch value tensor
    (`!torch.vtensor<[2,?],si32>`: ["2", "?"], "i32", 32); None for other types."""
    match = _VALUE_TENSOR.fullmatch(str(value_type))
    if match is None:
        return None
    sizes, kind, width = match.groups()
    if kind not in ("f", "bf", "si", "ui") or not width:
        return None
    element = f"{kind}{width}" if kind in ("f", "bf") else f"i{width}"
    return [size.strip() for size in sizes.split(",") if size.strip()], element, int(width)


def _function_text(sizes: list[str], source: str, result: str) -> str:
    """A function that reinterprets each element's bits: an elementwise linalg.generic,
    which fuses with its readers (upstream bufferization has no tensor.bitcast)."""
    x, out = tensor_text(sizes, source), tensor_text(sizes, result)
    dims = ", ".join(f"d{i}" for i in range(len(sizes)))
    dynamic = [i for i, size in enumerate(sizes) if size == "?"]
    lines = [f"  %c{i} = arith.constant {i} : index\n  %n{i} = tensor.dim %x, %c{i} : {x}"
             for i in dynamic]
    iterators = ", ".join(['"parallel"'] * len(sizes))
    return f"""
func.func private @rewrite(%x: {x}) -> {out} {{
{chr(10).join(lines)}
  %empty = tensor.empty({", ".join(f"%n{i}" for i in dynamic)}) : {out}
  %bits = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>,
                                            affine_map<({dims}) -> ({dims})>],
                           iterator_types = [{iterators}]}}
      ins(%x : {x}) outs(%empty : {out}) {{
  ^bb0(%in: {source}, %unused: {result}):
    %cast = arith.bitcast %in : {source} to {result}
    linalg.yield %cast : {result}
  }} -> {out}
  return %bits : {out}
}}"""


@register
@dataclass(frozen=True)
class BitcastDtypeViewsPass(ModulePass):
    """bitcast-dtype-views: lower `aten.view.dtype` between dtypes of one width (a float
    tensor's bits as integers) to an elementwise `arith.bitcast`.

    torch-mlir decomposes signbit (and copysign, which PyTorch writes with it) into
    such a view, which it has no lowering for: the graph ran eagerly. Its readers are
    elementwise (a compare of the bits), so the bitcast fuses into their kernel.
    """

    name: ClassVar[str] = "bitcast-dtype-views"

    def run(self, module: ir.Operation) -> None:
        views = ir.ops_where(module, lambda op: op.name == "torch.aten.view.dtype")
        with module.context:
            for view in views:
                source, result = _builtin(view.operands[0].type), _builtin(view.results[0].type)
                if source is None or result is None or source[2] != result[2]:
                    continue
                sizes = source[0]
                parsed = ir.Module.parse(_function_text(sizes, source[1], result[1]))
                block = parsed.body.operations[0].regions[0].blocks[0]
                with view.location, ir.InsertionPoint(view):
                    builtin = ir.Operation.create(
                        "torch_c.to_builtin_tensor",
                        results=[ir.Type.parse(tensor_text(sizes, source[1]))],
                        operands=[view.operands[0]])
                block.arguments[0].replace_all_uses_with(builtin.result)
                *body, terminator = block.operations
                for op in body:
                    op.operation.move_before(view)
                with view.location, ir.InsertionPoint(view):
                    back = ir.Operation.create(
                        "torch_c.from_builtin_tensor", results=[view.results[0].type],
                        operands=[terminator.operands[0]])
                view.results[0].replace_all_uses_with(back.result)
                view.erase()

"""Building linalg ops in passes: the pieces several passes make, at the insertion
point and location of the caller's context."""

from __future__ import annotations

from torch_mlir.dialects import arith, linalg, tensor

from tessel import ir


def tensor_text(shape: list, element: str) -> str:
    """The MLIR text of a ranked tensor type: sizes (ints, or '?' for dynamic; none for
    a 0-d tensor) and element."""
    return f"tensor<{''.join(f'{size}x' for size in shape)}{element}>"


def index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def selected_by_index(index: ir.Value, values: list[ir.Value]) -> ir.Value:
    """`values[index]`, for an `index` (of index type) in range, as a chain of selects
    (the last value where no other's number matches)."""
    chosen = values[-1]
    for number in range(len(values) - 2, -1, -1):
        here = arith.cmpi(arith.CmpIPredicate.eq, index, index_constant(number))
        chosen = arith.SelectOp(here, values[number], chosen).result
    return chosen


def elementwise_generic(result: ir.RankedTensorType, inputs: list[ir.Value],
                        init: ir.Value) -> tuple[ir.Operation, ir.Block]:
    """A linalg.generic of parallel loops over `result`'s points, writing `init` and
    reading each of `inputs` at the same point, and its block (an argument per input,
    then the init's), for the caller to fill with the body."""
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(result.rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    generic = linalg.GenericOp([result], inputs, [init],
                               ir.ArrayAttr.get([identity] * (len(inputs) + 1)),
                               ir.ArrayAttr.get([parallel] * result.rank)).operation
    elements = [ir.ShapedType(v.type).element_type for v in inputs]
    block = generic.regions[0].blocks.append(*elements, result.element_type)
    return generic, block


def constant_fill(result: ir.RankedTensorType, constant: ir.Value) -> ir.Value:
    """A tensor of type `result` holding `constant` everywhere, as the generic that
    yields it (the fill form that fuse-tiles clones per reader and the host skips)."""
    empty = tensor.EmptyOp(result.shape, result.element_type).result
    fill, block = elementwise_generic(result, [], empty)
    with ir.InsertionPoint(block):
        linalg.YieldOp([constant])
    return fill.results[0]


def replace_with_function_body(op: ir.Operation, operands: list[ir.Value], text: str,
                               module: ir.Operation) -> ir.Value:
    """Replace `op` by the body of the one function in `text` (a rewrite written as
    MLIR, parsed in `module`'s context), its arguments bound to `operands`; returns
    the value that replaced op's result."""
    parsed = ir.Module.parse(text, module.context)
    block = parsed.body.operations[0].regions[0].blocks[0]
    for argument, operand in zip(block.arguments, operands):
        argument.replace_all_uses_with(operand)
    *body, terminator = block.operations
    for inner in body:
        inner.operation.move_before(op)
    result = terminator.operands[0]
    op.results[0].replace_all_uses_with(result)
    op.erase()
    return result

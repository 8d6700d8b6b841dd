"""The one place that imports the MLIR Python bindings bundled with torch-mlir.

Everything else in tessel says `from tessel import ir` and uses `ir.Module`,
`ir.PassManager`, ... so that a change of binding package touches one file.
"""

import io
import re

from torch_mlir.ir import *  # noqa: F401,F403  (re-export the core IR API)
from torch_mlir.ir import (
    AffineBinaryExpr,
    AffineDimExpr,
    AffineMapAttr,
    ArrayAttr,
    Context,
    DenseI64ArrayAttr,
    IntegerAttr,
    IntegerType,
    Module,
    Operation,
    OpView,
    ShapedType,
    StringAttr,
    WalkResult,
)
from torch_mlir.passmanager import PassManager  # noqa: F401
from torch_mlir.execution_engine import ExecutionEngine  # noqa: F401
from torch_mlir.dialects import ext  # noqa: F401  (Python-defined dialects: ir.ext.Dialect)
from torch_mlir.dialects import torch as torch_dialect

_context: Context | None = None


def context() -> Context:
    """The long-lived context that every tessel compilation and tool shares.

    One context makes dialect loading and type/attribute uniquing a one-time cost.
    """
    global _context
    if _context is None:
        _context = Context()
        torch_dialect.register_dialect(_context)
        with _context:
            # TMTensor (torch-mlir's scatter/sort/... dialect) has no Python registration
            # hook; a pass manager loads the dialects its passes depend on, so running
            # one of its passes once makes tm_tensor ops parseable in this context.
            PassManager.parse("builtin.module(func.func(convert-torch-to-tmtensor))").run(
                Module.parse("").operation)
        from tessel.dialects import kernel  # noqa: PLC0415 -- it builds on this module
        kernel.load(_context)
    return _context


def ops_where(root, predicate) -> list:
    """Every Operation nested in `root` (itself included), in walk order, for which
    `predicate(op)` holds; collected first, so callers may rewrite them afterwards."""
    found = []

    def visit(op):
        if predicate(op.operation):
            found.append(op.operation)
        return WalkResult.ADVANCE

    root.walk(visit)
    return found


# A name location, `"mul_1"(...)` or `"mul_1"`; file locations read `"file.py":3:0`.
_LOCATION_NAME = re.compile(r'"([^"]+)"(?!:)')


def location_names(text: str) -> set[str]:
    """The names in name locations of `text` (a location, or a diagnostic printing
    one): the importer names every op's location after its FX node."""
    return set(_LOCATION_NAME.findall(text))


def names_located_in(root) -> set[str]:
    """The names of the locations of every op nested in `root`, itself included."""
    names: set[str] = set()
    for op in ops_where(root, lambda op: True):
        names |= location_names(str(op.location))
    return names


def operation_of(owner) -> Operation | None:
    """The Operation behind a value's or a use's owner, which the bindings hand out as an
    OpView, an Operation or (for a block argument) a Block: None for a block."""
    if isinstance(owner, OpView):
        return owner.operation
    return owner if isinstance(owner, Operation) else None


def indexing_maps(op) -> list:
    """The indexing maps of a linalg op (generic, matmul, ...), as AffineMaps."""
    return [AffineMapAttr(m).value for m in ArrayAttr(op.attributes["indexing_maps"])]


def all_parallel(op) -> bool:
    """Whether every loop of a linalg op is parallel (no reduction)."""
    return all("parallel" in str(kind) for kind in ArrayAttr(op.attributes["iterator_types"]))


def reassociation(reshape) -> list[list[int]]:
    """An expand or collapse_shape's dims of its higher-ranked side, per dim of the other."""
    return [[IntegerAttr(d).value for d in ArrayAttr(group)]
            for group in ArrayAttr(reshape.attributes["reassociation"])]


def reassociation_attr(groups: list[list[int]]) -> ArrayAttr:
    """The `reassociation` attribute of a reshape joining (or splitting) `groups`."""
    i64 = IntegerType.get_signless(64)
    return ArrayAttr.get([ArrayAttr.get([IntegerAttr.get(i64, d) for d in group])
                          for group in groups])


def dim_positions(affine_map) -> list:
    """The loop dim each result of the map reads, None for a result that is not a
    plain dim (a constant, a sum)."""
    return [e.position if isinstance(e, AffineDimExpr) else None for e in affine_map.results]


def dims_read(expr) -> set[int]:
    """The loop dims an affine expression reads."""
    if isinstance(expr, AffineDimExpr):
        return {expr.position}
    if isinstance(expr, AffineBinaryExpr):
        return dims_read(expr.lhs) | dims_read(expr.rhs)
    return set()


def is_identity_map(affine_map, skipped: frozenset[int] = frozenset()) -> bool:
    """The map reads every loop dim but the `skipped` ones, in order."""
    return dim_positions(affine_map) == [d for d in range(affine_map.n_dims)
                                         if d not in skipped]


def combining_op(reduction):
    """The op whose result a linalg.generic reduction's body yields, the one that
    combines each value with the accumulator (None: the body yields a block argument)."""
    body = list(reduction.regions[0].blocks[0].operations)
    return operation_of(body[-1].operation.operands[0].owner)


def sole_cast(generic) -> str | None:
    """The op name of the one cast (arith.extf, arith.truncf, ...) that the body of the
    linalg.generic `generic` applies to its first input and yields, else None."""
    block = generic.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    if len(body) != 2 or len(body[0].operands) != 1 or body[0].operands[0] != block.arguments[0] \
            or list(body[1].operands) != [body[0].results[0]]:
        return None
    return body[0].name


def mixed_values(op, attributes: tuple[str, ...], first_operand: int) -> list[list]:
    """MLIR's mixed static/dynamic lists of `op` (static_offsets, static_low, ...): per
    attribute, its entries with each dynamic one (the kDynamic marker) replaced by the
    op's next operand; the dynamic operands start at `first_operand`, in attribute
    order. Entries are ints or Values."""
    dynamic = ShapedType.get_dynamic_size()  # the same marker as for offsets and strides
    operands = iter(list(op.operands)[first_operand:])
    return [[next(operands) if entry == dynamic else entry
             for entry in DenseI64ArrayAttr(op.attributes[attribute])]
            for attribute in attributes]


def values_read_from_above(op) -> list:
    """The values that ops nested in `op` read but `op` does not define (a tkern.kernel
    is not isolated from above: its body reads main's values directly)."""
    inside, read = set(), []

    def visit(nested):
        inside.update(nested.results)
        for region in nested.regions:
            for block in region.blocks:
                inside.update(block.arguments)
        read.extend(nested.operands)
        return WalkResult.ADVANCE
    op.walk(visit)
    return [value for value in read if value not in inside]


def defined_functions(module, kind: str = "func.func") -> list:
    """The top-level functions of `module` (an Operation) of op `kind` (func.func or
    llvm.func) that have a body, as Operations; declarations are left out."""
    return [op.operation for op in module.regions[0].blocks[0].operations
            if op.operation.name == kind and op.operation.regions[0].blocks]


def function_named(module: Module, name: str):
    """The top-level func.func called `name`, as its OpView (`.type`, `.regions`)."""
    return next(op for op in module.body.operations
                if op.operation.name == "func.func"
                and StringAttr(op.operation.attributes["sym_name"]).value == name)


def parse_module(text: str | bytes) -> Module:
    """Parse `text` (or MLIR bytecode) in the shared context (raises MLIRError with
    line:col diagnostics)."""
    with context():
        return Module.parse(text)


def to_bytecode(module: Module) -> bytes:
    """`module` as MLIR bytecode: locations included, and several times faster to write
    and parse than text (the compile worker's IR travels this way)."""
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()

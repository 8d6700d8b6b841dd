"""Dynamic sizes on the Triton target: what a `?` in a tensor type is, at run time.

A kernel takes each dynamic extent it needs as an int parameter, and the host program
passes it. Both sides must agree on what the extent is, so every `?` is traced back
through the IR that produced its tensor (tensor.empty sizes, slices, reshapes, loop
and kernel results) to a *root* that the host can compute:

    ("dim", argument, d)       dim d of a graph input (`x.shape[d]`)
    ("value", v)               an index or integer value of `main`: a symbolic size the
                               graph takes as an input (`s0`), or one that the host
                               program computes (torch-mlir's view lowering infers a
                               -1 size with arith ops)
    ("product", (a, b, ...))   the product of other roots and static ints
    ("sum", (a, b, ...))       their sum (a padded size)

Roots are plain tuples of MLIR values and ints, so two `?` that trace to the same root
compare equal.
"""

from __future__ import annotations

import math

from tessel import ir
from tessel.errors import TesselError

Root = tuple
Extent = int | Root


class UnknownSize(TesselError):
    """A dynamic extent whose producer this module cannot trace (the kernel is then
    unsupported, and the graph runs eagerly around it)."""


def shape(value: ir.Value) -> list[Extent]:
    """Each dim of a ranked tensor value: its static size or its root."""
    return [extent(value, d) for d in range(ir.ShapedType(value.type).rank)]


def extent(value: ir.Value, dim: int) -> Extent:
    """Dim `dim` of `value`: an int, or the root it traces back to."""
    shaped = ir.ShapedType(value.type)
    if not shaped.is_dynamic_dim(dim):
        return shaped.get_dim_size(dim)
    owner = ir.operation_of(value.owner)
    if owner is None:
        return _argument_extent(value, dim)
    name = owner.name
    if name == "tensor.empty":
        dynamic = [d for d in range(shaped.rank) if shaped.is_dynamic_dim(d)]
        return index_root(owner.operands[dynamic.index(dim)])
    if name == "tensor.cast":
        return extent(owner.operands[0], dim)
    if name == "tensor.extract_slice":
        return _slice_extent(owner, dim)
    if name == "tensor.collapse_shape":
        group = ir.reassociation(owner)[dim]
        return _product([extent(owner.operands[0], d) for d in group])
    if name == "tensor.concat":
        if dim != ir.IntegerAttr(owner.attributes["dim"]).value:
            return extent(owner.operands[0], dim)
        return _sum([extent(piece, dim) for piece in owner.operands])
    if name == "tensor.pad":
        low, high = ir.mixed_values(owner, ("static_low", "static_high"), 1)
        return _sum([extent(owner.operands[0], dim), _root(low[dim]), _root(high[dim])])
    if name == "tensor.reshape":
        shape_owner = ir.operation_of(owner.operands[1].owner)
        if shape_owner is None or shape_owner.name != "tensor.from_elements":
            raise UnknownSize("a reshape to a computed shape tensor")
        return index_root(shape_owner.operands[dim])
    if name == "tensor.expand_shape":
        (output_shape,) = ir.mixed_values(owner, ("static_output_shape",), 1)
        return _root(output_shape[dim])
    position = list(owner.results).index(value)
    if name in ("tkern.kernel", "tkern.library_call"):
        body = owner.regions[0].blocks[0]
        terminator = list(body.operations)[-1]
        return extent(terminator.operands[position], dim)
    if name == "scf.forall" or "linalg." in name:
        # Destination-passing: a result has its init's shape.
        inits = list(owner.operands)[len(owner.operands) - len(owner.results):]
        return extent(inits[position], dim)
    raise UnknownSize(f"a dynamic size produced by {name}")


def _argument_extent(value: ir.Value, dim: int) -> Extent:
    block = value.owner
    parent = block.owner.operation
    if parent.name == "func.func":
        return ("dim", value, dim)
    if parent.name == "scf.forall":
        # A shared output: the loop's init for it.
        arguments = list(block.arguments)
        outputs = len(parent.results)
        position = arguments.index(value) - (len(arguments) - outputs)
        inits = list(parent.operands)[len(parent.operands) - outputs:]
        return extent(inits[position], dim)
    raise UnknownSize(f"a dynamic size of a {parent.name} argument")


def _slice_extent(op: ir.Operation, dim: int) -> Extent:
    _, sizes, _ = ir.mixed_values(op, ("static_offsets", "static_sizes", "static_strides"), 1)
    kept = _kept_dims(sizes, ir.ShapedType(op.results[0].type))
    return _root(sizes[kept[dim]])


def _kept_dims(sizes: list, result: ir.ShapedType) -> list[int]:
    """The slice dims (sizes: ints, or Values where dynamic) that a (possibly
    rank-reducing) slice's result keeps, in order: a rank-reducing slice drops unit
    dims, matched from the left."""
    kept = []
    for d, size in enumerate(sizes):
        if len(kept) < result.rank and (not isinstance(size, int)
                                        if result.is_dynamic_dim(len(kept))
                                        else size == result.shape[len(kept)]):
            kept.append(d)
        elif size != 1:
            raise UnknownSize("a slice that drops a dim of size other than 1")
    if len(kept) != result.rank:
        raise UnknownSize("a slice whose result does not match its sizes")
    return kept


def _root(entry: int | ir.Value) -> Extent:
    """An entry of ir.mixed_values as an extent."""
    return entry if isinstance(entry, int) else index_root(entry)


def index_root(value: ir.Value) -> Extent:
    """The root of an index value that a size operand holds: traced to the inputs where
    this module can (so that equal sizes compare equal), else the value itself when
    `main` computes it (the host program then computes it too)."""
    try:
        return _traced_root(value)
    except UnknownSize:
        owner = ir.operation_of(value.owner)
        defining = owner.parent if owner is not None else value.owner.owner
        if defining is not None and defining.operation.name == "func.func":
            return ("value", value)
        raise


def _traced_root(value: ir.Value) -> Extent:
    owner = ir.operation_of(value.owner)
    if owner is None:
        raise UnknownSize("a size that is a block argument")
    if owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    if owner.name == "tensor.dim":
        index = ir.operation_of(owner.operands[1].owner)
        if index is None or index.name != "arith.constant":
            raise UnknownSize("tensor.dim of a computed dim")
        return extent(owner.operands[0], ir.IntegerAttr(index.attributes["value"]).value)
    if owner.name == "arith.index_cast":
        return index_root(owner.operands[0])
    if owner.name == "arith.muli":
        return _product([index_root(v) for v in owner.operands])
    if owner.name == "affine.apply":
        affine_map = ir.AffineMapAttr(owner.attributes["map"]).value
        (expr,) = affine_map.results
        return _affine_root(expr, list(owner.operands), affine_map.n_dims)
    raise UnknownSize(f"a size computed by {owner.name}")


def _affine_root(expr, operands: list[ir.Value], n_dims: int) -> Extent:
    """A size written as an affine expression of sums and products (a collapsed or
    padded shape's size); `operands` are the map's dims, then its symbols."""
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return index_root(operands[expr.position])
    if isinstance(expr, ir.AffineSymbolExpr):
        return index_root(operands[n_dims + expr.position])
    if isinstance(expr, (ir.AffineMulExpr, ir.AffineAddExpr)):
        combine = _product if isinstance(expr, ir.AffineMulExpr) else _sum
        return combine([_affine_root(expr.lhs, operands, n_dims),
                        _affine_root(expr.rhs, operands, n_dims)])
    raise UnknownSize(f"a size computed as {expr}")


def _product(extents: list[Extent]) -> Extent:
    """The product of extents: an int when all are static, else one root."""
    static = math.prod(e for e in extents if isinstance(e, int))
    roots = []
    for e in extents:
        if isinstance(e, tuple):
            roots += list(e[1]) if e[0] == "product" else [e]
    if not roots:
        return static
    if static == 1 and len(roots) == 1:
        return roots[0]
    return ("product", tuple(roots) + ((static,) if static != 1 else ()))


def _sum(extents: list[Extent]) -> Extent:
    """The sum of extents (a padded or concatenated size): an int, or one root."""
    static = sum(e for e in extents if isinstance(e, int))
    roots = [e for e in extents if isinstance(e, tuple)]
    if not roots:
        return static
    if static == 0 and len(roots) == 1:
        return roots[0]
    return ("sum", tuple(roots) + ((static,) if static else ()))


def is_static(extents: list[Extent]) -> bool:
    return all(isinstance(e, int) for e in extents)


def host_expression(extent_: Extent, name_of) -> str:
    """Python for `extent_` in a host program; `name_of` names main's values."""
    if isinstance(extent_, int):
        return str(extent_)
    kind = extent_[0]
    if kind == "dim":
        return f"{name_of(extent_[1])}.shape[{extent_[2]}]"
    if kind == "value":
        return name_of(extent_[1])
    operator = " * " if kind == "product" else " + "
    return "(" + operator.join(host_expression(part, name_of) for part in extent_[1]) + ")"

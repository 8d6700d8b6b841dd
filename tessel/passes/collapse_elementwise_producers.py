from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg
from torch_mlir.dialects import tensor as tensor_dialect

from tessel import ir
from tessel.passes.fuse_returned_producers import elementwise
from tessel.passes.registry import ModulePass, register


def _operand_groups(affine_map: ir.AffineMap, groups: list[list[int]]) -> list[tuple[int, list[int]]] | None:
    """For an input read through `affine_map`, the loop groups it reads, each as (the
    group's index, the operand dims it spans), in the operand's order; None where the
    operand reads a group in part, out of order, or through other than plain dims (it
    cannot be collapsed as the loops are)."""
    positions = ir.dim_positions(affine_map)
    if None in positions:
        return None
    group_of = {dim: index for index, group in enumerate(groups) for dim in group}
    spans, at = [], 0
    while at < len(positions):
        index = group_of[positions[at]]
        group = groups[index]
        if positions[at:at + len(group)] != group:
            return None
        spans.append((index, list(range(at, at + len(group)))))
        at += len(group)
    return spans


def _collapsed(value: ir.Value, spans: list[list[int]]) -> ir.Value:
    """`value` with each span of its dims joined into one: the source of an
    expand_shape that split exactly those (the reshape undone), else a collapse_shape."""
    tensor = ir.RankedTensorType(value.type)
    if all(len(span) == 1 for span in spans):
        return value
    owner = ir.operation_of(value.owner)
    if owner is not None and owner.name == "tensor.expand_shape" and ir.reassociation(owner) == spans:
        return owner.operands[0]
    shape = [math.prod(tensor.shape[d] for d in span) for span in spans]
    if owner is not None and owner.name == "tensor.empty":
        # The host allocates an empty tensor; a reshape of one it cannot.
        return tensor_dialect.EmptyOp(shape, tensor.element_type).result
    return ir.Operation.create(
        "tensor.collapse_shape",
        results=[ir.RankedTensorType.get(shape, tensor.element_type)], operands=[value],
        attributes={"reassociation": ir.reassociation_attr(spans)}).results[0]


def _collapse(producer: ir.Operation, reshapes: list[ir.Operation]) -> bool:
    """`producer` computed at the shape its `reshapes` (collapse_shapes alike) collapse
    its result to, if every input can be read so; its other readers read that value
    expanded back. False (nothing changed) otherwise."""
    groups = ir.reassociation(reshapes[0])
    if not groups:
        return False  # to 0-d: a tensor of one element, no loops to collapse into
    maps = ir.indexing_maps(producer)
    inputs = list(producer.operands)[:-1]
    reads = [_operand_groups(m, groups) for m in maps[:-1]]
    if None in reads:
        return False
    rank = len(groups)
    result = producer.results[0]
    with ir.InsertionPoint(producer), producer.location:
        operands = [_collapsed(value, [span for _, span in spans])
                    for value, spans in zip(inputs, reads)]
        init = _collapsed(producer.operands[len(inputs)], groups)
        new_maps = [ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(index) for index, _ in spans])
                    for spans in reads] + [ir.AffineMap.get_identity(rank)]
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        collapsed = linalg.GenericOp(
            [reshapes[0].results[0].type], operands, [init],
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
            ir.ArrayAttr.get([parallel] * rank)).operation
    producer.regions[0].blocks[0].append_to(collapsed.regions[0])
    for reshape in reshapes:
        reshape.results[0].replace_all_uses_with(collapsed.results[0])
        reshape.erase()
    for use in list(result.uses):
        # Placed at its reader, after the kernel that may come to write the value (a
        # norm's row kernel writing the sum it normalizes, for the readers after it).
        reader = ir.operation_of(use.owner)
        # A gather reads it inside a generic's body: the view goes before that generic.
        at = reader
        while at.parent is not None and at.parent != producer.parent:
            at = at.parent
        with ir.InsertionPoint(at), reader.location:
            reader.operands[use.operand_number] = ir.Operation.create(
                "tensor.expand_shape", results=[result.type], operands=[collapsed.results[0]],
                attributes={"reassociation": ir.reassociation_attr(groups),
                            "static_output_shape": ir.DenseI64ArrayAttr.get(
                                ir.RankedTensorType(result.type).shape)}).results[0]
    producer.erase()
    return True


def _collapses(producer: ir.Operation) -> list[ir.Operation]:
    """The collapse_shapes of `producer`'s result, if there are some and all join the
    same dims; else none."""
    readers = [ir.operation_of(use.owner) for use in producer.results[0].uses]
    collapses = [r for r in readers if r is not None and r.name == "tensor.collapse_shape"]
    if not collapses or any(ir.reassociation(c) != ir.reassociation(collapses[0]) for c in collapses):
        return []
    return list({c: None for c in collapses})


def _reads_indices(producer: ir.Operation) -> bool:
    return bool(ir.ops_where(producer, lambda op: op.name == "linalg.index"))


@register
@dataclass(frozen=True)
class CollapseElementwiseProducersPass(ModulePass):
    """collapse-elementwise-producers: an element-wise generic read through a
    collapse_shape computes its points at the collapsed shape instead (its readers of
    the uncollapsed shape read an expand_shape of that, a view).

    A reshape between two generics keeps them apart: neither elementwise fusion nor
    fuse-tiles looks through it. OPT flattens each layer's residual sum to (tokens,
    hidden) before its layer norm and its next residual add both read it; computed at
    (batch, tokens, hidden), the sum stayed a kernel of its own, written and read back
    by the norm, where computed flat it joins the norm's kernel, which also writes it
    for the add (fuse-tiles' yields for later users): two kernels a layer fewer.
    linalg-fuse-elementwise-ops folds a reshape into its reader by expanding the
    reader's loops, but not into a reduction's (a norm's), nor where the reshape has
    several readers; collapsing the producer instead moves the reshape up to its inputs,
    where it undoes the expand_shape that made them, or stays a view.
    """

    name: ClassVar[str] = "collapse-elementwise-producers"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        with module.context:
            # Last first: a producer collapsed reads its inputs through new collapses,
            # which may collapse the producers of those in turn.
            for producer in reversed(generics):
                if not elementwise(producer) or len(producer.results) != 1:
                    continue
                reshapes = _collapses(producer)
                if not reshapes or _reads_indices(producer) or not ir.RankedTensorType(
                        producer.results[0].type).has_static_shape:
                    continue
                _collapse(producer, reshapes)

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import tensor

from tessel import ir
from tessel.passes.registry import ModulePass, register

# Ops that cost several multiplies a point (a division, a square root, a polynomial):
# worth a small loop nest of their own when their operands are broadcast.
_COSTLY = ("arith.divf", "arith.remf")


def _costly(op: ir.Operation) -> bool:
    return op.name in _COSTLY or op.name.startswith("math.")


def _broadcast_groups(generic: ir.Operation, inputs: int) -> dict[str, list[int]]:
    """The generic's input block arguments that read a broadcast operand (a projection
    of the loop dims onto fewer of them: a batch norm's [C] statistics over [N, H, W, C]),
    grouped by their indexing map."""
    maps = ir.indexing_maps(generic)
    parallel = {d for d, i in enumerate(ir.ArrayAttr(generic.attributes["iterator_types"]))
                if "parallel" in str(i)}
    groups: dict[str, list[int]] = defaultdict(list)
    for number in range(inputs):
        affine_map = maps[number]
        positions = ir.dim_positions(affine_map)
        # Over parallel dims only: a window's or a reduction's dims would repeat the
        # value at every step of the window.
        if affine_map.is_projected_permutation and 0 < len(positions) < affine_map.n_dims \
                and set(positions) <= parallel and \
                ir.ShapedType(generic.operands[number].type).has_static_shape:
            groups[str(affine_map)].append(number)
    return groups


def _invariant_ops(generic: ir.Operation, arguments: set) -> list[ir.Operation]:
    """The body's ops computed from `arguments`, values from above and constants alone."""
    invariant, values = [], set(arguments)
    above = set(ir.values_read_from_above(generic))
    for op in generic.regions[0].blocks[0].operations:
        op = op.operation
        if op.name in ("linalg.yield", "linalg.index") or len(op.regions) or \
                len(op.results) != 1:
            continue
        if all(operand in values or operand in above for operand in op.operands):
            invariant.append(op)
            values.add(op.results[0])
    return invariant


def _read_elsewhere(value: ir.Value, values: set) -> bool:
    """Whether an op that does not compute one of `values` reads `value`."""
    return any(len(ir.operation_of(use.owner).results) != 1
               or ir.operation_of(use.owner).results[0] not in values for use in value.uses)


def _hoisted(invariant: list[ir.Operation]) -> tuple[list[ir.Operation], list[ir.Value]]:
    """The invariant ops worth computing apart (the costly ones and what they read) and
    the values of costly ops that the rest of the body reads: the new loop's results."""
    cone: set = set()
    for op in reversed(invariant):
        if _costly(op) or op.results[0] in cone:
            cone.update(operand for operand in op.operands)
            cone.add(op.results[0])
    chosen = [op for op in invariant if op.results[0] in cone]
    inside = {op.results[0] for op in chosen}
    results = [op.results[0] for op in chosen
               if _costly(op) and _read_elsewhere(op.results[0], inside)]
    return chosen, results


@register
@dataclass(frozen=True)
class HoistBroadcastInvariantsPass(ModulePass):
    """hoist-broadcast-invariants: compute once per element of a broadcast operand what
    a loop nest computes from such operands alone, where that is a division, a square
    root or another math function.

    An inference batch norm's scale, 1 / sqrt(var + eps), depends on the channel alone,
    yet the element-wise loop over [N, H, W, C] that applies it (with its activation)
    computes it at every point: a square root and a division a point, the costliest
    ops of the loop on the CPU. The values move to a loop nest over the broadcast
    operand's own dims (C points) whose results the big loop reads through the same
    map. Runs after fusion, which would fuse such a producer back in.
    """

    name: ClassVar[str] = "hoist-broadcast-invariants"

    def run(self, module: ir.Operation) -> None:
        generics = ir.ops_where(module, lambda op: op.name == "linalg.generic")
        for generic in generics:
            if len(generic.results):
                self._hoist_from(generic)

    def _hoist_from(self, generic: ir.Operation) -> None:
        inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
        maps = ir.indexing_maps(generic)
        # Rebuilding appends inputs: the groups' argument numbers stay valid.
        for numbers in _broadcast_groups(generic, inputs).values():
            block = generic.regions[0].blocks[0]
            arguments = {block.arguments[n]: n for n in numbers}
            chosen, results = _hoisted(_invariant_ops(generic, set(arguments)))
            if results:
                values = self._loop_nest(generic, chosen, results, arguments)
                generic = self._reading(generic, results, values, maps[numbers[0]])

    @staticmethod
    def _loop_nest(generic: ir.Operation, chosen: list[ir.Operation], results: list,
                   arguments: dict) -> list[ir.Value]:
        """A generic over the broadcast operands' dims computing `chosen`; its results
        stand for `results`."""
        read = sorted({n for op in chosen for operand in op.operands
                       if (n := arguments.get(operand)) is not None})
        operands = [generic.operands[n] for n in read]
        shape = ir.ShapedType(generic.operands[next(iter(arguments.values()))].type).shape
        rank = len(shape)
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        with generic.location, ir.InsertionPoint(generic):
            empties = [tensor.EmptyOp(shape, value.type).result for value in results]
            segments = [len(read), len(empties)]
            nest = ir.Operation.create(
                "linalg.generic",
                results=[e.type for e in empties], operands=operands + empties,
                attributes={"indexing_maps": ir.ArrayAttr.get([identity] * sum(segments)),
                            "iterator_types": ir.ArrayAttr.get([parallel] * rank),
                            "operandSegmentSizes": ir.DenseI32ArrayAttr.get(segments)},
                regions=1)
            body = nest.regions[0].blocks.append(
                *[ir.ShapedType(o.type).element_type for o in operands], *[v.type for v in results])
        mapping = {generic.regions[0].blocks[0].arguments[n]: body.arguments[i]
                   for i, n in enumerate(read)}
        with generic.location, ir.InsertionPoint(body):
            for op in chosen:
                clone = op.clone()
                for index, operand in enumerate(clone.operands):
                    if operand in mapping:
                        clone.operands[index] = mapping[operand]
                mapping[op.results[0]] = clone.results[0]
            ir.Operation.create("linalg.yield", operands=[mapping[v] for v in results])
        return list(nest.results)

    @staticmethod
    def _reading(generic: ir.Operation, results: list, values: list, affine_map
                 ) -> ir.Operation:
        """`generic` rebuilt with `values` as inputs read through `affine_map`, its
        body reading them where it computed `results`; the ops left unused go."""
        sizes = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])
        inputs, outputs = sizes[0], sizes[1]
        maps = list(ir.ArrayAttr(generic.attributes["indexing_maps"]))
        operands = list(generic.operands)
        new_maps = maps[:inputs] + [ir.AffineMapAttr.get(affine_map)] * len(values) + \
            maps[inputs:]
        with generic.location, ir.InsertionPoint(generic):
            rebuilt = ir.Operation.create(
                "linalg.generic", results=[r.type for r in generic.results],
                operands=operands[:inputs] + values + operands[inputs:],
                attributes={"indexing_maps": ir.ArrayAttr.get(new_maps),
                            "iterator_types": generic.attributes["iterator_types"],
                            "operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                                [inputs + len(values), outputs])},
                regions=1)
            old_block = generic.regions[0].blocks[0]
            types = [a.type for a in old_block.arguments]
            body = rebuilt.regions[0].blocks.append(
                *types[:inputs], *[v.type for v in results], *types[inputs:])
        old_arguments = list(old_block.arguments)
        new_arguments = list(body.arguments)
        for old, new in zip(old_arguments[:inputs], new_arguments[:inputs]):
            old.replace_all_uses_with(new)
        for old, new in zip(old_arguments[inputs:], new_arguments[inputs + len(values):]):
            old.replace_all_uses_with(new)
        for value, argument in zip(results, new_arguments[inputs:inputs + len(values)]):
            value.replace_all_uses_with(argument)
        for inner in list(old_block.operations):
            body.append(inner.operation)
        for inner in reversed(list(body.operations)):
            inner = inner.operation
            if inner.name != "linalg.yield" and len(inner.results) == 1 and \
                    not list(inner.results[0].uses) and not len(inner.regions):
                inner.erase()
        for old, new in zip(generic.results, rebuilt.results):
            old.replace_all_uses_with(new)
        generic.erase()
        return rebuilt

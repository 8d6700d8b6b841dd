from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import linalg

from tessel import ir
from tessel.passes.registry import ModulePass, register


def elementwise(op: ir.Operation) -> bool:
    """A linalg.generic of parallel loops whose results are written at their points."""
    if op.name != "linalg.generic":
        return False
    maps = ir.indexing_maps(op)
    outputs = maps[len(maps) - len(op.results):]
    return ir.all_parallel(op) and all(
        ir.is_identity_map(m) for m in outputs)


def _reads(op: ir.Operation | None, operand: int) -> bool:
    """Whether `op` reads its operand `operand`: a linalg.generic whose body leaves the
    operand's block argument unused does not (torch-mlir's checks of a divisor read only
    the divisor, beside the tensor it divides)."""
    if op is None or op.name != "linalg.generic":
        return True
    return any(True for _ in op.regions[0].blocks[0].arguments[operand].uses)


def _unread(producer: ir.Operation) -> None:
    """Uses of `producer`'s result that do not read it read its init instead (a tensor
    of the same type, defined before it): the fused generic that replaces the result
    comes after them."""
    init = producer.operands[len(producer.operands) - 1]
    for use in list(producer.results[0].uses):
        owner = ir.operation_of(use.owner)
        if owner is not None and owner.name != "func.return" and not _reads(
                owner, use.operand_number):
            owner.operands[use.operand_number] = init


def _only_returned(value: ir.Value) -> bool:
    return all(getattr(ir.operation_of(use.owner), "name", None) == "func.return"
               for use in value.uses)


def _fusable(producer: ir.Operation):
    """(consumer, operand index) where `producer` fuses into its one element-wise reader,
    its other users all returning its result; else None."""
    if not elementwise(producer) or len(producer.results) != 1:
        return None
    block = producer.regions[0].blocks[0]
    if any(True for _ in block.arguments[len(block.arguments) - 1].uses):
        return None  # reads its own init: not a pure element-wise value
    readers, returns = [], 0
    for use in producer.results[0].uses:
        owner = ir.operation_of(use.owner)
        if owner is not None and owner.name == "func.return":
            returns += 1
        elif not _reads(owner, use.operand_number):
            continue
        else:
            readers.append((owner, use.operand_number))
    if returns == 0 or len(readers) != 1:
        return None
    consumer, operand = readers[0]
    if consumer is None or not elementwise(consumer) or consumer.parent != producer.parent:
        return None
    if not all(_only_returned(result) for result in consumer.results):
        return None  # a reader that feeds further work: kept for the row fusion after
    inputs = len(consumer.operands) - len(consumer.results)
    maps = ir.indexing_maps(consumer)
    if operand >= inputs or not ir.is_identity_map(maps[operand]) or (
            maps[operand].n_dims != ir.indexing_maps(producer)[-1].n_dims):
        return None
    return consumer, operand


def clone_body(ops, mapping: dict) -> list:
    """Clones of `ops` (a block's operations) at the insertion point, their operands
    read through `mapping`, which learns their results."""
    for op in ops:
        clone = op.operation.clone()
        for index, operand in enumerate(clone.operands):
            if operand in mapping:
                clone.operands[index] = mapping[operand]
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
    return mapping


def _fuse(consumer: ir.Operation, producers: dict[int, ir.Operation]) -> None:
    """One generic for `consumer` and the `producers` of its inputs (by operand index):
    their inputs, then the consumer's other inputs; the consumer's inits, then theirs;
    the producers' bodies first, the consumer's reading their values."""
    consumer_inputs = len(consumer.operands) - len(consumer.results)
    consumer_maps = ir.indexing_maps(consumer)
    kept = [i for i in range(consumer_inputs) if i not in producers]
    consumer_block = consumer.regions[0].blocks[0]
    inputs = [consumer.operands[i] for i in kept]
    maps = [consumer_maps[i] for i in kept]
    arguments = [consumer_block.arguments[i] for i in kept]
    outputs = list(consumer.operands[consumer_inputs:])
    output_maps = consumer_maps[consumer_inputs:]
    output_arguments = list(consumer_block.arguments)[consumer_inputs:]
    for producer in producers.values():
        _unread(producer)
        count = len(producer.operands) - 1
        producer_maps = ir.indexing_maps(producer)
        producer_block = producer.regions[0].blocks[0]
        inputs += list(producer.operands[:count])
        maps += producer_maps[:count]
        arguments += list(producer_block.arguments)[:count]
        outputs.append(producer.operands[count])
        output_maps.append(producer_maps[count])
        output_arguments.append(producer_block.arguments[count])
    types = [r.type for r in consumer.results] + [p.results[0].type for p in producers.values()]
    with ir.InsertionPoint(consumer), consumer.location:
        fused = linalg.GenericOp(
            types, inputs, outputs,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps + output_maps]),
            consumer.attributes["iterator_types"]).operation
    every_argument = arguments + output_arguments
    block = fused.regions[0].blocks.append(*[a.type for a in every_argument])
    mapping = dict(zip(every_argument, block.arguments))
    produced = []
    with ir.InsertionPoint(block):
        for operand, producer in producers.items():
            body = list(producer.regions[0].blocks[0].operations)
            clone_body(body[:-1], mapping)
            value = body[-1].operands[0]
            mapping[consumer_block.arguments[operand]] = mapping.get(value, value)
            produced.append(mapping[consumer_block.arguments[operand]])
        body = list(consumer_block.operations)
        clone_body(body[:-1], mapping)
        linalg.YieldOp([mapping.get(v, v) for v in body[-1].operands] + produced)
    results = list(fused.results)
    for old, new in zip(consumer.results, results):
        old.replace_all_uses_with(new)
    for producer, new in zip(producers.values(), results[len(consumer.results):]):
        producer.results[0].replace_all_uses_with(new)
    consumer.erase()
    for producer in producers.values():
        producer.erase()


@register
@dataclass(frozen=True)
class FuseReturnedProducersPass(ModulePass):
    """fuse-returned-producers: fuse an element-wise producer whose result is also
    returned into its one element-wise reader, which then yields it too.

    Upstream element-wise fusion only fuses producers of one use. An optimizer step
    returns every state it updates (Adam's averages, SGD's momentum) and reads it again
    for the parameter's update, which it returns too: each state's update was its own loop nest (a kernel
    launch on the GPU), its result written to memory and read back by the parameter's.
    Fused, one loop nest writes both (Adam: 4 kernels per parameter -> 2). The producer
    must compute its values at its points alone (no read of its init, identity result
    map) and the reader read them there (identity map, same loops): nothing computes
    twice. Only a reader whose results are only returned takes its producers: one that
    feeds further work stays one result for the row fusion after (fuse-tiles fuses
    producers of one result).
    """

    name: ClassVar[str] = "fuse-returned-producers"

    def run(self, module: ir.Operation) -> None:
        with module.context, ir.Location.unknown():
            for function in ir.defined_functions(module):
                # Lists compared by ==: the bindings hand out a new Python object per
                # lookup of an op, and equal ones need not hash alike.
                groups: list[tuple[ir.Operation, dict[int, ir.Operation]]] = []
                for op in function.regions[0].blocks[0].operations:
                    found = _fusable(op.operation)
                    if found is None:
                        continue
                    consumer, operand = found
                    group = next((g for c, g in groups if c == consumer), None)
                    if group is None:
                        groups.append((consumer, group := {}))
                    group[operand] = op.operation
                # A consumer that is itself a producer here fuses in a later run of the pass.
                producers = [p for _, group in groups for p in group.values()]
                ready = [(c, group) for c, group in groups if c not in producers]
                for consumer, group in ready:
                    _fuse(consumer, group)

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.contractions import adds_updates, is_zero_fill, yields_sum_of
from tessel.passes.registry import ModulePass, register


def _zero(value: ir.Value) -> bool:
    """A tensor of zeros: a zero fill, or a zero splat constant."""
    owner = ir.operation_of(value.owner)
    if owner is not None and owner.name == "arith.constant":
        attribute = ir.DenseElementsAttr(owner.attributes["value"])
        return attribute.is_splat and isinstance(attribute.get_splat_value(), ir.FloatAttr) \
            and ir.FloatAttr(attribute.get_splat_value()).value == 0.0
    return is_zero_fill(value)


def _sum_of(generic: ir.Operation) -> bool:
    """Whether `generic` adds its two inputs point by point: identity maps, parallel
    loops, a body of one addf of its two inputs."""
    if generic.name != "linalg.generic" or len(generic.operands) != 3 or len(generic.results) != 1:
        return False
    if not all(ir.is_identity_map(m) for m in ir.indexing_maps(generic)):
        return False
    block = generic.regions[0].blocks[0]
    return yields_sum_of(block, list(block.arguments)[:2], ("arith.addf",))


@register
@dataclass(frozen=True)
class ScatterOntoAddendsPass(ModulePass):
    """scatter-onto-addends: a scatter that adds its updates into zeros, whose sum with
    another tensor is all that reads it, adds them onto that tensor instead.

    A tied embedding's gradient is two: the LM head's gemm writes one, and the
    embedding's backward scatters each token's row into a [vocabulary, dims] tensor of
    zeros; autograd adds them. T5 shares its embedding three ways, so its backward
    filled two such tensors with zeros and added each to the running sum, reading and
    writing the whole table each time (BERT's on the CPU: a 12 ms add and a 94 MB fill
    for 256 rows of updates). The rows now scatter onto the gemm's gradient: summed in
    another order than eager's, which adds them up first.
    """

    name: ClassVar[str] = "scatter-onto-addends"

    def run(self, module: ir.Operation) -> None:
        scatters = ir.ops_where(module, lambda op: op.name == "tm_tensor.scatter")
        for scatter in scatters:
            self._onto_addend(scatter)

    @staticmethod
    def _onto_addend(scatter: ir.Operation) -> None:
        result = scatter.results[0]
        uses = list(result.uses)
        if not adds_updates(scatter) or not _zero(scatter.operands[2]) or len(uses) != 1:
            return
        generic = ir.operation_of(uses[0].owner)
        if generic is None or not _sum_of(generic) or uses[0].operand_number > 1:
            return
        addend = generic.operands[1 - uses[0].operand_number]
        if addend.type != result.type or addend == result:
            return
        scatter.operands[2] = addend
        # The scatter runs where the sum did: after the addend is computed.
        scatter.move_before(generic)
        generic.results[0].replace_all_uses_with(result)
        generic.erase()

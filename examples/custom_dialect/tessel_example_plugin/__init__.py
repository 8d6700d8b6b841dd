"""An example tessel plugin: a dialect and a pass, added without editing tessel.

Installed (`pip install -e examples/custom_dialect`), it registers through the
`tessel.plugins` entry point group; tessel calls `register()` the first time it
looks up a pass or pipeline, so `tessel-opt` and `options={"pipeline": ...}` see it.

    tessel-opt --list-passes                  # shows count-flops
    tessel-opt model.mlir -p count-flops      # annotates every function
"""

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.registry import ModulePass, register, register_pipeline

Dialect, Operand, Result, result = ir.ext.Dialect, ir.ext.Operand, ir.ext.Result, ir.ext.result


class Stats(Dialect, name="stats"):
    """A one-op dialect: `stats.flops` records an op count estimate in the IR."""


class FlopsOp(Stats.Operation, name="flops"):
    count: ir.IntegerAttr
    label: ir.StringAttr


def _loop_extent(op: ir.Operation) -> int | None:
    """Iterations of a static linalg op's loop nest (product of its operand dims)."""
    extents = {}
    for affine_map, value in zip(op.attributes["indexing_maps"], op.operands):
        if not isinstance(value.type, ir.ShapedType) or not value.type.has_static_shape:
            continue
        for expr, size in zip(ir.AffineMapAttr(affine_map).value.results, value.type.shape):
            if isinstance(expr, ir.AffineDimExpr):
                extents[expr.position] = size
    total = 1
    for size in extents.values():
        total *= size
    return total if extents else None


@dataclass(frozen=True)
class CountFlopsPass(ModulePass):
    """count-flops: add a stats.flops op per function (arith ops x loop iterations)."""

    name: ClassVar[str] = "count-flops"
    per_op: int = 1  # count-flops{per-op=2} counts each arith op as 2 flops

    def run(self, module: ir.Operation) -> None:
        for function in module.regions[0].blocks[0].operations:
            if function.operation.name != "func.func" or not function.regions[0].blocks:
                continue
            flops = 0
            for generic in ir.ops_where(function.operation, lambda op: op.name == "linalg.generic"):
                body_ops = [o for o in generic.regions[0].blocks[0].operations
                            if o.operation.name.startswith(("arith.", "math."))]
                flops += self.per_op * len(body_ops) * (_loop_extent(generic) or 0)
            block = function.regions[0].blocks[0]
            with module.context, ir.Location.unknown(), ir.InsertionPoint.at_block_begin(block):
                name = ir.StringAttr(function.operation.attributes["sym_name"]).value
                ir.Operation.create("stats.flops", attributes={
                    "count": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), flops),
                    "label": ir.StringAttr.get(name)})


@dataclass(frozen=True)
class ReportFlopsPass(ModulePass):
    """report-flops: move each stats.flops count onto its function as an attribute.

    Targets accept no stats ops (their input contract), but a function attribute
    survives lowering: the count shows up in the final LLVM-dialect dump.
    """

    name: ClassVar[str] = "report-flops"

    def run(self, module: ir.Operation) -> None:
        found = ir.ops_where(module, lambda op: op.name == "stats.flops")
        with module.context:
            for op in found:
                function = op.parent
                function.attributes["stats.flops"] = op.attributes["count"]
                op.erase()


def register_plugin() -> None:
    """Entry point of the `tessel.plugins` group: load the dialect, add the passes and
    a pipeline that counts flops before running the CPU target's own pipeline."""
    with ir.context():
        if not ir.context().is_dialect_loaded(Stats.DIALECT_NAMESPACE):
            Stats.load()
    register(CountFlopsPass)
    register(ReportFlopsPass)
    register_pipeline("cpu-with-flops", "builtin.module(count-flops,report-flops,cpu)",
                      "count-flops and report-flops, then the CPU target's pipeline")

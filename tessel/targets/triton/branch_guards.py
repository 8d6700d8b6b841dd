"""Which branch of a body's selects each of its gathers feeds, so that a kernel loads
only what a point selects.

A concatenation as a gather (concat-as-gather) reads every input at every point and
selects one (`arith.select` on the point's position along the concatenated dim); with
its inputs' producers inlined (inline-gathered-producers), each branch is a chain of
loads and arithmetic: SegFormer's decode head concatenates four bilinear upsamplings,
16 loads a point of which 4 are selected. A load (tensor.extract) whose value reaches
the body's results only through one side of some selects is needed only where their
conditions pick that side: the kernel masks it with them, as Inductor masks the loads
of a concatenation's inputs. A masked-off lane reads 0 instead, and the select drops
whatever is computed from it.
"""

from __future__ import annotations

from tessel import ir

# A guard: the conditions (value, side) that must all hold for a value to be used;
# side True: the select's true operand. Empty: always used.
Guard = frozenset


def load_guards(body_ops: list[ir.Operation]) -> dict[ir.Operation, Guard]:
    """tensor.extract op -> the guard under which its value is used, for those whose
    guard is not empty. `body_ops` is a linalg.generic's body, its yield last."""
    needed: dict[ir.Value, Guard] = {value: Guard() for value in body_ops[-1].operands}
    for op in reversed(body_ops[:-1]):
        results = [needed[result] for result in op.results if result in needed]
        if not results:
            continue
        guard = Guard.intersection(*results)
        for index, operand in enumerate(op.operands):
            reaching = guard
            if op.name == "arith.select" and index > 0:
                reaching = guard | {(op.operands[0], index == 1)}
            # Used by several ops: needed wherever any of them needs it, which the
            # conditions common to all of them bound.
            needed[operand] = needed[operand] & reaching if operand in needed else reaching
    return {op: needed[op.results[0]] for op in body_ops
            if op.name == "tensor.extract" and needed.get(op.results[0])}

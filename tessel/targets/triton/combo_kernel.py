"""Combo kernels: pointwise kernels that fuse-horizontally groups, launched as one.

The combo's programs are its members' programs one after the other; each program
finds the member its number falls in and calls that member's function (a @triton.jit
function that takes its program's number among the member's, kernel_source's
`member`), which Triton inlines. The combo's parameters are its members' launch
parameters in member order, each prefixed with the member's position (`k0_in0`), so
the host passes each member's arguments as it would to the member alone; members have
static sizes, so their strides are the combo's constants too (`k0_in0_stride0`).
"""

from __future__ import annotations

from tessel.targets.triton.kernel_source import KernelSource
from tessel.targets.triton.writer import declared


def combo_kernel(name: str, members: list[KernelSource]) -> KernelSource:
    """The combo kernel `name` of `members` (static one-dimensional grids, in launch
    order). Each member runs its own block (a split reduction's combine has fewer points
    to a program than an element-wise kernel, choose-gpu-blocks); the combo launches with
    the most warps of any, over which a smaller block's lanes repeat."""
    parameters, calls, start = [], [], 0
    for index, member in enumerate(members):
        (programs,) = member.grid
        own = [f"k{index}_{parameter}" for parameter in member.parameters]
        parameters += own
        program = f"program - {start}" if start else "program"
        calls += [f"    {'elif' if index else 'if'} program < {start + programs}:",
                  f"        {member.function}({', '.join([program, *own, str(member.block)])})"]
        start += programs
    # The tensors first, as launches pass them (alone); the constant strides after.
    parameters = [p for p in parameters if "_stride" not in p] + \
        [p for p in parameters if "_stride" in p]
    signature = [*declared(parameters, static=True), "BLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(signature)}):",
             "    program = tl.program_id(0)", *calls]
    return KernelSource(name, "\n".join(lines) + "\n",
                        [value for member in members for value in member.inputs],
                        [result for member in members for result in member.results],
                        (start,), max(member.block for member in members),
                        max(member.num_warps for member in members), parameters=parameters)

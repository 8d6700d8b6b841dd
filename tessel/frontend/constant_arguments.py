"""Symbolic ints that torch-mlir can only lower as constants, specialized with a guard.

Under Dynamo's automatic dynamic shapes, an int argument that changed between calls
(a convolution's stride from 2 to 3) arrives as a symbolic int. torch-mlir lowers a
convolution only with constant strides, paddings, dilations and groups, so such a graph
ran eagerly. Inductor specializes these the same way (its convolution lowering guards
them): the value becomes a constant here and a guard of the graph, which Dynamo checks
on every call and recompiles on when it fails.
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import guard_int

aten = torch.ops.aten

# Op -> the positions (or keyword names) of its arguments that torch-mlir's lowering
# needs constant.
CONSTANT_ARGUMENTS = {
    aten.convolution.default: (3, 4, 5, 7, 8),  # stride, padding, dilation, output_padding, groups
    # The row count of its [size, dims] result: with a 0-d input, a shape [s0, 0] that
    # the compile worker crashed on (SIGFPE).
    aten.nonzero_static.default: ("size",),
}


def _specialized(argument):
    if isinstance(argument, (list, tuple)):
        return type(argument)(_specialized(a) for a in argument)
    value = argument.meta.get("val") if isinstance(argument, torch.fx.Node) else None
    return guard_int(value) if isinstance(value, torch.SymInt) else argument


def specialize_constant_arguments(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` (in place) with the symbolic ints of CONSTANT_ARGUMENTS replaced by their
    values, each guarded."""
    changed = False
    for node in gm.graph.nodes:
        positions = CONSTANT_ARGUMENTS.get(node.target) if node.op == "call_function" else None
        if not positions:
            continue
        args, kwargs = list(node.args), dict(node.kwargs)
        for position in positions:
            if isinstance(position, str) and position in kwargs:
                kwargs[position] = _specialized(kwargs[position])
            elif isinstance(position, int) and position < len(args):
                args[position] = _specialized(args[position])
        changed |= args != list(node.args) or kwargs != dict(node.kwargs)
        node.args, node.kwargs = tuple(args), kwargs
    if changed:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return gm

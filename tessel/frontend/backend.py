"""The `mlir` Dynamo backend: torch.compile(fn, backend="mlir", mode=..., options={...})."""

from __future__ import annotations

import functools

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch_mlir.extras.fx_decomp_util import get_decomposition_table

from tessel.frontend.compile_graph import compile_graph
from tessel.options import parse_options


@functools.cache
def decomposition_table() -> dict:
    """torch-mlir's table (it lowers more OpInfo ops than torch's core-ATen set: 463 vs 455),
    plus decompositions of ops that torch-mlir cannot lower but their parts it can."""
    table = dict(get_decomposition_table())
    # Adam's update decomposes to prims.fma; LLVM contracts the multiply-add again.
    table[torch.ops.prims.fma.default] = lambda a, b, c: a * b + c
    return table


def mlir_backend(gm: torch.fx.GraphModule, example_inputs, mode: str | None = None,
                 options: dict | None = None):
    """Dynamo backend entry point (registered as `mlir` via the torch_dynamo_backends group).

    aot_autograd lifts parameters to graph inputs and splits forward and backward;
    each of those graphs goes through `compile_graph`.
    """
    parsed = parse_options(mode, options)

    def compiler(kind: str):
        return functools.partial(_compile, options=parsed, kind=kind)

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        decompositions=decomposition_table(),
    )
    return backend(gm, example_inputs)


def _compile(gm, example_inputs, options, kind):
    return compile_graph(gm, example_inputs, options, kind)

"""The `mlir` Dynamo backend: torch.compile(fn, backend="mlir", mode=..., options={...})."""

from __future__ import annotations

import functools

import torch.fx
from torch._dynamo.backends.common import aot_autograd

from tessel.compile_worker import start_worker
from tessel.frontend.compile_graph import compile_graph
from tessel.frontend.decompositions import decomposition_table
from tessel.options import parse_options


# torch.compile(fn, backend="mlir") imports this module when it resolves the backend,
# before Dynamo traces anything: the compile worker starts (and warms up) meanwhile.
start_worker()


def mlir_backend(gm: torch.fx.GraphModule, example_inputs, mode: str | None = None,
                 options: dict | None = None):
    """Dynamo backend entry point (registered as `mlir` via the torch_dynamo_backends group).

    aot_autograd lifts parameters to graph inputs and splits forward and backward;
    each of those graphs goes through `compile_graph`.
    """
    parsed = parse_options(mode, options)
    if parsed.compile_in_worker:
        start_worker()  # again, if it has exited (after a crash) since

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

"""The `mlir` Dynamo backend: torch.compile(fn, backend="mlir", mode=..., options={...})."""

from __future__ import annotations

import functools

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd

from tessel.compile_worker import start_worker
from tessel.frontend.compile_graph import (
    cached_inference,
    compile_graph,
    inference_key,
    remembering_inference,
)
from tessel.frontend.decompositions import decomposition_table
from tessel.options import parse_options
from tessel.targets.triton import warm_up as triton_warm_up


# torch.compile(fn, backend="mlir") imports this module when it resolves the backend,
# before Dynamo traces anything: the compile worker starts (and warms up) meanwhile, and
# on a GPU machine, where the Triton target will need it, so does what Triton's first
# kernel lookup needs.
start_worker()
if torch.cuda.is_available():
    triton_warm_up.start()


def mlir_backend(gm: torch.fx.GraphModule, example_inputs, mode: str | None = None,
                 options: dict | None = None):
    """Dynamo backend entry point (registered as `mlir` via the torch_dynamo_backends group).

    aot_autograd lifts parameters to graph inputs and splits forward and backward;
    each of those graphs goes through `compile_graph`. An inference graph that an
    earlier process compiled skips aot_autograd too (`cached_inference`).
    """
    parsed = parse_options(mode, options)
    key = inference_key(gm, example_inputs, parsed)
    cached = cached_inference(gm, key, parsed)
    if cached is not None:
        return cached
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
    with remembering_inference(key, example_inputs):
        return backend(gm, example_inputs)


def _compile(gm, example_inputs, options, kind):
    return compile_graph(gm, example_inputs, options, kind)

"""What wraps a compiled graph's host program before Dynamo calls it: the inputs it
writes, the replay its mode asks for, and eager's IndexError for bad index inputs."""

from __future__ import annotations

import weakref

import torch

from tessel.errors import TesselError
from tessel.frontend.input_mutations import writing_inputs
from tessel.options import Options
from tessel.signature import GraphSignature


class IndexOutOfRange(TesselError, IndexError, RuntimeError):
    """An index input out of range. Eager raises IndexError (embedding, x[i]) or
    RuntimeError (gather, index_select): this is caught as either."""


def replayed(target, host, signature: GraphSignature, graph_name: str, options: Options,
             kind: str):
    """A compiled graph's `host`, writing the inputs the graph mutates, replayed as
    `options.mode` says (the writes too). A piece of a split graph compiled without
    replays is neither replayed nor put on its inputs' device by itself: the split that
    calls it is, once per call for all its pieces (split_graph.py), as a split loaded
    from the inference cache is."""
    if kind.endswith("_piece") and not options.replays():
        return writing_inputs(host, signature.mutated_inputs)
    return target.replayed(writing_inputs(host, signature.mutated_inputs), graph_name, options,
                           static_inputs=signature.static_inputs,
                           mutated_inputs=signature.mutated_inputs, role=signature.role,
                           output_stack_traces=signature.output_stack_traces)


def checking_indices(host, signature: GraphSignature):
    """`host`, checking its index inputs' range before any native code runs: out of
    range, a kernel would read out of bounds or abort the process. On the CPU a bad
    index raises eager's IndexError. On a GPU the check is an asynchronous device
    assert, as eager's own embedding and gather kernels make: reading the range back to
    the host would sync the device at every call (the host then stops running ahead of
    the GPU) and cannot be captured in a CUDA graph (reduce-overhead). An index tensor
    checked at its current version is not checked again (BEiT's relative-position
    index, a buffer, is read twice per layer)."""
    if not signature.index_checks:
        return host
    names = [arg.name for arg in signature.inputs]
    checks = [(names.index(check.name), check) for check in signature.index_checks]
    passed: dict[int, tuple[weakref.ref, int]] = {}

    def checked(*args):
        for position, check in checks:
            index = args[position]
            last = passed.get(position)
            if index.numel() == 0 or (last is not None and last[0]() is index
                                      and last[1] == index._version):
                continue
            lowest = -check.size if check.from_end else 0
            low, high = torch.aminmax(index)
            if index.is_cuda:
                torch._assert_async((low >= lowest) & (high < check.size),
                                    f"tessel: {check.op}: an index is out of range for a "
                                    f"dimension of size {check.size}")
            else:
                low, high = int(low), int(high)
                if low < lowest or high >= check.size:
                    raise IndexOutOfRange(
                        f"tessel: {check.op}: index {low if low < lowest else high} "
                        f"is out of range for a dimension of size {check.size}")
            passed[position] = (weakref.ref(index), index._version)
        return host(*args)
    return checked

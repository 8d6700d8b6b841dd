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
    `options.mode` says (the writes too). A piece of an inference graph's split is
    neither replayed nor put on its inputs' device by itself: the split that calls it
    is, once per call for all its pieces (split_graph.py), as a split loaded from the
    inference cache is."""
    if kind == "inference_piece":
        return writing_inputs(host, signature.mutated_inputs)
    return target.replayed(writing_inputs(host, signature.mutated_inputs), graph_name, options,
                           static_inputs=signature.static_inputs,
                           mutated_inputs=signature.mutated_inputs, role=signature.role,
                           output_stack_traces=signature.output_stack_traces)


def checking_indices(host, signature: GraphSignature):
    """`host`, raising eager's IndexError for out-of-range index inputs before any
    native code runs: the kernel would abort the process or read out of bounds. An
    index tensor checked at its current version is not checked again: the check reads
    its range back to the host, a device sync at every call (BEiT's relative-position
    index, a buffer, synced twice per layer)."""
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
            low, high = (int(v) for v in torch.aminmax(index))
            lowest = -check.size if check.from_end else 0
            if low < lowest or high >= check.size:
                raise IndexOutOfRange(f"tessel: {check.op}: index {low if low < lowest else high} "
                                      f"is out of range for a dimension of size {check.size}")
            passed[position] = (weakref.ref(index), index._version)
        return host(*args)
    return checked

"""mode="reduce-overhead" on the Triton target: host programs replayed through
PyTorch's CUDA graph trees (torch._inductor.cudagraph_trees), as Inductor's own are.

Outputs stay where the replay wrote them, in the trees' memory pool, until a later
replay of the tree overwrites them, as Inductor's do (torch.compile's contract for this
mode: an output kept across calls is to be cloned; on the H100, Inductor's and these
were overwritten silently where the user held one). A capture of its own
(cuda_graphs.CudaGraphRunner) must instead clone its outputs out at every replay: a
language model's logits were then held twice, and the mode's peak memory was over twice
Inductor's on GPT-2, OPT, Qwen2, T5 and ALBERT.

A training step's forward returns the activations its backward reads. The trees record
a forward and its backward into one memory pool, so the backward reads the activations
where the forward's replay wrote them, where captures of their own cloned each one out
of the forward's buffers and copied it into the backward's: the torch.compile
tutorial's densenet121 train step made some 6,000 such copies a step, half of its host
time (torch.profiler). The trees copy the other inputs that are not read in place in
one `_foreach_copy_`.

Inputs read in place: those aot_autograd reports as static (parameters, buffers,
tensors Dynamo marked static) and every parameter, found at the first call (a
backward's saved weights). The trees re-record a graph when one of them moves.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch._guards

from tessel.targets.triton.cuda_graphs import on_cuda_only

# How many host programs run in a tree's memory pool now (their warm-up and recording
# calls: a replay runs none).
_running_in_tree = 0


def running_in_tree() -> bool:
    return _running_in_tree > 0


def replayed_in_tree(host: Callable, graph_name: str, static_inputs: frozenset[int],
                     mutated_inputs: tuple[int, ...], role: str,
                     output_stack_traces: list[str | None]) -> Callable:
    """`host`, the whole graph `graph_name` (an inference graph, or a training step's
    forward or backward: `role`), replayed in the current device's CUDA graph tree;
    with plain launches where an input is not a CUDA tensor (under TRITON_INTERPRET),
    with one log line. The trees run a graph that writes an input they do not read in
    place without replays, as Inductor's."""
    from torch._inductor import cudagraph_trees
    from torch._inductor.cudagraph_utils import PlaceholderInfo

    compile_id = torch._guards.CompileContext.current_compile_id()
    replay: Callable | None = None

    def boxed(inputs: list):
        # The trees' calling convention: the callee empties the list, so that inputs
        # the graph no longer needs can be freed while it runs.
        global _running_in_tree
        args = tuple(inputs)
        inputs.clear()
        _running_in_tree += 1
        try:
            return host(*args)
        finally:
            _running_in_tree -= 1

    def first_call(args: tuple, stack_traces: list[str | None]) -> Callable:
        # A fused attention's random-number seed and offset are int64 CPU scalars
        # (without dropout even in a capture), which the forward saves: the trees copy
        # such an input as it is, and the attention's backward reads them only with
        # dropout, when a recorded forward returns them on the device. Launched one by
        # one instead, hf_swin's backward made its training step host-bound (31 ms a
        # step against 9.6 ms of GPU time). Other CPU inputs are values the host
        # program reads or moves to the GPU, which a replay would not do again.
        if not on_cuda_only(args, graph_name, random_states=role == "backward"):
            return lambda inputs: host(*inputs)
        read_in_place = static_inputs | {i for i, a in enumerate(args)
                                         if isinstance(a, torch.nn.Parameter)}
        return cudagraph_trees.cudagraphify_impl(
            boxed, list(args), sorted(read_in_place),
            device_index=next(a for a in args if isinstance(a, torch.Tensor) and a.is_cuda
                              ).get_device(),
            is_backward=role == "backward", is_inference=role == "inference",
            stack_traces=stack_traces, constants=(),
            placeholders=tuple(PlaceholderInfo(f"input {i} of graph {graph_name}", None, [], None)
                               for i in range(len(args))),
            mutated_input_idxs=tuple(mutated_inputs), compile_id=compile_id)

    def replayed(*args):
        nonlocal replay
        if replay is None:
            if not output_stack_traces:
                # The trees need one stack trace (or None) per output; where the graph's
                # are not known (a split graph), a first call with plain launches counts
                # its outputs.
                results = host(*args)
                replay = first_call(args, [None] * len(results))
                return results
            replay = first_call(args, list(output_stack_traces))
        return replay(list(args))
    return replayed

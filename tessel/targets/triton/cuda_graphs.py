"""mode="reduce-overhead" on the Triton target for a graph that writes its inputs:
the host program captured in a CUDA graph and replayed, so a call costs one graph launch
instead of one launch per kernel and library call. Every other graph replays in
PyTorch's CUDA graph trees (cuda_graph_trees.py), which run a graph that writes an
input they do not read in place without replays, and in which Inductor's own
reduce-overhead generation with a static cache (whose graphs write the cache) died of
SIGSEGV in the suite's runs, where these captures passed.

One capture per input signature (shapes, strides, dtypes, devices, scalar values, and
the storage of parameters and buffers, which are read in place): other tensor inputs
are copied into the capture's static buffers, the graph replays, and outputs are cloned
out of its buffers (the next replay overwrites them); an input the graph writes
(input_mutations.py) that is not read in place is copied back from its buffer. The
first call with a new signature runs with plain launches, then captures. Where capture
is not possible (CPU tensors under TRITON_INTERPRET, an op that synchronizes with the host), or where
a replay with its copies is slower than plain launches (timed once per capture: a
memory-bound graph of few kernels, whose inputs and outputs are large, saves little
launch time and pays two more passes over memory), the host program runs with plain
launches, with one log line.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import torch

from tessel import counters
from tessel.targets.triton.launcher import gpu_milliseconds

log = logging.getLogger("tessel")

# Plain launches are kept when they take at most this share of a replay's time (copies
# included): a margin over the timing's noise, so that graphs where both take about as
# long replay, as reduce-overhead asks.
PLAIN_LAUNCHES_SHARE = 0.8


def on_cuda_only(args: tuple, graph_name: str, random_states: bool = False) -> bool:
    """Whether graph `graph_name`'s tensor arguments are all CUDA tensors, as a CUDA
    graph needs (with `random_states`, but for int64 CPU tensors of no dims beside at
    least one CUDA tensor: a fused attention's seed and offset, which a backward passes
    to the attention's backward as they are); else one log line says it launches
    kernels one by one."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)
               and not (random_states and a.device.type == "cpu" and a.dim() == 0
                        and a.dtype == torch.int64)]
    if tensors and all(t.device.type == "cuda" for t in tensors):
        return True
    log.info("tessel: graph %s: reduce-overhead launches kernels one by one: its inputs "
             "are not all CUDA tensors", graph_name)
    return False


def captured(graph: torch.cuda.CUDAGraph, run: Callable, args: list):
    """run(*args) captured into `graph` on a side stream, as torch.cuda.graph captures.
    A capture that fails leaves the process as it was: torch.cuda.graph, whose exit ends
    the capture first, would leave its side stream current, and the device's random
    generator expecting the end of a capture, so that every later random op raises
    ("Offset increment outside graph capture"); an empty capture ends the generator's."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin()
        try:
            outputs = run(*args)
            graph.capture_end()
        except BaseException:
            if torch.cuda.is_current_stream_capturing():
                with contextlib.suppress(RuntimeError):  # the error already raised says why
                    graph.capture_end()
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                torch.empty(1, device=stream.device).zero_()
            raise
    torch.cuda.current_stream().wait_stream(stream)
    return outputs


class CudaGraphRunner:
    def __init__(self, host: Callable, graph_name: str, static_inputs: frozenset[int],
                 mutated_inputs: frozenset[int] = frozenset()):
        self.host = host
        self.graph_name = graph_name
        self.static_inputs = static_inputs
        self.mutated_inputs = mutated_inputs
        self.captures: dict[tuple, tuple | None] = {}
        # (static tensors, other tensors, scalars): argument positions, from the first call.
        self.positions: tuple[list[int], list[int], list[int]] | None = None

    def _is_static(self, index: int, arg) -> bool:
        return index in self.static_inputs or isinstance(arg, torch.nn.Parameter)

    def _signature(self, args: tuple) -> tuple:
        """What a capture depends on beyond Dynamo's guards (which fix every input's
        dtype, device and strides, and its sizes unless they are dynamic): the storage
        of the static inputs (read in place), the sizes of the other tensors, and
        scalar values. Computed at every call, so kept to one attribute per input:
        densenet121 passes some 600 parameters and buffers, for which a tuple of each
        input's whole layout cost several times the host time of this one."""
        if self.positions is None:
            tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
            static = [i for i in tensors if self._is_static(i, args[i])]
            self.positions = (static, [i for i in tensors if i not in static],
                              [i for i, a in enumerate(args) if not isinstance(a, torch.Tensor)])
        static, others, scalars = self.positions
        return (tuple(map(torch.Tensor.data_ptr, [args[i] for i in static])),
                tuple(args[i].shape for i in others), tuple(args[i] for i in scalars))

    def __call__(self, *args):
        key = self._signature(args)
        if key not in self.captures:
            self.captures[key], results = self._capture(args)
            return results
        capture = self.captures[key]
        if capture is None:
            return self.host(*args)
        return self._replay(capture, args)

    @staticmethod
    def _replay(capture: tuple, args: tuple) -> tuple:
        copies, write_backs, static_outputs, graph = capture
        for position, buffer in copies:
            buffer.copy_(args[position])
        graph.replay()
        for position, buffer in write_backs:
            args[position].copy_(buffer)
        return tuple(o.clone() if isinstance(o, torch.Tensor) else o for o in static_outputs)

    def _capture(self, args: tuple) -> tuple[tuple | None, tuple]:
        """(The capture for `args`' signature, or None for plain launches; this call's
        results)."""
        if not on_cuda_only(args, self.graph_name):
            return None, self.host(*args)
        # Parameters and buffers are read in place (a model's weights are most of its
        # inputs); any other tensor is copied into a buffer of the capture's own.
        static_inputs = [a.clone() if isinstance(a, torch.Tensor) and not self._is_static(i, a)
                         else a for i, a in enumerate(args)]
        # This call runs first, with plain launches, on a side stream: Triton compiles
        # each kernel at its first launch and cuBLAS sets up its workspace, neither of
        # which can be captured.
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            results = self.host(*args)
        torch.cuda.current_stream().wait_stream(stream)
        for result in results:
            if isinstance(result, torch.Tensor):
                result.record_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        try:
            static_outputs = captured(graph, self.host, static_inputs)
        except Exception as error:  # noqa: BLE001 - e.g. an op that reads a value back to the host
            log.info("tessel: graph %s: reduce-overhead launches kernels one by one: CUDA "
                     "graph capture failed (%s)", self.graph_name, str(error).splitlines()[0])
            return None, results
        copies = [(i, buffer) for i, (buffer, arg) in enumerate(zip(static_inputs, args))
                  if buffer is not arg]
        write_backs = [(i, buffer) for i, buffer in copies if i in self.mutated_inputs]
        capture = copies, write_backs, static_outputs, graph
        return (capture if self._replay_is_faster(capture, args) else None), results

    def _replay_is_faster(self, capture: tuple, args: tuple) -> bool:
        """Whether replays of `capture` beat plain launches on `args`, by enough (or
        untimed, where timing runs out of memory). The inputs the graph writes are
        restored after the timing's calls."""
        written: dict[int, torch.Tensor] = {}
        try:
            written.update((i, args[i].clone()) for i in self.mutated_inputs)
            # Each timed twice, in turn, keeping the shorter: with one timing each, the
            # first workload of a benchmark run kept a replay that took 3x its launches.
            timings = [(gpu_milliseconds(lambda: self._replay(capture, args)),
                        gpu_milliseconds(lambda: self.host(*args))) for _ in range(2)]
        except torch.OutOfMemoryError:  # the timing's buffers (an L2 flush) do not fit
            log.info("tessel: graph %s: reduce-overhead replays its CUDA graph, untimed: "
                     "out of memory to time it", self.graph_name)
            return True
        finally:
            for i, before in written.items():
                args[i].copy_(before)
        replayed, plain = (min(column) for column in zip(*timings))
        if plain <= PLAIN_LAUNCHES_SHARE * replayed:
            counters.count("cuda_graphs_declined")
            log.info("tessel: graph %s: reduce-overhead launches kernels one by one: they "
                     "took %.3f ms a call, a CUDA graph replay with its copies %.3f ms",
                     self.graph_name, plain, replayed)
            return False
        return True

"""The Python cost of one whole compiled call of a suite model, measured without a GPU.

host_program_cost.py times each host program alone. A model whose graph calls native
ops (fused attention, native_ops.py) runs several host programs per call, glued by the
graph split around those ops (split_graph.py), each piece under its own wrappers: this
times `compiled(**inputs)` whole (Dynamo's guards, aot_autograd's wrappers, the glue,
the native calls and every host program), with kernel launches reaching a no-op as in
host_program_cost.py, and launch_mode finding direct launches on stream 0 where a GPU
would have found its stream. "sdpa" attention makes the graph call fused attention once a
layer, as the suite's models do on a GPU; "eager" attention computes it with gemms and
a softmax, in one piece: the same model's call without the boundaries.

    python -m benchmarks.compiled_call_cost hf_vit --attention sdpa
    python -m benchmarks.compiled_call_cost hf_vit --attention sdpa --profile

prints the compiled pieces per call and processor microseconds per model call (the
fastest of 5 rounds): tessel's whole call, its host programs alone (called on the
arguments they got), the difference, and eager PyTorch on the same tiny tensors.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time
from unittest import mock

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import torch

from benchmarks.host_program_cost import (
    ROUNDS,
    _no_op_launch,
    compiled_hosts,
    layers_and_dtype,
    model_parser,
)
from tessel.targets.triton import launcher
from tessel.targets.triton.launcher import KernelLauncher


def seconds_per_call(call, repeats: int) -> float:
    """The processor time of `call()` in the fastest of ROUNDS rounds of `repeats`
    calls: on a machine shared with other processes, their time is not counted, and the
    fastest round is the one they disturbed least (its caches)."""
    rounds = []
    for _ in range(ROUNDS):
        start = time.process_time()
        for _ in range(repeats):
            call()
        rounds.append((time.process_time() - start) / repeats)
    return min(rounds)


def launches_per_call(call) -> int:
    """How many Triton kernels one `call()` launches."""
    launches = 0
    launch = KernelLauncher.__call__

    def counted(self, *args):
        nonlocal launches
        launches += 1
        return launch(self, *args)
    with mock.patch.object(KernelLauncher, "__call__", counted):
        call()
    return launches


def functions_per_call(call) -> int:
    """How many Python and built-in functions one `call()` calls (cProfile's count): the
    host cost's measure that other processes on the machine do not disturb."""
    profiler = cProfile.Profile()
    profiler.runcall(call)
    return pstats.Stats(profiler).total_calls


def main() -> None:
    parser = model_parser(__doc__.splitlines()[0], "fp32")
    parser.add_argument("--attention", choices=("sdpa", "eager"), default="sdpa")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--profile", action="store_true",
                        help="also print a cProfile of `repeats` calls")
    args = parser.parse_args()
    layers, dtype = layers_and_dtype(args)
    compiled, inputs, hosts = compiled_hosts(args.model, layers, args.batch, dtype,
                                             attention=args.attention)
    model = compiled._orig_mod

    def whole_call():
        return compiled(**inputs)

    def hosts_alone():
        for host, host_args in hosts:
            host(*host_args)
    # As on a GPU in default mode: launches skip Triton's JIT, on stream 0; each host
    # program's launch_mode still checks its tensors' alignment.
    with mock.patch.object(KernelLauncher, "_loaded", _no_op_launch), \
            mock.patch.object(launcher, "_call_mode", lambda device: (True, 0)), torch.no_grad():
        whole = seconds_per_call(whole_call, args.repeats)
        alone = seconds_per_call(hosts_alone, args.repeats)
        eager = seconds_per_call(lambda: model(**inputs), args.repeats)
        print(f"{args.model}, {layers} layers, batch {args.batch}, {args.dtype}, "
              f"{args.attention} attention, torch {torch.__version__}, {os.cpu_count()} "
              f"cores; processor us per model call, fastest of {ROUNDS} rounds of "
              f"{args.repeats}")
        print(f"  compiled pieces (host programs) per call: {len(hosts)}, kernel launches "
              f"per call: {launches_per_call(whole_call)}")
        print(f"  functions called per call: tessel {functions_per_call(whole_call)}, "
              f"its host programs alone {functions_per_call(hosts_alone)}")
        print(f"  tessel, whole call (launches no-ops): {whole * 1e6:8.1f}")
        print(f"  its host programs alone:              {alone * 1e6:8.1f}")
        print(f"  the rest (Dynamo, aot_autograd, glue, native calls, wrappers): "
              f"{(whole - alone) * 1e6:8.1f}")
        print(f"  eager PyTorch:                        {eager * 1e6:8.1f}")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.repeats):
                whole_call()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()

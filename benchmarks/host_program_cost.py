"""The Python cost of a suite model's Triton host programs, measured without a GPU.

The model (an hf model of the suite: as many layers as the suite's, tiny widths) is
compiled for the Triton target and run once in Triton's interpreter, on CPU tensors in
bf16 (or fp32). Then each host program is called alone, on the arguments it got, as it
runs on a GPU in default mode (`launch_mode` says launch directly) except that a
kernel launch reaches a no-op where PyTorch's static launcher would start the kernel:
what is timed is the host program's own Python (launcher dispatch, allocations, views,
library calls on tiny CPU tensors), the part that makes a model host-bound on a GPU.
Dynamo's guards and aot_autograd's wrappers, the same for any host program, are left
out. The CPU's bf16 gemms cost more than their host time even this small, and
differently for operands of the same strides made by different ops: `--dtype fp32`
times gemms whose arithmetic costs little.

A decoder (hf_llama) is timed as a decode step of generate() with a static KV cache and
a compiled forward (benchmarks/models/generation.py): the prompt's forward and a few
decode steps run, and the host programs called at every step (the decode graph's
pieces, split around the native attention) are timed, on the arguments of the last
step. With `--counts`, the host work of one call of them all is counted too: kernel
launches, allocations, and the aten calls a GPU profile shows beside the launches
(clones, index_put_, cat, copies).

    python -m benchmarks.host_program_cost hf_vit --repeats 2000
    python -m benchmarks.host_program_cost hf_vit --profile    # cProfile of the calls
    python -m benchmarks.host_program_cost hf_llama --counts   # a decode step

prints microseconds per model call (the median of 5 rounds), per host program, and the
total.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import time
from collections.abc import Callable
from unittest import mock

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import torch

import tessel
from benchmarks.models import hf
from tessel.targets.triton import cubin_launch, target
from tessel.targets.triton.host_program import scatter
from tessel.targets.triton.launcher import KernelLauncher

# The suite's layer counts, at widths so small that the library calls' arithmetic on
# the CPU costs little beside their host time.
CONFIGS = {
    "hf_vit": {"num_hidden_layers": 12, "hidden_size": 16, "num_attention_heads": 2,
               "intermediate_size": 32, "image_size": 16, "patch_size": 8},
    "hf_bert": {"num_hidden_layers": 12, "hidden_size": 16, "num_attention_heads": 2,
                "intermediate_size": 32},
    "hf_llama": {"num_hidden_layers": 4, "hidden_size": 32, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 64},
    # Multi-query attention (one key/value head), as the suite's Gemma.
    "hf_gemma": {"num_hidden_layers": 4, "hidden_size": 32, "num_attention_heads": 4,
                 "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 64},
}
# Timed as a decode step (module docstring).
DECODERS = {"hf_llama", "hf_gemma"}
DECODE_STEPS = 3
ROUNDS = 5
# Host work that --counts counts: (file, function) as cProfile names them.
_TENSOR_METHOD = "<method '{}' of 'torch._C.TensorBase' objects>"
COUNTED = {"launches": (KernelLauncher.__call__.__code__.co_filename, "__call__"),
           "allocations": ("~", "<built-in method torch._C._dynamo.guards._empty_strided_cpu>"),
           "clones": ("~", _TENSOR_METHOD.format("clone")),
           "index_put_": ("~", _TENSOR_METHOD.format("index_put_")),
           "cat": ("~", "<built-in method torch.cat>"),
           "copy_": ("~", _TENSOR_METHOD.format("copy_"))}


class _NoOpStaticLauncher:
    """torch._C._StaticCudaLauncher's loading and launching, doing nothing."""
    _load_kernel = staticmethod(lambda *args: (None, 0, 0))
    _launch_kernel = staticmethod(lambda *args: None)


def _no_op_launch(launcher: KernelLauncher, args: tuple) -> cubin_launch.Launch:
    """KernelLauncher._loaded: the launch function cubin_launch builds, of a kernel
    that takes every argument."""
    kernel = cubin_launch.CubinKernel(
        name="kernel", cubin="", arch=90, num_warps=launcher.num_warps, shared=0,
        argument_types="", kept=tuple(range(len(args))), arguments=len(args), scratch=0)
    with mock.patch.object(torch._C, "_StaticCudaLauncher", _NoOpStaticLauncher, create=True):
        return cubin_launch.load(kernel, 0, launcher.grid_xyz)


def _scatter_in_range(buffer, indices, updates, accumulate):
    """host_program.scatter on indices that no-op launches left unwritten: zeroed first,
    so that index_put_ finds them in range (one small fill a scatter)."""
    scatter(buffer, indices.zero_(), updates, accumulate)


def tiny_model(name: str, layers: int, batch: int, dtype: torch.dtype,
               attention: str | None = None) -> tuple[torch.nn.Module, dict]:
    """The suite model `name` at CONFIGS' widths with `layers` layers, in eval mode, and
    its inputs. `attention` is transformers' attention implementation: "eager" puts
    attention's gemms and softmax in the graph, "sdpa" one fused attention call; by
    default a decoder's stays fused (native, as on the GPU: generation.py), the others'
    gemms are in the graph, as on the GPU."""
    torch.manual_seed(0)
    config = hf.build_config(name, tiny=True)
    for key, value in (CONFIGS[name] | {"num_hidden_layers": layers}).items():
        setattr(config, key, value)
    config._attn_implementation = attention or ("sdpa" if name in DECODERS else "eager")
    import transformers
    # bf16 weights: CUDA autocast's form of the graph (a linear is one bf16 addmm), which
    # CPU autocast's differs from.
    model = getattr(transformers, hf.MODELS[name].model)(config).eval().to(dtype)
    size = config.image_size if hf.MODELS[name].inputs == "image" else hf.TINY_TOKENS
    inputs = {key: value.to(dtype) if value.is_floating_point() else value
              for key, value in hf.build_inputs(name, config, batch, size, "cpu").items()}
    return model, inputs


def compiled_hosts(name: str, layers: int, batch: int, dtype: torch.dtype,
                   dump_dir: str | None = None, attention: str | None = None
                   ) -> tuple[Callable, dict, list[tuple]]:
    """The compiled model (a decoder's compiled forward), its inputs, and each host
    program its compile made with the arguments of its call; for a decoder, those of the
    decode step (module docstring). `attention`: tiny_model's."""
    model, inputs = tiny_model(name, layers, batch, dtype, attention)
    decoding = name in DECODERS
    hosts: list[list] = []  # [host, arguments of its last call, calls]
    building = target._building_kernels

    def recording(host, *args, **kwargs):
        hosts.append([host, None, 0])
        entry, run = hosts[-1], building(host, *args, **kwargs)

        def called(*call_args):
            entry[1] = call_args
            entry[2] += 1
            return run(*call_args)
        return called

    options = {"target": "triton", "fallback": False}
    if dump_dir:
        options["dump_dir"] = dump_dir
    with mock.patch.object(target, "_building_kernels", recording), torch.no_grad():
        if decoding:
            compiled = _decode(model, inputs, options)
        else:
            compiled = torch.compile(model, backend="mlir", options=options)
            compiled(**inputs)
    # A decode step's programs run at every step; the prompt's once.
    return compiled, inputs, [(host, args) for host, args, calls in hosts
                              if args is not None and (not decoding or calls == DECODE_STEPS)]


def _decode(model: torch.nn.Module, inputs: dict, options: dict) -> Callable:
    """generate() of DECODE_STEPS tokens after the prompt, as a generate row runs it;
    the compiled forward."""
    from benchmarks.models.generation import greedy_generate
    forward = torch.compile(model.forward, backend="mlir", options=options, fullgraph=True)
    ids = inputs["input_ids"]
    generate = greedy_generate(model, ids, torch.ones_like(ids))
    generate(forward, max_new_tokens=DECODE_STEPS + 1, min_new_tokens=DECODE_STEPS + 1)
    return forward


def host_work(hosts: list[tuple]) -> dict[str, int]:
    """COUNTED's calls in one call of each of `hosts`."""
    profiler = cProfile.Profile()
    profiler.enable()
    for host, host_args in hosts:
        host(*host_args)
    profiler.disable()
    calls = {(filename, function): primitive for (filename, _, function), (_, primitive, *_)
             in pstats.Stats(profiler).stats.items()}
    return {kind: calls.get(function, 0) for kind, function in COUNTED.items()}


def seconds_per_call(hosts: list[tuple], repeats: int) -> list[float]:
    """The median time of a call of each host program, over ROUNDS rounds."""
    rounds = []
    for _ in range(ROUNDS):
        times = []
        for host, args in hosts:
            start = time.perf_counter()
            for _ in range(repeats):
                host(*args)
            times.append((time.perf_counter() - start) / repeats)
        rounds.append(times)
    return [statistics.median(column) for column in zip(*rounds)]


def model_parser(description: str, dtype: str, dtype_help: str | None = None
                 ) -> argparse.ArgumentParser:
    """A command line that names a model of CONFIGS, its layers, batch and dtype."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model", choices=sorted(CONFIGS))
    parser.add_argument("--layers", type=int, help="layers (default: the suite model's)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default=dtype, help=dtype_help)
    return parser


def layers_and_dtype(args: argparse.Namespace) -> tuple[int, torch.dtype]:
    """The model's layers (the suite model's unless given) and torch dtype, as parsed."""
    torch.set_num_threads(1)
    layers = args.layers or CONFIGS[args.model]["num_hidden_layers"]
    return layers, {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]


def main() -> None:
    parser = model_parser(__doc__.splitlines()[0], "bf16",
                          "fp32: gemms that the CPU computes in less time than bf16's")
    parser.add_argument("--repeats", type=int, default=1000)
    parser.add_argument("--dump-dir", help="tessel's dump_dir: the host programs' source")
    parser.add_argument("--profile", action="store_true",
                        help="also print a cProfile of `repeats` calls of each program")
    parser.add_argument("--counts", action="store_true",
                        help="also count the launches, allocations, clones, ... of a call")
    args = parser.parse_args()
    layers, dtype = layers_and_dtype(args)
    _, _, hosts = compiled_hosts(args.model, layers, args.batch, dtype, args.dump_dir)
    for host, _ in hosts:  # as on a GPU in default mode: launches skip Triton's JIT
        host.__globals__["launch_mode"] = lambda device, *tensors: (True, 0)
        host.__globals__["scatter"] = _scatter_in_range
    # Grad off, as aot_autograd's wrapper calls an inference graph.
    with mock.patch.object(KernelLauncher, "_loaded", _no_op_launch), torch.no_grad():
        times = seconds_per_call(hosts, args.repeats)
        print(f"{args.model}, {layers} layers, batch {args.batch}, {args.dtype}, torch "
              f"{torch.__version__}, {os.cpu_count()} cores; us per model call, "
              f"median of {ROUNDS} rounds of {args.repeats}")
        for index, seconds in enumerate(times):
            print(f"  host program {index}: {seconds * 1e6:8.1f}")
        print(f"  total: {sum(times) * 1e6:8.1f}")
        if args.counts:
            print("  per model call: " + ", ".join(
                f"{kind} {count}" for kind, count in host_work(hosts).items()))
            counters = tessel.stats()
            print(f"  inputs written in place {counters['inputs_written_in_place']}, copied "
                  f"back {counters['inputs_copied_back']} (over the compile's run)")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for host, host_args in hosts:
                for _ in range(args.repeats):
                    host(*host_args)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()

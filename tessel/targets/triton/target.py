"""The Triton target: linalg-on-tensors -> kernels (the `gpu` pipeline) -> Triton source
for each kernel plus a generated Python host program that launches them.

CUDA tensors pick this target (options={"target": "triton"} forces it); under
TRITON_INTERPRET=1 its kernels run on CPU tensors, which is how the tests check their
numerics on a machine without a GPU. The generated kernels module is written to a
cache directory named by its content, and with the host program into tessel's graph
cache (frontend/cache.py): a second process that compiles the same graph skips
tessel's whole compile, and Triton's own on-disk cache supplies the kernel binaries.
"""

from __future__ import annotations

import hashlib
import json
import linecache
import logging
import re
from dataclasses import asdict
from pathlib import Path
from typing import Callable, ClassVar

import torch
import triton
from triton.compiler.errors import CompilationError

from tessel import cache, ir
from tessel.passes.contractions import ATOMIC_ADD_TYPES
from tessel.passes.form_kernels import is_kernel, kernel_name
from tessel.passes.fuse_horizontally import combo_members, launch_count
from tessel.passes.pipelines import gpu_pipeline
from tessel.signature import GraphSignature
from tessel.stages import CompileFailure, Stages
from tessel.targets.base import KernelBuildFailed, RuntimeCheckFailed, Target
from tessel.targets.triton import (
    autotune,
    compile_pool,
    host_program,
    kernel_source,
    layouts,
    strided_views,
    translate,
)
from tessel.targets.triton.cubin_launch import CubinKernel
from tessel.targets.triton.cuda_graph_trees import replayed_in_tree
from tessel.targets.triton.cuda_graphs import CudaGraphRunner
from tessel.targets.triton.launcher import (
    KernelLauncher,
    compile_in_parallel,
    dry_running,
    interpreting,
    launch_mode,
    on_device_of_inputs,
    recorded_launches,
    sharing_launch_mode,
)
from tessel.targets.triton.prelude import PRELUDE
from tessel.targets.triton.unsupported import UnsupportedKernel

log = logging.getLogger("tessel")
# The function a Triton compile error's source defines: a kernel function's name.
_FUNCTION = re.compile(r"def (\w+)\(")


def cache_dir() -> Path:
    """Where generated kernel modules live: <tessel's cache root>/triton."""
    return cache.cache_root() / "triton"


def _load_kernels(source: str):
    """Import the generated kernels module from a file named by its content."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    path = cache_dir() / f"kernels_{digest}.py"
    if not path.exists():
        cache.write_atomically(path, source)
    return compile_pool.load_kernels(path)


def _building_kernels(host: Callable, stages: Stages, compile_first: bool,
                      tune: bool, loaded: Callable[[], None],
                      function_nodes: dict[str, list[str]]) -> Callable:
    """`host`, turning a kernel that Triton fails to compile into KernelBuildFailed (the
    graph then runs eagerly), with the dump that holds its source. With `compile_first`,
    its kernels compile in parallel before its first call; without (kernels from the
    graph cache, whose cubins tessel's cache or Triton's holds), each loads at its first
    launch, which costs less than the dry run that finds their arguments. With `tune`,
    each launch's configuration is first chosen by timing, or read from an earlier
    tuning, from its kernel kind's space (autotune.py). `loaded` runs after the first
    call, when every kernel it launched is loaded. `function_nodes`: the FX nodes each
    kernel function computes, which a build failure names. Within a dry run of a split
    graph that `host` is a piece of, it records its launches there and compiles nothing."""
    where = f" (kernels in {stages.dump.path})" if stages.dump.path else ""
    compiled = called = False

    def launch(*args):
        nonlocal compiled, called
        if dry_running():
            return host(*args)
        try:
            if (compile_first or tune) and not compiled and not interpreting():
                with stages.timed("triton-dry-run"):
                    launches = recorded_launches(host, args)
                if tune:
                    with stages.timed("triton-autotune"):
                        tuned = autotune.choose_configs(launches)
                    stages.write("autotuned.json", lambda: json.dumps(tuned, indent=1))
                with stages.timed("triton-compile"):
                    compile_in_parallel(launches)
                compiled = True
            results = host(*args)
            if not called:
                called = True
                loaded()
            return results
        except CompilationError as error:
            function = _FUNCTION.search(str(getattr(error, "src", "") or error))
            nodes = function_nodes.get(function.group(1), ()) if function else ()
            raise KernelBuildFailed(f"Triton could not compile a kernel{where}: "
                                    f"{str(error).strip().splitlines()[-1]}",
                                    frozenset(nodes)) from error
    return launch


def _nodes_of(op: ir.Operation | None) -> frozenset[str]:
    """The FX nodes a host-level op the generator refused comes from, and those of the
    ops that read its results: a constant the host cannot make is folded from its
    readers' lowering, and is not made when they run eagerly."""
    if op is None:
        return frozenset()
    names = set(ir.names_located_in(op))
    for result in op.results:
        for use in result.uses:
            names |= ir.names_located_in(use.owner)
    return frozenset(names)


def _reads_any(kernel: ir.Operation, values: set) -> bool:
    """Whether an op of `kernel` reads one of `values` (values of main)."""
    return bool(values) and any(value in values for value in ir.values_read_from_above(kernel))


def _autotuning(options) -> bool:
    """Whether the mode is a max-autotune: gemm templates, and configurations timed."""
    return options.mode in ("max-autotune", "max-autotune-no-cudagraphs")


def _default_pipeline(options) -> str:
    """The gpu pipeline the mode asks for, by name where its scatters may add with
    any atomic Triton has: PyTorch's deterministic mode takes none (atomics add in no
    fixed order), Triton's interpreter has no bf16 ones."""
    templates = _autotuning(options)
    if torch.are_deterministic_algorithms_enabled():
        return gpu_pipeline(templates, atomic_add_types=())
    if interpreting():
        return gpu_pipeline(templates, tuple(t for t in ATOMIC_ADD_TYPES if t != "bf16"))
    return "gpu-max-autotune" if templates else "gpu"


def _distinct_functions(sources: dict[str, kernel_source.KernelSource],
                        located: dict[str, set[str]]) -> list[str]:
    """The source of each distinct kernel function, named for the graph's ops it computes
    and a digest of its body, as a profiler shows it: one name is one kernel, the same in
    every graph that launches it. A kernel whose body is an earlier one's is launched as
    that one (its `function`): a network's repeated blocks then compile once."""
    by_body: dict[str, str] = {}
    functions = []
    for name, kernel in sources.items():
        body = kernel.source.replace(f"def {name}(", "def (", 1)
        if body not in by_body:
            digest = hashlib.sha1(body.encode()).hexdigest()[:8]
            by_body[body] = f"{_ops_computed(located[name])}_{digest}"
            functions.append(body.replace("def (", f"def {by_body[body]}(", 1))
        kernel.function = by_body[body]
    return functions


def _ops_computed(node_names: set[str]) -> str:
    """The ops whose FX nodes are `node_names` (`add_3` -> `add`), the first five in
    alphabetical order: a kernel function's name, as Inductor names its kernels by the
    ops fused."""
    ops = sorted({re.sub(r"(_default)?(_\d+)*$", "", node) for node in node_names
                  if node.isidentifier()})
    return "_".join(["k", *ops[:5]])


class TritonTarget(Target):
    name: ClassVar[str] = "triton"
    default_pipeline: ClassVar[str] = "gpu"
    caches_graphs: ClassVar[bool] = True
    strided_tensors: ClassVar[bool] = True
    calls_native_ops: ClassVar[bool] = True

    @staticmethod
    def devices() -> frozenset[str]:
        return frozenset({"cuda", "cpu"}) if interpreting() else frozenset({"cuda"})

    def load_cached(self, key: str | None, signature: GraphSignature, options,
                    stages: Stages) -> tuple[Callable, int] | None:
        entry = cache.load(key)
        if entry is None:
            return None
        return self._build(entry, key, signature, options, stages, compile_first=False)

    def compile(self, module: ir.Module, signature: GraphSignature, options,
                stages: Stages, cache_key: str | None = None) -> tuple[Callable, int]:
        pipeline = options.pipeline or _default_pipeline(options)
        if not interpreting():
            compile_pool.shared_pool()  # its workers start while the pipeline runs
        module = stages.run_pipeline(module, "gpu", pipeline)
        kernels = ir.ops_where(module.operation, is_kernel)
        with stages.timed("triton-codegen"):
            main = ir.function_named(module, "main")
            channels_last = layouts.channels_last_values(
                main, layouts.channels_last_inputs(main, signature))
            narrowed = host_program.narrowed_values(module)
            sources, located, refused, unknown = {}, {}, [], set()
            for kernel, generated in translate.generated_kernels(
                    ir.function_named(module, "main").operation, channels_last, narrowed):
                if isinstance(generated, UnsupportedKernel):
                    # A kernel reading a refused one's results may be refused for that
                    # alone (a size it produces): it is not pinned, and the split's
                    # piece tries it again.
                    if not _reads_any(kernel, unknown):
                        refused.append((generated, ir.names_located_in(kernel)))
                    unknown.update(kernel.results)
                    continue
                sources[generated.name] = generated
                located[generated.name] = ir.names_located_in(kernel)
            if refused:
                # Every refused kernel at once: one split of the graph around all of them.
                (first, _), more = refused[0], len(refused) - 1
                raise CompileFailure(
                    "triton-codegen", str(first) + (f" (and {more} other kernels)" if more else ""),
                    nodes=frozenset().union(*(nodes for _, nodes in refused)))
            functions = _distinct_functions(sources, located)
            # After the members': a combo calls each member's deduplicated function.
            combos = translate.combo_kernels(ir.function_named(module, "main").operation,
                                             sources)
            for name, members in combo_members(ir.function_named(module, "main")).items():
                located[name] = set().union(*(located[kernel_name(m)] for m in members))
            functions += _distinct_functions(combos, located)
            sources.update(combos)
            try:
                module_source = "\n\n".join([PRELUDE] + functions)
                program = host_program.generate(module, sources, signature,
                                                stages.dump.graph_name, channels_last, narrowed)
            except UnsupportedKernel as error:
                raise CompileFailure("triton-codegen", str(error),
                                     nodes=_nodes_of(error.at)) from error
        function_nodes: dict[str, set[str]] = {}
        for name, kernel in sources.items():
            function_nodes.setdefault(kernel.function, set()).update(located[name])
        entry = {"kernels_source": module_source, "host_source": program.source,
                 # By result index: JSON keys are strings.
                 "result_strides": {str(i): s for i, s in program.result_strides.items()},
                 "kernels": launch_count(kernels),
                 "function_nodes": {f: sorted(n) for f, n in function_nodes.items()}}
        cache.store(cache_key, entry)
        return self._build(entry, cache_key, signature, options, stages, compile_first=True)

    def _build(self, entry: dict, cache_key: str | None, signature: GraphSignature,
               options, stages: Stages, compile_first: bool) -> tuple[Callable, int]:
        """The host program of a graph cache `entry`, its kernels loaded from the
        cubins the entry lists, if any; after its first call, the entry lists the
        cubins of all kernels that call loaded. Fills `signature.result_strides`."""
        module_source, host_source = entry["kernels_source"], entry["host_source"]
        signature.result_strides = {int(index): tuple(strides) for index, strides
                                    in entry.get("result_strides", {}).items()}
        stages.write("triton_kernels.py", lambda: module_source)
        stages.write("host_program.py", lambda: host_source)
        namespace = {"torch": torch, "triton_debug": triton.knobs.runtime.debug,
                     "channels_last_weight": host_program.channels_last_weights(),
                     "padded_weight": host_program.padded_weights(),
                     "recording_cuda_graph": host_program.recording_cuda_graph,
                     "allocator": host_program.allocator,
                     "KernelLauncher": KernelLauncher, "launch_mode": launch_mode,
                     "matmul_in_f32": host_program.matmul_in_f32,
                     "reinterpret": strided_views.reinterpret,
                     "as_laid_out": strided_views.as_laid_out,
                     "scatter": host_program.scatter,
                     "RuntimeCheckFailed": RuntimeCheckFailed,
                     **vars(_load_kernels(module_source))}
        filename = f"<tessel host program {stages.dump.graph_name}>"
        # Tracebacks and memory snapshots then show the host program's lines.
        linecache.cache[filename] = (len(host_source), None, host_source.splitlines(True),
                                     filename)
        exec(compile(host_source, filename, "exec"), namespace)
        launchers = {name: value for name, value in namespace.items()
                     if isinstance(value, KernelLauncher)}
        for name, (configuration, cubin) in entry.get("cubins", {}).items():
            launchers[name].cached = (configuration, CubinKernel(**cubin))

        def store_cubins() -> None:
            cubins = json.loads(json.dumps(  # as the entry, read from JSON, has them
                {name: (launcher.configuration(), asdict(launcher.cubin))
                 for name, launcher in launchers.items() if launcher.cubin is not None}))
            if cubins != entry.get("cubins", {}):
                cache.store(cache_key, {**entry, "cubins": cubins})

        tune = _autotuning(options)
        host = _building_kernels(namespace["host"], stages, compile_first, tune, store_cubins,
                                 entry.get("function_nodes", {}))
        return host, entry["kernels"]

    def checking_once_per_call(self, split: Callable) -> Callable:
        return sharing_launch_mode(split)

    def building_pieces_together(self, split: Callable, stages: Stages) -> Callable:
        """`split`, whose first call compiles the kernels of all its pieces in one
        parallel batch, found by a dry run of the whole split graph, before it runs.
        Each piece would otherwise compile its kernels at its own first call, after the
        piece before it ran; GPT-2's block, split around its attention, compiled two
        batches one after the other. In the dry run, the native ops between pieces run
        on buffers that no kernel wrote: fused attention reads no indices from them.
        Kernels that a piece loads from its cached cubins are left out; where the dry
        run or the batch fails, each piece compiles its own, and reports its errors."""
        built = False

        def first_builds_all_pieces(*args):
            nonlocal built
            if not built:
                built = True
                try:
                    with stages.timed("triton-dry-run"):
                        launches = recorded_launches(split, args)
                    with stages.timed("triton-compile"):
                        compile_in_parallel([(launcher, launch_args)
                                             for launcher, launch_args in launches
                                             if launcher.cached is None])
                except Exception:  # noqa: BLE001 -- each piece compiles its own next
                    log.debug("tessel: graph %s: its pieces' kernels compile one piece "
                              "at a time", stages.dump.graph_name, exc_info=True)
            return split(*args)
        return first_builds_all_pieces

    def replayed(self, run: Callable, graph_name: str, options, *,
                 static_inputs: frozenset[int] = frozenset(),
                 mutated_inputs: tuple[int, ...] = (), role: str = "inference",
                 output_stack_traces: list[str | None] = (),
                 runs_cpu_pieces: bool = False) -> Callable:
        """`run` replayed in PyTorch's CUDA graph trees, as Inductor's graphs are: a
        training step's forward and backward share the activations there, and every
        graph's outputs stay in the trees' memory pool until a later replay; an
        inference graph that writes its inputs in a capture of its own (cuda_graphs.py),
        which copies them back. So is a split graph with pieces compiled for the CPU (a
        constant computed on the host), a training step's too: under torch 2.11,
        hf_deberta_v2's process died of SIGSEGV in such a piece's compiled code during
        the trees' warm-up call, in inference and in training. Also on the inputs'
        device, where the current one is another."""
        # As torch.compile's modes are documented: max-autotune also uses CUDA graphs.
        if not options.replays():
            return on_device_of_inputs(run)
        if runs_cpu_pieces or (mutated_inputs and role == "inference"):
            return on_device_of_inputs(
                CudaGraphRunner(run, graph_name, static_inputs, frozenset(mutated_inputs)))
        return on_device_of_inputs(replayed_in_tree(
            run, graph_name, static_inputs, mutated_inputs, role, output_stack_traces))

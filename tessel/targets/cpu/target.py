"""The CPU target: linalg-on-tensors -> LLVM dialect (the `cpu` pipeline) -> LLVM ORC JIT."""

from __future__ import annotations

import ctypes
from typing import Callable, ClassVar

from tessel import ir
from tessel.passes.convolution_calls import CONVOLUTION_CALL, CONVOLUTION_DESCRIPTIONS
from tessel.passes.form_kernels import is_kernel
from tessel.passes.pipeline import top_level_elements
from tessel.passes.registry import lookup_pipeline
from tessel.passes.report_failed_checks import CHECK_MESSAGES
from tessel.passes.time_kernels import KERNEL_LABELS, KERNEL_TIMER
from tessel.passes.write_inputs_in_place import in_place_results
from tessel.signature import GraphSignature
from tessel.stages import Stages
from tessel.targets.base import Target
from tessel.targets.cpu import (
    convolution_runner,
    freed_memory,
    host_program,
    kernel_timer,
    runtime_symbols,
)

ENTRY_POINT = "main"


def entry_point_abi(module: ir.Module) -> host_program.EntryPointAbi:
    """Argument kinds of `main`, read from its linalg-on-tensors signature."""
    func = ir.function_named(module, ENTRY_POINT)
    kinds: list[tuple[str, object]] = []
    for arg_type in func.type.inputs:
        if isinstance(arg_type, ir.RankedTensorType):
            kinds.append(("memref", arg_type.rank))
        elif isinstance(arg_type, ir.IntegerType) and arg_type.width == 64:
            kinds.append(("scalar", "i64"))
        elif isinstance(arg_type, ir.F64Type):
            kinds.append(("scalar", "f64"))
        else:
            raise ValueError(f"entry point argument of type {arg_type} is not supported")
    results = [t.rank for t in func.type.results]
    return host_program.EntryPointAbi(kinds, results)


def external_calls(module: ir.Module) -> set[str]:
    """Names of the functions the module declares but does not define."""
    return {ir.StringAttr(op.operation.attributes["sym_name"]).value
            for op in module.body.operations
            if op.operation.name == "llvm.func" and not op.operation.regions[0].blocks}


def check_messages(module: ir.Module) -> list[str]:
    """The message of each runtime check, by id (report-failed-checks pass)."""
    attributes = module.operation.attributes
    if CHECK_MESSAGES not in attributes:
        return []
    return [ir.StringAttr(m).value for m in ir.ArrayAttr(attributes[CHECK_MESSAGES])]


def string_list(module: ir.Module, attribute: str) -> list[str]:
    """A module attribute that holds strings by id (empty where the module has none)."""
    attributes = module.operation.attributes
    if attribute not in attributes:
        return []
    return [ir.StringAttr(text).value for text in ir.ArrayAttr(attributes[attribute])]


def kernel_labels(module: ir.Module) -> list[str]:
    """What each timed kernel is, by id (time-kernels pass)."""
    return string_list(module, KERNEL_LABELS)


def count_kernels(module: ir.Module) -> int:
    """The kernels `form-kernels` made (tkern.kernel and tkern.library_call ops, and
    loop nests left unwrapped)."""
    return len(ir.ops_where(module.operation, is_kernel))


def _tensor_main(module: ir.Module) -> ir.Operation | None:
    """`main` while it still returns tensors (before bufferization makes its results
    out-params), else None."""
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == ENTRY_POINT:
            results = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).results
            if results and all(isinstance(t, ir.RankedTensorType) for t in results):
                return op
    return None


class CpuTarget(Target):
    name: ClassVar[str] = "cpu"
    default_pipeline: ClassVar[str] = "cpu"

    def compile(self, module: ir.Module, signature: GraphSignature, options,
                stages: Stages, cache_key: str | None = None,
                resume_after: str | None = None) -> tuple[Callable, int]:
        """See Target.compile. With `resume_after`, `module` is the output of that
        stage of the default pipeline and only the stages after it run. When
        options.check_accuracy is set, the host program keeps the kernel-forming stage and
        its output (with locations) as `kernel_ir`, from which tessel.accuracy rebuilds
        it with every kernel's result exposed."""
        abi = entry_point_abi(module)
        freed_memory.keep_freed_memory()
        module, kernels, kernel_ir, in_place = self._run_pipelines(module, options, stages,
                                                                   resume_after)
        failed_checks: list[int] = []
        # The compiled code reports a failed runtime check through this function.
        report_check = runtime_symbols.CHECK_CALLBACK(failed_checks.append)
        time_kernel = kernel_timer.callback(stages.dump.graph_name, kernel_labels(module))
        # A convolution that fails appends its message where failed checks go.
        convolve = convolution_runner.callback(string_list(module, CONVOLUTION_DESCRIPTIONS),
                                               failed_checks)
        with stages.timed("llvm-jit"):
            engine = ir.ExecutionEngine(module, opt_level=options.opt_level)
            called = external_calls(module)
            runtime_symbols.register(engine, called, report_check)
            if KERNEL_TIMER in called:
                engine.raw_register_runtime(KERNEL_TIMER,
                                            ctypes.cast(time_kernel, ctypes.c_void_p))
            if CONVOLUTION_CALL in called:
                engine.raw_register_runtime(CONVOLUTION_CALL,
                                            ctypes.cast(convolve, ctypes.c_void_p))
            entry_point = engine.lookup(ENTRY_POINT)
        program = host_program.generate(signature, abi, stages.dump.graph_name, in_place)
        stages.write("host_program.py", lambda: program.source)
        host = host_program.build(program, entry_point, failed_checks, check_messages(module))
        # The JIT'd code and its callback live as long as the host program.
        host.engine, host.report_check, host.time_kernel = engine, report_check, time_kernel
        host.convolve = convolve
        host.kernel_ir = kernel_ir
        return host, kernels

    def named_stages(self) -> list[tuple[str, str]]:
        """(name, pipeline text) of each stage of the default pipeline, in order."""
        return [(element.split("{")[0], element)
                for element in top_level_elements(lookup_pipeline(self.default_pipeline))]

    def stage_names_after(self, stage: str) -> list[str]:
        names = [name for name, _ in self.named_stages()]
        return names[names.index(stage) + 1:]

    def _run_pipelines(self, module: ir.Module, options, stages: Stages,
                       resume_after: str | None
                       ) -> tuple[ir.Module, int, tuple[str, str] | None, dict[int, int]]:
        """Run the pipeline one named stage at a time (one dump per stage); returns the
        final module, the number of kernels, as formed in the stage that forms them,
        (if checking accuracy) that stage's name and output with locations, and the
        results of main that its kernels write into inputs, as the last stage whose
        main still returns tensors marks them (write-inputs-in-place)."""
        named_stages = ([("pipeline", options.pipeline)] if options.pipeline is not None
                        else self.named_stages())
        names = [name for name, _ in named_stages]
        if options.profile_kernels and "cpu-fuse" in names:
            # Marks go in once kernels are formed, before they are inlined and bufferized.
            named_stages.insert(names.index("cpu-fuse") + 1,
                                ("time-kernels", "builtin.module(time-kernels)"))
        if resume_after is not None:
            remaining = set(self.stage_names_after(resume_after))
            named_stages = [(name, text) for name, text in named_stages if name in remaining]
        kernels, kernel_ir, in_place = 0, None, {}
        for name, element in named_stages:
            module = stages.run_pipeline(module, name, element)
            formed = count_kernels(module)
            if formed > kernels and options.check_accuracy:
                kernel_ir = (name, module.operation.get_asm(enable_debug_info=True))
            kernels = max(kernels, formed)
            main = _tensor_main(module)
            if main is not None:
                in_place = in_place_results(main)
        return module, kernels, kernel_ir, in_place

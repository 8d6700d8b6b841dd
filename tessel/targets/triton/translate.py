"""The Triton source of the kernels of a module the `gpu` pipeline produced: what the
Triton target compiles, and what `tessel-opt --emit triton` prints for lit tests.

Each function's layouts (layouts.py) decide which kernels walk their points channels
first; values of `main` that the host keeps narrower than their IR type
(host_program.narrowed_values) are widened as kernels load them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tessel import ir
from tessel.passes.form_kernels import is_kernel, kernel_name
from tessel.passes.fuse_horizontally import COMBO, combo_members
from tessel.targets.triton import host_program, kernel_source, layouts
from tessel.targets.triton.combo_kernel import combo_kernel
from tessel.targets.triton.kernel_source import KernelSource
from tessel.targets.triton.prelude import PRELUDE
from tessel.targets.triton.unsupported import UnsupportedKernel


def generated_kernels(function: ir.Operation, channels_last: frozenset, narrowed: Mapping
                      ) -> Iterator[tuple[ir.Operation, KernelSource | UnsupportedKernel]]:
    """Each Triton kernel of `function` (library calls are aten's) with its source, or
    the UnsupportedKernel that refused it, in program order; `channels_last` and
    `narrowed` are the function's layouts and narrowed values."""
    innermost = layouts.innermost_dims(function, channels_last)
    for kernel in ir.ops_where(function, is_kernel):
        if kernel.name == "tkern.library_call":
            continue
        try:
            yield kernel, kernel_source.generate(
                kernel, channels_last, narrowed, member=COMBO in kernel.attributes,
                innermost=innermost)
        except UnsupportedKernel as error:
            yield kernel, error


def combo_kernels(function: ir.Operation, sources: dict[str, KernelSource]
                  ) -> dict[str, KernelSource]:
    """The combo kernels of `function` (fuse-horizontally) by name, from the sources
    of their members; a combo with a member the generator refused is left out."""
    return {name: combo_kernel(name, [sources[kernel_name(member)] for member in members])
            for name, members in combo_members(function).items()
            if all(kernel_name(member) in sources for member in members)}


def triton_source(module: ir.Module) -> str:
    """The kernels' Triton module: the prelude, then one function per kernel, or a
    comment naming what refused a kernel."""
    functions = ir.defined_functions(module.operation)
    has_main = any(ir.StringAttr(f.attributes["sym_name"]).value == "main" for f in functions)
    narrowed = host_program.narrowed_values(module) if has_main else {}
    parts = [PRELUDE]
    for function in functions:
        channels_last = layouts.channels_last_values(function)
        sources = {}
        for kernel, generated in generated_kernels(function, channels_last, narrowed):
            if isinstance(generated, UnsupportedKernel):
                parts.append(f"# {kernel_name(kernel)}: unsupported: {generated}\n")
            else:
                parts.append(generated.source)
                sources[generated.name] = generated
        parts += [combo.source for combo in combo_kernels(function, sources).values()]
    return "\n\n".join(parts)

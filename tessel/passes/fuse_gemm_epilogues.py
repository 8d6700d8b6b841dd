from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.choose_gpu_blocks import template_programs
from tessel.passes.form_kernels import (
    KERNEL_OPS,
    kernel_body,
    kernel_name,
    sole_generic,
)
from tessel.passes.fuse_horizontally import initializes_library_call
from tessel.passes.registry import ModulePass, register
from tessel.passes.tile_for_threads import loop_ranges


def _pointwise_over(generic: ir.Operation | None, extents: list[int]) -> bool:
    """Whether `generic` is element-wise over exactly the gemm's m x n points: all loops
    parallel, of the gemm result's extents, every result written through the identity."""
    if generic is None:
        return False
    iterators = [str(ir.Attribute(i)) for i in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if any("parallel" not in i for i in iterators) or loop_ranges(generic) != extents:
        return False
    identity = ir.AffineMap.get_identity(len(extents))
    outputs = ir.indexing_maps(generic)[len(generic.operands) - len(generic.results):]
    return all(m == identity for m in outputs)


def _sole_user(value: ir.Value) -> tuple[ir.Operation, int] | None:
    uses = list(value.uses)
    if len(uses) != 1:
        return None
    return ir.operation_of(uses[0].owner), uses[0].operand_number


@register
@dataclass(frozen=True)
class FuseGemmEpiloguesPass(ModulePass):
    """fuse-gemm-epilogues: a 2-D gemm library call and the element-wise kernels around it
    become one kernel, which the Triton target writes as a tl.dot template.

    The epilogue is the element-wise kernel that alone reads the gemm's result, through
    the identity (bias, activation, rounding to half, residual add); the prologue is the
    element-wise kernel that computes the gemm's initial accumulator (a broadcast bias),
    when only gemms start from it (gemms of one Linear applied again start from one).
    Each program of the template then computes a tile of the product in registers and
    applies the epilogue before it stores: the f32 product never goes to memory and one
    launch replaces three.

    Cost rule, from GPU times (bf16 linear + bias + gelu, benchmarks/gemm_template.py;
    benchmarks/results/gemm_template_cuda.md): the template beat cuBLAS plus an
    epilogue kernel on gemms of up to about 2^32 multiply-adds (256x768x768, 1024^3)
    and lost above (4096^3: Triton's tl.dot reaches a lower share of the GPU's peak
    than cuBLAS does). So a gemm is fused when (1)
    its operands are of `element-types`, (2) it is static and 2-D, (3) it has at most
    `max-multiply-adds` m*n*k, and (4) it has at least `min-output-tiles` 64x64 output
    tiles: a gemm of few, long tiles (64x2048x1000, where it lost) would need K
    split across programs, which the template does not do.

    Only the gpu-max-autotune pipeline runs it: a template costs compile time (several
    times an element-wise kernel's), which the default mode's first
    call cannot afford (see passes/pipelines.py).
    """

    name: ClassVar[str] = "fuse-gemm-epilogues"
    element_types: str = "f16,bf16"
    max_multiply_adds: int = 1 << 32
    min_output_tiles: int = 32

    def run(self, module: ir.Operation) -> None:
        calls = ir.ops_where(module, lambda op: op.name == KERNEL_OPS[1]
                             and ir.StringAttr(op.attributes["callee"]).value == "gemm")
        with module.context:
            for call in calls:
                self.fuse(call)

    def fuse(self, call: ir.Operation) -> None:
        """Fuse the gemm library call `call` with its epilogue (and prologue), when the
        cost rule holds and it has an epilogue."""
        matmul = kernel_body(call)[0]
        if not self.pays(matmul):
            return
        extents = list(ir.RankedTensorType(matmul.results[0].type).shape)
        # The reader is the generic inside a kernel (kernel regions see main's values).
        user = _sole_user(call.results[0])
        epilogue = user[0] if user and user[0].name == "linalg.generic" else None
        epilogue_kernel = epilogue.parent if epilogue is not None else None
        if sole_generic(epilogue_kernel) != epilogue or not _pointwise_over(epilogue, extents) \
                or ir.indexing_maps(epilogue)[user[1]] != ir.AffineMap.get_identity(2):
            return
        init = matmul.operands[2]
        init_kernel = ir.operation_of(init.owner)
        prologue = sole_generic(init_kernel)
        # Gemms that share a bias share its broadcast (CSE merged theirs): each template
        # computes it again, in registers, rather than reading it from memory.
        if not (_pointwise_over(prologue, extents)
                and all(initializes_library_call(use) for use in init.uses)):
            init_kernel = prologue = None
        _fuse(call, matmul, epilogue_kernel, epilogue, init_kernel, prologue)

    def pays(self, matmul: ir.Operation) -> bool:
        """The cost rule of the docstring, for one gemm."""
        if matmul.name != "linalg.matmul":
            return False
        types = [ir.RankedTensorType(v.type) for v in matmul.operands]
        if not all(t.has_static_shape and t.rank == 2 for t in types):
            return False
        if {str(t.element_type) for t in types[:2]} - set(self.element_types.split(",")):
            return False
        m, n, k = loop_ranges(matmul)
        return (m * n * k <= self.max_multiply_adds
                and template_programs(m, n, 64, 64) >= self.min_output_tiles)


def _fuse(call: ir.Operation, matmul: ir.Operation, epilogue_kernel: ir.Operation,
          epilogue: ir.Operation, init_kernel: ir.Operation | None,
          prologue: ir.Operation | None) -> None:
    """One tkern.kernel, where the epilogue's kernel was, running the prologue, the
    matmul and the epilogue; it takes the epilogue kernel's name."""
    with call.context, epilogue_kernel.location:
        with ir.InsertionPoint(epilogue_kernel):
            fused = ir.Operation.create(
                KERNEL_OPS[0], results=[r.type for r in epilogue_kernel.results],
                attributes={"sym_name": ir.StringAttr.get(kernel_name(epilogue_kernel))},
                regions=1)
        block = fused.regions[0].blocks.append()
        with ir.InsertionPoint(block):
            terminator = ir.Operation.create("tkern.yield", operands=list(epilogue.results))
    if prologue is not None:
        # The prologue's own copy, in the template: other gemms may start from its kernel.
        matmul.operands[2] = prologue.clone(ip=ir.InsertionPoint(terminator)).results[0]
    for op in (matmul, epilogue):
        op.move_before(terminator)
    call_result = call.results[0]
    for use in list(call_result.uses):
        ir.operation_of(use.owner).operands[use.operand_number] = matmul.results[0]
    for old, new in zip(epilogue_kernel.results, fused.results):
        old.replace_all_uses_with(new)
    for kernel in (epilogue_kernel, call):
        kernel.erase()
    if init_kernel is not None and not any(True for r in init_kernel.results for _ in r.uses):
        init_kernel.erase()

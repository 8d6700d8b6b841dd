from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, func, linalg, llvm, memref, scf

from tessel import ir
from tessel.passes.contractions import is_multiply_accumulate
from tessel.passes.convolution_calls import (
    OVERWRITES_OUTPUT,
    is_library_convolution,
    replace_with_calls,
)
from tessel.passes.launch_with_openmp import OPENMP_DECLARATIONS, OPENMP_THREADS
from tessel.passes.outline_parallel_loops import outline
from tessel.passes.registry import ModulePass, register

_BLAS = {"f32": ("sgemm_", 4), "f64": ("dgemm_", 8)}
BLAS_ELEMENTS = frozenset(_BLAS)

_BLAS_DECLARATION = """
llvm.func @{blas}(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr,
                  !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
"""

# C[m, n] = beta C[m, n] + sum_k A[m, k] B[k, n] on strided memory, through BLAS's
# Fortran gemm (column-major, every argument by pointer); beta is 1, or 0 where C's
# contents are not to be read (an overwritten zero accumulator). Row-major C is column-major C^T, and
# C^T = B^T A^T, so B goes first. An operand whose k (for A) or n (for B) stride is 1
# is read as stored ('N'); one whose other stride is 1 is read transposed ('T').
_GEMM_HELPER = """
func.func private @{helper}(
    %a_base: memref<{et}>, %a_offset: index, %a_sm: index, %a_sk: index,
    %b_base: memref<{et}>, %b_offset: index, %b_sk: index, %b_sn: index,
    %c_base: memref<{et}>, %c_offset: index, %c_sm: index,
    %m: index, %n: index, %k: index, %beta: {et}) {{
  %one = arith.constant 1 : index
  %a_ptr = func.call @{helper}_pointer(%a_base, %a_offset) : (memref<{et}>, index) -> !llvm.ptr
  %b_ptr = func.call @{helper}_pointer(%b_base, %b_offset) : (memref<{et}>, index) -> !llvm.ptr
  %c_ptr = func.call @{helper}_pointer(%c_base, %c_offset) : (memref<{et}>, index) -> !llvm.ptr
  %a_plain = arith.cmpi eq, %a_sk, %one : index
  %b_plain = arith.cmpi eq, %b_sn, %one : index
  %a_ld = arith.select %a_plain, %a_sm, %a_sk : index
  %a_rows = arith.select %a_plain, %k, %m : index
  %b_ld = arith.select %b_plain, %b_sk, %b_sn : index
  %b_rows = arith.select %b_plain, %n, %k : index
  // BLAS wants leading dimensions >= max(1, rows of the stored matrix).
  %a_ld_rows = arith.maxui %a_ld, %a_rows : index
  %lda_value = arith.maxui %a_ld_rows, %one : index
  %b_ld_rows = arith.maxui %b_ld, %b_rows : index
  %ldb_value = arith.maxui %b_ld_rows, %one : index
  %c_ld_rows = arith.maxui %c_sm, %n : index
  %ldc_value = arith.maxui %c_ld_rows, %one : index
  %count = llvm.mlir.constant(1 : i32) : i32
  %ints = llvm.alloca %count x !llvm.array<6 x i32> : (i32) -> !llvm.ptr
  %m_slot = llvm.getelementptr %ints[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %n_slot = llvm.getelementptr %ints[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %k_slot = llvm.getelementptr %ints[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %lda = llvm.getelementptr %ints[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %ldb = llvm.getelementptr %ints[0, 4] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %ldc = llvm.getelementptr %ints[0, 5] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %m_i32 = arith.index_cast %m : index to i32
  llvm.store %m_i32, %m_slot : i32, !llvm.ptr
  %n_i32 = arith.index_cast %n : index to i32
  llvm.store %n_i32, %n_slot : i32, !llvm.ptr
  %k_i32 = arith.index_cast %k : index to i32
  llvm.store %k_i32, %k_slot : i32, !llvm.ptr
  %lda_i32 = arith.index_cast %lda_value : index to i32
  llvm.store %lda_i32, %lda : i32, !llvm.ptr
  %ldb_i32 = arith.index_cast %ldb_value : index to i32
  llvm.store %ldb_i32, %ldb : i32, !llvm.ptr
  %ldc_i32 = arith.index_cast %ldc_value : index to i32
  llvm.store %ldc_i32, %ldc : i32, !llvm.ptr
  %flags = llvm.alloca %count x !llvm.array<2 x i8> : (i32) -> !llvm.ptr
  %a_flag = llvm.getelementptr %flags[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x i8>
  %b_flag = llvm.getelementptr %flags[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x i8>
  %letter_n = arith.constant 78 : i8
  %letter_t = arith.constant 84 : i8
  %a_letter = arith.select %a_plain, %letter_n, %letter_t : i8
  llvm.store %a_letter, %a_flag : i8, !llvm.ptr
  %b_letter = arith.select %b_plain, %letter_n, %letter_t : i8
  llvm.store %b_letter, %b_flag : i8, !llvm.ptr
  %one_value = llvm.mlir.constant(1.0 : {et}) : {et}
  %scale = llvm.alloca %count x {et} : (i32) -> !llvm.ptr
  llvm.store %one_value, %scale : {et}, !llvm.ptr
  %beta_slot = llvm.alloca %count x {et} : (i32) -> !llvm.ptr
  llvm.store %beta, %beta_slot : {et}, !llvm.ptr
  llvm.call @{blas}(%b_flag, %a_flag, %n_slot, %m_slot, %k_slot, %scale, %b_ptr, %ldb, %a_ptr, %lda, %beta_slot, %c_ptr, %ldc) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
  return
}}
func.func private @{helper}_pointer(%base: memref<{et}>, %offset: index) -> !llvm.ptr {{
  %address = memref.extract_aligned_pointer_as_index %base : memref<{et}> -> index
  %element_bytes = arith.constant {bytes} : index
  %offset_bytes = arith.muli %offset, %element_bytes : index
  %element_address = arith.addi %address, %offset_bytes : index
  %as_int = arith.index_cast %element_address : index to i64
  %pointer = llvm.inttoptr %as_int : i64 to !llvm.ptr
  return %pointer : !llvm.ptr
}}
"""


@dataclass(frozen=True)
class Contraction:
    """A linalg op computing C[b.., m, n] += A[.., m, .., k] * B[.., k, .., n] (any dim order).

    `dims[x]` maps each role to the operand's memref dim: x in 'abc', role in
    'mnk' or ('batch', loop dim). Unit loop dims count as batch dims of extent 1.
    `overwrites`: C's contents are not read (gemm's beta is 0).
    """
    element: str
    m: int
    n: int
    k: int
    batch: list[int]                          # loop dims looped over (in order)
    operand_dims: list[dict[int, int]]        # per operand: loop dim -> memref dim
    overwrites: bool = False


def _pure_dims(affine_map) -> list[int] | None:
    results = list(affine_map.results)
    if not all(isinstance(e, ir.AffineDimExpr) for e in results):
        return None
    return [e.position for e in results]


def analyze(op: ir.Operation) -> Contraction | None:
    """The contraction `op` computes, if a strided gemm can do it; else None.

    Dims in A and B only are reductions (exactly one, besides unit dims). Of the dims
    in A and C only, one becomes gemm's m; of those in B and C only, one becomes n;
    every other dim (in all three operands, or a second m/n candidate such as a
    batch dim that a shared weight lacks) is looped over with one gemm per index.
    """
    if len(op.operands) != 3 or len(op.results) != 0 or not is_multiply_accumulate(op):
        return None
    if "indexing_maps" not in op.attributes:  # a named convolution: its maps are implicit
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.MemRefType) for t in types):
        return None
    elements = {str(t.element_type) for t in types}
    if len(elements) != 1 or not elements <= set(_BLAS):
        return None
    maps = [_pure_dims(ir.AffineMapAttr(m).value) for m in op.attributes["indexing_maps"]]
    if any(m is None or len(set(m)) != len(m) for m in maps):
        return None
    loop_count = ir.AffineMapAttr(op.attributes["indexing_maps"][0]).value.n_dims
    sizes = _loop_sizes(types, maps, loop_count)
    a, b, c = (set(m) for m in maps)
    if a | b | c != set(range(loop_count)):
        return None
    unit = {d for d in range(loop_count) if sizes.get(d) == 1}
    reductions = ((a & b) - c) - unit
    if len(reductions) != 1:
        return None
    operand_dims = [{d: i for i, d in enumerate(m)} for m in maps]
    c_strides, _ = types[2].get_strides_and_offset()

    def innermost_in_c_first(dims):
        return sorted(dims, key=lambda d: c_strides[operand_dims[2][d]])

    (k,) = reductions
    for m in innermost_in_c_first(((a & c) - b) - unit):
        for n in innermost_in_c_first(((b & c) - a) - unit):
            batch = [d for d in range(loop_count) if d not in (m, n, k)]
            contraction = Contraction(next(iter(elements)), m, n, k, batch, operand_dims)
            if _gemm_able(contraction, types):
                return contraction
    return None


def _loop_sizes(types, maps, loop_count) -> dict[int, int]:
    sizes = {}
    for memref_type, dims in zip(types, maps):
        for memref_dim, loop_dim in enumerate(dims):
            size = memref_type.shape[memref_dim]
            if size != ir.ShapedType.get_dynamic_size():
                sizes[loop_dim] = size
    return sizes


def _gemm_able(c: Contraction, types) -> bool:
    """A and B need a unit stride along one matrix dim, C along n (known statically)."""
    def unit(operand: int, loop_dim: int) -> bool:
        strides, _ = types[operand].get_strides_and_offset()
        return strides[c.operand_dims[operand][loop_dim]] == 1
    return ((unit(0, c.k) or unit(0, c.m)) and (unit(1, c.n) or unit(1, c.k))
            and unit(2, c.n))


@register
@dataclass(frozen=True)
class LibraryCallsPass(ModulePass):
    """library-calls: run f32/f64 contractions on memrefs (matmul, batch_matmul, and
    generics that multiply-accumulate, with transposes fused in) through BLAS gemm.

    A tuned gemm (the MKL that torch bundles) beats generated loops by an order of
    magnitude. Each batch index gets one gemm call on strided views, so transposed
    and permuted operands need no copies. Ops a gemm cannot express (broadcast
    operands, no unit stride) keep their loops. Named f32 convolutions become calls to
    the target's convolution routine (convolution_calls.py).

    An op marked `tessel.overwrites_output` (overwrite-zero-accumulators) does not
    read its output: its gemms run with beta = 0 where each writes a part of the output
    of its own (every batch dim indexes the output); any other such op, left as loops
    or accumulating across gemms, gets its zero fill back before it.

    A batch of small matrices (at most `batch-threads-max-multiply-adds` each, all
    sizes static, in a function's body) runs its matrices across threads, one
    single-threaded gemm each (BLAS called inside a parallel region), instead of one
    multi-threaded gemm after another, whose every call pays the threads' fork and
    join for a few microseconds of work (as eager's batched MKL gemm splits the
    batch). A batch of larger matrices (a 1x1 convolution's images) chooses when it
    runs: where the thread count divides the number of matrices, each thread takes
    the same number of whole matrices, one single-threaded gemm each (as eager's
    convolution splits its images), instead of every gemm splitting its matrix across
    the threads; other thread counts (more threads than images) keep one
    multi-threaded gemm per matrix.
    """

    name: ClassVar[str] = "library-calls"
    batch_threads_max_multiply_adds: int = 1 << 22

    def run(self, module: ir.Operation) -> None:
        module_body = module.regions[0].blocks[0]
        linalg_ops = ir.ops_where(module, lambda op: op.name.startswith("linalg."))
        found = [(op, _with_overwrite(op, c)) for op in linalg_ops
                 if (c := analyze(op)) is not None]
        convolutions = [op for op in linalg_ops if is_library_convolution(op)]
        overwritten = {op for op, c in found if c.overwrites} | set(convolutions)
        for op in linalg_ops:
            if OVERWRITES_OUTPUT in op.attributes and op not in overwritten:
                _fill_with_zeros(op)
        helpers: dict[str, str] = {}
        for number, (op, contraction) in enumerate(found):
            if contraction.element not in helpers:
                helpers[contraction.element] = _declare_helper(module, contraction.element)
            helper, batch_name = helpers[contraction.element], f"tessel_gemm_batch_{number}"
            matrices = _static_matrices(op, contraction)
            with ir.InsertionPoint(op), op.location:
                if matrices is not None and self.small(op, contraction):
                    outline(_emit_batch_parallel_gemm(op, contraction, helper), batch_name,
                            module_body)
                elif matrices is not None:
                    _emit_gemms_by_thread_count(op, contraction, helper, batch_name,
                                                matrices, module)
                else:
                    _emit_gemm(op, contraction, helper)
            op.erase()
        replace_with_calls(module, convolutions)


    def small(self, op: ir.Operation, c: Contraction) -> bool:
        """Whether each of `op`'s matrices is small enough to run one per thread at any
        thread count."""
        sizes = _sizes(op)
        return sizes[c.m] * sizes[c.n] * sizes[c.k] <= self.batch_threads_max_multiply_adds


def _sizes(op: ir.Operation) -> dict[int, int]:
    maps = [ir.AffineMapAttr(m).value for m in op.attributes["indexing_maps"]]
    return _loop_sizes([v.type for v in op.operands], [_pure_dims(m) for m in maps],
                       maps[0].n_dims)


def _static_matrices(op: ir.Operation, c: Contraction) -> int | None:
    """How many matrices `op` computes, if several, of static sizes, each written by one
    gemm of its own, in a function's body (not already inside a loop of threads, or any
    loop); else None."""
    if op.parent.name != "func.func":
        return None
    sizes = _sizes(op)
    # A batch dim that C lacks (a second reduction) adds into the same matrix.
    if (any(d not in sizes for d in [c.m, c.n, c.k, *c.batch])
            or any(d not in c.operand_dims[2] for d in c.batch)):
        return None
    matrices = math.prod(sizes[d] for d in c.batch)
    return matrices if matrices >= 2 else None


def _with_overwrite(op: ir.Operation, c: Contraction) -> Contraction:
    """`c`, overwriting its output if `op` is marked so and each of its gemms writes a
    part of the output of its own: a batch dim that the output lacks (a second
    reduction) is looped over with every gemm adding into the same matrix."""
    if OVERWRITES_OUTPUT not in op.attributes:
        return c
    maps = [_pure_dims(ir.AffineMapAttr(m).value) for m in op.attributes["indexing_maps"]]
    sizes = _loop_sizes([v.type for v in op.operands], maps, len(c.batch) + 3)
    return dataclasses.replace(c, overwrites=all(
        d in c.operand_dims[2] or sizes.get(d) == 1 for d in c.batch))


def _fill_with_zeros(op: ir.Operation) -> None:
    """Write zeros into `op`'s output memref before it and drop its overwrite mark: it
    accumulates into them as the op says."""
    output = op.operands[len(op.operands) - 1]
    element = ir.MemRefType(output.type).element_type
    with ir.InsertionPoint(op), op.location:
        linalg.fill(arith.constant(element, 0.0), outs=[output])
    del op.attributes[OVERWRITES_OUTPUT]


def _declare_helper(module: ir.Operation, element: str) -> str:
    blas, size = _BLAS[element]
    helper = f"tessel_gemm_{element}"
    text = _BLAS_DECLARATION.format(blas=blas) + _GEMM_HELPER.format(
        blas=blas, helper=helper, et=element, bytes=size)
    with module.context:
        parsed = ir.Module.parse(text)
        first = module.regions[0].blocks[0].operations[0]
        for op in list(parsed.body.operations):
            op.operation.move_before(first)
    return helper


class _GemmCalls:
    """Builds, before `op`, the helper calls that compute its matrices: the operands'
    strided metadata, and one call per matrix at given operand offsets."""

    def __init__(self, op: ir.Operation, c: Contraction, helper: str):
        self.c, self.helper = c, helper
        self.metadata = [memref.ExtractStridedMetadataOp(v) for v in op.operands]
        self.element = ir.MemRefType(op.operands[2].type).element_type

    def stride(self, operand: int, loop_dim: int) -> ir.Value:
        return self.metadata[operand].strides[self.c.operand_dims[operand][loop_dim]]

    def size(self, operand: int, loop_dim: int) -> ir.Value:
        return self.metadata[operand].sizes[self.c.operand_dims[operand][loop_dim]]

    def extent(self, loop_dim: int) -> ir.Value:
        return self.size(next(x for x in (2, 0, 1) if loop_dim in self.c.operand_dims[x]),
                         loop_dim)

    def offsets(self) -> list[ir.Value]:
        return [m.offset for m in self.metadata]

    def moved(self, offsets: list[ir.Value], loop_dim: int, position: ir.Value) -> list[ir.Value]:
        """The operands' offsets at `position` along batch dim `loop_dim`."""
        return [arith.addi(offset, arith.muli(position, self.stride(x, loop_dim)))
                if loop_dim in self.c.operand_dims[x] else offset
                for x, offset in enumerate(offsets)]

    def call(self, offsets: list[ir.Value]) -> None:
        c, metadata = self.c, self.metadata
        func.call([], ir.FlatSymbolRefAttr.get(self.helper), [
            metadata[0].base_buffer, offsets[0], self.stride(0, c.m), self.stride(0, c.k),
            metadata[1].base_buffer, offsets[1], self.stride(1, c.k), self.stride(1, c.n),
            metadata[2].base_buffer, offsets[2], self.stride(2, c.m),
            self.size(2, c.m), self.size(2, c.n), self.size(0, c.k),
            arith.constant(self.element, 0.0 if c.overwrites else 1.0)])


def _emit_gemms_by_thread_count(op: ir.Operation, c: Contraction, helper: str, name: str,
                                matrices: int, module: ir.Operation) -> None:
    """At the insertion point: if OpenMP's thread count divides `matrices`, `op`'s
    matrices across threads (outlined as `name`), else one gemm after another."""
    module_body = module.regions[0].blocks[0]
    if not any(existing.operation.name == "llvm.func"
               and ir.StringAttr(existing.operation.attributes["sym_name"]).value == OPENMP_THREADS
               for existing in module_body.operations):
        declaration = ir.Module.parse(OPENMP_DECLARATIONS[OPENMP_THREADS], module.context)
        declaration.body.operations[0].operation.move_before(module_body.operations[0])
    index = ir.IndexType.get()
    threads = arith.index_cast(index, llvm.call(ir.IntegerType.get_signless(32), [], [], [],
                                                callee=OPENMP_THREADS))
    balanced = arith.cmpi(arith.CmpIPredicate.eq,
                          arith.remui(arith.constant(index, matrices), threads),
                          arith.constant(index, 0))
    choice = scf.IfOp(balanced, [], has_else=True)
    with ir.InsertionPoint(choice.then_block):
        outline(_emit_batch_parallel_gemm(op, c, helper), name, module_body)
        scf.yield_([])
    with ir.InsertionPoint(choice.else_block):
        _emit_gemm(op, c, helper)
        scf.yield_([])


def _emit_gemm(op: ir.Operation, c: Contraction, helper: str) -> None:
    """At the insertion point: loops over the batch dims around one helper call per
    (m, n) matrix."""
    calls = _GemmCalls(op, c, helper)
    index = ir.IndexType.get()
    zero, one = arith.constant(index, 0), arith.constant(index, 1)

    def loop_over(batch_dims: list[int], offsets: list[ir.Value]) -> None:
        if not batch_dims:
            calls.call(offsets)
            return
        loop = scf.ForOp(zero, calls.extent(batch_dims[0]), one)
        with ir.InsertionPoint(loop.body):
            loop_over(batch_dims[1:],
                      calls.moved(offsets, batch_dims[0], loop.induction_variable))
            scf.yield_([])

    loop_over(c.batch, calls.offsets())


def _emit_batch_parallel_gemm(op: ir.Operation, c: Contraction, helper: str) -> ir.Operation:
    """At the insertion point: one scf.parallel over all of `op`'s matrices (its batch
    dims, of static sizes, linearized), a helper call each; returns the loop."""
    calls = _GemmCalls(op, c, helper)
    index = ir.IndexType.get()
    extents = [ir.MemRefType(op.operands[x].type).shape[c.operand_dims[x][d]]
               for d in c.batch
               for x in [next(x for x in (2, 0, 1) if d in c.operand_dims[x])]]
    loop = scf.ParallelOp([], [arith.constant(index, 0)],
                          [arith.constant(index, math.prod(extents))],
                          [arith.constant(index, 1)], [])
    body = loop.regions[0].blocks.append(index)
    with ir.InsertionPoint(body):
        rest, offsets = body.arguments[0], calls.offsets()
        for loop_dim, extent in reversed(list(zip(c.batch, extents))):
            extent_value = arith.constant(index, extent)
            offsets = calls.moved(offsets, loop_dim, arith.remui(rest, extent_value))
            rest = arith.divui(rest, extent_value)
        calls.call(offsets)
        scf.ReduceOp([], 0)
    return loop.operation

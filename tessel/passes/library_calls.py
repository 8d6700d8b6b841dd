from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import arith, func, memref, scf

from tessel import ir
from tessel.passes.registry import ModulePass, register

# BLAS's Fortran gemm (column-major, all arguments by pointer). A row-major
# C(MxN) += A(MxK) B(KxN) is the column-major C^T += B^T A^T, so B goes first; a
# row-major buffer read column-major is its transpose, so an operand stored
# transposed (its indexing map swaps the dims) gets flag 'T' instead of 'N'.
_BLAS_DECLARATION = """
llvm.func @{blas}(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr,
                  !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
"""

_GEMM_HELPER = """
func.func private @{helper}(%a: {mt}, %b: {mt}, %c: {mt}) {{
  %a_base, %a_off, %a_rows, %a_cols, %a_ld, %a_one = memref.extract_strided_metadata %a : {mt} -> memref<{et}>, index, index, index, index, index
  %b_base, %b_off, %b_rows, %b_cols, %b_ld, %b_one = memref.extract_strided_metadata %b : {mt} -> memref<{et}>, index, index, index, index, index
  %c_base, %c_off, %c_rows, %c_cols, %c_ld, %c_one = memref.extract_strided_metadata %c : {mt} -> memref<{et}>, index, index, index, index, index
  %a_ptr = func.call @{helper}_pointer(%a_base, %a_off) : (memref<{et}>, index) -> !llvm.ptr
  %b_ptr = func.call @{helper}_pointer(%b_base, %b_off) : (memref<{et}>, index) -> !llvm.ptr
  %c_ptr = func.call @{helper}_pointer(%c_base, %c_off) : (memref<{et}>, index) -> !llvm.ptr
  // BLAS wants each leading dimension >= max(1, columns), also for 1-row views.
  %one_index = arith.constant 1 : index
  %lda_cols = arith.maxui %a_ld, %a_cols : index
  %lda_value = arith.maxui %lda_cols, %one_index : index
  %ldb_cols = arith.maxui %b_ld, %b_cols : index
  %ldb_value = arith.maxui %ldb_cols, %one_index : index
  %ldc_cols = arith.maxui %c_ld, %c_cols : index
  %ldc_value = arith.maxui %ldc_cols, %one_index : index
  %count = llvm.mlir.constant(1 : i32) : i32
  %ints = llvm.alloca %count x !llvm.array<6 x i32> : (i32) -> !llvm.ptr
  %m = llvm.getelementptr %ints[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %n = llvm.getelementptr %ints[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %k = llvm.getelementptr %ints[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %lda = llvm.getelementptr %ints[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %ldb = llvm.getelementptr %ints[0, 4] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %ldc = llvm.getelementptr %ints[0, 5] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i32>
  %m_i32 = arith.index_cast %c_rows : index to i32
  llvm.store %m_i32, %m : i32, !llvm.ptr
  %n_i32 = arith.index_cast %c_cols : index to i32
  llvm.store %n_i32, %n : i32, !llvm.ptr
  %k_i32 = arith.index_cast %a_{k_dim} : index to i32
  llvm.store %k_i32, %k : i32, !llvm.ptr
  %lda_i32 = arith.index_cast %lda_value : index to i32
  llvm.store %lda_i32, %lda : i32, !llvm.ptr
  %ldb_i32 = arith.index_cast %ldb_value : index to i32
  llvm.store %ldb_i32, %ldb : i32, !llvm.ptr
  %ldc_i32 = arith.index_cast %ldc_value : index to i32
  llvm.store %ldc_i32, %ldc : i32, !llvm.ptr
  %flags = llvm.alloca %count x !llvm.array<2 x i8> : (i32) -> !llvm.ptr
  %a_flag = llvm.getelementptr %flags[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x i8>
  %b_flag = llvm.getelementptr %flags[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x i8>
  %a_letter = llvm.mlir.constant({a_letter} : i8) : i8
  llvm.store %a_letter, %a_flag : i8, !llvm.ptr
  %b_letter = llvm.mlir.constant({b_letter} : i8) : i8
  llvm.store %b_letter, %b_flag : i8, !llvm.ptr
  %one_value = llvm.mlir.constant(1.0 : {et}) : {et}
  %one = llvm.alloca %count x {et} : (i32) -> !llvm.ptr
  llvm.store %one_value, %one : {et}, !llvm.ptr
  llvm.call @{blas}(%b_flag, %a_flag, %n, %m, %k, %one, %b_ptr, %ldb, %a_ptr, %lda, %one, %c_ptr, %ldc) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
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

_BLAS = {"f32": ("sgemm_", 4), "f64": ("dgemm_", 8)}


def _strided_type(element: str) -> str:
    return f"memref<?x?x{element}, strided<[?, 1], offset: ?>>"


@register
@dataclass(frozen=True)
class LibraryCallsPass(ModulePass):
    """library-calls: run f32/f64 linalg.matmul and batch_matmul on memrefs through BLAS gemm.

    A tuned gemm (the MKL that torch bundles) beats generated loops by an order of
    magnitude. Applies to buffers whose rows are contiguous (unit inner stride); others
    keep their loops. batch_matmul becomes a loop of gemm calls over the batch.
    """

    name: ClassVar[str] = "library-calls"

    def run(self, module: ir.Operation) -> None:
        calls = []

        def visit(op):
            if op.operation.name in ("linalg.matmul", "linalg.batch_matmul"):
                element = _gemm_element(op.operation)
                transposed = _transposed_operands(op.operation)
                if element is not None and transposed is not None:
                    calls.append((op.operation, (element, transposed)))
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        helpers = {}
        declared_blas = set()
        for op, (element, transposed) in calls:
            key = (element, transposed)
            if key not in helpers:
                helpers[key] = self._declare_helper(module, element, transposed,
                                                    declare_blas=element not in declared_blas)
                declared_blas.add(element)
            self._replace(op, helpers[key], element)

    @staticmethod
    def _declare_helper(module: ir.Operation, element: str, transposed: tuple[bool, bool],
                        declare_blas: bool) -> str:
        blas, size = _BLAS[element]
        suffix = "".join("t" if t else "n" for t in transposed)
        helper = f"tessel_gemm_{element}_{suffix}"
        text = _GEMM_HELPER.format(
            blas=blas, helper=helper, et=element, bytes=size, mt=_strided_type(element),
            a_letter=ord("T" if transposed[0] else "N"), b_letter=ord("T" if transposed[1] else "N"),
            k_dim="rows" if transposed[0] else "cols")
        # The helper parses on its own, so it always comes with the BLAS declaration.
        text = _BLAS_DECLARATION.format(blas=blas) + text
        with module.context:
            parsed = ir.Module.parse(text)
            body = module.regions[0].blocks[0]
            first = body.operations[0]
            for op in list(parsed.body.operations):
                if op.operation.name == "llvm.func" and not declare_blas:
                    continue
                op.operation.move_before(first)
        return helper

    @staticmethod
    def _replace(op: ir.Operation, helper: str, element: str) -> None:
        a, b, c = op.operands
        with ir.InsertionPoint(op), op.location:
            target = ir.Type.parse(_strided_type(element))
            if op.name == "linalg.matmul":
                func.call([], ir.FlatSymbolRefAttr.get(helper),
                          [memref.cast(target, v) for v in (a, b, c)])
            else:
                _batched_call(helper, target, a, b, c)
        op.erase()


def _batched_call(helper: str, target: ir.Type, a, b, c) -> None:
    """scf.for over the batch, one gemm per rank-reduced 2-D slice."""
    index = ir.IndexType.get()
    zero, one = arith.constant(index, 0), arith.constant(index, 1)
    batch = memref.dim(c, zero)
    loop = scf.ForOp(zero, batch, one)
    with ir.InsertionPoint(loop.body):
        slices = [_matrix(v, loop.induction_variable) for v in (a, b, c)]
        func.call([], ir.FlatSymbolRefAttr.get(helper), [memref.cast(target, s) for s in slices])
        scf.yield_([])


def _matrix(batched: ir.Value, position: ir.Value) -> ir.Value:
    """batched[position] as a rank-2 subview, typed as subview infers it."""
    index = ir.IndexType.get()
    sizes = [size if size != ir.ShapedType.get_dynamic_size()
             else memref.dim(batched, arith.constant(index, d + 1))
             for d, size in enumerate(batched.type.shape[1:])]
    shape = [_dim_text(d) for d in batched.type.shape[1:]]
    strides, _ = batched.type.get_strides_and_offset()
    result = ir.Type.parse(
        f"memref<{shape[0]}x{shape[1]}x{batched.type.element_type}, "
        f"strided<[{_dim_text(strides[1])}, {_dim_text(strides[2])}], offset: ?>>")
    return memref.subview(batched, [position, 0, 0], [1, *sizes], [1, 1, 1], result_type=result)


def _dim_text(value: int) -> str:
    dynamic = (ir.ShapedType.get_dynamic_size(), ir.ShapedType.get_dynamic_stride_or_offset())
    return "?" if value in dynamic else str(value)


def _gemm_element(op: ir.Operation) -> str | None:
    """'f32'/'f64' when every operand is a memref of that type with unit inner stride."""
    elements = set()
    for value in op.operands:
        if not isinstance(value.type, ir.MemRefType):
            return None
        strides, _ = value.type.get_strides_and_offset()
        if strides[-1] != 1:
            return None
        elements.add(str(value.type.element_type))
    if len(elements) != 1 or not elements <= set(_BLAS):
        return None
    return elements.pop()


def _transposed_operands(op: ir.Operation) -> tuple[bool, bool] | None:
    """Whether A and B are read transposed, from the matmul's indexing maps; None for
    maps a gemm cannot express (broadcasts, other permutations)."""
    if "indexing_maps" not in op.attributes:
        return (False, False)
    maps = [ir.AffineMapAttr(m).value for m in op.attributes["indexing_maps"]]
    batch = 1 if op.name == "linalg.batch_matmul" else 0
    m, n, k = batch, batch + 1, batch + 2

    def dims(affine_map):
        results = list(affine_map.results)
        if len(results) != batch + 2 or not all(isinstance(e, ir.AffineDimExpr) for e in results):
            return None
        return tuple(e.position for e in results[batch:])

    a, b, c = (dims(x) for x in maps)
    if c != (m, n) or a not in ((m, k), (k, m)) or b not in ((k, n), (n, k)):
        return None
    return (a == (k, m), b == (n, k))

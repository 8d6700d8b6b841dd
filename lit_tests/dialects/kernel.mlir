// RUN: not %opt %s --split-input-file -p canonicalize,cse 2>/dev/null | filecheck %s
// RUN: not %opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=ERR

// tkern ops parse, verify, and survive canonicalize and cse; the kernel's body can
// read values of the enclosing function.
// CHECK-LABEL: func.func @kernel_and_library_call
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x3xf32>, %[[C:.*]]: tensor<4x3xf32>)
// CHECK:         %[[K:.*]] = "tkern.kernel"() ({
// CHECK:           %[[SUM:.*]] = arith.addf %[[A]], %[[A]]
// CHECK:           "tkern.yield"(%[[SUM]])
// CHECK:         }) {sym_name = "main_kernel_0"} : () -> tensor<4x8xf32>
// CHECK:         "tkern.library_call"() ({
// CHECK:           linalg.matmul ins(%[[K]], %[[B]]
// CHECK:         }) {callee = "gemm"}
func.func @kernel_and_library_call(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %k = "tkern.kernel"() ({
    %s = arith.addf %a, %a : tensor<4x8xf32>
    "tkern.yield"(%s) : (tensor<4x8xf32>) -> ()
  }) {sym_name = "main_kernel_0"} : () -> tensor<4x8xf32>
  %m = "tkern.library_call"() ({
    %r = linalg.matmul ins(%k, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%c : tensor<4x3xf32>) -> tensor<4x3xf32>
    "tkern.yield"(%r) : (tensor<4x3xf32>) -> ()
  }) {callee = "gemm"} : () -> tensor<4x3xf32>
  return %m : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @alloc_with_dynamic_size
// CHECK:         "tkern.alloc"(%{{.*}}) : (index) -> memref<?x4xf32>
func.func @alloc_with_dynamic_size(%n: index) -> memref<?x4xf32> {
  %buffer = "tkern.alloc"(%n) : (index) -> memref<?x4xf32>
  return %buffer : memref<?x4xf32>
}

// -----

// Alloc sizes must be index values.
// ERR: error: expected base type 'builtin.index' but got 'builtin.integer'
func.func @negative_alloc_size_not_index(%n: i32) {
  %buffer = "tkern.alloc"(%n) : (i32) -> memref<?xf32>
  return
}

// -----

// A kernel's results are tensors or memrefs, never scalars.
// ERR: error: 'f32' does not satisfy the constraint
func.func @negative_scalar_kernel_result(%x: f32) -> f32 {
  %k = "tkern.kernel"() ({
    "tkern.yield"() : () -> ()
  }) {sym_name = "bad"} : () -> f32
  return %k : f32
}

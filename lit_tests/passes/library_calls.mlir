// RUN: %opt %s --split-input-file -p library-calls | filecheck %s

// A row-major f32 matmul becomes one gemm call with the buffers' strides; the gemm
// helper and the BLAS declaration are added once, at the top of the module.
// CHECK:       llvm.func @sgemm_
// CHECK:       func.func private @tessel_gemm_f32(
// CHECK:         llvm.call @sgemm_
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x3xf32>, %[[C:.*]]: memref<4x3xf32>)
// CHECK-NOT:     linalg.matmul
// CHECK:         %{{.*}}, %[[A_OFF:.*]], %{{.*}}:2, %[[A_STRIDES:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK:         call @tessel_gemm_f32(%{{.*}}, %[[A_OFF]], %[[A_STRIDES]]#0, %[[A_STRIDES]]#1,
func.func @matmul(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)
  return
}

// -----

// A batch_matmul loops over the batch, one gemm per matrix.
// CHECK:       llvm.func @dgemm_
// CHECK-LABEL: func.func @batch_matmul
// CHECK:         scf.for %[[I:.*]] =
// CHECK:           call @tessel_gemm_f64(
func.func @batch_matmul(%a: memref<2x4x8xf64>, %b: memref<2x8x3xf64>, %c: memref<2x4x3xf64>) {
  linalg.batch_matmul ins(%a, %b : memref<2x4x8xf64>, memref<2x8x3xf64>) outs(%c : memref<2x4x3xf64>)
  return
}

// -----

// Integer matmuls have no BLAS routine; f16 neither: both keep their loops.
// CHECK-LABEL: func.func @negative_integer_and_half
// CHECK:         linalg.matmul
// CHECK:         linalg.matmul
// CHECK-NOT:     call @tessel_gemm
func.func @negative_integer_and_half(%a: memref<4x8xi32>, %b: memref<8x3xi32>, %c: memref<4x3xi32>,
                                     %d: memref<4x8xf16>, %e: memref<8x3xf16>, %f: memref<4x3xf16>) {
  linalg.matmul ins(%a, %b : memref<4x8xi32>, memref<8x3xi32>) outs(%c : memref<4x3xi32>)
  linalg.matmul ins(%d, %e : memref<4x8xf16>, memref<8x3xf16>) outs(%f : memref<4x3xf16>)
  return
}

// -----

// C read column-wise (no unit stride along n) cannot be a gemm output.
// CHECK-LABEL: func.func @negative_strided_output
// CHECK:         linalg.matmul
func.func @negative_strided_output(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32, strided<[1, 4]>>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32, strided<[1, 4]>>)
  return
}

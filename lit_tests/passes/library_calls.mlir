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

// A batch_matmul of large matrices chooses at run time: where OpenMP's thread count
// divides its 2 matrices, one matrix per iteration of a loop across threads; else a
// loop over the batch, one (multi-threaded) gemm per matrix.
// CHECK:       llvm.func @omp_get_max_threads() -> i32
// CHECK:       llvm.func @dgemm_
// CHECK-LABEL: func.func @batch_matmul
// CHECK:         %[[THREADS:.*]] = llvm.call @omp_get_max_threads() : () -> i32
// CHECK:         %[[COUNT:.*]] = arith.index_cast %[[THREADS]] : i32 to index
// CHECK:         %[[LEFT:.*]] = arith.remui %c2{{(_[0-9]+)?}}, %[[COUNT]] : index
// CHECK:         %[[EVEN:.*]] = arith.cmpi eq, %[[LEFT]], %c0
// CHECK:         scf.if %[[EVEN]] {
// CHECK-NOT:       scf.for
// CHECK:           call @tessel_gemm_batch_0__launch(%c0{{(_[0-9]+)?}}, %c2{{(_[0-9]+)?}},
// CHECK:         } else {
// CHECK:           scf.for %[[I:.*]] =
// CHECK:             call @tessel_gemm_f64(
// CHECK:       func.func private @tessel_gemm_batch_0(
// CHECK:         call @tessel_gemm_f64(
func.func @batch_matmul(%a: memref<2x256x256xf64>, %b: memref<2x256x128xf64>, %c: memref<2x256x128xf64>) {
  linalg.batch_matmul ins(%a, %b : memref<2x256x256xf64>, memref<2x256x128xf64>) outs(%c : memref<2x256x128xf64>)
  return
}

// -----

// A batch of small matrices (here 2x3 of them) runs one matrix per iteration of a
// loop across threads: its batch dims linearized, outlined with a launcher as
// outline-parallel-loops does; the call passes 0 and the number of matrices.
// CHECK-LABEL: func.func @small_batch_matmul
// CHECK-NOT:     scf.for
// (the printer names an index constant %c<value>)
// CHECK:         call @tessel_gemm_batch_0__launch(%c0{{(_[0-9]+)?}}, %c6{{(_[0-9]+)?}},
// CHECK:       func.func private @tessel_gemm_batch_0(
// CHECK:         scf.for
// CHECK:           arith.remui
// CHECK:           arith.divui
// CHECK:           arith.remui
// CHECK:           call @tessel_gemm_f32(
// CHECK:       func.func private @tessel_gemm_batch_0__launch({{.*}}) attributes {tessel.parallel_body = @tessel_gemm_batch_0}
func.func @small_batch_matmul(%a: memref<2x3x4x8xf32>, %b: memref<2x3x8x5xf32>, %c: memref<2x3x4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>,
                                   affine_map<(b, h, m, n, k) -> (b, h, k, n)>,
                                   affine_map<(b, h, m, n, k) -> (b, h, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x3x4x8xf32>, memref<2x3x8x5xf32>) outs(%c : memref<2x3x4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Small matrices inside a loop (of threads, or any) keep their sequential loop.
// CHECK-LABEL: func.func @negative_small_batch_in_loop
// CHECK-NOT:     __launch
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             call @tessel_gemm_f32(
func.func @negative_small_batch_in_loop(%a: memref<2x4x8xf32>, %b: memref<2x8x3xf32>, %c: memref<2x4x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.batch_matmul ins(%a, %b : memref<2x4x8xf32>, memref<2x8x3xf32>) outs(%c : memref<2x4x3xf32>)
  }
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

// -----

// A matmul that overwrites its output (overwrite-zero-accumulators) runs its gemm with
// beta = 0, the helper's last argument; one that accumulates, with beta = 1.
// CHECK-LABEL: func.func @overwritten_matmul
// CHECK-NOT:     linalg.fill
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @tessel_gemm_f32({{.*}}, %[[ZERO]])
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @tessel_gemm_f32({{.*}}, %[[ONE]])
func.func @overwritten_matmul(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>, %d: memref<4x3xf32>) {
  linalg.matmul {tessel.overwrites_output} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%d : memref<4x3xf32>)
  return
}

// -----

// An overwriting contraction whose gemms add into one matrix (a second reduction dim,
// `r`, looped over in order, not across threads), and one left as loops (no unit
// stride along n in C): each gets its zero fill back, and accumulates into it.
// CHECK-LABEL: func.func @negative_overwrite_needs_zeros
// CHECK-SAME:    (%{{.*}}: memref<2x4x8xf32>, %{{.*}}: memref<8x3xf32>, %[[C:.*]]: memref<4x3xf32>, %[[D:.*]]: memref<4x3xf32, strided<[1, 4]>>)
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    linalg.fill ins(%[[ZERO]] : f32) outs(%[[C]] : memref<4x3xf32>)
// CHECK-NOT:     __launch
// CHECK:         scf.for
// CHECK:           %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      call @tessel_gemm_f32({{.*}}, %[[ONE]])
// CHECK:         %[[ZERO_D:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    linalg.fill ins(%[[ZERO_D]] : f32) outs(%[[D]] : {{.*}})
// CHECK-NEXT:    linalg.matmul ins
// CHECK-NOT:     tessel.overwrites_output
func.func @negative_overwrite_needs_zeros(%a: memref<2x4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>,
                                          %d: memref<4x3xf32, strided<[1, 4]>>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, m, n, k) -> (r, m, k)>, affine_map<(r, m, n, k) -> (k, n)>,
                       affine_map<(r, m, n, k) -> (m, n)>],
      iterator_types = ["reduction", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)
      attrs = {tessel.overwrites_output} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  %a0 = memref.subview %a[0, 0, 0] [1, 4, 8] [1, 1, 1] : memref<2x4x8xf32> to memref<4x8xf32, strided<[8, 1]>>
  linalg.matmul {tessel.overwrites_output} ins(%a0, %b : memref<4x8xf32, strided<[8, 1]>>, memref<8x3xf32>)
      outs(%d : memref<4x3xf32, strided<[1, 4]>>)
  return
}

// -----

// An f32 NCHW convolution becomes a call to the target's convolution routine, with
// the three memrefs cast to fully dynamic strided types; its strides and dilations go
// into the module attribute that the target reads, one entry per call id.
// CHECK:       module attributes {tessel.convolutions = ["linalg.conv_2d_nchw_fchw strides=2,2 dilations=1,1 overwrites=0"]}
// CHECK:       llvm.func @tessel_convolution(i64, !llvm.ptr)
// CHECK:       func.func private @tessel_convolution_ranks_4_4_4(
// CHECK:         llvm.call @tessel_convolution(
// CHECK-LABEL: func.func @convolution
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         %[[ID:.*]] = arith.constant 0 : i64
// CHECK:         %[[X:.*]] = memref.cast %{{.*}} : memref<1x3x9x9xf32> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK:         call @tessel_convolution_ranks_4_4_4(%[[ID]], %[[X]],
func.func @convolution(%x: memref<1x3x9x9xf32>, %w: memref<4x3x3x3xf32>, %out: memref<1x4x4x4xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x3x9x9xf32>, memref<4x3x3x3xf32>) outs(%out : memref<1x4x4x4xf32>)
  return
}

// -----

// An f64 convolution has no library routine here: it keeps its loops.
// CHECK-LABEL: func.func @negative_f64_convolution
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     tessel_convolution
func.func @negative_f64_convolution(%x: memref<1x3x9x9xf64>, %w: memref<4x3x3x3xf64>, %out: memref<1x4x7x7xf64>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x3x9x9xf64>, memref<4x3x3x3xf64>) outs(%out : memref<1x4x7x7xf64>)
  return
}

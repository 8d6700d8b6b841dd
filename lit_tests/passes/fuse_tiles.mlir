// RUN: %opt %s --split-input-file -p "fuse-tiles{cores=2}" | filecheck %s
// RUN: %opt %s --split-input-file -p "fuse-tiles{gemm-epilogues=false}" | filecheck %s --check-prefix=WHOLE

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// softmax: max, exp(x - max), sum, divide: one row loop holds all four loop nests,
// and exp (read by the sum and the divide) is computed once per row.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[X:.*]]: tensor<16x32xf32>)
// CHECK:         %[[RESULT:.*]] = scf.forall (%[[ROW:.*]]) in (16)
// CHECK:           %[[XROW:.*]] = tensor.extract_slice %[[X]][%[[ROW]], 0] [1, 32] [1, 1]
// CHECK:           %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[XROW]]
// CHECK:           arith.maximumf
// CHECK:           %[[EXP:.*]] = linalg.generic {{.*}}ins(%[[XROW]], %[[MAX]]
// CHECK:           math.exp
// CHECK-NOT:       math.exp
// CHECK:           %[[SUM:.*]] = linalg.generic {{.*}}ins(%[[EXP]]
// CHECK:           linalg.generic {{.*}}ins(%[[EXP]], %[[SUM]]
// CHECK:           arith.divf
// CHECK:         return %[[RESULT]]
func.func @softmax(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x32xf32>) outs(%minit : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<16x32xf32>, tensor<16xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<16x32xf32>) outs(%sinit : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %div = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<16x32xf32>, tensor<16xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<16x32xf32>
  return %div : tensor<16x32xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A column sum feeds every row of its consumer: fusing it into the row loop would
// recompute the whole sum per row, so it stays a separate loop nest before the loop.
// CHECK-LABEL: func.func @negative_column_sum_not_recomputed
// CHECK:         %[[COLSUM:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic {{.*}}ins(%{{.*}}, %[[COLSUM]]
func.func @negative_column_sum_not_recomputed(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32xf32>) -> tensor<32xf32>
  %colsum = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<16x32xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %centered = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %colsum : tensor<16x32xf32>, tensor<32xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.subf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<16x32xf32>
  return %centered : tensor<16x32xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A producer with a second consumer outside the group (here: returned) is not fused.
// CHECK-LABEL: func.func @negative_shared_producer
// CHECK:         %[[SHARED:.*]] = linalg.generic
// CHECK:           math.exp
// CHECK:         linalg.generic {{.*}}ins(%[[SHARED]]
// CHECK:         return
func.func @negative_shared_producer(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %e = tensor.empty() : tensor<16x32xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.negf %in : f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>
  return %exp, %neg : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// A matmul joins its epilogue's group, split by rows: each tile (a block of rows, one
// per core: cores=2 here) computes its rows of the gemm and applies bias + relu to them.
// (The pipeline generalizes fills first, which then fuse too; a named fill stays out.)
// Without gemm-epilogues (the cpu pipeline: a whole multi-threaded BLAS call measured
// faster), the gemm stays whole and only its epilogue is a loop.
// WHOLE-LABEL: func.func @matmul_bias_relu
// WHOLE:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<256x512xf32>)
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK:         %[[ZERO:.*]] = linalg.fill
// CHECK:         scf.forall (%[[I:.*]]) in (2)
// CHECK:           %[[ROWS:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0] [32, 256] [1, 1]
// CHECK:           %[[INIT:.*]] = tensor.extract_slice %[[ZERO]]
// CHECK:           %[[PRODUCT:.*]] = linalg.matmul ins(%[[ROWS]], %{{.*}} : tensor<32x256xf32>, tensor<256x512xf32>) outs(%[[INIT]]
// CHECK:           linalg.generic {{.*}} ins(%[[PRODUCT]], %{{.*}} : tensor<32x512xf32>, tensor<512xf32>)
// CHECK:             arith.addf
// CHECK:             arith.maximumf
// CHECK-NOT:     linalg.matmul
func.func @matmul_bias_relu(%x: tensor<64x256xf32>, %w: tensor<256x512xf32>, %b: tensor<512xf32>) -> tensor<64x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<64x256xf32>, tensor<256x512xf32>) outs(%init : tensor<64x512xf32>) -> tensor<64x512xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<64x512xf32>, tensor<512xf32>) outs(%e : tensor<64x512xf32>) {
  ^bb0(%m: f32, %bias: f32, %out: f32):
    %s = arith.addf %m, %bias : f32
    %relu = arith.maximumf %s, %zero : f32
    linalg.yield %relu : f32
  } -> tensor<64x512xf32>
  return %r : tensor<64x512xf32>
}

// -----

// A gemm whose result is also returned (another user) stays a whole library call.
// CHECK-LABEL: func.func @negative_gemm_with_another_user
// CHECK-NOT:     scf.forall
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<256x512xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[MM]], %{{.*}} : tensor<64x512xf32>, tensor<512xf32>)
// CHECK:         return %{{.*}}, %[[MM]]
func.func @negative_gemm_with_another_user(%x: tensor<64x256xf32>, %w: tensor<256x512xf32>, %b: tensor<512xf32>) -> (tensor<64x512xf32>, tensor<64x512xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<64x256xf32>, tensor<256x512xf32>) outs(%init : tensor<64x512xf32>) -> tensor<64x512xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<64x512xf32>, tensor<512xf32>) outs(%e : tensor<64x512xf32>) {
  ^bb0(%m: f32, %bias: f32, %out: f32):
    %s = arith.addf %m, %bias : f32
    linalg.yield %s : f32
  } -> tensor<64x512xf32>
  return %r, %mm : tensor<64x512xf32>, tensor<64x512xf32>
}

// -----

// An empty loop nest (zero rows) is not tiled: there is nothing to compute.
// CHECK-LABEL: func.func @negative_zero_rows
// CHECK-NOT:     scf.forall
func.func @negative_zero_rows(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<0x8xf32>) outs(%e : tensor<0x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<0x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<0x8xf32>) outs(%e : tensor<0x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<0x8xf32>
  return %r : tensor<0x8xf32>
}

// RUN: %opt %s --split-input-file -p recompute-index-values | filecheck %s
// RUN: %opt %s --split-input-file -p 'recompute-index-values,func.func(linalg-fuse-elementwise-ops)' | filecheck %s --check-prefix=FUSED

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Relative positions i - j (from the loop indices alone), shifted by a splat constant
// and read by two generics, one of them transposed: each reader gets its own copy of
// both producers, which elementwise fusion then computes at its points.
// CHECK-LABEL: func.func @relative_positions_read_twice
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT:     linalg.generic
// FUSED-LABEL: func.func @relative_positions_read_twice
// FUSED:         linalg.generic {{.*}} ins(%arg0 : tensor<8x8xf32>)
// FUSED:           linalg.index
// FUSED:         linalg.generic {{.*}} ins(%arg0 : tensor<8x8xf32>)
// FUSED:           linalg.index
// FUSED-NOT:     linalg.generic
func.func @relative_positions_read_twice(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %four = arith.constant dense<4> : tensor<i64>
  %ei = tensor.empty() : tensor<8x8xi64>
  %rel = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%ei : tensor<8x8xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %d = arith.subi %i, %j : index
    %c = arith.index_cast %d : index to i64
    linalg.yield %c : i64
  } -> tensor<8x8xi64>
  %shifted = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> ()>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%rel, %four : tensor<8x8xi64>, tensor<i64>) outs(%ei : tensor<8x8xi64>) {
  ^bb0(%in: i64, %s: i64, %out: i64):
    %a = arith.addi %in, %s : i64
    linalg.yield %a : i64
  } -> tensor<8x8xi64>
  %ef = tensor.empty() : tensor<8x8xf32>
  %row = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%shifted, %x : tensor<8x8xi64>, tensor<8x8xf32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%in: i64, %v: f32, %out: f32):
    %f = arith.sitofp %in : i64 to f32
    %m = arith.mulf %f, %v : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %column = linalg.generic {indexing_maps = [#t, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%shifted, %x : tensor<8x8xi64>, tensor<8x8xf32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%in: i64, %v: f32, %out: f32):
    %f = arith.sitofp %in : i64 to f32
    %m = arith.addf %f, %v : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  return %row, %column : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A value computed from a tensor it loads (here a function argument) stays one
// kernel's result, which both readers load.
// CHECK-LABEL: func.func @negative_loads_an_input
// FUSED-LABEL: func.func @negative_loads_an_input
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:     linalg.generic
func.func @negative_loads_an_input(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %ef = tensor.empty() : tensor<8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 1 : index
    %c = arith.index_cast %j : index to i64
    %f = arith.sitofp %c : i64 to f32
    %m = arith.mulf %f, %in : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scaled : tensor<8x8xf32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<8x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scaled : tensor<8x8xf32>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.log %in : f32
    linalg.yield %e : f32
  } -> tensor<8x8xf32>
  return %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A dense (non-splat) constant is a tensor the kernel would load: a value computed
// from it is not copied.
// CHECK-LABEL: func.func @negative_reads_a_dense_constant
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:     linalg.generic
func.func @negative_reads_a_dense_constant() -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %table = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %ef = tensor.empty() : tensor<2x2xf32>
  %doubled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%table : tensor<2x2xf32>) outs(%ef : tensor<2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.addf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x2xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%doubled : tensor<2x2xf32>) outs(%ef : tensor<2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<2x2xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%doubled : tensor<2x2xf32>) outs(%ef : tensor<2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.log %in : f32
    linalg.yield %e : f32
  } -> tensor<2x2xf32>
  return %a, %b : tensor<2x2xf32>, tensor<2x2xf32>
}

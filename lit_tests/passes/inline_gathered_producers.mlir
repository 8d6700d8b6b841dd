// RUN: %opt %s --split-input-file -p inline-gathered-producers | filecheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// A gather of a bias add computes the add at the point from the gemm's result and the
// bias (a broadcast map); the add, read nowhere else, is gone.
// CHECK-LABEL: func.func @producer_computed_at_the_point
// CHECK-SAME:    (%[[G:.*]]: tensor<4x8xf32>, %[[BIAS:.*]]: tensor<8xf32>
// CHECK-NOT:     linalg.generic {{.*}} ins(%[[G]], %[[BIAS]]
// CHECK:         linalg.generic
// CHECK:           %[[J:.*]] = arith.minsi
// CHECK:           %[[X:.*]] = tensor.extract %[[G]][%{{.*}}, %[[J]]]
// CHECK:           %[[B:.*]] = tensor.extract %[[BIAS]][%[[J]]]
// CHECK:           %[[SUM:.*]] = arith.addf %[[X]], %[[B]]
// CHECK:           linalg.yield %[[SUM]]
func.func @producer_computed_at_the_point(%g: tensor<4x8xf32>, %bias: tensor<8xf32>) -> tensor<4x8xf32> {
  %c7 = arith.constant 7 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %add = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %b: f32, %o: f32):
    %s = arith.addf %x, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %jj = arith.minsi %j, %c7 : index
    %v = tensor.extract %add[%i, %jj] : tensor<4x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// A transposed copy of a slice of an expanded tensor: the point's loop indices come
// from the copy's permuted output map, the slice adds its offset, and the expansion
// folds its dims back into the source's index.
// CHECK-LABEL: func.func @through_transpose_slice_and_expansion
// CHECK-SAME:    (%[[X:.*]]: tensor<32xf32>
// CHECK:         linalg.generic
// CHECK:           %[[I:.*]] = linalg.index 0
// CHECK:           %[[J:.*]] = linalg.index 1
// CHECK:           %[[COL:.*]] = arith.addi %[[I]], %{{.*}}
// CHECK:           %[[ROW:.*]] = arith.muli %[[J]], %{{.*}}
// CHECK:           %[[FLAT:.*]] = arith.addi %[[ROW]], %[[COL]]
// CHECK:           %[[V:.*]] = tensor.extract %[[X]][%[[FLAT]]]
// CHECK:           linalg.yield %[[V]]
func.func @through_transpose_slice_and_expansion(%x: tensor<32xf32>) -> tensor<4x4xf32> {
  %grid = tensor.expand_shape %x [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %half = tensor.extract_slice %grid[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %t = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%half : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %v = tensor.extract %t[%i, %j] : tensor<4x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

// negative_reduction: a row sum is not a value of one point; the gather keeps reading it.
// CHECK-LABEL: func.func @negative_reduction
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:         tensor.extract %[[SUM]]
func.func @negative_reduction(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4x8xf32> {
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %sum[%i] : tensor<4xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A collapse unfolds the point's index into the source's dims, row-major: a scatter's
// index column (an iota over a [2, 3] tensor, flattened) computed at the point.
// CHECK-LABEL: func.func @through_collapse
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<6xi64>)
// CHECK:           %[[I:.*]] = linalg.index 0
// CHECK:           arith.remsi %[[I]], %{{.*}} : index
// CHECK:           %[[ROW:.*]] = arith.divsi %[[I]], %{{.*}} : index
// CHECK:           %[[V:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK:           linalg.yield %[[V]]
// CHECK-NOT:     linalg.generic
func.func @through_collapse() -> tensor<6xi64> {
  %e = tensor.empty() : tensor<2x3xi64>
  %rows = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<2x3xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<2x3xi64>
  %flat = tensor.collapse_shape %rows [[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
  %f = tensor.empty() : tensor<6xi64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%f : tensor<6xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = tensor.extract %flat[%i] : tensor<6xi64>
    linalg.yield %v : i64
  } -> tensor<6xi64>
  return %r : tensor<6xi64>
}

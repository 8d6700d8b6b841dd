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

// -----

#id = affine_map<(d0) -> (d0)>

// A sum of two tensors read at four points of a window (a max pool gradient's taps) is
// computed once, by its own kernel: inlined, the points would load 8 values where
// computing it once loads 2, writes 1 and reads 4.
// CHECK-LABEL: func.func @negative_sum_read_at_four_points
// CHECK:         %[[SUM:.*]] = linalg.generic
// CHECK:           arith.addf
// CHECK:         linalg.generic
// CHECK-COUNT-4:   tensor.extract %[[SUM]]
func.func @negative_sum_read_at_four_points(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %f = tensor.empty() : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%f : tensor<5xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = arith.addi %i, %c1 : index
    %k = arith.addi %i, %c2 : index
    %l = arith.addi %i, %c3 : index
    %t = tensor.extract %sum[%i] : tensor<8xf32>
    %u = tensor.extract %sum[%j] : tensor<8xf32>
    %v = tensor.extract %sum[%k] : tensor<8xf32>
    %w = tensor.extract %sum[%l] : tensor<8xf32>
    %tu = arith.maximumf %t, %u : f32
    %vw = arith.maximumf %v, %w : f32
    %m = arith.maximumf %tu, %vw : f32
    linalg.yield %m : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The same taps as four gathers, each its own generic, through a cast that each computes
// (a cast loads one value, as reading its result would): the sum under the cast still
// counts four points, and stays a generic of its own.
// CHECK-LABEL: func.func @negative_sum_under_a_cast_read_by_four_gathers
// CHECK:         %[[SUM:.*]] = linalg.generic
// CHECK:           arith.addf
// CHECK-COUNT-4: tensor.extract %[[SUM]]
// CHECK-NOT:     arith.addf
func.func @negative_sum_under_a_cast_read_by_four_gathers(%a: tensor<8xbf16>, %b: tensor<8xbf16>)
    -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %e = tensor.empty() : tensor<8xbf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xbf16>, tensor<8xbf16>) outs(%e : tensor<8xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %s = arith.addf %x, %y : bf16
    linalg.yield %s : bf16
  } -> tensor<8xbf16>
  %g = tensor.empty() : tensor<8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%sum : tensor<8xbf16>) outs(%g : tensor<8xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %w = arith.extf %x : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<8xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %f = tensor.empty() : tensor<5xf32>
  %r0 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%f : tensor<5xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %wide[%i] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<5xf32>
  %r1 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%f : tensor<5xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = arith.addi %i, %c1 : index
    %v = tensor.extract %wide[%j] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<5xf32>
  %r2 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%f : tensor<5xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = arith.addi %i, %c2 : index
    %v = tensor.extract %wide[%j] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<5xf32>
  %r3 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%f : tensor<5xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = arith.addi %i, %c3 : index
    %v = tensor.extract %wide[%j] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<5xf32>
  return %r0, %r1, %r2, %r3 : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
}
// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A scaling of one tensor by a broadcast vector read at two points is computed at both:
// each loads one element of the tensor, as reading its result would.
// CHECK-LABEL: func.func @scaling_read_at_two_points
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[S:.*]]: tensor<8xf32>
// CHECK-NOT:     linalg.generic {{.*}} ins(%[[X]], %[[S]]
// CHECK:         linalg.generic
// CHECK-COUNT-2:   tensor.extract %[[X]]
func.func @scaling_read_at_two_points(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> tensor<4x7xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %m = arith.mulf %v, %w : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %c1 = arith.constant 1 : index
  %f = tensor.empty() : tensor<4x7xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%f : tensor<4x7xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.addi %j, %c1 : index
    %u = tensor.extract %scaled[%i, %j] : tensor<4x8xf32>
    %v = tensor.extract %scaled[%i, %k] : tensor<4x8xf32>
    %w = arith.addf %u, %v : f32
    linalg.yield %w : f32
  } -> tensor<4x7xf32>
  return %r : tensor<4x7xf32>
}

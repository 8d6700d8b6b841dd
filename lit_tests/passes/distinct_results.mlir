// RUN: %opt %s --split-input-file -p distinct-results | filecheck %s

// A value returned twice gets a copy for its second slot.
// CHECK-LABEL: func.func @repeated_result
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>)
// CHECK:         %[[SUM:.*]] = arith.addf %[[A]], %[[A]]
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<4xf32>
// CHECK:         %[[COPY:.*]] = linalg.copy {{.*}} ins(%[[SUM]] : tensor<4xf32>) outs(%[[EMPTY]] : tensor<4xf32>)
// CHECK:         return %[[SUM]], %[[COPY]]
func.func @repeated_result(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = arith.addf %a, %a : tensor<4xf32>
  return %s, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// A returned argument gets a copy, with its dynamic size read by tensor.dim.
// CHECK-LABEL: func.func @returned_argument
// CHECK-SAME:    (%[[A:.*]]: tensor<?x3xf32>)
// CHECK:         %[[DIM:.*]] = tensor.dim %[[A]], %{{.*}} : tensor<?x3xf32>
// CHECK:         %[[EMPTY:.*]] = tensor.empty(%[[DIM]]) : tensor<?x3xf32>
// CHECK:         %[[COPY:.*]] = linalg.copy {{.*}} ins(%[[A]] : tensor<?x3xf32>) outs(%[[EMPTY]] : tensor<?x3xf32>)
// CHECK:         return %[[COPY]]
func.func @returned_argument(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  return %a : tensor<?x3xf32>
}

// -----

// Distinct results and non-tensor results are left alone.
// CHECK-LABEL: func.func @negative_distinct_results
// CHECK-NOT:     linalg.copy
// CHECK:         return
func.func @negative_distinct_results(%a: tensor<4xf32>, %i: i64) -> (tensor<4xf32>, tensor<4xf32>, i64, i64) {
  %s = arith.addf %a, %a : tensor<4xf32>
  %p = arith.mulf %a, %a : tensor<4xf32>
  return %s, %p, %i, %i : tensor<4xf32>, tensor<4xf32>, i64, i64
}

// -----

// A reshape of another result is the same buffer once bufferized: it gets a copy.
// CHECK-LABEL: func.func @result_and_its_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[Y:.*]] = linalg.generic
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %[[Y]]
// CHECK:         %[[COPY:.*]] = linalg.copy {{.*}}ins(%[[FLAT]] : tensor<6xf32>)
// CHECK:         return %[[Y]], %[[COPY]]
func.func @result_and_its_reshape(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %e = tensor.empty() : tensor<2x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x3xf32>
  %flat = tensor.collapse_shape %y [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  return %y, %flat : tensor<2x3xf32>, tensor<6xf32>
}

// -----

// After bufferization: a buffer returned twice gets a fresh copy for its second use.
// CHECK-LABEL: func.func @buffer_returned_twice
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>)
// CHECK:         %[[Y:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[COPY:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[Y]], %[[COPY]]
// CHECK:         return %[[Y]], %[[COPY]]
func.func @buffer_returned_twice(%x: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  %y = memref.alloc() : memref<4xf32>
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return %y, %y : memref<4xf32>, memref<4xf32>
}

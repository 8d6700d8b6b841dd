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

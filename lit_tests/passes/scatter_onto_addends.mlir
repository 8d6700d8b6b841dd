// RUN: %opt %s --split-input-file -p scatter-onto-addends | filecheck %s

// A tied embedding's gradient: the rows the embedding's backward scatters into zeros,
// added to the LM head's gradient. The rows scatter onto that gradient instead: no
// zeros, no sum.
// CHECK-LABEL: func.func @tied_embedding
// CHECK-NOT:     linalg.generic
// CHECK:         %[[ROWS:.+]] = tm_tensor.scatter {{.*}} outs(%arg0 : tensor<10x4xf32>)
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[ROWS]]
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @tied_embedding(%head: tensor<10x4xf32>, %updates: tensor<3x1x4xf32>, %ids: tensor<3x1xi64>) -> tensor<10x4xf32> {
  %zeros = arith.constant dense<0.000000e+00> : tensor<10x4xf32>
  %rows = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(false)
      ins(%updates, %ids : tensor<3x1x4xf32>, tensor<3x1xi64>) outs(%zeros : tensor<10x4xf32>) {
  ^bb0(%update: f32, %current: f32):
    %sum = arith.addf %current, %update : f32
    tm_tensor.yield %sum : f32
  } -> tensor<10x4xf32>
  %empty = tensor.empty() : tensor<10x4xf32>
  %total = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%head, %rows : tensor<10x4xf32>, tensor<10x4xf32>) outs(%empty : tensor<10x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<10x4xf32>
  return %total : tensor<10x4xf32>
}

// -----

// The scattered rows are returned too (their sum is not all that reads them), and
// rows that store into zeros rather than add: both stay as they are.
// CHECK-LABEL: func.func @negative_rows_read_elsewhere
// CHECK:         tm_tensor.scatter {{.*}} outs(%cst : tensor<10x4xf32>)
// CHECK:         linalg.generic
// CHECK:         tm_tensor.scatter {{.*}} outs(%cst : tensor<10x4xf32>)
// CHECK:         linalg.generic
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @negative_rows_read_elsewhere(%head: tensor<10x4xf32>, %updates: tensor<3x1x4xf32>, %ids: tensor<3x1xi64>) -> (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>) {
  %zeros = arith.constant dense<0.000000e+00> : tensor<10x4xf32>
  %rows = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(false)
      ins(%updates, %ids : tensor<3x1x4xf32>, tensor<3x1xi64>) outs(%zeros : tensor<10x4xf32>) {
  ^bb0(%update: f32, %current: f32):
    %sum = arith.addf %current, %update : f32
    tm_tensor.yield %sum : f32
  } -> tensor<10x4xf32>
  %empty = tensor.empty() : tensor<10x4xf32>
  %total = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%head, %rows : tensor<10x4xf32>, tensor<10x4xf32>) outs(%empty : tensor<10x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<10x4xf32>
  %stored = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(false)
      ins(%updates, %ids : tensor<3x1x4xf32>, tensor<3x1xi64>) outs(%zeros : tensor<10x4xf32>) {
  ^bb0(%update: f32, %current: f32):
    tm_tensor.yield %update : f32
  } -> tensor<10x4xf32>
  %other = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%head, %stored : tensor<10x4xf32>, tensor<10x4xf32>) outs(%empty : tensor<10x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<10x4xf32>
  return %total, %rows, %other : tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>
}

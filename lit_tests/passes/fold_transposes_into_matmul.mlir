// RUN: %opt %s --split-input-file -p fold-transposes-into-matmul,canonicalize | filecheck %s

// nn.Linear's x @ W^T: the matmul reads W in place through a swapped indexing map.
// CHECK-DAG:   #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG:   #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<3x8xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<3x8xf32>)
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<3x8xf32>, %init: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<8x3xf32>
  %wt = linalg.transpose ins(%w : tensor<3x8xf32>) outs(%e : tensor<8x3xf32>) permutation = [1, 0]
  %y = linalg.matmul ins(%x, %wt : tensor<4x8xf32>, tensor<8x3xf32>) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A transpose that does not swap the last two dims is left alone.
// CHECK-LABEL: func.func @negative_batch_permutation
// CHECK:         linalg.transpose
// CHECK:         linalg.batch_matmul ins
func.func @negative_batch_permutation(%a: tensor<2x4x8xf32>, %b: tensor<8x2x3xf32>, %init: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  %e = tensor.empty() : tensor<2x8x3xf32>
  %bt = linalg.transpose ins(%b : tensor<8x2x3xf32>) outs(%e : tensor<2x8x3xf32>) permutation = [1, 0, 2]
  %y = linalg.batch_matmul ins(%a, %bt : tensor<2x4x8xf32>, tensor<2x8x3xf32>) outs(%init : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

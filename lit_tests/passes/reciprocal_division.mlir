// RUN: %opt %s --split-input-file -p reciprocal-division | filecheck %s

// softmax's normalization: the row sum does not vary along the inner (column) loop.
// CHECK-LABEL: func.func @divide_by_row_value
// CHECK:         arith.divf %{{.*}}, %{{.*}} fastmath<arcp> : f32
func.func @divide_by_row_value(%x: tensor<4x8xf32>, %sum: tensor<4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A divisor that changes along the inner loop keeps an exact division.
// CHECK-LABEL: func.func @negative_elementwise_divisor
// CHECK:         arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     arcp
func.func @negative_elementwise_divisor(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %q = arith.divf %in, %d : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

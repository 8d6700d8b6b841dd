// RUN: %opt %s --split-input-file -p reassociate-reductions | filecheck %s

// CHECK-LABEL: func.func @row_sum
// CHECK:         linalg.generic
// CHECK:           arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
func.func @row_sum(%a: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %x = arith.addf %in, %acc : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Elementwise (all-parallel) ops keep strict IEEE semantics.
// CHECK-LABEL: func.func @negative_elementwise_add
// CHECK:         arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     fastmath
func.func @negative_elementwise_add(%a: tensor<4xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %in, %in : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

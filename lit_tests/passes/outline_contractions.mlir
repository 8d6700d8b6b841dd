// RUN: %opt %s --split-input-file -p outline-contractions | filecheck %s
// RUN: %opt %s --split-input-file -p 'outline-contractions,func.func(linalg-fuse-elementwise-ops),inline,symbol-dce' | filecheck %s --check-prefix=ROUNDTRIP

// The matmul moves behind a call, so elementwise fusion cannot fold the relu into it;
// inlining brings it back unchanged.
// CHECK-LABEL: func.func @relu_then_matmul
// CHECK:         linalg.generic
// CHECK:         %[[R:.*]] = call @__tessel_contraction_0(
// CHECK:         return %[[R]]
// CHECK:       func.func private @__tessel_contraction_0(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x3xf32>, %{{.*}}: tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:         linalg.matmul
// ROUNDTRIP-LABEL: func.func @relu_then_matmul
// ROUNDTRIP:         %[[RELU:.*]] = linalg.generic
// ROUNDTRIP:         linalg.matmul ins(%[[RELU]]
// ROUNDTRIP-NOT:   __tessel_contraction
func.func @relu_then_matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                          iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %y = linalg.matmul ins(%relu, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%c : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A reduction that is not a multiply-accumulate (a row max) is not a contraction.
// CHECK-LABEL: func.func @negative_row_max
// CHECK-NOT:     call
// CHECK:         linalg.generic
func.func @negative_row_max(%a: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

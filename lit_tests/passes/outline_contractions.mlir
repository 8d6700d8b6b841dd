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

// -----

#vec = affine_map<(d0) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// A gemm that starts from its widened bias (fold-bias-into-gemm's broadcast) takes the
// broadcast behind the call: elementwise fusion cannot fold the bias's producer into
// it, and after inlining it still reads the 1-D bias that addmm takes.
// CHECK-LABEL: func.func @scaled_bias_then_matmul
// CHECK:         %[[SCALED:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3xbf16>)
// CHECK:         call @__tessel_contraction_0(%[[SCALED]],
// CHECK:       func.func private @__tessel_contraction_0(%[[B:.*]]: tensor<3xbf16>,
// CHECK:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<3xbf16>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK:         linalg.matmul {{.*}} outs(%[[INIT]] : tensor<4x3xf32>)
// ROUNDTRIP-LABEL: func.func @scaled_bias_then_matmul
// ROUNDTRIP:         %[[SCALED:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3xbf16>)
// ROUNDTRIP:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[SCALED]] : tensor<3xbf16>) outs(%{{.*}} : tensor<4x3xf32>)
// ROUNDTRIP:         linalg.matmul {{.*}} outs(%[[INIT]] : tensor<4x3xf32>)
func.func @scaled_bias_then_matmul(%b: tensor<3xbf16>, %x: tensor<4x8xbf16>, %w: tensor<8x3xbf16>) -> tensor<4x3xf32> {
  %two = arith.constant 2.0 : bf16
  %eb = tensor.empty() : tensor<3xbf16>
  %scaled = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%b : tensor<3xbf16>) outs(%eb : tensor<3xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %m = arith.mulf %in, %two : bf16
    linalg.yield %m : bf16
  } -> tensor<3xbf16>
  %empty = tensor.empty() : tensor<4x3xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scaled : tensor<3xbf16>) outs(%empty : tensor<4x3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<4x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xbf16>, tensor<8x3xbf16>) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

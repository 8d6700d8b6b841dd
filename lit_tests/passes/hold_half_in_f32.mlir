// RUN: %opt %s --split-input-file -p hold-half-in-f32 | filecheck %s

// A fused bf16 chain: computed in f32, rounded once where it is stored.
// CHECK-LABEL: func.func @fused_chain
// CHECK:         %[[A:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:         %[[B:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:         %[[PRODUCT:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:    %[[EXP:.*]] = math.exp %[[PRODUCT]] : f32
// CHECK-NEXT:    %[[ROUNDED:.*]] = arith.truncf %[[EXP]] : f32 to bf16
// CHECK-NEXT:    linalg.yield %[[ROUNDED]] : bf16
func.func @fused_chain(%x: tensor<8xbf16>, %y: tensor<8xbf16>) -> tensor<8xbf16> {
  %e = tensor.empty() : tensor<8xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x, %y : tensor<8xbf16>, tensor<8xbf16>) outs(%e : tensor<8xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %out: bf16):
    %p = arith.mulf %a, %b : bf16
    %q = math.exp %p : bf16
    linalg.yield %q : bf16
  } -> tensor<8xbf16>
  return %r : tensor<8xbf16>
}

// -----

// A rounding the IR asks for (a cast to f16 and back) stays.
// CHECK-LABEL: func.func @negative_explicit_rounding
// CHECK:         %[[SUM:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %[[HALF:.*]] = arith.truncf %[[SUM]] : f32 to f16
// CHECK-NEXT:    %[[BACK:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK-NEXT:    arith.mulf %[[BACK]], %[[SUM]] : f32
func.func @negative_explicit_rounding(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %a : f32
    %h = arith.truncf %s : f32 to f16
    %w = arith.extf %h : f16 to f32
    %m = arith.mulf %w, %s : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A remainder reads its operand rounded to bf16, as eager's fmod reads the product.
// CHECK-LABEL: func.func @rounded_before_a_remainder
// CHECK:         %[[PRODUCT:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %[[ROUNDED:.*]] = arith.truncf %[[PRODUCT]] : f32 to bf16
// CHECK-NEXT:    %[[EXACT:.*]] = arith.extf %[[ROUNDED]] : bf16 to f32
// CHECK-NEXT:    arith.remf %[[EXACT]], %{{.*}} : f32
func.func @rounded_before_a_remainder(%x: tensor<8xbf16>, %y: tensor<8xbf16>) -> tensor<8xbf16> {
  %e = tensor.empty() : tensor<8xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x, %y : tensor<8xbf16>, tensor<8xbf16>) outs(%e : tensor<8xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %out: bf16):
    %p = arith.mulf %a, %a : bf16
    %q = arith.remf %p, %b : bf16
    linalg.yield %q : bf16
  } -> tensor<8xbf16>
  return %r : tensor<8xbf16>
}

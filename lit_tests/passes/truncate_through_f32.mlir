// RUN: %opt %s --split-input-file -p truncate-through-f32 | filecheck %s

// CHECK-LABEL: func.func @double_to_bfloat16
// CHECK:         %[[FLOAT:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT:    arith.truncf %[[FLOAT]] : f32 to bf16
func.func @double_to_bfloat16(%x: f64) -> bf16 {
  %r = arith.truncf %x : f64 to bf16
  return %r : bf16
}

// -----

// CHECK-LABEL: func.func @double_vector_to_half
// CHECK:         %[[FLOAT:.*]] = arith.truncf %{{.*}} : vector<4xf64> to vector<4xf32>
// CHECK-NEXT:    arith.truncf %[[FLOAT]] : vector<4xf32> to vector<4xf16>
func.func @double_vector_to_half(%x: vector<4xf64>) -> vector<4xf16> {
  %r = arith.truncf %x : vector<4xf64> to vector<4xf16>
  return %r : vector<4xf16>
}

// -----

// A float rounds to bf16 in one step, as eager's does.
// CHECK-LABEL: func.func @negative_float_to_bfloat16
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT:     arith.truncf
func.func @negative_float_to_bfloat16(%x: f32) -> bf16 {
  %r = arith.truncf %x : f32 to bf16
  return %r : bf16
}

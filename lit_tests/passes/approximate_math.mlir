// RUN: %opt %s --split-input-file -p approximate-math | filecheck %s

// exp: range reduction, a polynomial in fma, 2^n built from the exponent bits,
// and IEEE results outside the range.
// CHECK-LABEL: func.func @exp_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK-NOT:     math.exp
// CHECK:         %[[LO:.*]] = arith.maximumf %[[X]]
// CHECK:         arith.minimumf %[[LO]]
// CHECK:         math.floor
// CHECK:         math.fma
// CHECK:         arith.fptosi
// CHECK:         arith.shli
// CHECK:         arith.bitcast {{.*}} : i32 to f32
// CHECK:         %[[OVER:.*]] = arith.cmpf ogt, %[[X]]
// CHECK:         %[[UNDER:.*]] = arith.cmpf olt, %[[X]]
// CHECK:         %[[R0:.*]] = arith.select %[[OVER]]
// CHECK:         %[[R:.*]] = arith.select %[[UNDER]], {{.*}}, %[[R0]]
// CHECK:         return %[[R]]
func.func @exp_f32(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// -----

// Vectors get splat constants and i32 vector bit tricks.
// CHECK-LABEL: func.func @tanh_and_erf_vector
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.erf
// CHECK:         arith.constant dense<{{.*}}> : vector<8xf32>
// CHECK:         arith.divf {{.*}} : vector<8xf32>
// erf: x P(x^2) / Q(x^2) on x clamped to [-4, 4], clamped to [-1, 1]; no exp.
// CHECK:         %[[LOW:.*]] = arith.maximumf %[[X:.*]], %{{.*}} : vector<8xf32>
// CHECK:         %[[CLAMPED:.*]] = arith.minimumf %[[LOW]]
// CHECK:         %[[SQUARE:.*]] = arith.mulf %[[CLAMPED]], %[[CLAMPED]]
// CHECK:         math.fma {{.*}}, %[[SQUARE]]
// CHECK-NOT:     math.floor
// CHECK:         %[[RATIO:.*]] = arith.divf
// CHECK:         arith.maximumf %[[RATIO]]
// CHECK:         arith.minimumf
func.func @tanh_and_erf_vector(%x: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>) {
  %0 = math.tanh %x : vector<8xf32>
  %1 = math.erf %x : vector<8xf32>
  return %0, %1 : vector<8xf32>, vector<8xf32>
}

// -----

// f64 and f16 keep their math ops (libm), and so do ops without an approximation.
// CHECK-LABEL: func.func @negative_other_types_and_ops
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         math.tanh %{{.*}} : f16
// CHECK:         math.log %{{.*}} : f32
func.func @negative_other_types_and_ops(%a: f64, %b: f16, %c: f32) -> (f64, f16, f32) {
  %0 = math.exp %a : f64
  %1 = math.tanh %b : f16
  %2 = math.log %c : f32
  return %0, %1, %2 : f64, f16, f32
}

// RUN: %opt %s --split-input-file -p count-flops | filecheck %s
// RUN: %opt %s --split-input-file -p 'count-flops{per-op=2}' | filecheck %s --check-prefix=DOUBLE
// RUN: %opt --list-passes | filecheck %s --check-prefix=LIST

// LIST: count-flops {{.*}}stats.flops
// LIST: cpu-with-flops

// Two arith ops over 4x8 iterations: 64 flops.
// CHECK-LABEL: func.func @add_then_scale
// CHECK-NEXT:    "stats.flops"() {count = 64 : i64, label = "add_then_scale"}
// DOUBLE:        "stats.flops"() {count = 128 : i64, label = "add_then_scale"}
func.func @add_then_scale(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    %t = arith.mulf %s, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// No linalg ops: zero flops, and the function is otherwise unchanged.
// CHECK-LABEL: func.func @negative_no_loops
// CHECK-NEXT:    "stats.flops"() {count = 0 : i64, label = "negative_no_loops"}
// CHECK-NEXT:    return
func.func @negative_no_loops() {
  return
}

// RUN: not %opt %s --split-input-file -p 'check-contract{target=cpu}' 2>/dev/null | filecheck %s
// RUN: not %opt %s --split-input-file -p 'check-contract{target=cpu}' 2>&1 | filecheck %s --check-prefix=ERR

// linalg-on-tensors passes through unchanged.
// CHECK-LABEL: func.func @linalg_is_accepted
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>)
// CHECK:         %[[R:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[A]] : tensor<4xf32>)
// CHECK:         return %[[R]]
func.func @linalg_is_accepted(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A leftover memref op is outside the CPU target's input contract.
// ERR: error: pass 'check-contract' failed: target 'cpu' does not accept 1 op(s): 'memref.alloc' at loc("{{.*}}check_contract.mlir":[[# @LINE + 3]]:8)
// CHECK-NOT: func.func @negative_memref_rejected
func.func @negative_memref_rejected() -> memref<4xf32> {
  %m = memref.alloc() : memref<4xf32>
  return %m : memref<4xf32>
}

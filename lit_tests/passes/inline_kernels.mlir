// RUN: %opt %s --split-input-file -p inline-kernels | filecheck %s

// Kernel bodies move back in place; their results replace the kernel's.
// CHECK-LABEL: func.func @two_kernels
// CHECK-NOT:     tkern
// CHECK:         %[[SUM:.*]] = arith.addf %arg0, %arg0
// CHECK:         %[[PRODUCT:.*]] = arith.mulf %[[SUM]], %[[SUM]]
// CHECK:         return %[[PRODUCT]]
func.func @two_kernels(%a: tensor<4xf32>) -> tensor<4xf32> {
  %k0 = "tkern.kernel"() ({
    %s = arith.addf %a, %a : tensor<4xf32>
    "tkern.yield"(%s) : (tensor<4xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<4xf32>
  %k1 = "tkern.kernel"() ({
    %p = arith.mulf %k0, %k0 : tensor<4xf32>
    "tkern.yield"(%p) : (tensor<4xf32>) -> ()
  }) {sym_name = "k1"} : () -> tensor<4xf32>
  return %k1 : tensor<4xf32>
}

// -----

// IR without kernels is unchanged.
// CHECK-LABEL: func.func @negative_no_kernels
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    return
func.func @negative_no_kernels(%a: f32) -> f32 {
  %s = arith.addf %a, %a : f32
  return %s : f32
}

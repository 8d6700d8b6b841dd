// RUN: %opt %s --split-input-file -p time-kernels | filecheck %s

// A mark at the start, then one after each kernel, with its id; each label says what
// the kernel computes and on which shapes.
// CHECK:       module attributes {tessel.kernel_labels = ["k0 [addf] (4xf32) -> (4xf32)", "k1 [mulf] (4xf32) -> (4xf32)"]}
// CHECK:       func.func private @tessel_kernel_timer(i64)
// CHECK-LABEL: func.func @two_kernels
// CHECK:         %[[START:.*]] = arith.constant -1 : i64
// CHECK-NEXT:    call @tessel_kernel_timer(%[[START]])
// CHECK-NEXT:    "tkern.kernel"
// CHECK:         {sym_name = "k0"}
// CHECK-NEXT:    %[[FIRST:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    call @tessel_kernel_timer(%[[FIRST]])
// CHECK-NEXT:    "tkern.kernel"
// CHECK:         {sym_name = "k1"}
// CHECK-NEXT:    %[[SECOND:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @tessel_kernel_timer(%[[SECOND]])
// CHECK-NEXT:    return
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

// Without kernels nothing is timed: no marks, no declaration, no labels.
// CHECK-NOT:   tessel_kernel_timer
// CHECK-LABEL: func.func @negative_no_kernels
// CHECK-NOT:   tessel_kernel_timer
func.func @negative_no_kernels(%a: f32) -> f32 {
  %s = arith.addf %a, %a : f32
  return %s : f32
}

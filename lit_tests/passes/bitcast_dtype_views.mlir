// RUN: %opt %s --split-input-file -p bitcast-dtype-views | filecheck %s

// signbit, as torch-mlir decomposes it: the float's bits as int32, compared with 0.
// CHECK-LABEL: func.func @float_bits
// CHECK:         %[[BUILTIN:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[?,3],f32> -> tensor<?x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[BUILTIN]] : tensor<?x3xf32>) outs(%{{.*}} : tensor<?x3xi32>)
// CHECK:           arith.bitcast %{{.*}} : f32 to i32
// CHECK:         torch_c.from_builtin_tensor %{{.*}} : tensor<?x3xi32> -> !torch.vtensor<[?,3],si32>
// CHECK-NOT:     torch.aten.view.dtype
func.func @float_bits(%x: !torch.vtensor<[?,3],f32>) -> !torch.vtensor<[?,3],si32> {
  %int3 = torch.constant.int 3
  %0 = torch.aten.view.dtype %x, %int3 : !torch.vtensor<[?,3],f32>, !torch.int -> !torch.vtensor<[?,3],si32>
  return %0 : !torch.vtensor<[?,3],si32>
}

// -----

// A view between widths (f32 as int16) changes the shape: not a bitcast.
// CHECK-LABEL: func.func @negative_other_width
// CHECK:         torch.aten.view.dtype
func.func @negative_other_width(%x: !torch.vtensor<[4],f32>) -> !torch.vtensor<[8],si16> {
  %int2 = torch.constant.int 2
  %0 = torch.aten.view.dtype %x, %int2 : !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[8],si16>
  return %0 : !torch.vtensor<[8],si16>
}

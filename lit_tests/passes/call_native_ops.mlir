// RUN: %opt %s --split-input-file -p call-native-ops | filecheck %s
// RUN: %opt %s --split-input-file -p torch-to-linalg | filecheck %s --check-prefix=LOWERED

// A convolution's backward left native (cuDNN's, on CUDA): a call of a private function
// that names the overload and holds its constant arguments, tensors by call operand; the
// masked-off bias gradient (None) is not returned; the results' traced strides go with it. torch-mlir's lowering converts the
// call's types and leaves it; its contract check (verify-linalg-on-tensors) passes.
// CHECK-LABEL: func.func @convolution_backward
// CHECK:         %[[SUM:.*]] = torch.aten.add.Tensor
// CHECK:         %[[GRADS:.*]]:2 = call @native_0(%[[SUM]], %arg1, %arg2) : (!torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[8,8,3,3],bf16>) -> (!torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[8,8,3,3],bf16>)
// CHECK-NOT:     torch.aten.convolution_backward
// CHECK:         torch.aten.add.Tensor %[[GRADS]]#0
// CHECK:         return %{{.*}}, %[[GRADS]]#1
// CHECK:       func.func private @native_0({{.*}}) -> ({{.*}}) attributes {tessel.native = "aten.convolution_backward.default", tessel.native_arguments = [0 : index, 1 : index, 2 : index, [0], [1, 1], [1, 1], [1, 1], false, [0, 0], 1, [true, true, false]], tessel.native_results = [0, 1], tessel.native_strides = [array<i64: 512, 1, 64, 8>, array<i64: 72, 1, 24, 8>, unit]}
// LOWERED-LABEL: func.func @convolution_backward
// LOWERED:         %[[GRADS:.*]]:2 = call @native_0(%{{.*}}, %arg1, %arg2) : (tensor<2x8x8x8xbf16>, tensor<2x8x8x8xbf16>, tensor<8x8x3x3xbf16>) -> (tensor<2x8x8x8xbf16>, tensor<8x8x3x3xbf16>)
// LOWERED:         linalg.generic {{.*}} ins(%[[GRADS]]#0, %arg1
// LOWERED:         return %{{.*}}, %[[GRADS]]#1
// LOWERED:       func.func private @native_0(tensor<2x8x8x8xbf16>, tensor<2x8x8x8xbf16>, tensor<8x8x3x3xbf16>) -> (tensor<2x8x8x8xbf16>, tensor<8x8x3x3xbf16>) attributes {tessel.native = "aten.convolution_backward.default"
func.func @convolution_backward(%grad: !torch.vtensor<[2,8,8,8],bf16>, %image: !torch.vtensor<[2,8,8,8],bf16>, %weight: !torch.vtensor<[8,8,3,3],bf16>) -> (!torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[8,8,3,3],bf16>) {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %sum = torch.aten.add.Tensor %grad, %image, %int1 : !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[2,8,8,8],bf16>, !torch.int -> !torch.vtensor<[2,8,8,8],bf16>
  %bias_sizes = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %mask = torch.prim.ListConstruct %true, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %0:3 = torch.aten.convolution_backward %sum, %image, %weight, %bias_sizes, %ones, %ones, %ones, %false, %zeros, %int1, %mask {tessel.native = "aten.convolution_backward.default", tessel.native_strides = [array<i64: 512, 1, 64, 8>, array<i64: 72, 1, 24, 8>, unit]} : !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[8,8,3,3],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[8,8,3,3],bf16>, !torch.none
  %1 = torch.aten.add.Tensor %0#0, %image, %int1 : !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[2,8,8,8],bf16>, !torch.int -> !torch.vtensor<[2,8,8,8],bf16>
  return %1, %0#1 : !torch.vtensor<[2,8,8,8],bf16>, !torch.vtensor<[8,8,3,3],bf16>
}

// -----

// Without the mark, the op is left to torch-mlir's lowering.
// CHECK-LABEL: func.func @unmarked
// CHECK:         torch.aten.convolution_backward
// CHECK-NOT:     call @
func.func @unmarked(%grad: !torch.vtensor<[1,1,4,4],f32>, %image: !torch.vtensor<[1,1,4,4],f32>, %weight: !torch.vtensor<[1,1,1,1],f32>) -> !torch.vtensor<[1,1,1,1],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %bias_sizes = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %mask = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %0:3 = torch.aten.convolution_backward %grad, %image, %weight, %bias_sizes, %ones, %zeros, %ones, %false, %zeros, %int1, %mask : !torch.vtensor<[1,1,4,4],f32>, !torch.vtensor<[1,1,4,4],f32>, !torch.vtensor<[1,1,1,1],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[1,1,1,1],f32>, !torch.none
  return %0#1 : !torch.vtensor<[1,1,1,1],f32>
}

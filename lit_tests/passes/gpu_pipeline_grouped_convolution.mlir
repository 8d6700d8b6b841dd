// RUN: %opt %s -p gpu | filecheck %s

// A strided convolution's weight gradient as torch-mlir computes it: a grouped
// convolution whose groups are the batch and whose dilation is the forward's stride.
// The gpu pipeline leaves it named, as one library call (cuDNN through aten), and
// only the batch sum after it is a kernel.
// CHECK-LABEL: func.func @weight_gradient
// CHECK:         "tkern.library_call"() ({
// CHECK-NEXT:      linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : vector<2xi64>
// CHECK-NEXT:      "tkern.yield"
// CHECK-NEXT:    }) {callee = "conv2d", tessel.gpu = {{.*}}kind = "library"
// CHECK-NOT:     linalg.conv_2d_ngchw_gfchw
// CHECK:         arith.addf
// CHECK:         }) {sym_name = "weight_gradient_kernel_
func.func @weight_gradient(%image: tensor<3x2x1x38x38xf32>, %gradient: tensor<2x8x1x16x16xf32>)
    -> tensor<3x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<3x2x8x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<3x2x8x8x8xf32>) -> tensor<3x2x8x8x8xf32>
  %per_sample = linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%image, %gradient : tensor<3x2x1x38x38xf32>, tensor<2x8x1x16x16xf32>)
      outs(%init : tensor<3x2x8x8x8xf32>) -> tensor<3x2x8x8x8xf32>
  %sum_empty = tensor.empty() : tensor<3x8x8x8xf32>
  %sum_init = linalg.fill ins(%zero : f32) outs(%sum_empty : tensor<3x8x8x8xf32>) -> tensor<3x8x8x8xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>,
                                          affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>],
                         iterator_types = ["parallel", "reduction", "parallel", "parallel", "parallel"]}
      ins(%per_sample : tensor<3x2x8x8x8xf32>) outs(%sum_init : tensor<3x8x8x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3x8x8x8xf32>
  return %sum : tensor<3x8x8x8xf32>
}

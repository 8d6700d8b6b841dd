// RUN: %opt %s --split-input-file -p convolutions-to-gemm | filecheck %s

// An NCHW convolution becomes an im2col gather and a contraction.
// CHECK-LABEL: func.func @conv_nchw
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         %[[COLUMNS:.*]] = linalg.generic {{.*}}outs(%{{.*}} : tensor<1x27x64xf32>)
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}}ins(%{{.*}}, %[[COLUMNS]]
// CHECK:           arith.mulf
// CHECK:           arith.addf
func.func @conv_nchw(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// A depthwise convolution is not rewritten.
// CHECK-LABEL: func.func @negative_depthwise
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
func.func @negative_depthwise(%x: tensor<1x10x10x3xf32>, %w: tensor<3x3x3xf32>, %init: tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32> {
  %y = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x10x10x3xf32>, tensor<3x3x3xf32>) outs(%init : tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32>
  return %y : tensor<1x8x8x3xf32>
}

// -----

// A convolution with a dynamic batch size (dynamic=True, automatic dynamic) stays
// a convolution: the im2col rewrite needs static sizes.
// CHECK-LABEL: func.func @negative_dynamic_batch
// CHECK:         linalg.conv_2d_nchw_fchw
func.func @negative_dynamic_batch(%x: tensor<?x3x10x10xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %y : tensor<?x4x8x8xf32>
}

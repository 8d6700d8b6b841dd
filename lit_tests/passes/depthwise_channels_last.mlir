// RUN: %opt %s --split-input-file -p 'depthwise-channels-last{min-pixels=12},canonicalize' | filecheck %s

// A Mix-FFN's depthwise convolution: its image is the (n, h*w, c) rows of a linear
// layer transposed and reshaped to NCHW, and its result goes back to rows. Channels-last,
// it reads the rows in place (padded as NHWC) and hands its product back as rows: no
// transpose is left on either side.
// CHECK-LABEL: func.func @mix_ffn
// CHECK-SAME:    (%[[ROWS:.*]]: tensor<2x12x8xf32>, %[[W:.*]]: tensor<8x3x3xf32>, %[[INIT:.*]]: tensor<2x8x3x4xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[IMAGE:.*]] = tensor.expand_shape %[[ROWS]] {{\[\[}}0], [1, 2], [3]] output_shape [2, 3, 4, 8]
// CHECK:         %[[PADDED:.*]] = tensor.pad %[[IMAGE]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         %[[PRODUCT:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {{.*}}ins(%[[PADDED]], %{{.*}} : tensor<2x5x6x8xf32>, tensor<3x3x8xf32>) outs(%{{.*}} : tensor<2x3x4x8xf32>)
// CHECK:         %[[RESULT:.*]] = tensor.collapse_shape %[[PRODUCT]] {{\[\[}}0], [1, 2], [3]] : tensor<2x3x4x8xf32> into tensor<2x12x8xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[RESULT]]
func.func @mix_ffn(%rows: tensor<2x12x8xf32>, %w: tensor<8x3x3xf32>, %init: tensor<2x8x3x4xf32>) -> tensor<2x12x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<2x8x12xf32>
  %t = linalg.transpose ins(%rows : tensor<2x12x8xf32>) outs(%e0 : tensor<2x8x12xf32>) permutation = [0, 2, 1]
  %image = tensor.expand_shape %t [[0], [1], [2, 3]] output_shape [2, 8, 3, 4] : tensor<2x8x12xf32> into tensor<2x8x3x4xf32>
  %padded = tensor.pad %image low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<2x8x3x4xf32> to tensor<2x8x5x6xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%padded, %w : tensor<2x8x5x6xf32>, tensor<8x3x3xf32>) outs(%init : tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32>
  %flat = tensor.collapse_shape %y [[0], [1], [2, 3]] : tensor<2x8x3x4xf32> into tensor<2x8x12xf32>
  %e1 = tensor.empty() : tensor<2x12x8xf32>
  %back = linalg.transpose ins(%flat : tensor<2x8x12xf32>) outs(%e1 : tensor<2x12x8xf32>) permutation = [0, 2, 1]
  return %back : tensor<2x12x8xf32>
}

// -----

// A depthwise convolution between channels-first neighbours (MobileNetV2's) stays as
// it is: channels-last, its neighbours would transpose instead.
// CHECK-LABEL: func.func @negative_channels_first_image
// CHECK:         linalg.depthwise_conv_2d_nchw_chw
func.func @negative_channels_first_image(%x: tensor<2x8x5x6xf32>, %w: tensor<8x3x3xf32>, %init: tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32> {
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<2x8x5x6xf32>, tensor<8x3x3xf32>) outs(%init : tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32>
  return %y : tensor<2x8x3x4xf32>
}

// -----

// A map of at most min-pixels output pixels stays channels-first, for the library.
// CHECK-LABEL: func.func @negative_small_map
// CHECK:         linalg.depthwise_conv_2d_nchw_chw
func.func @negative_small_map(%rows: tensor<2x4x8xf32>, %w: tensor<8x3x3xf32>, %init: tensor<2x8x2x2xf32>) -> tensor<2x8x2x2xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<2x8x4xf32>
  %t = linalg.transpose ins(%rows : tensor<2x4x8xf32>) outs(%e0 : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %image = tensor.expand_shape %t [[0], [1], [2, 3]] output_shape [2, 8, 2, 2] : tensor<2x8x4xf32> into tensor<2x8x2x2xf32>
  %padded = tensor.pad %image low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<2x8x2x2xf32> to tensor<2x8x4x4xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%padded, %w : tensor<2x8x4x4xf32>, tensor<8x3x3xf32>) outs(%init : tensor<2x8x2x2xf32>) -> tensor<2x8x2x2xf32>
  return %y : tensor<2x8x2x2xf32>
}

// RUN: %opt %s --split-input-file -p channels-last-convolutions | filecheck %s

// A library convolution of a padded image: the transpose goes below the pad (which
// then pads H and W of the NHWC image), the weight and the accumulator are transposed,
// and the NHWC result is transposed back.
// CHECK-LABEL: func.func @padded_library_convolution
// CHECK:         %[[IMAGE:.*]] = linalg.transpose ins(%arg0 : tensor<2x8x32x32xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK:         %[[PADDED:.*]] = tensor.pad %[[IMAGE]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         %[[FILTER:.*]] = linalg.transpose ins(%arg1 : tensor<16x8x3x3xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK:         %[[INITIAL:.*]] = linalg.transpose ins(%arg2 : tensor<2x16x32x32xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK:         %[[CONVOLVED:.*]] = linalg.conv_2d_nhwc_fhwc {{.*}}tessel.library_call{{.*}} ins(%[[PADDED]], %[[FILTER]] : tensor<2x34x34x8xf32>, tensor<16x3x3x8xf32>) outs(%[[INITIAL]] : tensor<2x32x32x16xf32>)
// CHECK:         %[[RESULT:.*]] = linalg.transpose ins(%[[CONVOLVED]] : tensor<2x32x32x16xf32>) {{.*}} permutation = [0, 3, 1, 2]
// CHECK:         return %[[RESULT]]
func.func @padded_library_convolution(%x: tensor<2x8x32x32xf32>, %w: tensor<16x8x3x3xf32>, %acc: tensor<2x16x32x32xf32>) -> tensor<2x16x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x8x32x32xf32> to tensor<2x8x34x34xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>, tessel.library_call}
      ins(%padded, %w : tensor<2x8x34x34xf32>, tensor<16x8x3x3xf32>) outs(%acc : tensor<2x16x32x32xf32>) -> tensor<2x16x32x32xf32>
  return %y : tensor<2x16x32x32xf32>
}

// -----

// A depthwise convolution that runs as loops of tessel's (no library mark) takes its
// NHWC form too, with its weight as [KH, KW, C]; a concatenation of the image is
// concatenated from transposed parts, along the NHWC channels.
// CHECK-LABEL: func.func @depthwise_of_a_concatenation
// CHECK-DAG:     %[[A:.*]] = linalg.transpose ins(%arg0 : tensor<2x4x16x16xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK-DAG:     %[[B:.*]] = linalg.transpose ins(%arg1 : tensor<2x12x16x16xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK:         %[[IMAGE:.*]] = tensor.concat dim(3) %[[A]], %[[B]] : (tensor<2x16x16x4xf32>, tensor<2x16x16x12xf32>) -> tensor<2x16x16x16xf32>
// CHECK:         linalg.transpose ins(%arg2 : tensor<16x3x3xf32>) {{.*}} permutation = [1, 2, 0]
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:       tessel.library_call
// CHECK-SAME:      ins(%[[IMAGE]], %{{.*}} : tensor<2x16x16x16xf32>, tensor<3x3x16xf32>)
func.func @depthwise_of_a_concatenation(%a: tensor<2x4x16x16xf32>, %b: tensor<2x12x16x16xf32>, %w: tensor<16x3x3xf32>, %acc: tensor<2x16x14x14xf32>) -> tensor<2x16x14x14xf32> {
  %x = tensor.concat dim(1) %a, %b : (tensor<2x4x16x16xf32>, tensor<2x12x16x16xf32>) -> tensor<2x16x16x16xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<2x16x16x16xf32>, tensor<16x3x3xf32>) outs(%acc : tensor<2x16x14x14xf32>) -> tensor<2x16x14x14xf32>
  return %y : tensor<2x16x14x14xf32>
}

// -----

// A 1x1 weight larger than its image (MobileNetV2's expansions over 14x14 maps) goes by
// its image: computed NHWC (by a convolution before it, through a ReLU), the
// convolution takes its NHWC form, its weight's transpose a reshape; on an image
// computed NCHW (here an argument) it stays NCHW.
// CHECK-LABEL: func.func @pointwise_large_weight_by_its_image
// CHECK:         linalg.conv_2d_nhwc_fhwc
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x14x14x8xf32>, tensor<16x3x3x8xf32>)
// CHECK:         linalg.transpose ins(%arg4 : tensor<576x16x1x1xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK:         linalg.conv_2d_nhwc_fhwc
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x12x12x16xf32>, tensor<576x1x1x16xf32>)
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-SAME:      ins(%arg0, %arg4 : tensor<2x16x12x12xf32>, tensor<576x16x1x1xf32>)
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pointwise_large_weight_by_its_image(%plain: tensor<2x16x12x12xf32>, %x: tensor<2x8x14x14xf32>, %w: tensor<16x8x3x3xf32>,
                                               %acc: tensor<2x16x12x12xf32>, %expand: tensor<576x16x1x1xf32>, %acc2: tensor<2x576x12x12xf32>)
    -> (tensor<2x576x12x12xf32>, tensor<2x576x12x12xf32>) {
  %zero = arith.constant 0.0 : f32
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>, tessel.library_call}
      ins(%x, %w : tensor<2x8x14x14xf32>, tensor<16x8x3x3xf32>) outs(%acc : tensor<2x16x12x12xf32>) -> tensor<2x16x12x12xf32>
  %empty = tensor.empty() : tensor<2x16x12x12xf32>
  %relu = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<2x16x12x12xf32>) outs(%empty : tensor<2x16x12x12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x16x12x12xf32>
  %z = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>, tessel.library_call}
      ins(%relu, %expand : tensor<2x16x12x12xf32>, tensor<576x16x1x1xf32>) outs(%acc2 : tensor<2x576x12x12xf32>) -> tensor<2x576x12x12xf32>
  %u = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>, tessel.library_call}
      ins(%plain, %expand : tensor<2x16x12x12xf32>, tensor<576x16x1x1xf32>) outs(%acc2 : tensor<2x576x12x12xf32>) -> tensor<2x576x12x12xf32>
  return %z, %u : tensor<2x576x12x12xf32>, tensor<2x576x12x12xf32>
}

// -----

// A weight larger than its image would be transposed at every call for little gain (a
// ResNet's last layers), and a convolution left to loops that is not depthwise (im2col
// made it a gemm before) is not this pass's: both stay NCHW.
// CHECK-LABEL: func.func @negative_large_weight_and_unmarked
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK:         linalg.conv_2d_nchw_fchw
func.func @negative_large_weight_and_unmarked(%x: tensor<2x512x7x7xf32>, %w: tensor<512x512x3x3xf32>, %acc: tensor<2x512x5x5xf32>,
                                              %u: tensor<2x8x32x32xf32>, %v: tensor<16x8x3x3xf32>, %bcc: tensor<2x16x30x30xf32>)
    -> (tensor<2x512x5x5xf32>, tensor<2x16x30x30xf32>) {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>, tessel.library_call}
      ins(%x, %w : tensor<2x512x7x7xf32>, tensor<512x512x3x3xf32>) outs(%acc : tensor<2x512x5x5xf32>) -> tensor<2x512x5x5xf32>
  %z = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%u, %v : tensor<2x8x32x32xf32>, tensor<16x8x3x3xf32>) outs(%bcc : tensor<2x16x30x30xf32>) -> tensor<2x16x30x30xf32>
  return %y, %z : tensor<2x512x5x5xf32>, tensor<2x16x30x30xf32>
}

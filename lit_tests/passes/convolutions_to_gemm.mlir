// RUN: %opt %s --split-input-file -p convolutions-to-gemm | filecheck %s
// RUN: %opt %s --split-input-file -p 'convolutions-to-gemm{library-elements=f32 library-depthwise-pixels=16}' | filecheck %s --check-prefix=LIBRARY
// RUN: %opt %s --split-input-file -p 'convolutions-to-gemm{library-elements=f32 library-pointwise=1}' | filecheck %s --check-prefix=POINTWISE

// An NCHW convolution becomes an im2col gather, whose innermost loop (output column)
// reads the input contiguously, and a contraction over collapsed views of it.
// CHECK:       #[[GATHER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
// CHECK-LABEL: func.func @conv_nchw
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x10x10xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[INIT:.*]]: tensor<1x4x8x8xf32>)
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         %[[PATCHES:.*]] = linalg.generic {indexing_maps = [#[[GATHER]], {{.*}}ins(%[[X]] : {{.*}}) outs(%{{.*}} : tensor<1x3x3x3x8x8xf32>)
// CHECK:         %[[COLUMNS:.*]] = tensor.collapse_shape %[[PATCHES]] {{.*}} into tensor<1x27x64xf32>
// CHECK:         %[[FILTER:.*]] = tensor.collapse_shape %[[W]] {{.*}} into tensor<4x27xf32>
// CHECK:         %[[PRODUCT:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}}ins(%[[FILTER]], %[[COLUMNS]]
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         %[[RESULT:.*]] = tensor.expand_shape %[[PRODUCT]] {{.*}} output_shape [1, 4, 8, 8]
// CHECK:         return %[[RESULT]]
// With f32 convolutions left to the target's library, a 3x3 one stays named, marked.
// LIBRARY-LABEL: func.func @conv_nchw
// LIBRARY:         linalg.conv_2d_nchw_fchw {{{.*}}tessel.library_call}
func.func @conv_nchw(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// A strided, dilated convolution: the gather map scales the output index by the stride
// and the filter index by the dilation.
// CHECK:       #[[STRIDED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2 * 2, d5 * 2 + d3 * 2)>
// CHECK-LABEL: func.func @conv_stride_dilation
// CHECK:         linalg.generic {indexing_maps = [#[[STRIDED]]
func.func @conv_stride_dilation(%x: tensor<1x3x11x11xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x11x11xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
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

// -----

// A 1x1 convolution of stride 1 has no gather: the gemm reads the image collapsed to
// (N, C, H*W). It is rewritten even where f32 convolutions go to the library.
// CHECK-LABEL: func.func @conv_1x1
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8x5x5xf32>,
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         %[[COLUMNS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1], [2, 3]] : tensor<2x8x5x5xf32> into tensor<2x8x25xf32>
// CHECK:         linalg.generic {{.*}}ins(%{{.*}}, %[[COLUMNS]]
// LIBRARY-LABEL: func.func @conv_1x1
// LIBRARY-NOT:     linalg.conv_2d_nchw_fchw
// LIBRARY-NOT:     tessel.library_call
// With library-pointwise it goes to the library as it is.
// POINTWISE-LABEL: func.func @conv_1x1
// POINTWISE:         linalg.conv_2d_nchw_fchw {{.*}}tessel.library_call
func.func @conv_1x1(%x: tensor<2x8x5x5xf32>, %w: tensor<4x8x1x1xf32>, %init: tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>) outs(%init : tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  return %y : tensor<2x4x5x5xf32>
}

// -----

// A strided 1x1 convolution skips pixels: it keeps its gather.
// CHECK-LABEL: func.func @negative_strided_1x1
// CHECK:         linalg.generic {{.*}}outs(%{{.*}} : tensor<2x8x1x1x3x3xf32>)
func.func @negative_strided_1x1(%x: tensor<2x8x5x5xf32>, %w: tensor<4x8x1x1xf32>, %init: tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x8x5x5xf32>, tensor<4x8x1x1xf32>) outs(%init : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// -----

// Depthwise convolutions go to the library on maps of at most library-depthwise-pixels
// output pixels (16 here: 4x4, not 8x8).
// CHECK-LABEL:   func.func @depthwise_nchw
// CHECK-NOT:       tessel.library_call
// LIBRARY-LABEL: func.func @depthwise_nchw
// LIBRARY:         linalg.depthwise_conv_2d_nchw_chw {{{.*}}tessel.library_call} {{.*}} -> tensor<1x3x4x4xf32>
// LIBRARY-NOT:     tessel.library_call
func.func @depthwise_nchw(%x: tensor<1x3x6x6xf32>, %w: tensor<3x3x3xf32>, %init: tensor<1x3x4x4xf32>,
                          %big: tensor<1x3x10x10xf32>, %big_init: tensor<1x3x8x8xf32>)
    -> (tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>) {
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<3x3x3xf32>) outs(%init : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %z = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%big, %w : tensor<1x3x10x10xf32>, tensor<3x3x3xf32>) outs(%big_init : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %y, %z : tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>
}

// -----

// An f64 convolution is not the library's (library-elements=f32): it becomes a gemm.
// LIBRARY-LABEL: func.func @negative_f64_library
// LIBRARY-NOT:     linalg.conv_2d_nchw_fchw
// LIBRARY-NOT:     tessel.library_call
func.func @negative_f64_library(%x: tensor<1x3x10x10xf64>, %w: tensor<4x3x3x3xf64>, %init: tensor<1x4x8x8xf64>) -> tensor<1x4x8x8xf64> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x10x10xf64>, tensor<4x3x3x3xf64>) outs(%init : tensor<1x4x8x8xf64>) -> tensor<1x4x8x8xf64>
  return %y : tensor<1x4x8x8xf64>
}

// -----

// A bf16 convolution accumulating in f32 (its result f32, its operands bf16) is not
// the f32 library's: it becomes a gemm on widened columns.
// LIBRARY-LABEL: func.func @negative_mixed_library
// LIBRARY-NOT:     linalg.conv_2d_nchw_fchw
// LIBRARY-NOT:     tessel.library_call
func.func @negative_mixed_library(%x: tensor<1x3x10x10xbf16>, %w: tensor<4x3x3x3xbf16>, %init: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x10x10xbf16>, tensor<4x3x3x3xbf16>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

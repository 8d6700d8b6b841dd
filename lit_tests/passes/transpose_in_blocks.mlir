// RUN: %opt %s --split-input-file -p transpose-in-blocks | filecheck %s

// Tokens back to an NCHW map, with a bias: the output's columns (d3) and the input's
// channels (d1) are walked in 8 x 8 blocks, one row (d2) at a time.
// CHECK-LABEL: func.func @tokens_to_nchw
// CHECK:         scf.for %{{.*}} = %{{.*}} to %c64 step %c8{{.*}} iter_args
// CHECK:           scf.for %{{.*}} = %{{.*}} to %c16 step %c1 iter_args
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c32 step %c8{{.*}} iter_args
// CHECK:               linalg.generic
// CHECK-SAME:            ins(%{{.*}}, %{{.*}} : tensor<1x1x8x8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<1x8x1x8xf32>)
func.func @tokens_to_nchw(%x: tensor<1x16x32x64xf32>, %b: tensor<64xf32>,
                          %init: tensor<1x64x16x32xf32>) -> tensor<1x64x16x32xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(n, c, h, w) -> (n, h, w, c)>,
                       affine_map<(n, c, h, w) -> (c)>,
                       affine_map<(n, c, h, w) -> (n, c, h, w)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<1x16x32x64xf32>, tensor<64xf32>) outs(%init : tensor<1x64x16x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<1x64x16x32xf32>
  return %r : tensor<1x64x16x32xf32>
}

// -----

// A bias broadcast along the channels reads no dim out of order: no transpose.
// CHECK-LABEL: func.func @negative_channel_bias
// CHECK-NOT:     scf.for
func.func @negative_channel_bias(%x: tensor<1x64x16x32xf32>, %b: tensor<64xf32>,
                                 %init: tensor<1x64x16x32xf32>) -> tensor<1x64x16x32xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>,
                       affine_map<(n, c, h, w) -> (c)>,
                       affine_map<(n, c, h, w) -> (n, c, h, w)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<1x64x16x32xf32>, tensor<64xf32>) outs(%init : tensor<1x64x16x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<1x64x16x32xf32>
  return %r : tensor<1x64x16x32xf32>
}

// -----

// A transpose whose contiguous dim is shorter than a block (4 heads) stays one loop nest.
// CHECK-LABEL: func.func @negative_short_transpose
// CHECK-NOT:     scf.for
func.func @negative_short_transpose(%x: tensor<256x4xf32>, %init: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(h, t) -> (t, h)>, affine_map<(h, t) -> (h, t)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<256x4xf32>) outs(%init : tensor<4x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x256xf32>
  return %r : tensor<4x256xf32>
}

// -----

// On buffers (where the CPU pipeline runs it), the blocks are subviews walked by loops
// that carry nothing: no iter_args, no copy of the result.
// CHECK-LABEL: func.func @attention_probabilities_transposed
// CHECK-NOT:     iter_args
// CHECK:         scf.for %{{.*}} = %{{.*}} to %c12 step %c1 {
// CHECK:           scf.for %{{.*}} = %{{.*}} to %c128{{.*}} step %c8{{.*}} {
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c128{{.*}} step %c8{{.*}} {
// CHECK:               memref.subview
// CHECK:             linalg.generic
// CHECK-SAME:          ins(%{{.*}} : memref<1x1x8x8xf32, strided<[196608, 16384, 128, 1], offset: ?>>)
// CHECK-NOT:     memref.copy
func.func @attention_probabilities_transposed(%p: memref<1x12x128x128xf32>, %out: memref<1x12x128x128xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(b, h, k, q) -> (b, h, q, k)>,
                       affine_map<(b, h, k, q) -> (b, h, k, q)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p : memref<1x12x128x128xf32>) outs(%out : memref<1x12x128x128xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

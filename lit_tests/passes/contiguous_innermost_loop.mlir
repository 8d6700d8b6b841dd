// RUN: %opt %s --split-input-file -p contiguous-innermost-loop | filecheck %s

// A depthwise convolution: the output's column loop (d3) moves inside the 3x3 window,
// so that the innermost loop reads a row of the input and writes a row of the output.
// CHECK-DAG:   #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d4 + d5)>
// CHECK-DAG:   #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d3, d4)>
// CHECK-DAG:   #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func @depthwise
// CHECK:         linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
func.func @depthwise(%x: tensor<1x8x34x34xf32>, %w: tensor<8x3x3xf32>,
                     %init: tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(n, c, h, w, i, j) -> (n, c, h + i, w + j)>,
                       affine_map<(n, c, h, w, i, j) -> (c, i, j)>,
                       affine_map<(n, c, h, w, i, j) -> (n, c, h, w)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x8x34x34xf32>, tensor<8x3x3xf32>) outs(%init : tensor<1x8x32x32xf32>) {
  ^bb0(%in: f32, %weight: f32, %acc: f32):
    %m = arith.mulf %in, %weight : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x32x32xf32>
  return %r : tensor<1x8x32x32xf32>
}

// -----

// A sum over the last, contiguous dim keeps its order: its rows are the contiguous walk.
// CHECK-LABEL: func.func @negative_row_sums
// CHECK:         iterator_types = ["parallel", "reduction"]
func.func @negative_row_sums(%x: tensor<256x512xf32>, %init: tensor<256xf32>) -> tensor<256xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<256x512xf32>) outs(%init : tensor<256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %r : tensor<256xf32>
}

// -----

// A 2x2 window has too few terms a result to pay for a strided inner loop.
// CHECK-LABEL: func.func @negative_small_window
// CHECK:         iterator_types = ["parallel", "parallel", "reduction", "reduction"]
func.func @negative_small_window(%x: tensor<64x64xf32>, %window: tensor<2x2xf32>,
                                 %init: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(h, w, i, j) -> (h * 2 + i, w * 2 + j)>,
                       affine_map<(h, w, i, j) -> (i, j)>,
                       affine_map<(h, w, i, j) -> (h, w)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %window : tensor<64x64xf32>, tensor<2x2xf32>) outs(%init : tensor<32x32xf32>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

// A column loop of 2 iterations stays where it is.
// CHECK-LABEL: func.func @negative_narrow
// CHECK:         iterator_types = ["parallel", "parallel", "reduction", "reduction"]
func.func @negative_narrow(%x: tensor<10x4xf32>, %w: tensor<3x3xf32>, %init: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(h, w, i, j) -> (h + i, w + j)>,
                       affine_map<(h, w, i, j) -> (i, j)>,
                       affine_map<(h, w, i, j) -> (h, w)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<10x4xf32>, tensor<3x3xf32>) outs(%init : tensor<8x2xf32>) {
  ^bb0(%in: f32, %weight: f32, %acc: f32):
    %m = arith.mulf %in, %weight : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x2xf32>
  return %r : tensor<8x2xf32>
}

// RUN: %opt %s --split-input-file -p "fuse-tiles{tile-leading-dims=true}" | filecheck %s

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>

// A row sum and its epilogue over (batch, sequence, features): one tile per
// (batch, sequence) row, so the GPU runs one program per row.
// CHECK-LABEL: func.func @center_rows
// CHECK:         %[[R:.*]] = scf.forall (%[[B:.*]], %[[S:.*]]) in (4, 8)
// CHECK:           tensor.extract_slice %{{.*}}[%[[B]], %[[S]], 0] [1, 1, 16]
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           arith.subf
// CHECK:         return %[[R]]
func.func @center_rows(%x: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<4x8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8x16xf32>
  %centered = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.subf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<4x8x16xf32>
  return %centered : tensor<4x8x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// No reduction in the group and a leading dim of 4: tiled by it, the GPU would run 4
// programs, so no tiling; the producer and the root stay two element-wise generics.
// CHECK-LABEL: func.func @negative_no_reduction
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic
// CHECK:         linalg.generic
// CHECK-NOT:     scf.forall
func.func @negative_no_reduction(%x: tensor<4x8x16xf32>, %b: tensor<16xf32>) -> tensor<4x8x16xf32> {
  %e = tensor.empty() : tensor<4x8x16xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b : tensor<16xf32>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %bias : tensor<4x8x16xf32>, tensor<4x8x16xf32>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %a = arith.addf %in, %c : f32
    linalg.yield %a : f32
  } -> tensor<4x8x16xf32>
  return %sum : tensor<4x8x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// No reduction, but 512 rows along the leading dim, enough programs for the GPU: the
// group keeps the usual tiling along its first dim only, its producer fused.
// CHECK-LABEL: func.func @many_rows_no_reduction
// CHECK:         scf.forall (%{{.*}}) in (512) shared_outs
// CHECK-NOT:     scf.forall (
func.func @many_rows_no_reduction(%x: tensor<512x2x16xf32>, %b: tensor<16xf32>) -> tensor<512x2x16xf32> {
  %e = tensor.empty() : tensor<512x2x16xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b : tensor<16xf32>) outs(%e : tensor<512x2x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<512x2x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %bias : tensor<512x2x16xf32>, tensor<512x2x16xf32>) outs(%e : tensor<512x2x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %a = arith.addf %in, %c : f32
    linalg.yield %a : f32
  } -> tensor<512x2x16xf32>
  return %sum : tensor<512x2x16xf32>
}

// -----

// A 2x2 max pooling fed by a relu: a pooling window is unrolled per output point by
// the GPU kernel, so it is not tiled into one program per point.
// CHECK-LABEL: func.func @negative_pooling_window
// CHECK-NOT:     scf.forall
func.func @negative_pooling_window(%x: tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x4x8x8xf32>) outs(%e : tensor<2x4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x4x4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %pool = linalg.generic {indexing_maps = [affine_map<(n, c, h, w, i, j) -> (n, c, h * 2 + i, w * 2 + j)>, affine_map<(n, c, h, w, i, j) -> (i, j)>, affine_map<(n, c, h, w, i, j) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%relu, %window : tensor<2x4x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<2x4x4x4xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x4x4x4xf32>
  return %pool : tensor<2x4x4x4xf32>
}

// -----

#window_in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#window = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#window_out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Average pooling (a 2x2 window sum, then a divide): the window stays out of its
// epilogue's group, which would otherwise run one GPU program per output point.
// CHECK-LABEL: func.func @average_pool
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-NOT:     scf.forall
// CHECK:         arith.divf
func.func @average_pool(%x: tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %four = arith.constant 4.0 : f32
  %e1 = tensor.empty() : tensor<2x4x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %shape = tensor.empty() : tensor<2x2xf32>
  %sum = linalg.generic {indexing_maps = [#window_in, #window, #window_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %shape : tensor<2x4x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<2x4x4x4xf32>) {
  ^bb0(%in: f32, %w: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x4x4x4xf32>
  %e2 = tensor.empty() : tensor<2x4x4x4xf32>
  %mean = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sum : tensor<2x4x4x4xf32>) outs(%e2 : tensor<2x4x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %four : f32
    linalg.yield %d : f32
  } -> tensor<2x4x4x4xf32>
  return %mean : tensor<2x4x4x4xf32>
}

// -----

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>

// Batch norm's statistics: a sum per channel over (batch, height, width), with no
// producer in its group. It is still tiled, one tile per channel (a GPU program per
// row), rather than left whole (one program per output point).
// CHECK-LABEL: func.func @sum_per_channel
// CHECK:         scf.forall (%{{.*}}) in (8)
// CHECK:           linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
func.func @sum_per_channel(%x: tensor<2x8x16x16xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#x, #channel], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<2x8x16x16xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %sum : tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#swapped = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>

// A producer read transposed stays out of the row loop (a GPU row kernel walks every
// op's row in one order); the reduction reading it is tiled by rows on its own.
// CHECK-LABEL: func.func @negative_transposed_producer
// CHECK:         %[[T:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK:         scf.forall (%{{.*}}, %{{.*}}) in (4, 16)
// CHECK:           tensor.extract_slice %[[T]]
// CHECK-NOT:       arith.mulf
func.func @negative_transposed_producer(%x: tensor<4x512x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x512x16xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x512x16xf32>) outs(%e : tensor<4x512x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<4x512x16xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %sum = linalg.generic {indexing_maps = [#swapped, #rows], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%twice : tensor<4x512x16xf32>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %sum : tensor<4x16xf32>
}

// -----

// Two layer norms in a row, whose four sums start from one zero fill (CSE shares it
// across a graph): each sum gets its own copy, and both norms, row-local, become one
// row loop with a single result. Fused while the first norm's mean still read it, the
// shared fill had become a second result of that norm's loop, which the mean then read
// after the loop: the mean and the widening before it stayed kernels of their own.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#rows2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @layer_norms_with_one_fill
// CHECK-NOT:     linalg.generic
// CHECK:         %[[R:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (4, 8) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<4x8x16xbf16>)
// CHECK-COUNT-2:   iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           math.rsqrt
// CHECK-COUNT-2:   iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           math.rsqrt
// CHECK:           scf.forall.in_parallel
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @layer_norms_with_one_fill(%x: tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %init = linalg.generic {indexing_maps = [#rows2], iterator_types = ["parallel", "parallel"]}
      outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x8x16xf32>
  %e4 = tensor.empty() : tensor<4x8x16xbf16>
  %wide1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x8x16xbf16>) outs(%e3 : tensor<4x8x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8x16xf32>
  %sum1 = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%wide1 : tensor<4x8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %centered1 = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%wide1, %sum1 : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%e3 : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %mean = arith.divf %s, %n : f32
    %c = arith.subf %in, %mean : f32
    linalg.yield %c : f32
  } -> tensor<4x8x16xf32>
  %squares1 = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%centered1 : tensor<4x8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %normed1 = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%centered1, %squares1 : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%e4 : tensor<4x8x16xbf16>) {
  ^bb0(%in: f32, %sq: f32, %out: bf16):
    %var = arith.divf %sq, %n : f32
    %r = math.rsqrt %var : f32
    %y = arith.mulf %in, %r : f32
    %t = arith.truncf %y : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8x16xbf16>
  %wide2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%normed1 : tensor<4x8x16xbf16>) outs(%e3 : tensor<4x8x16xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8x16xf32>
  %sum2 = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%wide2 : tensor<4x8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %centered2 = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%wide2, %sum2 : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%e3 : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %mean = arith.divf %s, %n : f32
    %c = arith.subf %in, %mean : f32
    linalg.yield %c : f32
  } -> tensor<4x8x16xf32>
  %squares2 = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%centered2 : tensor<4x8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %normed2 = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%centered2, %squares2 : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%e4 : tensor<4x8x16xbf16>) {
  ^bb0(%in: f32, %sq: f32, %out: bf16):
    %var = arith.divf %sq, %n : f32
    %r = math.rsqrt %var : f32
    %y = arith.mulf %in, %r : f32
    %t = arith.truncf %y : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8x16xbf16>
  return %normed2 : tensor<4x8x16xbf16>
}

// -----

// A sum over rows of 32 values that an outer product with 64 weights reads: a row
// kernel walks its results with the lanes of its row, too few for 64 values a row, so
// the sum stays out of the product's group, which, left with no reduction, is an
// element-wise kernel over all its points rather than one program per row.
// CHECK-LABEL: func.func @negative_row_shorter_than_tile
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]], %{{.*}} : tensor<4xf32>, tensor<64xf32>)
// CHECK:           math.rsqrt
func.func @negative_row_shorter_than_tile(%x: tensor<4x32xf32>, %w: tensor<64xf32>) -> tensor<4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x32xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x64xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                            iterator_types = ["parallel", "parallel"]}
      ins(%sum, %w : tensor<4xf32>, tensor<64xf32>) outs(%e2 : tensor<4x64xf32>) {
  ^bb0(%s: f32, %weight: f32, %out: f32):
    %r = math.rsqrt %s : f32
    %y = arith.mulf %r, %weight : f32
    linalg.yield %y : f32
  } -> tensor<4x64xf32>
  return %scaled : tensor<4x64xf32>
}

// -----

#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#groups = affine_map<(d0, d1, d2) -> (d0, d1)>
#points = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#group_of_point = affine_map<(d0, d1, d2, d3) -> (d0, d1)>

// A group norm's backward: per (image, group), a sum over the group's 128 channels, and a
// result of 128 x 36 points that reads it. A row would be the sum's 128 points, narrower
// than the result: the sum is a row loop of its own, the result element-wise, untiled.
// CHECK-LABEL: func.func @negative_root_wider_than_rows
// CHECK:         %[[SUMS:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (2, 4)
// CHECK:           iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           scf.forall.in_parallel
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[SUMS]] : tensor<2x4x128x36xf32>, tensor<2x4xf32>)
func.func @negative_root_wider_than_rows(%per_channel: tensor<2x4x128xf32>, %y: tensor<2x4x128x36xf32>) -> tensor<2x4x128x36xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %sum = linalg.generic {indexing_maps = [#x, #groups], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%per_channel : tensor<2x4x128xf32>) outs(%init : tensor<2x4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %e2 = tensor.empty() : tensor<2x4x128x36xf32>
  %gradient = linalg.generic {indexing_maps = [#points, #group_of_point, #points], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %sum : tensor<2x4x128x36xf32>, tensor<2x4xf32>) outs(%e2 : tensor<2x4x128x36xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<2x4x128x36xf32>
  return %gradient : tensor<2x4x128x36xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>

// A residual add that a row kernel reads (the row sum and the centering) and a later
// op reads too (here the return; in a transformer, the next residual add): the row
// kernel takes the add in and also writes its value, as a second result of its tiled
// loop. One kernel for the add and the norm, not two.
// CHECK-LABEL: func.func @residual_add_into_rows
// CHECK:         %[[R:.*]]:2 = scf.forall (%{{.*}}, %{{.*}}) in (4, 8)
// CHECK:           arith.addf
// CHECK:           iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           arith.subf
// CHECK:           scf.forall.in_parallel
// CHECK-COUNT-2:     tensor.parallel_insert_slice
// CHECK:         return %[[R]]#0, %[[R]]#1
func.func @residual_add_into_rows(%x: tensor<4x8x16xf32>, %y: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x16xf32>
  %residual = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<4x8x16xf32>, tensor<4x8x16xf32>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8x16xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%residual : tensor<4x8x16xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8x16xf32>
  %centered = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%residual, %sum : tensor<4x8x16xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.subf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<4x8x16xf32>
  return %centered, %residual : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}

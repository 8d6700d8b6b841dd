// RUN: %opt %s --split-input-file -p split-reductions | filecheck %s

// CHECK-LABEL: func.func @group_norm_sum
// CHECK-SAME:    (%[[X:.*]]: tensor<2x64x3136xf32>)
// CHECK:         %[[INIT:.*]] = linalg.fill
// CHECK:         %[[PIECES:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1, 2], [3]] output_shape [2, 32, 2, 3136]
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[FILL:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x32xf32>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      linalg.yield %[[ZERO]]
// CHECK:         %[[PARTIAL:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[PIECES]] : tensor<2x32x2x3136xf32>) outs(%[[FILL]] : tensor<2x32xf32>)
// CHECK:           arith.addf
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<2x32xf32>) outs(%[[INIT]] : tensor<2xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[ADD:.*]] = arith.addf %[[IN]], %[[ACC]] : f32
// CHECK-NEXT:      linalg.yield %[[ADD]]
// CHECK:         return %[[SUM]]
// Group norm's statistics: two images of 64 x 3136 values each, a sum per image.
func.func @group_norm_sum(%x: tensor<2x64x3136xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2xf32>) -> tensor<2xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>],
                         iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<2x64x3136xf32>) outs(%init : tensor<2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %sum : tensor<2xf32>
}


// -----

// CHECK-LABEL: func.func @sum_of_squares
// CHECK:         %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x32x2x3136xbf16>) outs(%{{.*}} : tensor<2x32xf32>)
// CHECK:           arith.extf
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<2x32xf32>)
// CHECK-NOT:       arith.mulf
// CHECK:           arith.addf
// The sum of squares of a half tensor widened to f32, its producers fused: the
// partials keep the body, the combine only adds.
func.func @sum_of_squares(%x: tensor<2x64x3136xbf16>, %init: tensor<2xf32>) -> tensor<2xf32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>],
                         iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<2x64x3136xbf16>) outs(%init : tensor<2xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %wide = arith.extf %in : bf16 to f32
    %square = arith.mulf %wide, %wide : f32
    %s = arith.addf %square, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %sum : tensor<2xf32>
}


// -----

// CHECK-LABEL: func.func @whole_tensor_max
// CHECK-SAME:    (%[[X:.*]]: tensor<512x1024xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK:         %[[PIECES:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2]] output_shape [64, 8, 1024]
// CHECK:         %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[FILL:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<64xf32>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      linalg.yield %[[NEG_INF]]
// CHECK:         %[[PARTIAL:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[PIECES]] : tensor<64x8x1024xf32>) outs(%[[FILL]] : tensor<64xf32>)
// CHECK:           arith.maximumf
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[PARTIAL]] : tensor<64xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK:           arith.maximumf
// A whole-tensor max: 64 programs of 8 rows each, then one combine.
func.func @whole_tensor_max(%x: tensor<512x1024xf32>, %init: tensor<f32>) -> tensor<f32> {
  %max = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                         iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<512x1024xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  return %max : tensor<f32>
}


// -----

// CHECK-DAG:   #[[PARTIAL_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d2)>
// CHECK-LABEL: func.func @min_per_channel
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x16384xf32>, %[[INIT:.*]]: tensor<16xf32>)
// CHECK:         %[[PIECES:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 64, 256]
// CHECK:         %[[POS_INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK:         %[[PARTIAL:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[PARTIAL_MAP]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[PIECES]] : tensor<2x16x64x256xf32>) outs(%{{.*}} : tensor<16x2x64xf32>)
// CHECK:           arith.minimumf
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[PARTIAL]] : tensor<16x2x64xf32>) outs(%[[INIT]] : tensor<16xf32>)
// CHECK:           arith.minimumf
// A min per channel over two images (batch norm's layout): the image dim becomes a
// dim of the partials whole, and the pixels are cut in 64. The GPU holds the image
// channels-last and a program reduces 32 channels side by side, so the 16 channels
// count as one output of 16 x 32768 values.
func.func @min_per_channel(%x: tensor<2x16x16384xf32>, %init: tensor<16xf32>) -> tensor<16xf32> {
  %min = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>],
                         iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%x : tensor<2x16x16384xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.minimumf %acc, %in : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  return %min : tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @sum_per_channel_of_many_channels
// CHECK-NOT:     tensor.expand_shape
// CHECK:         %[[PARTIAL:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<32x1024x14x14xf32>) outs(%{{.*}} : tensor<1024x32xf32>)
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<1024x32xf32>)
// A batch norm's per-channel sum over 32 images of 14x14 (ResNet-50's third stage):
// 1024 channels would fill the GPU one per program, but 32 to a program they are 32
// programs, so each image's sums are partials of their own.
func.func @sum_per_channel_of_many_channels(%x: tensor<32x1024x14x14xf32>, %init: tensor<1024xf32>) -> tensor<1024xf32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>],
                         iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<32x1024x14x14xf32>) outs(%init : tensor<1024xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  return %sum : tensor<1024xf32>
}

// -----

// CHECK-LABEL: func.func @negative_many_rows
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<512x16384xf32>) outs(%{{.*}} : tensor<512xf32>)
// CHECK-NOT:     linalg.generic
// Enough rows to fill the GPU: one program per row already.
func.func @negative_many_rows(%x: tensor<512x16384xf32>, %init: tensor<512xf32>) -> tensor<512xf32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<512x16384xf32>) outs(%init : tensor<512xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  return %sum : tensor<512xf32>
}

// -----

// Rows of a prime length: no equal pieces, so the two rows stay whole.
// CHECK-LABEL: func.func @negative_prime_row_length
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<2x100003xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK-NOT:     linalg.generic
func.func @negative_prime_row_length(%x: tensor<2x100003xf32>, %init: tensor<2xf32>) -> tensor<2xf32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x100003xf32>) outs(%init : tensor<2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %sum : tensor<2xf32>
}

// -----

// The two-sum form of a mean and variance, both sums in one generic: one partial
// generic and one combine, each with two results.
// CHECK-LABEL: func.func @sum_and_sum_of_squares
// CHECK:         %[[PARTIAL:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<2x32x2x3136xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x32xf32>, tensor<2x32xf32>)
// CHECK:           arith.mulf
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]]#0, %[[PARTIAL]]#1 : tensor<2x32xf32>, tensor<2x32xf32>)
// CHECK-NOT:       arith.mulf
// CHECK:           arith.addf
// CHECK:           arith.addf
func.func @sum_and_sum_of_squares(%x: tensor<2x64x3136xf32>, %init: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %sums:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0)>],
                            iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<2x64x3136xf32>) outs(%init, %init : tensor<2xf32>, tensor<2xf32>) {
  ^bb0(%in: f32, %sum: f32, %squares: f32):
    %s = arith.addf %in, %sum : f32
    %square = arith.mulf %in, %in : f32
    %q = arith.addf %square, %squares : f32
    linalg.yield %s, %q : f32, f32
  } -> (tensor<2xf32>, tensor<2xf32>)
  return %sums#0, %sums#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// A loss reading each pixel's label's log-probability (a gather at the loop's
// position): the partial generic asks its own loop dims for the position, a cut dim
// as its outer piece times the inner piece's extent plus the inner piece.
// CHECK-LABEL: func.func @loss_of_gathered_labels
// CHECK:         %[[PARTIAL:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<8x32x16x512xi64>) outs(%{{.*}} : tensor<8x32xf32>)
// CHECK:           %[[N:.*]] = linalg.index 0 : index
// CHECK:           %[[OUTER:.*]] = linalg.index 1 : index
// CHECK:           %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK:           %[[SCALED:.*]] = arith.muli %[[OUTER]], %[[SIXTEEN]] : index
// CHECK:           %[[INNER:.*]] = linalg.index 2 : index
// CHECK:           %[[H:.*]] = arith.addi %[[SCALED]], %[[INNER]] : index
// CHECK:           %[[W:.*]] = linalg.index 3 : index
// CHECK:           %[[C:.*]] = arith.index_cast
// CHECK:           tensor.extract %{{.*}}[%[[N]], %[[C]], %[[H]], %[[W]]] : tensor<8x4x512x512xf32>
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]} ins(%[[PARTIAL]] : tensor<8x32xf32>)
func.func @loss_of_gathered_labels(%labels: tensor<8x512x512xi64>, %logp: tensor<8x4x512x512xf32>, %init: tensor<f32>) -> tensor<f32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>],
                         iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%labels : tensor<8x512x512xi64>) outs(%init : tensor<f32>) {
  ^bb0(%label: i64, %acc: f32):
    %n = linalg.index 0 : index
    %h = linalg.index 1 : index
    %w = linalg.index 2 : index
    %c = arith.index_cast %label : i64 to index
    %v = tensor.extract %logp[%n, %c, %h, %w] : tensor<8x4x512x512xf32>
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %sum : tensor<f32>
}

// RUN: %opt %s --split-input-file -p slice-elementwise-producers,canonicalize | filecheck %s

#image = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>

// A batch norm's shift, the first value of each channel of the f32 copy of a bf16
// image plus a bias, sliced one dim at a time as torch-mlir does: the cast and the add
// run on one slice of the image (a bf16 value per channel), the bias read whole.
// CHECK-LABEL: func.func @shift_of_a_widened_image
// CHECK-SAME:    (%[[IMAGE:.*]]: tensor<8x16x32x32xbf16>, %[[BIAS:.*]]: tensor<16xf32>)
// CHECK:         %[[WIDE:.*]] = linalg.generic {{.*}} ins(%[[IMAGE]], %[[BIAS]] :
// CHECK:         %[[FIRST:.*]] = tensor.extract_slice %[[IMAGE]][0, 0, 0, 0] [1, 16, 1, 1] [1, 1, 1, 1] : tensor<8x16x32x32xbf16> to tensor<1x16x1x1xbf16>
// CHECK:         %[[SHIFT:.*]] = linalg.generic {{.*}} ins(%[[FIRST]], %[[BIAS]] : tensor<1x16x1x1xbf16>, tensor<16xf32>) outs(%{{.*}} : tensor<1x16x1x1xf32>)
// CHECK:           arith.extf
// CHECK:           arith.addf
// CHECK:         return %[[WIDE]], %[[SHIFT]]
func.func @shift_of_a_widened_image(%image: tensor<8x16x32x32xbf16>, %bias: tensor<16xf32>)
    -> (tensor<8x16x32x32xf32>, tensor<1x16x1x1xf32>) {
  %empty = tensor.empty() : tensor<8x16x32x32xf32>
  %wide = linalg.generic {indexing_maps = [#image, #channel, #image],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%image, %bias : tensor<8x16x32x32xbf16>, tensor<16xf32>)
      outs(%empty : tensor<8x16x32x32xf32>) {
  ^bb0(%in: bf16, %b: f32, %out: f32):
    %w = arith.extf %in : bf16 to f32
    %s = arith.addf %w, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16x32x32xf32>
  %batch = tensor.extract_slice %wide[0, 0, 0, 0] [1, 16, 32, 32] [1, 1, 1, 1]
      : tensor<8x16x32x32xf32> to tensor<1x16x32x32xf32>
  %row = tensor.extract_slice %batch[0, 0, 0, 0] [1, 16, 1, 32] [1, 1, 1, 1]
      : tensor<1x16x32x32xf32> to tensor<1x16x1x32xf32>
  %first = tensor.extract_slice %row[0, 0, 0, 0] [1, 16, 1, 1] [1, 1, 1, 1]
      : tensor<1x16x1x32xf32> to tensor<1x16x1x1xf32>
  return %wide, %first : tensor<8x16x32x32xf32>, tensor<1x16x1x1xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>

// The producer writes its points transposed, or its slice drops a dim (rank-reducing),
// or reads its own init: the slices stay slices of its result.
// CHECK-LABEL: func.func @negative_transposed_rank_reducing_or_accumulating
// CHECK-COUNT-3: tensor.extract_slice %{{[0-9]+}}
func.func @negative_transposed_rank_reducing_or_accumulating(
    %x: tensor<4x8xf32>, %init: tensor<8x4xf32>, %acc: tensor<4x8xf32>)
    -> (tensor<1x4xf32>, tensor<8xf32>, tensor<1x8xf32>) {
  %t = linalg.generic {indexing_maps = [#rows, #transposed], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %a = tensor.extract_slice %t[0, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<1x4xf32>
  %empty = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.negf %in : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %b = tensor.extract_slice %n[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %out : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %c = tensor.extract_slice %s[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  return %a, %b, %c : tensor<1x4xf32>, tensor<8xf32>, tensor<1x8xf32>
}

// RUN: %opt %s --split-input-file -p slice-elementwise-producers,canonicalize | filecheck %s

#image = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>

// A batch norm's shift, the first value of each channel of the f32 copy of a bf16
// image plus a bias, sliced one dim at a time as torch-mlir does: the cast and the add
// run on one slice of the image (a bf16 value per channel), the bias read whole.
// CHECK-LABEL: func.func @shift_of_a_widened_image
// CHECK-SAME:    (%[[IMAGE:.*]]: tensor<8x16x32x32xbf16>, %[[BIAS:.*]]: tensor<16xf32>)
// CHECK:         %[[FIRST:.*]] = tensor.extract_slice %[[IMAGE]][0, 0, 0, 0] [1, 16, 1, 1] [1, 1, 1, 1] : tensor<8x16x32x32xbf16> to tensor<1x16x1x1xbf16>
// CHECK:         %[[SHIFT:.*]] = linalg.generic {{.*}} ins(%[[FIRST]], %[[BIAS]] : tensor<1x16x1x1xbf16>, tensor<16xf32>) outs(%{{.*}} : tensor<1x16x1x1xf32>)
// CHECK:           arith.extf
// CHECK:           arith.addf
// CHECK:         %[[WIDE:.*]] = linalg.generic {{.*}} ins(%[[IMAGE]], %[[BIAS]] :
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
#sums = affine_map<(d0, d1) -> (d0, 0)>

// A classifier reads the first token of a layer norm: the row's sum, and the
// element-wise op that reads it, are left whole (the row kernel computes them in one
// launch, where their slices would be several).
// CHECK-LABEL: func.func @negative_first_row_of_a_norm
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}}ins(%arg0 : tensor<197x768xf32>)
// CHECK:         %[[SCALED:.*]] = linalg.generic {{.*}}ins(%arg0, %[[SUM]] :
// CHECK:         tensor.extract_slice %[[SCALED]][0, 0] [1, 768]
func.func @negative_first_row_of_a_norm(%x: tensor<197x768xf32>, %zeros: tensor<197x1xf32>)
    -> tensor<1x768xf32> {
  %sum = linalg.generic {indexing_maps = [#rows, #sums], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<197x768xf32>) outs(%zeros : tensor<197x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<197x1xf32>
  %empty = tensor.empty() : tensor<197x768xf32>
  %scaled = linalg.generic {indexing_maps = [#rows, #sums, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<197x768xf32>, tensor<197x1xf32>) outs(%empty : tensor<197x768xf32>) {
  ^bb0(%in: f32, %total: f32, %out: f32):
    %v = arith.divf %in, %total : f32
    linalg.yield %v : f32
  } -> tensor<197x768xf32>
  %first = tensor.extract_slice %scaled[0, 0] [1, 768] [1, 1] : tensor<197x768xf32> to tensor<1x768xf32>
  return %first : tensor<1x768xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>

// The producer writes its points transposed, or the slice drops a dim (rank-reducing):
// the slices stay slices of its result.
// CHECK-LABEL: func.func @negative_transposed_or_rank_reducing
// CHECK-COUNT-2: tensor.extract_slice %{{[0-9]+}}
func.func @negative_transposed_or_rank_reducing(%x: tensor<4x8xf32>, %init: tensor<8x4xf32>)
    -> (tensor<1x4xf32>, tensor<8xf32>) {
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
  return %a, %b : tensor<1x4xf32>, tensor<8xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>

// A generic that reads a scalar (a fill of a computed value) slices too, the scalar
// read as it is.
// CHECK-LABEL: func.func @slice_of_a_scalar_fill
// CHECK-SAME:    (%[[S:.*]]: f32)
// CHECK:         %[[ROW:.*]] = linalg.generic {{.*}} ins(%[[S]] : f32) outs(%{{.*}} : tensor<1x8xf32>)
// CHECK:         return %[[ROW]]
func.func @slice_of_a_scalar_fill(%s: f32) -> tensor<1x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %filled = linalg.generic {indexing_maps = [#scalar, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%s : f32) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  %first = tensor.extract_slice %filled[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  return %first : tensor<1x8xf32>
}

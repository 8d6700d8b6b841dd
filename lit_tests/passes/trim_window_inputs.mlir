// RUN: %opt %s --split-input-file -p trim-window-inputs | filecheck %s

// A ceil_mode max pool of 3 rows by a 3-row window at stride 2: one output row, whose
// window reads rows 0-2 of the input that torch-mlir padded to 5.
// CHECK-LABEL: func.func @padded_past_the_last_window
// CHECK:         %[[SLICE:.*]] = tensor.extract_slice %{{.*}}[0, 0] [3, 7] [1, 1] : tensor<5x8xf32> to tensor<3x7xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[SLICE]], %{{.*}} : tensor<3x7xf32>, tensor<3x3xf32>)
func.func @padded_past_the_last_window(%x: tensor<5x8xf32>, %init: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %window = tensor.empty() : tensor<3x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 * 2 + d2, d1 * 2 + d3)>,
                                        affine_map<(d0, d1, d2, d3) -> (d2, d3)>,
                                        affine_map<(d0, d1, d2, d3) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %window : tensor<5x8xf32>, tensor<3x3xf32>) outs(%init : tensor<1x3xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}

// -----

// Windows that reach the input's last row and column: nothing to trim.
// CHECK-LABEL: func.func @negative_windows_cover_the_input
// CHECK-NOT:     tensor.extract_slice
func.func @negative_windows_cover_the_input(%x: tensor<5x7xf32>, %init: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %window = tensor.empty() : tensor<3x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0 * 2 + d2, d1 * 2 + d3)>,
                                        affine_map<(d0, d1, d2, d3) -> (d2, d3)>,
                                        affine_map<(d0, d1, d2, d3) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %window : tensor<5x7xf32>, tensor<3x3xf32>) outs(%init : tensor<2x3xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

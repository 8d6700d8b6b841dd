// RUN: %opt %s --split-input-file -p "collapse-elementwise-producers" | filecheck %s
// RUN: %opt %s --split-input-file -p "gpu" | filecheck %s --check-prefix=KERNELS

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias3 = affine_map<(d0, d1, d2) -> (d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

// OPT's residual sum, computed at (batch, tokens, hidden) and flattened to (tokens,
// hidden) for the row sum of its norm, while the next residual add reads it unflattened:
// computed flat, its gemm result's expand_shape undone and its residual input collapsed
// (a view); the unflattened reader reads it expanded, at its own place.
// CHECK-LABEL: func.func @residual_sum_flattened_for_a_norm
// CHECK:         %[[FLAT_RESIDUAL:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]]
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[FLAT_RESIDUAL]], %arg1, %arg2 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]] : tensor<8x16xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]], %{{.*}} : tensor<8x16xf32>, tensor<8xf32>)
// CHECK:         %[[AGAIN:.*]] = tensor.expand_shape %[[SUM]] {{\[}}[0, 1], [2]]
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[AGAIN]], %arg0
// In the GPU pipeline, the row kernel that centers the rows also writes the sum, for
// the add after it: two kernels, not three.
// KERNELS-LABEL: func.func @residual_sum_flattened_for_a_norm
// KERNELS:       %{{.*}}:2 = "tkern.kernel"
// KERNELS:       "tkern.kernel"
// KERNELS-NOT:   "tkern.kernel"
// KERNELS:       return
func.func @residual_sum_flattened_for_a_norm(%residual: tensor<2x4x16xf32>, %gemm: tensor<8x16xf32>,
                                             %bias: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<2x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %split = tensor.expand_shape %gemm [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e3 = tensor.empty() : tensor<2x4x16xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #id3, #bias3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%residual, %split, %bias : tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<16xf32>) outs(%e3 : tensor<2x4x16xf32>) {
  ^bb0(%r: f32, %g: f32, %b: f32, %out: f32):
    %gb = arith.addf %g, %b : f32
    %s = arith.addf %r, %gb : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16xf32>
  %flat = tensor.collapse_shape %sum [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%flat : tensor<8x16xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %centered = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%flat, %rowsum : tensor<8x16xf32>, tensor<8xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %c = arith.subf %in, %s : f32
    linalg.yield %c : f32
  } -> tensor<8x16xf32>
  %next = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sum, %residual : tensor<2x4x16xf32>, tensor<2x4x16xf32>) outs(%e3 : tensor<2x4x16xf32>) {
  ^bb0(%s: f32, %r: f32, %out: f32):
    %n = arith.mulf %s, %r : f32
    linalg.yield %n : f32
  } -> tensor<2x4x16xf32>
  return %centered, %next : tensor<8x16xf32>, tensor<2x4x16xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#swap3 = affine_map<(d0, d1, d2) -> (d1, d0, d2)>

// negative_: an input read transposed across the joined dims cannot be collapsed as
// the loops are: the producer keeps its shape.
// CHECK-LABEL: func.func @negative_transposed_input
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK:         tensor.collapse_shape
func.func @negative_transposed_input(%x: tensor<4x2x16xf32>) -> tensor<8x16xf32> {
  %e3 = tensor.empty() : tensor<2x4x16xf32>
  %neg = linalg.generic {indexing_maps = [#swap3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x2x16xf32>) outs(%e3 : tensor<2x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4x16xf32>
  %flat = tensor.collapse_shape %neg [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  return %flat : tensor<8x16xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0) -> (d0)>

// A reader that gathers from the producer inside its body (tensor.extract) reads the
// view made before that reader, at the producer's level, not inside the body.
// CHECK-LABEL: func.func @gathered_from_inside_a_body
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK:         %[[AGAIN:.*]] = tensor.expand_shape %[[SUM]]
// CHECK-NEXT:    linalg.generic
// CHECK:         tensor.extract %[[AGAIN]]
func.func @gathered_from_inside_a_body(%x: tensor<2x4x16xf32>, %index: tensor<16xindex>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %e3 = tensor.empty() : tensor<2x4x16xf32>
  %neg = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x4x16xf32>) outs(%e3 : tensor<2x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4x16xf32>
  %flat = tensor.collapse_shape %neg [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<16xf32>
  %gathered = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]}
      ins(%index : tensor<16xindex>) outs(%e1 : tensor<16xf32>) {
  ^bb0(%i: index, %out: f32):
    %c0 = arith.constant 0 : index
    %v = tensor.extract %neg[%c0, %c0, %i] : tensor<2x4x16xf32>
    linalg.yield %v : f32
  } -> tensor<16xf32>
  return %flat, %gathered : tensor<8x16xf32>, tensor<16xf32>
}

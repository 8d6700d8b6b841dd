// RUN: %opt %s --split-input-file -p read-transposed-copies | filecheck %s

// A residual stream: transposed to NHWC for a convolution, and read by an add. The add
// reads the NHWC copy (its map permuted), so the transpose is the producer's one reader
// and moves up to it.
// CHECK:       #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @residual_read_from_the_copy
// CHECK:         %[[SUM:.*]] = linalg.generic
// CHECK:         %[[COPY:.*]] = linalg.transpose ins(%[[SUM]] : tensor<2x8x4x4xf32>) outs(%{{.*}} : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
// CHECK:         linalg.generic {indexing_maps = [#[[NHWC]], #{{.*}}, #{{.*}}]
// CHECK-SAME:      ins(%[[COPY]], %{{.*}} : tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @residual_read_from_the_copy(%x: tensor<2x8x4x4xf32>, %y: tensor<2x8x4x4xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>) {
  %e = tensor.empty() : tensor<2x8x4x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %next = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sum, %y : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %t = tensor.empty() : tensor<2x4x4x8xf32>
  %copy = linalg.transpose ins(%sum : tensor<2x8x4x4xf32>) outs(%t : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %copy, %next : tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>
}

// -----

// Two transposes of one image the same way are one copy.
// CHECK-LABEL: func.func @twin_transposes
// CHECK-COUNT-1: linalg.transpose
// CHECK-NOT:     linalg.transpose
func.func @twin_transposes(%x: tensor<2x8x4x4xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) {
  %t = tensor.empty() : tensor<2x4x4x8xf32>
  %a = linalg.transpose ins(%x : tensor<2x8x4x4xf32>) outs(%t : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %u = tensor.empty() : tensor<2x4x4x8xf32>
  %b = linalg.transpose ins(%x : tensor<2x8x4x4xf32>) outs(%u : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %a, %b : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
}

// -----

// A reader that is not a linalg.generic (here the function's return) keeps the
// source: the producer writes it anyway, and the add reads it in its own layout.
// CHECK-LABEL: func.func @negative_source_returned
// CHECK:         %[[SUM:.*]] = linalg.generic
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[SUM]], %{{.*}} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @negative_source_returned(%x: tensor<2x8x4x4xf32>, %y: tensor<2x8x4x4xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) {
  %e = tensor.empty() : tensor<2x8x4x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %next = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sum, %y : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %t = tensor.empty() : tensor<2x4x4x8xf32>
  %copy = linalg.transpose ins(%sum : tensor<2x8x4x4xf32>) outs(%t : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %copy, %next, %sum : tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>
}

// -----

// A graph input is not written by a kernel that could write the copy instead: its
// readers keep reading it.
// CHECK-LABEL: func.func @negative_input_source
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%arg0 : tensor<2x8x4x4xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @negative_input_source(%x: tensor<2x8x4x4xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>) {
  %e = tensor.empty() : tensor<2x8x4x4xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %t = tensor.empty() : tensor<2x4x4x8xf32>
  %copy = linalg.transpose ins(%x : tensor<2x8x4x4xf32>) outs(%t : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %copy, %neg : tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>
}

// -----

// Two producers' results transposed into one shared empty (canonicalize merges equal
// empties): the second transpose moves up to its producer with a copy of the empty,
// which the first transpose, above it, still reads.
// CHECK-LABEL: func.func @transposes_sharing_one_empty
// CHECK:         %[[T:.*]] = tensor.empty() : tensor<2x4x4x8xf32>
// CHECK:         %[[A:.*]] = linalg.generic
// CHECK:         linalg.transpose ins(%[[A]] : tensor<2x8x4x4xf32>) outs(%[[T]] : tensor<2x4x4x8xf32>)
// CHECK:         %[[B:.*]] = linalg.generic
// CHECK:         %[[U:.*]] = tensor.empty() : tensor<2x4x4x8xf32>
// CHECK-NEXT:    %[[COPY:.*]] = linalg.transpose ins(%[[B]] : tensor<2x8x4x4xf32>) outs(%[[U]] : tensor<2x4x4x8xf32>)
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[COPY]], %{{.*}} : tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @transposes_sharing_one_empty(%x: tensor<2x8x4x4xf32>, %y: tensor<2x8x4x4xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>) {
  %e = tensor.empty() : tensor<2x8x4x4xf32>
  %t = tensor.empty() : tensor<2x4x4x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<2x8x4x4xf32>) outs(%t : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b, %y : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%v: f32, %w: f32, %out: f32):
    %0 = arith.addf %v, %w : f32
    linalg.yield %0 : f32
  } -> tensor<2x8x4x4xf32>
  %tb = linalg.transpose ins(%b : tensor<2x8x4x4xf32>) outs(%t : tensor<2x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %ta, %tb, %sum : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x8x4x4xf32>
}

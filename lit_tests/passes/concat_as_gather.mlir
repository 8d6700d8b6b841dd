// RUN: %opt %s --split-input-file -p concat-as-gather | filecheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// rotate_half's concatenation, read by a multiply: each point extracts from both
// pieces, clamped into each, and selects the one it lies in.
// CHECK-LABEL: func.func @rotate_half
// CHECK-SAME:    (%[[A:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<4x6xf32>
// CHECK-NOT:     tensor.concat
// CHECK:         %[[CAT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK:           %[[I:.*]] = linalg.index 0
// CHECK:           %[[J:.*]] = linalg.index 1
// CHECK:           %[[IN_A:.*]] = arith.minsi %[[J]], %{{.*}}
// CHECK:           %[[X:.*]] = tensor.extract %[[A]][%[[I]], %[[IN_A]]]
// CHECK:           %[[SHIFTED:.*]] = arith.subi %[[J]], %{{.*}}
// CHECK:           %[[IN_B:.*]] = arith.maxsi %[[SHIFTED]], %{{.*}}
// CHECK:           %[[Y:.*]] = tensor.extract %[[B]][%[[I]], %[[IN_B]]]
// CHECK:           %[[FIRST:.*]] = arith.cmpi slt, %[[J]], %{{.*}}
// CHECK:           %[[V:.*]] = arith.select %[[FIRST]], %[[X]], %[[Y]]
// CHECK:           linalg.yield %[[V]]
// CHECK:         linalg.generic {{.*}} ins(%[[CAT]], %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>)
func.func @rotate_half(%a: tensor<4x2xf32>, %b: tensor<4x6xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%cat, %c : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// negative_no_generic_neighbour: a concatenation of arguments that is returned has
// nothing to fuse with; it stays a copy.
// CHECK-LABEL: func.func @negative_no_generic_neighbour
// CHECK:         tensor.concat
func.func @negative_no_generic_neighbour(%a: tensor<4x2xf32>, %b: tensor<4x6xf32>) -> tensor<4x8xf32> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x8xf32>
  return %cat : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// negative_dynamic_size: the pieces' sizes are the select's bounds, so they must be static.
// CHECK-LABEL: func.func @negative_dynamic_size
// CHECK:         tensor.concat
func.func @negative_dynamic_size(%a: tensor<?x2xf32>, %b: tensor<?x6xf32>, %e: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<?x2xf32>, tensor<?x6xf32>) -> tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%cat : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// negative_growing_chain: densenet concatenates every earlier feature again at each
// layer; the host program writes such a chain into one buffer, each piece once.
// CHECK-LABEL: func.func @negative_growing_chain
// CHECK-COUNT-2: tensor.concat
func.func @negative_growing_chain(%x: tensor<4x2xf32>, %f: tensor<4x2xf32>, %g: tensor<4x2xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>) {
  %c1 = tensor.concat dim(1) %x, %f : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %c2 = tensor.concat dim(1) %x, %f, %g : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c1 : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<4x4xf32>
  return %r, %c2 : tensor<4x4xf32>, tensor<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Rotary embeddings' `cat((freqs, freqs))`: one piece twice, which no other concat
// reads; gathered, both halves from it.
// CHECK-LABEL: func.func @piece_concatenated_with_itself
// CHECK-SAME:    (%[[A:.*]]: tensor<4x2xf32>
// CHECK-NOT:     tensor.concat
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<4x4xf32>)
// CHECK:           tensor.extract %[[A]]
// CHECK:           tensor.extract %[[A]]
// CHECK:           arith.select
func.func @piece_concatenated_with_itself(%a: tensor<4x2xf32>) -> tensor<4x4xf32> {
  %cat = tensor.concat dim(1) %a, %a : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%cat : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = math.cos %x : f32
    linalg.yield %c : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A scatter's index columns, as torch-mlir makes them: generics flattened and
// unsqueezed, then concatenated, read by the scatter alone. The generics behind the
// reshapes are neighbours to fuse with (inline-gathered-producers reads through them).
// CHECK-LABEL: func.func @columns_reshaped_from_generics
// CHECK-NOT:     tensor.concat
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<6x2xi64>) attrs = {tessel.gathered_concat}
func.func @columns_reshaped_from_generics(%pos: tensor<2x3xi64>) -> tensor<6x2xi64> {
  %e = tensor.empty() : tensor<2x3xi64>
  %rows = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<2x3xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<2x3xi64>
  %a = tensor.collapse_shape %rows [[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
  %b = tensor.collapse_shape %pos [[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
  %ca = tensor.expand_shape %a [[0, 1]] output_shape [6, 1] : tensor<6xi64> into tensor<6x1xi64>
  %cb = tensor.expand_shape %b [[0, 1]] output_shape [6, 1] : tensor<6xi64> into tensor<6x1xi64>
  %cat = tensor.concat dim(1) %ca, %cb : (tensor<6x1xi64>, tensor<6x1xi64>) -> tensor<6x2xi64>
  return %cat : tensor<6x2xi64>
}

// -----

#in = affine_map<(d0, d1, d2, d3) -> (d2, d0, d1, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A fused attention's q, k and v gradients, concatenated and split into (3, batch, ...),
// read through that reshape by the copy that permutes them for the qkv projection's
// gemm: a gather, which the copy then fuses.
// CHECK-LABEL: func.func @read_through_a_reshape
// CHECK-NOT:     tensor.concat
// CHECK:         linalg.generic
func.func @read_through_a_reshape(%q: tensor<2x4xf32>, %k: tensor<2x4xf32>, %v: tensor<2x4xf32>) -> tensor<2x4x3x1xf32> {
  %cat = tensor.concat dim(0) %q, %k, %v : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<6x4xf32>
  %split = tensor.expand_shape %cat [[0, 1], [2, 3]] output_shape [3, 2, 4, 1] : tensor<6x4xf32> into tensor<3x2x4x1xf32>
  %e = tensor.empty() : tensor<2x4x3x1xf32>
  %permuted = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%split : tensor<3x2x4x1xf32>) outs(%e : tensor<2x4x3x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x3x1xf32>
  return %permuted : tensor<2x4x3x1xf32>
}

// RUN: %opt %s --split-input-file -p read-slices-in-place | filecheck %s

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A DenseNet chunk: a pointwise kernel reads channels 48..55 of a concatenation and a
// rank-reducing slice of its per-channel statistics ([1, 56] to [8]); it reads both
// tensors in place, at offset 48, and the slices, read by nothing else, are erased.
// CHECK-DAG:   #[[CHUNK:.+]] = affine_map<(d0, d1) -> (d0, d1 + 48)>
// CHECK-DAG:   #[[STATISTIC:.+]] = affine_map<(d0, d1) -> (0, d1 + 48)>
// CHECK-LABEL: func.func @chunk
// CHECK-NOT:     tensor.extract_slice
// CHECK:         linalg.generic {indexing_maps = [#[[CHUNK]], #[[STATISTIC]], #{{.+}}]
// CHECK-SAME:      ins(%arg0, %arg1 : tensor<4x56xf32>, tensor<1x56xf32>)
func.func @chunk(%concat: tensor<4x56xf32>, %mean: tensor<1x56xf32>) -> tensor<4x8xf32> {
  %chunk = tensor.extract_slice %concat[0, 48] [4, 8] [1, 1] : tensor<4x56xf32> to tensor<4x8xf32>
  %statistic = tensor.extract_slice %mean[0, 48] [1, 8] [1, 1] : tensor<1x56xf32> to tensor<8xf32>
  %r = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%chunk, %statistic : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %m: f32, %out: f32):
      %d = arith.subf %in, %m : f32
      linalg.yield %d : f32
    } -> tensor<4x8xf32>
    "tkern.yield"(%g) : (tensor<4x8xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}
#row = {block = array<i64: 8>, kind = "row", num_warps = 1 : i64}

// The first chunk (offset 0) would be read plainly, (d0, d1), over 8 of 56 channels:
// linalg requires a plain read to span the dim, so it stays a slice; a row kernel's
// slice stays too (its rows are walked as the slice's).
// CHECK-LABEL: func.func @first_chunk_and_rows
// CHECK:         tensor.extract_slice %arg0[0, 0] [4, 8]
// CHECK:         tensor.extract_slice %arg0[0, 48] [4, 8]
// CHECK:         sym_name = "k0"
// CHECK:         sym_name = "rows"
func.func @first_chunk_and_rows(%concat: tensor<4x56xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %first = tensor.extract_slice %concat[0, 0] [4, 8] [1, 1] : tensor<4x56xf32> to tensor<4x8xf32>
  %last = tensor.extract_slice %concat[0, 48] [4, 8] [1, 1] : tensor<4x56xf32> to tensor<4x8xf32>
  %r = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%first : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<4x8xf32>
    "tkern.yield"(%g) : (tensor<4x8xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %s = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%last : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %d = arith.addf %in, %acc : f32
      linalg.yield %d : f32
    } -> tensor<4xf32>
    "tkern.yield"(%g) : (tensor<4xf32>) -> ()
  }) {sym_name = "rows", tessel.gpu = #row} : () -> tensor<4xf32>
  return %r, %s : tensor<4x8xf32>, tensor<4xf32>
}

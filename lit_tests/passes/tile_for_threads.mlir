// RUN: %opt %s --split-input-file -p tile-for-threads | filecheck %s

// A big elementwise loop is tiled into 4096-element chunks, one scf.forall iteration each.
// CHECK-LABEL: func.func @pointwise
// CHECK:         %[[LOOP:.*]] = scf.forall (%[[I:.*]]) in (16) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK:           %[[OFFSET:.*]] = affine.apply #{{.*}}(%[[I]])
// CHECK:           tensor.extract_slice %{{.*}}[%[[OFFSET]]] [4096] [1]
// CHECK:           linalg.generic {{.*}} ins(%{{.*}} : tensor<4096xf32>)
// CHECK:         return %[[LOOP]]
func.func @pointwise(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %e = tensor.empty() : tensor<65536xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<65536xf32>) outs(%e : tensor<65536xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<65536xf32>
  return %r : tensor<65536xf32>
}

// -----

// A row reduction is tiled along its rows only: 8 rows of 512 make a 4096-point tile.
// CHECK-LABEL: func.func @row_sums
// CHECK:         scf.forall (%{{.*}}) in (32)
// CHECK:           tensor.extract_slice %{{.*}} [8, 512] [1, 1]
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<8x512xf32>)
func.func @row_sums(%x: tensor<256x512xf32>, %init: tensor<256xf32>) -> tensor<256xf32> {
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

// A dynamic size counts as large: the loop is tiled.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK:         scf.forall
func.func @dynamic_rows(%x: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Too little work to pay for starting threads: no tiling.
// CHECK-LABEL: func.func @negative_small
// CHECK-NOT:     scf.forall
// CHECK:         linalg.generic
func.func @negative_small(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<64x256xf32>
  return %r : tensor<64x256xf32>
}

// -----

// A contraction goes to the BLAS library, which threads on its own: no tiling.
// CHECK-LABEL: func.func @negative_contraction
// CHECK-NOT:     scf.forall
func.func @negative_contraction(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>, %c: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%c : tensor<256x256xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}

// -----

// A full reduction has no parallel dim to split: no tiling.
// CHECK-LABEL: func.func @negative_full_reduction
// CHECK-NOT:     scf.forall
func.func @negative_full_reduction(%x: tensor<65536xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%x : tensor<65536xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

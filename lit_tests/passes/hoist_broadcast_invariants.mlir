// RUN: %opt %s --split-input-file -p "hoist-broadcast-invariants" | filecheck %s

// An inference batch norm and SiLU over channels-last [N, H, W, C]: the scale
// 1 / sqrt(var + eps) depends on the channel alone, so it is computed over C points and
// read through the channel map; what depends on the point (the centering, the
// activation's exp and division) stays.
// CHECK-LABEL: func.func @batch_norm_silu
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:         %[[SCALE:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%arg2 : tensor<8xf32>) outs(%[[EMPTY]] : tensor<8xf32>)
// CHECK:           math.sqrt
// CHECK:           arith.divf
// CHECK:         linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3, %[[SCALE]] :
// CHECK-NOT:       math.sqrt
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:           arith.divf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @batch_norm_silu(%x: tensor<2x4x4x8xf32>, %mean: tensor<8xf32>, %var: tensor<8xf32>,
                           %weight: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  %eps = arith.constant 1.0e-05 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x4x4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #channel, #channel, #channel, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mean, %var, %weight : tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<2x4x4x8xf32>) {
  ^bb0(%in: f32, %m: f32, %v: f32, %w: f32, %out: f32):
    %a = arith.addf %v, %eps : f32
    %s = math.sqrt %a : f32
    %inv = arith.divf %one, %s : f32
    %c = arith.subf %in, %m : f32
    %n = arith.mulf %c, %inv : f32
    %y = arith.mulf %n, %w : f32
    %g = math.exp %y : f32
    %o = arith.divf %y, %g : f32
    linalg.yield %o : f32
  } -> tensor<2x4x4x8xf32>
  return %r : tensor<2x4x4x8xf32>
}

// -----

// Negative: a broadcast operand read through multiplies and adds alone costs no more
// than reading a precomputed value would; nothing moves.
// CHECK-LABEL: func.func @scale_and_shift
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT:     linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d1)>
func.func @scale_and_shift(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #column, #column, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %w, %b : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %wi: f32, %bi: f32, %out: f32):
    %t = arith.mulf %wi, %bi : f32
    %y = arith.mulf %in, %wi : f32
    %z = arith.addf %y, %t : f32
    linalg.yield %z : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Negative: an operand indexed by a reduction dim changes at every step of the
// reduction; its square root stays in the loop.
// CHECK-LABEL: func.func @over_a_reduction_dim
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT:     linalg.generic
#rows = affine_map<(d0, d1) -> (d0, d1)>
#reduced = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @over_a_reduction_dim(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#rows, #reduced, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %v : tensor<4x8xf32>, tensor<8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%in: f32, %vi: f32, %out: f32):
    %s = math.sqrt %vi : f32
    %y = arith.mulf %in, %s : f32
    %z = arith.addf %out, %y : f32
    linalg.yield %z : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// RUN: %opt %s --split-input-file -p narrow-matmul-operands,canonicalize | filecheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// A bf16 linear as PyTorch decomposes it: both operands widened to f32 first. The
// matmul takes the bf16 tensors and accumulates in f32; the widening copies die.
// CHECK-LABEL: func.func @bf16_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8x3xbf16>
// CHECK-NOT:     arith.extf
// CHECK:         linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xbf16>, tensor<8x3xbf16>) outs(%{{.*}} : tensor<4x3xf32>)
func.func @bf16_linear(%x: tensor<4x8xbf16>, %w: tensor<8x3xbf16>, %init: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %ex = tensor.empty() : tensor<4x8xf32>
  %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%ex : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<4x8xf32>
  %ew = tensor.empty() : tensor<8x3xf32>
  %wf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<8x3xbf16>) outs(%ew : tensor<8x3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<8x3xf32>
  %y = linalg.matmul ins(%xf, %wf : tensor<4x8xf32>, tensor<8x3xf32>) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Only one operand is widened: narrowing it alone would mix bf16 and f32 operands,
// which cuBLAS has no gemm for. Left alone.
// CHECK-LABEL: func.func @negative_one_operand_widened
// CHECK:         arith.extf
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x3xf32>)
func.func @negative_one_operand_widened(%x: tensor<4x8xbf16>, %w: tensor<8x3xf32>, %init: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %ex = tensor.empty() : tensor<4x8xf32>
  %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%ex : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<4x8xf32>
  %y = linalg.matmul ins(%xf, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// RUN: %opt %s --split-input-file -p fold-bias-into-gemm,canonicalize | filecheck %s

#row = affine_map<(d0) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// torch.addmm(b, x, w) in bf16, after narrow-matmul-operands: the gemm starts from the
// broadcast bias, and the rounding reads its result directly (the add is gone).
// CHECK-LABEL: func.func @bf16_addmm
// CHECK-SAME:    (%[[B:.*]]: tensor<3xbf16>, %[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8x3xbf16>)
// CHECK:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<3xbf16>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK:           arith.extf
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xbf16>, tensor<8x3xbf16>) outs(%[[INIT]] : tensor<4x3xf32>)
// CHECK-NOT:     arith.addf
// CHECK:         linalg.generic {{.*}} ins(%[[MM]] : tensor<4x3xf32>)
// CHECK:           arith.truncf
func.func @bf16_addmm(%b: tensor<3xbf16>, %x: tensor<4x8xbf16>, %w: tensor<8x3xbf16>) -> tensor<4x3xbf16> {
  %zero = arith.constant 0.000000e+00 : f32
  %eb = tensor.empty() : tensor<3xf32>
  %bf = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]}
      ins(%b : tensor<3xbf16>) outs(%eb : tensor<3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<3xf32>
  %empty = tensor.empty() : tensor<4x3xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xbf16>, tensor<8x3xbf16>) outs(%fill : tensor<4x3xf32>) -> tensor<4x3xf32>
  %sum = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bf : tensor<4x3xf32>, tensor<3xf32>) outs(%empty : tensor<4x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %eh = tensor.empty() : tensor<4x3xbf16>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<4x3xf32>) outs(%eh : tensor<4x3xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x3xbf16>
  return %half : tensor<4x3xbf16>
}

// -----

#row = affine_map<(d0) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// The f32 sum is a result of its own: the gemm's f32 product plus the bias is read
// unrounded, so no half gemm could produce it. Left alone.
// CHECK-LABEL: func.func @negative_sum_read_in_f32
// CHECK:         linalg.fill
// CHECK:         linalg.matmul
// CHECK:         arith.addf
func.func @negative_sum_read_in_f32(%b: tensor<3xbf16>, %x: tensor<4x8xbf16>, %w: tensor<8x3xbf16>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %eb = tensor.empty() : tensor<3xf32>
  %bf = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]}
      ins(%b : tensor<3xbf16>) outs(%eb : tensor<3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<3xf32>
  %empty = tensor.empty() : tensor<4x3xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xbf16>, tensor<8x3xbf16>) outs(%fill : tensor<4x3xf32>) -> tensor<4x3xf32>
  %sum = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bf : tensor<4x3xf32>, tensor<3xf32>) outs(%empty : tensor<4x3xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %sum : tensor<4x3xf32>
}

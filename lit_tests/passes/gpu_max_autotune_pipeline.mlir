// RUN: %opt %s -p gpu-max-autotune | filecheck %s
// RUN: %opt %s -p gpu | filecheck %s --check-prefix=DEFAULT

// A bf16 linear + bias + relu, as PyTorch's decomposition leaves it (an f32 product,
// the widened bias added, the sum rounded). max-autotune's pipeline folds the bias into
// the gemm's accumulator (fold-bias-into-gemm) and makes bias, gemm and rounding relu
// one tl.dot template (fuse-gemm-epilogues; 2048x512x512 is within its cost rule); the
// default pipeline keeps a cuBLAS library call between two kernels.
// CHECK-LABEL: func.func @linear_relu
// CHECK-NOT:     tkern.library_call
// CHECK:         "tkern.kernel"() ({
// CHECK:           linalg.generic
// CHECK:           linalg.matmul
// CHECK:           arith.maximumf
// CHECK:         }) {sym_name = "linear_relu_kernel_2", tessel.gpu = {block = array<i64: 64, 64, 64>, kind = "gemm_template", num_stages = 4 : i64, num_warps = 4 : i64}}
// CHECK-NOT:     "tkern.kernel"
// DEFAULT-LABEL: func.func @linear_relu
// DEFAULT:         kind = "pointwise"
// DEFAULT:         "tkern.library_call"() ({
// DEFAULT-NEXT:      linalg.matmul
// DEFAULT:         kind = "pointwise"
#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
func.func @linear_relu(%x: tensor<2048x512xbf16>, %w: tensor<512x512xbf16>, %b: tensor<512xbf16>) -> tensor<2048x512xbf16> {
  %zero = arith.constant 0.0 : f32
  %hzero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<2048x512xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2048x512xbf16>, tensor<512x512xbf16>) outs(%fill : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %sum = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<2048x512xf32>, tensor<512xbf16>) outs(%empty : tensor<2048x512xf32>) {
  ^bb0(%in: f32, %bi: bf16, %out: f32):
    %e = arith.extf %bi : bf16 to f32
    %s = arith.addf %in, %e : f32
    linalg.yield %s : f32
  } -> tensor<2048x512xf32>
  %eh = tensor.empty() : tensor<2048x512xbf16>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<2048x512xf32>) outs(%eh : tensor<2048x512xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    %r = arith.maximumf %t, %hzero : bf16
    linalg.yield %r : bf16
  } -> tensor<2048x512xbf16>
  return %relu : tensor<2048x512xbf16>
}

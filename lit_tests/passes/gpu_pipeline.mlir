// RUN: %opt %s -p gpu | filecheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// softmax through the gpu pipeline: one kernel (max, exp, sum and divide fused per
// row), with its Triton block sizes recorded for the target.
// CHECK-LABEL: func.func @softmax
// CHECK:         "tkern.kernel"() ({
// CHECK:           scf.forall
// CHECK:           math.exp
// CHECK:         }) {sym_name = "softmax_kernel_0", tessel.gpu = {block = array<i64: 32>, kind = "row_persistent", num_warps = 1 : i64}}
// CHECK-NOT:     "tkern.kernel"
func.func @softmax(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x32xf32>) outs(%minit : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<16x32xf32>, tensor<16xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<16x32xf32>) outs(%sinit : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %div = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<16x32xf32>, tensor<16xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  } -> tensor<16x32xf32>
  return %div : tensor<16x32xf32>
}


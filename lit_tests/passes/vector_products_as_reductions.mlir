// RUN: %opt %s -p vector-products-as-reductions | filecheck %s

#rows = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#weight = affine_map<(d0, d1, d2) -> (d2)>
#sums = affine_map<(d0, d1, d2) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// A layer norm's backward: each token's gradient times the weight, summed over the
// features (a matrix times a vector) is marked a reduction; a gemm, whose inputs each
// read a parallel dim of their own (M, N), is not.
// CHECK-LABEL: func.func @row_dots_and_a_gemm
// CHECK:         linalg.generic {{.*}}ins(%arg0, %arg1 :{{.*}}attrs = {tessel.as_reduction}
// CHECK:         linalg.generic
// CHECK-NOT:     tessel.as_reduction
// CHECK-SAME:    ins(%arg3, %arg4 :
func.func @row_dots_and_a_gemm(%g: tensor<4x17x64xf32>, %w: tensor<64xf32>, %acc: tensor<4x17xf32>,
                               %x: tensor<8x32xf32>, %y: tensor<32x16xf32>, %out: tensor<8x16xf32>)
    -> (tensor<4x17xf32>, tensor<8x16xf32>) {
  %dots = linalg.generic {indexing_maps = [#rows, #weight, #sums],
                          iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %w : tensor<4x17x64xf32>, tensor<64xf32>) outs(%acc : tensor<4x17xf32>) {
  ^bb0(%a_: f32, %b_: f32, %o: f32):
    %p = arith.mulf %a_, %b_ : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x17xf32>
  %gemm = linalg.generic {indexing_maps = [#a, #b, #c],
                          iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<8x32xf32>, tensor<32x16xf32>) outs(%out : tensor<8x16xf32>) {
  ^bb0(%a_: f32, %b_: f32, %o: f32):
    %p = arith.mulf %a_, %b_ : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %dots, %gemm : tensor<4x17xf32>, tensor<8x16xf32>
}

// RUN: %opt %s --split-input-file -p overwrite-zero-accumulators | filecheck %s
// RUN: %opt %s --split-input-file -p 'overwrite-zero-accumulators{contractions=false}' \
// RUN:   | filecheck %s --check-prefix=CONVOLUTIONS

// A convolution into zeros overwrites an empty output; the fill goes.
// CHECK-LABEL: func.func @zero_accumulator
// CONVOLUTIONS-LABEL: func.func @zero_accumulator
// CONVOLUTIONS:         tessel.overwrites_output
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<1x4x8x8xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         linalg.conv_2d_nchw_fchw {{{.*}}tessel.overwrites_output} ins(%{{.*}}, %{{.*}} : {{.*}}) outs(%[[EMPTY]] : tensor<1x4x8x8xf32>)
func.func @zero_accumulator(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x4x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, tessel.library_call}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// A bias in the accumulator is added to: nothing changes.
// CHECK-LABEL: func.func @negative_bias_accumulator
// CHECK-NOT:     tessel.overwrites_output
func.func @negative_bias_accumulator(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, tessel.library_call}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// A fill of ones is no fresh accumulator; a convolution not marked tessel.library_call
// stays as it is (its loops accumulate).
// CHECK-LABEL: func.func @negative_ones_and_unmarked
// CHECK:         linalg.fill
// CHECK:         linalg.fill
// CHECK-NOT:     tessel.overwrites_output
func.func @negative_ones_and_unmarked(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>,
                                 %xd: tensor<1x3x10x10xf64>, %wd: tensor<4x3x3x3xf64>)
    -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf64>) {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f64
  %empty = tensor.empty() : tensor<1x4x8x8xf32>
  %init = linalg.fill ins(%one : f32) outs(%empty : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, tessel.library_call}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %emptyd = tensor.empty() : tensor<1x4x8x8xf64>
  %initd = linalg.fill ins(%zero : f64) outs(%emptyd : tensor<1x4x8x8xf64>) -> tensor<1x4x8x8xf64>
  %yd = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xd, %wd : tensor<1x3x10x10xf64>, tensor<4x3x3x3xf64>) outs(%initd : tensor<1x4x8x8xf64>) -> tensor<1x4x8x8xf64>
  return %y, %yd : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf64>
}

// -----

// A matmul into a generalized zero fill (a generic that only yields 0, as fusion leaves
// it) overwrites an empty output: gemm's beta is then 0 (library-calls).
// CHECK-LABEL: func.func @matmul_zero_accumulator
// With contractions=false, only convolutions change.
// CONVOLUTIONS-LABEL: func.func @matmul_zero_accumulator
// CONVOLUTIONS-NOT:     tessel.overwrites_output
// CONVOLUTIONS:         return
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         linalg.matmul {tessel.overwrites_output} ins(%{{.*}}, %{{.*}} : {{.*}}) outs(%[[EMPTY]] : tensor<4x3xf32>)
func.func @matmul_zero_accumulator(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x3xf32>
  %init = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      outs(%empty : tensor<4x3xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  } -> tensor<4x3xf32>
  %y = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%init : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A 1x1 convolution's gemm (a multiply-accumulate generic, convolutions-to-gemm) into
// zeros that another op also reads: the gemm overwrites, the fill stays for the other.
// CHECK-LABEL: func.func @pointwise_gemm_shared_zeros
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<2x4x9xf32>
// CHECK:         %[[ZEROS:.*]] = linalg.fill
// CHECK:         linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<2x4x9xf32>) attrs = {tessel.overwrites_output}
// CHECK:         return %{{.*}}, %[[ZEROS]]
func.func @pointwise_gemm_shared_zeros(%w: tensor<4x3xf32>, %x: tensor<2x3x9xf32>) -> (tensor<2x4x9xf32>, tensor<2x4x9xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x4x9xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x4x9xf32>) -> tensor<2x4x9xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(b, m, p, k) -> (m, k)>, affine_map<(b, m, p, k) -> (b, k, p)>,
                       affine_map<(b, m, p, k) -> (b, m, p)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<4x3xf32>, tensor<2x3x9xf32>) outs(%init : tensor<2x4x9xf32>) {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x9xf32>
  return %y, %init : tensor<2x4x9xf32>, tensor<2x4x9xf32>
}

// -----

// An integer matmul has no BLAS gemm (its loops accumulate): its zero fill stays.
// CHECK-LABEL: func.func @negative_integer_matmul
// CHECK:         linalg.fill
// CHECK-NOT:     tessel.overwrites_output
func.func @negative_integer_matmul(%a: tensor<4x8xi32>, %b: tensor<8x3xi32>) -> tensor<4x3xi32> {
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<4x3xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.matmul ins(%a, %b : tensor<4x8xi32>, tensor<8x3xi32>) outs(%init : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

// RUN: %opt %s --split-input-file -p form-kernels,fuse-gemm-epilogues | filecheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// A bf16 linear + relu of 2048x512x512 (256 64x64 output tiles, 2^29 multiply-adds):
// the broadcast bias (the gemm's initial accumulator), the gemm and the rounding relu
// become one kernel, named after the epilogue's; no library call is left.
// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME:    (%[[B:.*]]: tensor<512xbf16>, %[[X:.*]]: tensor<2048x512xbf16>, %[[W:.*]]: tensor<512x512xbf16>)
// CHECK-NOT:     tkern.library_call
// CHECK:         %[[K:.*]] = "tkern.kernel"() ({
// CHECK:           %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<512xbf16>)
// CHECK:           %[[MM:.*]] = linalg.matmul ins(%[[X]], %[[W]] : {{.*}}) outs(%[[INIT]] : tensor<2048x512xf32>)
// CHECK:           %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<2048x512xf32>)
// CHECK:             arith.truncf
// CHECK:           "tkern.yield"(%[[OUT]])
// CHECK:         }) {sym_name = "linear_relu_kernel_2"}
// CHECK-NOT:     tkern.kernel
// CHECK:         return %[[K]]
func.func @linear_relu(%b: tensor<512xbf16>, %x: tensor<2048x512xbf16>, %w: tensor<512x512xbf16>) -> tensor<2048x512xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<2048x512xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<512xbf16>) outs(%empty : tensor<2048x512xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<2048x512xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2048x512xbf16>, tensor<512x512xbf16>) outs(%init : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %eh = tensor.empty() : tensor<2048x512xbf16>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<2048x512xf32>) outs(%eh : tensor<2048x512xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    %r = arith.maximumf %t, %zero : bf16
    linalg.yield %r : bf16
  } -> tensor<2048x512xbf16>
  return %relu : tensor<2048x512xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The gemm's product has two readers: it must go to memory, so the gemm stays a
// library call and the readers stay kernels of their own.
// CHECK-LABEL: func.func @negative_two_readers
// CHECK:         tkern.library_call
// CHECK-COUNT-2: "tkern.kernel"
func.func @negative_two_readers(%x: tensor<2048x512xbf16>, %w: tensor<512x512xbf16>, %init: tensor<2048x512xf32>) -> (tensor<2048x512xbf16>, tensor<2048x512xf32>) {
  %mm = linalg.matmul ins(%x, %w : tensor<2048x512xbf16>, tensor<512x512xbf16>) outs(%init : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %eh = tensor.empty() : tensor<2048x512xbf16>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<2048x512xf32>) outs(%eh : tensor<2048x512xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2048x512xbf16>
  %ef = tensor.empty() : tensor<2048x512xf32>
  %double = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<2048x512xf32>) outs(%ef : tensor<2048x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<2048x512xf32>
  return %half, %double : tensor<2048x512xbf16>, tensor<2048x512xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// 64x2048x1000: 16 output tiles of 64x64, each a 2048-long K loop; cuBLAS splits K,
// the template does not, so the gemm stays a library call (cost rule 4).
// CHECK-LABEL: func.func @negative_few_output_tiles
// CHECK:         tkern.library_call
func.func @negative_few_output_tiles(%x: tensor<64x2048xbf16>, %w: tensor<2048x1000xbf16>, %init: tensor<64x1000xf32>) -> tensor<64x1000xbf16> {
  %mm = linalg.matmul ins(%x, %w : tensor<64x2048xbf16>, tensor<2048x1000xbf16>) outs(%init : tensor<64x1000xf32>) -> tensor<64x1000xf32>
  %eh = tensor.empty() : tensor<64x1000xbf16>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<64x1000xf32>) outs(%eh : tensor<64x1000xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x1000xbf16>
  return %half : tensor<64x1000xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// One linear applied twice (ALBERT's shared layers): both gemms start from one bias
// broadcast (CSE merged theirs). Each template broadcasts the 1-D bias itself, and no
// kernel is left to write the f32 broadcast to memory.
// CHECK-LABEL: func.func @linear_applied_twice
// CHECK-SAME:    (%[[B:.*]]: tensor<512xbf16>,
// CHECK-NOT:     tkern.library_call
// CHECK:         "tkern.kernel"() ({
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[B]] : tensor<512xbf16>)
// CHECK:           linalg.matmul
// CHECK:         }) {sym_name = "linear_applied_twice_kernel_2"}
// CHECK:         "tkern.kernel"() ({
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[B]] : tensor<512xbf16>)
// CHECK:           linalg.matmul
// CHECK:         }) {sym_name = "linear_applied_twice_kernel_4"}
// CHECK-NOT:     tkern.kernel
func.func @linear_applied_twice(%b: tensor<512xbf16>, %x: tensor<2048x512xbf16>, %w: tensor<512x512xbf16>) -> tensor<2048x512xbf16> {
  %empty = tensor.empty() : tensor<2048x512xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<512xbf16>) outs(%empty : tensor<2048x512xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<2048x512xf32>
  %eh = tensor.empty() : tensor<2048x512xbf16>
  %mm = linalg.matmul ins(%x, %w : tensor<2048x512xbf16>, tensor<512x512xbf16>) outs(%init : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<2048x512xf32>) outs(%eh : tensor<2048x512xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2048x512xbf16>
  %mm2 = linalg.matmul ins(%h, %w : tensor<2048x512xbf16>, tensor<512x512xbf16>) outs(%init : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %h2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm2 : tensor<2048x512xf32>) outs(%eh : tensor<2048x512xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2048x512xbf16>
  return %h2 : tensor<2048x512xbf16>
}

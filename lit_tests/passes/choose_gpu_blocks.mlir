// RUN: %opt %s --split-input-file -p choose-gpu-blocks | filecheck %s
// RUN: %opt %s --split-input-file -p 'choose-gpu-blocks{max-persistent-row=256 looped-block=128}' | filecheck %s --check-prefix=LOOPED

// A row-fused kernel whose 512-element rows fit one block is persistent.
// CHECK-LABEL: func.func @row_kernel
// CHECK:         tessel.gpu = {block = array<i64: 512>, kind = "row_persistent", num_warps = 2 : i64}
// LOOPED-LABEL: func.func @row_kernel
// LOOPED:         tessel.gpu = {block = array<i64: 128>, kind = "row_looped", num_warps = 1 : i64}
func.func @row_kernel(%x: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %r = "tkern.kernel"() ({
    %f = scf.forall (%i) in (64) shared_outs(%o = %x) -> (tensor<64x512xf32>) {
      %row = tensor.extract_slice %x[%i, 0] [1, 512] [1, 1] : tensor<64x512xf32> to tensor<1x512xf32>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %row into %o[%i, 0] [1, 512] [1, 1] : tensor<1x512xf32> into tensor<64x512xf32>
      }
    }
    "tkern.yield"(%f) : (tensor<64x512xf32>) -> ()
  }) {sym_name = "row_kernel_0"} : () -> tensor<64x512xf32>
  return %r : tensor<64x512xf32>
}

// -----

// bf16 gemm: a tensor-core tile; a lone elementwise kernel: pointwise blocks.
// CHECK-LABEL: func.func @gemm_and_pointwise
// CHECK:         tessel.gpu = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}
// CHECK:         tessel.gpu = {block = array<i64: 128, 128, 64>, kind = "gemm", num_warps = 8 : i64}
func.func @gemm_and_pointwise(%a: tensor<64x64xbf16>, %c: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %k = "tkern.kernel"() ({
    %s = arith.addf %a, %a : tensor<64x64xbf16>
    "tkern.yield"(%s) : (tensor<64x64xbf16>) -> ()
  }) {sym_name = "k0"} : () -> tensor<64x64xbf16>
  %m = "tkern.library_call"() ({
    %r = linalg.matmul ins(%k, %a : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%c : tensor<64x64xbf16>) -> tensor<64x64xbf16>
    "tkern.yield"(%r) : (tensor<64x64xbf16>) -> ()
  }) {callee = "gemm"} : () -> tensor<64x64xbf16>
  return %m : tensor<64x64xbf16>
}

// -----

// Ops outside kernels get no block sizes.
// CHECK-LABEL: func.func @negative_no_kernels
// CHECK-NOT:     tessel.gpu
func.func @negative_no_kernels(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %a : tensor<4xf32>
  return %s : tensor<4xf32>
}

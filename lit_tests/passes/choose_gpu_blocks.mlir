// RUN: %opt %s --split-input-file -p choose-gpu-blocks | filecheck %s
// RUN: %opt %s --split-input-file -p 'choose-gpu-blocks{max-persistent-row=256 looped-block=128}' | filecheck %s --check-prefix=LOOPED
// RUN: %opt %s --split-input-file -p 'choose-gpu-blocks{template-tile=32x128x128/2/2}' | filecheck %s --check-prefix=FORCED

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

// A row of dynamic size loops over dynamic-row-block chunks. This row loop has results
// of two types, so form-kernels left it unwrapped, named by `tessel.kernel`: it is
// sized like any kernel.
// CHECK-LABEL: func.func @dynamic_row_left_unwrapped
// CHECK:         tessel.gpu = {block = array<i64: 1024>, kind = "row_looped", num_warps = 4 : i64}, tessel.kernel = "k0"
#rows = affine_map<(d0, d1) -> (d0, d1)>
func.func @dynamic_row_left_unwrapped(%x: tensor<8x?xf32>, %n: index) -> (tensor<8x?xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %f:2 = scf.forall (%i) in (8) shared_outs(%o = %x, %s = %e) -> (tensor<8x?xf32>, tensor<8xf32>) {
    %row = tensor.extract_slice %x[%i, 0] [1, %n] [1, 1] : tensor<8x?xf32> to tensor<1x?xf32>
    %twice = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x?xf32>) outs(%row : tensor<1x?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<1x?xf32>
    %one = tensor.extract_slice %s[%i] [1] [1] : tensor<8xf32> to tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %twice into %o[%i, 0] [1, %n] [1, 1] : tensor<1x?xf32> into tensor<8x?xf32>
      tensor.parallel_insert_slice %one into %s[%i] [1] [1] : tensor<1xf32> into tensor<8xf32>
    }
  } {tessel.kernel = "k0"}
  return %f#0, %f#1 : tensor<8x?xf32>, tensor<8xf32>
}

// -----

// Ops outside kernels get no block sizes.
// CHECK-LABEL: func.func @negative_no_kernels
// CHECK-NOT:     tessel.gpu
func.func @negative_no_kernels(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %a : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Gemm templates (fuse-gemm-epilogues): 128x128x64 tiles in 8 warps and 3 stages where
// that gives 256 programs or more (4096x2048: 32 x 16), else 64x64x64 in 4 warps and
// 4 stages (512x512: 16 programs of 128x128), clamped to the dims' next powers of two
// (K: 64 and 40, so 64). A forced tile (32x128x128, its K clamped to 64) is recorded as
// forced, which the Triton target launches untuned.
// CHECK-LABEL: func.func @gemm_templates
// CHECK:         tessel.gpu = {block = array<i64: 128, 128, 64>, kind = "gemm_template", num_stages = 3 : i64, num_warps = 8 : i64}
// CHECK:         tessel.gpu = {block = array<i64: 64, 64, 64>, kind = "gemm_template", num_stages = 4 : i64, num_warps = 4 : i64}
// FORCED-LABEL: func.func @gemm_templates
// FORCED:         tessel.gpu = {block = array<i64: 32, 128, 64>, forced = true, kind = "gemm_template", num_stages = 2 : i64, num_warps = 2 : i64}
func.func @gemm_templates(%a: tensor<4096x64xf16>, %b: tensor<64x2048xf16>, %c: tensor<4096x2048xf32>,
                          %x: tensor<512x40xf16>, %y: tensor<40x512xf16>, %z: tensor<512x512xf32>) -> (tensor<4096x2048xf32>, tensor<512x512xf32>) {
  %big = "tkern.kernel"() ({
    %r = linalg.matmul ins(%a, %b : tensor<4096x64xf16>, tensor<64x2048xf16>) outs(%c : tensor<4096x2048xf32>) -> tensor<4096x2048xf32>
    "tkern.yield"(%r) : (tensor<4096x2048xf32>) -> ()
  }) {sym_name = "big"} : () -> tensor<4096x2048xf32>
  %small = "tkern.kernel"() ({
    %r = linalg.matmul ins(%x, %y : tensor<512x40xf16>, tensor<40x512xf16>) outs(%z : tensor<512x512xf32>) -> tensor<512x512xf32>
    "tkern.yield"(%r) : (tensor<512x512xf32>) -> ()
  }) {sym_name = "small"} : () -> tensor<512x512xf32>
  return %big, %small : tensor<4096x2048xf32>, tensor<512x512xf32>
}

// -----

// A combine of split partial sums (1024 channels, 32 partials each) reduces at each
// point: its block shrinks until its programs could give every SM two, down to a warp's
// 32 points (32 programs, not one of 1024 lanes).
// CHECK-LABEL: func.func @combine_of_partials
// CHECK:         tessel.gpu = {block = array<i64: 32>, kind = "pointwise", num_warps = 1 : i64}
#partials = affine_map<(d0, d1) -> (d0, d1)>
#channel = affine_map<(d0, d1) -> (d0)>
func.func @combine_of_partials(%p: tensor<1024x32xf32>, %init: tensor<1024xf32>) -> tensor<1024xf32> {
  %r = "tkern.kernel"() ({
    %s = linalg.generic {indexing_maps = [#partials, #channel], iterator_types = ["parallel", "reduction"]}
        ins(%p : tensor<1024x32xf32>) outs(%init : tensor<1024xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %v, %acc : f32
      linalg.yield %a : f32
    } -> tensor<1024xf32>
    "tkern.yield"(%s) : (tensor<1024xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// -----

// A reduction to one point (a loss over a batch of pixels) keeps its block: its lanes
// share the reduced values, which a block of 32 would walk 32 at a time.
// CHECK-LABEL: func.func @reduction_to_one_point
// CHECK:         tessel.gpu = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}
#pixels = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @reduction_to_one_point(%x: tensor<64x4096xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = "tkern.kernel"() ({
    %s = linalg.generic {indexing_maps = [#pixels, #scalar], iterator_types = ["reduction", "reduction"]}
        ins(%x : tensor<64x4096xf32>) outs(%init : tensor<f32>) {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %v, %acc : f32
      linalg.yield %a : f32
    } -> tensor<f32>
    "tkern.yield"(%s) : (tensor<f32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<f32>
  return %r : tensor<f32>
}

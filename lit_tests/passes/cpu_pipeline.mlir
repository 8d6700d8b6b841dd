// RUN: %opt %s --split-input-file -p cpu | filecheck %s
// RUN: %opt %s --split-input-file -p cpu-fuse | filecheck %s --check-prefix=FUSE
// RUN: %opt %s --split-input-file -p cpu-fuse,cpu-bufferize | filecheck %s --check-prefix=BUF

// Two elementwise ops fuse into one loop nest, tiled in 4096-element chunks (the size is
// dynamic) that OpenMP threads share; the result becomes an out-param and the entry
// point is lowered to LLVM with its C interface.
// FUSE-LABEL: func.func @tanh_then_add
// FUSE:         scf.forall
// FUSE:         linalg.generic
// FUSE-NOT:       math.tanh
// FUSE:           arith.divf
// FUSE:           arith.addf
// FUSE-NOT:     linalg.generic
// BUF-LABEL:  func.func @tanh_then_add
// BUF-SAME:     (%[[IN:.*]]: memref<?xf32>, %[[OUT:.*]]: memref<?xf32>)
// BUF:          call @tanh_then_add_parallel_0__launch(%{{.*}}, %{{.*}}, %{{.*}}, %[[IN]], %[[OUT]])
// BUF:        func.func private @tanh_then_add_parallel_0
// BUF:          scf.for
// BUF:            linalg.generic {{.*}} ins(%{{.*}} : memref<?xf32, strided<[1], offset: ?>>)
// CHECK:       llvm.func internal @tanh_then_add_parallel_0__launch(
// CHECK:         llvm.call @GOMP_parallel
// CHECK-LABEL: llvm.func @tanh_then_add(
// CHECK-LABEL: llvm.func @_mlir_ciface_tanh_then_add
// CHECK-NOT:   linalg.
func.func @tanh_then_add(%a: tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = math.tanh %in : f32
    linalg.yield %x : f32
  } -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%t : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A reduction does not fuse with its elementwise consumer in the cpu-fuse stage.
// FUSE-LABEL: func.func @negative_reduction_then_scale
// FUSE:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// FUSE:         linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-LABEL: llvm.func internal @negative_reduction_then_scale
func.func @negative_reduction_then_scale(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %x = arith.addf %in, %acc : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%s : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.mulf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

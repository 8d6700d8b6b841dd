// RUN: %opt %s --split-input-file -p form-kernels | filecheck %s
// RUN: %opt %s --split-input-file -p form-kernels,inline-kernels | filecheck %s --check-prefix=INLINE
// RUN: %opt %s --split-input-file -p "form-kernels{atomic-add-types=bf16}" | filecheck %s --check-prefix=NO-F32-ATOMICS

#id = affine_map<(d0, d1) -> (d0, d1)>

// Each loop nest becomes one tkern.kernel, the contraction a gemm library call;
// tensor.empty stays outside, and inline-kernels restores the original function.
// CHECK-LABEL: func.func @relu_matmul
// CHECK:         %[[EMPTY:.*]] = tensor.empty
// CHECK:         %[[RELU:.*]] = "tkern.kernel"() ({
// CHECK:           %[[G:.*]] = linalg.generic {{.*}}outs(%[[EMPTY]]
// CHECK:           "tkern.yield"(%[[G]])
// CHECK:         }) {sym_name = "relu_matmul_kernel_0"}
// CHECK:         %[[MM:.*]] = "tkern.library_call"() ({
// CHECK:           linalg.matmul ins(%[[RELU]]
// CHECK:         }) {callee = "gemm"}
// CHECK:         return %[[MM]]
// INLINE-LABEL: func.func @relu_matmul
// INLINE-NOT:     tkern
// INLINE:         %[[R:.*]] = linalg.generic
// INLINE:         %[[M:.*]] = linalg.matmul ins(%[[R]]
// INLINE:         return %[[M]]
func.func @relu_matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %y = linalg.matmul ins(%relu, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%c : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Views and constants are not kernels.
// CHECK-LABEL: func.func @negative_reshape_only
// CHECK-NOT:     tkern
// CHECK:         tensor.collapse_shape
func.func @negative_reshape_only(%a: tensor<4x8xf32>) -> tensor<32xf32> {
  %r = tensor.collapse_shape %a [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// A named NCHW convolution (the gpu pipeline keeps it named) is a conv2d library call.
// CHECK-LABEL: func.func @convolution
// CHECK:         %[[C:.*]] = "tkern.library_call"() ({
// CHECK:           linalg.conv_2d_nchw_fchw
// CHECK:         }) {callee = "conv2d"}
// CHECK:         return %[[C]]
func.func @convolution(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// A loop nest whose results differ in type stays unwrapped (a tkern.kernel's results
// share one type), named as the kernel it is.
// CHECK-LABEL: func.func @results_of_two_types
// CHECK-NOT:     tkern.kernel
// CHECK:         linalg.generic {{.*}} attrs = {tessel.kernel = "results_of_two_types_kernel_0"}
#line = affine_map<(d0) -> (d0)>
func.func @results_of_two_types(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %e = tensor.empty() : tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi32>
  %r:2 = linalg.generic {indexing_maps = [#line, #line, #line], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e, %ei : tensor<4xf32>, tensor<4xi32>) {
  ^bb0(%in: f32, %out: f32, %out_i: i32):
    %i = arith.fptosi %in : f32 to i32
    linalg.yield %in, %i : f32, i32
  } -> (tensor<4xf32>, tensor<4xi32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi32>
}

// -----

// A scatter that adds its updates (an embedding's backward) is a kernel of its own
// (atomic adds) where its element type is one of atomic-add-types; else a library
// call: aten's index_put_ with accumulate on the GPU.
// CHECK-LABEL: func.func @scatter
// CHECK:         "tkern.kernel"() ({
// CHECK:           tm_tensor.scatter
// CHECK:         }) {sym_name = "scatter_kernel_0"}
// NO-F32-ATOMICS-LABEL: func.func @scatter
// NO-F32-ATOMICS:         "tkern.library_call"() ({
// NO-F32-ATOMICS:           tm_tensor.scatter
// NO-F32-ATOMICS:         }) {callee = "scatter"}
func.func @scatter(%updates: tensor<3xf32>, %indices: tensor<3x1xi64>, %into: tensor<8xf32>) -> tensor<8xf32> {
  %r = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(false)
      ins(%updates, %indices : tensor<3xf32>, tensor<3x1xi64>) outs(%into : tensor<8xf32>) {
  ^bb0(%update: f32, %current: f32):
    %sum = arith.addf %current, %update : f32
    tm_tensor.yield %sum : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// One that stores them (index_copy_, a static KV cache's update) is a kernel of its
// own, but for dynamic sizes: index_put_ then.
// CHECK-LABEL: func.func @stores
// CHECK:         "tkern.kernel"() ({
// CHECK:           tm_tensor.scatter
// CHECK:         }) {sym_name = "stores_kernel_0"}
// CHECK:         "tkern.library_call"() ({
// CHECK:           tm_tensor.scatter
// CHECK:         }) {callee = "scatter"}
func.func @stores(%updates: tensor<3xf32>, %indices: tensor<3x1xi64>, %into: tensor<8xf32>,
                  %dynamic: tensor<?xf32>, %rows: tensor<?x1xi64>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(true)
      ins(%updates, %indices : tensor<3xf32>, tensor<3x1xi64>) outs(%into : tensor<8xf32>) {
  ^bb0(%update: f32, %current: f32):
    tm_tensor.yield %update : f32
  } -> tensor<8xf32>
  %d = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(true)
      ins(%dynamic, %rows : tensor<?xf32>, tensor<?x1xi64>) outs(%into : tensor<8xf32>) {
  ^bb0(%update: f32, %current: f32):
    tm_tensor.yield %update : f32
  } -> tensor<8xf32>
  return %r, %d : tensor<8xf32>, tensor<8xf32>
}

// -----

#map = affine_map<(d0) -> (d0)>

// A gather whose result nothing reads (fusion copied it into its consumer, its index
// assert kept it alive) is dropped, not made a kernel.
// CHECK-LABEL: func.func @dead_gather
// CHECK:         "tkern.kernel"
// CHECK:           arith.addf
// CHECK:         }) {sym_name = "dead_gather_kernel_0"}
// CHECK-NOT:     "tkern.kernel"
// CHECK:         return
func.func @dead_gather(%table: tensor<8xf32>, %ids: tensor<4xindex>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %dead = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%ids : tensor<4xindex>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: index, %out: f32):
    %c8 = arith.constant 8 : index
    %ok = arith.cmpi ult, %i, %c8 : index
    cf.assert %ok, "index out of range"
    %v = tensor.extract %table[%i] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  %live = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%ids : tensor<4xindex>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: index, %out: f32):
    %v = tensor.extract %table[%i] : tensor<8xf32>
    %w = arith.addf %v, %v : f32
    linalg.yield %w : f32
  } -> tensor<4xf32>
  return %live : tensor<4xf32>
}

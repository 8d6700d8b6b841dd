// RUN: %opt %s --split-input-file -p write-inputs-in-place | filecheck %s
// RUN: %opt %s --split-input-file -p 'write-inputs-in-place{kernel-checks-abort=true}' \
// RUN:   | filecheck %s --check-prefix=ABORT

#id = affine_map<(d0) -> (d0)>

// SGD with momentum: one element-wise kernel reads the parameter and the momentum
// buffer, each at the point it writes their new values, and nothing else reads them:
// both are written in place. Each written generic gets an empty init of its own, not
// the one the other kernels share.
// CHECK-LABEL: func.func @momentum_step
// CHECK-SAME:    -> (tensor<8xf32> {tessel.in_place, tessel.new_value_of = 0 : i64}, tensor<8xf32> {tessel.in_place, tessel.new_value_of = 2 : i64})
// CHECK:         %[[SHARED:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:         %[[OWN0:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT:    %[[OWN1:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT:    "tkern.kernel"
// CHECK:         linalg.generic {{.*}} outs(%[[OWN0]], %[[OWN1]] : tensor<8xf32>, tensor<8xf32>)
func.func @momentum_step(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32> {tessel.new_value_of = 0 : i64}, tensor<8xf32> {tessel.new_value_of = 2 : i64}) {
  %m = arith.constant 0.9 : f32
  %lr = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<8xf32>
  %scaled = "tkern.kernel"() ({
    %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%gi: f32, %o: f32):
      %x = arith.mulf %gi, %lr : f32
      linalg.yield %x : f32
    } -> tensor<8xf32>
    "tkern.yield"(%s) : (tensor<8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<8xf32>
  %new:2 = "tkern.kernel"() ({
    %n:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel"]} ins(%p, %b, %scaled : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e, %e : tensor<8xf32>, tensor<8xf32>) {
    ^bb0(%pi: f32, %bi: f32, %si: f32, %o0: f32, %o1: f32):
      %v = arith.mulf %bi, %m : f32
      %w = arith.addf %v, %si : f32
      %q = arith.subf %pi, %w : f32
      linalg.yield %q, %w : f32, f32
    } -> (tensor<8xf32>, tensor<8xf32>)
    "tkern.yield"(%n#0, %n#1) : (tensor<8xf32>, tensor<8xf32>) -> ()
  }) {sym_name = "k1"} : () -> (tensor<8xf32>, tensor<8xf32>)
  return %new#0, %new#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The graph writes x and returns x's old value times 2, which a later kernel computes:
// written in place, x would be read after its write. It keeps the copy back.
// CHECK-LABEL: func.func @negative_old_value_read_later
// CHECK-SAME:    -> (tensor<8xf32>, tensor<8xf32> {tessel.new_value_of = 0 : i64})
// CHECK-NOT:     tessel.in_place
func.func @negative_old_value_read_later(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {tessel.new_value_of = 0 : i64}) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %new = "tkern.kernel"() ({
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%xi: f32, %o: f32):
      %y = arith.addf %xi, %one : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    "tkern.yield"(%n) : (tensor<8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<8xf32>
  %doubled = "tkern.kernel"() ({
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%xi: f32, %o: f32):
      %y = arith.addf %xi, %xi : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    "tkern.yield"(%d) : (tensor<8xf32>) -> ()
  }) {sym_name = "k1"} : () -> tensor<8xf32>
  return %doubled, %new : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (7 - d0)>
#first = affine_map<(d0) -> (0)>

// Element i of the new value read from another element of the input (reversed,
// broadcast): a program would read elements that another one has written.
// CHECK-LABEL: func.func @negative_other_points_read
// CHECK-NOT:     tessel.in_place
func.func @negative_other_points_read(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32> {tessel.new_value_of = 0 : i64}, tensor<8xf32> {tessel.new_value_of = 1 : i64}) {
  %e = tensor.empty() : tensor<8xf32>
  %reversed = "tkern.kernel"() ({
    %n = linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%xi: f32, %o: f32):
      linalg.yield %xi : f32
    } -> tensor<8xf32>
    "tkern.yield"(%n) : (tensor<8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<8xf32>
  %spread = "tkern.kernel"() ({
    %n = linalg.generic {indexing_maps = [#id, #first, #id], iterator_types = ["parallel"]} ins(%y, %y : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%yi: f32, %y0: f32, %o: f32):
      %s = arith.subf %yi, %y0 : f32
      linalg.yield %s : f32
    } -> tensor<8xf32>
    "tkern.yield"(%n) : (tensor<8xf32>) -> ()
  }) {sym_name = "k1"} : () -> tensor<8xf32>
  return %reversed, %spread : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The new value is also returned as another output (a view of it): that output would
// share the input's storage.
// CHECK-LABEL: func.func @negative_also_returned_as_a_view
// CHECK-NOT:     tessel.in_place
func.func @negative_also_returned_as_a_view(%x: tensor<8xf32>) -> (tensor<2x4xf32>, tensor<8xf32> {tessel.new_value_of = 0 : i64}) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %new = "tkern.kernel"() ({
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%xi: f32, %o: f32):
      %y = arith.addf %xi, %one : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    "tkern.yield"(%n) : (tensor<8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<8xf32>
  %view = tensor.expand_shape %new [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  return %view, %new : tensor<2x4xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A runtime check anywhere in the function: a failed one runs the call eagerly, which
// must read the inputs as they were. Nothing is written in place.
// A check of the host's runs the call eagerly whether kernels' checks abort or not.
// CHECK-LABEL: func.func @negative_runtime_check
// CHECK-NOT:     tessel.in_place
// ABORT-LABEL: func.func @negative_runtime_check
// ABORT-NOT:     tessel.in_place
func.func @negative_runtime_check(%x: tensor<8xf32>, %ok: i1) -> (tensor<8xf32> {tessel.new_value_of = 0 : i64}) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %new = "tkern.kernel"() ({
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%xi: f32, %o: f32):
      %y = arith.addf %xi, %one : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    "tkern.yield"(%n) : (tensor<8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<8xf32>
  cf.assert %ok, "a size check"
  return %new : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0, d1)>

// A kernel's own check (a gather's index bound): where it runs the call eagerly when it
// fails (the CPU target), nothing is written in place; where it aborts (Triton's
// device assert), it keeps nothing from being written in place.
// CHECK-LABEL: func.func @check_inside_a_kernel
// CHECK-NOT:     tessel.in_place
// ABORT-LABEL: func.func @check_inside_a_kernel
// ABORT-SAME:    -> (tensor<8xf32> {tessel.in_place, tessel.new_value_of = 0 : i64})
func.func @check_inside_a_kernel(%x: tensor<8xf32>) -> (tensor<8xf32> {tessel.new_value_of = 0 : i64}) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %new = "tkern.kernel"() ({
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%xi: f32, %o: f32):
      %ok = arith.cmpf olt, %xi, %one : f32
      cf.assert %ok, "a kernel's check"
      %y = arith.addf %xi, %one : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    "tkern.yield"(%n) : (tensor<8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<8xf32>
  return %new : tensor<8xf32>
}

// -----

#row = affine_map<(d0, d1) -> (d0, d1)>

// A static KV cache's update: new rows scattered into the cache, which nothing else
// reads; a kernel reads the new cache. The scatter writes into the cache itself.
// CHECK-LABEL: func.func @static_cache_update
// CHECK-SAME:    -> (tensor<4x8xf32>, tensor<4x8xf32> {tessel.in_place, tessel.new_value_of = 0 : i64})
// CHECK:         outs(%arg0 : tensor<4x8xf32>)
func.func @static_cache_update(%cache: tensor<4x8xf32>, %rows: tensor<2x8xf32>, %at: tensor<2x1xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32> {tessel.new_value_of = 0 : i64}) {
  %new = "tkern.library_call"() ({
    %s = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(true) ins(%rows, %at : tensor<2x8xf32>, tensor<2x1xi64>) outs(%cache : tensor<4x8xf32>) {
    ^bb0(%update: f32, %current: f32):
      tm_tensor.yield %update : f32
    } -> tensor<4x8xf32>
    "tkern.yield"(%s) : (tensor<4x8xf32>) -> ()
  }) {callee = "scatter"} : () -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %doubled = "tkern.kernel"() ({
    %d = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]} ins(%new : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%v: f32, %o: f32):
      %y = arith.addf %v, %v : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>
    "tkern.yield"(%d) : (tensor<4x8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<4x8xf32>
  return %doubled, %new : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#row = affine_map<(d0, d1) -> (d0, d1)>

// The old cache is read by a kernel too: scattered into in place, it might read the
// new rows.
// CHECK-LABEL: func.func @negative_cache_read_elsewhere
// CHECK-NOT:     tessel.in_place
func.func @negative_cache_read_elsewhere(%cache: tensor<4x8xf32>, %rows: tensor<2x8xf32>, %at: tensor<2x1xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32> {tessel.new_value_of = 0 : i64}) {
  %e = tensor.empty() : tensor<4x8xf32>
  %doubled = "tkern.kernel"() ({
    %d = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]} ins(%cache : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%v: f32, %o: f32):
      %y = arith.addf %v, %v : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>
    "tkern.yield"(%d) : (tensor<4x8xf32>) -> ()
  }) {sym_name = "k0"} : () -> tensor<4x8xf32>
  %new = "tkern.library_call"() ({
    %s = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(true) ins(%rows, %at : tensor<2x8xf32>, tensor<2x1xi64>) outs(%cache : tensor<4x8xf32>) {
    ^bb0(%update: f32, %current: f32):
      tm_tensor.yield %update : f32
    } -> tensor<4x8xf32>
    "tkern.yield"(%s) : (tensor<4x8xf32>) -> ()
  }) {callee = "scatter"} : () -> tensor<4x8xf32>
  return %doubled, %new : tensor<4x8xf32>, tensor<4x8xf32>
}

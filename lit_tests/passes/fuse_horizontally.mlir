// RUN: %opt %s --split-input-file -p fuse-horizontally | filecheck %s
// RUN: %opt %s --split-input-file -p 'fuse-horizontally{max-arguments=3}' | filecheck %s --check-prefix=BUDGET
// RUN: %opt %s --split-input-file -p 'fuse-horizontally{max-arguments=5}' | filecheck %s --check-prefix=BUDGET5
// RUN: %opt %s --split-input-file -p 'fuse-horizontally{max-points=64}' | filecheck %s --check-prefix=POINTS

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// Two independent pointwise kernels of different shapes (an optimizer's updates of two
// parameters) launch as one combo kernel: the first moves down to the second, past
// the view between them, which reads neither.
// CHECK-LABEL: func.func @independent_updates
// CHECK:         tensor.collapse_shape
// CHECK:         "tkern.kernel"
// CHECK:         }) {sym_name = "k0", tessel.combo = "independent_updates_combo_0", tessel.gpu =
// CHECK-NEXT:    "tkern.kernel"
// CHECK:         }) {sym_name = "k1", tessel.combo = "independent_updates_combo_0", tessel.gpu =
// Under a budget of 3 launch arguments, the two (a pointer to the tensor read and one to
// the tensor written, each) stay apart.
// BUDGET-LABEL: func.func @independent_updates
// BUDGET-NOT:    tessel.combo
func.func @independent_updates(%a: tensor<16x8xf32>, %b: tensor<32xf32>, %c: tensor<2x4xf32>) -> (tensor<16x8xf32>, tensor<32xf32>, tensor<8xf32>) {
  %a2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<16x8xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<16x8xf32>
    "tkern.yield"(%g) : (tensor<16x8xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<16x8xf32>
  %flat = tensor.collapse_shape %c [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %a2, %b2, %flat : tensor<16x8xf32>, tensor<32xf32>, tensor<8xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// The second kernel reads the first one's result: they stay two launches.
// CHECK-LABEL: func.func @negative_consumer
// CHECK-NOT:     tessel.combo
func.func @negative_consumer(%a: tensor<32xf32>) -> tensor<32xf32> {
  %a2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %a3 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a2 : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %a3 : tensor<32xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// The second kernel reads the first's result through two views between them: the
// group closes before it.
// CHECK-LABEL: func.func @negative_read_through_views
// CHECK-NOT:     tessel.combo
func.func @negative_read_through_views(%a: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<4x8xf32>, tensor<32xf32>) {
  %a2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %view = tensor.expand_shape %a2 [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %flat = tensor.collapse_shape %view [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%flat : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %view, %b2 : tensor<4x8xf32>, tensor<32xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// Four independent kernels of 2 launch arguments each (a pointer to the tensor read and
// one to the tensor written; static strides are constants): a budget of 5 arguments
// makes two combos of two.
// BUDGET5-LABEL: func.func @budget
// BUDGET5:         sym_name = "k0", tessel.combo = "budget_combo_0"
// BUDGET5:         sym_name = "k1", tessel.combo = "budget_combo_0"
// BUDGET5:         sym_name = "k2", tessel.combo = "budget_combo_1"
// BUDGET5:         sym_name = "k3", tessel.combo = "budget_combo_1"
// CHECK-LABEL: func.func @budget
// CHECK-COUNT-4: tessel.combo = "budget_combo_0"
func.func @budget(%a: tensor<32xf32>, %b: tensor<32xf32>, %c: tensor<32xf32>, %x: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) {
  %a2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %c2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k2", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %d2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k3", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %a2, %b2, %c2, %d2 : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A constant fill (its readers take the constant) and a kernel of dynamic size join
// no combo: the one kernel left is no combo either.
// CHECK-LABEL: func.func @negative_fill_and_dynamic
// CHECK-NOT:     tessel.combo
func.func @negative_fill_and_dynamic(%a: tensor<?xf32>, %b: tensor<32xf32>) -> (tensor<32xf32>, tensor<?xf32>, tensor<32xf32>) {
  %zero = arith.constant 0.0 : f32
  %f = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.fill ins(%zero : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %a2 = "tkern.kernel"() ({
    %e = tensor.empty(%n) : tensor<?xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<?xf32>
    "tkern.yield"(%g) : (tensor<?xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<?xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k2", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %f, %a2, %b2 : tensor<32xf32>, tensor<?xf32>, tensor<32xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A layer's K and V cache updates: scatter kernels of 8 points each into caches of 512,
// which count their updates' points: under a limit of 64 they still launch together.
// CHECK-LABEL: func.func @cache_updates
// POINTS-LABEL: func.func @cache_updates
// POINTS:         sym_name = "k_update", tessel.combo = "cache_updates_combo_0"
// POINTS:         sym_name = "v_update", tessel.combo = "cache_updates_combo_0"
func.func @cache_updates(%k_cache: tensor<1x2x64x4xf32>, %v_cache: tensor<1x2x64x4xf32>, %k: tensor<8x1x1x1x1xf32>, %v: tensor<8x1x1x1x1xf32>, %rows: tensor<8x4xi64>) -> (tensor<1x2x64x4xf32>, tensor<1x2x64x4xf32>) {
  %k2 = "tkern.kernel"() ({
    %s = tm_tensor.scatter {dimension_map = array<i64: 0, 1, 2, 3>} unique_indices(true) ins(%k, %rows : tensor<8x1x1x1x1xf32>, tensor<8x4xi64>) outs(%k_cache : tensor<1x2x64x4xf32>) {
    ^bb0(%new: f32, %old: f32):
      tm_tensor.yield %new : f32
    } -> tensor<1x2x64x4xf32>
    "tkern.yield"(%s) : (tensor<1x2x64x4xf32>) -> ()
  }) {sym_name = "k_update", tessel.gpu = #pointwise} : () -> tensor<1x2x64x4xf32>
  %v2 = "tkern.kernel"() ({
    %s = tm_tensor.scatter {dimension_map = array<i64: 0, 1, 2, 3>} unique_indices(true) ins(%v, %rows : tensor<8x1x1x1x1xf32>, tensor<8x4xi64>) outs(%v_cache : tensor<1x2x64x4xf32>) {
    ^bb0(%new: f32, %old: f32):
      tm_tensor.yield %new : f32
    } -> tensor<1x2x64x4xf32>
    "tkern.yield"(%s) : (tensor<1x2x64x4xf32>) -> ()
  }) {sym_name = "v_update", tessel.gpu = #pointwise} : () -> tensor<1x2x64x4xf32>
  return %k2, %v2 : tensor<1x2x64x4xf32>, tensor<1x2x64x4xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A reshape of the first kernel's result (a query's, to heads) between two independent
// kernels: it moves behind the combo, whose launch computes what it views; the
// function's return, which reads it, still follows.
// CHECK-LABEL: func.func @view_between
// CHECK:         %[[FIRST:.+]] = "tkern.kernel"
// CHECK:         sym_name = "k0", tessel.combo = "view_between_combo_0"
// CHECK:         %[[SECOND:.+]] = "tkern.kernel"
// CHECK:         sym_name = "k1", tessel.combo = "view_between_combo_0"
// CHECK-NEXT:    %[[VIEW:.+]] = tensor.expand_shape %[[FIRST]]
// CHECK-NEXT:    return %[[VIEW]], %[[SECOND]]
func.func @view_between(%a: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<4x8xf32>, tensor<32xf32>) {
  %a2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %heads = tensor.expand_shape %a2 [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.mulf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %heads, %b2 : tensor<4x8xf32>, tensor<32xf32>
}

// -----

#combine = {block = array<i64: 32>, kind = "pointwise", num_warps = 1 : i64}
#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A combine of partial sums (blocks of 32 points) and an element-wise kernel (1024)
// launch as one combo: each member keeps its own block.
// CHECK-LABEL: func.func @members_of_two_block_sizes
// CHECK:         }) {sym_name = "k0", tessel.combo = "members_of_two_block_sizes_combo_0", tessel.gpu = {block = array<i64: 32>
// CHECK:         }) {sym_name = "k1", tessel.combo = "members_of_two_block_sizes_combo_0", tessel.gpu = {block = array<i64: 1024>
func.func @members_of_two_block_sizes(%p: tensor<64x8xf32>, %init: tensor<64xf32>, %b: tensor<32xf32>) -> (tensor<64xf32>, tensor<32xf32>) {
  %s = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%p : tensor<64x8xf32>) outs(%init : tensor<64xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %d = arith.addf %in, %acc : f32
      linalg.yield %d : f32
    } -> tensor<64xf32>
    "tkern.yield"(%g) : (tensor<64xf32>) -> ()
  }) {sym_name = "k0", tessel.gpu = #combine} : () -> tensor<64xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "k1", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %s, %b2 : tensor<64xf32>, tensor<32xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A kernel that only copies a tensor through a broadcast, (d0, 0, d2), is a copy like
// any other and joins the combo; one that only permutes its input does not (the Triton
// host may take it as a strided view of its input instead of launching it).
// CHECK-LABEL: func.func @copies
// CHECK:         }) {sym_name = "broadcast", tessel.combo = "copies_combo_0", tessel.gpu =
// CHECK:         }) {sym_name = "added", tessel.combo = "copies_combo_0", tessel.gpu =
// CHECK:         }) {sym_name = "transposed", tessel.gpu =
func.func @copies(%a: tensor<2x1x8xf32>, %b: tensor<32xf32>, %c: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<32xf32>, tensor<8x4xf32>) {
  %broadcast_shape = tensor.empty() : tensor<2x4x8xf32>
  %transposed_shape = tensor.empty() : tensor<8x4xf32>
  %a2 = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<2x1x8xf32>) outs(%broadcast_shape : tensor<2x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x4x8xf32>
    "tkern.yield"(%g) : (tensor<2x4x8xf32>) -> ()
  }) {sym_name = "broadcast", tessel.gpu = #pointwise} : () -> tensor<2x4x8xf32>
  %b2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %d = arith.addf %in, %in : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "added", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %c2 = "tkern.kernel"() ({
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4x8xf32>) outs(%transposed_shape : tensor<8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x4xf32>
    "tkern.yield"(%g) : (tensor<8x4xf32>) -> ()
  }) {sym_name = "transposed", tessel.gpu = #pointwise} : () -> tensor<8x4xf32>
  return %a2, %b2, %c2 : tensor<2x4x8xf32>, tensor<32xf32>, tensor<8x4xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// An Adam step's order: each parameter's step count, then its update, which reads the
// new count. The counts (level 0) launch together, then the updates (returned, reading
// arguments and 0-d counts): two combos, not a combo of an update and the next count.
// CHECK-LABEL: func.func @interleaved_counts_and_updates
// CHECK:         }) {sym_name = "count0", tessel.combo = "interleaved_counts_and_updates_combo_0"
// CHECK:         }) {sym_name = "count1", tessel.combo = "interleaved_counts_and_updates_combo_0"
// CHECK:         }) {sym_name = "update0", tessel.combo = "interleaved_counts_and_updates_combo_1"
// CHECK:         }) {sym_name = "update1", tessel.combo = "interleaved_counts_and_updates_combo_1"
// CHECK-NEXT:    return
func.func @interleaved_counts_and_updates(%p0: tensor<8xf32>, %s0: tensor<f32>, %p1: tensor<16xf32>, %s1: tensor<f32>) -> (tensor<f32>, tensor<8xf32>, tensor<f32>, tensor<16xf32>) {
  %c0 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<f32>
    %g = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%s0 : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.addf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<f32>
    "tkern.yield"(%g) : (tensor<f32>) -> ()
  }) {sym_name = "count0", tessel.gpu = #pointwise} : () -> tensor<f32>
  %u0 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<8xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%p0, %c0 : tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %d = arith.mulf %in0, %in1 : f32
      linalg.yield %d : f32
    } -> tensor<8xf32>
    "tkern.yield"(%g) : (tensor<8xf32>) -> ()
  }) {sym_name = "update0", tessel.gpu = #pointwise} : () -> tensor<8xf32>
  %c1 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<f32>
    %g = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%s1 : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.addf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<f32>
    "tkern.yield"(%g) : (tensor<f32>) -> ()
  }) {sym_name = "count1", tessel.gpu = #pointwise} : () -> tensor<f32>
  %u1 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<16xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%p1, %c1 : tensor<16xf32>, tensor<f32>) outs(%e : tensor<16xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %d = arith.mulf %in0, %in1 : f32
      linalg.yield %d : f32
    } -> tensor<16xf32>
    "tkern.yield"(%g) : (tensor<16xf32>) -> ()
  }) {sym_name = "update1", tessel.gpu = #pointwise} : () -> tensor<16xf32>
  return %c0, %u0, %c1, %u1 : tensor<f32>, tensor<8xf32>, tensor<f32>, tensor<16xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// A chain, first, second and last, and a kernel of the arguments that only the function
// returns and that reads only arguments: nothing reads it after it, so it may join a
// group of a later level than its own (0): the nearest, the chain's second (level 1).
// CHECK-LABEL: func.func @returned_kernels_join_later_levels
// CHECK:         }) {sym_name = "first", tessel.gpu =
// CHECK:         }) {sym_name = "second", tessel.combo = "returned_kernels_join_later_levels_combo_0"
// CHECK:         }) {sym_name = "of_arguments", tessel.combo = "returned_kernels_join_later_levels_combo_0"
// CHECK:         }) {sym_name = "last", tessel.gpu =
func.func @returned_kernels_join_later_levels(%a: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %t0 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.addf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "first", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %t1 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t0 : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.mulf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "second", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %t2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t1 : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.addf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "last", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  %t3 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.mulf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "of_arguments", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %t2, %t3 : tensor<32xf32>, tensor<32xf32>
}

// -----

#pointwise = {block = array<i64: 1024>, kind = "pointwise", num_warps = 4 : i64}

// The same chain over 131,072 values: its last kernel reads the second's result, which
// it would hold if it launched later than its level (2); it launches there, and is the
// nearest group of the arguments' kernel.
// CHECK-LABEL: func.func @returned_readers_of_large_tensors_keep_their_level
// CHECK:         }) {sym_name = "first", tessel.gpu =
// CHECK:         }) {sym_name = "second", tessel.gpu =
// CHECK:         }) {sym_name = "last", tessel.combo = "returned_readers_of_large_tensors_keep_their_level_combo_0"
// CHECK:         }) {sym_name = "of_arguments", tessel.combo = "returned_readers_of_large_tensors_keep_their_level_combo_0"
func.func @returned_readers_of_large_tensors_keep_their_level(%a: tensor<512x256xf32>, %b: tensor<32xf32>) -> (tensor<512x256xf32>, tensor<32xf32>) {
  %t0 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<512x256xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<512x256xf32>) outs(%e : tensor<512x256xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.addf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<512x256xf32>
    "tkern.yield"(%g) : (tensor<512x256xf32>) -> ()
  }) {sym_name = "first", tessel.gpu = #pointwise} : () -> tensor<512x256xf32>
  %t1 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<512x256xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t0 : tensor<512x256xf32>) outs(%e : tensor<512x256xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.mulf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<512x256xf32>
    "tkern.yield"(%g) : (tensor<512x256xf32>) -> ()
  }) {sym_name = "second", tessel.gpu = #pointwise} : () -> tensor<512x256xf32>
  %t2 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<512x256xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t1 : tensor<512x256xf32>) outs(%e : tensor<512x256xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.addf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<512x256xf32>
    "tkern.yield"(%g) : (tensor<512x256xf32>) -> ()
  }) {sym_name = "last", tessel.gpu = #pointwise} : () -> tensor<512x256xf32>
  %t3 = "tkern.kernel"() ({
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%b : tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %d = arith.mulf %in0, %in0 : f32
      linalg.yield %d : f32
    } -> tensor<32xf32>
    "tkern.yield"(%g) : (tensor<32xf32>) -> ()
  }) {sym_name = "of_arguments", tessel.gpu = #pointwise} : () -> tensor<32xf32>
  return %t2, %t3 : tensor<512x256xf32>, tensor<32xf32>
}

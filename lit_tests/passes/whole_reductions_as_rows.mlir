// RUN: %opt %s --split-input-file -p whole-reductions-as-rows | filecheck %s
// RUN: %opt %s --split-input-file -p "whole-reductions-as-rows,reshape-fills,canonicalize,fuse-tiles{gemm-epilogues=false tile-leading-dims=true},canonicalize" | filecheck %s --check-prefix=ROWS

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#scalar = affine_map<() -> ()>

// A decode step's residual add + RMSNorm after unit-dim folding: the add, the sum of
// squares and the normalize gain a row dim; the residual's later reader reads it
// collapsed back. With fuse-tiles, the three are one loop of one row, which
// canonicalize keeps (mapped to GPU programs).
// CHECK-LABEL: func.func @rms_norm_of_one_token
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} {{.*}} outs({{.*}} : tensor<1x32xbf16>)
// CHECK:         %[[SQUARES:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SUM]] : tensor<1x32xbf16>) outs({{.*}} : tensor<1xf32>)
// CHECK:         %[[NORM:.*]] = linalg.generic {{.*}} ins({{.*}}, %[[SUM]], %[[SQUARES]] : tensor<1x32xbf16>, tensor<1x32xbf16>, tensor<1xf32>) outs({{.*}} : tensor<1x32xbf16>)
// CHECK:         tensor.collapse_shape %[[SUM]] {{\[\[}}0, 1]] : tensor<1x32xbf16> into tensor<32xbf16>
// CHECK:         tensor.collapse_shape %[[NORM]] {{\[\[}}0, 1]] : tensor<1x32xbf16> into tensor<32xbf16>
// ROWS-LABEL: func.func @rms_norm_of_one_token
// ROWS:         %[[LOOP:.*]]:2 = scf.forall (%{{.*}}) in (1)
// ROWS:           linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} {{.*}} outs({{.*}} : tensor<1x32xbf16>)
// ROWS:           linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} {{.*}} outs({{.*}} : tensor<1xf32>)
// ROWS:           linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} {{.*}} outs({{.*}} : tensor<1x32xbf16>)
// ROWS:           scf.forall.in_parallel
// ROWS-NOT:     iterator_types = ["reduction"]
// ROWS:         return
func.func @rms_norm_of_one_token(%residual: tensor<32xbf16>, %projected: tensor<32xf32>, %weight: tensor<32xbf16>, %next: tensor<32xbf16>) -> (tensor<32xbf16>, tensor<32xbf16>) {
  %zero = arith.constant 0.0 : f32
  %width = arith.constant 32.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %e = tensor.empty() : tensor<32xbf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%residual, %projected : tensor<32xbf16>, tensor<32xf32>) outs(%e : tensor<32xbf16>) {
  ^bb0(%r: bf16, %p: f32, %o: bf16):
    %t = arith.truncf %p : f32 to bf16
    %a = arith.addf %r, %t : bf16
    linalg.yield %a : bf16
  } -> tensor<32xbf16>
  %e0 = tensor.empty() : tensor<f32>
  %fill = linalg.generic {indexing_maps = [#scalar], iterator_types = []} outs(%e0 : tensor<f32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  } -> tensor<f32>
  %squares = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%sum : tensor<32xbf16>) outs(%fill : tensor<f32>) {
  ^bb0(%x: bf16, %acc: f32):
    %f = arith.extf %x : bf16 to f32
    %s = arith.mulf %f, %f : f32
    %n = arith.addf %s, %acc : f32
    linalg.yield %n : f32
  } -> tensor<f32>
  %norm = linalg.generic {indexing_maps = [#id, #id, #all, #id], iterator_types = ["parallel"]} ins(%weight, %sum, %squares : tensor<32xbf16>, tensor<32xbf16>, tensor<f32>) outs(%e : tensor<32xbf16>) {
  ^bb0(%w: bf16, %x: bf16, %s: f32, %o: bf16):
    %mean = arith.divf %s, %width : f32
    %v = arith.addf %mean, %eps : f32
    %r = math.rsqrt %v : f32
    %f = arith.extf %x : bf16 to f32
    %m = arith.mulf %f, %r : f32
    %t = arith.truncf %m : f32 to bf16
    %y = arith.mulf %w, %t : bf16
    linalg.yield %y : bf16
  } -> tensor<32xbf16>
  %later = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%sum, %next : tensor<32xbf16>, tensor<32xbf16>) outs(%e : tensor<32xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %a = arith.addf %x, %y : bf16
    linalg.yield %a : bf16
  } -> tensor<32xbf16>
  return %norm, %later : tensor<32xbf16>, tensor<32xbf16>
}

// -----

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#scalar = affine_map<() -> ()>

// The residual handed on reshaped, the reshape written next to the add: it moves
// down to the return, after the norm, so the row loop writes the residual too.
// CHECK-LABEL: func.func @residual_returned_reshaped
// CHECK:         %[[NORM:.*]] = linalg.generic {{.*}} : tensor<1x32xbf16>, tensor<1x32xbf16>, tensor<1xf32>)
// CHECK:         tensor.collapse_shape %[[NORM]]
// CHECK-NEXT:    %[[HANDED:.*]] = tensor.collapse_shape
// CHECK-NEXT:    tensor.expand_shape %[[HANDED]] {{\[\[}}0, 1, 2]]
// CHECK-NEXT:    return
// ROWS-LABEL: func.func @residual_returned_reshaped
// ROWS:         %[[LOOP:.*]]:2 = scf.forall (%{{.*}}) in (1)
// ROWS:           scf.forall.in_parallel
// ROWS:         } {mapping = [#gpu.block<x>]}
// ROWS-NOT:     linalg.generic
// ROWS:         return
func.func @residual_returned_reshaped(%residual: tensor<32xbf16>, %projected: tensor<32xbf16>, %weight: tensor<32xbf16>) -> (tensor<32xbf16>, tensor<1x1x32xbf16>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32xbf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%residual, %projected : tensor<32xbf16>, tensor<32xbf16>) outs(%e : tensor<32xbf16>) {
  ^bb0(%r: bf16, %p: bf16, %o: bf16):
    %a = arith.addf %r, %p : bf16
    linalg.yield %a : bf16
  } -> tensor<32xbf16>
  %handed_on = tensor.expand_shape %sum [[0, 1, 2]] output_shape [1, 1, 32] : tensor<32xbf16> into tensor<1x1x32xbf16>
  %e0 = tensor.empty() : tensor<f32>
  %fill = linalg.generic {indexing_maps = [#scalar], iterator_types = []} outs(%e0 : tensor<f32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  } -> tensor<f32>
  %squares = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%sum : tensor<32xbf16>) outs(%fill : tensor<f32>) {
  ^bb0(%x: bf16, %acc: f32):
    %f = arith.extf %x : bf16 to f32
    %s = arith.mulf %f, %f : f32
    %n = arith.addf %s, %acc : f32
    linalg.yield %n : f32
  } -> tensor<f32>
  %norm = linalg.generic {indexing_maps = [#id, #id, #all, #id], iterator_types = ["parallel"]} ins(%weight, %sum, %squares : tensor<32xbf16>, tensor<32xbf16>, tensor<f32>) outs(%e : tensor<32xbf16>) {
  ^bb0(%w: bf16, %x: bf16, %s: f32, %o: bf16):
    %r = math.rsqrt %s : f32
    %f = arith.extf %x : bf16 to f32
    %m = arith.mulf %f, %r : f32
    %t = arith.truncf %m : f32 to bf16
    %y = arith.mulf %w, %t : bf16
    linalg.yield %y : bf16
  } -> tensor<32xbf16>
  return %norm, %handed_on : tensor<32xbf16>, tensor<1x1x32xbf16>
}

// -----

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#scalar = affine_map<() -> ()>

// negative_too_many_values: a sum of more values than one program reduces stays for
// split-reductions.
// CHECK-LABEL: func.func @negative_too_many_values
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction"]
func.func @negative_too_many_values(%x: tensor<65536xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %fill = linalg.generic {indexing_maps = [#scalar], iterator_types = []} outs(%e0 : tensor<f32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  } -> tensor<f32>
  %total = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%x : tensor<65536xf32>) outs(%fill : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %n = arith.addf %v, %acc : f32
    linalg.yield %n : f32
  } -> tensor<f32>
  return %total : tensor<f32>
}

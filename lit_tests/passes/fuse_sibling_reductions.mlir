// RUN: %opt %s --split-input-file -p fuse-sibling-reductions | filecheck %s

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A batch norm's backward: the gradient's sum per channel, and the sum of the gradient
// times x, tiled one channel a program: one loop, reading the gradient's rows once.
// CHECK-LABEL: func.func @batch_norm_backward_sums
// CHECK-SAME:    (%[[G:.*]]: tensor<64x196xf32>, %[[X:.*]]: tensor<64x196xf32>
// CHECK:         %[[SUMS:.*]]:2 = scf.forall (%[[C:.*]]) in (64) shared_outs(%[[A:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}})
// CHECK-COUNT-2:   linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice
// CHECK-NEXT:        tensor.parallel_insert_slice
// CHECK-NOT:     scf.forall
// CHECK:         return %[[SUMS]]#{{[01]}}, %[[SUMS]]#{{[01]}}
func.func @batch_norm_backward_sums(%g: tensor<64x196xf32>, %x: tensor<64x196xf32>,
                                    %init: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %sum = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %rows = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%rows : tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  %dot = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %rows = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %xs = tensor.extract_slice %x[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%rows, %xs : tensor<1x196xf32>, tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %in2: f32, %a: f32):
      %p = arith.mulf %in, %in2 : f32
      %s = arith.addf %p, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  return %sum, %dot : tensor<64xf32>, tensor<64xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The second reduction reads the first's result: they stay two loops. So do reductions
// over rows of another length (the third), and reductions that read nothing in common
// (the fourth).
// CHECK-LABEL: func.func @negative_dependent_or_unrelated
// CHECK-COUNT-4: scf.forall
func.func @negative_dependent_or_unrelated(%g: tensor<64x196xf32>,
                                           %y: tensor<64x196xf32>, %init: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %sum = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %rows = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%rows : tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  %centered = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %rows = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %mean = tensor.extract_slice %sum[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
        ins(%rows, %mean : tensor<1x196xf32>, tensor<1xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %m: f32, %a: f32):
      %d = arith.subf %in, %m : f32
      %s = arith.addf %d, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  %half = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %rows = tensor.extract_slice %g[%c, 0] [1, 98] [1, 1] : tensor<64x196xf32> to tensor<1x98xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%rows : tensor<1x98xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  %other = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %rows = tensor.extract_slice %y[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%rows : tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  return %sum, %centered, %half, %other : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

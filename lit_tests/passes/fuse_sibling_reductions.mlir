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

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A ReLU's backward ahead of a batch norm's: the first loop writes the masked gradient
// (a convolution's backward reads it) and sums it; the second reads the tile the first
// wrote, with x. One loop: the second sum reads the masked tile where it is computed,
// and the first sum's epilogue (between the loops) joins it too, reading its row's sum.
// CHECK-LABEL: func.func @reads_the_tile_the_first_writes
// CHECK:         %[[FUSED:.*]]:4 = scf.forall (%[[C:.*]]) in (64)
// CHECK:           %[[MASKED:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:           %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[MASKED]] :
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[MASKED]], %{{.*}} :
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} ins(%[[SUM]] :
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice %[[MASKED]]
// CHECK-NOT:     scf.forall
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[FUSED]]#0, %[[FUSED]]#3, %[[FUSED]]#2
func.func @reads_the_tile_the_first_writes(%g: tensor<64x196xf32>, %y: tensor<64x196xf32>,
                                           %x: tensor<64x196xf32>, %init: tensor<64xf32>)
    -> (tensor<64x196xf32>, tensor<64xf32>, tensor<64xf32>) {
  %empty = tensor.empty() : tensor<64x196xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %first:2 = scf.forall (%c) in (64) shared_outs(%masked_out = %empty, %out = %init)
      -> (tensor<64x196xf32>, tensor<64xf32>) {
    %gs = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %ys = tensor.extract_slice %y[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %ms = tensor.extract_slice %masked_out[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %m = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gs, %ys : tensor<1x196xf32>, tensor<1x196xf32>) outs(%ms : tensor<1x196xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %positive = arith.cmpf ogt, %b, %zero : f32
      %v = arith.select %positive, %a, %zero : f32
      linalg.yield %v : f32
    } -> tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%m : tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %masked_out[%c, 0] [1, 196] [1, 1] : tensor<1x196xf32> into tensor<64x196xf32>
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  %halved = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                            iterator_types = ["parallel"]}
      ins(%first#1 : tensor<64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %h = arith.mulf %in, %half : f32
    linalg.yield %h : f32
  } -> tensor<64xf32>
  %dot = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %ms = tensor.extract_slice %first#0[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %xs = tensor.extract_slice %x[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%ms, %xs : tensor<1x196xf32>, tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %in2: f32, %a: f32):
      %p = arith.mulf %in, %in2 : f32
      %s = arith.addf %p, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  return %first#0, %halved, %dot : tensor<64x196xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The second loop reads the first's written tile of another row (c + 1's, through a
// transposed index): its own iteration has not computed that one. Two loops.
// CHECK-LABEL: func.func @negative_reads_another_tile
// CHECK-COUNT-2: scf.forall
func.func @negative_reads_another_tile(%g: tensor<64x196xf32>, %init: tensor<64xf32>,
                                       %rows_init: tensor<64x196xf32>)
    -> (tensor<64x196xf32>, tensor<64xf32>, tensor<64xf32>) {
  %first:2 = scf.forall (%c) in (64) shared_outs(%doubled = %rows_init, %out = %init)
      -> (tensor<64x196xf32>, tensor<64xf32>) {
    %gs = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %ds = tensor.extract_slice %doubled[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %d = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
        ins(%gs : tensor<1x196xf32>) outs(%ds : tensor<1x196xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.addf %a, %a : f32
      linalg.yield %v : f32
    } -> tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%d : tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %doubled[%c, 0] [1, 196] [1, 1] : tensor<1x196xf32> into tensor<64x196xf32>
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  %second = scf.forall (%c) in (64) shared_outs(%out = %init) -> (tensor<64xf32>) {
    %gs = tensor.extract_slice %g[%c, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %next = affine.apply affine_map<(d0) -> ((d0 + 1) mod 64)>(%c)
    %ds = tensor.extract_slice %first#0[%next, 0] [1, 196] [1, 1] : tensor<64x196xf32> to tensor<1x196xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<64xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#rows, #rows, #row], iterator_types = ["parallel", "reduction"]}
        ins(%gs, %ds : tensor<1x196xf32>, tensor<1x196xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %in2: f32, %a: f32):
      %p = arith.mulf %in, %in2 : f32
      %s = arith.addf %p, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<64xf32>
    }
  }
  return %first#0, %first#1, %second : tensor<64x196xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

#image = affine_map<(d0, d1) -> (d0, d1)>
#channel = affine_map<(d0, d1) -> (d0)>
#vector = affine_map<(d0) -> (d0)>

// A training batch norm's statistics: the sums per channel, then element-wise over the
// channels their mean, its inverse deviation (from the mean: a chain) and the running
// mean (with an input): each epilogue is tiled by rows and joins the loop, one kernel
// where there were four. An op over the channels that reads them through another map
// (reversed) stays after it.
// CHECK-LABEL: func.func @a_batch_norm_s_statistics
// CHECK:         %[[STATS:.*]]:4 = scf.forall (%{{.*}}) in (8)
// CHECK:           %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:           %[[MEAN:.*]] = linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} ins(%[[SUM]] :
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} ins(%[[MEAN]] :
// CHECK:           linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} ins(%[[MEAN]], %{{.*}} :
// CHECK:           scf.forall.in_parallel
// CHECK-NOT:     scf.forall
// CHECK:         %[[REVERSED:.*]] = linalg.generic {{.*}} ins(%[[STATS]]#1 :
// CHECK:         return %[[STATS]]#2, %[[STATS]]#3, %[[REVERSED]]
func.func @a_batch_norm_s_statistics(%x: tensor<8x36xf32>, %running: tensor<8xf32>,
                                     %init: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %n = arith.constant 36.0 : f32
  %sums = scf.forall (%c) in (8) shared_outs(%out = %init) -> (tensor<8xf32>) {
    %row = tensor.extract_slice %x[%c, 0] [1, 36] [1, 1] : tensor<8x36xf32> to tensor<1x36xf32>
    %acc = tensor.extract_slice %out[%c] [1] [1] : tensor<8xf32> to tensor<1xf32>
    %r = linalg.generic {indexing_maps = [#image, #channel], iterator_types = ["parallel", "reduction"]}
        ins(%row : tensor<1x36xf32>) outs(%acc : tensor<1xf32>) {
    ^bb0(%in: f32, %a: f32):
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %r into %out[%c] [1] [1] : tensor<1xf32> into tensor<8xf32>
    }
  }
  %mean = linalg.generic {indexing_maps = [#vector, #vector], iterator_types = ["parallel"]}
      ins(%sums : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.divf %in, %n : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %deviation = linalg.generic {indexing_maps = [#vector, #vector], iterator_types = ["parallel"]}
      ins(%mean : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %d = math.rsqrt %in : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %updated = linalg.generic {indexing_maps = [#vector, #vector, #vector], iterator_types = ["parallel"]}
      ins(%mean, %running : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %r: f32, %o: f32):
    %u = arith.addf %in, %r : f32
    linalg.yield %u : f32
  } -> tensor<8xf32>
  %reversed = linalg.generic {indexing_maps = [affine_map<(d0) -> (7 - d0)>, #vector],
                              iterator_types = ["parallel"]}
      ins(%mean : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<8xf32>
  return %deviation, %updated, %reversed : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

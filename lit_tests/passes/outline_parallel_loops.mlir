// RUN: %opt %s --split-input-file -p outline-parallel-loops | filecheck %s

// A row loop moves into its own function, called through a launcher declaration; the
// constant it reads is cloned in, the buffers become arguments, and the temporary stays
// inside (each thread gets its own).
// CHECK-LABEL: func.func @scale_rows
// CHECK-SAME:    (%[[X:.*]]: memref<256x512xf32>, %[[Y:.*]]: memref<256x512xf32>)
// CHECK-NOT:     scf.parallel
// CHECK:         arith.constant 2.0
// CHECK-NEXT:    %[[TRIPS:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:         call @scale_rows_parallel_0__launch(%[[ZERO]], %[[TRIPS]], %[[X]], %[[Y]])
// The two buffers are distinct: the pointers of both (LLVM argument positions 2, 3 and
// 9, 10 once each rank-2 memref expands to 7 values) may be noalias.
// CHECK:       func.func private @scale_rows_parallel_0(%[[BEGIN:.*]]: index, %[[END:.*]]: index, %[[IN:.*]]: memref<256x512xf32>, %[[OUT:.*]]: memref<256x512xf32>)
// CHECK-SAME:    attributes {tessel.noalias_pointers = array<i64: 2, 3, 9, 10>}
// CHECK:         %[[TWO:.*]] = arith.constant 2.0
// CHECK:         scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]]
// CHECK:           %[[ROW:.*]] = affine.apply #{{.*}}(%[[I]])
// CHECK:           memref.alloc()
// CHECK:           memref.subview %[[IN]][%[[ROW]], 0]
// CHECK:           arith.mulf %{{.*}}, %[[TWO]]
// CHECK:       func.func private @scale_rows_parallel_0__launch(index, index, memref<256x512xf32>, memref<256x512xf32>)
// CHECK-SAME:    attributes {tessel.parallel_body = @scale_rows_parallel_0}
func.func @scale_rows(%x: memref<256x512xf32>, %y: memref<256x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    %tmp = memref.alloc() : memref<512xf32>
    %row = memref.subview %x[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%row : memref<512xf32, strided<[1], offset: ?>>) outs(%tmp : memref<512xf32>) {
    ^bb0(%in: f32, %o: f32):
      %m = arith.mulf %in, %cst : f32
      linalg.yield %m : f32
    }
    memref.copy %tmp, %out : memref<512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.dealloc %tmp : memref<512xf32>
    scf.reduce
  }
  return
}

// -----

// A dynamic trip count is computed in the caller; the loop is outlined.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK:         %[[TRIPS:.*]] = affine.apply #{{.*}}(%{{.*}})
// CHECK:         call @dynamic_rows_parallel_0__launch(%{{.*}}, %[[TRIPS]], %{{.*}})
func.func @dynamic_rows(%y: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %row = memref.subview %y[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%row : memref<64xf32, strided<[1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// Tiles of 10 rows over 6272 (a gemm's bias epilogue): the last tile is shorter, so
// each tile's views have a dynamic row count, `affine.min` of the rows left and 10.
// That bound is its size: 628 tiles of at most 10 x 384 elements are worth threads.
// CHECK-LABEL: func.func @ragged_tiles
// CHECK-NOT:     scf.parallel
// CHECK:         call @ragged_tiles_parallel_0__launch
func.func @ragged_tiles(%x: memref<6272x384xf32>, %bias: memref<384xf32>, %y: memref<6272x384xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c628 = arith.constant 628 : index
  scf.parallel (%t) = (%c0) to (%c628) step (%c1) {
    %first = affine.apply affine_map<(d0) -> (d0 * 10)>(%t)
    %rows = affine.min affine_map<(d0) -> (d0 * -10 + 6272, 10)>(%t)
    %in = memref.subview %x[%first, 0] [%rows, 384] [1, 1] : memref<6272x384xf32> to memref<?x384xf32, strided<[384, 1], offset: ?>>
    %out = memref.subview %y[%first, 0] [%rows, 384] [1, 1] : memref<6272x384xf32> to memref<?x384xf32, strided<[384, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%in, %bias : memref<?x384xf32, strided<[384, 1], offset: ?>>, memref<384xf32>) outs(%out : memref<?x384xf32, strided<[384, 1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
    scf.reduce
  }
  return
}

// -----

// The same tiles over 62 rows (7 tiles of at most 10 x 64): too little work; the loop
// stays.
// CHECK-LABEL: func.func @negative_small_ragged_tiles
// CHECK:         scf.parallel
// CHECK-NOT:     call
func.func @negative_small_ragged_tiles(%y: memref<62x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%t) = (%c0) to (%c7) step (%c1) {
    %first = affine.apply affine_map<(d0) -> (d0 * 10)>(%t)
    %rows = affine.min affine_map<(d0) -> (d0 * -10 + 62, 10)>(%t)
    %tile = memref.subview %y[%first, 0] [%rows, 64] [1, 1] : memref<62x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%tile : memref<?x64xf32, strided<[64, 1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// 16 rows of 64 elements: too little work to pay for a launch; the loop stays.
// CHECK-LABEL: func.func @negative_small
// CHECK:         scf.parallel
// CHECK-NOT:     call
func.func @negative_small(%y: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %row = memref.subview %y[%i, 0] [1, 64] [1, 1] : memref<16x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%row : memref<64xf32, strided<[1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// Two-dimensional parallel loops are not outlined (tessel's tiling makes 1-D ones).
// CHECK-LABEL: func.func @negative_two_dims
// CHECK:         scf.parallel
// CHECK-NOT:     call
func.func @negative_two_dims(%y: memref<512x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c512) step (%c1, %c1) {
    memref.store %zero, %y[%i, %j] : memref<512x512xf32>
    scf.reduce
  }
  return
}

// -----

// Two views of one buffer (a row read, the next row written) may overlap: neither is
// noalias; the other buffer is.
// CHECK-LABEL: func.func @negative_shared_buffer
// CHECK:       func.func private @negative_shared_buffer_parallel_0
// CHECK-SAME:    tessel.noalias_pointers = array<i64: 16, 17>
func.func @negative_shared_buffer(%y: memref<257x512xf32>, %scale: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %rows = memref.subview %y[0, 0] [256, 512] [1, 1] : memref<257x512xf32> to memref<256x512xf32, strided<[512, 1]>>
  %next = memref.subview %y[1, 0] [256, 512] [1, 1] : memref<257x512xf32> to memref<256x512xf32, strided<[512, 1], offset: 512>>
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    %in = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32, strided<[512, 1]>> to memref<512xf32, strided<[1], offset: ?>>
    %out = memref.subview %next[%i, 0] [1, 512] [1, 1] : memref<256x512xf32, strided<[512, 1], offset: 512>> to memref<512xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%in, %scale : memref<512xf32, strided<[1], offset: ?>>, memref<512xf32>) outs(%out : memref<512xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %s: f32, %o: f32):
      %m = arith.mulf %a, %s : f32
      linalg.yield %m : f32
    }
    scf.reduce
  }
  return
}

// RUN: %opt %s -p gpu --split-input-file --emit triton | filecheck %s

// Row kernels whose row lies across memory hold a tile of rows per program
// (row_tiles.py); a row along memory keeps one row per program. Inputs: the linalg IR
// of small torch functions, from dump_dir.

// torch.softmax(x, 1) of a [5, 37, 45] tensor: a row of 37 points, 45 apart in memory.
// 225 rows in tiles of 32: the last tile is partial, masked by its rows.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         row = tl.program_id(0) * 32 + tl.arange(0, 32)[:, None]
// CHECK-NEXT:    row_mask = row < 225
// CHECK-NEXT:    row0 = (row // 45)
// CHECK-NEXT:    row1 = (row % 45)
// CHECK-NEXT:    r = tl.arange(0, BLOCK)[None, :]
// CHECK-NEXT:    mask = (r < 37) & row_mask
// CHECK:         [[MAX:v[0-9]+]] = tl.reduce({{v[0-9]+}}, combine_fn=_maximum, axis=1, keep_dims=True)
// CHECK:         [[SUM:v[0-9]+]] = tl.sum({{v[0-9]+}}, axis=1, keep_dims=True)
// CHECK:         tl.store(out0 + out0_stride0*row0 + out0_stride1*(r % 37) + out0_stride2*row1, {{v[0-9]+}}, mask=mask)

#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
module {
  func.func @main(%arg0: tensor<5x37x45xf32>) -> tensor<5x37x45xf32> attributes {llvm.emit_c_interface} {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0xFF800000 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<5x45xi64>
    %1 = linalg.fill ins(%c0_i64 : i64) outs(%0 : tensor<5x45xi64>) -> tensor<5x45xi64>
    %2 = tensor.empty() : tensor<5x45xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<5x45xf32>) -> tensor<5x45xf32>
    %4:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<5x37x45xf32>) outs(%3, %1 : tensor<5x45xf32>, tensor<5x45xi64>) {
    ^bb0(%in: f32, %out: f32, %out_1: i64):
      %12 = linalg.index 1 : index
      %13 = arith.index_cast %12 : index to i64
      %14 = arith.maximumf %in, %out : f32
      %15 = arith.cmpf ogt, %in, %out : f32
      %16 = arith.select %15, %13, %out_1 : i64
      linalg.yield %14, %16 : f32, i64
    } -> (tensor<5x45xf32>, tensor<5x45xi64>)
    %expanded = tensor.expand_shape %4#0 [[0, 1], [2]] output_shape [5, 1, 45] : tensor<5x45xf32> into tensor<5x1x45xf32>
    %5 = tensor.empty() : tensor<5x37x45xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %expanded : tensor<5x37x45xf32>, tensor<5x1x45xf32>) outs(%5 : tensor<5x37x45xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.subf %in, %in_1 : f32
      linalg.yield %12 : f32
    } -> tensor<5x37x45xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<5x37x45xf32>) outs(%5 : tensor<5x37x45xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.exp %in : f32
      linalg.yield %12 : f32
    } -> tensor<5x37x45xf32>
    %8 = tensor.empty() : tensor<5x1x45xf32>
    %9 = linalg.fill ins(%cst_0 : f32) outs(%8 : tensor<5x1x45xf32>) -> tensor<5x1x45xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction", "parallel"]} ins(%7 : tensor<5x37x45xf32>) outs(%9 : tensor<5x1x45xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.addf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<5x1x45xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7, %10 : tensor<5x37x45xf32>, tensor<5x1x45xf32>) outs(%5 : tensor<5x37x45xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %12 = arith.divf %in, %in_1 : f32
      linalg.yield %12 : f32
    } -> tensor<5x37x45xf32>
    return %11 : tensor<5x37x45xf32>
  }
}

// -----

// A bf16 sum over dim 2 of [3, 4, 29, 33]: each row's sum is stored once, per row,
// masked by the rows of the partial last tile.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         row = tl.program_id(0) * 32 + tl.arange(0, 32)[:, None]
// CHECK-NEXT:    row_mask = row < 396
// CHECK:         row2 = (row % 33)
// CHECK:         tl.load(in0 + in0_stride0*row0 + in0_stride1*row1 + in0_stride2*(r % 29) + in0_stride3*row2, mask=mask)
// CHECK:         tl.sum({{v[0-9]+}}, axis=1, keep_dims=True)
// CHECK:         tl.store(out0 + out0_stride0*row0 + out0_stride1*row1 + out0_stride2*row2, {{v[0-9]+}}.to(tl.bfloat16), mask=row_mask)

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @main(%arg0: tensor<3x4x29x33xbf16>) -> tensor<3x4x33xbf16> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<3x4x29x33xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<3x4x29x33xbf16>) outs(%0 : tensor<3x4x29x33xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %7 = arith.extf %in : bf16 to f32
      linalg.yield %7 : f32
    } -> tensor<3x4x29x33xf32>
    %2 = tensor.empty() : tensor<3x4x33xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<3x4x33xf32>) -> tensor<3x4x33xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%1 : tensor<3x4x29x33xf32>) outs(%3 : tensor<3x4x33xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.addf %in, %out : f32
      linalg.yield %7 : f32
    } -> tensor<3x4x33xf32>
    %5 = tensor.empty() : tensor<3x4x33xbf16>
    %6 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<3x4x33xf32>) outs(%5 : tensor<3x4x33xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %7 = arith.truncf %in : f32 to bf16
      linalg.yield %7 : bf16
    } -> tensor<3x4x33xbf16>
    return %6 : tensor<3x4x33xbf16>
  }
}

// -----

// negative: a layer norm over the last dim, whose row lies along memory, keeps one
// row per program.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         row = tl.program_id(0)
// CHECK-NEXT:    row0 = row
// CHECK-NEXT:    r = tl.arange(0, BLOCK)
// CHECK-NEXT:    mask = r < 45
// CHECK-NOT:     keep_dims
// CHECK:         tl.sum({{v[0-9]+}}, axis=0)

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func @main(%arg0: tensor<7x45xf32>) -> tensor<7x45xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e-05 : f64
    %cst_1 = arith.constant 4.500000e+01 : f32
    %0 = tensor.empty() : tensor<7x1xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<7x1xf32>) -> tensor<7x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<7x45xf32>) outs(%1 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.addf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<7x1xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<7x1xf32>) outs(%0 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.divf %in, %cst_1 : f32
      linalg.yield %12 : f32
    } -> tensor<7x1xf32>
    %4 = tensor.empty() : tensor<7x45xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %3 : tensor<7x45xf32>, tensor<7x1xf32>) outs(%4 : tensor<7x45xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.subf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<7x45xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %5 : tensor<7x45xf32>, tensor<7x45xf32>) outs(%4 : tensor<7x45xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.mulf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<7x45xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%6 : tensor<7x45xf32>) outs(%1 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.addf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<7x1xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<7x1xf32>) outs(%0 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.divf %in, %cst_1 : f32
      linalg.yield %12 : f32
    } -> tensor<7x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<7x1xf32>) outs(%0 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.truncf %cst_0 : f64 to f32
      %13 = arith.addf %in, %12 : f32
      linalg.yield %13 : f32
    } -> tensor<7x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<7x1xf32>) outs(%0 : tensor<7x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.rsqrt %in : f32
      linalg.yield %12 : f32
    } -> tensor<7x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %10 : tensor<7x45xf32>, tensor<7x1xf32>) outs(%4 : tensor<7x45xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.mulf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<7x45xf32>
    return %11 : tensor<7x45xf32>
  }
}

// -----

// A sum of squares over dim 1 of a [4, 5987, 45] tensor: 180 rows of 5987 points, 45
// apart in memory, too long for one block (5987 is prime: split-reductions finds no
// pieces to cut them into). The tile of 32 rows walks them in chunks of 128 points,
// each load reading 32 neighbouring rows at every point, where one row per program read
// one point per sector (a batch norm's per-channel sums over an NHWC image in a
// training step are such rows).
// CHECK-LABEL: def main_kernel_1(
// CHECK:         row = tl.program_id(0) * 32 + tl.arange(0, 32)[:, None]
// CHECK-NEXT:    row_mask = row < 180
// CHECK:         [[ACC:acc[0-9]+]] = tl.full([32, BLOCK], 0, tl.float32)
// CHECK-NEXT:    for start in range(0, 5987, BLOCK):
// CHECK-NEXT:        r = start + tl.arange(0, BLOCK)[None, :]
// CHECK-NEXT:        mask = (r < 5987) & row_mask
// CHECK:         tl.sum([[ACC]], axis=1, keep_dims=True)
// CHECK:         tl.store(out0 + out0_stride0*row0 + out0_stride1*row1, {{v[0-9]+}}, mask=row_mask)
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d2)>
module {
  func.func @main(%arg0: tensor<4x5987x45xf32>) -> tensor<4x45xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<4x45xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x45xf32>) -> tensor<4x45xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<4x5987x45xf32>) outs(%1 : tensor<4x45xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.mulf %in, %in : f32
      %4 = arith.addf %3, %out : f32
      linalg.yield %4 : f32
    } -> tensor<4x45xf32>
    return %2 : tensor<4x45xf32>
  }
}

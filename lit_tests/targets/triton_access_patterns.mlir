// RUN: %opt %s -p gpu --split-input-file --emit triton | filecheck %s

// The Triton source of each access pattern, as `tessel-opt --emit triton` prints it after
// the gpu pipeline (inputs: the linalg IR of small torch functions, from dump_dir).

// A mask over [1, 8, 8] from an arange compared with itself transposed, added to scores
// over [2, 4, 8, 8]: the one kernel over the scores computes the arange at both points
// from its own indices (duplicate-cheap-producers gives each read its own arange).
// CHECK-LABEL: def main_kernel_0(
// CHECK:         mask = r < 512
// CHECK-NOT:     tl.load(in1
// CHECK:         [[ROW:v[0-9]+]] = ((r // 8) % 8).to(tl.int64)
// CHECK-NEXT:    [[COLUMN:v[0-9]+]] = (r % 8).to(tl.int64)
// CHECK-NEXT:    {{v[0-9]+}} = [[COLUMN]] > [[ROW]]
// CHECK:         tl.where(
// CHECK-NOT:     def main_kernel_1(

#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> ()>
#map5 = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
module {
  func.func @main(%arg0: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant dense<-1.000000e+04> : tensor<f32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<f32>
    %0 = tensor.empty() : tensor<8xi64>
    %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%0 : tensor<8xi64>) {
    ^bb0(%out: i64):
      %10 = linalg.index 0 : index
      %11 = arith.index_cast %10 : index to i64
      linalg.yield %11 : i64
    } -> tensor<8xi64>
    %expanded = tensor.expand_shape %1 [[0, 1, 2]] output_shape [1, 1, 8] : tensor<8xi64> into tensor<1x1x8xi64>
    %expanded_1 = tensor.expand_shape %1 [[0, 1, 2]] output_shape [1, 8, 1] : tensor<8xi64> into tensor<1x8x1xi64>
    %2 = tensor.empty() : tensor<1x8x8xi1>
    %3 = linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded, %expanded_1 : tensor<1x1x8xi64>, tensor<1x8x1xi64>) outs(%2 : tensor<1x8x8xi1>) {
    ^bb0(%in: i64, %in_2: i64, %out: i1):
      %10 = arith.cmpi sgt, %in, %in_2 : i64
      linalg.yield %10 : i1
    } -> tensor<1x8x8xi1>
    %4 = tensor.empty() : tensor<1x8x8xf32>
    %5 = linalg.generic {indexing_maps = [#map3, #map4, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %cst, %cst_0 : tensor<1x8x8xi1>, tensor<f32>, tensor<f32>) outs(%4 : tensor<1x8x8xf32>) {
    ^bb0(%in: i1, %in_2: f32, %in_3: f32, %out: f32):
      %10 = arith.select %in, %in_2, %in_3 : f32
      linalg.yield %10 : f32
    } -> tensor<1x8x8xf32>
    %6 = tensor.empty() : tensor<2x1x8x8xf32>
    %7 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5 : tensor<1x8x8xf32>) outs(%6 : tensor<2x1x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x1x8x8xf32>
    %8 = tensor.empty() : tensor<2x4x8x8xf32>
    %9 = linalg.generic {indexing_maps = [#map6, #map7, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %7 : tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) outs(%8 : tensor<2x4x8x8xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %10 = arith.addf %in, %in_2 : f32
      linalg.yield %10 : f32
    } -> tensor<2x4x8x8xf32>
    return %9 : tensor<2x4x8x8xf32>
  }
}

// -----

// x.transpose(1, 2) * 2 + y: the transposed operand is read through its strides, no
// copy. It is contiguous along the kernel's dim 1, the result along dim 2: the kernel
// walks 2-D tiles (transposing_tiles), whose rows step along the one and columns along
// the other, so that both are coalesced.
// CHECK-LABEL: def main_kernel_0(
// CHECK-NEXT:    ry = 32*tl.program_id(0) + tl.arange(0, 32)
// CHECK-NEXT:    rx = tl.arange(0, 8)
// CHECK-NEXT:    mask = (ry[:, None] < 32) & (rx[None, :] < 8)
// CHECK-NEXT:    tl.load(in0 + in0_stride0*(ry[:, None] // 16) + in0_stride1*rx[None, :] + in0_stride2*(ry[:, None] % 16), mask=mask)
// CHECK-NEXT:    tl.load(in1 + in1_stride0*(ry[:, None] // 16) + in1_stride1*(ry[:, None] % 16) + in1_stride2*rx[None, :], mask=mask)
// CHECK:         tl.store(out0 + out0_stride0*(ry[:, None] // 16) + out0_stride1*(ry[:, None] % 16) + out0_stride2*rx[None, :], {{v[0-9]+}}, mask=mask)
// CHECK-NOT:     def main_kernel_1(

#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @main(%arg0: tensor<2x8x16xf32>, %arg1: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 2.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x16x8xf32>
    %transposed = linalg.transpose ins(%arg0 : tensor<2x8x16xf32>) outs(%0 : tensor<2x16x8xf32>) permutation = [0, 2, 1] 
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed : tensor<2x16x8xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.mulf %in, %cst : f32
      linalg.yield %3 : f32
    } -> tensor<2x16x8xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %arg1 : tensor<2x16x8xf32>, tensor<2x16x8xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %3 = arith.addf %in, %in_0 : f32
      linalg.yield %3 : f32
    } -> tensor<2x16x8xf32>
    return %2 : tensor<2x16x8xf32>
  }
}

// -----

// XCiT's q, k, v permute, [B, N, 3, H, D] -> [3, B, H, D, N] in bf16: a 32 x 32 tile's
// columns walk N (the result's contiguous dim), its rows D (the input's) and the dims
// outside it; 7 tiles across N, 576 down.
// CHECK-LABEL: def main_kernel_0(
// CHECK-NEXT:    ry = 32*(tl.program_id(0) // 7) + tl.arange(0, 32)
// CHECK-NEXT:    rx = 32*(tl.program_id(0) % 7) + tl.arange(0, 32)
// CHECK-NEXT:    mask = (ry[:, None] < 18432) & (rx[None, :] < 196)
// CHECK-NEXT:    tl.load(in0 + in0_stride0*((ry[:, None] // 192) % 32) + in0_stride1*rx[None, :] + in0_stride2*(ry[:, None] // 6144) + in0_stride3*((ry[:, None] // 48) % 4) + in0_stride4*(ry[:, None] % 48), mask=mask)
// CHECK-NEXT:    tl.store(out0 + {{.*}} + out0_stride4*rx[None, :], {{.*}}, mask=mask)

module {
  func.func @main(%arg0: tensor<32x196x3x4x48xbf16>) -> tensor<3x32x4x48x196xbf16> attributes {llvm.emit_c_interface} {
    %0 = tensor.empty() : tensor<3x32x4x48x196xbf16>
    %transposed = linalg.transpose ins(%arg0 : tensor<32x196x3x4x48xbf16>) outs(%0 : tensor<3x32x4x48x196xbf16>) permutation = [2, 0, 3, 4, 1]
    return %transposed : tensor<3x32x4x48x196xbf16>
  }
}

// -----

// negative: a per-channel scale of NCHW, x * s with s of [2, 6, 1, 1], is contiguous
// along the channels, but read once per channel: the kernel stays 1-D, its stores and
// its full-size read coalesced.
// CHECK-LABEL: def main_kernel_0(
// CHECK-NEXT:    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
// CHECK-NOT:     ry =

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
module {
  func.func @main(%arg0: tensor<2x6x5x7xf32>, %arg1: tensor<2x6x1x1xf32>) -> tensor<2x6x5x7xf32> attributes {llvm.emit_c_interface} {
    %0 = tensor.empty() : tensor<2x6x5x7xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %arg1 : tensor<2x6x5x7xf32>, tensor<2x6x1x1xf32>) outs(%0 : tensor<2x6x5x7xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.mulf %in, %in_0 : f32
      linalg.yield %2 : f32
    } -> tensor<2x6x5x7xf32>
    return %1 : tensor<2x6x5x7xf32>
  }
}

// -----

// A normalization over the channels of NCHW (ConvNeXt's channels-first layer norm):
// one program per (n, h, w), its row the channels, read at stride in0_stride1. The
// program id splits row-major into n, h and w (the outermost needs no modulo).
// CHECK-LABEL: def main_kernel_0(
// CHECK:         row = tl.program_id(0)
// CHECK-NEXT:    row0 = (row // 16)
// CHECK-NEXT:    row1 = ((row // 4) % 4)
// CHECK-NEXT:    row2 = (row % 4)
// CHECK:         tl.load(in0 + in0_stride0*row0 + in0_stride1*(r % 16) + in0_stride2*row1 + in0_stride3*row2, mask=mask)
// CHECK:         tl.sum(

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
module {
  func.func @main(%arg0: tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32> attributes {llvm.emit_c_interface} {
    %c2_i64 = arith.constant 2 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 9.9999999999999995E-7 : f64
    %cst_1 = arith.constant 1.600000e+01 : f32
    %0 = tensor.empty() : tensor<2x1x4x4xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%arg0 : tensor<2x16x4x4xf32>) outs(%1 : tensor<2x1x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.addf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<2x1x4x4xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<2x1x4x4xf32>) outs(%0 : tensor<2x1x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.divf %in, %cst_1 : f32
      linalg.yield %12 : f32
    } -> tensor<2x1x4x4xf32>
    %4 = tensor.empty() : tensor<2x16x4x4xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %3 : tensor<2x16x4x4xf32>, tensor<2x1x4x4xf32>) outs(%4 : tensor<2x16x4x4xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.subf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<2x16x4x4xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5 : tensor<2x16x4x4xf32>) outs(%4 : tensor<2x16x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.fpowi %in, %c2_i64 : f32, i64
      linalg.yield %12 : f32
    } -> tensor<2x16x4x4xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%6 : tensor<2x16x4x4xf32>) outs(%1 : tensor<2x1x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.addf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<2x1x4x4xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7 : tensor<2x1x4x4xf32>) outs(%0 : tensor<2x1x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.divf %in, %cst_1 : f32
      linalg.yield %12 : f32
    } -> tensor<2x1x4x4xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8 : tensor<2x1x4x4xf32>) outs(%0 : tensor<2x1x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.truncf %cst_0 : f64 to f32
      %13 = arith.addf %in, %12 : f32
      linalg.yield %13 : f32
    } -> tensor<2x1x4x4xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<2x1x4x4xf32>) outs(%0 : tensor<2x1x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.sqrt %in : f32
      linalg.yield %12 : f32
    } -> tensor<2x1x4x4xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5, %10 : tensor<2x16x4x4xf32>, tensor<2x1x4x4xf32>) outs(%4 : tensor<2x16x4x4xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.divf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<2x16x4x4xf32>
    return %11 : tensor<2x16x4x4xf32>
  }
}

// -----

// An argmax (torch.max(x, dim) as torch-mlir lowers it) over rows of 9000, in chunks: each
// lane keeps its best element, position and index, counting no element from the first
// NaN on; the row's best is then found with tl.max, the first position holding it with
// tl.min, and the value and the index are both results.
// CHECK-LABEL: def main_kernel_2(
// CHECK:         for start in range(0, 9000, BLOCK):
// CHECK:           [[STOP:stop[0-9]+]] = tl.minimum([[STOP]], tl.min(tl.where(mask & ([[X:v[0-9]+]] != [[X]]), r, 9000), axis=0))
// CHECK:           [[VALID:valid[0-9]+]] = mask & (r < [[STOP]])
// CHECK:           [[BETTER:better[0-9]+]] = [[VALID]] & ([[X]] > [[BEST:best[0-9]+]])
// CHECK:           [[AT:at[0-9]+]] = tl.where([[BETTER]], r, [[AT]])
// CHECK:         [[ROW_BEST:best[0-9]+]] = tl.max([[BEST]], axis=0)
// CHECK:         [[FIRST:at[0-9]+]] = tl.min(tl.where([[BEST]] == [[ROW_BEST]], [[AT]], 9000), axis=0)
// CHECK:         tl.store(out0 + out0_stride0*row0,
// CHECK:         tl.store(out1 + out1_stride0*row0,

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module {
  func.func @main(%arg0: tensor<6x9000xf32>) -> (tensor<6xf32>, tensor<6xi64>) {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<6xi64>
    %1 = linalg.fill ins(%c0_i64 : i64) outs(%0 : tensor<6xi64>) -> tensor<6xi64>
    %2 = tensor.empty() : tensor<6xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<6xf32>) -> tensor<6xf32>
    %4:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<6x9000xf32>) outs(%3, %1 : tensor<6xf32>, tensor<6xi64>) {
    ^bb0(%in: f32, %out: f32, %out_2: i64):
      %20 = linalg.index 1 : index
      %21 = arith.index_cast %20 : index to i64
      %22 = arith.maximumf %in, %out : f32
      %23 = arith.cmpf ogt, %in, %out : f32
      %24 = arith.select %23, %21, %out_2 : i64
      linalg.yield %22, %24 : f32, i64
    } -> (tensor<6xf32>, tensor<6xi64>)
    return %4#0, %4#1 : tensor<6xf32>, tensor<6xi64>
  }
}

// -----

// negative_matmul: a gemm stays a library call (cuBLAS): only its zero init is a kernel.
// CHECK-LABEL: def main_kernel_0(
// CHECK-NOT:     tl.dot
// CHECK-NOT:     def main_kernel_1(

module {
  func.func @main(%arg0: tensor<16x32xf32>, %arg1: tensor<32x8xf32>) -> tensor<16x8xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<16x8xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<16x8xf32>) -> tensor<16x8xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<16x32xf32>, tensor<32x8xf32>) outs(%1 : tensor<16x8xf32>) -> tensor<16x8xf32>
    return %2 : tensor<16x8xf32>
  }
}

// -----

// A concatenation as a gather: each input is loaded only where the point selects it
// (its load masked by the select's condition), as Inductor masks a concatenation's
// loads; the select then takes the loaded value.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         [[FIRST:v[0-9]+]] = (r % 16) < 8
// CHECK-NEXT:    [[A:v[0-9]+]] = tl.load(in0 + {{.*}}, mask=mask & [[FIRST]])
// CHECK:         [[B:v[0-9]+]] = tl.load(in1 + {{.*}}, mask=mask & ~([[FIRST]]))
// CHECK-NEXT:    tl.where([[FIRST]], [[A]], [[B]])

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %c = tensor.concat dim(1) %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

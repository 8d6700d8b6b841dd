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

// -----

// A layer norm over the last dim with a weight and a bias (GPT-2's, BART's, T5's): the
// two are read through (d0, d1) -> (d1), at the row's position alone.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         tl.load(in0 + in0_stride0*row0 + in0_stride1*(r % 64), mask=mask)
// CHECK:         tl.load(in1 + in1_stride0*(r % 64), mask=mask)
// CHECK-NEXT:    tl.load(in2 + in2_stride0*(r % 64), mask=mask)
// CHECK:         tl.store(out0 + out0_stride0*row0 + out0_stride1*(r % 64), {{v[0-9]+}}, mask=mask)
// CHECK-NOT:     def main_kernel_1(

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @main(%arg0: tensor<8x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64xf32>) -> tensor<8x64xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e-05 : f64
    %cst_1 = arith.constant 6.400000e+01 : f32
    %0 = tensor.empty() : tensor<8x1xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x1xf32>) -> tensor<8x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x64xf32>) outs(%1 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.addf %in, %out : f32
      linalg.yield %14 : f32
    } -> tensor<8x1xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<8x1xf32>) outs(%0 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.divf %in, %cst_1 : f32
      linalg.yield %14 : f32
    } -> tensor<8x1xf32>
    %4 = tensor.empty() : tensor<8x64xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %3 : tensor<8x64xf32>, tensor<8x1xf32>) outs(%4 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %14 = arith.subf %in, %in_2 : f32
      linalg.yield %14 : f32
    } -> tensor<8x64xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %5 : tensor<8x64xf32>, tensor<8x64xf32>) outs(%4 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %14 = arith.mulf %in, %in_2 : f32
      linalg.yield %14 : f32
    } -> tensor<8x64xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%6 : tensor<8x64xf32>) outs(%1 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.addf %in, %out : f32
      linalg.yield %14 : f32
    } -> tensor<8x1xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<8x1xf32>) outs(%0 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.divf %in, %cst_1 : f32
      linalg.yield %14 : f32
    } -> tensor<8x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<8x1xf32>) outs(%0 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.truncf %cst_0 : f64 to f32
      %15 = arith.addf %in, %14 : f32
      linalg.yield %15 : f32
    } -> tensor<8x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<8x1xf32>) outs(%0 : tensor<8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = math.rsqrt %in : f32
      linalg.yield %14 : f32
    } -> tensor<8x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %10 : tensor<8x64xf32>, tensor<8x1xf32>) outs(%4 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %14 = arith.mulf %in, %in_2 : f32
      linalg.yield %14 : f32
    } -> tensor<8x64xf32>
    %12 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%11, %arg1 : tensor<8x64xf32>, tensor<64xf32>) outs(%4 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %14 = arith.mulf %in, %in_2 : f32
      linalg.yield %14 : f32
    } -> tensor<8x64xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%12, %arg2 : tensor<8x64xf32>, tensor<64xf32>) outs(%4 : tensor<8x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %14 = arith.addf %in, %in_2 : f32
      linalg.yield %14 : f32
    } -> tensor<8x64xf32>
    return %13 : tensor<8x64xf32>
  }
}

// -----

// A layer norm of x.transpose(1, 2) (MLP-Mixer's token mixing reads its rows through
// (d0, d2, d1)): no transpose is copied; a tile of 32 rows of (n, t) per program reads
// the row's 8 points at stride in0_stride1 and writes them along memory.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         row = tl.program_id(0) * 32 + tl.arange(0, 32)[:, None]
// CHECK-NEXT:    row0 = (row // 16)
// CHECK-NEXT:    row1 = (row % 16)
// CHECK:         tl.load(in0 + in0_stride0*row0 + in0_stride1*(r % 8) + in0_stride2*row1, mask=mask)
// CHECK:         tl.sum({{v[0-9]+}}, axis=1, keep_dims=True)
// CHECK:         tl.store(out0 + out0_stride0*row0 + out0_stride1*row1 + out0_stride2*(r % 8), {{v[0-9]+}}, mask=mask)
// CHECK-NOT:     def main_kernel_1(

#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map2 = affine_map<(d0, d1, d2) -> (d2)>
module {
  func.func @main(%arg0: tensor<2x8x16xf32>, %arg1: tensor<8xf32>) -> tensor<2x16x8xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e-05 : f64
    %cst_1 = arith.constant 8.000000e+00 : f32
    %cst_2 = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x16x8xf32>
    %transposed = linalg.transpose ins(%arg0 : tensor<2x8x16xf32>) outs(%0 : tensor<2x16x8xf32>) permutation = [0, 2, 1] 
    %1 = tensor.empty() : tensor<2x16x1xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%transposed : tensor<2x16x8xf32>) outs(%2 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.addf %in, %out : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x1xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3 : tensor<2x16x1xf32>) outs(%1 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.divf %in, %cst_1 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x1xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%transposed, %4 : tensor<2x16x8xf32>, tensor<2x16x1xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %14 = arith.subf %in, %in_3 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x8xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %5 : tensor<2x16x8xf32>, tensor<2x16x8xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %14 = arith.mulf %in, %in_3 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x8xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%6 : tensor<2x16x8xf32>) outs(%2 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.addf %in, %out : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x1xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7 : tensor<2x16x1xf32>) outs(%1 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.divf %in, %cst_1 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x1xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<2x16x1xf32>) outs(%1 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.truncf %cst_0 : f64 to f32
      %15 = arith.addf %in, %14 : f32
      linalg.yield %15 : f32
    } -> tensor<2x16x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x16x1xf32>) outs(%1 : tensor<2x16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = math.rsqrt %in : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5, %10 : tensor<2x16x8xf32>, tensor<2x16x1xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %14 = arith.mulf %in, %in_3 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x8xf32>
    %12 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %arg1 : tensor<2x16x8xf32>, tensor<8xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %14 = arith.mulf %in, %in_3 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x8xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%12 : tensor<2x16x8xf32>) outs(%0 : tensor<2x16x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.addf %in, %cst_2 : f32
      linalg.yield %14 : f32
    } -> tensor<2x16x8xf32>
    return %13 : tensor<2x16x8xf32>
  }
}

// -----

// Squeeze-excite, x * sigmoid(x.mean((2, 3), keepdim=True)): the mean over H, W is a row
// per (n, c), and its broadcast back over [2, 8, 6, 6] ((d0, d1, 0, 0)) is the same
// program's epilogue: one kernel, x read once.
// CHECK-LABEL: def main_kernel_0(
// CHECK:         row0 = (row // 8)
// CHECK-NEXT:    row1 = (row % 8)
// CHECK:         [[X:v[0-9]+]] = tl.load(in0 + in0_stride0*row0 + in0_stride1*row1 + in0_stride2*((r // 6) % 6) + in0_stride3*(r % 6), mask=mask)
// CHECK:         tl.sum(
// CHECK:         tl.exp(
// CHECK:         {{v[0-9]+}} = [[X]] * {{v[0-9]+}}
// CHECK-NEXT:    tl.store(out0 + out0_stride0*row0 + out0_stride1*row1 + out0_stride2*((r // 6) % 6) + out0_stride3*(r % 6), {{v[0-9]+}}, mask=mask)
// CHECK-NOT:     def main_kernel_1(

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
module {
  func.func @main(%arg0: tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 3.600000e+01 : f32
    %0 = tensor.empty() : tensor<2x8x1x1xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x8x1x1xf32>) -> tensor<2x8x1x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%arg0 : tensor<2x8x6x6xf32>) outs(%1 : tensor<2x8x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.addf %in, %out : f32
      linalg.yield %7 : f32
    } -> tensor<2x8x1x1xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<2x8x1x1xf32>) outs(%0 : tensor<2x8x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.divf %in, %cst_1 : f32
      linalg.yield %7 : f32
    } -> tensor<2x8x1x1xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3 : tensor<2x8x1x1xf32>) outs(%0 : tensor<2x8x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.negf %in : f32
      %8 = math.exp %7 : f32
      %9 = arith.addf %8, %cst_0 : f32
      %10 = arith.divf %cst_0, %9 : f32
      linalg.yield %10 : f32
    } -> tensor<2x8x1x1xf32>
    %5 = tensor.empty() : tensor<2x8x6x6xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %4 : tensor<2x8x6x6xf32>, tensor<2x8x1x1xf32>) outs(%5 : tensor<2x8x6x6xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %7 = arith.mulf %in, %in_2 : f32
      linalg.yield %7 : f32
    } -> tensor<2x8x6x6xf32>
    return %6 : tensor<2x8x6x6xf32>
  }
}

// -----

// negative_depthwise: a depthwise convolution stays a library call (cuDNN, which writes
// channels-last); its epilogue walks the result in that order, the channel fastest
// (r % 8), against a channels-first iteration space [2, 8, 6, 6].
// CHECK-NOT:     def main_kernel_1(
// CHECK-LABEL: def main_kernel_2(
// CHECK:         tl.load(in0 + in0_stride0*((r // 288) % 2) + in0_stride1*(r % 8) + in0_stride2*((r // 48) % 6) + in0_stride3*((r // 8) % 6), mask=mask)
// CHECK:         tl.store(out0 + out0_stride0*((r // 288) % 2) + out0_stride1*(r % 8) + out0_stride2*((r // 48) % 6) + out0_stride3*((r // 8) % 6), {{v[0-9]+}}, mask=mask)

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @main(%arg0: tensor<2x8x6x6xf32>, %arg1: tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32> attributes {llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 2.000000e+00 : f32
    %cst_1 = arith.constant 1.000000e+00 : f32
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg2: index, %arg3: index, %arg4: index, %arg5: index):
      tensor.yield %cst : f32
    } : tensor<2x8x6x6xf32> to tensor<2x8x8x8xf32>
    %0 = tensor.empty() : tensor<2x8x6x6xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
    %collapsed = tensor.collapse_shape %arg1 [[0, 1], [2], [3]] : tensor<8x1x3x3xf32> into tensor<8x3x3xf32>
    %2 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %collapsed : tensor<2x8x8x8xf32>, tensor<8x3x3xf32>) outs(%1 : tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<2x8x6x6xf32>) outs(%0 : tensor<2x8x6x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.mulf %in, %cst_0 : f32
      linalg.yield %5 : f32
    } -> tensor<2x8x6x6xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3 : tensor<2x8x6x6xf32>) outs(%0 : tensor<2x8x6x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.addf %in, %cst_1 : f32
      linalg.yield %5 : f32
    } -> tensor<2x8x6x6xf32>
    return %4 : tensor<2x8x6x6xf32>
  }
}

// -----

// Swin's window partition times a [1, 7, 7, 1] mask: the windows [4, 7, 7, 16] are
// copied once (the reshape of a permuted view has no strides), and the product reads
// the mask at (i, j) alone.
// CHECK-LABEL: def main_kernel_1(
// CHECK:         tl.load(in0 + in0_stride0*((r // 784) % 4) + in0_stride1*((r // 112) % 7) + in0_stride2*((r // 16) % 7) + in0_stride3*(r % 16), mask=mask)
// CHECK-NEXT:    tl.load(in1 + in1_stride0*((r // 112) % 7) + in1_stride1*((r // 16) % 7), mask=mask)

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, 0)>
module {
  func.func @main(%arg0: tensor<1x14x14x16xf32>, %arg1: tensor<1x7x7x1xf32>) -> tensor<4x7x7x16xf32> attributes {llvm.emit_c_interface} {
    %expanded = tensor.expand_shape %arg0 [[0], [1, 2], [3, 4], [5]] output_shape [1, 2, 7, 2, 7, 16] : tensor<1x14x14x16xf32> into tensor<1x2x7x2x7x16xf32>
    %0 = tensor.empty() : tensor<1x2x2x7x7x16xf32>
    %transposed = linalg.transpose ins(%expanded : tensor<1x2x7x2x7x16xf32>) outs(%0 : tensor<1x2x2x7x7x16xf32>) permutation = [0, 1, 3, 2, 4, 5] 
    %collapsed = tensor.collapse_shape %transposed [[0, 1, 2], [3], [4], [5]] : tensor<1x2x2x7x7x16xf32> into tensor<4x7x7x16xf32>
    %1 = tensor.empty() : tensor<4x7x7x16xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapsed, %arg1 : tensor<4x7x7x16xf32>, tensor<1x7x7x1xf32>) outs(%1 : tensor<4x7x7x16xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %3 = arith.mulf %in, %in_0 : f32
      linalg.yield %3 : f32
    } -> tensor<4x7x7x16xf32>
    return %2 : tensor<4x7x7x16xf32>
  }
}

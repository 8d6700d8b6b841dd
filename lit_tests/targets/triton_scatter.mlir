// RUN: %opt %s -p gpu --split-input-file --emit triton | filecheck %s

// The Triton source of scatters that store their updates (scatter_kernel.py), as
// `tessel-opt --emit triton` prints it after the gpu pipeline (inputs: the linalg IR of
// small torch functions, from dump_dir).

// A static KV cache's update, cache.index_copy_(2, positions, k * 2): one kernel, a
// lane per new element, computes its index row (each column from the iotas and the
// position, fuse-into-scatters) and its value (k * 2), and stores it at the cache
// point they address. No kernel of the rows or of k * 2, and no load of index rows.
// CHECK-NOT:     def main_kernel_0(
// CHECK-NOT:     def main_kernel_1(
// CHECK-LABEL: def main_kernel_2(in0, in1, out0,
// CHECK:         mask = r < 8
// CHECK:         [[COLUMN:column[0-9]+]] = tl.full([BLOCK], 0, tl.int64)
// CHECK:         [[AT0:at[0-9]+]] = ({{v[0-9]+}}).to(tl.int64)
// CHECK-NEXT:    [[AT0]] = tl.where([[AT0]] < 0, [[AT0]] + 1, [[AT0]])
// CHECK:         tl.full([BLOCK], 3, tl.int64)
// CHECK:         [[AT3:at[0-9]+]] = tl.where({{.*}} + 4, {{.*}})
// CHECK:         tl.device_assert(
// CHECK:         [[K:v[0-9]+]] = tl.load(in1 + in1_stride0*(r % 8), mask=mask)
// CHECK-NEXT:    [[NEW:v[0-9]+]] = [[K]] * 2.0
// CHECK-NEXT:    tl.store(out0 + [[AT0]]*out0_stride0 + {{.*}}[[AT3]]*out0_stride3, [[NEW]], mask=mask & ([[AT0]] >= 0) & ([[AT0]] < 1) & {{.*}} & ([[AT3]] < 4))
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d2)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d3)>
module {
  func.func @main(%arg0: tensor<1x2x8x4xf32>, %arg1: tensor<1x2x1x4xf32>, %arg2: tensor<1xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> {tessel.new_value_of = 0 : i64}) attributes {llvm.emit_c_interface} {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 2.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x2x1x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<1x2x1x4xf32>) outs(%0 : tensor<1x2x1x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %14 = arith.mulf %in, %cst : f32
      linalg.yield %14 : f32
    } -> tensor<1x2x1x4xf32>
    %2 = tensor.empty() : tensor<4xi64>
    %3 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%2 : tensor<4xi64>) {
    ^bb0(%out: i64):
      %14 = linalg.index 0 : index
      %15 = arith.index_cast %14 : index to i64
      linalg.yield %15 : i64
    } -> tensor<4xi64>
    %4 = tensor.empty() : tensor<2xi64>
    %5 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%4 : tensor<2xi64>) {
    ^bb0(%out: i64):
      %14 = linalg.index 0 : index
      %15 = arith.index_cast %14 : index to i64
      linalg.yield %15 : i64
    } -> tensor<2xi64>
    %6 = tensor.empty() : tensor<1xi64>
    %7 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%6 : tensor<1xi64>) {
    ^bb0(%out: i64):
      linalg.yield %c0_i64 : i64
    } -> tensor<1xi64>
    %8 = tensor.empty() : tensor<1x2x1x4xi64>
    %expanded = tensor.expand_shape %7 [[0, 1]] output_shape [1, 1] : tensor<1xi64> into tensor<1x1xi64>
    %9 = linalg.generic {indexing_maps = [#map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<1x1xi64>) outs(%8 : tensor<1x2x1x4xi64>) {
    ^bb0(%in: i64, %out: i64):
      linalg.yield %in : i64
    } -> tensor<1x2x1x4xi64>
    %collapsed = tensor.collapse_shape %9 [[0, 1, 2, 3]] : tensor<1x2x1x4xi64> into tensor<8xi64>
    %expanded_0 = tensor.expand_shape %5 [[0, 1]] output_shape [2, 1] : tensor<2xi64> into tensor<2x1xi64>
    %10 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_0 : tensor<2x1xi64>) outs(%8 : tensor<1x2x1x4xi64>) {
    ^bb0(%in: i64, %out: i64):
      linalg.yield %in : i64
    } -> tensor<1x2x1x4xi64>
    %collapsed_1 = tensor.collapse_shape %10 [[0, 1, 2, 3]] : tensor<1x2x1x4xi64> into tensor<8xi64>
    %11 = linalg.generic {indexing_maps = [#map4, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg2 : tensor<1xi64>) outs(%8 : tensor<1x2x1x4xi64>) {
    ^bb0(%in: i64, %out: i64):
      linalg.yield %in : i64
    } -> tensor<1x2x1x4xi64>
    %collapsed_2 = tensor.collapse_shape %11 [[0, 1, 2, 3]] : tensor<1x2x1x4xi64> into tensor<8xi64>
    %12 = linalg.generic {indexing_maps = [#map5, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3 : tensor<4xi64>) outs(%8 : tensor<1x2x1x4xi64>) {
    ^bb0(%in: i64, %out: i64):
      linalg.yield %in : i64
    } -> tensor<1x2x1x4xi64>
    %collapsed_3 = tensor.collapse_shape %12 [[0, 1, 2, 3]] : tensor<1x2x1x4xi64> into tensor<8xi64>
    %expanded_4 = tensor.expand_shape %collapsed [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
    %expanded_5 = tensor.expand_shape %collapsed_1 [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
    %expanded_6 = tensor.expand_shape %collapsed_2 [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
    %expanded_7 = tensor.expand_shape %collapsed_3 [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
    %concat = tensor.concat dim(1) %expanded_4, %expanded_5, %expanded_6, %expanded_7 : (tensor<8x1xi64>, tensor<8x1xi64>, tensor<8x1xi64>, tensor<8x1xi64>) -> tensor<8x4xi64>
    %collapsed_8 = tensor.collapse_shape %1 [[0, 1, 2, 3]] : tensor<1x2x1x4xf32> into tensor<8xf32>
    %expanded_9 = tensor.expand_shape %collapsed_8 [[0, 1, 2, 3, 4]] output_shape [8, 1, 1, 1, 1] : tensor<8xf32> into tensor<8x1x1x1x1xf32>
    %13 = tm_tensor.scatter {dimension_map = array<i64: 0, 1, 2, 3>} unique_indices(true) ins(%expanded_9, %concat : tensor<8x1x1x1x1xf32>, tensor<8x4xi64>) outs(%arg0 : tensor<1x2x8x4xf32>) {
    ^bb0(%arg3: f32, %arg4: f32):
      tm_tensor.yield %arg3 : f32
    } -> tensor<1x2x8x4xf32>
    return %13, %13 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
  }
}

// -----

// Index rows and updates that are the graph's inputs: loaded, each row's index
// negative ones counted from the end.
// CHECK-LABEL: def main_kernel_0(in0, in1, out0,
// CHECK:         [[AT:at[0-9]+]] = tl.load(in0 + in0_stride0*((r // 4) % 3), mask=mask).to(tl.int64)
// CHECK-NEXT:    [[AT]] = tl.where([[AT]] < 0, [[AT]] + 6, [[AT]])
// CHECK:         [[NEW:v[0-9]+]] = tl.load(in1 + in1_stride0*((r // 4) % 3) + in1_stride2*(r % 4), mask=mask)
// CHECK-NEXT:    tl.store(out0 + [[AT]]*out0_stride0 + out0_stride1*(r % 4), [[NEW]], mask=mask & ([[AT]] >= 0) & ([[AT]] < 6))
module {
  func.func @main(%arg0: tensor<6x4xf32>, %arg1: tensor<3x1xi64>, %arg2: tensor<3x1x4xf32>) -> tensor<6x4xf32> {
    %0 = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(false) ins(%arg2, %arg1 : tensor<3x1x4xf32>, tensor<3x1xi64>) outs(%arg0 : tensor<6x4xf32>) {
    ^bb0(%new: f32, %old: f32):
      tm_tensor.yield %new : f32
    } -> tensor<6x4xf32>
    return %0 : tensor<6x4xf32>
  }
}

// -----

// An embedding's backward: its scatter adds colliding rows, atomically, each lane one
// element of a row of the gradient (a row masked out where its id is out of range).
// CHECK:         def main_kernel_{{[0-9]+}}(
// CHECK:         [[AT:at[0-9]+]] = tl.load(in0 + in0_stride0*((r // 4) % 3), mask=mask).to(tl.int64)
// CHECK:         tl.device_assert({{.*}}"scatter index out of bounds")
// CHECK:         tl.atomic_add(out0 + [[AT]]*out0_stride0 + out0_stride1*(r % 4), {{v[0-9]+}}, mask=mask & ([[AT]] >= 0) & ([[AT]] < 10), sem='relaxed')
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> ()>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> ()>
module {
  func.func @main(%arg0: tensor<3xi64>, %arg1: tensor<3x4xf32>) -> tensor<10x4xf32> attributes {llvm.emit_c_interface} {
    %c9_i64 = arith.constant 9 : i64
    %c-10_i64 = arith.constant -10 : i64
    %true = arith.constant true
    %cst = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<10x4xf32>
    %cst_1 = arith.constant dense<-1> : tensor<i64>
    %cst_2 = arith.constant dense<10> : tensor<i64>
    %cst_3 = arith.constant dense<0> : tensor<i64>
    %0 = tensor.empty() : tensor<3xi1>
    %1 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel"]} ins(%arg0, %cst_3 : tensor<3xi64>, tensor<i64>) outs(%0 : tensor<3xi1>) {
    ^bb0(%in: i64, %in_6: i64, %out: i1):
      %13 = arith.cmpi sge, %in, %in_6 : i64
      linalg.yield %13 : i1
    } -> tensor<3xi1>
    %2 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel"]} ins(%arg0, %cst_2 : tensor<3xi64>, tensor<i64>) outs(%0 : tensor<3xi1>) {
    ^bb0(%in: i64, %in_6: i64, %out: i1):
      %13 = arith.cmpi slt, %in, %in_6 : i64
      linalg.yield %13 : i1
    } -> tensor<3xi1>
    %3 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%1, %2 : tensor<3xi1>, tensor<3xi1>) outs(%0 : tensor<3xi1>) {
    ^bb0(%in: i1, %in_6: i1, %out: i1):
      %13 = arith.andi %in, %in_6 : i1
      linalg.yield %13 : i1
    } -> tensor<3xi1>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel"]} ins(%arg0, %cst_1 : tensor<3xi64>, tensor<i64>) outs(%0 : tensor<3xi1>) {
    ^bb0(%in: i64, %in_6: i64, %out: i1):
      %13 = arith.cmpi ne, %in, %in_6 : i64
      linalg.yield %13 : i1
    } -> tensor<3xi1>
    %5 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%3, %4 : tensor<3xi1>, tensor<3xi1>) outs(%0 : tensor<3xi1>) {
    ^bb0(%in: i1, %in_6: i1, %out: i1):
      %13 = arith.andi %in, %in_6 : i1
      linalg.yield %13 : i1
    } -> tensor<3xi1>
    %expanded = tensor.expand_shape %5 [[0, 1]] output_shape [3, 1] : tensor<3xi1> into tensor<3x1xi1>
    %6 = tensor.empty() : tensor<3xi64>
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%arg0 : tensor<3xi64>) outs(%6 : tensor<3xi64>) {
    ^bb0(%in: i64, %out: i64):
      %13 = arith.maxsi %in, %c-10_i64 : i64
      %14 = arith.minsi %13, %c9_i64 : i64
      linalg.yield %14 : i64
    } -> tensor<3xi64>
    %8 = tensor.empty() : tensor<3x1xi1>
    %9 = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%expanded : tensor<3x1xi1>) outs(%8 : tensor<3x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %13 = arith.xori %in, %true : i1
      linalg.yield %13 : i1
    } -> tensor<3x1xi1>
    %10 = tensor.empty() : tensor<3x4xf32>
    %11 = linalg.generic {indexing_maps = [#map3, #map4, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%9, %cst, %arg1 : tensor<3x1xi1>, tensor<f32>, tensor<3x4xf32>) outs(%10 : tensor<3x4xf32>) {
    ^bb0(%in: i1, %in_6: f32, %in_7: f32, %out: f32):
      %13 = arith.select %in, %in_6, %in_7 : f32
      linalg.yield %13 : f32
    } -> tensor<3x4xf32>
    %expanded_4 = tensor.expand_shape %7 [[0, 1]] output_shape [3, 1] : tensor<3xi64> into tensor<3x1xi64>
    %expanded_5 = tensor.expand_shape %11 [[0], [1, 2]] output_shape [3, 1, 4] : tensor<3x4xf32> into tensor<3x1x4xf32>
    %12 = tm_tensor.scatter {dimension_map = array<i64: 0>} unique_indices(false) ins(%expanded_5, %expanded_4 : tensor<3x1x4xf32>, tensor<3x1xi64>) outs(%cst_0 : tensor<10x4xf32>) {
    ^bb0(%arg2: f32, %arg3: f32):
      %13 = arith.addf %arg3, %arg2 : f32
      tm_tensor.yield %13 : f32
    } -> tensor<10x4xf32>
    return %12 : tensor<10x4xf32>
  }
}

// RUN: %opt %s --split-input-file -p fuse-into-scatters | filecheck %s

// A static KV cache's update (cache.index_copy_(2, positions, k * 2)), after
// form-kernels: the index rows (iotas and the position) and the updates (k * 2, then
// reshaped to [N, 1, 1, 1, 1]) are kernels of their own, which move into the scatter's.
// CHECK-LABEL: func.func @cache_update
// CHECK:         %[[KERNEL:.+]] = "tkern.kernel"()
// CHECK:           %[[ROWS:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x4xi64>)
// CHECK:             tensor.extract %arg2
// CHECK:           %[[NEW:.+]] = linalg.generic {{.*}} ins(%collapsed : tensor<8xf32>)
// CHECK:           %[[UPDATES:.+]] = tensor.expand_shape %[[NEW]]
// CHECK:           tm_tensor.scatter {{.*}} ins(%[[UPDATES]], %[[ROWS]] :
// CHECK:         sym_name = "main_kernel_2"
// CHECK-NOT:     "tkern.kernel"
// CHECK:         return %[[KERNEL]], %[[KERNEL]]
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @cache_update(%arg0: tensor<1x2x8x4xf32>, %arg1: tensor<1x2x1x4xf32>, %arg2: tensor<1xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> {tessel.new_value_of = 0 : i64}) attributes {llvm.emit_c_interface} {
    %c3 = arith.constant 3 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %cst = arith.constant 2.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %collapsed = tensor.collapse_shape %arg1 [[0, 1, 2, 3]] : tensor<1x2x1x4xf32> into tensor<8xf32>
    %0 = tensor.empty() : tensor<8xf32>
    %1 = "tkern.kernel"() ({
      %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%collapsed : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %6 = arith.mulf %in, %cst : f32
        linalg.yield %6 : f32
      } -> tensor<8xf32>
      "tkern.yield"(%5) : (tensor<8xf32>) -> ()
    }) {sym_name = "main_kernel_0"} : () -> tensor<8xf32>
    %2 = tensor.empty() : tensor<8x4xi64>
    %3 = "tkern.kernel"() ({
      %5 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel"]} outs(%2 : tensor<8x4xi64>) attrs =  {tessel.gathered_concat} {
      ^bb0(%out: i64):
        %6 = linalg.index 0 : index
        %7 = linalg.index 1 : index
        %8 = arith.subi %7, %c1 : index
        %9 = arith.maxsi %8, %c0 : index
        %10 = arith.minsi %9, %c0 : index
        %11 = arith.addi %6, %10 : index
        %12 = arith.divsi %11, %c4 : index
        %13 = arith.remsi %12, %c2 : index
        %14 = arith.index_cast %13 : index to i64
        %extracted = tensor.extract %arg2[%c0] : tensor<1xi64>
        %15 = arith.subi %7, %c3 : index
        %16 = arith.maxsi %15, %c0 : index
        %17 = arith.addi %6, %16 : index
        %18 = arith.remsi %17, %c4 : index
        %19 = arith.index_cast %18 : index to i64
        %20 = arith.cmpi slt, %7, %c3 : index
        %21 = arith.select %20, %extracted, %19 : i64
        %22 = arith.cmpi slt, %7, %c2 : index
        %23 = arith.select %22, %14, %21 : i64
        %24 = arith.cmpi slt, %7, %c1 : index
        %25 = arith.select %24, %c0_i64, %23 : i64
        linalg.yield %25 : i64
      } -> tensor<8x4xi64>
      "tkern.yield"(%5) : (tensor<8x4xi64>) -> ()
    }) {sym_name = "main_kernel_1"} : () -> tensor<8x4xi64>
    %expanded = tensor.expand_shape %1 [[0, 1, 2, 3, 4]] output_shape [8, 1, 1, 1, 1] : tensor<8xf32> into tensor<8x1x1x1x1xf32>
    %4 = "tkern.kernel"() ({
      %5 = tm_tensor.scatter {dimension_map = array<i64: 0, 1, 2, 3>} unique_indices(true) ins(%expanded, %3 : tensor<8x1x1x1x1xf32>, tensor<8x4xi64>) outs(%arg0 : tensor<1x2x8x4xf32>) {
      ^bb0(%arg3: f32, %arg4: f32):
        tm_tensor.yield %arg3 : f32
      } -> tensor<1x2x8x4xf32>
      "tkern.yield"(%5) : (tensor<1x2x8x4xf32>) -> ()
    }) {sym_name = "main_kernel_2"} : () -> tensor<1x2x8x4xf32>
    return %4, %4 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
  }
}


// -----

// The indices and the new keys are returned too: the rows are computed again in the
// scatter kernel, and their kernel stays; the updates stay a kernel of their own.
// CHECK-LABEL: func.func @negative_producers_read_elsewhere
// CHECK:         %[[NEW:.+]] = "tkern.kernel"
// CHECK:         %[[ROWS:.+]] = "tkern.kernel"
// CHECK:         %[[UPDATES:.+]] = tensor.expand_shape %[[NEW]]
// CHECK:         "tkern.kernel"()
// CHECK:           %[[COPY:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x4xi64>)
// CHECK:           tm_tensor.scatter {{.*}} ins(%[[UPDATES]], %[[COPY]] :
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @negative_producers_read_elsewhere(%arg0: tensor<1x2x8x4xf32>, %arg1: tensor<1x2x1x4xf32>, %arg2: tensor<1xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> {tessel.new_value_of = 0 : i64}, tensor<8xf32>, tensor<8x4xi64>) attributes {llvm.emit_c_interface} {
    %c3 = arith.constant 3 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %cst = arith.constant 2.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %collapsed = tensor.collapse_shape %arg1 [[0, 1, 2, 3]] : tensor<1x2x1x4xf32> into tensor<8xf32>
    %0 = tensor.empty() : tensor<8xf32>
    %1 = "tkern.kernel"() ({
      %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%collapsed : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %6 = arith.mulf %in, %cst : f32
        linalg.yield %6 : f32
      } -> tensor<8xf32>
      "tkern.yield"(%5) : (tensor<8xf32>) -> ()
    }) {sym_name = "main_kernel_0"} : () -> tensor<8xf32>
    %2 = tensor.empty() : tensor<8x4xi64>
    %3 = "tkern.kernel"() ({
      %5 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel"]} outs(%2 : tensor<8x4xi64>) attrs =  {tessel.gathered_concat} {
      ^bb0(%out: i64):
        %6 = linalg.index 0 : index
        %7 = linalg.index 1 : index
        %8 = arith.subi %7, %c1 : index
        %9 = arith.maxsi %8, %c0 : index
        %10 = arith.minsi %9, %c0 : index
        %11 = arith.addi %6, %10 : index
        %12 = arith.divsi %11, %c4 : index
        %13 = arith.remsi %12, %c2 : index
        %14 = arith.index_cast %13 : index to i64
        %extracted = tensor.extract %arg2[%c0] : tensor<1xi64>
        %15 = arith.subi %7, %c3 : index
        %16 = arith.maxsi %15, %c0 : index
        %17 = arith.addi %6, %16 : index
        %18 = arith.remsi %17, %c4 : index
        %19 = arith.index_cast %18 : index to i64
        %20 = arith.cmpi slt, %7, %c3 : index
        %21 = arith.select %20, %extracted, %19 : i64
        %22 = arith.cmpi slt, %7, %c2 : index
        %23 = arith.select %22, %14, %21 : i64
        %24 = arith.cmpi slt, %7, %c1 : index
        %25 = arith.select %24, %c0_i64, %23 : i64
        linalg.yield %25 : i64
      } -> tensor<8x4xi64>
      "tkern.yield"(%5) : (tensor<8x4xi64>) -> ()
    }) {sym_name = "main_kernel_1"} : () -> tensor<8x4xi64>
    %expanded = tensor.expand_shape %1 [[0, 1, 2, 3, 4]] output_shape [8, 1, 1, 1, 1] : tensor<8xf32> into tensor<8x1x1x1x1xf32>
    %4 = "tkern.kernel"() ({
      %5 = tm_tensor.scatter {dimension_map = array<i64: 0, 1, 2, 3>} unique_indices(true) ins(%expanded, %3 : tensor<8x1x1x1x1xf32>, tensor<8x4xi64>) outs(%arg0 : tensor<1x2x8x4xf32>) {
      ^bb0(%arg3: f32, %arg4: f32):
        tm_tensor.yield %arg3 : f32
      } -> tensor<1x2x8x4xf32>
      "tkern.yield"(%5) : (tensor<1x2x8x4xf32>) -> ()
    }) {sym_name = "main_kernel_2"} : () -> tensor<1x2x8x4xf32>
    return %4, %4, %1, %3 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<8xf32>, tensor<8x4xi64>
  }
}


// -----

// A gather's gradient (torch-mlir's scatter_add), after form-kernels: one unwrapped
// generic computes each element's index columns and its update; the host would insert
// the columns one by one into a [6, 2] fill. The generic moves into the scatter's
// kernel, and a generic there selects row i's column j; the inserts and the fill go.
// CHECK-LABEL: func.func @gathered_columns
// CHECK-NOT:     tensor.insert_slice
// CHECK:         "tkern.kernel"()
// CHECK:           %[[COLUMNS:.+]]:3 = linalg.generic {{.*}} outs(
// CHECK-NOT:         tessel.kernel
// CHECK:           %[[ROWS:.+]] = linalg.generic {{.*}} ins(%[[COLUMNS]]#0, %[[COLUMNS]]#1 : tensor<6x1xi64>, tensor<6x1xi64>)
// CHECK:             linalg.index 1
// CHECK:             arith.select
// CHECK:           tm_tensor.scatter {{.*}} ins(%[[COLUMNS]]#2, %[[ROWS]] :
// CHECK:             arith.addf
// CHECK-NOT:     "tkern.kernel"
// CHECK:         return
#map = affine_map<(d0) -> (d0, 0)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @gathered_columns(%arg0: tensor<2x3xi64>, %arg1: tensor<2x3xf32>) -> tensor<2x4xf32> attributes {llvm.emit_c_interface} {
    %c3 = arith.constant 3 : index
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<6x1xi64>
    %1 = tensor.empty() : tensor<6xf32>
    %2:3 = linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["parallel"]} outs(%0, %0, %1 : tensor<6x1xi64>, tensor<6x1xi64>, tensor<6xf32>) attrs = {tessel.kernel = "main_kernel_0"} {
    ^bb0(%out: i64, %out_0: i64, %out_1: f32):
      %6 = linalg.index 0 : index
      %7 = arith.remsi %6, %c3 : index
      %8 = arith.divsi %6, %c3 : index
      %extracted = tensor.extract %arg0[%8, %7] : tensor<2x3xi64>
      %extracted_2 = tensor.extract %arg1[%8, %7] : tensor<2x3xf32>
      %9 = arith.index_cast %8 : index to i64
      linalg.yield %9, %extracted, %extracted_2 : i64, i64, f32
    } -> (tensor<6x1xi64>, tensor<6x1xi64>, tensor<6xf32>)
    %3 = tensor.empty() : tensor<6x2xi64>
    %4 = "tkern.kernel"() ({
      %6 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel", "parallel"]} outs(%3 : tensor<6x2xi64>) {
      ^bb0(%out: i64):
        linalg.yield %c0_i64 : i64
      } -> tensor<6x2xi64>
      "tkern.yield"(%6) : (tensor<6x2xi64>) -> ()
    }) {sym_name = "main_kernel_1"} : () -> tensor<6x2xi64>
    %inserted_slice = tensor.insert_slice %2#0 into %4[0, 0] [6, 1] [1, 1] : tensor<6x1xi64> into tensor<6x2xi64>
    %inserted_slice_3 = tensor.insert_slice %2#1 into %inserted_slice[0, 1] [6, 1] [1, 1] : tensor<6x1xi64> into tensor<6x2xi64>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
    %5 = "tkern.kernel"() ({
      %6 = tm_tensor.scatter {dimension_map = array<i64: 0, 1>} unique_indices(false) ins(%2#2, %inserted_slice_3 : tensor<6xf32>, tensor<6x2xi64>) outs(%cst_4 : tensor<2x4xf32>) {
      ^bb0(%arg2: f32, %arg3: f32):
        %7 = arith.addf %arg3, %arg2 : f32
        tm_tensor.yield %7 : f32
      } -> tensor<2x4xf32>
      "tkern.yield"(%6) : (tensor<2x4xf32>) -> ()
    }) {sym_name = "main_kernel_2"} : () -> tensor<2x4xf32>
    return %5 : tensor<2x4xf32>
  }
}

// -----

// The columns' generic is returned too: it stays a kernel, and the scatter's kernel
// reads the columns where it wrote them (still without the inserts).
// CHECK-LABEL: func.func @negative_columns_read_elsewhere
// CHECK:         %[[COLUMNS:.+]]:3 = linalg.generic {{.*}}tessel.kernel = "main_kernel_0"
// CHECK-NOT:     tensor.insert_slice
// CHECK:         "tkern.kernel"()
// CHECK:           %[[ROWS:.+]] = linalg.generic {{.*}} ins(%[[COLUMNS]]#0, %[[COLUMNS]]#1 : tensor<6x1xi64>, tensor<6x1xi64>)
// CHECK:           tm_tensor.scatter {{.*}} ins(%[[COLUMNS]]#2, %[[ROWS]] :
#map = affine_map<(d0) -> (d0, 0)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @negative_columns_read_elsewhere(%arg0: tensor<2x3xi64>, %arg1: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<6x1xi64>) attributes {llvm.emit_c_interface} {
    %c3 = arith.constant 3 : index
    %c0_i64 = arith.constant 0 : i64
    %0 = tensor.empty() : tensor<6x1xi64>
    %1 = tensor.empty() : tensor<6xf32>
    %2:3 = linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["parallel"]} outs(%0, %0, %1 : tensor<6x1xi64>, tensor<6x1xi64>, tensor<6xf32>) attrs = {tessel.kernel = "main_kernel_0"} {
    ^bb0(%out: i64, %out_0: i64, %out_1: f32):
      %6 = linalg.index 0 : index
      %7 = arith.remsi %6, %c3 : index
      %8 = arith.divsi %6, %c3 : index
      %extracted = tensor.extract %arg0[%8, %7] : tensor<2x3xi64>
      %extracted_2 = tensor.extract %arg1[%8, %7] : tensor<2x3xf32>
      %9 = arith.index_cast %8 : index to i64
      linalg.yield %9, %extracted, %extracted_2 : i64, i64, f32
    } -> (tensor<6x1xi64>, tensor<6x1xi64>, tensor<6xf32>)
    %3 = tensor.empty() : tensor<6x2xi64>
    %4 = "tkern.kernel"() ({
      %6 = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel", "parallel"]} outs(%3 : tensor<6x2xi64>) {
      ^bb0(%out: i64):
        linalg.yield %c0_i64 : i64
      } -> tensor<6x2xi64>
      "tkern.yield"(%6) : (tensor<6x2xi64>) -> ()
    }) {sym_name = "main_kernel_1"} : () -> tensor<6x2xi64>
    %inserted_slice = tensor.insert_slice %2#0 into %4[0, 0] [6, 1] [1, 1] : tensor<6x1xi64> into tensor<6x2xi64>
    %inserted_slice_3 = tensor.insert_slice %2#1 into %inserted_slice[0, 1] [6, 1] [1, 1] : tensor<6x1xi64> into tensor<6x2xi64>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
    %5 = "tkern.kernel"() ({
      %6 = tm_tensor.scatter {dimension_map = array<i64: 0, 1>} unique_indices(false) ins(%2#2, %inserted_slice_3 : tensor<6xf32>, tensor<6x2xi64>) outs(%cst_4 : tensor<2x4xf32>) {
      ^bb0(%arg2: f32, %arg3: f32):
        %7 = arith.addf %arg3, %arg2 : f32
        tm_tensor.yield %7 : f32
      } -> tensor<2x4xf32>
      "tkern.yield"(%6) : (tensor<2x4xf32>) -> ()
    }) {sym_name = "main_kernel_2"} : () -> tensor<2x4xf32>
    return %5, %2#0 : tensor<2x4xf32>, tensor<6x1xi64>
  }
}

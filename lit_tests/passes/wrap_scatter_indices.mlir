// RUN: %opt %s --split-input-file -p wrap-scatter-indices | filecheck %s

// Rows of two indices into a [6, 7] tensor: each negative index plus its dim's size
// (column 0 indexes dim 0, of 6; column 1 dim 1, of 7), read by the scatter.
// CHECK-LABEL: func.func @two_index_columns
// CHECK:         %[[WRAPPED:.+]] = linalg.generic
// CHECK:           %[[COLUMN:.+]] = linalg.index 1
// CHECK:           arith.cmpi eq, %[[COLUMN]]
// CHECK:           %[[NEGATIVE:.+]] = arith.cmpi slt
// CHECK:           %[[PLUS:.+]] = arith.addi
// CHECK:           arith.select %[[NEGATIVE]], %[[PLUS]]
// CHECK:         tm_tensor.scatter {{.*}} ins(%{{.*}}, %[[WRAPPED]] : tensor<4x1xf32>, tensor<4x2xi64>)
func.func @two_index_columns(%x: tensor<6x7xf32>, %updates: tensor<4x1xf32>, %rows: tensor<4x2xi64>) -> tensor<6x7xf32> {
  %0 = tm_tensor.scatter {dimension_map = array<i64: 0, 1>} unique_indices(false)
      ins(%updates, %rows : tensor<4x1xf32>, tensor<4x2xi64>) outs(%x : tensor<6x7xf32>) {
  ^bb0(%update: f32, %current: f32):
    tm_tensor.yield %update : f32
  } -> tensor<6x7xf32>
  return %0 : tensor<6x7xf32>
}

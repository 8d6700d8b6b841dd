// RUN: %opt %s --split-input-file -p insert-slices-early | filecheck %s

// A concatenation, generalized, of two values computed in the other order: the chain
// starts with the one computed first, each insert right after its source, so that
// eliminate-empty-tensors can let each producer write its own slice.
// CHECK-LABEL: func.func @concat_of_later_operand_first
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK:         %[[B:.*]] = linalg.generic
// CHECK:         %[[FIRST:.*]] = tensor.insert_slice %[[B]] into %[[EMPTY]][0, 4] [2, 4] [1, 1]
// CHECK:         %[[A:.*]] = linalg.generic
// CHECK:         %[[SECOND:.*]] = tensor.insert_slice %[[A]] into %[[FIRST]][0, 0] [2, 4] [1, 1]
// CHECK-NEXT:    return %[[SECOND]]
func.func @concat_of_later_operand_first(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %init = tensor.empty() : tensor<2x4xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%init : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<2x4xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%init : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.sin %in : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %dest = tensor.empty() : tensor<2x8xf32>
  %0 = tensor.insert_slice %a into %dest[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %1 = tensor.insert_slice %b into %0[0, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// Overlapping slices: the later insert overwrites the earlier one, so the order stays.
// CHECK-LABEL: func.func @negative_overlapping_slices
// CHECK:         %[[DEST:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK-NEXT:    %[[FIRST:.*]] = tensor.insert_slice %arg1 into %[[DEST]][0, 0] [2, 4] [1, 1]
// CHECK-NEXT:    tensor.insert_slice %arg0 into %[[FIRST]][0, 2] [2, 4] [1, 1]
func.func @negative_overlapping_slices(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %dest = tensor.empty() : tensor<2x8xf32>
  %0 = tensor.insert_slice %b into %dest[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  %1 = tensor.insert_slice %a into %0[0, 2] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

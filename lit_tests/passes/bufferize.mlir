// RUN: %opt %s --split-input-file -p bufferize | filecheck %s

// Without pre-bufferized ops the result is written in place: no copy.
// CHECK-LABEL: func.func @in_place
// CHECK-SAME:    (%[[A:.*]]: memref<4xf32>) -> memref<4xf32>
// CHECK-NOT:     memref.copy
// CHECK:         linalg.generic {{.*}}outs(%[[ALLOC:.*]] : memref<4xf32>)
func.func @in_place(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %in, %in : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A buffer handed over through to_tensor (as tm-tensor-bufferize does) switches to
// copy-before-write: the write that would overwrite %t's buffer goes elsewhere.
// CHECK-LABEL: func.func @negative_prebufferized_copies
// CHECK-SAME:    (%[[M:.*]]: memref<4xf32>)
// CHECK:         %[[FRESH:.*]] = memref.alloc
// CHECK:         linalg.fill {{.*}}outs(%[[FRESH]]
// CHECK:         return %[[M]], %[[FRESH]]
func.func @negative_prebufferized_copies(%m: memref<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = bufferization.to_tensor %m restrict : memref<4xf32> to tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return %t, %f : tensor<4xf32>, tensor<4xf32>
}

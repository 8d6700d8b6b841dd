// RUN: %opt %s --split-input-file -p hoist-size-computations | filecheck %s

// A grouped convolution's channels per group (dim / 2), computed after the tensor op
// whose result an expand_shape of that size reshapes: it moves up to its operand.
// CHECK-LABEL: func.func @size_after_producer
// CHECK:         %[[DIM:.*]] = tensor.dim
// CHECK-NEXT:    %[[HALF:.*]] = arith.divsi %[[DIM]], %{{.*}} : index
// CHECK:         linalg.generic
// CHECK:         tensor.expand_shape %{{.*}} output_shape [2, %[[HALF]]]
func.func @size_after_producer(%x: tensor<?xf32>) -> tensor<2x?xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %dim = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%dim) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<?xf32>
  %half = arith.divsi %dim, %c2 : index
  %expanded = tensor.expand_shape %r [[0, 1]] output_shape [2, %half] : tensor<?xf32> into tensor<2x?xf32>
  return %expanded : tensor<2x?xf32>
}

// -----

// A division by a size that a check further up may rule out being 0 stays below it.
// CHECK-LABEL: func.func @negative_division_by_a_size
// CHECK:         cf.assert
// CHECK-NEXT:    arith.divsi
func.func @negative_division_by_a_size(%x: tensor<?xf32>, %y: tensor<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %x, %c0 : tensor<?xf32>
  %divisor = tensor.dim %y, %c0 : tensor<?xf32>
  %nonzero = arith.cmpi ne, %divisor, %c0 : index
  cf.assert %nonzero, "divisor must not be 0"
  %q = arith.divsi %dim, %divisor : index
  return %q : index
}

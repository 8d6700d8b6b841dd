// RUN: %opt %s --split-input-file -p fuse-returned-producers | filecheck %s

#id = affine_map<(d0) -> (d0)>

// SGD's momentum: the new buffer is returned and read by the parameter's update. One
// generic computes both, the buffer's body first; a check that reads only another
// operand of the buffer (a divisor's) reads the buffer's init instead.
// CHECK-LABEL: func.func @momentum
// CHECK-SAME:    (%[[P:.*]]: tensor<8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[INIT]], %[[G]] : tensor<8xf32>, tensor<8xf32>)
// CHECK:         %[[FUSED:.*]]:2 = linalg.generic {{.*}} ins(%[[P]], %[[B]], %[[G]] : {{.*}}) outs(%[[INIT]], %[[INIT]] : {{.*}})
// CHECK:         ^bb0(%[[PIN:.*]]: f32, %[[BIN:.*]]: f32, %[[GIN:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK:           %[[SCALED:.*]] = arith.mulf %[[BIN]], %{{.*}}
// CHECK:           %[[NEW:.*]] = arith.addf %[[SCALED]], %[[GIN]]
// CHECK:           %[[STEP:.*]] = arith.mulf %[[NEW]], %{{.*}}
// CHECK:           %[[PARAM:.*]] = arith.subf %[[PIN]], %[[STEP]]
// CHECK:           linalg.yield %[[PARAM]], %[[NEW]]
// CHECK:         return %[[FUSED]]#0, %[[FUSED]]#1
func.func @momentum(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %m = arith.constant 0.9 : f32
  %lr = arith.constant 0.01 : f32
  %init = tensor.empty() : tensor<8xf32>
  %buf = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%b, %g : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%bi: f32, %gi: f32, %o: f32):
    %s = arith.mulf %bi, %m : f32
    %n = arith.addf %s, %gi : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%buf, %g : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%unread: f32, %gi: f32):
    %nonzero = arith.cmpf one, %gi, %gi : f32
    cf.assert %nonzero, "a check that reads the other operand"
    linalg.yield
  }
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %buf : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%pi: f32, %bi: f32, %o: f32):
    %s = arith.mulf %bi, %lr : f32
    %n = arith.subf %pi, %s : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  return %new, %buf : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (7 - d0)>

// A producer read by two generics, or read at other points than it writes, stays.
// CHECK-LABEL: func.func @negative_two_readers_or_moved_points
// CHECK-COUNT-4: linalg.generic
func.func @negative_two_readers_or_moved_points(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %init = tensor.empty() : tensor<8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%ai: f32, %o: f32):
    %n = arith.addf %ai, %ai : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%xi: f32, %o: f32):
    %n = arith.mulf %xi, %xi : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %z = linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%xi: f32, %o: f32):
    %n = arith.subf %xi, %xi : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%z : tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%zi: f32, %o: f32):
    %n = arith.mulf %zi, %zi : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  return %x, %y, %w : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

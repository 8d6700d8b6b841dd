// RUN: %opt %s --split-input-file -p report-failed-checks | filecheck %s

// A failed check returns early and reports its id; its message is kept on the module.
// CHECK:       module attributes {tessel.check_messages = ["mismatched size for broadcast
// CHECK:       func.func private @tessel_check_failed(i64)
// CHECK-LABEL: func.func @broadcast_check
// CHECK:         %[[OK:.*]] = arith.cmpi eq
// CHECK:         cf.cond_br %[[OK]], ^[[CONTINUE:.*]], ^[[FAIL:.*]]
// CHECK:       ^[[CONTINUE]]:
// CHECK:         memref.store
// CHECK:         return
// CHECK:       ^[[FAIL]]:
// CHECK:         %[[ID:.*]] = arith.constant 0 : i64
// CHECK:         call @tessel_check_failed(%[[ID]])
// CHECK-NEXT:    return
// CHECK-NOT:   cf.assert
func.func @broadcast_check(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %d = memref.dim %a, %c0 : memref<?xf32>
  %ok = arith.cmpi eq, %d, %n : index
  cf.assert %ok, "mismatched size for broadcast"
  %z = arith.constant 0.0 : f32
  memref.store %z, %a[%c0] : memref<?xf32>
  return
}

// -----

// A function with results cannot return early without values: its check stays.
// CHECK-LABEL: func.func @negative_function_with_result
// CHECK:         cf.assert
// CHECK-NOT:   tessel_check_failed
func.func @negative_function_with_result(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %ok = arith.cmpi sge, %n, %c0 : index
  cf.assert %ok, "negative size"
  return %n : index
}

// RUN: %opt %s --split-input-file -p plan-buffers | filecheck %s

// %a dies before %c is born: %c reuses %a's bytes; %b overlaps both, so it sits after.
// CHECK-LABEL: func.func @reuse
// CHECK:         %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8192xi8>
// CHECK:         %[[A:.*]] = memref.view %[[ARENA]][%[[ZERO:.*]]][] : memref<8192xi8> to memref<1024xf32>
// CHECK:         %[[B:.*]] = memref.view %[[ARENA]][%[[OFFSET:.*]]][] : memref<8192xi8> to memref<1024xf32>
// CHECK:         %[[REUSED:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %[[ARENA]][%[[REUSED]]][] : memref<8192xi8> to memref<512xf64>
// CHECK-NOT:     memref.dealloc %[[A]]
// CHECK:         memref.dealloc %[[ARENA]]
// CHECK-NEXT:    return
func.func @reuse(%x: memref<1024xf32>, %y: memref<512xf64>) {
  %a = memref.alloc() : memref<1024xf32>
  memref.copy %x, %a : memref<1024xf32> to memref<1024xf32>
  %b = memref.alloc() : memref<1024xf32>
  memref.copy %a, %b : memref<1024xf32> to memref<1024xf32>
  memref.dealloc %a : memref<1024xf32>
  %c = memref.alloc() : memref<512xf64>
  memref.copy %y, %c : memref<512xf64> to memref<512xf64>
  memref.copy %b, %x : memref<1024xf32> to memref<1024xf32>
  memref.copy %c, %y : memref<512xf64> to memref<512xf64>
  memref.dealloc %b : memref<1024xf32>
  memref.dealloc %c : memref<512xf64>
  return
}

// -----

// Dynamic sizes and i1 buffers keep their own allocations.
// CHECK-LABEL: func.func @negative_dynamic_and_bool
// CHECK-NOT:     memref.view
// CHECK:         memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         memref.alloc() : memref<16xi1>
func.func @negative_dynamic_and_bool(%n: index) {
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc() : memref<16xi1>
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<16xi1>
  return
}

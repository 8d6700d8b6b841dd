// RUN: %opt %s --split-input-file -p restrict-fresh-buffers | filecheck %s

// The buffer is filled before the tensor is first read: restrict is safe.
// CHECK-LABEL: func.func @filled_then_read
// CHECK:         %[[BUF:.*]] = memref.alloc
// CHECK:         bufferization.to_tensor %[[BUF]] restrict
func.func @filled_then_read(%src: memref<4xf32>) -> tensor<4xf32> {
  %buf = memref.alloc() : memref<4xf32>
  %t = bufferization.to_tensor %buf : memref<4xf32> to tensor<4xf32>
  memref.copy %src, %buf : memref<4xf32> to memref<4xf32>
  %r = arith.addf %t, %t : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A write after the first read would be visible through the tensor: no restrict.
// CHECK-LABEL: func.func @negative_written_after_read
// CHECK:         bufferization.to_tensor
// CHECK-NOT:     restrict
func.func @negative_written_after_read(%src: memref<4xf32>) -> tensor<4xf32> {
  %buf = memref.alloc() : memref<4xf32>
  %t = bufferization.to_tensor %buf : memref<4xf32> to tensor<4xf32>
  %r = arith.addf %t, %t : tensor<4xf32>
  memref.copy %src, %buf : memref<4xf32> to memref<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A buffer that came from outside (an argument) may have other aliases: no restrict.
// CHECK-LABEL: func.func @negative_argument_buffer
// CHECK-NOT:     restrict
func.func @negative_argument_buffer(%buf: memref<4xf32>) -> tensor<4xf32> {
  %t = bufferization.to_tensor %buf : memref<4xf32> to tensor<4xf32>
  return %t : tensor<4xf32>
}

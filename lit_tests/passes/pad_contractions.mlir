// RUN: %opt %s --split-input-file -p pad-contractions | filecheck %s
// RUN: %opt %s --split-input-file -p 'pad-contractions{multiple=8 min-multiply-adds=1 max-overhead=2.0 min-intensity=0}' | filecheck %s --check-prefix=SMALL

// 1000x1000x1000 bf16: each dim rounds up to 1008 (+2.4% work): padded, sliced back.
// CHECK-LABEL: func.func @bf16_matmul
// CHECK:         %[[A:.*]] = tensor.pad %{{.*}} low[0, 0] high[8, 8]
// CHECK:         %[[B:.*]] = tensor.pad %{{.*}} low[0, 0] high[8, 8]
// CHECK:         %[[C:.*]] = tensor.pad %{{.*}} low[0, 0] high[8, 8]
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<1008x1008xbf16>, tensor<1008x1008xbf16>) outs(%[[C]]
// CHECK:         tensor.extract_slice %[[MM]][0, 0] [1000, 1000] [1, 1]
func.func @bf16_matmul(%a: tensor<1000x1000xbf16>, %b: tensor<1000x1000xbf16>, %c: tensor<1000x1000xbf16>) -> tensor<1000x1000xbf16> {
  %y = linalg.matmul ins(%a, %b : tensor<1000x1000xbf16>, tensor<1000x1000xbf16>) outs(%c : tensor<1000x1000xbf16>) -> tensor<1000x1000xbf16>
  return %y : tensor<1000x1000xbf16>
}

// -----

// f32 is not a tensor-core type here; already-aligned and tiny matmuls do not pay.
// CHECK-LABEL: func.func @negative_no_padding
// CHECK-NOT:     tensor.pad
// SMALL-LABEL: func.func @negative_no_padding
// SMALL:         tensor.pad {{.*}} high[4, 4]
// SMALL-NOT:     tensor.pad {{.*}}f32
func.func @negative_no_padding(%a: tensor<1000x1000xf32>, %b: tensor<1000x1000xf32>, %c: tensor<1000x1000xf32>,
                               %d: tensor<1024x1024xf16>, %e: tensor<1024x1024xf16>, %f: tensor<1024x1024xf16>,
                               %g: tensor<12x12xf16>, %h: tensor<12x12xf16>, %i: tensor<12x12xf16>)
    -> (tensor<1000x1000xf32>, tensor<1024x1024xf16>, tensor<12x12xf16>) {
  %x = linalg.matmul ins(%a, %b : tensor<1000x1000xf32>, tensor<1000x1000xf32>) outs(%c : tensor<1000x1000xf32>) -> tensor<1000x1000xf32>
  %y = linalg.matmul ins(%d, %e : tensor<1024x1024xf16>, tensor<1024x1024xf16>) outs(%f : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %z = linalg.matmul ins(%g, %h : tensor<12x12xf16>, tensor<12x12xf16>) outs(%i : tensor<12x12xf16>) -> tensor<12x12xf16>
  return %x, %y, %z : tensor<1000x1000xf32>, tensor<1024x1024xf16>, tensor<12x12xf16>
}

// -----

// BERT's MLM head: bf16 operands, an f32 accumulator (narrow-matmul-operands), N = 30522.
// Each operand pads with a zero of its own type; the slice is the result, with no copy
// back into the unpadded accumulator.
// CHECK-LABEL: func.func @half_operands_f32_accumulator
// CHECK:         %[[B:.*]] = tensor.pad %{{.*}} low[0, 0] high[0, 6]
// CHECK:           tensor.yield %{{.*}} : bf16
// CHECK:         %[[C:.*]] = tensor.pad %{{.*}} low[0, 0] high[0, 6]
// CHECK:           tensor.yield %{{.*}} : f32
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%{{.*}}, %[[B]] : tensor<4096x768xbf16>, tensor<768x30528xbf16>) outs(%[[C]] : tensor<4096x30528xf32>)
// CHECK:         %[[R:.*]] = tensor.extract_slice %[[MM]][0, 0] [4096, 30522] [1, 1]
// CHECK-NOT:     bufferization.materialize_in_destination
// CHECK:         return %[[R]]
func.func @half_operands_f32_accumulator(%a: tensor<4096x768xbf16>, %b: tensor<768x30522xbf16>) -> tensor<4096x30522xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4096x30522xf32>
  %c = linalg.fill ins(%zero : f32) outs(%empty : tensor<4096x30522xf32>) -> tensor<4096x30522xf32>
  %y = linalg.matmul ins(%a, %b : tensor<4096x768xbf16>, tensor<768x30522xbf16>) outs(%c : tensor<4096x30522xf32>) -> tensor<4096x30522xf32>
  return %y : tensor<4096x30522xf32>
}

// -----

// The accumulator starts from a widened bias broadcast along the rows (fold-bias-into-gemm):
// the bias is padded, not the f32 broadcast, so the host still calls addmm with it.
// CHECK-LABEL: func.func @bias_broadcast_accumulator
// CHECK:         %[[BIAS:.*]] = tensor.pad %{{.*}} low[0] high[6]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tensor.yield %{{.*}} : bf16
// CHECK-NEXT:    } : tensor<30522xbf16> to tensor<30528xbf16>
// CHECK:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[BIAS]] : tensor<30528xbf16>) outs(%{{.*}} : tensor<4096x30528xf32>)
// CHECK:           arith.extf
// CHECK:         linalg.matmul {{.*}} outs(%[[INIT]] : tensor<4096x30528xf32>)
// CHECK-NOT:     tensor.pad
func.func @bias_broadcast_accumulator(%a: tensor<4096x768xbf16>, %b: tensor<768x30522xbf16>, %bias: tensor<30522xbf16>) -> tensor<4096x30522xf32> {
  %empty = tensor.empty() : tensor<4096x30522xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<30522xbf16>) outs(%empty : tensor<4096x30522xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %wide = arith.extf %in : bf16 to f32
    linalg.yield %wide : f32
  } -> tensor<4096x30522xf32>
  %y = linalg.matmul ins(%a, %b : tensor<4096x768xbf16>, tensor<768x30522xbf16>) outs(%c : tensor<4096x30522xf32>) -> tensor<4096x30522xf32>
  return %y : tensor<4096x30522xf32>
}

// -----

// An accumulator whose padding its producer would not compute as zeros (0 + 1) is
// padded itself; operands of two element types are not padded.
// CHECK-LABEL: func.func @negative_producer_not_zero_preserving
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK:         tensor.pad %{{.*}} low[0, 0] high[0, 6]
// CHECK:           tensor.yield %{{.*}} : f32
// CHECK-NEXT:    } : tensor<4096x30522xf32> to tensor<4096x30528xf32>
// CHECK:         linalg.matmul {{.*}} -> tensor<4096x30528xf32>
// CHECK:         linalg.matmul {{.*}} -> tensor<4096x30522xf32>
func.func @negative_producer_not_zero_preserving(%a: tensor<4096x768xbf16>, %b: tensor<768x30522xbf16>, %x: tensor<30522xf32>,
                                                 %f: tensor<4096x768xf16>) -> (tensor<4096x30522xf32>, tensor<4096x30522xf32>) {
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<4096x30522xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<30522xf32>) outs(%empty : tensor<4096x30522xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = arith.addf %in, %one : f32
    linalg.yield %e : f32
  } -> tensor<4096x30522xf32>
  %y = linalg.matmul ins(%a, %b : tensor<4096x768xbf16>, tensor<768x30522xbf16>) outs(%c : tensor<4096x30522xf32>) -> tensor<4096x30522xf32>
  %z = linalg.matmul ins(%f, %b : tensor<4096x768xf16>, tensor<768x30522xbf16>) outs(%empty : tensor<4096x30522xf32>) -> tensor<4096x30522xf32>
  return %y, %z : tensor<4096x30522xf32>, tensor<4096x30522xf32>
}

// -----

// MLP-Mixer's token mixing in a training step: K = 196 is ragged, but the gemm is
// memory-bound (129 multiply-adds per element moved): a pad would cost more than the
// aligned kernel gains.
// CHECK-LABEL: func.func @negative_memory_bound
// CHECK-NOT:     tensor.pad
func.func @negative_memory_bound(%a: tensor<24576x196xbf16>, %b: tensor<196x384xbf16>, %c: tensor<24576x384xbf16>) -> tensor<24576x384xbf16> {
  %y = linalg.matmul ins(%a, %b : tensor<24576x196xbf16>, tensor<196x384xbf16>) outs(%c : tensor<24576x384xbf16>) -> tensor<24576x384xbf16>
  return %y : tensor<24576x384xbf16>
}

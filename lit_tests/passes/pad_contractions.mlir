// RUN: %opt %s --split-input-file -p pad-contractions | filecheck %s
// RUN: %opt %s --split-input-file -p 'pad-contractions{multiple=8 min-multiply-adds=1 max-overhead=2.0}' | filecheck %s --check-prefix=SMALL

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

// RUN: %opt %s --split-input-file -p "duplicate-cheap-producers" | filecheck %s
// RUN: %opt %s --split-input-file -p "duplicate-cheap-producers,func.func(linalg-fuse-elementwise-ops)" | filecheck %s --check-prefix=FUSED

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>

// A bf16 -> f32 cast read by a row sum and by an element-wise subtraction: each reader
// gets a copy of the cast, which elementwise fusion then fuses into it, so no f32 copy
// of the activation is written.
// CHECK-LABEL: func.func @cast_read_twice
// CHECK-COUNT-2: arith.extf
// FUSED-LABEL: func.func @cast_read_twice
// FUSED-COUNT-2: linalg.generic
// FUSED-NOT:     linalg.generic
// FUSED:         return
func.func @cast_read_twice(%x: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%wide : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %centered = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.subf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %centered : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A reader behind a reshape gets its copy reshaped the same way.
// CHECK-LABEL: func.func @read_through_a_reshape
// CHECK-COUNT-2: arith.extf
// CHECK-COUNT-2: tensor.expand_shape
func.func @read_through_a_reshape(%x: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x2x4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %split = tensor.expand_shape %wide [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x2x4xf32>
  %abs = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%split : tensor<4x2x4xf32>) outs(%e3 : tensor<4x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    linalg.yield %a : f32
  } -> tensor<4x2x4xf32>
  %e4 = tensor.empty() : tensor<4x2x4xf32>
  %abs2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%split : tensor<4x2x4xf32>) outs(%e4 : tensor<4x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.sqrt %in : f32
    linalg.yield %a : f32
  } -> tensor<4x2x4xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%abs, %abs2 : tensor<4x2x4xf32>, tensor<4x2x4xf32>) outs(%e3 : tensor<4x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x2x4xf32>
  return %neg, %sum : tensor<4x8xf32>, tensor<4x2x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// A transpose is not copied: its readers would each read across rows.
// CHECK-LABEL: func.func @negative_transpose
// CHECK-COUNT-1: arith.extf
// CHECK-NOT:     arith.extf
func.func @negative_transpose(%x: tensor<8x4xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %abs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %neg, %abs : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A cast also returned, or read by a gemm, keeps its one kernel.
// CHECK-LABEL: func.func @negative_returned
// CHECK-COUNT-1: arith.extf
// CHECK-NOT:     arith.extf
func.func @negative_returned(%x: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  return %wide, %neg : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#unit = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#channels = affine_map<(d0, d1, d2, d3) -> (d1)>

// A batch norm in a bf16 training step: the f32 copy of the image, and x - mean (the
// per-channel mean read as [1, C, 1, 1], through (0, d1, 0, 0): a broadcast), each read
// by the variance's sum of squares and by the normalization. Readers are copied first,
// so the cast then has a copy per copy of x - mean; fused, neither f32 image is
// written: each reader reads the bf16 image.
// CHECK-LABEL: func.func @centered_image_read_twice
// CHECK-COUNT-2: arith.subf
// FUSED-LABEL: func.func @centered_image_read_twice
// FUSED:         linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x8x4x4xbf16>, tensor<1x8x1x1xf32>)
// FUSED:         linalg.generic {{.*}}ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x4x4xbf16>, tensor<1x8x1x1xf32>, tensor<8xf32>)
// FUSED-NOT:     linalg.generic
// FUSED:         return
func.func @centered_image_read_twice(%x: tensor<2x8x4x4xbf16>, %mean: tensor<1x8x1x1xf32>) -> (tensor<8xf32>, tensor<2x8x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x4x4xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x8x4x4xbf16>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x8x4x4xf32>
  %centered = linalg.generic {indexing_maps = [#id, #unit, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%wide, %mean : tensor<2x8x4x4xf32>, tensor<1x8x1x1xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<2x8x4x4xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %squares = linalg.generic {indexing_maps = [#id, #channels], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%centered : tensor<2x8x4x4xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %normalized = linalg.generic {indexing_maps = [#id, #channels, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%centered, %squares : tensor<2x8x4x4xf32>, tensor<8xf32>) outs(%e : tensor<2x8x4x4xf32>) {
  ^bb0(%in: f32, %v: f32, %out: f32):
    %n = arith.mulf %in, %v : f32
    linalg.yield %n : f32
  } -> tensor<2x8x4x4xf32>
  return %squares, %normalized : tensor<8xf32>, tensor<2x8x4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>

// A ReLU's backward mask (gradient where the activation is positive) read by a batch
// norm's backward sum and by its dx: two copies read 4 values a point, where the
// mask's kernel and its readers read 2 + 2 and write 1. Fused, no mask is written.
// CHECK-LABEL: func.func @mask_of_two_inputs_read_twice
// CHECK-COUNT-2: arith.select
// FUSED-LABEL: func.func @mask_of_two_inputs_read_twice
// FUSED-COUNT-2: linalg.generic
// FUSED-NOT:     linalg.generic
// FUSED:         return
func.func @mask_of_two_inputs_read_twice(%g: tensor<1024x64xf32>, %y: tensor<1024x64xf32>) -> (tensor<64xf32>, tensor<1024x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x64xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %y : tensor<1024x64xf32>, tensor<1024x64xf32>) outs(%e : tensor<1024x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %positive = arith.cmpf ogt, %b, %zero : f32
    %m = arith.select %positive, %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1024x64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%mask : tensor<1024x64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %dx = linalg.generic {indexing_maps = [#id, #cols, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %sum : tensor<1024x64xf32>, tensor<64xf32>) outs(%e : tensor<1024x64xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.subf %in, %s : f32
    linalg.yield %d : f32
  } -> tensor<1024x64xf32>
  return %sum, %dx : tensor<64xf32>, tensor<1024x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Of two inputs, read by three: copies would read 6 values a point against the mask's
// 2 + 1 + 3. And a small one keeps its kernel, which may hold other small work.
// CHECK-LABEL: func.func @negative_mask_read_three_times
// CHECK-COUNT-1: arith.select
// CHECK-NOT:     arith.select
// CHECK-LABEL: func.func @negative_small_mask_read_twice
// CHECK-COUNT-1: arith.select
// CHECK-NOT:     arith.select
func.func @negative_mask_read_three_times(%g: tensor<1024x64xf32>, %y: tensor<1024x64xf32>) -> (tensor<1024x64xf32>, tensor<1024x64xf32>, tensor<1024x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x64xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %y : tensor<1024x64xf32>, tensor<1024x64xf32>) outs(%e : tensor<1024x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %positive = arith.cmpf ogt, %b, %zero : f32
    %m = arith.select %positive, %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1024x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask : tensor<1024x64xf32>) outs(%e : tensor<1024x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<1024x64xf32>
  %abs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask : tensor<1024x64xf32>) outs(%e : tensor<1024x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    linalg.yield %a : f32
  } -> tensor<1024x64xf32>
  %sqrt = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask : tensor<1024x64xf32>) outs(%e : tensor<1024x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.sqrt %in : f32
    linalg.yield %r : f32
  } -> tensor<1024x64xf32>
  return %neg, %abs, %sqrt : tensor<1024x64xf32>, tensor<1024x64xf32>, tensor<1024x64xf32>
}

func.func @negative_small_mask_read_twice(%g: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %y : tensor<4x64xf32>, tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %positive = arith.cmpf ogt, %b, %zero : f32
    %m = arith.select %positive, %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x64xf32>
  %abs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mask : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    linalg.yield %a : f32
  } -> tensor<4x64xf32>
  return %neg, %abs : tensor<4x64xf32>, tensor<4x64xf32>
}

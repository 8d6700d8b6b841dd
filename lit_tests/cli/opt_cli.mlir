// RUN: %opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: %opt %s --split-input-file -p canonicalize,cse | filecheck %s
// RUN: cat %s | %opt --split-input-file --pass-pipeline='builtin.module(canonicalize)' | filecheck %s
// RUN: %opt %s --split-input-file -p canonicalize --mlir-print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER
// RUN: not %opt %s --split-input-file -p no-such-pass 2>&1 | filecheck %s --check-prefix=BADPASS

// LIST: tessel passes:
// LIST: check-contract {{.*}}target's input contract
// LIST: distinct-results
// LIST: named pipelines:
// LIST: cpu {{.*}}linalg-on-tensors -> LLVM dialect
// AFTER: IR Dump After Canonicalizer
// BADPASS: error: cannot parse pass pipeline

// Upstream passes run on every chunk.
// CHECK-LABEL: func.func @folds
// CHECK-NEXT:    %[[C:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    return %[[C]]
func.func @folds() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  return %c : i32
}

// -----

// CHECK-LABEL: func.func @negative_nothing_to_fold
// CHECK-NEXT:    %[[S:.*]] = arith.addi %arg0, %arg1
// CHECK-NEXT:    return %[[S]]
func.func @negative_nothing_to_fold(%a: i32, %b: i32) -> i32 {
  %c = arith.addi %a, %b : i32
  return %c : i32
}

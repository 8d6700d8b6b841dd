// RUN: %opt %s --split-input-file -p internalize-functions | filecheck %s

// Entry points (C interface) stay external; helpers the host never calls become internal.
// CHECK-LABEL: llvm.func internal @helper
// CHECK-LABEL: llvm.func @entry
// CHECK-SAME:    llvm.emit_c_interface
// CHECK-LABEL: llvm.func @_mlir_ciface_entry
// CHECK-LABEL: llvm.func @negative_declaration
// CHECK-NOT:     internal
module {
  llvm.func @helper(%x: i64) -> i64 {
    llvm.return %x : i64
  }
  llvm.func @entry(%x: i64) -> i64 attributes {llvm.emit_c_interface} {
    %y = llvm.call @helper(%x) : (i64) -> i64
    llvm.return %y : i64
  }
  llvm.func @_mlir_ciface_entry(%x: i64) -> i64 {
    %y = llvm.call @entry(%x) : (i64) -> i64
    llvm.return %y : i64
  }
  // A declaration (defined elsewhere, e.g. BLAS) keeps external linkage.
  llvm.func @negative_declaration(i64) -> i64
}

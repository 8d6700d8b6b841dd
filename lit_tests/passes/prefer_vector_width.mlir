// RUN: %opt %s --split-input-file -p prefer-vector-width | filecheck %s
// RUN: %opt %s --split-input-file -p 'prefer-vector-width{width=256}' | filecheck %s --check-prefix=NARROW

// Defined functions get the vectorizer hint; the option sets the width.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME:    passthrough = {{\[}}["prefer-vector-width", "512"]]
// NARROW-LABEL: llvm.func @kernel
// NARROW-SAME:    passthrough = {{\[}}["prefer-vector-width", "256"]]
// Declarations have no code to vectorize: no hint.
// CHECK-LABEL: llvm.func @negative_declaration
// CHECK-NOT:     passthrough
module {
  llvm.func @kernel() {
    llvm.return
  }
  llvm.func @negative_declaration(i64)
}

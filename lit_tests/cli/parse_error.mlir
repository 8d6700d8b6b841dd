// RUN: not %opt %s --split-input-file -p canonicalize 2>&1 | filecheck %s

// Parse errors carry the file's own line and column, also after a split marker.
func.func @fine() {
  return
}

// -----

func.func @broken() {
  // CHECK: parse_error.mlir:[[# @LINE + 1]]:10: error: use of undeclared SSA value name
  return %undefined : i32
}

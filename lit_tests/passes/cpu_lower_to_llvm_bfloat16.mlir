// RUN: %opt %s -p cpu-lower-to-llvm | filecheck %s

// Without AVX-512 BF16, LLVM lowers an f32 -> bf16 truncation to a call of
// compiler-rt's `__truncsfbf2`, which the JIT cannot find (the graph then ran eagerly),
// and promotes bf16 arithmetic to f32 with such a truncation after it. The CPU
// pipeline computes bf16 arithmetic in f32 and rounds to nearest even with integer
// ops, the same code on every x86 CPU.

// CHECK-LABEL: llvm.func internal @round_and_remainder
// CHECK-NOT:     fptrunc
// CHECK-NOT:     frem {{.*}} : bf16
// CHECK:         llvm.frem {{.*}} : f32
// CHECK-NOT:     fptrunc
// CHECK:         llvm.return
func.func @round_and_remainder(%x: f32, %y: bf16, %z: bf16) -> (bf16, bf16) {
  %rounded = arith.truncf %x : f32 to bf16
  %remainder = arith.remf %y, %z : bf16
  return %rounded, %remainder : bf16, bf16
}

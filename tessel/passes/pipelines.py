"""tessel's named pipelines. `tessel-opt -p NAME` replays exactly what the backend runs."""

from tessel.passes.registry import register_pipeline

register_pipeline(
    "torch-to-linalg",
    "builtin.module(func.func(torch-match-quantized-custom-ops),"
    "torchdynamo-export-to-torch-backend-pipeline{ extra-library=},"
    "torch-backend-to-linalg-on-tensors-backend-pipeline)",
    "torch dialect from the FX importer -> linalg-on-tensors (torch-mlir's lowering)",
)

register_pipeline(
    "cpu-fuse",
    "builtin.module(check-contract{target=cpu},"
    "func.func(linalg-generalize-named-ops),"
    "func.func(linalg-fuse-elementwise-ops),"
    "canonicalize,distinct-results)",
    "check the CPU contract, fuse elementwise producers into consumers, one buffer per result",
)

register_pipeline(
    "cpu-bufferize",
    "builtin.module("
    "func.func(refback-generalize-tensor-pad),"
    "func.func(refback-generalize-tensor-concat),"
    "func.func(tm-tensor-bufferize),"
    "one-shot-bufferize{copy-before-write bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    # Results become caller-allocated out-params: the host program hands torch-owned
    # output buffers to the kernel instead of copying results out of malloc'd memory.
    "buffer-results-to-out-params{modify-public-functions hoist-static-allocs hoist-dynamic-allocs},"
    "func.func(buffer-deallocation-pipeline),"
    "convert-bufferization-to-memref)",
    "tensors -> memrefs, results -> out-params, deallocation of temporaries",
)

register_pipeline(
    "cpu-lower-to-llvm",
    "builtin.module("
    "func.func(tm-tensor-to-loops),"
    "func.func(refback-munge-memref-copy),"
    "func.func(convert-linalg-to-loops),"
    "func.func(lower-affine),"
    "convert-scf-to-cf,"
    "func.func(refback-expand-ops-for-llvm),"
    "func.func(arith-expand),"
    "func.func(convert-math-to-llvm),"
    "convert-math-to-libm,"
    "expand-strided-metadata,"
    "finalize-memref-to-llvm,"
    "lower-affine,"
    "func.func(convert-arith-to-llvm),"
    "convert-vector-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "convert-complex-to-llvm,"
    "reconcile-unrealized-casts)",
    "memref loops -> LLVM dialect, ready for the ExecutionEngine",
)

register_pipeline(
    "cpu",
    "builtin.module(cpu-fuse,cpu-bufferize,cpu-lower-to-llvm)",
    "the CPU target's whole path: linalg-on-tensors -> LLVM dialect",
)

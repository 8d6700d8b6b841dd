"""tessel's named pipelines. `tessel-opt -p NAME` replays exactly what the backend runs."""

from tessel.passes.contractions import ATOMIC_ADD_TYPES
from tessel.passes.registry import register_pipeline

register_pipeline(
    "torch-to-linalg",
    # Native ops become calls first, which torch-mlir's lowering leaves as they are.
    "builtin.module(call-native-ops,func.func(torch-match-quantized-custom-ops),"
    "torchdynamo-export-to-torch-backend-pipeline{ extra-library=},"
    "bitcast-dtype-views,"
    # torch-backend-to-linalg-on-tensors-backend-pipeline, spelled out: its last pass,
    # the contract check, would reject those calls (verify-linalg-on-tensors).
    "func.func(torch-restructure-non-constant-axes),func.func(torch-fuse-quantized-ops),"
    "func.func(convert-torch-to-tmtensor{allow-non-finites=true}),func.func(canonicalize),"
    "func.func(convert-torch-to-linalg{allow-non-finites=true}),func.func(canonicalize),"
    "func.func(convert-torch-to-scf),func.func(convert-torch-to-arith),"
    "func.func(convert-torch-to-tensor),convert-torch-conversion-to-mlprogram,"
    "func.func(memref-expand),func.func(canonicalize),"
    "func.func(resolve-shaped-type-result-dims),func.func(cse),"
    "torch-func-backend-type-conversion,func.func(canonicalize),"
    "func.func(torch-finalizing-backend-type-conversion),"
    "verify-linalg-on-tensors)",
    "torch dialect from the FX importer -> linalg-on-tensors (torch-mlir's lowering)",
)

# Elementwise fusion (kept away from contractions) and row-loop fusion, shared by the
# cpu and gpu pipelines; `fuse_tiles` is the fuse-tiles step of each (on the GPU,
# preceded by split-reductions).
def _fusion(fuse_tiles: str, keep: str = "matmul,batch_matmul", producers: str = "",
            fused: str = "", unit_dims_folded: str = "") -> str:
    return (
        f"generalize-named-ops{{keep={keep}}},trim-window-inputs,slice-elementwise-producers,"
        f"{producers}"
        "outline-contractions,"
        "hoist-size-computations,"
        f"func.func(linalg-fuse-elementwise-ops),{fused}fuse-returned-producers,"
        "inline,symbol-dce,"
        # Unit dims (keepdim reductions) would make output maps non-projections: tiling
        # cannot slice those, so they go first.
        f"func.func(linalg-fold-unit-extent-dims),{unit_dims_folded}reshape-fills,canonicalize,"
        f"{fuse_tiles},canonicalize,cse,"
    )

register_pipeline(
    "cpu-fuse",
    "builtin.module(check-contract{target=cpu},"
    # A tied embedding's rows scatter onto the LM head's gradient, not into zeros.
    "scatter-onto-addends,wrap-scatter-indices,"
    # Depthwise convolutions on a transformer's rows run channels-last, on the rows.
    "depthwise-channels-last{min-pixels=197},"
    # f32 convolutions stay named: PyTorch's oneDNN kernels run them (library-calls),
    # 1x1 ones too (their gemms lost on two threads); so do depthwise ones on maps of
    # at most 14x14, where loops of their own (contiguous-innermost-loop) lost to
    # oneDNN; on larger maps they won. The others become im2col + gemm.
    "convolutions-to-gemm{library-elements=f32 library-depthwise-pixels=196 library-pointwise=1},"
    # oneDNN's convolutions run channels-last; element-wise fusion folds the transposes
    # around them into their neighbours, once the other readers of a transposed image
    # read its copy.
    "channels-last-convolutions,"
    "fold-transposes-into-matmul,canonicalize,read-transposed-copies,"
    # Gemms stay whole BLAS calls on the CPU: one multi-threaded call per gemm measured
    # ~10% faster than one single-threaded call per row block with its epilogue fused
    # (MLP, 2 cores); the GPU's gemm kernels fuse their epilogues.
    + _fusion("fuse-tiles{gemm-epilogues=false}") +
    # A broadcast operand's square roots and divisions (a batch norm's scale) once per
    # channel, not per point: after fusion, which would fuse them back in.
    "overwrite-zero-accumulators,hoist-broadcast-invariants,tile-for-threads,"
    "contiguous-innermost-loop,"
    "hold-half-in-f32,approximate-math,reassociate-reductions,reciprocal-division,distinct-results,form-kernels,"
    "write-inputs-in-place)",
    "check the CPU contract, fuse elementwise chains and reductions into row loops, tile for threads",
)

register_pipeline(
    "cpu-bufferize",
    "builtin.module(inline-kernels,"
    "func.func(refback-generalize-tensor-pad),"
    "func.func(refback-generalize-tensor-concat),"
    # Write tiles straight into their destination instead of a temporary + copy (a
    # concatenation's operands too, once its slices are inserted as they are computed).
    "insert-slices-early,eliminate-empty-tensors,"
    "func.func(tm-tensor-bufferize),"
    "bufferize,"
    # Transposes walk 8x8 blocks, tiled on buffers (transpose_in_blocks.py says why).
    "transpose-in-blocks,"
    # Big tile loops run on all cores (each thread owns its temporaries); the others
    # run in order. Temporaries are then allocated once per thread, not per tile.
    "func.func(scf-forall-to-parallel),"
    "outline-parallel-loops,"
    "func.func(scf-parallel-for-to-nested-fors),"
    "func.func(buffer-loop-hoisting),"
    "library-calls,"
    # Results become caller-allocated out-params: the host program hands torch-owned
    # output buffers to the kernel instead of copying results out of malloc'd memory.
    "distinct-results,"
    "buffer-results-to-out-params{modify-public-functions hoist-static-allocs hoist-dynamic-allocs},"
    "func.func(buffer-deallocation-pipeline),"
    # No plan-buffers here: views into one arena hide from LLVM that temporaries do
    # not alias, and vectorization suffers (the transformer layer ran far slower with it).
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
    "report-failed-checks,"
    # Neither torch-mlir's erf expansion nor libm has bf16/f16 math: it runs in f32,
    # rounded once, as eager's opmath does.
    "func.func(math-extend-to-supported-types),"
    "func.func(refback-expand-ops-for-llvm),"
    "truncate-through-f32,"
    # Without AVX-512 BF16, LLVM rounds f32 to bf16 by calling compiler-rt's
    # __truncsfbf2, which the JIT cannot find: bf16 arithmetic runs in f32 and rounds
    # to nearest even in integer ops instead, the same code on every x86 CPU.
    "func.func(arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}),"
    "func.func(arith-expand{include-bf16=true}),"
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
    "reconcile-unrealized-casts,"
    "launch-with-openmp,"
    "internalize-functions,"
    "prefer-vector-width)",
    "memref loops -> LLVM dialect, ready for the ExecutionEngine",
)

register_pipeline(
    "cpu",
    "builtin.module(cpu-fuse,cpu-bufferize,cpu-lower-to-llvm)",
    "the CPU target's whole path: linalg-on-tensors -> LLVM dialect",
)

# The largest gemm (m*n*k) that fuse-gemm-epilogues makes a tl.dot template: a template
# masks ragged sizes itself, so with templates only larger gemms are padded.
_TEMPLATE_MAX_MULTIPLY_ADDS = 1 << 32


def gpu_pipeline(templates: bool, atomic_add_types: tuple[str, ...] = ATOMIC_ADD_TYPES) -> str:
    """The gpu pipeline's text: with gemm templates (max-autotune), and with scatters
    that add their updates as kernels in `atomic_add_types` (form-kernels)."""
    padding = (f"pad-contractions{{min-multiply-adds={_TEMPLATE_MAX_MULTIPLY_ADDS + 1}}},"
               if templates else "pad-contractions,")
    epilogues = f"fuse-gemm-epilogues{{max-multiply-adds={_TEMPLATE_MAX_MULTIPLY_ADDS}}},"
    return (
        "builtin.module(check-contract{target=gpu},scatter-onto-addends,"
        # Convolutions stay named: cuDNN (through aten) runs them, not an im2col + gemm.
        "narrow-matmul-operands,fold-transposes-into-matmul,fold-bias-into-gemm,"
        "convolution-bias-after,canonicalize,"
        + padding + "canonicalize,"
        # A product that elementwise fusion fused into its sum, a matrix times a vector,
        # is a reduction, not a gemm. Reductions split once elementwise fusion has put
        # their producers in them, before fuse-tiles tiles the partial results by rows.
        + _fusion("vector-products-as-reductions,"
                  "split-reductions,fuse-tiles{gemm-epilogues=false tile-leading-dims=true},"
                  # After CSE has merged the reads that sibling reductions share.
                  "canonicalize,cse,fuse-sibling-reductions",
                  keep="matmul,batch_matmul,conv_2d_nchw_fchw,conv_2d_ngchw_gfchw,"
                       "depthwise_conv_2d_nchw_chw",
                  # Concats as generics fuse with their neighbours into kernels; the CPU
                  # target copies them (no measurement has shown it gains there). Cheap
                  # producers of several readers are fused into each of them.
                  producers="concat-as-gather,inline-gathered-producers,"
                            "duplicate-cheap-producers,",
                  # Gathers inline their producers again once fused: a chain of
                  # generics can read fewer tensors as one (max pooling's indices,
                  # computed again from its int8 offsets). Values computed from
                  # indices alone, once fused, are computed again in each reader's
                  # kernel instead of loaded.
                  # After elementwise fusion, whose folding of reshapes into their
                  # readers would expand collapsed producers again.
                  fused="inline-gathered-producers,recompute-index-values,"
                        "func.func(linalg-fuse-elementwise-ops),"
                        "collapse-elementwise-producers,",
                  # A norm of one token's row is a row kernel too.
                  unit_dims_folded="whole-reductions-as-rows,") +
        f"form-kernels{{atomic-add-types={','.join(atomic_add_types)}}},fuse-into-scatters,"
        + (epilogues if templates else "")
        + "choose-gpu-blocks,fuse-horizontally,write-inputs-in-place{kernel-checks-abort=true},"
        "read-slices-in-place)")


register_pipeline(
    "gpu",
    gpu_pipeline(templates=False),
    "the GPU target's kernel formation: fused kernels with Triton block sizes; gemms "
    "are library calls (cuBLAS through aten)",
)

# Gemm templates cost compile time: Triton builds a tl.dot template several times more
# slowly than the GPT-2 block's other kernels. In the full GPU benchmarks, the block's
# first call beat Inductor's without templates and fell behind it with one. So, as
# Inductor does, only max-autotune builds them.
register_pipeline(
    "gpu-max-autotune",
    gpu_pipeline(templates=True),
    "the gpu pipeline, plus fuse-gemm-epilogues: gemms that its cost rule picks become "
    "tl.dot templates with their element-wise neighbours (mode='max-autotune')",
)

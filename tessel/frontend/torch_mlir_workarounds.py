"""torch-mlir lowerings that compute something other than eager does, and what tessel
does instead. Each entry names its upstream report (or says there is none yet) and the
condition under which it goes away. Then delete the entry and the code it names, and
run the test or sweep it names to confirm that upstream now computes what eager does.

Three kinds of workaround:
- `eager`: the op runs eagerly (prepare_graph refuses it, naming the reason);
- `pytorch`: PyTorch's own decomposition of the op replaces torch-mlir's lowering;
- `rewrite`: tessel's decomposition in lowerable_decompositions.py (for some inputs;
  with `eager_otherwise`, the inputs it leaves run eagerly).

Ops that torch-mlir cannot lower at all are gaps, not wrong answers, and are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

aten = torch.ops.aten

NOT_REPORTED = "not reported upstream yet"


@dataclass(frozen=True)
class Workaround:
    ops: tuple                 # op overload packets
    kind: str                  # "eager", "pytorch" or "rewrite"
    wrong: str                 # what torch-mlir's lowering computes
    upstream: str              # the issue or PR, or NOT_REPORTED
    goes_away_when: str
    eager_otherwise: bool = False


WORKAROUNDS = (
    Workaround(
        (aten.logcumsumexp,), "rewrite",
        "torch-mlir lowers it as log(cumsum(exp(x))), which overflows to inf where eager "
        "does not",
        "llvm/torch-mlir#4748 (open: a scan of a stable logaddexp)",
        "the torch-mlir wheel setup.sh installs contains #4748; the OpInfo sweep's "
        "logcumsumexp then passes compiled without the (quadratic) rewrite",
        eager_otherwise=True),
    Workaround(
        (aten._embedding_bag, aten._embedding_bag_forward_only), "eager",
        "torch-mlir's lowering gives wrong sums (per_sample_weights)", NOT_REPORTED,
        "upstream's lowering passes the OpInfo sweep's nn.functional.embedding_bag"),
    Workaround(
        (aten.gelu,), "pytorch",
        "gelu(approximate='tanh') takes 0.797724 for sqrt(2/pi) (0.7978846): a relative "
        "error of 1e-3 in fp32",
        f"{NOT_REPORTED} (the constant is in the lowering llvm/torch-mlir#2941 added)",
        "upstream's constant is sqrt(2/pi) to float precision; test_opinfo_subset's "
        "nn.functional.gelu then passes without the decomposition"),
    Workaround(
        (aten.norm,), "pytorch",
        "norm.Scalar sums fp16 squares in fp16 (inf) and takes a symbolic p as "
        "sum(|x|^p)^(1/p) alone", NOT_REPORTED,
        "upstream accumulates half precision in f32 and keeps p's special cases"),
    Workaround(
        (aten.maximum, aten.minimum, aten.clamp, aten.clamp_min, aten.clamp_max,
         aten.hardtanh), "rewrite",
        "compare-and-select (cmpf ult/ugt, then select) drops a NaN on one side, where "
        "eager's result is NaN",
        f"{NOT_REPORTED} (the clamp lowering of llvm/torch-mlir#2718)",
        "upstream lowers them to arith.maximumf/minimumf; test_faults' NaN cases then "
        "pass without the rewrites"),
    Workaround(
        (aten.isfinite, aten.eq), "rewrite",
        "eq(x, x) folds to true, so NaN compares equal to itself (and isfinite, "
        "decomposed through x == x, calls NaN finite)", NOT_REPORTED,
        "upstream folds eq(x, x) only for non-float x"),
    Workaround(
        (aten.scatter_reduce,), "rewrite",
        "an integer 'mean' divides toward zero (-2.5 becomes -2, eager's is -3)",
        NOT_REPORTED, "upstream floors integer means"),
    Workaround(
        (aten.topk,), "rewrite",
        "topk ranks NaN below every number; eager ranks it above", NOT_REPORTED,
        "upstream's topk orders NaN as sort does"),
    Workaround(
        (aten.convolution,), "rewrite",
        "a transposed convolution whose padding exceeds dilation * (kernel - 1), with a "
        "symbolic kernel size, pads its input by a negative amount (createTransposedInput"
        "Padding crops only where that amount folds to a negative constant)",
        NOT_REPORTED,
        "upstream picks cropping or padding at run time; test_wrong_answers' transposed "
        "convolution then passes without transposed_convolution_cropped"),
)


def unsound_lowerings() -> dict:
    """op overload -> why it runs eagerly, for prepare_graph."""
    return {packet.default: workaround.wrong
            for workaround in WORKAROUNDS
            if workaround.kind == "eager" or workaround.eager_otherwise
            for packet in workaround.ops}


def decomposed_by_pytorch() -> list:
    """The op packets whose PyTorch decomposition replaces torch-mlir's lowering."""
    return [packet for workaround in WORKAROUNDS if workaround.kind == "pytorch"
            for packet in workaround.ops]

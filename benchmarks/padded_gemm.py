"""What pad-contractions buys an LM head of ragged vocabulary on the GPU: a half gemm
[M, K] x [K, N] with N not a multiple of 16 (GPT-2's 50257, BERT's 30522, DeBERTa-v2's
128100), timed unpadded, with N padded to a multiple of 16 (the slice of the result a
view), and padded with the slice copied out contiguous (what a returned result costs:
frontend/traced_outputs.py lays it out as eager's), with and without a bias (addmm);
and Inductor's compile of the unpadded product (its pad_mm pads where it pays), with the
strides of the result it returns. Then gemms whose ragged K is an activation's width
(MLP-Mixer's token mixing in a training step), memory-bound: unpadded, and with x padded
at each call, the pad timed with the product.

    python -m benchmarks.padded_gemm        # on a CUDA machine

prints the median of 30 timed calls of each, in milliseconds (CUDA events).
"""

from __future__ import annotations

import functools
import statistics

import torch
import torch.nn.functional as F

# (M, K, N): 8 x 512 tokens through the suite's LM heads.
SHAPES = [(4096, 768, 50257), (4096, 768, 30522), (4096, 768, 50265), (4096, 1024, 30522),
          (4096, 1536, 128100)]
# (M, K, N) with K ragged: mixer_b16_224's token-mixing gemms at batch 32 (and their
# multiply-adds per element moved: 129, below pad-contractions' min-intensity).
RAGGED_K_SHAPES = [(24576, 196, 384), (6144, 196, 384)]
MULTIPLE = 16
CALLS = 30


def milliseconds(call) -> float:
    for _ in range(5):
        call()
    times = []
    for _ in range(CALLS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
            columns: int | None = None) -> torch.Tensor:
    """x @ weight.t() (+ bias), its first `columns` columns copied out contiguous."""
    result = x @ weight.t() if bias is None else torch.addmm(bias, x, weight.t())
    return result if columns is None else result[:, :columns].contiguous()


def main() -> None:
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16; ms, median of {CALLS}")
    for m, k, n in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        weight = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        extra = -n % MULTIPLE
        padded_weight = F.pad(weight, (0, 0, 0, extra))
        for bias in (None, torch.randn(n, device="cuda", dtype=torch.bfloat16)):
            padded_bias = None if bias is None else F.pad(bias, (0, extra))
            unpadded = milliseconds(functools.partial(product, x, weight, bias))
            padded = milliseconds(functools.partial(product, x, padded_weight, padded_bias))
            copied = milliseconds(functools.partial(product, x, padded_weight, padded_bias, n))
            inductor = torch.compile(product)
            stride = inductor(x, weight, bias).stride()
            compiled = milliseconds(functools.partial(inductor, x, weight, bias))
            print(f"  {m} x {k} x {n}{'' if bias is None else ' + bias'}: unpadded "
                  f"{unpadded:.3f}, padded {padded:.3f}, padded and copied out {copied:.3f}, "
                  f"Inductor {compiled:.3f} (result strides {stride})")

    for m, k, n in RAGGED_K_SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        weight = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        padded_weight = F.pad(weight, (0, -k % MULTIPLE))
        unpadded = milliseconds(functools.partial(product, x, weight, None))
        padded = milliseconds(lambda: product(F.pad(x, (0, -k % MULTIPLE)), padded_weight, None))
        print(f"  {m} x {k} x {n}: unpadded {unpadded:.3f}, x padded at each call {padded:.3f}")


if __name__ == "__main__":
    main()

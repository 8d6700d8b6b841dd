"""Host-side cost of the calls a Triton host program makes, in microseconds per call
(mean over 2000 calls after 100 warm-up calls; the GPU runs behind, unsynchronized):
a Triton kernel with 6 tensors and 24 strides launched through the JIT and through
its compiled launcher, buffer allocation with and without a memory format, and a
convolution through F.conv2d and torch.convolution.

The figures quoted in targets/triton/launcher.py and host_program.py (43 against 10
us per launch, 6.5 against 4.3 us per allocation, 24.5 against 22.9 us per 1x1
convolution) came from an earlier copy of these measurements on an H100 (torch
2.11.0+cu130, triton 3.6.0, 2026-11-22).

Usage (CUDA only):
    python -m benchmarks.host_costs
"""

from __future__ import annotations

import time
from typing import Callable

import torch
import triton
import triton.language as tl
from triton.runtime import driver

CALLS = 2000
WARM_UP = 100


@triton.jit
def _five_input_sum(a, b, c, d, e, out,
                    a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3,
                    e0, e1, e2, e3, o0, o1, o2, o3, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < 1024
    total = (tl.load(a + i * a3, mask=mask) + tl.load(b + i * b3, mask=mask)
             + tl.load(c + i * c3, mask=mask) + tl.load(d + i * d3, mask=mask)
             + tl.load(e + i * e3, mask=mask))
    tl.store(out + i * o3, total, mask=mask)


def microseconds_per_call(call: Callable[[], object]) -> float:
    for _ in range(WARM_UP):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        call()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / CALLS * 1e6


def main() -> None:
    tensors = [torch.randn(1, 1, 32, 32, device="cuda") for _ in range(6)]
    arguments = tensors + [s for t in tensors for s in t.stride()]
    compiled = _five_input_sum[(1,)](*arguments, BLOCK=1024, num_warps=4)
    stream = driver.active.get_current_stream(driver.active.get_current_device())
    # The call JITFunction.run makes once it has found the kernel (see launcher.py).
    direct = (compiled.run, compiled.function, compiled.packed_metadata)
    image = torch.randn(16, 256, 32, 32, device="cuda").to(memory_format=torch.channels_last)
    weight = torch.randn(64, 256, 1, 1, device="cuda").to(memory_format=torch.channels_last)
    shape, channels_last_strides = (16, 64, 32, 32), (65536, 1, 2048, 64)
    costs = {
        "Triton launch through the JIT": lambda: _five_input_sum[(1,)](
            *tensors, *[s for t in tensors for s in t.stride()], BLOCK=1024, num_warps=4),
        "Triton launch, compiled launcher": lambda: direct[0](
            1, 1, 1, stream, direct[1], direct[2], None, None, None, *arguments, 1024),
        "torch.empty, channels_last": lambda: torch.empty(
            shape, device="cuda", memory_format=torch.channels_last),
        "torch.empty_strided": lambda: torch.empty_strided(
            shape, channels_last_strides, device="cuda"),
        "F.conv2d, 1x1 256->64": lambda: torch.nn.functional.conv2d(
            image, weight, stride=(1, 1), padding=(0, 0), dilation=(1, 1)),
        "torch.convolution, same": lambda: torch.convolution(
            image, weight, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
    }
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}; us per call, mean of {CALLS}")
    for name, call in costs.items():
        print(f"{name:36s} {microseconds_per_call(call):7.2f}")


if __name__ == "__main__":
    main()

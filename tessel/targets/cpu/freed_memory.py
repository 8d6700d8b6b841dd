"""Freed memory stays with the process while the CPU target runs compiled code.

The JIT-compiled code allocates its temporaries (memref.alloc: malloc, often on OpenMP's
worker threads) and frees them at the end of every call. glibc hands freed memory at the
top of a heap back to the kernel once it exceeds its trim threshold, and serves blocks
above its mmap threshold with a fresh mapping each time: either way the next call
touches new pages, and the kernel zeroes every one on its first touch: small conv
nets spent about half of a call in page faults, and eager PyTorch, whose allocations go
through the same malloc, did in some processes too (benchmarks/README.md, "Model suite
on the CPU", tenth session, has the counts and times).

So the first compile of the CPU target sets glibc's `mallopt`: no block gets a mapping
of its own (glibc still maps one where its heaps cannot grow), and up to `KEPT_BYTES`
of freed memory at a heap's top stay mapped for the next call. Raising the mmap
threshold instead is not enough: it stops at 32 MiB, and hf_segformer's decode head
frees larger blocks. The cost is memory the process keeps. That is the process's malloc
policy, as jemalloc or tcmalloc preloaded would set one, so
`TESSEL_KEEP_FREED_MEMORY=0` leaves it alone. Other C libraries (no `mallopt`) are
left alone too.
"""

from __future__ import annotations

import ctypes
import functools
import os

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
# Freed memory a heap keeps at its top: a call's temporaries of the suite's models
# (hf_segformer frees more than 256 MiB at once).
KEPT_BYTES = 1 << 30


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory, once per process; whether it does."""
    if os.environ.get("TESSEL_KEEP_FREED_MEMORY", "1") == "0":
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    return all(mallopt(parameter, value) for parameter, value in (
        (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, KEPT_BYTES)))

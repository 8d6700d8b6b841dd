"""The per-kernel profile of CPU-compiled graphs (options={"profile_kernels": True}).

The `time-kernels` pass makes the compiled code call `tessel_kernel_timer(id)` at the
start of its entry point (id -1) and after each kernel; the time between a mark and the
one before it is that kernel's. Marks of every graph compiled with the option add up
here, by graph and kernel, until `reset()`.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass

from tessel.passes.time_kernels import START_MARK

# void tessel_kernel_timer(int64_t id)
TIMER_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64)


@dataclass
class KernelTime:
    graph: str
    label: str
    calls: int = 0
    seconds: float = 0.0


_times: dict[tuple[str, int], KernelTime] = {}


def times() -> list[KernelTime]:
    """Every timed kernel so far, the costliest first."""
    return sorted(_times.values(), key=lambda t: t.seconds, reverse=True)


def reset() -> None:
    _times.clear()


def callback(graph: str, labels: list[str]):
    """A TIMER_CALLBACK for one graph's compiled code (keep it alive as long as that)."""
    last = [0]

    def mark(mark_id: int) -> None:
        now = time.perf_counter_ns()
        if mark_id != START_MARK:
            entry = _times.get((graph, mark_id))
            if entry is None:
                entry = _times[(graph, mark_id)] = KernelTime(graph, labels[mark_id])
            entry.calls += 1
            entry.seconds += (now - last[0]) * 1e-9
        # Charged from here: the callback's own cost falls to the kernel before.
        last[0] = time.perf_counter_ns()

    return TIMER_CALLBACK(mark)

"""What a process's first Triton kernel lookup needs, prepared on a thread while Dynamo
traces: Triton's key of its own sources, which every compile and cache lookup includes
(computed once per process, it hashes libtriton: 0.2-0.4 s on the H100 host, with the
GIL released), and the modules that the JIT imports when it first binds arguments
(Triton 3.6's Gluon front end: 0.1-0.15 s). In a warm start, where every kernel comes
from the cache, these were most of tessel's part of a small graph's first call.

The first launch of a host program waits for the thread rather than redo its work:
`functools.lru_cache`, which holds Triton's key, does not make a second caller wait for
the first.
"""

from __future__ import annotations

import importlib
import threading

_thread: threading.Thread | None = None


def _prepare() -> None:
    from triton.runtime.cache import triton_key

    triton_key()
    try:
        importlib.import_module("triton.experimental.gluon")
    except ImportError:  # a Triton without Gluon binds arguments without it
        pass


def start() -> None:
    """Start preparing, once per process."""
    global _thread
    if _thread is None:
        _thread = threading.Thread(target=_prepare, name="tessel-triton-warm-up", daemon=True)
        _thread.start()


def wait() -> None:
    """Return once the preparation started by `start` (if any) is done."""
    if _thread is not None:
        _thread.join()

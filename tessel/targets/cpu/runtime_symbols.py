"""Native functions that JIT-compiled CPU code may call, resolved from torch's libraries.

The `library-calls` pass emits calls to BLAS gemm (`sgemm_`, `dgemm_`); torch's CPU
library bundles MKL and exports them. The JIT does not see symbols of libraries that
Python loaded privately, so their addresses are registered with each engine.
"""

from __future__ import annotations

import ctypes
import functools
import pathlib

import torch

from tessel import ir

BLAS_SYMBOLS = ("sgemm_", "dgemm_")


@functools.cache
def _torch_cpu_library() -> ctypes.CDLL:
    library_dir = pathlib.Path(torch.__file__).parent / "lib"
    return ctypes.CDLL(str(next(library_dir.glob("libtorch_cpu.*"))))


@functools.cache
def symbol_addresses() -> dict[str, int]:
    """Address of every runtime symbol this torch build provides."""
    library = _torch_cpu_library()
    addresses = {}
    for name in BLAS_SYMBOLS:
        try:
            addresses[name] = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
        except AttributeError:
            continue
    return addresses


def register(engine: ir.ExecutionEngine, called: set[str]) -> None:
    """Register the runtime symbols among `called`; the process resolves the rest (libc,
    libm). A BLAS symbol this torch build lacks is a clear error."""
    available = symbol_addresses()
    for name in called & set(BLAS_SYMBOLS):
        if name not in available:
            raise RuntimeError(f"this torch build does not export {name!r}, which the "
                               "compiled code calls (library-calls pass)")
        engine.raw_register_runtime(name, ctypes.c_void_p(available[name]))

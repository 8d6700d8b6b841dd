"""Native functions that JIT-compiled CPU code may call, resolved from torch's libraries.

The `library-calls` pass emits calls to BLAS gemm (`sgemm_`, `dgemm_`); torch's CPU
library bundles MKL and exports them. `launch-with-openmp` emits calls to GNU OpenMP,
the runtime torch's own CPU kernels use (its libgomp). The JIT does not see symbols of
libraries that Python loaded privately, so their addresses are registered with each
engine.
"""

from __future__ import annotations

import ctypes
import functools
import pathlib

import torch

from tessel import ir
from tessel.passes.launch_with_openmp import OPENMP_DECLARATIONS
from tessel.passes.report_failed_checks import CHECK_FAILED

# symbol -> (library file pattern in torch/lib, the pass whose code calls it)
RUNTIME_SYMBOLS = {
    "sgemm_": ("libtorch_cpu.*", "library-calls"),
    "dgemm_": ("libtorch_cpu.*", "library-calls"),
    **{name: ("libgomp*", "launch-with-openmp") for name in OPENMP_DECLARATIONS},
}


@functools.cache
def _torch_library(pattern: str) -> ctypes.CDLL | None:
    """One of torch's own shared libraries (already loaded by `import torch`)."""
    library_dir = pathlib.Path(torch.__file__).parent / "lib"
    path = next(library_dir.glob(pattern), None)
    return ctypes.CDLL(str(path)) if path is not None else None


@functools.cache
def symbol_addresses() -> dict[str, int]:
    """Address of every runtime symbol this torch build provides."""
    addresses = {}
    for name, (pattern, _) in RUNTIME_SYMBOLS.items():
        library = _torch_library(pattern)
        if library is not None and hasattr(library, name):
            addresses[name] = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
    return addresses


# void tessel_check_failed(int64_t id): called by compiled code for a failed check.
CHECK_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64)


def register(engine: ir.ExecutionEngine, called: set[str], report_check) -> None:
    """Register the runtime symbols among `called`, and `report_check` (a CHECK_CALLBACK)
    as tessel_check_failed; the process resolves the rest (libc, libm). A runtime
    symbol this torch build lacks is a clear error."""
    if CHECK_FAILED in called:
        engine.raw_register_runtime(CHECK_FAILED, ctypes.cast(report_check, ctypes.c_void_p))
    available = symbol_addresses()
    for name in called & set(RUNTIME_SYMBOLS):
        if name not in available:
            raise RuntimeError(f"this torch build does not export {name!r}, which the "
                               f"compiled code calls ({RUNTIME_SYMBOLS[name][1]} pass)")
        engine.raw_register_runtime(name, ctypes.c_void_p(available[name]))

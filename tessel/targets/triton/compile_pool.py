"""Triton kernel compiles on a pool of worker processes.

Triton's front end (Python AST to TTIR) holds the GIL, so threads overlap only its
native stages, and processes overlap all of it: on densenet121's 186 distinct kernels
(benchmarks/parallel_compile.py), processes compiled about twice as fast as threads,
with their start counted in (benchmarks/results/parallel_compile_cuda.md).

A worker compiles a kernel into Triton's on-disk cache and returns nothing. The parent
then compiles the same specialization itself, through the JIT, and finds the binary in
the cache. Only the kernels module's path and each launch's specialization cross the
process boundary, in the JSON form that the JIT hands its cache hook and that
`JITFunction.preload` reads. The parent's compile stays the one of record: a kernel
that a worker fails to compile is compiled again in the parent, which reports the error
as it would without a pool.

A worker is a process of its own, `python -m tessel.targets.triton.compile_pool`,
started like the pass-pipeline worker (compile_worker.py), not by multiprocessing: a
spawned child would first re-run the user's script, which need not guard its top level
with `if __name__ == "__main__"`. It has no GPU context: it imports Triton but neither
torch nor MLIR's bindings, and compiles through a driver that reports the parent's
device and target and launches nothing. The pool starts when the Triton target starts
compiling a graph: the workers import Triton and compile a first kernel (a process's
first compile also hashes Triton's own files) while the pass pipeline runs, at a lower
priority (nice 10) than the parent, whose pipeline they wait for. A kernel goes to
the first worker that is ready, or to a thread of the parent, which compiles alongside.

A worker's cache keys must be the parent's. Triton keys a compile by the version of
ptxas that it reads once per process, and then runs the ptxas that TRITON_PTXAS_PATH
names at each compile. Inductor sets that variable at its first compile (to torch's
ptxas): a parent that compiled before keys by Triton's own ptxas, and workers started
after by torch's, so the parent missed every kernel they compiled and compiled it
again (the GPT-2 block's 6 kernels, after Inductor had compiled in the same process,
all compiled a second time on the parent's threads). A worker takes the parent's
version for its keys (Triton's TRITON_MOCK_PTX_VERSION knob, set in the worker only)
and, like the parent, runs the ptxas that its environment names.

TESSEL_COMPILE_PROCESSES sets the number of workers (default: one per core, at most
32); 0 compiles on threads of the parent only.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import logging
import os
import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas_version
from triton.compiler import ASTSource
from triton.runtime.driver import driver

from tessel.worker_process import WorkerCrash, WorkerProcess, serve

log = logging.getLogger(__name__)

# A kernel's compile takes seconds; a worker silent for this long is stopped.
_COMPILE_TIMEOUT_S = 300.0


def worker_count() -> int:
    """TESSEL_COMPILE_PROCESSES, or one worker per core (at most 32)."""
    setting = os.environ.get("TESSEL_COMPILE_PROCESSES")
    if setting is None:
        return min(os.cpu_count() or 1, 32)
    try:
        return max(int(setting), 0)
    except ValueError:
        raise ValueError(f"tessel: TESSEL_COMPILE_PROCESSES={setting!r} is not a number of "
                         "processes (0 compiles on threads only)") from None


def load_kernels(path: Path):
    """Import a generated kernels module from its file (Triton reads @triton.jit sources
    from files), under a name that its content's digest in the file name makes unique:
    the parent and the workers give the JIT the same function, with the same cache key."""
    spec = importlib.util.spec_from_file_location(f"tessel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CompileOnlyDriver:
    """What Triton's JIT asks of its driver to compile a specialization (the device
    index, its target), with no GPU behind it: a worker compiles, never launches."""

    def __init__(self, device: int, target):
        self.device, self.target = device, target

    def get_current_device(self) -> int:
        return self.device

    def get_current_target(self):
        return self.target

    def get_current_stream(self, device: int) -> int:
        return 0


def specializations(launches) -> list[tuple[object, str, object, tuple]]:
    """(kernel, specialization JSON, launcher, arguments) of each distinct kernel
    compile that `launches` (launchers with their arguments) need, from the JIT's cache
    hook, which sees each compile before it happens and here cancels it."""
    found: dict[str, tuple] = {}
    launch = None

    def record(*, compile, **_) -> bool:
        found.setdefault(compile["specialization_data"], launch)
        return True  # compile nothing now

    knobs = triton.knobs.runtime
    previous, knobs.jit_cache_hook = knobs.jit_cache_hook, record
    try:
        for launch in launches:
            launch[0].warm_up(launch[1])
    finally:
        knobs.jit_cache_hook = previous
    return [(launcher.kernel, data, launcher, args)
            for data, (launcher, args) in found.items()]


class CompilePool:
    """Worker processes that compile kernels for `target` into Triton's on-disk cache."""

    def __init__(self, workers: int, target):
        # A worker compiles a first kernel for the target while it starts.
        environment = {"TESSEL_COMPILE_TARGET": json.dumps(
            [target.backend, target.arch, target.warp_size]),
            "TESSEL_PTXAS_VERSION": get_ptxas_version(target.arch)}
        self.workers = [WorkerProcess("tessel.targets.triton.compile_pool", environment,
                                      announces_ready=True) for _ in range(workers)]

    def start(self) -> None:
        """Start every worker now, without waiting for them."""
        for worker in self.workers:
            worker.start()

    def compile(self, launches, parent_threads: int = 1) -> int:
        """Compile the kernels that `launches` need into Triton's cache; the number of
        compiles that failed (the parent's JIT compiles those again, and reports them).
        Each worker takes kernels once it has started; until then, and alongside,
        `parent_threads` threads of the parent compile them too, so that a pool still
        starting does not hold the compile up."""
        device = driver.active.get_current_device()
        pending: queue.SimpleQueue = queue.SimpleQueue()
        for specialization in specializations(launches):
            pending.put(specialization)
        failures: list[str] = []

        def next_kernel():
            try:
                return pending.get_nowait()
            except queue.Empty:
                return None

        def on_worker(worker: WorkerProcess) -> None:
            try:
                while not pending.empty() and not worker.ready(0.02):
                    pass
            except WorkerCrash as crash:
                failures.append(str(crash))
                return
            while (kernel := next_kernel()) is not None:
                request = {"path": kernel[0].fn.__code__.co_filename,
                           "function": kernel[0].__name__, "specialization": kernel[1],
                           "device": device, "cache_dir": triton.knobs.cache.dir}
                try:
                    answer = worker.request(request, _COMPILE_TIMEOUT_S)
                    if not answer["ok"]:
                        failures.append(answer["error"])
                except WorkerCrash as crash:
                    failures.append(str(crash))

        def in_parent() -> None:
            while (kernel := next_kernel()) is not None:
                try:
                    kernel[2].warm_up(kernel[3])
                except Exception as error:  # noqa: BLE001 -- compiled again, and reported, later
                    failures.append(f"{type(error).__name__}: {error}")

        with ThreadPoolExecutor(len(self.workers) + parent_threads) as threads:
            for worker in self.workers:
                threads.submit(on_worker, worker)
            for _ in range(parent_threads):
                threads.submit(in_parent)
        for error in failures[:1]:
            log.debug("tessel: %d kernel compiles failed; the parent's JIT compiles them "
                      "again. The first: %s", len(failures), error)
        return len(failures)

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


_pool: CompilePool | None = None


def shared_pool() -> CompilePool | None:
    """The process's pool, its workers started on first use; None with
    TESSEL_COMPILE_PROCESSES=0."""
    global _pool
    if _pool is None and worker_count() > 0:
        _pool = CompilePool(worker_count(), driver.active.get_current_target())
        _pool.start()
        atexit.register(_pool.close)
    return _pool


@functools.cache
def _kernels_module(path: str):
    return load_kernels(Path(path))


@triton.jit
def _first_kernel(pointer):
    tl.store(pointer, 0)


def _compile(request: dict) -> None:
    triton.knobs.cache.dir = request["cache_dir"]
    driver.set_active(CompileOnlyDriver(request["device"], driver.active.target))
    kernel = getattr(_kernels_module(request["path"]), request["function"])
    kernel.preload(request["specialization"])


def _serve() -> None:
    # While the workers start, the parent runs the pass pipeline, which they wait for.
    os.nice(10)
    # The parent's cache keys name the ptxas version it read first (see above).
    triton.knobs.nvidia.mock_ptx_version = os.environ["TESSEL_PTXAS_VERSION"]
    # A process's first compile also hashes Triton's own files and sets up the backend:
    # done here, before the worker says it is ready.
    target = GPUTarget(*json.loads(os.environ["TESSEL_COMPILE_TARGET"]))
    driver.set_active(CompileOnlyDriver(0, target))
    triton.compile(ASTSource(_first_kernel, {"pointer": "*fp32"}), target=target)
    serve(_answer, announce_ready=True)


def _answer(request: dict) -> dict:
    try:
        _compile(request)
        return {"ok": True}
    except Exception as error:  # noqa: BLE001 -- any failure: the parent compiles it
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


if __name__ == "__main__":
    _serve()

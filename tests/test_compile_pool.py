"""The Triton target's compile pool (targets/triton/compile_pool.py), without a GPU: its
worker processes compile kernels for sm_90 into Triton's on-disk cache, and the parent's
own JIT compile of the same launch then finds them there (the same cache key), which is
what makes the workers' work count."""

import os
import subprocess
import sys

import pytest

from tessel.targets.triton import compile_pool

KERNELS = '''\
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit
def broken(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), undefined_name)
'''


# Run in a process of its own: Triton, imported here with TRITON_INTERPRET=1 (conftest),
# keeps interpreting its own library functions.
CHECKS = f"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler.errors import CompilationError
from triton.runtime.driver import driver

from tessel.targets.triton import compile_pool
from tessel.targets.triton.launcher import KernelLauncher

directory = Path(sys.argv[1])
triton.knobs.cache.dir = str(directory / "triton-cache")
driver.set_active(compile_pool.CompileOnlyDriver(0, GPUTarget("cuda", 90, 32)))
(directory / "kernels_test.py").write_text({KERNELS!r})
kernels = compile_pool.load_kernels(directory / "kernels_test.py")


def binaries():
    return sorted(Path(triton.knobs.cache.dir).rglob("add_one.cubin"))


launcher = KernelLauncher(kernels.add_one, (4,), 128, num_warps=4)
x, y = torch.zeros(512), torch.zeros(512)
# n=500 and n=512 specialize differently (Triton specializes ints divisible by 16); the
# repeated launch needs no compile of its own.
launches = [(launcher, (x, y, 500)), (launcher, (x, y, 512)), (launcher, (x, y, 500))]
assert len(compile_pool.specializations(launches)) == 2
pool = compile_pool.CompilePool(2, GPUTarget("cuda", 90, 32))
pool.start()
assert all(worker.ready(120) for worker in pool.workers)
assert pool.compile(launches, parent_threads=0) == 0
compiled_by_workers = binaries()
assert len(compiled_by_workers) == 2, compiled_by_workers
for launcher_, args in launches:
    assert launcher_.warm_up(args) is not None
assert binaries() == compiled_by_workers, "the parent compiled a kernel again"

broken = KernelLauncher(kernels.broken, (1,), 128, num_warps=4)
assert pool.compile([(broken, (x,))], parent_threads=0) == 1
try:
    broken.warm_up((x,))
    raise AssertionError("the parent compiled a broken kernel")
except CompilationError as error:
    assert "undefined_name" in str(error)
# The parent's own thread takes kernels too, alongside the workers.
launcher.configure(256, 4, None)
assert pool.compile([(launcher, (x, y, 500))], parent_threads=1) == 0
assert len(binaries()) == 3
pool.close()

# A variable naming another ptxas, set once the parent has read its ptxas version (as
# Inductor sets one at its first compile), is seen by workers started later: their
# cache keys must still be the parent's. This ptxas is Triton's, with another version.
real = get_ptxas(90).path
version = subprocess.check_output([real, "--version"], text=True)
other = directory / "ptxas"
lines = ["#!/bin/sh", 'if [ "$1" = --version ]; then',
         "  printf '%s' " + shlex.quote(version + "another build"),
         "else", "  exec " + shlex.quote(real) + ' "$@"', "fi", ""]
other.write_text(chr(10).join(lines))
other.chmod(0o755)
os.environ["TRITON_PTXAS_PATH"] = os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = str(other)
later = compile_pool.CompilePool(1, GPUTarget("cuda", 90, 32))
later.start()
launcher.configure(512, 4, None)
assert later.compile([(launcher, (x, y, 500))], parent_threads=0) == 0
compiled_by_workers = binaries()
assert len(compiled_by_workers) == 4
launcher.warm_up((x, y, 500))
assert binaries() == compiled_by_workers, "the parent compiled a kernel again"
later.close()
print("checked")
"""


def test_workers_compile_what_the_parent_then_finds_in_the_cache(tmp_path):
    """Two specializations of one kernel compile in two workers; the parent's JIT then
    finds both binaries in Triton's cache. A kernel that fails to compile in a worker
    fails again in the parent, which raises Triton's error."""
    environment = dict(os.environ, TRITON_INTERPRET="0")
    result = subprocess.run([sys.executable, "-c", CHECKS, str(tmp_path)], env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "checked", result.stderr[-3000:]


def test_the_number_of_workers_is_a_number(monkeypatch):
    monkeypatch.setenv("TESSEL_COMPILE_PROCESSES", "0")
    assert compile_pool.worker_count() == 0
    monkeypatch.setenv("TESSEL_COMPILE_PROCESSES", "many")
    with pytest.raises(ValueError, match="TESSEL_COMPILE_PROCESSES='many'"):
        compile_pool.worker_count()

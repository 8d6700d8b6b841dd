"""What importing tessel does: nothing but defining things."""

import subprocess
import sys


def test_importing_the_backend_starts_no_process():
    """torch.compile resolves backend="mlir" by importing tessel's backend module; the
    compile worker (and on a GPU machine, Triton's hashing thread) start at the first
    compile instead."""
    code = ("import tessel.frontend.backend, tessel.compile_worker as worker\n"
            "print(worker._worker._process is None)")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert printed == "True"

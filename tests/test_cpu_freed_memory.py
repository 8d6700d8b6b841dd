"""Freed memory stays with the process on the CPU target (targets/cpu/freed_memory.py):
a compiled call reuses the pages of the last one's temporaries instead of faulting in
new ones. Each case runs in a fresh process, since the setting is the process's."""

import os
import subprocess
import sys

import pytest

# Minor page faults per call of three convolution + batch norm + ReLU6 layers on
# 2x32x112x112 images, after warm-up.
FAULTS_PER_CALL = """
import resource, torch
torch.manual_seed(0)
model = torch.nn.Sequential(*[m for _ in range(3) for m in (
    torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU6())]).eval()
x = torch.randn(2, 32, 112, 112)
compiled = torch.compile(model, backend="mlir")
with torch.no_grad():
    for _ in range(3):
        torch.testing.assert_close(compiled(x), model(x))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        compiled(x)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 5)
"""


def _faults_per_call(keep: str) -> int:
    env = os.environ | {"TESSEL_KEEP_FREED_MEMORY": keep}
    result = subprocess.run([sys.executable, "-c", FAULTS_PER_CALL], env=env, check=True,
                            capture_output=True, text=True)
    return int(result.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_compiled_call_touches_no_new_pages():
    """Each call's 3 MB temporaries came back as fresh, zeroed pages: about 8,000
    faults a call with TESSEL_KEEP_FREED_MEMORY=0 on the development VM."""
    assert _faults_per_call("1") < 1000


def test_the_setting_is_left_alone_when_asked():
    code = ("import os; os.environ['TESSEL_KEEP_FREED_MEMORY'] = '0'\n"
            "from tessel.targets.cpu import freed_memory\n"
            "assert freed_memory.keep_freed_memory() is False")
    subprocess.run([sys.executable, "-c", code], check=True)

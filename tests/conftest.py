import os

# The Triton target's kernels run in Triton's interpreter, on CPU tensors, in these
# tests (test_triton_target.py); Triton reads the switch when it is first imported.
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import tessel  # noqa: E402


# The model tests run on this device: "cpu" (the CPU target) by default; a GPU run sets
# TESSEL_TEST_DEVICE=cuda (with TRITON_INTERPRET=0) to run them on the Triton target.
TEST_DEVICE = torch.device(os.environ.get("TESSEL_TEST_DEVICE", "cpu"))


@pytest.fixture
def device() -> torch.device:
    return TEST_DEVICE


@pytest.fixture(autouse=True)
def fresh_compiler():
    """Every test starts with empty Dynamo caches and zeroed tessel counters."""
    torch._dynamo.reset()
    tessel.reset_stats()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def assert_compiled(min_graphs: int = 1) -> dict:
    """The compiled MLIR path ran, with no graph left to eager fallback."""
    counters = tessel.stats()
    assert counters["graphs_compiled"] >= min_graphs, counters
    assert counters["graphs_fallback"] == 0, counters["fallback_reasons"]
    return counters


def parameters_with_gradients(shapes: list[tuple[int, ...]]) -> list[torch.nn.Parameter]:
    """Parameters of `shapes` with random gradients, the same for every call (seeded):
    one set for a compiled optimizer step, one for eager's."""
    torch.manual_seed(0)
    made = [torch.nn.Parameter(torch.randn(shape)) for shape in shapes]
    for p in made:
        p.grad = torch.randn_like(p)
    return made


class CountedOps(TorchDispatchMode):
    """While active, counts the aten ops dispatched, by name (`calls`)."""

    def __init__(self):
        super().__init__()
        self.calls: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[str(func)] = self.calls.get(str(func), 0) + 1
        return func(*args, **(kwargs or {}))

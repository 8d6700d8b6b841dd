import pytest
import torch
import torch._dynamo

import tessel


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

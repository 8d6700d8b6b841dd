"""A copy that changes nothing is dropped before a graph is split
(frontend/identity_copies.py); copies that a split graph needs stay."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from tessel.frontend.identity_copies import drop_identity_copies

aten = torch.ops.aten


def _copies_left(fn, *args) -> list[str]:
    gm = make_fx(fn, tracing_mode="fake")(*args)
    drop_identity_copies(gm.graph)
    gm.recompile()
    torch.testing.assert_close(gm(*args), fn(*args))
    return [str(node.args[0]) for node in gm.graph.nodes if node.target is aten._to_copy.default]


def test_a_copy_of_a_computed_value_that_changes_nothing_is_dropped():
    def fn(x):
        return aten._to_copy.default(x * 2, dtype=torch.float32)
    assert _copies_left(fn, torch.randn(4, 3)) == []


def test_copies_that_change_something_or_would_alias_stay():
    def fn(x):
        doubled = x * 2
        return (aten._to_copy.default(x, dtype=torch.float32),  # of an input
                aten._to_copy.default(x.view(-1), dtype=torch.float32),  # of a view of one
                aten._to_copy.default(doubled, dtype=torch.float32),  # of a value read twice
                doubled + 1,
                aten._to_copy.default(x * 3, dtype=torch.float16),  # a cast
                aten._to_copy.default(x * 4, dtype=torch.float32,
                                      memory_format=torch.channels_last))  # a relayout
    assert len(_copies_left(fn, torch.randn(2, 3, 4, 5))) == 5

"""The workarounds for torch-mlir's wrong lowerings (frontend/torch_mlir_workarounds.py):
each names its upstream report and when it goes away, and each is in force."""

import pytest
import torch
from torch._decomp import decomposition_table

from tessel.frontend.lowerable_decompositions import lowerable_decompositions
from tessel.frontend.prepare_graph import UNSOUND_LOWERINGS
from tessel.frontend.torch_mlir_workarounds import WORKAROUNDS

ENTRIES = {", ".join(str(op) for op in w.ops): w for w in WORKAROUNDS}


@pytest.mark.parametrize("name", ENTRIES)
def test_a_workaround_names_its_upstream_report_and_when_it_goes_away(name):
    workaround = ENTRIES[name]
    assert workaround.kind in ("eager", "pytorch", "rewrite")
    assert workaround.wrong and workaround.upstream and workaround.goes_away_when


@pytest.mark.parametrize("name", ENTRIES)
def test_a_workaround_is_in_force(name):
    """An eager op is refused before import; PyTorch's decomposition, or tessel's
    rewrite, replaces the op in the table aot_autograd applies."""
    workaround, table = ENTRIES[name], lowerable_decompositions()
    for packet in workaround.ops:
        overloads = [getattr(packet, overload) for overload in packet.overloads()]
        if workaround.kind == "eager" or workaround.eager_otherwise:
            assert packet.default in UNSOUND_LOWERINGS
        if workaround.kind == "eager":
            continue
        elif workaround.kind == "pytorch":
            assert any(table.get(op) is decomposition_table.get(op) is not None
                       for op in overloads), packet
        else:
            assert any(op in table and table[op] is not decomposition_table.get(op)
                       for op in overloads), packet


def test_an_unsound_lowering_runs_eagerly_naming_why():
    """logcumsumexp of a row too long for tessel's pairwise rewrite runs eagerly: never
    torch-mlir's lowering, which overflows."""
    fn = torch.logcumsumexp
    x = torch.full((1, 5000), 100.0)
    with pytest.warns(UserWarning, match="overflows"):
        torch.testing.assert_close(torch.compile(fn, backend="mlir")(x, 1), fn(x, 1))

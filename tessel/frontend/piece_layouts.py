"""Results that a split graph's pieces hand each other, laid out as their code writes them.

A piece's result goes either to the user (the split's output), to an eager op between
pieces (a native op: cuDNN's attention reads its inputs in any layout, as_strided reads
their strides), or to later pieces only. In the last case its layout is no user's
business, as a forward's saved activations are not (saved_layouts.py): the piece may
return it as its kernels write it (`SavedLayouts`), and the pieces that read it are
compiled for that layout, their inputs traced with those strides.

Returned as traced, a result takes eager's layout, which eager's own ops chose for
their reasons: Whisper's encoder permutes its convolutions' [N, C, L] into [N, L, C]
tokens, and eager's residual adds keep that transposed layout through every layer. Each
piece between two attentions then wrote its residual stream across memory and read it
back so, row norms included, and copied it for the next gemm: 12 norm kernels of 235 us
and 12 copies of 41 us a call on the H100, where rows written in order take ~20 us.
"""

from __future__ import annotations

import operator

import torch.fx

from tessel.frontend.saved_layouts import SavedLayouts, restrided_inputs


def piece_call(split: torch.fx.GraphModule, name: str) -> torch.fx.Node:
    """The node of `split` that calls its piece `name`."""
    (call,) = (n for n in split.graph.nodes if n.op == "call_module" and n.target == name)
    return call


def handed_to_pieces(split: torch.fx.GraphModule, name: str, pieces: set[str]
                     ) -> SavedLayouts | None:
    """The results of piece `name` of `split` that only `pieces` read (each through its
    own getitem), as positions that its compiled code may return as written; None if
    there are none, or the piece returns one value."""
    call = piece_call(split, name)
    if not call.users or not all(user.target is operator.getitem for user in call.users):
        return None
    positions = frozenset(
        item.args[1] for item in call.users
        if item.users and all(user.op == "call_module" and user.target in pieces
                              for user in item.users))
    return SavedLayouts(positions) if positions else None


def restrided_readers(split: torch.fx.GraphModule, name: str,
                      strides: dict[int, tuple[int, ...]]) -> dict[str, dict[int, tuple]]:
    """Trace the inputs of the pieces that read results of piece `name` with `strides`
    (its results' as written, by position), so that each is compiled for the layouts
    it gets. Returns, by reader, the positions of the inputs it takes copied into their
    traced layouts (those a reader's graph, run eagerly, cannot take so laid out)."""
    call = piece_call(split, name)
    restrided: dict[str, dict[int, torch.Tensor]] = {}
    for item in call.users:
        position = item.args[1]
        if position not in strides:
            continue
        value = item.meta.get("val")
        if not isinstance(value, torch._subclasses.FakeTensor):
            continue
        with value.fake_mode:
            written = torch.empty_strided(value.shape, strides[position], dtype=value.dtype,
                                          device=value.device)
        item.meta["val"] = written
        for reader in item.users:
            for index, arg in enumerate(reader.args):
                if arg is item:
                    restrided.setdefault(reader.target, {})[index] = written
    relaid = {}
    for reader, inputs in restrided.items():
        piece = getattr(split, reader)
        placeholders = [n for n in piece.graph.nodes if n.op == "placeholder"]
        examples = [inputs.get(index, node.meta.get("val"))
                    for index, node in enumerate(placeholders)]
        relaid[reader] = restrided_inputs(piece, examples)
    return relaid

"""Results that a split graph's pieces hand each other, laid out as their code writes them.

A piece's result goes either to the user (the split's output), to an eager op between
pieces (a native op: as_strided reads its input's strides, cuDNN's convolutions read
theirs in any layout), or to later pieces only. Where it goes to later pieces and
convolutions only, its layout is no user's business, as a forward's saved
activations are not (saved_layouts.py): the piece may return it as its kernels write
it (`SavedLayouts`), and the pieces that read it are compiled for that layout, their
inputs traced with those strides.

Returned as traced, a result takes eager's layout, which eager's own ops chose for
their reasons. A CNN's backward, split around each convolution's backward, copied
each gradient its piece wrote channels-last (as cuDNN had written the gradient it
read) into eager's NCHW, and cuDNN copied it back into channels-last to read it,
since the forward's activations and weights it reads with it are. And Whisper's
encoder permutes its convolutions' [N, C, L] into [N, L, C] tokens, and eager's
residual adds keep that transposed layout through every layer. Each
piece between two attentions then wrote its residual stream across memory and read it
back so, row norms included, and copied it for the next gemm: 12 norm kernels of 235 us
and 12 copies of 41 us a call on the H100, where rows written in order take ~20 us.
"""

from __future__ import annotations

import operator

import torch.fx

from tessel.frontend.saved_layouts import SavedLayouts, restrided_inputs, traced_layouts

aten = torch.ops.aten

# Native ops that read their tensor inputs in any layout, and lay their results out
# by the input and weight (cuDNN's suggested memory format), not by a gradient.
READ_ANY_LAYOUT = frozenset({aten.convolution.default, aten.convolution_backward.default})


def piece_call(split: torch.fx.GraphModule, name: str) -> torch.fx.Node:
    """The node of `split` that calls its piece `name`."""
    (call,) = (n for n in split.graph.nodes if n.op == "call_module" and n.target == name)
    return call


def _results(split: torch.fx.GraphModule, name: str) -> list[tuple[torch.fx.Node, int]]:
    """The nodes of `split` that stand for the results of piece `name`, with their
    positions among its results: its getitems, or its call where it returns one value."""
    call = piece_call(split, name)
    if call.users and all(user.target is operator.getitem for user in call.users):
        return [(item, item.args[1]) for item in call.users]
    output = next(n for n in getattr(split, name).graph.nodes if n.op == "output").args[0]
    return [(call, 0)] if isinstance(output, torch.fx.Node) else []


def handed_to_pieces(split: torch.fx.GraphModule, name: str, pieces: set[str]
                     ) -> SavedLayouts | None:
    """The results of piece `name` of `split` that only `pieces` and native ops that
    read any layout read, as positions that its compiled code may return as written;
    None if there are none."""
    positions = frozenset(
        position for result, position in _results(split, name)
        if result.users and all((user.op == "call_module" and user.target in pieces)
                                or (user.op == "call_function" and user.target in READ_ANY_LAYOUT)
                                for user in result.users))
    return SavedLayouts(positions) if positions else None


def restrided_readers(split: torch.fx.GraphModule, name: str,
                      strides: dict[int, tuple[int, ...]]) -> dict[str, dict[int, tuple]]:
    """Trace the inputs of the pieces that read results of piece `name` with `strides`
    (its results' as written, by position), so that each is compiled for the layouts
    it gets. Returns, by reader, the positions of the inputs it takes copied into their
    traced layouts (those a reader's graph, run eagerly, cannot take so laid out)."""
    restrided: dict[str, dict[int, torch.Tensor]] = {}
    for item, position in _results(split, name):
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
            if reader.op != "call_module":
                continue  # a native op (READ_ANY_LAYOUT), run eagerly
            for index, arg in enumerate(reader.args):
                if arg is item:
                    restrided.setdefault(reader.target, {})[index] = written
    relaid = {}
    for reader, inputs in restrided.items():
        piece = getattr(split, reader)
        placeholders = [n for n in piece.graph.nodes if n.op == "placeholder"]
        examples = [inputs.get(index, node.meta.get("val"))
                    for index, node in enumerate(placeholders)]
        relaid[reader] = restrided_inputs(piece, examples, traced_layouts(piece, examples))
    return relaid

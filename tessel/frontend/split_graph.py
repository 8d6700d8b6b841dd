"""A graph split around the nodes that run eagerly (native ops, nodes a failure is
pinned on), its pieces compiled each on its own."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch.fx

from tessel.frontend.collectives import communicates
from tessel.frontend.input_mutations import mutated_inputs
from tessel.frontend.native_ops import native_ops_in, on_cuda, splits_around
from tessel.frontend.partition import MAX_ROUNDS, split_around
from tessel.frontend.piece_layouts import handed_to_pieces, piece_call, restrided_readers
from tessel.frontend.saved_layouts import SavedLayouts, taking_traced_layouts
from tessel.frontend.traced_facts import (
    input_values,
    output_stack_traces,
    resolve_target,
    static_inputs,
)
from tessel.frontend.traced_outputs import as_traced
from tessel.options import Options
from tessel.stages import Stages
from tessel.targets.base import get_target

if TYPE_CHECKING:
    from tessel.frontend.inference_cache import InferenceMemo

# (piece, options, kind, depth, the results it may return as written) -> the piece's
# callable, compiled or split in turn.
CompilePiece = Callable[[torch.fx.GraphModule, Options, str, int, SavedLayouts | None],
                        Callable]

aten = torch.ops.aten

# Eager ops whose result depends on their input's strides and storage, not only on its
# values: the tensor a piece hands one must be laid out as traced.
READ_STRIDES = frozenset({aten.as_strided.default, aten.as_strided_.default,
                          aten.as_strided_scatter.default})


def split_graph(gm: torch.fx.GraphModule, stages: Stages, options: Options, kind: str,
                failing: frozenset[str], depth: int, compile_piece: CompilePiece,
                memo: InferenceMemo | None):
    """`gm` with every piece around its native calls and the `failing` nodes compiled
    by `compile_piece`, or None if no piece is left to compile (or the split went
    MAX_ROUNDS deep).

    A split graph is replayed whole as the mode says (on the Triton target,
    reduce-overhead captures it in one CUDA graph, a training step's forward or
    backward in the step's CUDA graph tree), its pieces without replays of their own:
    one capture then holds the eager calls between the pieces too, and no piece copies
    its inputs into a capture's buffers and its outputs out (for GPT-2's block, split
    around its attention, those copies were most of its GPU time; ResNet-50's backward,
    split around its 53 convolution backwards, spent 20 ms of host time a step
    replaying its pieces one by one), and its pieces find out once per call what its
    target's code checks at every call (`Target.checking_once_per_call`). An inference
    graph split around native ops only is also remembered for a later process
    (`memo`), as a whole graph is, and its first call builds all its pieces' code at
    once (`Target.building_pieces_together`), from a dry run in which those ops run on
    unwritten buffers: a node split around because it failed to compile might read
    indices from them, and is never run so. A graph that communicates has neither
    replay nor dry run (they would run its collectives), nor a remembered split (it
    names this process's groups): a training graph's pieces then replay each on its
    own, its collectives between them."""
    inference = kind == "inference"
    communicating = communicates(gm)
    pieces_replay = communicating and not inference
    found = _split_pieces(gm, options if pieces_replay else options.without_replay(), kind,
                          failing, depth, compile_piece)
    if found is None:
        return None
    split, pieces = found
    stages.write("split_graph.py", lambda: split.print_readable(print_output=False))
    if pieces_replay:
        return split
    target = get_target(resolve_target(options, gm))
    checked = target.checking_once_per_call(split)
    if communicating:  # on its inputs' device, which its pieces do not guard
        return target.replayed(checked, stages.dump.graph_name, options.without_replay())
    if inference and not failing:
        if memo is not None:
            memo.remember_split(gm, split, pieces, native_ops_in(gm), target.name)
        # Its checks would compare the dry run's garbage, and its writes store it.
        if not options.check_accuracy and not mutated_inputs(gm):
            checked = target.building_pieces_together(checked, stages)
    return target.replayed(checked, stages.dump.graph_name, options,
                           static_inputs=static_inputs(gm, kind),
                           mutated_inputs=mutated_inputs(gm),
                           role=kind if kind in ("forward", "backward") else "inference",
                           output_stack_traces=output_stack_traces(gm),
                           runs_cpu_pieces=_cuda_device(gm) is not None and any(
                               _cuda_device(piece) is None for piece in pieces.values()))


def _split_pieces(gm: torch.fx.GraphModule, options: Options, kind: str,
                  failing: frozenset[str], depth: int, compile_piece: CompilePiece
                  ) -> tuple[torch.fx.GraphModule, dict[str, torch.fx.GraphModule]] | None:
    """`split_graph`'s pieces, compiled as `options` say, in a graph module that calls
    them; with the pieces' own graph modules, by name."""
    target = get_target(resolve_target(options, gm))

    def eager(node: torch.fx.Node) -> bool:
        return node.name in failing or splits_around(node, target.calls_native_ops)

    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    if depth >= MAX_ROUNDS or all(eager(n) for n in calls) or not any(eager(n) for n in calls):
        return None
    split, names = split_around(gm, eager)
    if not names:
        return None
    pieces = {}
    relaid: dict[str, dict[int, tuple]] = {}  # by piece: inputs it takes as traced
    for index, name in enumerate(names):
        piece = pieces[name] = getattr(split, name)
        # Pieces hand each other (and convolutions) results as written (piece_layouts.py).
        saved = handed_to_pieces(split, name, set(names[index + 1:]))
        compiled = compile_piece(piece, options, f"{kind}_piece", depth + 1, saved)
        if saved is not None and saved.strides:
            relaid.update(restrided_readers(split, name, saved.strides))
        compiled = taking_traced_layouts(compiled, relaid.get(name, {}))
        if kind == "inference" and _cuda_device(piece) != _cuda_device(gm):
            # The split runs on its inputs' device, and an inference piece has no guard
            # of its own (run_time.replayed): this one computes on another (after a copy
            # between devices).
            compiled = target.replayed(compiled, name, options)
        if _feeds_stride_reader(split, name):
            compiled = as_traced(compiled, piece, name, options.fallback)
        delattr(split, name)  # a submodule slot only takes modules; the call is a function
        setattr(split, name, as_module_call(compiled, piece))
    split.recompile()
    return split, pieces


def _cuda_device(gm: torch.fx.GraphModule) -> torch.device | None:
    """The device of `gm`'s first CUDA tensor input, which a target puts its call on."""
    return next((value.device for value in input_values(gm) if on_cuda(value)), None)


def _feeds_stride_reader(split: torch.fx.GraphModule, name: str) -> bool:
    """Whether a result of piece `name` goes to an eager op that reads its strides
    (READ_STRIDES). A compiled piece returns its results laid out as its code writes
    them (contiguous on the CPU target), where eager's trace may have another layout
    (a channels-last copy): as_strided of such a result read the wrong elements."""
    call = piece_call(split, name)
    results = [user for user in call.users if user.target is operator.getitem] or [call]
    return any(user.target in READ_STRIDES for result in results for user in result.users)


def as_module_call(compiled, piece: torch.fx.GraphModule):
    """A callable that `call_module` can use: positional args in, the piece's own output
    structure out (a host program always returns a tuple; the piece itself, or its own
    split, returns that structure)."""
    output = next(n for n in piece.graph.nodes if n.op == "output").args[0]
    if isinstance(compiled, torch.fx.GraphModule) or isinstance(output, (tuple, list)):
        return compiled

    def call(*args):
        results = compiled(*args)
        return results[0] if isinstance(results, (tuple, list)) else results
    return call

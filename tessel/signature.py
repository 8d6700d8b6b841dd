"""The graph signature: what the frontend tells a target about a graph it compiles.

The frontend derives it from the graph's FX metadata (frontend/prepare_graph.py); a
target's host program reads it to bind sizes, check index inputs, lay out results and
answer outputs that need no kernel. It sits below both, so that targets never import
the frontend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class TensorInput:
    name: str
    dtype: torch.dtype
    rank: int
    # The order of dims the host program permutes the input into before the compiled
    # code reads it (frontend/permuted_inputs.py); None: as passed.
    permutation: tuple[int, ...] | None = None
    # The strides it was traced with, where they are static (a host program may take
    # views of it by them, guarded); None: symbolic.
    stride: tuple[int, ...] | None = None
    # Whether it was traced on the CPU: a 0-d one is a scalar that PyTorch mixes with
    # tensors of any device, which a GPU target's host moves to the graph's device.
    on_cpu: bool = False


@dataclass(frozen=True)
class ScalarInput:
    name: str
    python_type: type          # int or float


@dataclass(frozen=True)
class TensorResult:
    dtype: torch.dtype
    shape: tuple[str, ...]     # Python expressions over the bound symbols
    stride: tuple[str, ...] | None  # None: contiguous, as the kernel writes it
    # Whether the host may return it in the layout its kernel writes it (an activation
    # a training step's forward saves for its backward), reporting that layout in
    # GraphSignature.result_strides; else it is returned laid out as `stride` says.
    any_layout: bool = False


@dataclass(frozen=True)
class IndexCheck:
    """The values of input `name` index a dimension of `size` in `op`; the host checks
    them before the kernel runs, which would abort or read out of bounds on a bad one."""
    name: str
    size: int
    from_end: bool             # -size <= i < 0 counts from the end, as in x[i]
    op: str


@dataclass
class GraphSignature:
    inputs: list[TensorInput | ScalarInput]
    # (name, expression over inputs), bound first: the size symbols, and the inputs as
    # passed that outputs view, before a host lays them out anew (contiguous copies).
    symbol_bindings: list[tuple[str, str]]
    results: list[TensorResult]                 # tensors the kernel writes, in order
    returns: list[str]                          # one Python expression per FX output
    node_names: list[str] = field(default_factory=list)
    index_checks: list[IndexCheck] = field(default_factory=list)
    # Inputs whose storage stays the same from call to call (a module's parameters and
    # buffers, as aot_autograd reports them): a CUDA graph may read them in place.
    static_inputs: frozenset[int] = frozenset()
    # "forward" or "backward" for the whole forward or backward graph of a training
    # step (a CUDA graph replay shares the activations between the two), else "inference".
    role: str = "inference"
    # The positions of the inputs the graph writes (input_mutations.py): the compiled
    # graph returns their new values after its own results.
    mutated_inputs: tuple[int, ...] = ()
    # Results that are the new value of an input the graph writes and no other output,
    # by result index: that input's position. The compiled code may write them into the
    # input (passes/write_inputs_in_place.py).
    new_values: dict[int, int] = field(default_factory=dict)
    # For a forward or backward: the stack trace of the code that computed each output,
    # which an error names when a replay has overwritten an output that is read later.
    output_stack_traces: list[str | None] = field(default_factory=list)
    # The device the graph computes on, as traced ("cuda:0"): where its new tensors go
    # when no input with dims says (a piece of a split graph whose inputs are 0-d CPU
    # scalars and constants).
    device: str | None = None
    # Filled by the target: the strides of the `any_layout` results it returns in the
    # layout their kernels write, by result index (those it lays out as `stride` says
    # are not listed). aot_autograd compiles the backward for them (saved_layouts.py).
    result_strides: dict[int, tuple[int, ...]] = field(default_factory=dict)

"""Views that a Triton host program takes as one precomputed strided view.

A reshape, collapse, expand, transpose or static slice of a tensor whose layout the
host program knows (a buffer it allocated, or a graph input, whose strides Dynamo
guards) has sizes, strides and an offset known when the program is generated. The host
then takes it with one `reinterpret(tensor, size, stride, offset)`, as Inductor's
wrappers do (`reinterpret_tensor`), instead of `reshape`, `transpose` or indexing,
which parse their arguments and dispatch at every call (benchmarks/host_program_cost.py).

A layout is relative to the tensor its chain of views starts from: offsets count from
that tensor's own storage offset, which `reinterpret` adds to. A graph input's layout
is the one it was traced with, which holds when its strides are those (`guard`): the
view of an input is taken as `reinterpret(...) if guard else <the view op>`. Dynamo
recompiles a graph whose input strides change, but a graph split around a native op
gets that op's results, whose strides are only the fake tensor's prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Layout:
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int = 0         # elements past the storage offset of the chain's first tensor
    guard: str | None = None  # the condition under which it holds, None: always


def contiguous(size: tuple[int, ...], guard: str | None = None) -> Layout:
    stride, step = [], 1
    for extent in reversed(size):
        stride.append(step)
        step *= max(extent, 1)
    return Layout(tuple(size), tuple(reversed(stride)), 0, guard)


def viewed(layout: Layout, size: tuple[int, ...]) -> Layout | None:
    """The layout of `layout` reshaped to `size` where that is a view, else None (reshape
    copies there): torch's own `view` of a meta tensor laid out so decides, and gives
    the strides."""
    if math.prod(size) != math.prod(layout.size):
        raise ValueError(f"cannot view a tensor of size {layout.size} as {size}")
    if not layout.size or math.prod(layout.size) == 0:
        return None
    meta = torch.empty_strided(layout.size, layout.stride, device="meta")
    try:
        view = meta.view(size)
    except (RuntimeError, ValueError):  # not a view of these strides (meta raises either)
        return None
    return Layout(tuple(view.shape), tuple(view.stride()), layout.offset, layout.guard)


def transposed(layout: Layout) -> Layout:
    """`layout` with its last two dims swapped (`.transpose(-2, -1)`)."""
    size, stride = list(layout.size), list(layout.stride)
    size[-2:], stride[-2:] = size[:-3:-1], stride[:-3:-1]
    return Layout(tuple(size), tuple(stride), layout.offset, layout.guard)


def sliced(layout: Layout, offsets: list[int], sizes: list[int], steps: list[int]) -> Layout:
    """The layout of `x[o:o + (n - 1) * s + 1:s, ...]`, per dim, of `x` laid out so."""
    offset = layout.offset + sum(o * s for o, s in zip(offsets, layout.stride))
    stride = tuple(s * step for s, step in zip(layout.stride, steps))
    return Layout(tuple(sizes), stride, offset, layout.guard)


def reinterpreted(name: str, source: Layout, layout: Layout, fallback: str) -> str:
    """The host expression of the view with `layout` of tensor `name`, laid out as
    `source` (of the same chain); where the layout holds only under its guard,
    `fallback` (the view op) is taken otherwise."""
    offset = layout.offset - source.offset
    view = f"reinterpret({name}, {layout.size}, {layout.stride}, {offset})"
    return view if layout.guard is None else f"({view} if {layout.guard} else {fallback})"


def _as_strided_from(tensor: torch.Tensor, size, stride, offset: int) -> torch.Tensor:
    return torch.as_strided(tensor, size, stride, tensor.storage_offset() + offset)


# `reinterpret(tensor, size, stride, offset)` in host programs, `offset` counted from
# the tensor's own: Inductor's, which skips as_strided's argument parsing and dispatch.
reinterpret = getattr(torch._C._dynamo.guards, "_reinterpret_tensor", _as_strided_from)


def as_laid_out(tensor: torch.Tensor, stride: tuple[int, ...]) -> torch.Tensor:
    """`tensor` with strides `stride`, which a host program expected a library call to
    return it with (its kernels take strides as constants, read off their first
    launch): the tensor itself, re-strided, where its strides differ only on dims of
    size 1; else a copy laid out so."""
    if all(have == want or size == 1
           for have, want, size in zip(tensor.stride(), stride, tensor.shape)):
        return reinterpret(tensor, tuple(tensor.shape), stride, 0)
    return torch.empty_strided(tensor.shape, stride, dtype=tensor.dtype,
                               device=tensor.device).copy_(tensor)

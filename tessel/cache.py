"""On-disk cache of compiled graphs, for targets whose compiled code is text (the Triton
target: its kernels module and host program).

The key covers everything that code depends on: the FX graph's code, its inputs'
shapes, strides, dtypes and devices, the options, tessel's own source, and the versions
of torch, triton and torch-mlir. A hit skips import, lowering, the pipelines and code
generation; Triton's own cache then supplies the compiled kernels. Graphs holding tensor
constants (get_attr nodes, whose values the code does not show) are not cached.

`inference_key` keys a graph one level up, as Dynamo hands it to the backend: when
aot_autograd only passes such a graph's arguments and results through (inference, no
mutation or aliasing), a hit also skips aot_autograd's tracing (frontend/inference_cache.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
from pathlib import Path

import torch
import torch.fx

import tessel


def cache_root() -> Path:
    """$TESSEL_CACHE_DIR, else ~/.cache/tessel."""
    return Path(os.environ.get("TESSEL_CACHE_DIR") or Path.home() / ".cache" / "tessel")


@functools.cache
def _toolchain() -> str:
    """tessel's source and the versions of what it builds on, as one digest."""
    digest = hashlib.sha256()
    for path in sorted(Path(tessel.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    for package in ("torch", "triton", "torch-mlir"):
        try:
            digest.update(importlib.metadata.version(package).encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(b"-")
    return digest.hexdigest()


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{value.dtype}{list(value.shape)}{list(value.stride())}{value.device.type}"
    return repr(value)


def _digest(options, *parts) -> str:
    """`parts`, the options (but where dumps go) and the toolchain, as one key."""
    settings = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
                if f.name != "dump_dir"}
    text = json.dumps([*parts, repr(settings), _toolchain()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def graph_key(gm: torch.fx.GraphModule, options, target: str,
              any_layout: frozenset[int] = frozenset()) -> str | None:
    """Key of a graph whose outputs at `any_layout` may be returned in any layout (and
    whose code depends on PyTorch's deterministic mode: the Triton target's atomics)."""
    if any(node.op == "get_attr" for node in gm.graph.nodes):
        return None
    inputs = [_describe(n.meta.get("val")) for n in gm.graph.nodes if n.op == "placeholder"]
    return _digest(options, target, gm.code, inputs, sorted(any_layout),
                   torch.are_deterministic_algorithms_enabled())


def inference_key(gm: torch.fx.GraphModule, example_inputs, options, target: str) -> str | None:
    """Key of a Dynamo graph that aot_autograd turns into an inference graph of the same
    inputs: plain tensors of static shapes, with grad off or none requiring it, and no
    autocast (whose casts aot_autograd's wrapper keeps away from the compiled code). None
    for any other graph, and for graphs with constants or submodules."""
    placeholders = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
    if (len(placeholders) != len(example_inputs)
            or any(type(v) not in (torch.Tensor, torch.nn.Parameter) for v in example_inputs)
            or any(not isinstance(v, torch.Tensor) or any(isinstance(s, torch.SymInt) for s in v.shape)
                   for v in placeholders)
            or any(node.op in ("get_attr", "call_module") for node in gm.graph.nodes)
            or (torch.is_grad_enabled() and any(v.requires_grad for v in example_inputs))
            or torch._C._is_any_autocast_enabled()):
        return None
    return _digest(options, "dynamo", target, gm.code, [_describe(v) for v in example_inputs],
                   torch.are_deterministic_algorithms_enabled())


def _entry_path(key: str) -> Path:
    return cache_root() / "graphs" / f"{key}.json"


def write_atomically(path: Path, content: str | bytes) -> None:
    """Write `content` to `path` so that a concurrent reader sees all of it or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    if isinstance(content, bytes):
        partial.write_bytes(content)
    else:
        partial.write_text(content)
    partial.replace(path)


def load(key: str | None) -> dict | None:
    if key is None:
        return None
    try:
        return json.loads(_entry_path(key).read_text())
    except (OSError, ValueError):
        return None  # missing, or damaged: a miss, which the compile rewrites


def store(key: str | None, entry: dict) -> None:
    if key is None:
        return
    try:
        write_atomically(_entry_path(key), json.dumps(entry))
    except OSError:
        pass  # an unwritable cache only costs the next process a compile

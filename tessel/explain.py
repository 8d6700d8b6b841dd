"""tessel.explain(fn, *args): compile `fn` once with backend="mlir" and report what ran.

The report lists every graph Dynamo captured with its FX ops, the kernels tessel made
of it (from the kernel dialect in the dump), and what ran eagerly and why.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tessel import counters

_KERNEL = re.compile(r'"tkern\.(kernel|library_call)"\(\)(?:.|\n)*?\}\) \{(callee = "[^"]+"|sym_name = "[^"]+")')


@dataclass
class GraphReport:
    name: str                  # e.g. "000_forward", "002_forward_piece"
    ops: list[str]             # FX call targets, in order
    kernels: list[str]         # kernel names, library calls as "gemm"


@dataclass
class ExplainReport:
    graphs: list[GraphReport] = field(default_factory=list)
    fallback_reasons: list[str] = field(default_factory=list)
    native_ops: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"{len(self.graphs)} graph(s) compiled or attempted, "
                 f"{sum(len(g.kernels) for g in self.graphs)} kernel(s)"]
        for graph in self.graphs:
            lines.append(f"graph {graph.name}: {len(graph.ops)} op(s) -> "
                         f"{len(graph.kernels)} kernel(s)")
            lines += [f"    kernel {kernel}" for kernel in graph.kernels]
        lines += [f"runs eagerly: {reason}" for reason in self.fallback_reasons]
        lines += [f"runs natively by choice: {reason}" for reason in self.native_ops]
        return "\n".join(lines)


def explain(fn, *args, **kwargs) -> ExplainReport:
    """Compile and run `fn(*args, **kwargs)` through tessel once; returns the report."""
    before = counters.stats()
    with tempfile.TemporaryDirectory(prefix="tessel-explain-") as dump_dir:
        torch.compile(fn, backend="mlir", options={"dump_dir": dump_dir})(*args, **kwargs)
        report = ExplainReport()
        for graph_dir in sorted(Path(dump_dir).iterdir()):
            fx_text = (graph_dir / "00_fx_graph.py").read_text()
            ops = re.findall(r"torch\.ops\.([\w.]+)\(", fx_text)
            fused = next(iter(sorted(graph_dir.glob("*_cpu-fuse.mlir"))), None)
            kernels = [m.group(2).split('"')[1] for m in _KERNEL.finditer(fused.read_text())] \
                if fused else []
            report.graphs.append(GraphReport(graph_dir.name, ops, kernels))
    after = counters.stats()
    report.fallback_reasons = after["fallback_reasons"][len(before["fallback_reasons"]):]
    report.native_ops = after["native_ops"][len(before["native_ops"]):]
    report.stats = {key: after[key] - before[key] for key in
                    ("graphs_compiled", "graphs_fallback", "graphs_split", "kernels")}
    return report

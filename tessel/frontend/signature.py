"""What the host program needs to know about a graph, derived from its FX metadata.

`prepare_graph` splits an aot_autograd graph into the part MLIR computes (tensor
results made by ops) and the part the host program answers in Python: outputs that
are inputs passed through, symbolic sizes, None, and repeated outputs. Sizes are
Python expressions over the symbols (s0, s1, ...) that the host binds from its
arguments, so one compiled graph serves every size Dynamo's guards admit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.fx
from torch.utils._sympy.printers import PythonPrinter

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                    torch.int32, torch.int64, torch.bool)


# Ops that torch-mlir lowers to code that computes something else than eager: they
# must run eagerly. Found by the OpInfo sweep (tests/opinfo/sweep.py).
UNSOUND_LOWERINGS = {
    torch.ops.aten.logcumsumexp.default:
        "torch-mlir lowers it as log(cumsum(exp(x))), which overflows to inf where eager does not",
    torch.ops.aten._embedding_bag_forward_only.default:
        "torch-mlir's lowering gives wrong sums (per_sample_weights)",
    torch.ops.aten._embedding_bag.default:
        "torch-mlir's lowering gives wrong sums (per_sample_weights)",
}


class UnsupportedGraph(Exception):
    """The graph cannot be compiled; `op` names the FX op or argument responsible."""

    def __init__(self, reason: str, op: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.op = op


@dataclass(frozen=True)
class TensorInput:
    name: str
    dtype: torch.dtype
    rank: int


@dataclass(frozen=True)
class ScalarInput:
    name: str
    python_type: type          # int or float


@dataclass(frozen=True)
class TensorResult:
    dtype: torch.dtype
    shape: tuple[str, ...]     # Python expressions over the bound symbols
    stride: tuple[str, ...] | None  # None: contiguous, as the kernel writes it


@dataclass
class GraphSignature:
    inputs: list[TensorInput | ScalarInput]
    symbol_bindings: list[tuple[str, str]]      # (symbol, expression over inputs)
    results: list[TensorResult]                 # tensors the kernel writes, in order
    returns: list[str]                          # one Python expression per FX output
    node_names: list[str] = field(default_factory=list)


def _printer_expr(value, bound: set[str], what: str) -> str:
    if isinstance(value, int):
        return str(value)
    expr = value.node.expr
    missing = {str(s) for s in expr.free_symbols} - bound
    if missing:
        raise UnsupportedGraph(f"{what} depends on unbound size symbol(s) {sorted(missing)}")
    return PythonPrinter().doprint(expr)


def _dense(shape, stride) -> bool:
    """Whether a layout is some permutation of a contiguous one (no overlap, no gaps)."""
    if not all(isinstance(v, int) for v in (*shape, *stride)):
        return False
    expected = 1
    for size, step in sorted(zip(shape, stride), key=lambda pair: pair[1]):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True


def _check_input(node: torch.fx.Node, value) -> TensorInput | ScalarInput:
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            raise UnsupportedGraph(f"input {node.name} has layout {value.layout}", node.name)
        if value.dtype not in SUPPORTED_DTYPES:
            raise UnsupportedGraph(f"input {node.name} has dtype {value.dtype}", node.name)
        if value.device.type != "cpu":
            raise UnsupportedGraph(f"input {node.name} is on {value.device}", node.name)
        return TensorInput(node.name, value.dtype, value.dim())
    if isinstance(value, torch.SymInt):
        return ScalarInput(node.name, int)
    if isinstance(value, torch.SymFloat):
        return ScalarInput(node.name, float)
    raise UnsupportedGraph(f"input {node.name} is a {type(value).__name__}", node.name)


def _bind_symbols(inputs, values) -> list[tuple[str, str]]:
    bindings: dict[str, str] = {}
    for arg, value in zip(inputs, values):
        if isinstance(arg, ScalarInput):
            candidates = [(value, arg.name)]
        else:
            candidates = [(size, f"{arg.name}.size({d})") for d, size in enumerate(value.shape)]
        for size, source in candidates:
            if isinstance(size, (torch.SymInt, torch.SymFloat)) and size.node.expr.is_Symbol:
                bindings.setdefault(str(size.node.expr), source)
    return list(bindings.items())


def prepare_graph(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, GraphSignature]:
    """The graph to import (op-made tensor outputs only) and the host-side signature."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in UNSOUND_LOWERINGS:
            raise UnsupportedGraph(UNSOUND_LOWERINGS[node.target], str(node.target))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = [n.meta.get("val") for n in placeholders]
    inputs = [_check_input(n, v) for n, v in zip(placeholders, values)]
    bindings = _bind_symbols(inputs, values)
    bound = {symbol for symbol, _ in bindings}

    import_graph = torch.fx.Graph()
    value_map: dict[torch.fx.Node, torch.fx.Node] = {}
    import_graph.graph_copy(gm.graph, value_map)  # copies all but the output node
    (fx_outputs,) = next(n for n in gm.graph.nodes if n.op == "output").args
    fx_outputs = fx_outputs if isinstance(fx_outputs, (tuple, list)) else (fx_outputs,)

    kernel_outputs: list[torch.fx.Node] = []
    results: list[TensorResult] = []
    returns: list[str] = []
    for position, out in enumerate(fx_outputs):
        # An alias output shares its source's storage in eager too: return the same tensor.
        while isinstance(out, torch.fx.Node) and out.target is torch.ops.aten.alias.default:
            out = out.args[0]
        if out is None:
            returns.append("None")
        elif not isinstance(out, torch.fx.Node):
            returns.append(repr(out))
        elif out.op == "placeholder":
            returns.append(out.name)
        elif isinstance(out.meta.get("val"), (torch.SymInt, torch.SymFloat, int, float)):
            returns.append(_printer_expr(out.meta["val"], bound, f"output {position}"))
        elif out in kernel_outputs:
            returns.append(f"out{kernel_outputs.index(out)}")
        else:
            value = out.meta.get("val")
            if not isinstance(value, torch.Tensor):
                raise UnsupportedGraph(f"output {position} ({out.name}) is not a tensor", out.name)
            if value.dtype not in SUPPORTED_DTYPES:
                raise UnsupportedGraph(f"output {out.name} has dtype {value.dtype}", str(out.target))
            what = f"output {position} ({out.name})"
            shape = tuple(_printer_expr(s, bound, what) for s in value.shape)
            stride = None
            # Restride dense permuted layouts like eager's; overlapping ones (stride 0
            # from expand) cannot be allocated, and their values are the same anyway.
            if (not value.is_contiguous() and value.numel() > 1
                    and _dense(value.shape, value.stride())):
                stride = tuple(_printer_expr(s, bound, what) for s in value.stride())
            returns.append(f"out{len(kernel_outputs)}")
            kernel_outputs.append(out)
            results.append(TensorResult(value.dtype, shape, stride))

    import_graph.output(tuple(value_map[n] for n in kernel_outputs))
    import_graph.eliminate_dead_code()
    signature = GraphSignature(inputs, bindings, results, returns,
                               [str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
    # The module owns the graph's constants (get_attr targets) that the importer reads.
    return torch.fx.GraphModule(gm, import_graph), signature

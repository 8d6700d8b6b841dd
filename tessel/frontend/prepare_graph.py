"""What the host program needs to know about a graph, derived from its FX metadata.

`prepare_graph` splits an aot_autograd graph into the part MLIR computes (tensor
results made by ops) and the part the host program answers in Python: outputs that
are inputs passed through, symbolic sizes, None, and repeated outputs. Sizes are
Python expressions over the symbols (s0, s1, ...) that the host binds from its
arguments, so one compiled graph serves every size Dynamo's guards admit.
"""

from __future__ import annotations

import dataclasses
import operator
import os

import torch
import torch.fx
from torch.utils._sympy.printers import PythonPrinter

from tessel.errors import TesselError
from tessel.frontend.torch_mlir_workarounds import unsound_lowerings
from tessel.signature import (
    GraphSignature,
    IndexCheck,
    ScalarInput,
    TensorInput,
    TensorResult,
)

aten = torch.ops.aten

# uint8 is left out: torch-mlir lowers it as signed i8 in places (abs, widening in
# sum), which gives wrong answers above 127. Complex dtypes have no linalg lowering.
SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                    torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)


# Ops that torch-mlir lowers to code that computes something else than eager: they
# must run eagerly.
UNSOUND_LOWERINGS = unsound_lowerings()


def _promoted_by_eager_only(node: torch.fx.Node) -> bool:
    """threshold_backward of a gradient whose dtype its input's promotes (an int64
    gradient, a float32 input): eager's result has the promoted dtype, PyTorch's meta
    function, which traced the graph, gives the gradient's (pytorch/pytorch#100838)."""
    grad, x = (a.meta["val"] for a in node.args[:2])
    return torch.promote_types(grad.dtype, x.dtype) != grad.dtype


# Ops whose traced result dtype is not eager's, where the predicate holds: compiled
# code answers in the traced dtype, and so do the ops traced after them, so the whole
# graph runs eagerly.
TRACED_DTYPE_DIFFERS = {
    torch.ops.aten.threshold_backward.default: _promoted_by_eager_only,
}


class UnsupportedGraph(TesselError):
    """The graph cannot be compiled; `op` names the FX op or argument responsible."""

    def __init__(self, reason: str, op: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.op = op


class _HostPrinter(PythonPrinter):
    """Sizes as Python that host programs run with no import (they have `torch` in
    scope, not `math`): floor, ceil and trunc of a float size (interpolation's scaled
    sizes) by int()."""

    def _print_TruncToInt(self, expr) -> str:
        return f"int({self._print(expr.args[0])})"

    def _print_FloorToInt(self, expr) -> str:
        return f"int(({self._print(expr.args[0])}) // 1)"

    def _print_CeilToInt(self, expr) -> str:
        return f"-int(-({self._print(expr.args[0])}) // 1)"

    _print_floor = _print_FloorToInt
    _print_ceiling = _print_CeilToInt


def _printer_expr(value, bound: set[str], what: str) -> str:
    if isinstance(value, int):
        return str(value)
    expr = value.node.expr
    missing = {str(s) for s in expr.free_symbols} - bound
    if missing:
        raise UnsupportedGraph(f"{what} depends on unbound size symbol(s) {sorted(missing)}")
    return _HostPrinter().doprint(expr)


def dense_layout(shape, stride) -> bool:
    """Whether a layout is some permutation of a contiguous one (no overlap, no gaps)."""
    if not all(isinstance(v, int) for v in (*shape, *stride)):
        return False
    expected = 1
    for size, step in sorted(zip(shape, stride), key=lambda pair: pair[1]):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True


def _check_input(node: torch.fx.Node, value, devices: frozenset[str]) -> TensorInput | ScalarInput:
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            raise UnsupportedGraph(f"input {node.name} has layout {value.layout}", node.name)
        if value.dtype not in SUPPORTED_DTYPES:
            raise UnsupportedGraph(f"input {node.name} has dtype {value.dtype}", node.name)
        # A 0-d CPU tensor is a scalar, which PyTorch mixes with tensors of any device
        # (the target's host program moves it where it needs it).
        if value.device.type not in devices and not (value.device.type == "cpu"
                                                     and value.dim() == 0):
            raise UnsupportedGraph(f"input {node.name} is on {value.device}", node.name)
        stride = tuple(value.stride())
        return TensorInput(node.name, value.dtype, value.dim(),
                           stride=stride if all(isinstance(s, int) for s in stride) else None,
                           on_cpu=value.device.type == "cpu")
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


# Splits whose pieces (getitem of the split) are views of its input.
_SPLITS = (aten.split_with_sizes.default, aten.split.Tensor)
# A view of a tensor's storage at an offset from its own (Inductor's reinterpret_tensor).
_REINTERPRET = "torch._C._dynamo.guards._reinterpret_tensor"


def _split_piece(node) -> bool:
    return (node.op == "call_function" and node.target is operator.getitem
            and isinstance(node.args[0], torch.fx.Node) and node.args[0].target in _SPLITS)


def view_chain(out) -> tuple[object, list[torch.fx.Node]]:
    """(root, views): `out` is the view ops `views` applied, in order, to `root`, a node
    that is not such a view (or `out` itself when it is no view). A piece of a split
    (a getitem node) counts as a view of the split's input: attention's query, key and
    value are pieces of one projection."""
    views = []
    while isinstance(out, torch.fx.Node) and out.op == "call_function":
        if _split_piece(out):
            views.append(out)
            out = out.args[0].args[0]
        elif (isinstance(out.target, torch._ops.OpOverload) and out.target.is_view
              and [str(r.type) for r in out.target._schema.returns] == ["Tensor"]):
            views.append(out)
            out = out.args[0]
        else:
            break
    return out, views[::-1]


def host_can_view(root) -> bool:
    """Whether the host may take eager's views of `root`'s kernel result: it must be an
    op-made tensor laid out as in eager (views index into its storage)."""
    value = root.meta.get("val")
    return (root.op == "call_function" and isinstance(value, torch.Tensor)
            and (value.is_contiguous() or dense_layout(value.shape, value.stride())))


def _host_literal(value, bound: set[str]) -> str | None:
    """A view op argument as Python source (None if it has none); sizes computed in the
    graph become expressions over the bound symbols."""
    if isinstance(value, torch.fx.Node):
        value = value.meta.get("val")
    if isinstance(value, (list, tuple)):
        items = [_host_literal(v, bound) for v in value]
        return None if None in items else "[" + ", ".join(items) + "]"
    if isinstance(value, torch.SymInt):
        missing = {str(s) for s in value.node.expr.free_symbols} - bound
        return None if missing else _HostPrinter().doprint(value.node.expr)
    if value is None or isinstance(value, (bool, int, torch.dtype)):
        return repr(value)
    return None


def _host_view(root: torch.fx.Node, views: list[torch.fx.Node], bound: set[str]) -> str | None:
    """Python source applying `views` to the tensor `{0}` stands for, `root`'s result,
    e.g. `torch.ops.aten.slice.Tensor({0}, 0, 1, 9223372036854775807)`; None if an
    argument has no host expression. Of static size, the whole chain is one as_strided
    call where `{0}` has the strides it has in eager, which the views' sizes, strides
    and offset were traced on: each op of a chain is one more dispatch of host time at
    every call, and attention's query, key and value are four ops each. The call is
    Inductor's `reinterpret_tensor`, which skips as_strided's argument parsing and
    dispatch (about half its host time)."""
    chain = _host_view_chain(views, bound)
    value, base = views[-1].meta.get("val"), root.meta.get("val")
    if chain is None or not isinstance(value, torch.Tensor) or value.dtype != base.dtype:
        return chain
    layout = (*value.shape, *value.stride(), value.storage_offset(), *base.stride(),
              base.storage_offset())
    if not all(isinstance(n, int) for n in layout):
        return chain
    offset = value.storage_offset() - base.storage_offset()
    return (f"({_REINTERPRET}({{0}}, {tuple(value.shape)}, {value.stride()}, {offset}) "
            f"if {{0}}.stride() == {base.stride()} else {chain})")


def _host_view_chain(views: list[torch.fx.Node], bound: set[str]) -> str | None:
    """Python source applying `views` to the tensor `{0}` stands for, op by op."""
    expr = "{0}"
    for view in views:
        piece = _split_piece(view)
        op = view.args[0] if piece else view
        args = [_host_literal(a, bound) for a in op.args[1:]]
        kwargs = {k: _host_literal(v, bound) for k, v in op.kwargs.items()}
        if None in args or None in kwargs.values():
            return None
        args += [f"{k}={v}" for k, v in kwargs.items()]
        expr = f"torch.ops.{op.target}({', '.join([expr, *args])})"
        if piece:
            expr += f"[{view.args[1]}]"
    return expr


_INTEGER_DIVISIONS = (aten.div, aten.floor_divide, aten.remainder, aten.fmod)


def _at_least_one(node: torch.fx.Node) -> bool:
    """Whether `node` is at least 1: a symbolic int whose guarded range says so (Dynamo
    takes a symbolic size to be 2 or more: it specializes 0 and 1), or a clamp from
    below by 1 or more (a count made a divisor)."""
    if node.target is aten.scalar_tensor.default and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]  # a symbolic int passed as a tensor (dynamic_views.py)
    value = node.meta.get("val")
    if isinstance(value, torch.SymInt):
        return bool(value.node.shape_env.bound_sympy(value.node.expr).lower >= 1)
    if node.target not in (aten.clamp.default, aten.clamp_min.default):
        return False
    low = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
    return isinstance(low, int) and not isinstance(low, bool) and low >= 1


def _check_integer_division(node: torch.fx.Node) -> None:
    """Integer division by a value that may be 0 runs eagerly: the compiled `sdiv`/`srem`
    traps (SIGFPE kills the process) or gives garbage where eager raises ZeroDivisionError.
    Division by a nonzero constant is safe, and is what models do."""
    target = node.target
    value = node.meta.get("val")
    if (getattr(target, "overloadpacket", None) not in _INTEGER_DIVISIONS
            or not isinstance(value, torch.Tensor) or value.dtype.is_floating_point):
        return
    divisor = node.args[1] if len(node.args) > 1 else node.kwargs.get("other")
    if isinstance(divisor, (int, float)) and not isinstance(divisor, bool) and divisor != 0:
        return
    if isinstance(divisor, torch.fx.Node) and _at_least_one(divisor):
        return
    raise UnsupportedGraph(
        f"integer {target.overloadpacket.__name__} by a divisor that may be 0: compiled code "
        "would trap where eager raises ZeroDivisionError", str(target))


# Views that keep every value of their input: indices seen through them are the input's.
_VALUE_KEEPING_VIEWS = (aten.view, aten.reshape, aten.unsqueeze, aten.squeeze, aten.expand,
                        aten.permute, aten.t, aten.transpose, aten.alias)


def _index_operands(node: torch.fx.Node):
    """(index tensor, indexed tensor, dim, from_end) for each integer index operand."""
    target, args = node.target, node.args
    if target is aten.embedding.default:
        yield args[1], args[0], 0, False
    elif target in (aten.index_select.default, aten.gather.default):
        yield args[2], args[0], args[1], False
    elif target is aten.index.Tensor:
        for dim, index in enumerate(args[1]):
            yield index, args[0], dim, True


def _index_checks(gm: torch.fx.GraphModule) -> list[IndexCheck]:
    """Checks for the graph inputs that index a static dimension directly (or through
    views that keep all their values), as token ids index an embedding."""
    checks = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        for index, indexed, dim, from_end in _index_operands(node):
            if not isinstance(index, torch.fx.Node):
                continue  # None: a full slice of that dimension
            root, views = view_chain(index)
            index_value = root.meta.get("val")
            shape = indexed.meta["val"].shape
            size = shape[dim % len(shape)] if shape else None
            if (root.op == "placeholder" and isinstance(size, int)
                    and isinstance(index_value, torch.Tensor)
                    and not index_value.dtype.is_floating_point and index_value.dtype != torch.bool
                    and all(getattr(v.target, "overloadpacket", None) in _VALUE_KEEPING_VIEWS
                            for v in views)):
                checks.append(IndexCheck(root.name, size, from_end, str(node.target)))
    return checks


# Compiled code allocates every intermediate tensor, expand's views included (eager's
# cost nothing), and does not check its allocations: one larger than the machine's
# memory would dereference NULL and crash the process.
_PHYSICAL_MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _check_size(node: torch.fx.Node) -> None:
    """Graphs with a tensor larger than the machine's memory run eagerly."""
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor) or not isinstance(value.numel(), int):
        return
    size = value.numel() * value.element_size()
    if size > _PHYSICAL_MEMORY:
        # No op to split around: the pieces would receive the view and copy it whole.
        raise UnsupportedGraph(
            f"{node.target} makes a {size / 2**30:.1f} GiB tensor, more than this machine's "
            f"{_PHYSICAL_MEMORY / 2**30:.1f} GiB of memory; compiled code would materialize it")


def _place_created_tensors_on_cpu(graph: torch.fx.Graph) -> None:
    """Ops that create tensors (scalar_tensor, full, arange, ...) say `device=cpu` in the
    imported graph: the MLIR program does not place tensors, its target does, and
    torch-mlir lowers such ops for CPU device constants only (a CUDA backward graph's
    scalar_tensor failed to legalize)."""
    for node in graph.nodes:
        device = node.kwargs.get("device") if node.op == "call_function" else None
        if isinstance(device, torch.device) and device.type != "cpu":
            node.kwargs = {**node.kwargs, "device": torch.device("cpu")}


def prepare_graph(gm: torch.fx.GraphModule, devices: frozenset[str] = frozenset({"cpu"}),
                  mutated: tuple[int, ...] = (), any_layout: frozenset[int] = frozenset()
                  ) -> tuple[torch.fx.GraphModule, GraphSignature]:
    """The graph to import (op-made tensor outputs only) and the host-side signature;
    tensor inputs must live on one of `devices` (those the target runs on). The last
    outputs of `gm` are the new values of the inputs at `mutated`
    (input_mutations.mutations_as_results). The outputs at `any_layout` may be returned
    in any layout (TensorResult.any_layout) where no other output is them or a view
    of them."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in UNSOUND_LOWERINGS:
            raise UnsupportedGraph(UNSOUND_LOWERINGS[node.target], str(node.target))
        if TRACED_DTYPE_DIFFERS.get(node.target, lambda _: False)(node):
            # No op named: the graph's later ops were traced on the wrong dtype too.
            raise UnsupportedGraph(f"{node.target} was traced to another dtype than eager "
                                   "gives (pytorch/pytorch#100838)")
        _check_integer_division(node)
        _check_size(node)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = [n.meta.get("val") for n in placeholders]
    inputs = [_check_input(n, v, devices) for n, v in zip(placeholders, values)]
    bindings = _bind_symbols(inputs, values)
    bound = {symbol for symbol, _ in bindings}

    import_graph = torch.fx.Graph()
    value_map: dict[torch.fx.Node, torch.fx.Node] = {}
    import_graph.graph_copy(gm.graph, value_map)  # copies all but the output node
    _place_created_tensors_on_cpu(import_graph)
    (fx_outputs,) = next(n for n in gm.graph.nodes if n.op == "output").args
    fx_outputs = fx_outputs if isinstance(fx_outputs, (tuple, list)) else (fx_outputs,)

    kernel_outputs: list[torch.fx.Node] = []
    results: list[TensorResult] = []
    # How many outputs each result is (the views the host takes of it not counted).
    result_outputs: list[int] = []
    viewed_results: set[int] = set()  # those that outputs are views of

    def kernel_result(node: torch.fx.Node, what: str, viewed: bool = False) -> str:
        """The host name of `node` computed by the kernel (one result per node), for an
        output that is it, or with `viewed`, a view of it."""
        index = kernel_outputs.index(node) if node in kernel_outputs else len(kernel_outputs)
        if viewed:
            viewed_results.add(index)
        if index < len(kernel_outputs):
            result_outputs[index] += not viewed
            return f"out{index}"
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor):
            raise UnsupportedGraph(f"{what} is not a tensor", node.name)
        if value.dtype not in SUPPORTED_DTYPES:
            raise UnsupportedGraph(f"output {node.name} has dtype {value.dtype}", str(node.target))
        shape = tuple(_printer_expr(s, bound, what) for s in value.shape)
        stride = None
        # Restride dense permuted layouts like eager's; overlapping ones (stride 0
        # from expand) cannot be allocated, and their values are the same anyway.
        if not value.is_contiguous() and value.numel() > 1 and dense_layout(value.shape, value.stride()):
            stride = tuple(_printer_expr(s, bound, what) for s in value.stride())
        kernel_outputs.append(node)
        results.append(TensorResult(value.dtype, shape, stride))
        result_outputs.append(int(not viewed))
        return f"out{len(kernel_outputs) - 1}"

    def as_passed(placeholder: torch.fx.Node) -> str:
        """The host name of input `placeholder` as the caller passed it."""
        name = f"{placeholder.name}_as_passed"
        if (name, placeholder.name) not in bindings:
            bindings.append((name, placeholder.name))
        return name

    returns: list[str] = []
    output_results: dict[int, int] = {}  # output position -> the result it is, as it is
    for position, out in enumerate(fx_outputs):
        what = f"output {position} ({getattr(out, 'name', out)})"
        root, views = view_chain(out)
        if out is None:
            returns.append("None")
        elif not isinstance(out, torch.fx.Node):
            returns.append(repr(out))
        elif root.op == "placeholder" and all(v.target is aten.alias.default for v in views):
            # An alias shares its input's storage in eager too: return the same tensor.
            returns.append(as_passed(root))
        elif (root.op == "placeholder" and views
              and (view := _host_view(root, views, bound)) is not None):
            # A view of an input is that view in eager, and aot_autograd recreates it
            # from the input by the layout of what we return (as_strided) where the
            # view's arguments are symbolic: a copy's layout picked other elements.
            returns.append(view.format(as_passed(root)))
        elif isinstance(out.meta.get("val"), (torch.SymInt, torch.SymFloat, int, float)):
            returns.append(_printer_expr(out.meta["val"], bound, what))
        elif position in any_layout and all(v.target is aten.alias.default for v in views):
            # An alias that only the backward reads (a detach of an activation) is the
            # same to it as the tensor itself, laid out as written.
            returns.append(kernel_result(root, what))
            output_results[position] = kernel_outputs.index(root)
        elif views and host_can_view(root) and (view := _host_view(root, views, bound)):
            # Eager's view shares its base's storage (writing one output changes the
            # other); in inference graphs aot_autograd leaves that to the compiler.
            returns.append(view.format(kernel_result(root, what, viewed=True)))
        else:
            returns.append(kernel_result(out, what))
            output_results[position] = kernel_outputs.index(out)

    # Results only ever returned as themselves, at positions of any layout.
    positions: dict[int, set[int]] = {}
    for position, index in output_results.items():
        positions.setdefault(index, set()).add(position)
    results = [dataclasses.replace(result, any_layout=True)
               if index not in viewed_results and positions.get(index, {-1}) <= any_layout
               else result for index, result in enumerate(results)]
    import_graph.output(tuple(value_map[n] for n in kernel_outputs))
    import_graph.eliminate_dead_code()
    signature = GraphSignature(inputs, bindings, results, returns,
                               [str(n.target) for n in gm.graph.nodes if n.op == "call_function"],
                               _index_checks(gm))
    first_new_value = len(fx_outputs) - len(mutated)
    signature.new_values = {
        output_results[position]: input_position
        for position, input_position in enumerate(mutated, first_new_value)
        if position in output_results and result_outputs[output_results[position]] == 1}
    # The module owns the graph's constants (get_attr targets) that the importer reads.
    return torch.fx.GraphModule(gm, import_graph), signature

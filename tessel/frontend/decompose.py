"""tessel's decompositions, applied after aot_autograd to the graph it compiles.

aot_autograd traces forward and backward with only the decompositions that must
happen before autograd splits them (`before_autograd_table`): the graphs it hands
tessel call the user's own ATen ops, in their own dtypes. What runs eagerly (a whole
graph, or the ops between compiled pieces) runs those, at eager's speed, and not
their decompositions (a bf16 layer_norm's decomposition widens it to f32 and back,
one slow `prims.convert_element_type` call at a time). Before import, each graph or
piece tessel compiles is traced again through the full table (decompositions.py);
each node of the result names the node it came from (`meta["from_node"]`), so that a
failure of compiled code is pinned on ops of the graph that runs eagerly.
"""

from __future__ import annotations

import contextlib

import torch
import torch.fx
import torch.fx.traceback as fx_traceback
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx.experimental.proxy_tensor import decompose, make_fx

from tessel.errors import TesselError
from tessel.frontend.constant_arguments import specialize_constant_arguments
from tessel.frontend.decompositions import decomposition_table
from tessel.frontend.native_ops import native_reason


class DecompositionFailed(TesselError):
    """Tracing node `node` through the table failed."""

    def __init__(self, node: str, error: Exception):
        super().__init__(f"decomposing {node}: {type(error).__name__}: {error}")
        self.node = node


class _Decomposing(torch.fx.Interpreter):
    """Runs `gm` under make_fx, on fake values: constants (get_attr, real tensors) are
    faked too, and a failure names its node."""

    def __init__(self, gm: torch.fx.GraphModule, fake_mode):
        super().__init__(gm)
        self.fake_mode = fake_mode
        self.constants: dict[int, torch.Tensor] = {}  # id of a faked constant -> the real one

    def run_node(self, node: torch.fx.Node):
        try:
            if native_reason(node) is not None:
                # Whole: the host program calls it (native_ops.called_in_place).
                with decompose({}):
                    return super().run_node(node)
            return super().run_node(node)
        except DecompositionFailed:
            raise
        except Exception as error:  # decompositions raise many kinds
            raise DecompositionFailed(node.name, error) from error

    def fetch_attr(self, target: str):
        value = super().fetch_attr(target)
        if self.fake_mode is None or not isinstance(value, torch.Tensor):
            return value
        with unset_fake_temporarily():
            fake = self.fake_mode.from_tensor(value, static_shapes=True)
        self.constants[id(fake)] = value
        return fake


def decomposed(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` traced through tessel's decomposition table, on its inputs' example values
    (fake tensors, symbolic sizes as aot_autograd traced them), once the arguments
    torch-mlir needs constant are (constant_arguments.py)."""
    specialize_constant_arguments(gm)
    inputs = [node.meta.get("val") for node in gm.graph.nodes if node.op == "placeholder"]
    fake_mode = detect_fake_mode(inputs)
    with contextlib.ExitStack() as stack:
        if fake_mode is not None:
            stack.enter_context(fake_mode)
        stack.enter_context(torch._C._EnablePythonDispatcher())
        stack.enter_context(fx_traceback.preserve_node_meta())
        interpreter = _Decomposing(gm, fake_mode)
        traced = make_fx(interpreter.run, decomposition_table=decomposition_table(),
                         record_module_stack=True)(*inputs)
    for node in traced.graph.nodes:  # the trace holds the faked constants: real ones back
        if node.op == "get_attr":
            value = getattr(traced, node.target)
            setattr(traced, node.target, interpreter.constants.get(id(value), value))
    traced.graph.eliminate_dead_code()
    traced.recompile()
    return traced


def origins(traced: torch.fx.GraphModule, names: set[str]) -> set[str]:
    """The names of the nodes of the graph `decomposed` traced that the nodes of
    `traced` named `names` came from (a placeholder or output comes from none)."""
    found = set()
    for node in traced.graph.nodes:
        if node.name not in names:
            continue
        for source in node.meta.get("from_node") or ():
            found |= _interpreted_nodes(source)
    return found


def _interpreted_nodes(source) -> set[str]:
    """The nodes `torch.fx.Interpreter` ran to create a node, along `from_node` chains
    (NodeSource records, newest first)."""
    if source.pass_name.startswith("Interpreter_"):
        return {source.name}
    return set().union(*(_interpreted_nodes(s) for s in source.from_node or ()))

"""A graph's tensor constants as extra inputs of the code compiled from it.

torch-mlir imports a constant tensor (a `get_attr` of `torch.tensor([...])` in the
model's code, or one a decomposition made) as a dense literal: the Triton target's
host program can make one only from a single repeated value, and refused the rest
("constant dense_resource<...> is not a scalar", a whole torchvision ConvNeXt ran
eagerly). As inputs, constants are read as any tensor is, and the compiled code no
longer depends on their values.
"""

from __future__ import annotations

import torch
import torch.fx
from torch._guards import detect_fake_mode


def lifted_constants(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
    """`gm` with each constant tensor of more than one element read from a new input
    after its own, and those tensors in order (`gm` itself where it has none)."""
    nodes = [n for n in gm.graph.nodes if n.op == "get_attr"
             and isinstance(value := getattr(gm, n.target, None), torch.Tensor)
             and value.numel() > 1]
    if not nodes:
        return gm, []
    lifted = torch.fx.GraphModule(gm, gm.graph.__deepcopy__())
    placeholders = [n for n in lifted.graph.nodes if n.op == "placeholder"]
    fake_mode = detect_fake_mode([n.meta.get("val") for n in placeholders])
    by_name = {n.name: n for n in lifted.graph.nodes}
    constants = []
    for node in nodes:
        original = by_name[node.name]
        value = getattr(gm, node.target)
        where = (lifted.graph.inserting_after(placeholders[-1]) if placeholders
                 else lifted.graph.inserting_before(next(iter(lifted.graph.nodes))))
        with where:
            placeholder = lifted.graph.placeholder(f"constant_{len(constants)}")
        # A constant's sizes are static: symbolic ones would cost the compiled code.
        placeholder.meta["val"] = (fake_mode.from_tensor(value, static_shapes=True)
                                   if fake_mode else value)
        original.replace_all_uses_with(placeholder)
        lifted.graph.erase_node(original)
        placeholders.append(placeholder)
        constants.append(value)
    lifted.recompile()
    return lifted, constants


def passing_constants(host, constants: list[torch.Tensor]):
    """`host`, compiled from a graph whose `constants` were lifted, taking the graph's
    own inputs."""
    if not constants:
        return host

    def call(*args):
        return host(*args, *constants)
    return call

"""CPU norms of mixed dtypes called as their kernels take them, in graphs that run eagerly.

Under CPU autocast, a batch, layer or group norm of a bf16 input with float32 weights
runs PyTorch's "mixed dtype" CPU kernels: their mean and inverse deviation are float32,
and their backward takes those in float32 and the output's gradient in the input's
dtype. The meta functions the graphs were traced with say otherwise (the statistics in
the input's dtype; the gradient of the input in float32 in the backward graph): a
graph, or an op between compiled pieces, that runs eagerly called the kernel with the
traced dtypes and raised ("mixed dtype (CPU): expect parameter to have scalar type of
Float", "expected scalar type BFloat16 but found Float") into the user's training step.

Here each such call takes its arguments as the kernel wants them and hands its results
on in the traced dtypes: casts that compiled code folds away (it computes the norms in
float32 from their decompositions) and that eager code needs.
"""

from __future__ import annotations

import operator

import torch
import torch.fx

aten = torch.ops.aten

# Norm ops -> (position of the input, of the weight, of the gradient or None, positions
# of the statistics it reads).
_MIXED_CPU_KERNELS = {
    aten.native_batch_norm.default: (0, 1, None, ()),
    aten._native_batch_norm_legit.default: (0, 1, None, ()),
    aten._native_batch_norm_legit_functional.default: (0, 1, None, ()),
    aten._native_batch_norm_legit_no_training.default: (0, 1, None, ()),
    aten.native_layer_norm.default: (0, 2, None, ()),
    aten.native_group_norm.default: (0, 1, None, ()),
    aten.native_batch_norm_backward.default: (1, 2, 0, (5, 6)),
    aten.native_layer_norm_backward.default: (1, 5, 0, (3, 4)),
    aten.native_group_norm_backward.default: (1, 4, 0, (2, 3)),
}


def _value(argument):
    return argument.meta.get("val") if isinstance(argument, torch.fx.Node) else None


def _mixed(node: torch.fx.Node) -> bool:
    """Whether `node` calls a norm's mixed-dtype CPU kernel: a half-precision input on
    the CPU with float32 weights."""
    positions = _MIXED_CPU_KERNELS.get(node.target) if node.op == "call_function" else None
    if positions is None or max(positions[:2]) >= len(node.args):
        return False
    x, weight = _value(node.args[positions[0]]), _value(node.args[positions[1]])
    return (isinstance(x, torch.Tensor) and isinstance(weight, torch.Tensor)
            and x.device.type == "cpu" and x.dtype in (torch.bfloat16, torch.float16)
            and weight.dtype == torch.float32)


def _cast(graph: torch.fx.Graph, value: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
    cast = graph.call_function(aten._to_copy.default, (value,), {"dtype": dtype})
    traced = value.meta.get("val")
    if isinstance(traced, torch.Tensor):
        cast.meta["val"] = traced.to(dtype)
    return cast


def call_mixed_cpu_norms_as_kernels_take_them(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm`, its mixed-dtype CPU norm calls cast as the module docstring says (in place)."""
    graph = gm.graph
    changed = False
    for node in [n for n in graph.nodes if _mixed(n)]:
        x_position, _, gradient_position, statistics = _MIXED_CPU_KERNELS[node.target]
        x = _value(node.args[x_position])
        args = list(node.args)
        with graph.inserting_before(node):
            for position in statistics:
                if _value(args[position]).dtype != torch.float32:
                    args[position] = _cast(graph, args[position], torch.float32)
            if gradient_position is not None and _value(args[gradient_position]).dtype != x.dtype:
                args[gradient_position] = _cast(graph, args[gradient_position], x.dtype)
        node.args = tuple(args)
        for item in [user for user in node.users if user.target is operator.getitem]:
            traced = item.meta.get("val")
            if not isinstance(traced, torch.Tensor):
                continue
            with graph.inserting_after(item):
                # The cast of the kernel's result to the traced dtype, which every reader
                # of the result reads instead.
                cast = _cast(graph, item, traced.dtype)
            item.replace_all_uses_with(cast, delete_user_cb=lambda user, cast=cast: user is not cast)
        changed = True
    if changed:
        graph.lint()
        gm.recompile()
    return gm

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.buffer_views import RESHAPES, view_root
from tessel.passes.form_kernels import is_kernel, scatter_of, sole_generic
from tessel.passes.registry import ModulePass, register

# The attribute naming the combo kernel a kernel launches in.
COMBO = "tessel.combo"


def launch_count(kernels: list[ir.Operation]) -> int:
    """How many launches `kernels` (form_kernels.is_kernel ops) make: one per kernel,
    the members of a combo kernel together one."""
    combos = {ir.StringAttr(k.attributes[COMBO]).value for k in kernels if COMBO in k.attributes}
    return len(combos) + sum(1 for k in kernels if COMBO not in k.attributes)


def combo_members(function: ir.Operation) -> dict[str, list[ir.Operation]]:
    """The kernels of `function` in each combo kernel, by the combo's name, in order."""
    members: dict[str, list[ir.Operation]] = {}
    for kernel in ir.ops_where(function, is_kernel):
        if COMBO in kernel.attributes:
            members.setdefault(ir.StringAttr(kernel.attributes[COMBO]).value, []).append(kernel)
    return members


def _main_level(op: ir.Operation) -> ir.Operation:
    while op.parent is not None and op.parent.name != "func.func":
        op = op.parent
    return op


def _is_library_call(value: ir.Value) -> bool:
    owner = ir.operation_of(view_root(value).owner)
    return owner is not None and owner.name == "tkern.library_call"


def initializes_library_call(use) -> bool:
    """Whether `use` is the accumulator a library call's contraction starts from."""
    user = ir.operation_of(use.owner)
    return _main_level(user).name == "tkern.library_call" and \
        use.operand_number == len(user.operands) - 1


def _cast_beside_library_call(kernel: ir.Operation) -> bool:
    """Whether `kernel` only casts a library call's result, or casts what a library
    call starts from: the Triton host may fold such a kernel into the call (a half
    gemm's result kept half, addmm's or cuDNN's bias) instead of launching it."""
    generic = sole_generic(kernel)
    if generic is None or ir.sole_cast(generic) is None:
        return False
    return _is_library_call(generic.operands[0]) or any(
        initializes_library_call(use) for result in kernel.results for use in result.uses)


def permuted_copy(kernel: ir.Operation) -> list[int] | None:
    """Where `kernel` only copies its one input through a permutation of its dims (a
    transpose that nothing fused into), the permutation torch's `permute` takes to
    make the result of the input; else None. The Triton host may take that strided
    view of the input instead of launching it (host_program.HostWriter.permuted_view)."""
    generic = sole_generic(kernel)
    if generic is None or len(generic.operands) != 2 or len(kernel.results) != 1:
        return None
    block = generic.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    source, result = generic.operands[0], kernel.results[0]
    if len(body) != 1 or list(body[0].operands) != [block.arguments[0]] or \
            ir.ShapedType(source.type).element_type != ir.ShapedType(result.type).element_type:
        return None
    read, written = ir.indexing_maps(generic)
    # A broadcast (a constant 0 among the reads) or a projection copies, not permutes.
    if not ir.is_identity_map(written) or not read.is_permutation:
        return None
    # The input's dim k is the result's dim positions[k]: the result's dim d is the
    # input's dim positions.index(d).
    positions = ir.dim_positions(read)
    return [positions.index(d) for d in range(written.n_dims)]


@register
@dataclass(frozen=True)
class FuseHorizontallyPass(ModulePass):
    """fuse-horizontally: launch independent pointwise kernels together, as one combo
    kernel (Inductor's combo and foreach kernels).

    A compiled optimizer step (torch.optim's foreach Adam or SGD) is the same few
    updates for every parameter, each a small pointwise kernel of its own: launched one
    by one, a step over N parameters costs N launches and their host time. This pass
    groups consecutive pointwise kernels (choose-gpu-blocks' kind "pointwise", each
    keeping its block size) of static shapes, none of which reads another's result
    (directly or through ops between them): each kernel of a group is moved down to
    the last one, and all are marked with `tessel.combo`, the combo kernel's name. The
    Triton target launches a combo once, each program running one block of one member.
    A group closes at the first op that reads one of its results (a reshape of one
    moves down behind the combo instead, and its readers close it), or where the next
    member's launch arguments (a pointer and a stride per dim, for every tensor it
    reads or writes) would pass `max-arguments`: CUDA kernels take 4 KiB of
    parameters, 512 pointers, before CUDA 12.1. Left alone: kernels that write more
    than `max-points` elements (a result's, a scatter's updates': its launch costs
    little beside its run, and alone Triton compiles it once for every copy of it in a
    network's repeated blocks), constant fills (their readers take the constant), kernels that only read
    constants, kernels that only cast beside a library call (the host may fold them
    into it), kernels that only permute a tensor (the host may take a view of it instead),
    and kernels that read or produce sizes known only at run time. A group
    of one is no combo.
    """

    name: ClassVar[str] = "fuse-horizontally"
    max_arguments: int = 250
    max_points: int = 1 << 20

    def run(self, module: ir.Operation) -> None:
        for function in ir.defined_functions(module):
            name = ir.StringAttr(function.attributes["sym_name"]).value
            for number, (members, views) in enumerate(self._groups(function)):
                for member in members[:-1]:
                    member.move_before(members[-1])
                after = members[-1]
                for view in views:
                    view.move_after(after)
                    after = view
                with module.context:
                    for member in members:
                        member.attributes[COMBO] = ir.StringAttr.get(f"{name}_combo_{number}")

    def _groups(self, function: ir.Operation
                ) -> list[tuple[list[ir.Operation], list[ir.Operation]]]:
        """Each combo's members, and the reshapes of their results between them, which
        move down behind the combo's launch."""
        groups: list[tuple[list[ir.Operation], list[ir.Operation]]] = []
        members: list[ir.Operation] = []
        views: list[ir.Operation] = []
        produced: set = set()  # the members' results, and reshapes of them
        arguments = 0

        def close():
            nonlocal arguments
            if len(members) > 1:
                groups.append((list(members), list(views)))
            members.clear()
            views.clear()
            produced.clear()
            arguments = 0

        for op in function.regions[0].blocks[0].operations:
            op = op.operation
            if any(value in produced for value in ir.values_read_from_above(op)):
                if op.name in RESHAPES:
                    # A view of a member's result (a query's reshape to heads after its
                    # rotary embedding) closes no group: it follows the launch.
                    views.append(op)
                    produced.update(op.results)
                    continue
                close()
            size = _launch_arguments(op, self.max_points)
            if size is None:
                continue
            if members and arguments + size > self.max_arguments:
                close()
            members.append(op)
            produced.update(op.results)
            arguments += size
        close()
        return groups


def _launch_arguments(kernel: ir.Operation, max_points: int) -> int | None:
    """The arguments a launch of `kernel` takes (a pointer and a stride per dim, per
    tensor read or written), or None where it joins no combo (the pass's docstring)."""
    if kernel.name != "tkern.kernel" or not kernel.results or "tessel.gpu" not in kernel.attributes:
        return None
    if ir.StringAttr(ir.DictAttr(kernel.attributes["tessel.gpu"])["kind"]).value != "pointwise":
        return None
    # A scatter writes its updates' points, into its result's buffer, which holds its
    # original: a KV cache's update is a few points of a cache of millions.
    scatter = scatter_of(kernel)
    written = list(kernel.results) if scatter is None else [scatter.operands[0]]
    tensors = list(kernel.results)
    for value in dict.fromkeys(ir.values_read_from_above(kernel)):
        owner = ir.operation_of(value.owner)
        if (owner is not None and owner.name == "tensor.empty") or \
                (scatter is not None and value == scatter.operands[2]):
            continue  # the shape or the original of a result, which the host provides
        if isinstance(value.type, ir.ShapedType):
            tensors.append(value)
        elif owner is None or owner.name != "arith.constant":
            return None  # a size, computed at run time
    if len(tensors) == len(kernel.results) or _cast_beside_library_call(kernel) or \
            permuted_copy(kernel) is not None:
        return None
    if not all(ir.ShapedType(value.type).has_static_shape for value in tensors):
        return None
    if any(math.prod(ir.ShapedType(v.type).shape) > max_points for v in written):
        return None
    return sum(1 + ir.ShapedType(value.type).rank for value in tensors)


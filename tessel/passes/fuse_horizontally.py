from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.passes.buffer_views import RESHAPES, view_root
from tessel.passes.choose_gpu_blocks import is_pointwise_kernel
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
    groups pointwise kernels (choose-gpu-blocks' kind "pointwise", each keeping its
    block size) of static shapes that do not depend on one another, and reorders the
    function so that each group's members are consecutive; all are marked with
    `tessel.combo`, the combo kernel's name. The Triton target launches a combo once,
    each program running one block of one member.

    Which kernels are independent is read off the dependences, not off the order the
    kernels come in (an Adam step interleaves each parameter's step count and update:
    grouping neighbours made a combo of two per parameter). A kernel's level is the
    most kernels of the kind on any path to it from the function's arguments; kernels
    of one level are independent (a path between two passes a kernel, which raises the
    level), and a group is kernels of one level, in order, while their launch arguments
    (a pointer per tensor read or written: static strides are the kernels' constants)
    stay within `max-arguments` (CUDA kernels take 4 KiB of parameters, 512 pointers,
    before CUDA 12.1). A kernel whose results only the function returns (a new
    parameter, a running statistic: nothing reads them after it), and which reads only
    arguments and small tensors (moved, it holds no memory longer), may launch later
    than its level: it joins the group of its level or a later one that launches
    nearest to it once what it reads is done, and those that join none launch
    together, last. The function is then scheduled in its own order as far as the
    groups allow: each group launches where its last member (of its level) was, what
    reads a member after it.

    Left alone: kernels that write more than `max-points` elements (a result's, a
    scatter's updates': its launch costs little beside its run, and alone Triton
    compiles it once for every copy of it in a network's repeated blocks), constant
    fills (their readers take the constant), kernels that only read constants, kernels
    that only cast beside a library call (the host may fold them into it), kernels
    that only permute a tensor (the host may take a view of it instead), and kernels
    that read or produce sizes known only at run time. A group of one is no combo.
    """

    name: ClassVar[str] = "fuse-horizontally"
    max_arguments: int = 250
    max_points: int = 1 << 20

    def run(self, module: ir.Operation) -> None:
        for function in ir.defined_functions(module):
            name = ir.StringAttr(function.attributes["sym_name"]).value
            block = function.regions[0].blocks[0]
            ops = [op.operation for op in block.operations]
            position = {result: i for i, op in enumerate(ops) for result in op.results}
            # Per op, the positions of the ops whose results it reads.
            reads = [{position[v] for v in ir.values_read_from_above(op) if v in position}
                     for op in ops]
            order = _scheduled(ops, reads, self._groups(ops, reads))
            terminator = ops[-1]
            number = 0
            for unit in order:
                for op in unit:
                    op.move_before(terminator)
                if len(unit) > 1:
                    with module.context:
                        for member in unit:
                            member.attributes[COMBO] = ir.StringAttr.get(f"{name}_combo_{number}")
                    number += 1

    def _groups(self, ops: list[ir.Operation], reads: list[set[int]]) -> list[_Group]:
        """The combos of the function of `ops` (main-level, the terminator last), which
        read the ops at `reads`."""
        levels: list[int] = []  # kernels of the kind on a path to each op, itself included
        by_level: dict[int, list[tuple[int, int]]] = {}
        movable: list[tuple[int, int, int]] = []
        for i, op in enumerate(ops):
            level = max((levels[j] for j in reads[i]), default=0)
            size = _launch_arguments(op, self.max_points)
            if size is not None:
                if _only_returned(op, ops[-1]) and \
                        all(_cheap_to_hold(v) for v in ir.values_read_from_above(op)):
                    movable.append((level, i, size))
                else:
                    by_level.setdefault(level, []).append((i, size))
                level += 1
            levels.append(level)
        groups = [group for level, members in by_level.items()
                  for group in self._packed(level, members)]
        # A kernel nothing reads after it joins a group of its level or a later one,
        # launching where that group does once what it reads is done (the nearest such
        # group); the kernels that join none launch together, last.
        last = []
        for level, i, size in movable:
            done = max(reads[i], default=-1)
            joined = min((group for group in groups if group.level >= level and
                          group.position > done and
                          group.arguments + size <= self.max_arguments),
                         key=lambda group: abs(group.position - i), default=None)
            if joined is None:
                last.append((i, size))
            else:
                joined.members.append(i)
                joined.arguments += size
        groups += self._packed(len(ops), last)
        for group in groups:
            group.members.sort()
        return [group for group in groups if len(group.members) > 1]

    def _packed(self, level: int, members: list[tuple[int, int]]) -> list[_Group]:
        """`members` (positions and launch arguments, in order) in groups of at most
        `max_arguments`, each launched where its last member is."""
        groups: list[_Group] = []
        for i, size in members:
            if not groups or groups[-1].arguments + size > self.max_arguments:
                groups.append(_Group(level, i, [], 0))
            group = groups[-1]
            group.members.append(i)
            group.position, group.arguments = i, group.arguments + size
        return groups


@dataclass
class _Group:
    """A combo: its kernels' level, the position it launches at, its members'
    positions, and their launch arguments."""
    level: int
    position: int
    members: list[int]
    arguments: int


# A tensor an op may read late without holding memory that would otherwise be freed:
# an argument, a shape, or a few values (a statistic per channel, a step count).
_CHEAP_TO_HOLD = 1 << 16


def _cheap_to_hold(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    if not isinstance(value.type, ir.ShapedType) or owner is None or owner.name == "tensor.empty":
        return True
    shape = ir.ShapedType(value.type)
    return shape.has_static_shape and math.prod(shape.shape) <= _CHEAP_TO_HOLD


def _only_returned(op: ir.Operation, terminator: ir.Operation) -> bool:
    """Whether only `terminator` reads `op`'s results, directly or through reshapes."""
    values = list(op.results)
    while values:
        for use in values.pop().uses:
            user = _main_level(ir.operation_of(use.owner))
            if user.name in RESHAPES:
                values.extend(user.results)
            elif user != terminator:
                return False
    return True


def _scheduled(ops: list[ir.Operation], reads: list[set[int]],
               groups: list[_Group]) -> list[list[ir.Operation]]:
    """`ops` (the terminator last, left out; each reads the ops at `reads`) in an order
    where each group's members are consecutive: units (a group, or one op) in the
    order of their positions (a group's is where it launches), each once what it reads
    is done (the groups' levels keep the units acyclic)."""
    unit_of = list(range(len(ops)))
    units: dict[int, list[int]] = {i: [i] for i in range(len(ops) - 1)}
    for group in groups:
        for i in group.members:
            del units[i]
            unit_of[i] = group.position
    for group in groups:
        units[group.position] = group.members
    waiting = {unit: set() for unit in units}
    readers: dict[int, list[int]] = {unit: [] for unit in units}
    for unit, members in units.items():
        for i in members:
            for source in reads[i]:
                if unit_of[source] != unit and unit_of[source] not in waiting[unit]:
                    waiting[unit].add(unit_of[source])
                    readers[unit_of[source]].append(unit)
    ready = [unit for unit, sources in waiting.items() if not sources]
    heapq.heapify(ready)
    order = []
    while ready:
        unit = heapq.heappop(ready)
        order.append([ops[i] for i in units[unit]])
        for reader in readers[unit]:
            waiting[reader].discard(unit)
            if not waiting[reader]:
                heapq.heappush(ready, reader)
    return order


def _launch_arguments(kernel: ir.Operation, max_points: int) -> int | None:
    """The arguments a launch of `kernel` takes (a pointer per tensor read or written),
    or None where it joins no combo (the pass's docstring)."""
    if not kernel.results or not is_pointwise_kernel(kernel):
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
    return len(tensors)


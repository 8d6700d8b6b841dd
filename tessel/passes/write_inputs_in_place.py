"""write-inputs-in-place: mark the results of `main` that may be written straight into
the storage of the input they are the new value of.

A graph that writes its inputs (an optimizer's parameters and states, batch norm's
running statistics) returns their new values as results marked
`tessel.new_value_of = k` (frontend/input_mutations.py), and its host copies each into
input k after the call. Where the kernel that computes such a value is the only reader
of input k, and reads it only at the point it writes (an element-wise kernel: element i
read to compute element i), writing the value into input k's storage changes nothing
that any other part of the program reads: no kernel or library call after it reads the
old value. This pass marks those results `tessel.in_place`; a target's host then hands
input k to the kernel as that result's buffer, which saves the allocation and the copy
back, as Inductor's kernels write an optimizer's states in place.

A scatter (a library call or kernel of tm_tensor.scatter: index_put_, index_copy_, a
static KV cache's update) whose original is input k, read by nothing else, is marked
too: the host then scatters into input k itself instead of into a copy of it, and the
input is not copied back. Each index the scatter writes is read only at that index, and the
other elements keep their values: the same argument as for the element-wise kernel.

Nothing is marked in a function with runtime checks: a failed one runs the call
eagerly, on the inputs as they were before it. With `kernel-checks-abort` (the Triton
target, whose kernels' checks are Triton's device asserts: under TRITON_DEBUG=1 a
failed one stops the program, and nothing runs eagerly), only checks outside kernels
count (the host's). A marked result's generic also gets an
empty init of its own: bufferization (the CPU target's) would otherwise give it the
buffer of an earlier value whose init was the same `tensor.empty` (CSE merges them),
and that earlier value would then be written into the input before the input's last
read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch_mlir.dialects import tensor

from tessel import ir
from tessel.passes.buffer_views import view_root
from tessel.passes.form_kernels import KERNEL_OPS, sole_generic
from tessel.passes.fuse_returned_producers import elementwise
from tessel.passes.registry import ModulePass, register

# On a result of main: the position of the input whose new value it is (set by the
# frontend), and that the kernel computing it may write it into that input (this pass).
NEW_VALUE_OF = "tessel.new_value_of"
IN_PLACE = "tessel.in_place"


def result_attributes(function: ir.Operation) -> list[dict[str, ir.Attribute]]:
    """Each result's attributes of `function` (a func.func), by name."""
    count = len(ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).results)
    if "res_attrs" not in function.attributes:
        return [{} for _ in range(count)]
    return [{named.name: named.attr for named in ir.DictAttr(attributes)}
            for attributes in ir.ArrayAttr(function.attributes["res_attrs"])]


def set_result_attributes(function: ir.Operation,
                          attributes: list[dict[str, ir.Attribute]]) -> None:
    function.attributes["res_attrs"] = ir.ArrayAttr.get(
        [ir.DictAttr.get(named) for named in attributes])


def in_place_results(function: ir.Operation) -> dict[int, int]:
    """The results of `function` marked `tessel.in_place`, each to the input position
    it is written into."""
    return {index: ir.IntegerAttr(named[NEW_VALUE_OF]).value
            for index, named in enumerate(result_attributes(function))
            if IN_PLACE in named and NEW_VALUE_OF in named}


def _written_operand(value: ir.Value) -> tuple[ir.Operation, int] | None:
    """(The generic, the index of its init operand) that computes `value`, where
    `value` is a result of a kernel that is one linalg.generic; else None."""
    kernel = ir.operation_of(value.owner)
    generic = sole_generic(kernel)
    if generic is None:
        return None
    yielded = kernel.regions[0].blocks[0].operations[1].operands[
        ir.OpResult(value).result_number]
    if ir.operation_of(yielded.owner) != generic:
        return None
    inputs = len(generic.operands) - len(generic.results)
    return generic, inputs + ir.OpResult(yielded).result_number


def scattered_into(value: ir.Value) -> ir.Operation | None:
    """The tm_tensor.scatter that computes `value`, a result of a library call or a
    kernel that scatters (form-kernels), else None."""
    kernel = ir.operation_of(value.owner)
    if kernel is None or kernel.name not in KERNEL_OPS:
        return None
    block = kernel.regions[0].blocks[0]
    yielded = block.operations[len(block.operations) - 1].operands[
        ir.OpResult(value).result_number]
    scatter = ir.operation_of(yielded.owner)
    return scatter if scatter is not None and scatter.name == "tm_tensor.scatter" else None


def _scattered_in_place(value: ir.Value, argument: ir.Value) -> bool:
    """Whether `value` is `argument` scattered into, and that scatter is the only reader
    of `argument`."""
    scatter = scattered_into(value)
    return scatter is not None and scatter.operands[-1] == argument \
        and value.type == argument.type \
        and all(ir.operation_of(use.owner) == scatter and use.operand_number == 2
                for use in argument.uses)


def writable_in_place(value: ir.Value, argument: ir.Value, returned: list[ir.Value]) -> bool:
    """Whether `value`, returned once as the new value of `argument`, may be written into
    `argument`'s storage: no view of it is returned beside it, and either it is
    `argument` scattered into by a scatter that is `argument`'s only reader, or it is a
    result of a kernel that is one element-wise linalg.generic, of `argument`'s static
    type, and `argument` is read by that generic alone, at the point it writes `value`
    (each program of the kernel reads the points it writes before it writes them)."""
    if sum(1 for other in returned if view_root(other) == value) != 1:
        return False
    if _scattered_in_place(value, argument):
        return True
    written = _written_operand(value)
    if written is None or value.type != argument.type \
            or not ir.ShapedType(value.type).has_static_shape:
        return False
    generic, operand = written
    # An init the body reads is a value, which _own_init would drop.
    if not elementwise(generic) or any(
            True for _ in generic.regions[0].blocks[0].arguments[operand].uses):
        return False
    maps = ir.indexing_maps(generic)
    for use in argument.uses:
        # A reader other than the generic (another kernel, a view, a library call, an
        # op of the same kernel) may read the input after the write.
        if ir.operation_of(use.owner) != generic or \
                str(maps[use.operand_number]) != str(maps[operand]):
            return False
    return True


def _own_init(value: ir.Value) -> None:
    """Give the generic that computes `value` (writable_in_place) an empty init that no
    other op shares."""
    generic, operand = _written_operand(value)
    result = ir.RankedTensorType(value.type)
    kernel = ir.operation_of(value.owner)
    with ir.InsertionPoint(kernel), kernel.location:
        generic.operands[operand] = tensor.EmptyOp(result.shape, result.element_type).result


@register
@dataclass(frozen=True)
class WriteInputsInPlacePass(ModulePass):
    """write-inputs-in-place: mark the new values of inputs that their kernel may write
    into the input's storage (`tessel.in_place` on main's result)."""

    name: ClassVar[str] = "write-inputs-in-place"
    kernel_checks_abort: bool = False   # write-inputs-in-place{kernel-checks-abort=true}

    def run(self, module: ir.Operation) -> None:
        with module.context:
            for function in ir.ops_where(module, lambda op: op.name == "func.func"):
                self._mark(function)

    def _falls_back(self, check: ir.Operation) -> bool:
        """Whether a failure of runtime check `check` runs the call eagerly."""
        return not self.kernel_checks_abort or check.parent.name == "func.func"

    def _mark(self, function: ir.Operation) -> None:
        attributes = result_attributes(function)
        if not function.regions[0].blocks or not any(NEW_VALUE_OF in named
                                                     for named in attributes):
            return
        if any(self._falls_back(check) for check in
               ir.ops_where(function, lambda op: op.name == "cf.assert")):
            # A failed runtime check runs the call eagerly (eager_fallback.py), which
            # must find the inputs as they were, not written by the kernels before it.
            return
        block = function.regions[0].blocks[0]
        returned = list(block.operations[len(block.operations) - 1].operands)
        claimed: set[int] = set()  # inputs that a result is written into
        for index, named in enumerate(attributes):
            if NEW_VALUE_OF not in named:
                continue
            position = ir.IntegerAttr(named[NEW_VALUE_OF]).value
            if IN_PLACE not in named and position not in claimed and writable_in_place(
                    returned[index], block.arguments[position], returned):
                named[IN_PLACE] = ir.UnitAttr.get()
                if scattered_into(returned[index]) is None:
                    _own_init(returned[index])
            if IN_PLACE in named:
                claimed.add(position)
        set_result_attributes(function, attributes)

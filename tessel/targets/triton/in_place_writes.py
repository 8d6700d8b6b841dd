"""The inputs a kernel may write a result over, as Inductor's in-place buffers do: a
convolution's result, say, which the kernel adding its bias and applying its norm and
activation replaces, so that the two are never held at once.

Overwriting is safe where every point of the input is read, before it is overwritten,
by the program that overwrites it: the kernel is one all-parallel linalg.generic (a
pointwise kernel, each program loading its points and then storing them) that reads the
input only as an operand through the result's own indexing map, never gathered at other
points. Whether the input is dead after the launch, held in the result's element type
and laid out as the result is for the host program to decide (its element type may not
be the IR's: a half convolution's result is f32 in the IR) and its buffer plan
(host_records.writing_in_place).
"""

from __future__ import annotations

from tessel import ir
from tessel.passes.form_kernels import kernel_body, sole_generic


def overwritable_inputs(kernel: ir.Operation) -> dict[int, list[ir.Value]]:
    """Result index -> the inputs of `kernel` (main's values) that its result may be
    written over."""
    generic = sole_generic(kernel)
    if generic is None:
        return {}
    decision = ir.DictAttr(kernel.attributes["tessel.gpu"])
    if ir.StringAttr(decision["kind"]).value != "pointwise" or not ir.all_parallel(generic):
        return {}
    if list(kernel_body(kernel)[-1].operands) != list(generic.results):
        return {}
    maps = ir.indexing_maps(generic)
    inputs = list(generic.operands)[:len(maps) - len(generic.results)]
    gathered = {value for op in generic.regions[0].blocks[0].operations
                for value in ir.values_read_from_above(op.operation)}
    overwritable: dict[int, list[ir.Value]] = {}
    for index, result in enumerate(generic.results):
        written = maps[len(inputs) + index]
        positions = ir.dim_positions(written)
        if None in positions or sorted(positions) != list(range(written.n_dims)):
            continue  # not every point of the result is written by one loop point
        overwritable[index] = [
            value for position, value in enumerate(inputs)
            if inputs.index(value) == position and value not in gathered
            and isinstance(value.type, ir.RankedTensorType)
            and ir.ShapedType(value.type).shape == ir.ShapedType(result.type).shape
            and all(maps[p] == written for p, v in enumerate(inputs) if v == value)]
    return overwritable

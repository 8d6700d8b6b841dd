"""Triton source for one `tkern.kernel` of the `gpu` pipeline: the entry point of the
Triton kernel generator, which picks the kernel's shape and its module.

The pipeline leaves five shapes of kernel (see fuse-tiles, fuse-gemm-epilogues and
choose-gpu-blocks):

- pointwise (pointwise_kernel.py): linalg.generic ops over a whole tensor. Each program
  computes BLOCK consecutive points of the row-major iteration space, or a 2-D tile of
  it where an operand is contiguous along another dim than the results
  (transposing_tiles.py); every operand is loaded through its indexing map and the
  strides the host passes, so broadcasts, transposes and non-contiguous inputs need no
  copies. A kernel with a reduction but no forall is one row.
- row (row_kernel.py): an scf.forall with one program per row, whose body works on
  1 x row tiles: elementwise generics, reductions of the whole row to one value
  (reductions.py), and a parallel_insert_slice per result. Where a tile lies across
  memory, a program holds a tile of rows instead (row_tiles.py).
- gemm template (gemm_template.py): a linalg.matmul with element-wise generics before
  (its initial accumulator) and after (its epilogue), on a 2-D tile with tl.dot.
- scan (scan_kernel.py): tm_tensor.scan, a program per scanned row.
- scatter (scatter_kernel.py): a tm_tensor.scatter that stores its updates, a lane per
  update element, with the generics that compute its index rows and its updates
  (fuse-into-scatters).

Pointwise kernels that fuse-horizontally groups are launched together, as one combo
kernel (combo_kernel.py) that calls each member's function (`member`).

What every shape shares: the kernel writer (writer.py: registers, reads through
indexing maps, recompute, body ops, sections), index expressions (indexing.py: sympy,
printed once), the op table (op_table.py), element types (dtypes.py) and the stores of
results (stores.py). What a generator cannot express raises UnsupportedKernel
(unsupported.py), naming the op; the graph then runs eagerly around it.

Dynamic sizes are int parameters (`size0`, ...) that the host passes: each is a root
of sizes.py, so the host computes it from the graph's inputs. Index arithmetic, masks,
row loops and grids then use the parameter where a static kernel has a literal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tessel import ir
from tessel.passes.choose_gpu_blocks import template_programs
from tessel.passes.form_kernels import kernel_body, kernel_name, scatter_of
from tessel.targets.triton import sizes
from tessel.targets.triton.dtypes import element_name, scalar_literal
from tessel.targets.triton.gemm_template import gemm_template
from tessel.targets.triton.indexing import Extent, text
from tessel.targets.triton.pointwise_kernel import pointwise_kernel
from tessel.targets.triton.reductions import ReductionWriter
from tessel.targets.triton.row_kernel import row_kernel
from tessel.targets.triton.scan_kernel import scan_kernel
from tessel.targets.triton.scatter_kernel import scatter_kernel
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import (
    KernelResult,
    function_source,
    launch_parameters,
)


@dataclass
class KernelSource:
    """One Triton kernel and what its launch needs."""
    name: str
    source: str                     # the @triton.jit function
    inputs: list[ir.Value]          # main-level tensors it reads, in parameter order
    results: list[KernelResult]     # buffers it writes, after the inputs
    grid: tuple[int | str, ...]     # programs; a str is Python over the size parameters
    block: int | dict[str, int]     # BLOCK, or a gemm template's block sizes by name
    num_warps: int
    sizes: list[sizes.Root] = field(default_factory=list)  # size parameters, last
    parameters: list[str] = field(default_factory=list)  # what a launch passes, in order
    num_stages: int | None = None   # a gemm template's K-loop pipeline depth
    gemm: tuple[int, int, int] | None = None  # a gemm template's m, n, k, if it is tuned
    # The @triton.jit function that runs it: `name`, or an earlier kernel's with the same
    # source (repeated blocks of a network), which Triton then compiles once.
    function: str = ""

    def __post_init__(self):
        self.function = self.function or self.name


def generate(kernel: ir.Operation, channels_last: frozenset = frozenset(),
             narrowed: Mapping = MappingProxyType({}), member: bool = False,
             innermost: Mapping = MappingProxyType({})) -> KernelSource:
    """The Triton source of `kernel` (form_kernels.is_kernel, with a `tessel.gpu` decision).
    `channels_last` are the values of main that the host keeps channels-last
    (layouts.py): a pointwise kernel with such a result walks [N, C, H, W] and [N, C, L]
    spaces in NHWC (NLC) order, and reads such inputs as laid out so. Inputs
    in `narrowed` are held in a narrower float type than their IR type
    (host_program.narrowed_values) and are widened as they are loaded; its own results
    in `narrowed` are stored in their narrower type. A `member` of a
    combo kernel (a pointwise kernel, fuse-horizontally) is a function that the combo
    kernel calls with its program's number (combo_kernel.py). `innermost`: the dim
    innermost in memory of main's tensors not laid out row-major
    (layouts.innermost_dims), for row kernels whose rows lie across it."""
    decision = ir.DictAttr(kernel.attributes["tessel.gpu"])
    writer = ReductionWriter(kernel_name(kernel), ir.DenseI64ArrayAttr(decision["block"])[0],
                             narrowed=narrowed, member=member, innermost=innermost,
                             narrowed_results={index: narrowed[result]
                                               for index, result in enumerate(kernel.results)
                                               if result in narrowed})
    num_warps = ir.IntegerAttr(decision["num_warps"]).value
    body = kernel_body(kernel)
    forall = next((op for op in body if op.name == "scf.forall"), None)
    scatter = scatter_of(kernel)
    _capture_constants(kernel, writer)
    try:
        if kernel.name == "tm_tensor.scan":
            grid = scan_kernel(writer, kernel)
        elif scatter is not None:
            grid = scatter_kernel(writer, scatter, body)
        elif ir.StringAttr(decision["kind"]).value == "gemm_template":
            block = list(ir.DenseI64ArrayAttr(decision["block"]))
            gemm = gemm_template(writer, body)
            grid = (template_programs(gemm[0], gemm[1], block[0], block[1]),)
            return KernelSource(writer.name, function_source(writer), writer.inputs,
                                writer.results, grid, dict(zip(writer.constants, block)),
                                num_warps, parameters=launch_parameters(writer),
                                num_stages=ir.IntegerAttr(decision["num_stages"]).value,
                                gemm=None if "forced" in decision else gemm)
        elif forall is not None:
            grid = row_kernel(writer, forall, body)
            if writer.row_tile is not None:
                num_warps = writer.row_tile.num_warps
        else:
            writer.channels_last = any(result in channels_last for result in kernel.results)
            grid = pointwise_kernel(writer, body, channels_last)
    except sizes.UnknownSize as error:
        raise UnsupportedKernel(writer.name, str(error)) from error
    return KernelSource(writer.name, function_source(writer), writer.inputs, writer.results,
                        _grid(grid), writer.block, num_warps, writer.size_roots,
                        launch_parameters(writer))


def _grid(programs: tuple[Extent, ...]) -> tuple[int | str, ...]:
    """A launch grid as the host program takes it: ints, or Python over the size
    parameters."""
    return tuple(extent if isinstance(extent, int) else text(extent) for extent in programs)


def _capture_constants(kernel: ir.Operation, writer: ReductionWriter) -> None:
    """Scalar constants the kernel uses from `main` become literals."""
    def visit(op):
        for operand in op.operands:
            owner = ir.operation_of(operand.owner)
            if owner is not None and owner.name == "arith.constant" and \
                    not isinstance(operand.type, ir.ShapedType):
                writer.literals[operand] = (scalar_literal(owner.attributes["value"]),
                                            f"literal:{element_name(operand)}")
        return ir.WalkResult.ADVANCE
    kernel.walk(visit)

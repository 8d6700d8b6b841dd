"""Generates the Triton target's host program: readable Python that walks `main` in
order, allocates each kernel's output buffers, launches the Triton kernels, calls aten
for the library calls (gemms: cuBLAS, convolutions: cuDNN), and reshapes, pads and
concatenates in between. Dynamic sizes are computed from the graph's inputs
(sizes.host_expression) where buffers are allocated, views shaped and kernels launched."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import re
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch

from tessel import ir
from tessel.passes.buffer_views import view_root
from tessel.passes.call_native_ops import NativeCall, Operand, native_call, native_functions
from tessel.passes.contractions import (
    DEPTHWISE_CONVOLUTION,
    adds_updates,
    convolution_pair,
    stores_updates,
)
from tessel.passes.fold_bias_into_gemm import is_row_bias_broadcast
from tessel.passes.form_kernels import is_kernel, kernel_name, scatter_of, sole_generic
from tessel.passes.fuse_horizontally import (
    COMBO,
    combo_members,
    initializes_library_call,
    permuted_copy,
)
from tessel.passes.write_inputs_in_place import in_place_results
from tessel.signature import GraphSignature, TensorInput
from tessel.targets.triton import cuda_graph_trees, layouts, sizes, strided_views
from tessel.targets.triton.dtypes import TORCH_DTYPES, element_name, scalar_literal
from tessel.targets.triton.host_records import (
    Allocate,
    Bind,
    Record,
    Return,
    Statement,
    freeing_buffers,
    printed,
    reusing_buffers,
    skipping_unread_views,
    taking_dead_copies,
    writing_in_place,
)
from tessel.targets.triton.in_place_writes import overwritable_inputs
from tessel.targets.triton.kernel_source import KernelSource
from tessel.targets.triton.launcher import dry_running
from tessel.targets.triton.op_table import CMPI_OPERATORS, CMPI_PREDICATES
from tessel.targets.triton.padded_reads import pad_literal, padding_of
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import fill_constant

# Convolutions the host passes to one aten convolution as they are (image, weight,
# padding, bias); the grouped one needs its image and weight reshaped first.
_ATEN_CONVOLUTIONS = ("linalg.conv_2d_nchw_fchw", DEPTHWISE_CONVOLUTION)
GROUPED_CONVOLUTION = "linalg.conv_2d_ngchw_gfchw"
# Integer arithmetic on sizes at the host level, as Python (torch-mlir's view lowering
# infers a -1 size with it); divsi truncates toward zero, as Python's // does not.
_SIZE_ARITHMETIC = {"arith.addi": "({} + {})", "arith.subi": "({} - {})",
                    "arith.muli": "({} * {})", "arith.divsi": "int({} / {})",
                    "arith.floordivsi": "({} // {})", "arith.minsi": "min({}, {})",
                    "arith.maxsi": "max({}, {})",
                    "arith.select": "({1} if {0} else {2})"}
_SIZE_CASTS = ("arith.index_cast", "arith.extui", "arith.extsi", "arith.trunci")
_SIZE_OPS = (*_SIZE_ARITHMETIC, *_SIZE_CASTS, "tensor.dim", "arith.cmpi", "affine.apply",
             "tensor.from_elements")


# Schema types whose values the IR holds as ints (torch-mlir's): a native call's
# argument of one is refused.
_ENUM_ARGUMENTS = frozenset({"ScalarType", "Layout", "MemoryFormat", "Device", "Generator"})


def _python_literal(value) -> str:
    """A native call's constant argument as Python source (float('inf') for inf)."""
    if isinstance(value, list):
        return f"[{', '.join(_python_literal(element) for element in value)}]"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    return repr(value)


def _shape_text(shape: list[int | str]) -> str:
    return "(" + "".join(f"{size}, " for size in shape).removesuffix(" ") + ")"


def narrowed_values(module: ir.Module) -> dict[ir.Value, str]:
    """Values of `main` that the host program keeps in a narrower float type than their
    IR type, each with the element type it is kept in, where every reader is a Triton
    kernel that first rounds the value to that type (views of them too):
    - the f32 results of gemms on half operands that start from zero or a row bias
      (addmm's): cuBLAS's half gemm accumulates in f32 and rounds the same way, so its
      half result is exact (other such gemms get an f32 result, `matmul_in_f32`);
    - the f32 results of Triton kernels (a convolution's bias added in f32, read by a
      concatenation that rounds it): the kernel stores them rounded (stores.py), half
      the bytes, and its readers see the values they rounded to.
    Kernels widen a narrowed value on load (kernel_source)."""
    main = ir.function_named(module, "main")
    narrowed = {}
    for op in ir.ops_where(main, lambda op: op.name == "tkern.library_call"):
        contraction = op.regions[0].blocks[0].operations[0].operation
        if contraction.name in _ATEN_CONVOLUTIONS or \
                element_name(contraction.operands[0]) == element_name(op.results[0]):
            continue
        init = contraction.operands[-1]
        if not (_skipped_fill(init) and fill_constant(init) in ("0.0", "0")) \
                and _row_bias(init) is None:
            # The host adds an f32 init tensor (an autocast linear's bias, rounded to
            # half and widened back) to the product: the sum is f32, which its readers
            # round once. Added to a half product it would round twice, and come out
            # f32 where a half tensor was expected (by the next gemm, say).
            continue
        half = ir.RankedTensorType(contraction.operands[0].type).element_type
        narrowed.update(dict.fromkeys(_rounded_on_read(op.results[0], half), str(half)))
    with module.context:
        halves = (ir.BF16Type.get(), ir.F16Type.get())
    for op in ir.ops_where(main, _stores_its_results):
        for result in op.results:
            if element_name(result) != "f32" or _skipped_fill(result):
                continue
            for half in halves:
                closure = _rounded_on_read(result, half)
                narrowed.update(dict.fromkeys(closure, str(half)))
                if closure:
                    break
    return narrowed


def _stores_its_results(op: ir.Operation) -> bool:
    """Whether `op` is a Triton kernel whose results stores.py writes (a scan and a
    scatter write their own)."""
    return layouts.generated_kernel(op) and op.name != "tm_tensor.scan" \
        and scatter_of(op) is None


def _rounded_on_read(value: ir.Value, half: ir.Type) -> list[ir.Value]:
    """`value` and its views, where every reader of them rounds to `half` first
    (`_rounds_on_read`); else nothing."""
    closure, frontier = [], [value]
    while frontier:
        value = frontier.pop()
        closure.append(value)
        for use in value.uses:
            user = _main_level_user(use)
            if user.name in layouts.VIEWS + ("tensor.cast", "tensor.extract_slice"):
                frontier.append(user.results[0])
            elif not _rounds_on_read(use, half):
                return []
    return closure


def _rounds_on_read(use, half: ir.Type) -> bool:
    """Whether `use` is read by a Triton kernel that only truncates it to `half`: an
    input of a linalg.generic whose body only truncates it, directly or through the
    slices a row loop takes of it (a residual add and norm fused behind the gemm)."""
    kernel = _main_level_user(use)
    return kernel.name != "tkern.library_call" and is_kernel(kernel) and \
        _truncated_by_reader(use, half)


def _truncated_by_reader(use, half: ir.Type) -> bool:
    generic = ir.operation_of(use.owner)
    if generic is not None and generic.name == "tensor.extract_slice":
        slices = list(generic.results[0].uses)
        return bool(slices) and all(_truncated_by_reader(u, half) for u in slices)
    if generic is not None and generic.name == "tensor.extract":  # a gather's element
        return _only_rounded(generic.results[0], half)
    if generic is None or generic.name != "linalg.generic":
        return False
    inputs = len(generic.operands) - len(generic.results)
    if use.operand_number >= inputs:
        return False
    return _only_rounded(generic.regions[0].blocks[0].arguments[use.operand_number], half)


def _only_rounded(element: ir.Value, half: ir.Type) -> bool:
    readers = [ir.operation_of(u.owner) for u in element.uses]
    return bool(readers) and all(r.name == "arith.truncf" and r.results[0].type == half
                                 for r in readers)


def _strided_results(returned, signature: GraphSignature, channels_last: frozenset
                     ) -> dict[ir.Value, tuple[int, ...]]:
    """The results eager returns strided (static strides that lay them out densely, in
    another order than row-major) that only main's return reads, to those strides: their
    kernels write them so (their stores take their strides at launch), instead of writing
    them row-major for the host to copy. A ViT split around its attentions returned its
    residual stream in the (tokens, batch, dims) order nn.MultiheadAttention's batch_first
    transposes leave, copied once a layer."""
    found = {}
    for value, result in zip(returned, signature.results):
        if result.stride is None or result.any_layout or value in channels_last \
                or not all(step.isdigit() for step in result.stride):
            continue
        shape, stride = ir.ShapedType(value.type), tuple(int(step) for step in result.stride)
        if not shape.has_static_shape or shape.rank != len(stride) or \
                any(_main_level_user(use).name != "func.return" for use in value.uses):
            continue
        if _dense(tuple(shape.shape), stride):
            found[value] = stride
    return found


def _dense(size: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """Whether `stride` lays out a tensor of `size` densely, without overlap."""
    meta = torch.empty_strided(size, stride, device="meta")
    return torch._prims_common.is_non_overlapping_and_dense_or_false(meta)


def _skipped_fill(value: ir.Value) -> bool:
    """Whether `value` is a constant fill of a kernel of its own that only kernels
    read, and scatters that start from it: the host does not launch it, its kernel
    readers use the constant (kernel_source.fill_constant), and each scatter or
    inserted slice starts from a fill of its own (`filled_or_copied`), not from a copy
    of a shared one."""
    owner = ir.operation_of(value.owner)
    if owner is not None and owner.name == "arith.constant":  # a splat: kernels may load it
        return isinstance(value.type, ir.ShapedType) and all(map(_host_writes_a_copy, value.uses))
    return owner is not None and owner.name == "tkern.kernel" and len(owner.results) == 1 \
        and fill_constant(value) is not None \
        and all(is_kernel(_main_level_user(use)) or _host_writes_a_copy(use) for use in value.uses)


def _fill_literal(value: ir.Value) -> str:
    """The constant that a skipped fill (`_skipped_fill`) holds everywhere."""
    owner = ir.operation_of(value.owner)
    if owner.name == "arith.constant":
        return scalar_literal(owner.attributes["value"])
    return fill_constant(value)


def _host_writes_a_copy(use) -> bool:
    """Whether `use` is a value that the host copies to write into: the original of a
    scatter (which it runs, or hands to the scatter's kernel), or the destination of a
    slice it inserts."""
    user = ir.operation_of(use.owner)
    if user.name == "tensor.insert_slice":
        return use.operand_number == 1 and user.parent.name == "func.func"
    return user.name == "tm_tensor.scatter" and use.operand_number == 2


def _main_level_user(use) -> ir.Operation:
    """The op of `main`'s body that contains the user of `use` (kernels read main's
    values from inside their regions)."""
    user = ir.operation_of(use.owner)
    while user.parent is not None and user.parent.name != "func.func":
        user = user.parent
    return user


def scatter(buffer: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor,
            accumulate: bool) -> None:
    """`scatter(...)` in host programs: tm_tensor.scatter as index_put_ (an
    accumulating one as index_add_: `_add_at_offsets`). Row i of
    `indices` addresses `buffer`'s leading dims, one column per dim, and the slice
    updates[i] fills its trailing dims. Where the slice spans indexed dims too, it
    starts at the index there: torch-mlir scatters an embedding's gradient as [N, 1, D]
    updates into [V, D], and a static KV cache's new entries as [N, 1, 1, 1, 1] into
    [B, H, S, D]. Each such index column is then shaped to run along its slice dim, so
    that index_put_'s indexing result has the updates' shape. Skipped in a dry run
    (launcher.dry_running), where the indices come from kernels that did not run:
    out-of-range garbage."""
    if dry_running():
        return
    depth = indices.shape[1]
    spanned = depth + updates.dim() - 1 - buffer.dim()  # indexed dims the slice spans
    columns = []
    for dim, column in enumerate(indices.long().unbind(1)):
        column = column.view(-1, *[1] * spanned)
        position = dim - depth + spanned  # its slice dim, if it has one
        if position >= 0 and updates.shape[1 + position] != 1:
            along = [1] * (1 + spanned)
            along[1 + position] = updates.shape[1 + position]
            column = column + torch.arange(along[1 + position], device=column.device).view(along)
        columns.append(column)
    if accumulate and buffer.is_contiguous() and not torch.are_deterministic_algorithms_enabled():
        _add_at_offsets(buffer, columns, updates)
    else:
        buffer.index_put_(columns, updates, accumulate=accumulate)


def _add_at_offsets(buffer: torch.Tensor, columns: list[torch.Tensor],
                    updates: torch.Tensor) -> None:
    """`buffer.index_put_(columns, updates, accumulate=True)` as index_add_ into the
    contiguous buffer at each element's offset: atomic adds, where CUDA's index_put_
    sorts the indices first. A gather's backward scatters one index row per element;
    of static sizes, it is a scatter kernel instead (scatter_kernel.py), but for bf16
    in Triton's interpreter."""
    depth, trailing = len(columns), buffer.shape[len(columns):]
    offsets = sum(column * buffer.stride(dim) for dim, column in enumerate(columns))
    offsets = offsets.view(*offsets.shape, *[1] * len(trailing))
    for position, size in enumerate(trailing):
        along = [1] * offsets.dim()
        along[offsets.dim() - len(trailing) + position] = size
        steps = torch.arange(size, device=buffer.device) * buffer.stride(depth + position)
        offsets = offsets + steps.view(along)
    buffer.view(-1).index_add_(0, offsets.reshape(-1), updates.expand(offsets.shape).reshape(-1))


def matmul_in_f32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`matmul_in_f32(a, b)` in host programs: a @ b of half tensors, accumulated and
    returned in f32, as linalg.matmul computes it on half operands with an f32
    accumulator: cuBLAS's mixed-precision gemm on CUDA, the widened product elsewhere."""
    if a.is_cuda and a.dim() == b.dim() == 2:
        return torch.mm(a, b, out_dtype=torch.float32)
    if a.is_cuda and a.dim() == b.dim() == 3 and a.shape[0] == b.shape[0]:
        return torch.bmm(a, b, out_dtype=torch.float32)
    return torch.matmul(a.float(), b.float())


_AFFINE_BINARY = ((ir.AffineAddExpr, "+"), (ir.AffineMulExpr, "*"),
                  (ir.AffineFloorDivExpr, "//"), (ir.AffineModExpr, "%"))


def _affine_python(expr, operands: list[str], n_dims: int) -> str:
    """An affine expression over `operands` (the map's dims, then its symbols) as
    Python on ints (floordiv and mod round as Python's // and % do)."""
    if isinstance(expr, ir.AffineConstantExpr):
        return str(expr.value)
    if isinstance(expr, ir.AffineDimExpr):
        return operands[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return operands[n_dims + expr.position]
    if isinstance(expr, ir.AffineCeilDivExpr):
        return (f"-(-{_affine_python(expr.lhs, operands, n_dims)} // "
                f"{_affine_python(expr.rhs, operands, n_dims)})")
    for kind, operator in _AFFINE_BINARY:
        if isinstance(expr, kind):
            return (f"({_affine_python(expr.lhs, operands, n_dims)} {operator} "
                    f"{_affine_python(expr.rhs, operands, n_dims)})")
    raise UnsupportedKernel("affine.apply", f"the expression {expr}")


def _concat_chains(ops: list[ir.Operation]) -> dict[ir.Value, list[ir.Operation]]:
    """Concats that each extend the one before (its pieces, then more, along the same
    dim), as densenet concatenates all earlier features at every layer: each concat's
    result mapped to its chain, for chains of two or more. The host program gives a
    chain one buffer, of the last concat's shape, and copies each piece into it once:
    every concat is then a view of that buffer, instead of a copy of all its pieces."""
    chains: list[list[ir.Operation]] = []
    for op in ops:
        if op.name != "tensor.concat" or not ir.ShapedType(op.results[0].type).has_static_shape:
            continue
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        pieces = list(op.operands)
        for chain in chains:
            last = chain[-1]
            before = list(last.operands)
            if ir.IntegerAttr(last.attributes["dim"]).value == dim \
                    and len(pieces) > len(before) and pieces[:len(before)] == before:
                chain.append(op)
                break
        else:
            chains.append([op])
    return {op.results[0]: chain for chain in chains if len(chain) > 1 for op in chain}


def _row_bias(value: ir.Value) -> ir.Value | None:
    """The 1-D tensor that `value` broadcasts along its rows, widened, when a kernel of its
    own computes only that (a gemm's initial accumulator from fold-bias-into-gemm) and
    only gemms' library calls start from it, else None: each call then reads the 1-D
    tensor as addmm's bias. Several calls share one broadcast where their gemms share a
    bias (one Linear applied again: ALBERT's layers share their weights), since CSE
    merges the broadcasts that fold-bias-into-gemm made for each."""
    generic = sole_generic(ir.operation_of(value.owner))
    if generic is None or not is_row_bias_broadcast(generic) \
            or not all(initializes_library_call(use) for use in value.uses):
        return None
    return generic.operands[0]


@dataclass(frozen=True)
class _Matmul:
    """A contraction whose indexing maps are a matmul's: `batch` leading dims of the
    result, the trailing `leading` of them that each operand has (fewer: broadcast),
    and whether each operand is read transposed (its last two dims swapped)."""
    batch: int
    leading: tuple[int, int]
    transposed: tuple[bool, bool]


def _matmul(maps: list[ir.AffineMap]) -> _Matmul | None:
    """The matmul that `maps` (A's, B's and C's) describe, if they describe one."""
    terms = [[e.position for e in affine_map.results] for affine_map in maps]
    output = terms[2]
    contracted = set(terms[0] + terms[1]) - set(output)
    if len(contracted) != 1 or len(output) < 2:
        return None  # an outer product, or several dims contracted at once
    (k,) = contracted
    batch, m, n = output[:-2], output[-2], output[-1]
    leading, transposed = [], []
    for term, in_order in ((terms[0], [m, k]), (terms[1], [k, n])):
        last_two = term[-2:]
        if len(term) < 2 or set(last_two) != set(in_order) or \
                batch[len(batch) - len(term) + 2:] != term[:-2]:
            return None
        leading.append(len(term) - 2)
        transposed.append(last_two != in_order)
    return _Matmul(len(batch), tuple(leading), tuple(transposed))


def _aten_contraction(a: str, b: str, maps: list[ir.AffineMap],
                      matmul: str = "torch.matmul", bias: str | None = None
                      ) -> tuple[str, bool]:
    """`A B` of a contraction `C += A B`, read off its indexing maps: torch.matmul on
    (transposed) views where the maps are a matmul's, batched or broadcast (cuBLAS gets
    the transposes as flags); torch.einsum for any other contraction: on a large bf16
    gemm, einsum with a transposed B ran well behind matmul.
    With `bias` (a row vector C starts from): a 2-D half gemm is torch.addmm, which
    cuBLAS runs with the bias in its epilogue; otherwise the bias is added.
    Also whether the result is new memory: einsum returns a view of an operand for a
    mere permutation."""
    plus_bias = f" + {bias}" if bias else ""
    structure = _matmul(maps)
    if structure is None:
        letters = "abcdefghijklmnopqrstuvwxyz"
        a_term, b_term, output = ("".join(letters[e.position] for e in affine_map.results)
                                  for affine_map in maps)
        widen = "" if matmul == "torch.matmul" else ".float()"
        return (f"torch.einsum('{a_term},{b_term}->{output}', {a}{widen}, {b}{widen})"
                + plus_bias, False)
    a, b = (f"{name}.transpose(-2, -1)" if transposed else name
            for name, transposed in zip((a, b), structure.transposed))
    if bias and matmul == "torch.matmul" and not structure.batch:
        return f"torch.addmm({bias}, {a}, {b})", True
    return f"{matmul}({a}, {b})" + plus_bias, True


def _pads_read_in_kernels(ops: list[ir.Operation], kernels: dict[str, KernelSource],
                          not_launched: set[ir.Value]) -> frozenset[ir.Value]:
    """The pads of `ops` that only launched kernels read (not those whose result is
    `not_launched`: a gemm's bias, which the host names), each of which reads their
    source instead (padded_reads.py): the host need not pad."""
    readers: dict[ir.Value, list[ir.Operation]] = {}
    for op in ops:
        for value in ir.values_read_from_above(op) if op.regions else op.operands:
            readers.setdefault(value, []).append(op)
    return frozenset(
        op.results[0] for op in ops if op.name == "tensor.pad" and readers.get(op.results[0])
        and all(layouts.generated_kernel(reader)
                and op.results[0] not in kernels[kernel_name(reader)].inputs
                and not_launched.isdisjoint(reader.results)
                for reader in readers[op.results[0]]))


def _slice_items(offsets: list, sizes: list, steps: list) -> str:
    """The `a:b:s, ...` index of a slice, per dim from its offset, size and step (ints,
    or host Python expressions)."""
    items = []
    for offset, size, step in zip(offsets, sizes, steps):
        if all(isinstance(v, int) for v in (offset, size, step)):
            end = offset + (size - 1) * step + 1
        else:
            end = f"{offset} + ({size} - 1) * {step} + 1"
        items.append(f"{offset}:{end}" + (f":{step}" if step != 1 else ""))
    return ", ".join(items)


def _conv_padding(pad: ir.Operation) -> tuple[int, int] | None:
    """(height, width) padding when `pad` pads only the spatial dims of an NCHW image
    (or a grouped NGCHW one), evenly, with zeros, for convolutions alone; else None."""
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    if len(pad.operands) != 1 or len(low) not in (4, 5) or low != high or \
            any(low[:-2]) or pad_literal(pad) not in ("0.0", "0"):
        return None
    convolutions = _ATEN_CONVOLUTIONS if len(low) == 4 else (GROUPED_CONVOLUTION,)
    for use in pad.results[0].uses:
        user = ir.operation_of(use.owner)
        if user is None or use.operand_number != 0 or user.name not in convolutions:
            return None
    return low[-2], low[-1]


class _HostWriter:
    def __init__(self, main, kernels: dict[str, KernelSource],
                 signature: GraphSignature, channels_last: frozenset, narrowed: Mapping):
        self.kernels = kernels
        self.natives = native_functions(main.operation.parent)
        self.channels_last = channels_last
        self.narrowed = narrowed
        self.names: dict = {}
        # The graph input each view reads (launch_mode checks the alignment of those
        # that kernels read), and the inputs kernels read.
        self.viewed_input: dict[str, str] = {}
        self.inputs_read_by_kernels: list[str] = []
        self.launchers: list[str] = []
        self.records: list[Record] = []
        # The names read while an expression is built (`reading`).
        self.collectors: list[list[str]] = []
        self.counter = 0
        # Whether it converts weights (channels-last, padded; `capturing` tells how).
        self.converts_weights = False
        block = main.regions[0].blocks[0]
        for argument, graph_input in zip(block.arguments, signature.inputs):
            self.names[argument] = graph_input.name
        self.input_names = {graph_input.name for graph_input in signature.inputs}
        # Inputs read in place (parameters, buffers): their conversions are kept.
        self.weights = {signature.inputs[position].name for position in signature.static_inputs
                        if position < len(signature.inputs)}
        # The layouts of the tensors the host knows them of, by name (strided_views.py):
        # its buffers, and the inputs of static strides, as they were traced.
        # An input's layout holds under one check of it, made once per call (a bool the
        # views of it read: a DenseNet backward takes thousands of views of its inputs).
        self.input_checks: dict[str, str] = {}
        self.layouts: dict[str, strided_views.Layout] = {
            graph_input.name: strided_views.Layout(
                tuple(ir.ShapedType(argument.type).shape), graph_input.stride, 0,
                self.input_check(graph_input.name,
                                 f"{graph_input.name}.stride() == {graph_input.stride}"))
            for argument, graph_input in zip(block.arguments, signature.inputs)
            if isinstance(graph_input, TensorInput) and graph_input.stride is not None
            and graph_input.rank and graph_input.permutation is None
            and ir.ShapedType(argument.type).has_static_shape
            and ir.ShapedType(argument.type).rank == len(graph_input.stride)}
        # A permuted input (frontend/permuted_inputs.py), permuted back first, is
        # contiguous where it was traced so.
        self.layouts |= {
            graph_input.name: strided_views.contiguous(
                tuple(ir.ShapedType(argument.type).shape),
                self.input_check(graph_input.name, f"{graph_input.name}.is_contiguous()"))
            for argument, graph_input in zip(block.arguments, signature.inputs)
            if isinstance(graph_input, TensorInput) and graph_input.permutation is not None
            and ir.ShapedType(argument.type).has_static_shape}
        self.ops = [op.operation for op in block.operations]
        # Results that their kernel writes into the input they are the new value of
        # (write-inputs-in-place), to that input's name.
        returned = self.ops[-1].operands
        self.in_place = {returned[index]: signature.inputs[position].name
                         for index, position in in_place_results(main.operation).items()}
        self.result_layouts = _strided_results(returned, signature, channels_last)
        self.skipped_fills = {op.results[0] for op in self.ops
                              if op.results and _skipped_fill(op.results[0])}
        # Zero padding of a convolution's input goes into the convolution's `padding`.
        self.folded_pads = {}
        for op in self.ops:
            padding = _conv_padding(op) if op.name == "tensor.pad" else None
            if padding is not None:
                self.folded_pads[op.results[0]] = padding
        # Bias broadcasts that a gemm's library call takes as its bias (addmm's): not
        # launched. (A convolution's bias is added by its readers' kernels:
        # convolution-bias-after.)
        self.library_biases = {}
        for op in self.ops:
            if op.name == "tkern.library_call":
                init = op.regions[0].blocks[0].operations[0].operation.operands[-1]
                bias = _row_bias(init)
                if bias is not None:
                    self.library_biases[init] = bias
        # Views of weights a kernel computes, taken channels-last (layouts.py).
        self.weight_views = layouts.channels_last_weight_views(main) if channels_last \
            else frozenset()
        # Pads that every reader reads through its kernel's loads (padded_reads.py).
        self.pads_in_kernels = _pads_read_in_kernels(
            self.ops, kernels, {*self.library_biases, *self.skipped_fills})
        self.concat_chains = _concat_chains(self.ops)
        self.chain_buffers: dict[ir.Value, str] = {}
        # Kernel results the host takes as another value (rounding_only): their buffer
        # is that value's, possibly a view.
        self.taken_as: dict[ir.Value, ir.Value] = {}
        self.combo_members = combo_members(main)
        # Per combo kernel: the arguments, reads and strided tensors of its members
        # launched so far.
        self.combo_arguments: dict[str, tuple[list[str], list[str], list]] = {}

    def input_check(self, name: str, condition: str) -> str:
        """The name of a bool that holds `condition` on input `name` (input_checks)."""
        check = f"{name}_as_traced"
        self.input_checks[check] = condition
        return check

    def fresh(self, stem: str = "buf") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def name_or_literal(self, entry: int | ir.Value) -> int | str:
        """An entry of ir.mixed_values: a literal, or the name of main's value."""
        return entry if isinstance(entry, int) else self.name_of(entry)

    def name_of(self, value: ir.Value) -> str:
        if value not in self.names:
            raise UnsupportedKernel("func.func", f"value {value.get_name()} has no host buffer")
        name = self.names[value]
        for reads in self.collectors:
            reads.append(name)
        return name

    @contextlib.contextmanager
    def reading(self):
        """The names of main's values read (name_of) inside the block, in order."""
        reads: list[str] = []
        self.collectors.append(reads)
        try:
            yield reads
        finally:
            self.collectors.pop()

    def write(self) -> list[Record]:
        for op in self.ops:
            try:
                self.write_op(op)
            except UnsupportedKernel as error:
                error.at = error.at or op
                raise
        return self.records

    def write_op(self, op: ir.Operation) -> None:
        if op.name == "tkern.library_call":
            self.library_call(op)
        elif is_kernel(op):
            # A combo member is launched with its combo even where it only rounds a
            # narrowed value: fuse-horizontally cannot know which kernel results
            # are narrowed (a kernel's are), only that library calls' may be.
            rounded = None if COMBO in op.attributes else self.rounding_only(op)
            launched = rounded is None and (not op.results or (
                op.results[0] not in self.skipped_fills
                and op.results[0] not in self.library_biases))
            if COMBO in op.attributes and not launched:
                # fuse-horizontally leaves out the kernels the host folds away; one it
                # did not would leave its combo without a launch.
                raise UnsupportedKernel(kernel_name(op), "a member of a combo kernel that "
                                        "the host program does not launch")
            if rounded is not None:
                self.names[op.results[0]] = self.name_of(rounded)
                self.taken_as[op.results[0]] = rounded
            elif launched and (COMBO in op.attributes or not self.permuted_view(op)):
                self.launch(op)
        elif op in self.weight_views:
            self.weight_view(op)
        elif op.name in layouts.VIEWS:
            with self.reading() as reads:
                shape = self.shape_of(op.results[0])
                source = self.name_of(op.operands[0])
            layout = self.layouts.get(source)
            if layout is not None and all(isinstance(size, int) for size in shape):
                layout = strided_views.viewed(layout, tuple(shape))
            else:
                layout = None
            self.view(op.results[0], op.operands[0],
                      f"{source}.reshape({_shape_text(shape)})", reads, layout)
        elif op.name == "tensor.pad":
            if op.results[0] not in self.folded_pads and op.results[0] not in self.pads_in_kernels:
                self.pad(op)
        elif op.name == "tensor.extract_slice":
            with self.reading() as reads:
                unpadded = self.unpadded_slice(op)
                source, (expression, layout) = unpadded or (op.operands[0], self.slice(op))
            self.view(op.results[0], source, expression, reads, layout)
        elif op.name == "tensor.insert_slice":
            self.insert_slice(op)
        elif op.name == "tensor.concat":
            self.concat(op)
        elif op.name == "tensor.cast":
            self.names[op.results[0]] = self.name_of(op.operands[0])
        elif (call := native_call(op, self.natives)) is not None:
            self.native_call(op, call)
        elif op.name == "arith.constant":
            self.constant(op)
        elif op.name == "cf.assert":
            # A size check of torch-mlir's lowering: a failure runs the graph eagerly.
            message = ir.StringAttr(op.attributes["msg"]).value
            condition = self.name_of(op.operands[0])
            self.records.append(Statement(
                (f"if not {condition}:",
                 (f"    raise RuntimeCheckFailed('tessel: a runtime check of the "
                  f"compiled graph failed: ' + {message!r})")), (condition,)))
        elif op.name in ("tensor.empty", "func.return"):
            pass  # outputs are allocated where a kernel writes them
        elif op.name in _SIZE_OPS:
            self.size_arithmetic(op)
        else:
            raise UnsupportedKernel(op.name, "at the host level of the Triton target")

    def permuted_view(self, op: ir.Operation) -> bool:
        """Binds the result of a kernel that only permutes its input (permuted_copy) to
        that strided view of the input, where the view has the strides the kernel's
        buffer would have, so that its readers see the same tensor: its launch and
        copy are saved. SegFormer's blocks turn their [B, N, C] tokens into the
        [B, C, H, W] image a convolution reads: channels-last, the same memory."""
        permutation = permuted_copy(op)  # None for a kernel of no results too
        if permutation is None:
            return False
        result = op.results[0]
        if result in self.in_place:
            return False
        source = sole_generic(op).operands[0]
        layout = self.layouts.get(self.names.get(source))
        result_type = ir.ShapedType(result.type)
        if layout is None or layout.guard is not None or not result_type.has_static_shape or \
                self.stored_element(source) != self.stored_element(result):
            return False
        size = tuple(layout.size[d] for d in permutation)
        stride = tuple(layout.stride[d] for d in permutation)
        wanted = self._strides(result, list(result_type.shape))
        if size != tuple(result_type.shape) or any(step != other for step, other, extent
                                       in zip(stride, wanted, size) if extent != 1):
            return False
        with self.reading() as reads:
            name = self.name_of(source)
        self.taken_as[result] = source
        self.view(result, source, f"{name}.permute{tuple(permutation)}", reads,
                  strided_views.Layout(size, stride, layout.offset))
        return True

    def weight_view(self, op: ir.Operation) -> None:
        """A view between a kernel's rows [O, I * KH * KW] and a weight [O..., I, KH, KW]
        (layouts.channels_last_weight_views), with the rows in (KH, KW, I) order: an
        input weight converted channels-last (once per version), then its rows; or a
        kernel's rows as a channels-last weight."""
        source, result = op.operands[0], op.results[0]
        if op.name == "tensor.collapse_shape":
            weight = self.name_of(source)
            shape = tuple(result.type.shape)
            self.converts_weights = True
            name = self.bind(result, f"reinterpret(channels_last_weight({weight}, capturing), "
                                     f"{shape}, {strided_views.contiguous(shape).stride}, 0)",
                             [weight], fresh=False)
            self.viewed_input[name] = self.viewed_input.get(weight, weight)
            self.layouts[name] = strided_views.contiguous(shape)
            return
        rows = self.name_of(source)
        outer, inner = ir.reassociation(op)
        shape = list(result.type.shape)
        order = [*outer, *inner[1:], inner[0]]
        stride, step = [0] * len(shape), 1
        for dim in reversed(order):
            stride[dim], step = step, step * shape[dim]
        layout = strided_views.Layout(tuple(shape), tuple(stride), self.layouts[rows].offset)
        self.view(result, source, f"{rows}.reshape({_shape_text(shape)})", [rows], layout)

    def conv_weight(self, weight: ir.Value, shape: tuple[int, ...]) -> str:
        """`weight` as aten's weight of `shape`, channels-last where images are:
        converted (once per version) unless the host laid it out so."""
        name = self.name_of(weight)
        layout = self.layouts.get(name)
        view = name
        if tuple(weight.type.shape) != shape:
            view = self.image_view(name, shape)
            layout = layout and strided_views.viewed(layout, shape)
        if not self.channels_last or (layout is not None and layout.guard is None and
                                      layout.stride == tuple(layouts.strides(list(shape), True))):
            return view
        if self.viewed_input.get(name, name) not in self.input_names:
            # Computed at each call (a weight gradient's convolution by the output's
            # gradient): no version to keep a conversion for.
            return f"{view}.contiguous(memory_format=torch.channels_last)"
        self.converts_weights = True
        return f"channels_last_weight({view}, capturing)"

    def rounding_only(self, op: ir.Operation) -> ir.Value | None:
        """The value a kernel only rounds to a half type, element for element, when the
        host already keeps that value in the half type (`stored_element`: an addmm's
        narrowed result, or a half convolution's, which the IR accumulates in f32 and
        aten returns rounded): the kernel would copy it, so its result is that tensor."""
        generic = sole_generic(op)
        if generic is None or len(op.results) != 1 or len(generic.operands) != 2:
            return None
        source = generic.operands[0]
        maps = ir.indexing_maps(generic)
        same_element = maps[0].is_permutation and str(maps[0]) == str(maps[1])
        if (not same_element or ir.sole_cast(generic) != "arith.truncf"
                or self.stored_element(source) != element_name(op.results[0])
                or ir.ShapedType(source.type).shape != ir.ShapedType(op.results[0].type).shape):
            return None
        return source

    def bind(self, value: ir.Value, expression: str, reads: list[str], fresh: bool,
             copy_of: str = "") -> str:
        """`value`, a tensor bound to `expression`, which reads `reads`: new memory where
        `fresh`, else possibly a view of what it reads; a copy of `copy_of` that may
        take its memory (host_records.taking_dead_copies)."""
        name = self.fresh()
        self.records.append(Bind(name, expression, tuple(reads), fresh, copy_of=copy_of))
        self.names[value] = name
        return name

    def allocate(self, value: ir.Value, shape: list[int | str], element: str,
                 reads: list[str], overwritable: tuple[str, ...] = ()) -> str:
        """A new buffer for `value` (`empty`), whose dynamic sizes read `reads`, which
        may take the memory of one of the `overwritable` tensors (writing_in_place)."""
        expression = self.empty(value, shape, element)
        if not all(isinstance(size, int) for size in shape):
            return self.bind(value, expression, reads, fresh=True)
        name = self.fresh()
        stride = self._strides(value, shape)
        self.records.append(Allocate(name, expression, overwritable, _shape_text(stride)))
        self.names[value] = name
        self.layouts[name] = strided_views.Layout(tuple(shape), stride)
        return name

    def overwritable(self, op: ir.Operation, kernel: KernelSource) -> dict[int, tuple[str, ...]]:
        """Result index -> the names of the inputs that result of kernel `op` may be
        written over (in_place_writes.py): held in the result's element type, and read
        by no other of its inputs (a batch norm's shift, a slice of the image it
        normalizes) nor, in a combo, by another member, which may run at the same time,
        itself or through a view (a slice of a convolution's result that another member
        reads)."""
        members = self.combo_members.get(ir.StringAttr(op.attributes[COMBO]).value, []) \
            if COMBO in op.attributes else [op]
        inputs = self.kernels[kernel_name(op)].inputs
        read = [self.root(value) for member in members
                for value in self.kernels[kernel_name(member)].inputs]
        return {index: tuple(self.names[value] for value in candidates
                             if value in self.names and read.count(self.root(value))
                             == inputs.count(value)
                             and self.stored_element(value) == kernel.results[index].element)
                for index, candidates in overwritable_inputs(op).items()}

    def root(self, value: ir.Value) -> ir.Value:
        """The tensor whose memory `value` is: the root of its views, through the
        values that kernel results are taken as (rounding_only)."""
        root = view_root(value)
        while root in self.taken_as:
            root = view_root(self.taken_as[root])
        return root

    def stored_element(self, value: ir.Value) -> str:
        """The element type the host holds `value` in: its narrowed type, or a
        convolution's image's (aten returns that; the IR accumulates in f32), or its own."""
        owner = ir.operation_of(value.owner)
        if owner is not None and owner.name == "tkern.library_call":
            contraction = owner.regions[0].blocks[0].operations[0].operation
            if contraction.name in (*_ATEN_CONVOLUTIONS, GROUPED_CONVOLUTION):
                return element_name(contraction.operands[0])
        return self.narrowed.get(value, element_name(value))

    def _strides(self, value: ir.Value, shape: list[int]) -> tuple[int, ...]:
        """The strides of a new buffer of static `shape` for `value`: those eager returns
        it with (result_layouts), else channels-last or contiguous (layouts.py)."""
        return self.result_layouts.get(value) or \
            tuple(layouts.strides(shape, value in self.channels_last))

    def input_as_buffer(self, value: ir.Value, shape: list[int], element: str,
                        otherwise: str | None = None) -> str:
        """The buffer of `value`, which its kernel may write into the input it is the
        new value of (write-inputs-in-place): that input, where its layout is the one a
        new buffer would have (any other could overlap itself), else `otherwise` (a new
        buffer by default). The host returns the input itself as the new value, which
        is then not copied."""
        source = self.in_place[value]
        strides = tuple(layouts.strides(shape, value in self.channels_last))
        traced = self.layouts.get(source)
        if not shape:
            expression = source  # a 0-d tensor has one layout
        else:
            # The input's check of its traced strides, where they are these: made once
            # a call, and shared with its views (a parameter's, its optimizer states').
            laid_out = traced.guard if traced is not None and traced.guard is not None \
                and traced.stride == strides \
                else f"{source}.stride() == {_shape_text(strides)}"
            expression = f"{source} if {laid_out} else " \
                         f"{otherwise or self.empty(value, shape, element)}"
        name = self.bind(value, expression, [source], fresh=False)
        if all(isinstance(size, int) for size in shape):
            # Laid out so either way: returned as it is, not made contiguous.
            self.layouts[name] = strided_views.Layout(tuple(shape), strides)
        # A launch writes it: launch_mode checks its alignment as for inputs read.
        if source not in self.inputs_read_by_kernels:
            self.inputs_read_by_kernels.append(source)
        return name

    def shape_of(self, value: ir.Value) -> list[int | str]:
        """`value`'s sizes as host Python: literals, or expressions of the inputs."""
        try:
            return [self.size(extent) for extent in sizes.shape(value)]
        except sizes.UnknownSize as error:
            raise UnsupportedKernel(value.get_name(), str(error)) from error

    def size(self, extent: sizes.Extent) -> int | str:
        return extent if isinstance(extent, int) else sizes.host_expression(extent, self.name_of)

    def empty(self, value: ir.Value, shape: list[int | str], element: str) -> str:
        """A new buffer for `value`, channels-last where the network keeps it so
        (layouts.py). empty_strided: cheaper in host time than empty with a memory
        format (benchmarks/host_costs.py)."""
        channels_last = value in self.channels_last
        if not all(isinstance(size, int) for size in shape):
            layout = ", memory_format=torch.channels_last" if channels_last and \
                len(shape) == 4 else ""
            return (f"torch.empty({_shape_text(shape)}, dtype={TORCH_DTYPES[element]}, "
                    f"device=device{layout})")
        return (f"empty_strided({_shape_text(shape)}, {_shape_text(self._strides(value, shape))}, "
                f"{TORCH_DTYPES[element]})")

    def view(self, value: ir.Value, source: ir.Value, expression: str,
             reads: list[str], layout: strided_views.Layout | None = None) -> None:
        """`value`, a view of `source` (or a copy, where torch's reshape must copy):
        `expression`, or where the view's `layout` is known, that strided view of it."""
        source_name = self.names[source]
        if layout is not None and value in self.channels_last:
            # The strides of dims of size 1 are any: those of channels-last, by which
            # torch tells a [N, C, 1, 1] image channels-last (its row-major ones made a
            # squeeze-excite block's convolutions run NCHW, cuDNN transposing them).
            canonical = layouts.strides(list(layout.size), True)
            layout = dataclasses.replace(layout, stride=tuple(
                canonical[d] if size == 1 else step
                for d, (size, step) in enumerate(zip(layout.size, layout.stride))))
        root = self.viewed_input.get(source_name, source_name)
        if layout is not None and layout.guard is None and root in self.layouts:
            # A view of a view, laid out so whatever the inputs: taken of the chain's
            # first tensor, so that views in between that nothing else reads are not
            # made (host_records.skipping_unread_views). A decode step of Llama made 143
            # strided views, many only to take the next from.
            expression = strided_views.reinterpreted(root, self.layouts[root], layout, expression)
            reads = [root, *(read for read in reads if read != source_name)]
        elif layout is not None:
            expression = strided_views.reinterpreted(
                source_name, self.layouts[source_name], layout, expression)
        name = self.bind(value, expression, reads, fresh=False)
        self.viewed_input[name] = self.viewed_input.get(source_name, source_name)
        if layout is not None:
            self.layouts[name] = layout

    def strided_as(self, name: str, stride: tuple[str, ...]) -> bool:
        """Whether tensor `name` is known to have these strides (Python expressions:
        only constant ones can match)."""
        layout = self.layouts.get(name)
        return layout is not None and layout.guard is None and \
            tuple(str(step) for step in layout.stride) == tuple(stride)

    def dense_strides(self, name: str) -> tuple[int, ...] | None:
        """The strides tensor `name` is known to have whatever the inputs, where they lay
        it out densely, without overlap; else None."""
        layout = self.layouts.get(name)
        if layout is None or layout.guard is not None or \
                not all(isinstance(v, int) for v in (*layout.size, *layout.stride)):
            return None
        return layout.stride if _dense(layout.size, layout.stride) else None

    def contiguous(self, name: str) -> bool:
        """Whether tensor `name` is known to be laid out contiguously."""
        layout = self.layouts.get(name)
        return layout is not None and layout.guard is None and \
            layout.stride == strided_views.contiguous(layout.size).stride

    def size_arithmetic(self, op: ir.Operation) -> None:
        """A scalar of `main` (a size, or a step in computing one) as a Python int or
        bool; a kernel that needs it takes it as a size argument (sizes.py)."""
        with self.reading() as reads:
            operands = [self.name_of(v) for v in op.operands]
        if op.name == "tensor.dim":
            expression = f"{operands[0]}.shape[{operands[1]}]"
        elif op.name in _SIZE_CASTS:
            (expression,) = operands
        elif op.name == "tensor.from_elements":  # a shape, for tensor.reshape
            expression = f"({''.join(operand + ', ' for operand in operands)})"
        elif op.name == "affine.apply":
            affine_map = ir.AffineMapAttr(op.attributes["map"]).value
            (result,) = affine_map.results
            expression = _affine_python(result, operands, affine_map.n_dims)
        elif op.name == "arith.cmpi":
            predicate = CMPI_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
            expression = f"({operands[0]} {CMPI_OPERATORS[predicate]} {operands[1]})"
        else:
            expression = _SIZE_ARITHMETIC[op.name].format(*operands)
        self.names[op.results[0]] = self.fresh("size")
        self.records.append(Statement((f"{self.names[op.results[0]]} = {expression}",),
                                      tuple(reads)))

    def constant(self, op: ir.Operation) -> None:
        result = op.results[0]
        if result in self.skipped_fills:
            return
        if not isinstance(result.type, ir.ShapedType):
            # A literal inside the kernels; the host reads it in size arithmetic.
            self.names[result] = scalar_literal(op.attributes["value"])
            return
        value = scalar_literal(op.attributes["value"])  # splats only; raises otherwise
        self.bind(result, f"torch.full({_shape_text(list(result.type.shape))}, {value}, "
                          f"dtype={TORCH_DTYPES[element_name(result)]}, device=device)",
                  [], fresh=True)

    def launch(self, op: ir.Operation) -> None:
        """`op`'s launch; a combo member's arguments join those of the combo, which
        launches at its last member (fuse-horizontally put the members together)."""
        kernel = self.kernels[kernel_name(op)]
        arguments, reads, strided = self.arguments(op, kernel)
        if COMBO not in op.attributes:
            self.launch_kernel(kernel, arguments, reads, strided)
            return
        combo = ir.StringAttr(op.attributes[COMBO]).value
        pending = self.combo_arguments.setdefault(combo, ([], [], []))
        member = self.combo_members[combo].index(op)
        pending[0].extend(arguments)
        pending[1].extend(reads)
        pending[2].extend((f"k{member}_{name}", rank) for name, rank in strided)
        if member == len(self.combo_members[combo]) - 1:
            self.launch_kernel(self.kernels[combo], *pending)

    def arguments(self, op: ir.Operation, kernel: KernelSource
                  ) -> tuple[list[str], list[str], list[tuple[str, int]]]:
        """The arguments of `kernel`'s launch, after its output buffers are allocated,
        the names they read, and for a kernel of static sizes, which takes strides as
        constants, each tensor's parameter name and rank (KernelLauncher's)."""
        with self.reading() as reads:
            inputs = [self.name_of(value) for value in kernel.inputs]
        outputs = []
        overwritable = self.overwritable(op, kernel)
        for result, buffer in zip(op.results, kernel.results):
            if buffer.initial is not None:
                outputs.append(self.starting_from(result, buffer.initial))
                continue
            with self.reading() as shape_reads:
                shape = [self.size(extent) for extent in buffer.shape]
            if result in self.in_place:
                outputs.append(self.input_as_buffer(result, shape, buffer.element))
            else:
                outputs.append(self.allocate(result, shape, buffer.element, shape_reads,
                                             overwritable.get(len(outputs), ())))
        reads += outputs
        ranks = [value.type.rank for value in kernel.inputs] + \
            [len(buffer.shape) for buffer in kernel.results]
        strides, strided = [], []
        if kernel.sizes:
            strides = [f"*{name}.stride()" for name, rank in zip(inputs + outputs, ranks) if rank]
        else:
            parameters = [f"in{i}" for i in range(len(inputs))] + \
                [f"out{i}" for i in range(len(outputs))]
            strided = list(zip(parameters, ranks))
        with self.reading() as size_reads:
            strides += [str(self.size(root)) for root in kernel.sizes]
        reads += size_reads
        for name in inputs:
            read = self.viewed_input.get(name, name)
            if read in self.input_names and read not in self.inputs_read_by_kernels:
                self.inputs_read_by_kernels.append(read)
        return inputs + outputs + strides, reads, strided

    def launch_kernel(self, kernel: KernelSource, arguments: list[str], reads: list[str],
                      strided: list[tuple[str, int]]) -> None:
        launcher = f"launch_{kernel.name}"
        grid = kernel.grid
        if kernel.sizes:  # a function of the size arguments, which the launch passes last
            parameters = ", ".join(f"size{index}" for index in range(len(kernel.sizes)))
            grid = f"lambda {parameters}: ({''.join(f'{g}, ' for g in kernel.grid)})"
        self.launchers.append(f"{launcher} = KernelLauncher({kernel.function}, grid={grid}, "
                              f"block={kernel.block}, num_warps={kernel.num_warps}"
                              + (f", sizes={len(kernel.sizes)}" if kernel.sizes else
                                 f", tensors={tuple(name for name, _ in strided)}, "
                                 f"ranks={tuple(rank for _, rank in strided)}")
                              + (f", num_stages={kernel.num_stages}" if kernel.num_stages else "")
                              + (f", gemm={kernel.gemm})" if kernel.gemm else ")"))
        launch = f"{launcher}(direct, stream, {', '.join(arguments)})"
        if not kernel.results:
            # Only runtime checks (tl.device_assert): Triton compiles them in under
            # TRITON_DEBUG=1 alone, so otherwise the launch would do nothing.
            self.records.append(Statement(("if triton_debug:", f"    {launch}"), tuple(reads)))
        else:
            self.records.append(Statement((launch,), tuple(reads)))

    def library_call(self, op: ir.Operation) -> None:
        """A gemm (cuBLAS), convolution (cuDNN) or scatter through aten, plus its
        accumulator's initial value unless that is a folded zero fill."""
        body = [o.operation for o in op.regions[0].blocks[0].operations]
        contraction = body[0]
        if contraction.name == "tm_tensor.scatter":
            self.scatter(op.results[0], contraction)
            return
        with self.reading() as reads:
            fresh = True  # aten's convolutions and gemms return new memory
            convolution_shape = None
            if contraction.name in _ATEN_CONVOLUTIONS:
                product = self.convolution(contraction)
                convolution_shape = tuple(ir.ShapedType(op.results[0].type).shape)
            elif contraction.name == GROUPED_CONVOLUTION:
                product, convolution_shape = self.grouped_convolution(contraction)
            elif len(body) == 2 and "indexing_maps" in contraction.attributes:
                maps = [ir.AffineMapAttr(m).value
                        for m in ir.ArrayAttr(contraction.attributes["indexing_maps"])]
                a, b = (self.name_of(v) for v in contraction.operands[:2])
                mixed = (element_name(contraction.operands[0])
                         != element_name(contraction.results[0]))
                in_f32 = mixed and op.results[0] not in self.narrowed
                bias = self.library_biases.get(contraction.operands[2])
                bias_name = bias and self.name_of(bias)
                init = contraction.operands[2]
                from_zero = bias is not None or (init in self.skipped_fills
                                                 and fill_constant(init) in ("0.0", "0"))
                if from_zero and not in_f32 and self.gemm(
                        op.results[0], maps, a, b, bias_name, reads):
                    return
                product, fresh = _aten_contraction(
                    a, b, maps, "matmul_in_f32" if in_f32 else "torch.matmul", bias_name)
                if bias is not None:
                    self.bind(op.results[0], product, reads, fresh)
                    return
            else:
                raise UnsupportedKernel(contraction.name,
                                        "a library call tessel has no routine for")
            init = contraction.operands[2]
            from_zero = init in self.skipped_fills and fill_constant(init) in ("0.0", "0")
            result_type = ir.ShapedType(op.results[0].type)
            if convolution_shape is not None and from_zero and result_type.has_static_shape:
                self.aten_result(op.results[0], product, convolution_shape, reads,
                                 bool(self.channels_last) and len(convolution_shape) == 4)
                return
            if convolution_shape is not None and convolution_shape != tuple(result_type.shape):
                # a grouped convolution's (N, G * F, ...) as the result's (N, G, F, ...)
                product = f"{product}.reshape({_shape_text(list(result_type.shape))})"
            if init not in self.skipped_fills:
                # Planned as possibly a view of what it reads, as conservatively as before.
                product, fresh = f"{self.name_of(init)} + {product}", False
            elif not from_zero:
                product = f"{product} + {fill_constant(init)}"
        self.bind(op.results[0], product, reads, fresh)

    def native_call(self, op: ir.Operation, call: NativeCall) -> None:
        """A native op (passes/call_native_ops.py) called as eager calls it, through the
        dispatcher: its results are new tensors, laid out as aten lays them out
        (native_result)."""
        overload = call.overload
        schema = functools.reduce(getattr, overload.split("."), torch.ops)._schema
        with self.reading() as reads:
            operands = [self.name_of(value) for value in op.operands]
        for value in op.operands:
            if self.stored_element(value) != element_name(value):
                raise UnsupportedKernel(overload, f"an operand held as "
                                        f"{self.stored_element(value)}, not {element_name(value)}")
        arguments = []
        for argument, declared in zip(call.arguments, schema.arguments):
            if isinstance(argument, Operand):
                text = operands[argument.index]
            elif argument is not None and str(declared.type).rstrip("?") in _ENUM_ARGUMENTS:
                # An enum (a dtype) arrives as its int: no Python form without its table.
                raise UnsupportedKernel(overload, f"argument {declared.name} of type {declared.type}")
            else:
                text = _python_literal(argument)
            arguments.append(f"{declared.name}={text}" if declared.kwarg_only else text)
        expression = f"torch.ops.{overload}({', '.join(arguments)})"
        if len(schema.returns) == 1:
            self.native_result(op.results[0], expression, reads, call.strides.get(0))
            return
        returned = self.fresh("native")
        self.records.append(Bind(returned, expression, tuple(reads), fresh=True))
        for result, position in zip(op.results, call.results):
            # Each its own memory once the tuple is gone (host_records.freeing_buffers).
            self.native_result(result, f"{returned}[{position}]", [returned],
                               call.strides.get(position))

    def native_result(self, result: ir.Value, expression: str, reads: list[str],
                      traced: tuple[int, ...] | None) -> None:
        """`result`, a native call's new tensor: laid out as eager's trace has it where
        its strides are `traced` (checked once, after the call), so that its views are
        strided views (a DenseNet layer's input gradient, cut into the chunks of its
        concatenation); else of a layout the host does not know."""
        shape = ir.ShapedType(result.type)
        if traced is None or not shape.has_static_shape or len(traced) != shape.rank:
            self.bind(result, expression, reads, fresh=True)
            return
        self.names[result] = self.laid_out_as(expression, reads, tuple(shape.shape), traced)

    def laid_out_as(self, expression: str, reads: list[str], shape: tuple[int, ...],
                    stride: tuple[int, ...], fresh: bool = True) -> str:
        """A new name bound to `expression`, a tensor of `shape` that aten lays out with
        `stride`: checked once, right after the call, and laid out so where it is not
        (the kernels that read it take that layout's strides as constants: another
        layout would be read wrong), so that its views are strided views."""
        name = self.fresh()
        laid_out = f"{name}_laid_out"  # a bool: never freed, unlike the tensor it checks
        self.records.append(Bind(name, expression, tuple(reads), fresh, check=(
            f"{laid_out} = {name}.stride() == {stride}",
            f"if not {laid_out}: {name}, {laid_out} = as_laid_out({name}, {stride}), True")))
        self.layouts[name] = strided_views.Layout(shape, stride, 0, laid_out)
        return name

    def aten_result(self, result: ir.Value, call: str, shape: tuple[int, ...],
                    reads: list[str], channels_last: bool, fresh: bool = True) -> None:
        """`result`, the new tensor of `shape` that aten's `call` returns (a convolution,
        a pad), viewed as the result's shape where that differs (a grouped convolution's
        groups). aten picks its layout: channels-last where `channels_last` (a
        convolution given a channels-last weight, a pad of a channels-last image), else
        contiguous. That layout, checked once after the call, makes the views of the
        result (a batch norm's shift, a weight gradient's groups and crop) strided
        views; a result laid out otherwise takes the view ops."""
        name = self.laid_out_as(call, reads, shape,
                                tuple(layouts.strides(list(shape), channels_last)), fresh)
        final = tuple(ir.ShapedType(result.type).shape)
        if final == shape:
            self.names[result] = name
            return
        layout = strided_views.viewed(self.layouts[name], final)
        reshape = f"{name}.reshape({_shape_text(final)})"
        view = reshape if layout is None else \
            strided_views.reinterpreted(name, self.layouts[name], layout, reshape)
        viewed = self.bind(result, view, [name], fresh=False)
        self.viewed_input[viewed] = name
        if layout is not None:
            self.layouts[viewed] = layout

    def gemm(self, result: ir.Value, maps: list[ir.AffineMap], a: str, b: str,
             bias: str | None, reads: list[str]) -> bool:
        """`result`, of a matmul (from zero, or from `bias`, a row vector), as the one
        aten call that is cuBLAS's gemm, torch.mm, addmm or bmm, an operand read
        transposed as a strided view: torch.matmul reaches those through views and
        checks of its own at every call. Their result is new and contiguous, a layout
        the views that follow know. (Into a buffer the host allocates (`out=`), as
        Inductor calls them, was no faster on the CPU: one more call where the
        planner reuses no memory, benchmarks/host_program_cost.py.) False, and nothing
        written, for another matmul (broadcast, several batch dims, a bias with a
        batch dim) or dynamic sizes."""
        matmul = _matmul(maps)
        if matmul is None or not ir.ShapedType(result.type).has_static_shape:
            return False
        if matmul.batch and (matmul.batch, *matmul.leading, bias) != (1, 1, 1, None):
            return False
        operands = ", ".join(self.gemm_operand(name, transposed)
                             for name, transposed in zip((a, b), matmul.transposed))
        if matmul.batch:
            call = f"torch.bmm({operands})"
        elif bias:
            call = f"torch.addmm({bias}, {operands})"
        else:
            call = f"torch.mm({operands})"
        name = self.bind(result, call, reads, fresh=True)
        self.layouts[name] = strided_views.contiguous(tuple(ir.ShapedType(result.type).shape))
        return True

    def gemm_operand(self, name: str, transposed: bool) -> str:
        """Tensor `name` as a gemm operand: transposed, a strided view where its layout
        is known."""
        if not transposed:
            return name
        view = f"{name}.transpose(-2, -1)"
        layout = self.layouts.get(name)
        if layout is None:
            return view
        return strided_views.reinterpreted(name, layout, strided_views.transposed(layout), view)

    def scatter(self, result: ir.Value, scatter: ir.Operation) -> None:
        """tm_tensor.scatter as index_put_ into the buffer `starting_from` its original:
        index column j addresses dim j, and a body that adds the update to the original
        accumulates. (A static scatter that stores its updates, or adds them in a type
        with atomics, is a kernel: scatter_kernel.py.)"""
        updates, indices, original = scatter.operands
        dimension_map = list(ir.DenseI64ArrayAttr(scatter.attributes["dimension_map"]))
        if dimension_map != list(range(len(dimension_map))):
            raise UnsupportedKernel(scatter.name, f"a dimension_map of {dimension_map}")
        accumulate = adds_updates(scatter)
        if not accumulate and not stores_updates(scatter):
            raise UnsupportedKernel(scatter.name, "a scatter that neither stores nor adds")
        buffer = self.starting_from(result, original)
        index_name, updates_name = self.name_of(indices), self.name_of(updates)
        self.records.append(Statement(
            (f"scatter({buffer}, {index_name}, {updates_name}, accumulate={accumulate})",),
            (buffer, index_name, updates_name)))

    def starting_from(self, result: ir.Value, original: ir.Value) -> str:
        """The buffer that a scatter writes `result` into, holding `original` first: the
        input `result` is the new value of, where write-inputs-in-place marked it (and
        its layout allows), else new memory holding `original` (`filled_or_copied`)."""
        with self.reading() as reads:
            base, copy_of = self.filled_or_copied(original)
        if result in self.in_place:
            return self.input_as_buffer(result, self.shape_of(result), element_name(result),
                                        otherwise=base)
        return self.bind(result, base, reads, fresh=True, copy_of=copy_of)

    def filled_or_copied(self, value: ir.Value) -> tuple[str, str]:
        """(expression, name copied): new memory holding `value` for the host to write
        into: a fill of its constant where it is a skipped fill, else a copy of it."""
        if value in self.skipped_fills:
            shape = _shape_text(list(value.type.shape))
            return (f"torch.full({shape}, {_fill_literal(value)}, "
                    f"dtype={TORCH_DTYPES[element_name(value)]}, device=device)", "")
        name = self.name_of(value)
        return f"{name}.clone()", name

    def convolution(self, conv: ir.Operation) -> str:
        image, weight = conv.operands[0], conv.operands[1]
        strides, dilations = convolution_pair(conv, "strides"), convolution_pair(conv, "dilations")
        padding = self.folded_pads.get(image)
        if padding is not None:
            image = ir.operation_of(image.owner).operands[0]
        shape, groups = tuple(ir.ShapedType(weight.type).shape), 1
        if conv.name == DEPTHWISE_CONVOLUTION:  # (C, KH, KW): aten's (C, 1, KH, KW), C groups
            groups, kh, kw = shape
            if ir.ShapedType.is_dynamic_size(groups):
                raise UnsupportedKernel(conv.name, "a depthwise convolution of dynamic channels")
            shape = (groups, 1, kh, kw)
        weight_name = self.conv_weight(weight, shape)
        # aten's convolution, as Inductor calls it: F.conv2d adds a dispatch on top,
        # host time at every call (benchmarks/host_costs.py).
        return (f"torch.convolution({self.name_of(image)}, {weight_name}, None, "
                f"{strides}, {padding or (0, 0)}, {dilations}, "
                f"False, (0, 0), {groups})")

    def grouped_convolution(self, conv: ir.Operation) -> tuple[str, tuple[int, ...]]:
        """linalg's grouped convolution, (N, G, C, H, W) by (G, F, C, KH, KW), as one
        aten convolution of G groups, and that convolution's shape, (N, G * F, HO, WO).
        torch-mlir computes a strided convolution's weight
        gradient so (the batch as groups, the stride as dilation); as a loop kernel, the
        7x7 stride-2 stem of densenet121's train step took about a quarter of the step's
        GPU time (torch.profiler)."""
        image, weight = conv.operands[0], conv.operands[1]
        padding = self.folded_pads.get(image)
        if padding is not None:
            image = ir.operation_of(image.owner).operands[0]
        shapes = [list(ir.ShapedType(v.type).shape) for v in (image, weight, conv.results[0])]
        if any(ir.ShapedType.is_dynamic_size(d) for shape in shapes for d in shape):
            raise UnsupportedKernel(conv.name, "a grouped convolution of dynamic sizes")
        (n, groups, c, h, w), (_, f, _, kh, kw), result = shapes
        strides, dilations = convolution_pair(conv, "strides"), convolution_pair(conv, "dilations")
        weight_name = self.conv_weight(weight, (groups * f, c, kh, kw))
        image_name = self.image_view(self.name_of(image), (n, groups * c, h, w))
        return (f"torch.convolution({image_name}, "
                f"{weight_name}, None, {strides}, {padding or (0, 0)}, {dilations}, "
                f"False, (0, 0), {groups})"), (n, groups * f, *result[3:])

    def image_view(self, name: str, shape: tuple[int, ...]) -> str:
        """Tensor `name` reshaped to `shape`: a strided view where the host laid it out
        so that one is (a grouped image laid out channels-last, as aten's image)."""
        layout = self.layouts.get(name)
        view = layout and layout.guard is None and strided_views.viewed(layout, shape)
        if not view:
            return f"{name}.reshape({', '.join(map(str, shape))})"
        return strided_views.reinterpreted(name, layout, view, "")

    def concat(self, op: ir.Operation) -> None:
        """torch.cat, or, for a concat in a chain (_concat_chains), a view of the chain's
        buffer after copying in the pieces that the concat before it lacked."""
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        result = op.results[0]
        chain = self.concat_chains.get(result)
        if chain is None:
            with self.reading() as reads:
                parts = ", ".join(self.name_of(v) for v in op.operands)
            self.bind(result, f"torch.cat([{parts}], dim={dim})", reads, fresh=True)
            return
        results = [c.results[0] for c in chain]
        position = results.index(result)
        if position == 0:
            self.chain_buffers[results[0]] = self.allocate(
                results[-1], list(results[-1].type.shape), element_name(result), [])
        buffer = self.chain_buffers[results[0]]
        pieces = list(op.operands)
        copied = len(chain[position - 1].operands) if position else 0
        offset = sum(piece.type.shape[dim] for piece in pieces[:copied])
        for piece in pieces[copied:]:
            size = piece.type.shape[dim]
            piece_name = self.name_of(piece)
            self.records.append(Statement(
                (f"{buffer}.narrow({dim}, {offset}, {size}).copy_({piece_name})",),
                (buffer, piece_name)))
            offset += size
        if position == len(chain) - 1:
            self.names[result] = buffer
        else:
            self.bind(result, f"{buffer}.narrow({dim}, 0, {offset})", [buffer], fresh=False)

    def slice(self, op: ir.Operation) -> tuple[str, strided_views.Layout | None]:
        """A tensor.extract_slice as a torch view (`x[a:b:s, ...]`), with the dims a
        rank-reducing slice drops indexed away; and its layout, where the source's is
        known and the slice static."""
        items, slice_shape = self.slice_items(op, first_dynamic=1)
        source = self.name_of(op.operands[0])
        view = f"{source}[{items}]"
        shape = self.shape_of(op.results[0])
        if shape != slice_shape:
            view = f"{view}.reshape({_shape_text(shape)})"
        layout = self.layouts.get(source)
        per_dim = ir.mixed_values(op, ("static_offsets", "static_sizes", "static_strides"), 1)
        if layout is None or not all(isinstance(v, int) for values in (shape, *per_dim)
                                     for v in values):
            return view, None
        return view, strided_views.viewed(strided_views.sliced(layout, *per_dim), tuple(shape))

    def unpadded_slice(self, op: ir.Operation
                       ) -> tuple[ir.Value, tuple[str, strided_views.Layout | None]] | None:
        """A static tensor.extract_slice of a pad that reads none of the padding (a
        ceil-mode pooling's image, padded at the end for windows past it, then sliced
        back to the windows' extent, often the image itself) as that slice of the pad's
        source, which the host then need not pad; else None."""
        padding = padding_of(op.operands[0])
        per_dim = ir.mixed_values(op, ("static_offsets", "static_sizes", "static_strides"), 1)
        if padding is None or not all(isinstance(v, int) for values in per_dim for v in values) \
                or ir.ShapedType(op.results[0].type).rank != len(padding.low):
            return None
        source_shape = ir.ShapedType(padding.source.type).shape
        offsets = [offset - low for offset, low in zip(per_dim[0], padding.low)]
        if any(offset < 0 or offset + (size - 1) * step >= extent for offset, size, step, extent
               in zip(offsets, per_dim[1], per_dim[2], source_shape)):
            return None
        source = self.name_of(padding.source)
        layout = self.layouts.get(source)
        items = _slice_items(offsets, *per_dim[1:])
        return padding.source, (f"{source}[{items}]", layout and strided_views.sliced(
            layout, offsets, per_dim[1], per_dim[2]))

    def insert_slice(self, op: ir.Operation) -> None:
        """tensor.insert_slice as a copy of the destination (a fill of its own, where
        the destination is a skipped fill) with the source copied into a view of it."""
        with self.reading() as reads:
            items, slice_shape = self.slice_items(op, first_dynamic=2)
        with self.reading() as destination_reads:
            base, copy_of = self.filled_or_copied(op.operands[1])
        buffer = self.bind(op.results[0], base, destination_reads, fresh=True, copy_of=copy_of)
        source = self.name_of(op.operands[0])
        self.records.append(Statement(
            (f"{buffer}[{items}] = {source}.reshape({_shape_text(slice_shape)})",),
            (buffer, *reads, source)))

    def slice_items(self, op: ir.Operation, first_dynamic: int) -> tuple[str, list]:
        """The `a:b:s, ...` index of a slice op's offsets, sizes and strides (static, or
        main's values from operand `first_dynamic` on), and its sizes."""
        per_dim = [[self.name_or_literal(v) for v in values] for values in ir.mixed_values(
            op, ("static_offsets", "static_sizes", "static_strides"), first_dynamic)]
        return _slice_items(*per_dim), per_dim[1]

    def pad(self, op: ir.Operation) -> None:
        """tensor.pad with a constant, as torch.nn.functional.pad (last dim first); a
        dynamic width is one of main's values."""
        with self.reading() as reads:
            low, high = ([self.name_or_literal(w) for w in widths]
                         for widths in ir.mixed_values(op, ("static_low", "static_high"), 1))
            source = self.name_of(op.operands[0])
        value = pad_literal(op)
        if value is None:
            raise UnsupportedKernel(op.name, "a pad with a computed value")
        widths = ", ".join(f"{lo}, {hi}" for lo, hi in zip(reversed(low), reversed(high)))
        expression = f"torch.nn.functional.pad({source}, ({widths}), value={value})"
        layout = self.layouts.get(source)
        shape = tuple(ir.ShapedType(op.results[0].type).shape)
        if source in self.weights and value.lstrip("-") in ("0", "0.0") and all(
                isinstance(w, int) for w in (*low, *high)):
            self.converts_weights = True
            expression = f"padded_weight({source}, ({widths}), capturing)"
        elif layout is not None and ir.ShapedType(op.results[0].type).has_static_shape:
            # aten pads into the image's memory format (suggest_memory_format)
            channels_last = len(shape) == 4 and \
                layouts.laid_out_channels_last(list(layout.size), list(layout.stride))
            self.aten_result(op.results[0], expression, shape, reads, channels_last, fresh=False)
            return
        # Planned as possibly a view of its input, as conservatively as before.
        self.bind(op.results[0], expression, reads, fresh=False)


@dataclass(frozen=True)
class HostProgram:
    source: str
    # The strides of the `any_layout` results returned as their kernels wrote them, by
    # result index (GraphSignature.result_strides).
    result_strides: dict[int, tuple[int, ...]]


def generate(module: ir.Module, kernels: dict[str, KernelSource],
             signature: GraphSignature, graph_name: str,
             channels_last: frozenset = frozenset(), narrowed: Mapping = MappingProxyType({})
             ) -> HostProgram:
    """The host program of one graph: defines host(*graph_inputs) -> tuple of outputs.
    The `channels_last` values (layouts.py) are allocated so, convolution weights are
    channels-last (cuDNN's tensor-core kernels take NHWC), and where there are any,
    outputs are returned contiguous, but those of any layout (a training step's saved
    activations, TensorResult.any_layout) whose layout is known: those are returned as
    written, and their strides listed."""
    main = ir.function_named(module, "main")
    writer = _HostWriter(main, kernels, signature, channels_last, narrowed)
    tensors = [arg for arg in signature.inputs if isinstance(arg, TensorInput)]
    # The device of the first input with dims: a 0-d input may be a CPU scalar (under
    # dynamic=True, Python floats come in as 0-d CPU tensors), which moves to it.
    # Without one, the device the graph was traced on.
    placed = [arg.name for arg in tensors if arg.rank]
    device = (f"{placed[0]}.device" if placed
              else f"torch.device({signature.device or 'cuda'!r})")
    preamble = [f"{symbol} = {source}" for symbol, source in signature.symbol_bindings]
    preamble.append(f"device = {device}")
    preamble.append("empty_strided = allocator(device)")
    # A 0-d input traced on the GPU is there (Dynamo guards devices): not moved, which
    # cost a call per input (an Adam step's counts, one per parameter).
    preamble += [f"{arg.name} = {arg.name}.to(device)" for arg in tensors
                 if not arg.rank and arg.on_cpu]
    preamble += [f"{arg.name} = {arg.name}.permute({list(arg.permutation)})"
                 for arg in tensors if arg.permutation is not None]
    statements = writer.write()
    # The checks some view reads, found in one pass over the program's text.
    read = set(re.findall(r"\b\w+_as_traced\b", "\n".join(
        line for record in statements for line in printed(record))))
    preamble += [f"{check} = {condition}" for check, condition in writer.input_checks.items()
                 if check in read]
    if writer.converts_weights:
        preamble.append("capturing = recording_cuda_graph(device)")
    preamble.append(f"direct, stream = launch_mode("
                    f"{', '.join(['device'] + writer.inputs_read_by_kernels)})")
    records: list[Record] = [Statement((line,)) for line in preamble] + statements
    returned = writer.ops[-1].operands
    if len(returned) != len(signature.results):
        raise ValueError(f"main returns {len(returned)} tensors, the graph "
                         f"{len(signature.results)}")
    returned_roots: list[ir.Value] = []
    result_strides: dict[int, tuple[int, ...]] = {}
    for index, (value, result) in enumerate(zip(returned, signature.results)):
        # A result is new memory, as in eager: not an input (torch-mlir folds a clone of
        # one into the input itself) nor an earlier result, nor a view of either.
        root = writer.root(value)
        shared = isinstance(root.owner, ir.Block) or root in returned_roots
        returned_roots.append(root)
        name, output = writer.name_of(value), f"out{index}"
        if shared:
            layout = "memory_format=torch.contiguous_format" if channels_last else ""
            records.append(Bind(output, f"{name}.clone({layout})", (name,), fresh=True,
                                output=True))
        elif result.any_layout and (strides := writer.dense_strides(name)) is not None:
            # The backward reads it as written (a channels-last activation): copied into
            # eager's layout, the backward's kernels and cuDNN read it back across memory.
            records.append(Bind(output, name, (name,), fresh=False, output=True))
            result_strides[index] = strides
            continue
        elif result.any_layout and value in channels_last and \
                ir.ShapedType(value.type).rank == 4 and ir.ShapedType(value.type).has_static_shape:
            # A convolution's result, which cuDNN writes channels-last (its weight is):
            # made so where it is not (no copy where it is), to report its layout.
            records.append(Bind(output, f"{name}.contiguous(memory_format=torch.channels_last)",
                                (name,), fresh=False, output=True))
            result_strides[index] = tuple(layouts.strides(list(value.type.shape), True))
            continue
        elif result.stride is not None and writer.strided_as(name, result.stride):
            # Already laid out as eager's result (a channels-last kernel's output).
            records.append(Bind(output, name, (name,), fresh=False, output=True))
            continue
        elif result.stride is None:
            # Contiguous, as eager's result is (result.stride None): a view the host
            # took (the shifted labels of a causal LM's loss, a slice of a padded
            # tensor) may not be, and aot_autograd's view of it then fails. A 0-d tensor
            # (a batch norm's step count, written in place) is contiguous.
            relaid = (channels_last or root != value) and not writer.contiguous(name) \
                and ir.ShapedType(value.type).rank > 0
            records.append(Bind(output, name + (".contiguous()" if relaid else ""), (name,),
                                fresh=False, output=True))
        else:
            records.append(Bind(output, name, (name,), fresh=False, output=True))
        if result.stride is not None:
            # Eager returns this output strided; callers may rely on its layout.
            records.append(Bind(output, f"torch.empty_strided({output}.shape, "
                                        f"({', '.join(result.stride)},), dtype={result.dtype}, "
                                        f"device=device).copy_({output})",
                                (output,), fresh=True, output=True))
    outputs = tuple(f"out{index}" for index in range(len(returned)))
    records.append(Return(f"({''.join(r + ', ' for r in signature.returns)})", outputs))
    planned = reusing_buffers(writing_in_place(taking_dead_copies(
        skipping_unread_views(records))))
    body = [line for record in freeing_buffers(planned) for line in printed(record)]
    lines = [f"# tessel host program for graph {graph_name} (target triton)",
             *writer.launchers, "",
             f"def host({', '.join(arg.name for arg in signature.inputs)}):"]
    lines += ["    " + line for line in body]
    return HostProgram("\n".join(lines) + "\n", result_strides)


def allocator(device: torch.device):
    """`empty_strided(size, stride, dtype)` on `device`: on CUDA and the CPU, the
    allocation Inductor's wrappers make (`_empty_strided_cuda`, on the current device,
    which `on_device_of_inputs` made the inputs'; `_empty_strided_cpu`), which skips
    torch.empty_strided's argument parsing and dispatch: a host program allocates a
    buffer for most of its kernels."""
    allocate = _EMPTY_STRIDED.get(device.type)
    return allocate or functools.partial(_empty_strided_on, device)


def _empty_strided_on(device: torch.device, size, stride, dtype) -> torch.Tensor:
    return torch.empty_strided(size, stride, dtype=dtype, device=device)


_EMPTY_STRIDED = {device: getattr(torch._C._dynamo.guards, f"_empty_strided_{device}")
                  for device in ("cuda", "cpu")
                  if hasattr(torch._C._dynamo.guards, f"_empty_strided_{device}")}


def recording_cuda_graph(device: torch.device) -> bool:
    """Whether this call of a host program is recorded into a CUDA graph: captured, or
    run in a CUDA graph tree's memory pool (cuda_graph_trees), where the trees count
    every tensor that outlives the call as an output."""
    return device.type == "cuda" and (torch.cuda.is_current_stream_capturing()
                                      or cuda_graph_trees.running_in_tree())


class ConvertedWeights:
    """A conversion of weights in host programs, made once per weight version instead
    of at every call: `channels_last_weight(w, capturing)`, a convolution weight in
    channels-last layout; `padded_weight(w, widths, capturing)`, a gemm's weight padded
    with zeros (pad-contractions: GPT-2's tied 50257 x 768 embedding, 77 MB in bf16, was
    padded at every call). While a CUDA graph is recorded the conversion is recorded
    instead, so that a replay after an in-place update of the weight converts the new
    values."""

    def __init__(self, convert: Callable[..., torch.Tensor],
                 already: Callable[[torch.Tensor], bool] = lambda weight: False):
        self.convert = convert
        self.already = already  # weights that need no conversion (convert returns them)
        # By the weight's identity, its entry dropped when it dies: a conversion goes
        # with its weight, and a new weight at a freed one's address or id is never
        # taken for it.
        self.converted: dict[tuple, tuple[int, torch.Tensor]] = {}

    def __call__(self, weight: torch.Tensor, *arguments) -> torch.Tensor:
        *how, capturing = arguments  # how to convert (a pad's widths), then `capturing`
        if capturing or self.already(weight):
            return self.convert(weight, *how)
        key = (id(weight), *how)
        if key not in self.converted:
            weakref.finalize(weight, self.converted.pop, key, None)
        version, converted = self.converted.get(key, (None, None))
        if version != weight._version:
            converted = self.convert(weight, *how)
            self.converted[key] = (weight._version, converted)
        return converted


def channels_last_weights() -> ConvertedWeights:
    return ConvertedWeights(lambda weight: weight.contiguous(memory_format=torch.channels_last),
                            lambda weight: weight.is_contiguous(memory_format=torch.channels_last))


def padded_weights() -> ConvertedWeights:
    return ConvertedWeights(lambda weight, widths: torch.nn.functional.pad(weight, widths))

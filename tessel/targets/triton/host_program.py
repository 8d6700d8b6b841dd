"""Generates the Triton target's host program: readable Python that walks `main` in
order, allocates each kernel's output buffers, launches the Triton kernels, calls aten
for the library calls (gemms: cuBLAS, convolutions: cuDNN), and reshapes, pads and
concatenates in between. Dynamic sizes are computed from the graph's inputs
(sizes.host_expression) where buffers are allocated, views shaped and kernels launched."""

from __future__ import annotations

import re
import weakref

import torch

from tessel import ir
from tessel.frontend.signature import GraphSignature, TensorInput
from tessel.passes.buffer_views import view_root
from tessel.passes.contractions import convolution_pair
from tessel.passes.form_kernels import is_kernel, kernel_name, sole_generic
from tessel.targets.triton import cuda_graph_trees, sizes
from tessel.targets.triton.dtypes import TORCH_DTYPES, element_name, scalar_literal
from tessel.targets.triton.kernel_source import KernelSource
from tessel.targets.triton.launcher import dry_running
from tessel.targets.triton.op_table import CMPI_OPERATORS, CMPI_PREDICATES
from tessel.targets.triton.unsupported import UnsupportedKernel
from tessel.targets.triton.writer import fill_constant

_VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape")
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


def _shape_text(shape: list[int | str]) -> str:
    return "(" + "".join(f"{size}, " for size in shape).removesuffix(" ") + ")"


def narrowed_values(module: ir.Module) -> frozenset[ir.Value]:
    """Values of `main` that the host program keeps in a narrower float type than their
    IR type: the f32 results of gemms on half operands that start from zero or a row
    bias (addmm's), and views of them, where every reader is a Triton kernel that first
    rounds the value to the operands' type. cuBLAS's half gemm accumulates in f32 and
    rounds the same way, so its half result is exact; the kernels widen it on load
    (kernel_source). Other such gemms get an f32 result (`matmul_in_f32`)."""
    narrowed = set()
    for op in ir.ops_where(ir.function_named(module, "main"),
                           lambda op: op.name == "tkern.library_call"):
        contraction = op.regions[0].blocks[0].operations[0].operation
        if contraction.name == "linalg.conv_2d_nchw_fchw" or \
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
        closure, frontier, rounded_on_read = [], [op.results[0]], True
        while frontier and rounded_on_read:
            value = frontier.pop()
            closure.append(value)
            for use in value.uses:
                user = _main_level_user(use)
                if user.name in _VIEWS + ("tensor.cast",):
                    frontier.append(user.results[0])
                elif not _rounds_on_read(use, half):
                    rounded_on_read = False
        if rounded_on_read:
            narrowed.update(closure)
    return frozenset(narrowed)


def _rounds_on_read(use, half: ir.Type) -> bool:
    """Whether `use` is an input of a linalg.generic inside a kernel whose body only
    truncates that input to `half`."""
    generic = ir.operation_of(use.owner)
    kernel = _main_level_user(use)
    if generic is None or generic.name != "linalg.generic" or \
            kernel.name == "tkern.library_call" or not is_kernel(kernel):
        return False
    inputs = len(generic.operands) - len(generic.results)
    if use.operand_number >= inputs:
        return False
    argument = generic.regions[0].blocks[0].arguments[use.operand_number]
    readers = [ir.operation_of(u.owner) for u in argument.uses]
    return bool(readers) and all(r.name == "arith.truncf" and r.results[0].type == half
                                 for r in readers)


def _skipped_fill(value: ir.Value) -> bool:
    """Whether `value` is a constant fill of a kernel of its own that only kernels
    read: the host does not launch it, and its readers use the constant
    (kernel_source.fill_constant)."""
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "tkern.kernel" and len(owner.results) == 1 \
        and fill_constant(value) is not None \
        and all(is_kernel(_main_level_user(use)) for use in value.uses)


def _main_level_user(use) -> ir.Operation:
    """The op of `main`'s body that contains the user of `use` (kernels read main's
    values from inside their regions)."""
    user = ir.operation_of(use.owner)
    while user.parent is not None and user.parent.name != "func.func":
        user = user.parent
    return user


def scatter(buffer: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor,
            accumulate: bool) -> None:
    """`scatter(...)` in host programs: tm_tensor.scatter as index_put_. Row i of
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
    buffer.index_put_(columns, updates, accumulate=accumulate)


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


def _strides(shape: list[int], channels_last: bool) -> list[int]:
    """Contiguous strides of `shape`, or channels-last ones (dim 1 innermost: NHWC for
    NCHW, NLC for NCL)."""
    order = [0, *range(2, len(shape)), 1] if channels_last else list(range(len(shape)))
    strides = [0] * len(shape)
    step = 1
    for dim in reversed(order):
        strides[dim] = step
        step *= max(shape[dim], 1)
    return strides


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
    own computes only that (a gemm's initial accumulator from fold-bias-into-gemm), else
    None: the gemm's library call then reads the 1-D tensor as addmm's bias."""
    generic = sole_generic(ir.operation_of(value.owner))
    if generic is None or len(list(value.uses)) != 1 or len(generic.operands) != 2:
        return None
    maps = [str(m) for m in ir.indexing_maps(generic)]
    if maps != ["(d0, d1) -> (d1)", "(d0, d1) -> (d0, d1)"] or ir.sole_cast(generic) != "arith.extf":
        return None
    return generic.operands[0]


def _aten_contraction(a: str, b: str, maps: list[ir.AffineMap],
                      matmul: str = "torch.matmul", bias: str | None = None) -> str:
    """`A B` of a contraction `C += A B`, read off its indexing maps: torch.matmul on
    (transposed) views where the maps are a matmul's, batched or broadcast (cuBLAS gets
    the transposes as flags); torch.einsum for any other contraction: on a large bf16
    gemm, einsum with a transposed B ran well behind matmul.
    With `bias` (a row vector C starts from): a 2-D half gemm is torch.addmm, which
    cuBLAS runs with the bias in its epilogue; otherwise the bias is added."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    terms = ["".join(letters[e.position] for e in affine_map.results) for affine_map in maps]
    output = terms[2]
    widen = "" if matmul == "torch.matmul" else ".float()"
    einsum = f"torch.einsum('{terms[0]},{terms[1]}->{output}', {a}{widen}, {b}{widen})"
    plus_bias = f" + {bias}" if bias else ""
    contracted = set(terms[0] + terms[1]) - set(output)
    if len(contracted) != 1:
        return einsum + plus_bias  # an outer product, or several dims contracted at once
    (k,) = contracted
    batch, m, n = output[:-2], output[-2:-1], output[-1:]
    operands = []
    for name, term, pair in ((a, terms[0], {m, k}), (b, terms[1], {k, n})):
        leading, last_two = term[:-2], term[-2:]
        if len(term) < 2 or set(last_two) != pair or not batch.endswith(leading):
            return einsum + plus_bias
        in_order = last_two == (m + k if name == a else k + n)
        operands.append(name if in_order else f"{name}.transpose(-2, -1)")
    if bias and matmul == "torch.matmul" and not batch:
        return f"torch.addmm({bias}, {operands[0]}, {operands[1]})"
    return f"{matmul}({operands[0]}, {operands[1]})" + plus_bias


def _pad_value(pad: ir.Operation) -> str | None:
    """The literal a tensor.pad pads with, or None (a value computed in its body)."""
    (yielded,) = [o.operation for o in pad.regions[0].blocks[0].operations]
    source = ir.operation_of(yielded.operands[0].owner)
    if source is None or source.name != "arith.constant":
        return None
    return scalar_literal(source.attributes["value"])


def _conv_padding(pad: ir.Operation) -> tuple[int, int] | None:
    """(height, width) padding when `pad` pads only the spatial dims of an NCHW image,
    evenly, with zeros, for convolutions alone; else None."""
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    if len(pad.operands) != 1 or len(low) != 4 or low != high or low[:2] != [0, 0] or \
            _pad_value(pad) not in ("0.0", "0"):
        return None
    for use in pad.results[0].uses:
        user = ir.operation_of(use.owner)
        if user is None or user.name != "linalg.conv_2d_nchw_fchw" or use.operand_number != 0:
            return None
    return low[2], low[3]


class _HostWriter:
    def __init__(self, main, kernels: dict[str, KernelSource],
                 signature: GraphSignature, channels_last: frozenset, narrowed: frozenset):
        self.kernels = kernels
        self.channels_last = channels_last
        self.narrowed = narrowed
        self.names: dict = {}
        # The graph input each view reads (launch_mode checks the alignment of those
        # that kernels read), and the inputs kernels read.
        self.viewed_input: dict[str, str] = {}
        self.inputs_read_by_kernels: list[str] = []
        self.launchers: list[str] = []
        self.lines: list[str] = []
        self.counter = 0
        block = main.regions[0].blocks[0]
        for argument, graph_input in zip(block.arguments, signature.inputs):
            self.names[argument] = graph_input.name
        self.input_names = {graph_input.name for graph_input in signature.inputs}
        self.ops = [op.operation for op in block.operations]
        self.skipped_fills = {op.results[0] for op in self.ops
                              if op.results and _skipped_fill(op.results[0])}
        # Zero padding of a convolution's input goes into the convolution's `padding`.
        self.folded_pads = {}
        for op in self.ops:
            padding = _conv_padding(op) if op.name == "tensor.pad" else None
            if padding is not None:
                self.folded_pads[op.results[0]] = padding
        # Bias broadcasts that a gemm's library call reads as addmm's bias: not launched.
        self.gemm_biases = {}
        for op in self.ops:
            if op.name == "tkern.library_call":
                init = op.regions[0].blocks[0].operations[0].operation.operands[-1]
                if (bias := _row_bias(init)) is not None:
                    self.gemm_biases[init] = bias
        self.concat_chains = _concat_chains(self.ops)
        self.chain_buffers: dict[ir.Value, str] = {}

    def fresh(self, stem: str = "buf") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def name_or_literal(self, entry: int | ir.Value) -> int | str:
        """An entry of ir.mixed_values: a literal, or the name of main's value."""
        return entry if isinstance(entry, int) else self.name_of(entry)

    def name_of(self, value: ir.Value) -> str:
        if value not in self.names:
            raise UnsupportedKernel("func.func", f"value {value.get_name()} has no host buffer")
        return self.names[value]

    def write(self) -> list[str]:
        for op in self.ops:
            try:
                self.write_op(op)
            except UnsupportedKernel as error:
                error.at = error.at or op
                raise
        return self.lines

    def write_op(self, op: ir.Operation) -> None:
        if op.name == "tkern.library_call":
            self.library_call(op)
        elif is_kernel(op):
            if (rounded := self.rounding_only(op)) is not None:
                self.names[op.results[0]] = self.name_of(rounded)
            elif not op.results or (op.results[0] not in self.skipped_fills
                                    and op.results[0] not in self.gemm_biases):
                self.launch(op)
        elif op.name in _VIEWS:
            shape = self.shape_of(op.results[0])
            self.view(op.results[0], op.operands[0],
                      f"{self.name_of(op.operands[0])}.reshape({_shape_text(shape)})")
        elif op.name == "tensor.pad":
            if op.results[0] not in self.folded_pads:
                self.pad(op)
        elif op.name == "tensor.extract_slice":
            self.view(op.results[0], op.operands[0], self.slice(op))
        elif op.name == "tensor.insert_slice":
            self.insert_slice(op)
        elif op.name == "tensor.concat":
            self.concat(op)
        elif op.name == "tensor.cast":
            self.names[op.results[0]] = self.name_of(op.operands[0])
        elif op.name == "arith.constant":
            self.constant(op)
        elif op.name == "cf.assert":
            # A size check of torch-mlir's lowering: a failure runs the graph eagerly.
            message = ir.StringAttr(op.attributes["msg"]).value
            self.lines += [f"if not {self.name_of(op.operands[0])}:",
                           f"    raise RuntimeCheckFailed('tessel: a runtime check of the "
                           f"compiled graph failed: ' + {message!r})"]
        elif op.name in ("tensor.empty", "func.return"):
            pass  # outputs are allocated where a kernel writes them
        elif op.name in _SIZE_OPS:
            self.size_arithmetic(op)
        else:
            raise UnsupportedKernel(op.name, "at the host level of the Triton target")

    def rounding_only(self, op: ir.Operation) -> ir.Value | None:
        """The value a kernel only rounds to a half type, element for element, when the
        host already keeps that value in the half type (`narrowed`, e.g. an addmm's
        result): the kernel would copy it, so its result is that tensor."""
        generic = sole_generic(op)
        if generic is None or len(op.results) != 1 or len(generic.operands) != 2:
            return None
        source = generic.operands[0]
        maps = ir.indexing_maps(generic)
        same_element = maps[0].is_permutation and str(maps[0]) == str(maps[1])
        if (source not in self.narrowed or not same_element
                or ir.sole_cast(generic) != "arith.truncf"
                or ir.ShapedType(source.type).shape != ir.ShapedType(op.results[0].type).shape):
            return None
        return source

    def assign(self, value: ir.Value, expression: str) -> str:
        name = self.fresh()
        self.lines.append(f"{name} = {expression}")
        self.names[value] = name
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
        strides = _strides(shape, channels_last)
        return (f"torch.empty_strided({_shape_text(shape)}, {_shape_text(strides)}, "
                f"dtype={TORCH_DTYPES[element]}, device=device)")

    def view(self, value: ir.Value, source: ir.Value, expression: str) -> None:
        """`value`, a view of `source` (or a copy, where torch's reshape must copy)."""
        source_name = self.name_of(source)
        name = self.assign(value, expression)
        self.viewed_input[name] = self.viewed_input.get(source_name, source_name)

    def size_arithmetic(self, op: ir.Operation) -> None:
        """A scalar of `main` (a size, or a step in computing one) as a Python int or
        bool; a kernel that needs it takes it as a size argument (sizes.py)."""
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
        self.lines.append(f"{self.names[op.results[0]]} = {expression}")

    def constant(self, op: ir.Operation) -> None:
        result = op.results[0]
        if not isinstance(result.type, ir.ShapedType):
            # A literal inside the kernels; the host reads it in size arithmetic.
            self.names[result] = scalar_literal(op.attributes["value"])
            return
        value = scalar_literal(op.attributes["value"])  # splats only; raises otherwise
        self.assign(result, f"torch.full({_shape_text(list(result.type.shape))}, {value}, "
                            f"dtype={TORCH_DTYPES[element_name(result)]}, device=device)")

    def launch(self, op: ir.Operation) -> None:
        kernel = self.kernels[kernel_name(op)]
        inputs = [self.name_of(value) for value in kernel.inputs]
        outputs = []
        for result, buffer in zip(op.results, kernel.results):
            shape = [self.size(extent) for extent in buffer.shape]
            outputs.append(self.assign(result, self.empty(result, shape, buffer.element)))
        strides = [f"*{name}.stride()" for name, value in zip(inputs, kernel.inputs)
                   if value.type.rank]
        strides += [f"*{name}.stride()" for name, buffer in zip(outputs, kernel.results)
                    if buffer.shape]
        strides += [str(self.size(root)) for root in kernel.sizes]
        for name in inputs:
            read = self.viewed_input.get(name, name)
            if read in self.input_names and read not in self.inputs_read_by_kernels:
                self.inputs_read_by_kernels.append(read)
        launcher = f"launch_{kernel.name}"
        grid = kernel.grid
        if kernel.sizes:  # a function of the size arguments, which the launch passes last
            parameters = ", ".join(f"size{index}" for index in range(len(kernel.sizes)))
            grid = f"lambda {parameters}: ({''.join(f'{g}, ' for g in kernel.grid)})"
        self.launchers.append(f"{launcher} = KernelLauncher({kernel.function}, grid={grid}, "
                              f"block={kernel.block}, num_warps={kernel.num_warps}"
                              + (f", sizes={len(kernel.sizes)}" if kernel.sizes else "")
                              + (f", num_stages={kernel.num_stages}" if kernel.num_stages else "")
                              + (f", gemm={kernel.gemm})" if kernel.gemm else ")"))
        launch = f"{launcher}(direct, stream, {', '.join(inputs + outputs + strides)})"
        if not kernel.results:
            # Only runtime checks (tl.device_assert): Triton compiles them in under
            # TRITON_DEBUG=1 alone, so otherwise the launch would do nothing.
            self.lines += ["if triton_debug:", f"    {launch}"]
        else:
            self.lines.append(launch)

    def library_call(self, op: ir.Operation) -> None:
        """A gemm (cuBLAS), convolution (cuDNN) or scatter through aten, plus its
        accumulator's initial value unless that is a folded zero fill."""
        body = [o.operation for o in op.regions[0].blocks[0].operations]
        contraction = body[0]
        if contraction.name == "tm_tensor.scatter":
            self.scatter(op.results[0], contraction)
            return
        if contraction.name == "linalg.conv_2d_nchw_fchw":
            product = self.convolution(contraction)
        elif contraction.name == "linalg.conv_2d_ngchw_gfchw":
            product = self.grouped_convolution(contraction)
        elif len(body) == 2 and "indexing_maps" in contraction.attributes:
            maps = [ir.AffineMapAttr(m).value
                    for m in ir.ArrayAttr(contraction.attributes["indexing_maps"])]
            a, b = (self.name_of(v) for v in contraction.operands[:2])
            mixed = element_name(contraction.operands[0]) != element_name(contraction.results[0])
            in_f32 = mixed and op.results[0] not in self.narrowed
            bias = self.gemm_biases.get(contraction.operands[2])
            product = _aten_contraction(a, b, maps, "matmul_in_f32" if in_f32 else "torch.matmul",
                                        bias and self.name_of(bias))
            if bias is not None:
                self.assign(op.results[0], product)
                return
        else:
            raise UnsupportedKernel(contraction.name, "a library call tessel has no routine for")
        init = contraction.operands[2]
        if init not in self.skipped_fills:
            product = f"{self.name_of(init)} + {product}"
        elif (constant := fill_constant(init)) not in ("0.0", "0"):
            product = f"{product} + {constant}"
        self.assign(op.results[0], product)

    def scatter(self, result: ir.Value, scatter: ir.Operation) -> None:
        """tm_tensor.scatter as index_put_ on a copy of its original: index column j
        addresses dim j, and a body that adds the update to the original accumulates."""
        updates, indices, original = scatter.operands
        dimension_map = list(ir.DenseI64ArrayAttr(scatter.attributes["dimension_map"]))
        if dimension_map != list(range(len(dimension_map))):
            raise UnsupportedKernel(scatter.name, f"a dimension_map of {dimension_map}")
        block = scatter.regions[0].blocks[0]
        update, current = block.arguments
        yielded = block.operations[len(block.operations) - 1].operands[0]
        combiner = ir.operation_of(yielded.owner)
        if yielded == update:
            accumulate = False
        elif combiner is not None and combiner.name in ("arith.addf", "arith.addi") and \
                set(combiner.operands) == {update, current} and len(block.operations) == 2:
            accumulate = True
        else:
            raise UnsupportedKernel(scatter.name, "a scatter that neither stores nor adds")
        if original in self.skipped_fills:
            shape = _shape_text(list(original.type.shape))
            base = (f"torch.full({shape}, {fill_constant(original)}, "
                    f"dtype={TORCH_DTYPES[element_name(original)]}, device=device)")
        else:
            base = f"{self.name_of(original)}.clone()"
        buffer = self.assign(result, base)
        self.lines.append(f"scatter({buffer}, {self.name_of(indices)}, "
                          f"{self.name_of(updates)}, accumulate={accumulate})")

    def convolution(self, conv: ir.Operation) -> str:
        image, weight = conv.operands[0], conv.operands[1]
        strides, dilations = convolution_pair(conv, "strides"), convolution_pair(conv, "dilations")
        padding = self.folded_pads.get(image)
        if padding is not None:
            image = ir.operation_of(image.owner).operands[0]
        weight_name = self.name_of(weight)
        if self.channels_last:
            weight_name = f"channels_last_weight({weight_name}, capturing)"
        # aten's convolution, as Inductor calls it: F.conv2d adds a dispatch on top,
        # host time at every call (benchmarks/host_costs.py).
        return (f"torch.convolution({self.name_of(image)}, {weight_name}, None, "
                f"{strides}, {padding or (0, 0)}, {dilations}, "
                f"False, (0, 0), 1)")

    def grouped_convolution(self, conv: ir.Operation) -> str:
        """linalg's grouped convolution, (N, G, C, H, W) by (G, F, C, KH, KW), as one
        aten convolution of G groups. torch-mlir computes a strided convolution's weight
        gradient so (the batch as groups, the stride as dilation); as a loop kernel, the
        7x7 stride-2 stem of densenet121's train step took about a quarter of the step's
        GPU time (torch.profiler)."""
        image, weight = conv.operands[0], conv.operands[1]
        shapes = [list(ir.ShapedType(v.type).shape) for v in (image, weight, conv.results[0])]
        if any(ir.ShapedType.is_dynamic_size(d) for shape in shapes for d in shape):
            raise UnsupportedKernel(conv.name, "a grouped convolution of dynamic sizes")
        (n, groups, c, h, w), (_, f, _, kh, kw), result = shapes
        strides, dilations = convolution_pair(conv, "strides"), convolution_pair(conv, "dilations")
        return (f"torch.convolution({self.name_of(image)}.reshape({n}, {groups * c}, {h}, {w}), "
                f"{self.name_of(weight)}.reshape({groups * f}, {c}, {kh}, {kw}), None, "
                f"{strides}, (0, 0), {dilations}, False, (0, 0), {groups})"
                f".reshape({_shape_text(result)})")

    def concat(self, op: ir.Operation) -> None:
        """torch.cat, or, for a concat in a chain (_concat_chains), a view of the chain's
        buffer after copying in the pieces that the concat before it lacked."""
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        result = op.results[0]
        chain = self.concat_chains.get(result)
        if chain is None:
            parts = ", ".join(self.name_of(v) for v in op.operands)
            self.assign(result, f"torch.cat([{parts}], dim={dim})")
            return
        results = [c.results[0] for c in chain]
        position = results.index(result)
        if position == 0:
            buffer = self.fresh()
            self.lines.append(f"{buffer} = "
                              f"{self.empty(results[-1], list(results[-1].type.shape), element_name(result))}")
            self.chain_buffers[results[0]] = buffer
        buffer = self.chain_buffers[results[0]]
        pieces = list(op.operands)
        copied = len(chain[position - 1].operands) if position else 0
        offset = sum(piece.type.shape[dim] for piece in pieces[:copied])
        for piece in pieces[copied:]:
            size = piece.type.shape[dim]
            self.lines.append(f"{buffer}.narrow({dim}, {offset}, {size})"
                              f".copy_({self.name_of(piece)})")
            offset += size
        if position == len(chain) - 1:
            self.names[result] = buffer
        else:
            self.assign(result, f"{buffer}.narrow({dim}, 0, {offset})")

    def slice(self, op: ir.Operation) -> str:
        """A tensor.extract_slice as a torch view (`x[a:b:s, ...]`), with the dims a
        rank-reducing slice drops indexed away."""
        items, slice_shape = self.slice_items(op, first_dynamic=1)
        view = f"{self.name_of(op.operands[0])}[{items}]"
        shape = self.shape_of(op.results[0])
        return view if shape == slice_shape else f"{view}.reshape({_shape_text(shape)})"

    def insert_slice(self, op: ir.Operation) -> None:
        """tensor.insert_slice as a copy of the destination with the source copied into a
        view of it."""
        items, slice_shape = self.slice_items(op, first_dynamic=2)
        buffer = self.assign(op.results[0], f"{self.name_of(op.operands[1])}.clone()")
        self.lines.append(f"{buffer}[{items}] = "
                          f"{self.name_of(op.operands[0])}.reshape({_shape_text(slice_shape)})")

    def slice_items(self, op: ir.Operation, first_dynamic: int) -> tuple[str, list]:
        """The `a:b:s, ...` index of a slice op's offsets, sizes and strides (static, or
        main's values from operand `first_dynamic` on), and its sizes."""
        per_dim = [[self.name_or_literal(v) for v in values] for values in ir.mixed_values(
            op, ("static_offsets", "static_sizes", "static_strides"), first_dynamic)]
        items = []
        for offset, size, step in zip(*per_dim):
            if all(isinstance(v, int) for v in (offset, size, step)):
                end = offset + (size - 1) * step + 1
            else:
                end = f"{offset} + ({size} - 1) * {step} + 1"
            items.append(f"{offset}:{end}" + (f":{step}" if step != 1 else ""))
        return ", ".join(items), per_dim[1]

    def pad(self, op: ir.Operation) -> None:
        """tensor.pad with a constant, as torch.nn.functional.pad (last dim first); a
        dynamic width is one of main's values."""
        low, high = ([self.name_or_literal(w) for w in widths]
                     for widths in ir.mixed_values(op, ("static_low", "static_high"), 1))
        value = _pad_value(op)
        if value is None:
            raise UnsupportedKernel(op.name, "a pad with a computed value")
        widths = ", ".join(f"{lo}, {hi}" for lo, hi in zip(reversed(low), reversed(high)))
        self.assign(op.results[0], f"torch.nn.functional.pad({self.name_of(op.operands[0])}, "
                                   f"({widths}), value={value})")


_BUFFER = re.compile(r"\bbuf\d+\b")
# Names that may hold a buffer's memory: buffers, and the outputs returned.
_HOLDER = re.compile(r"\b(?:buf|out)\d+\b")
_ALLOCATION = re.compile(r"^(buf\d+) = (torch\.empty_strided\(.*, device=device\))$")
# Right-hand sides that return new memory, never a view of their operands: library
# calls (not einsum, which returns a view for a mere permutation) and copies.
_FRESH = re.compile(r"^(torch\.(matmul|mm|bmm|addmm|convolution|cat|full|empty)\(|matmul_in_f32\()"
                    r"|\.clone\(\)$")


def _reusing_buffers(body: list[str]) -> list[str]:
    """Buffer planning: `body` with each allocation that can take the memory of an
    earlier buffer of the same shape, strides and dtype, whose memory nothing reads any
    more, assigned that buffer instead (`buf9 = buf4  # reuses buf4's memory`).

    A buffer's memory is read through its name and through every name assigned from an
    expression that mentions it (views, slices, outputs; not library calls and copies,
    which return new memory), taken transitively; it is free after the last line that
    mentions any of them. Outputs are never freed. One stream runs a call's launches in order, so a kernel that writes the
    reused memory runs after every kernel that read it before.

    Memory is reused only when nothing is allocated between its last read and the new
    allocation: that is the block torch's caching allocator would hand out there too,
    so the plan saves its call's host time and never raises the peak. Reuse
    across other allocations did: holding a freed buffer for a later one kept it from
    the library calls in between (peak call memory: resnet50 48 -> 60 MiB,
    densenet121 39 -> 53)."""
    memory: dict[str, set[str]] = {}      # name -> the allocations whose memory it may hold
    signature: dict[str, str] = {}        # allocation -> its torch.empty_strided(...)
    for line in body:
        target, _, source = line.partition(" = ")
        allocation = _ALLOCATION.match(line)
        if allocation:
            memory[target], signature[target] = {target}, allocation.group(2)
        elif source and _HOLDER.fullmatch(target):
            memory[target] = set() if _FRESH.match(source) else \
                set().union(*(memory.get(n, set()) for n in _HOLDER.findall(source)))
    last_read: dict[str, int] = {}
    for index, line in enumerate(body):
        for name in _HOLDER.findall(line):
            for allocation in memory.get(name, ()):
                last_read[allocation] = index
    dead_after: dict[int, list[str]] = {}
    for allocation, index in last_read.items():
        dead_after.setdefault(index, []).append(allocation)
    planned = []
    free: list[str] = []  # allocations no longer read, and nothing allocated since
    for index, line in enumerate(body):
        allocation = _ALLOCATION.match(line)
        reusable = [f for f in free if allocation and signature[f] == allocation.group(2)]
        if reusable:
            free.remove(reusable[0])
            line = f"{allocation.group(1)} = {reusable[0]}  # reuses {reusable[0]}'s memory"
        elif _HOLDER.fullmatch(line.partition(" = ")[0]):
            # Any other assignment to a buffer name may allocate (views too,
            # conservatively: a reshape may copy).
            free.clear()
        planned.append(line)
        free += dead_after.get(index, [])
    return planned


def _freeing_buffers(body: list[str]) -> list[str]:
    """`body` with each buffer's name deleted after the line that uses it last, so that
    torch's caching allocator can hand its memory to a later buffer of the same call
    (a buffer viewed by a later name stays alive through that name). Without this,
    every intermediate of a call stays allocated until the call returns."""
    last_use = {}
    for index, line in enumerate(body):
        for name in _BUFFER.findall(line):
            last_use[name] = index
    dead_after: dict[int, list[str]] = {}
    for name, index in last_use.items():
        dead_after.setdefault(index, []).append(name)
    freed = []
    for index, line in enumerate(body):
        freed.append(line)
        if index in dead_after and not line.startswith("return "):
            freed.append(f"del {', '.join(sorted(dead_after[index]))}")
    return freed


def generate(module: ir.Module, kernels: dict[str, KernelSource],
             signature: GraphSignature, graph_name: str,
             channels_last: frozenset = frozenset(), narrowed: frozenset = frozenset()) -> str:
    """The host program of one graph: defines host(*graph_inputs) -> tuple of outputs.
    The `channels_last` values (layouts.py) are allocated so, convolution weights are
    channels-last (cuDNN's tensor-core kernels take NHWC), and where there are any,
    outputs are returned contiguous."""
    main = ir.function_named(module, "main")
    writer = _HostWriter(main, kernels, signature, channels_last, narrowed)
    tensors = [arg for arg in signature.inputs if isinstance(arg, TensorInput)]
    # The device of the first input with dims: a 0-d input may be a CPU scalar (under
    # dynamic=True, Python floats come in as 0-d CPU tensors), which moves to it.
    # Without one, the device the graph was traced on.
    placed = [arg.name for arg in tensors if arg.rank]
    device = (f"{placed[0]}.device" if placed
              else f"torch.device({signature.device or 'cuda'!r})")
    body = [f"{symbol} = {source}" for symbol, source in signature.symbol_bindings]
    body.append(f"device = {device}")
    body += [f"{arg.name} = {arg.name}.to(device)" for arg in tensors if not arg.rank]
    if channels_last:
        body.append("capturing = recording_cuda_graph(device)")
    statements = writer.write()
    body.append(f"direct, stream = launch_mode("
                f"{', '.join(['device'] + writer.inputs_read_by_kernels)})")
    body += statements
    returned = writer.ops[-1].operands
    if len(returned) != len(signature.results):
        raise ValueError(f"main returns {len(returned)} tensors, the graph "
                         f"{len(signature.results)}")
    returned_roots: list[ir.Value] = []
    for index, (value, result) in enumerate(zip(returned, signature.results)):
        # A result is new memory, as in eager: not an input (torch-mlir folds a clone of
        # one into the input itself) nor an earlier result, nor a view of either.
        root = view_root(value)
        shared = isinstance(root.owner, ir.Block) or root in returned_roots
        returned_roots.append(root)
        if shared:
            layout = "memory_format=torch.contiguous_format" if channels_last else ""
            body.append(f"out{index} = {writer.name_of(value)}.clone({layout})")
        else:
            # Contiguous, as eager's result is (result.stride None): a view the host
            # took (the shifted labels of a causal LM's loss, a slice of a padded
            # tensor) may not be, and aot_autograd's view of it then fails.
            relaid = channels_last or root != value
            body.append(f"out{index} = {writer.name_of(value)}"
                        + (".contiguous()" if relaid else ""))
        if result.stride is not None:
            # Eager returns this output strided; callers may rely on its layout.
            body.append(f"out{index} = torch.empty_strided(out{index}.shape, "
                        f"({', '.join(result.stride)},), dtype={result.dtype}, "
                        f"device=device).copy_(out{index})")
    body.append(f"return ({''.join(r + ', ' for r in signature.returns)})")
    body = _freeing_buffers(_reusing_buffers(body))
    lines = [f"# tessel host program for graph {graph_name} (target triton)",
             *writer.launchers, "",
             f"def host({', '.join(arg.name for arg in signature.inputs)}):"]
    lines += ["    " + line for line in body]
    return "\n".join(lines) + "\n"


def recording_cuda_graph(device: torch.device) -> bool:
    """Whether this call of a host program is recorded into a CUDA graph: captured, or
    run in a CUDA graph tree's memory pool (cuda_graph_trees), where the trees count
    every tensor that outlives the call as an output."""
    return device.type == "cuda" and (torch.cuda.is_current_stream_capturing()
                                      or cuda_graph_trees.running_in_tree())


class ChannelsLastWeights:
    """`channels_last_weight(w, capturing)` in host programs: a convolution weight in
    channels-last layout, converted once per weight version instead of at every call.
    While a CUDA graph is recorded the conversion is recorded instead, so that a replay
    after an in-place update of the weight converts the new values."""

    def __init__(self):
        # By the weight's identity, its entry dropped when it dies: a conversion goes
        # with its weight, and a new weight at a freed one's address or id is never
        # taken for it.
        self.converted: dict[int, tuple[int, torch.Tensor]] = {}

    def __call__(self, weight: torch.Tensor, capturing: bool) -> torch.Tensor:
        if capturing or weight.is_contiguous(memory_format=torch.channels_last):
            return weight.contiguous(memory_format=torch.channels_last)
        key = id(weight)
        if key not in self.converted:
            weakref.finalize(weight, self.converted.pop, key, None)
        version, converted = self.converted.get(key, (None, None))
        if version != weight._version:
            converted = weight.contiguous(memory_format=torch.channels_last)
            self.converted[key] = (weight._version, converted)
        return converted

"""Triton source for one `tkern.kernel` of the `gpu` pipeline.

The pipeline leaves three shapes of kernel (see fuse-tiles, fuse-gemm-epilogues and
choose-gpu-blocks):

- pointwise: linalg.generic ops over a whole tensor. Each program computes BLOCK
  consecutive points of the row-major iteration space; every operand is loaded
  through its indexing map and the strides the host passes, so broadcasts,
  transposes and non-contiguous inputs need no copies.
- row: an scf.forall with one program per row, whose body works on 1 x row tiles:
  elementwise generics, reductions of the whole row to one value, and a
  parallel_insert_slice per result. The row stays in registers ("persistent", the
  row fits one block), so a reduction's prologue, the reduction and its epilogue
  are one pass over memory. A kernel with a reduction but no forall is one row.
- gemm template: a linalg.matmul with element-wise generics before (its initial
  accumulator) and after (its epilogue); each program computes a 2-D tile with tl.dot
  and applies the epilogue in registers (_gemm_template).

Inside a kernel every value is a row (a [BLOCK] vector over the flattened iteration
space `r`) or a per-program scalar. An element-wise generic is computed at the kernel's
points where its iteration space is the row's; where it is not (a mask over [1, S, S]
that a kernel over [H, S, S] broadcasts), or where a reader reads its result through a
map that moves it off the lanes that hold it, it is computed again at the reader's
points: its loop indices are the reader's, taken through the two indexing maps
(`_Writer.recompute`). What is left (a reduction's result read off its lanes, partial
reductions of a row) raises UnsupportedKernel, naming the op; the graph then runs
eagerly around it.

Dynamic sizes are int parameters (`size0`, ...) that the host passes: each is a root
of sizes.py, so the host computes it from the graph's inputs. Index arithmetic, masks,
row loops and grids then use the parameter where a static kernel has a literal.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import sympy

from tessel import ir
from tessel.passes.choose_gpu_blocks import template_programs
from tessel.passes.form_kernels import kernel_body, kernel_name, sole_generic
from tessel.passes.fuse_tiles import MAX_POOLING_WINDOW, pooling_window
from tessel.passes.tile_for_threads import loop_ranges
from tessel.targets.triton import layouts, online_softmax, sizes
from tessel.targets.triton.indexing import (
    LANES,
    ZERO,
    Extent,
    FloorDiv,
    Index,
    Modulo,
    address,
    from_affine,
    is_position,
    named,
    points,
    strides,
    symbol,
    text,
    through_map,
    walked,
)
from tessel.targets.triton.unsupported import UnsupportedKernel

# Result dtypes as torch spells them, for the host program.
TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16",
                "f64": "torch.float64", "i64": "torch.int64", "i32": "torch.int32",
                "i16": "torch.int16", "i8": "torch.int8", "i1": "torch.bool"}
_TRITON_DTYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16",
                  "f64": "tl.float64", "i64": "tl.int64", "i32": "tl.int32",
                  "i16": "tl.int16", "i8": "tl.int8", "i1": "tl.int1"}
# The type a kernel holds values of each element type in: f16 and bf16 are loaded into
# f32, computed in f32 and rounded where the IR rounds (truncf) and where they are
# stored, as Inductor's kernels do and as eager's opmath computes each op. Rounding after
# every op instead loses precision in long fused chains, and Triton's interpreter (the
# CI's) computes bf16 arithmetic on the raw bits.
_HELD_DTYPES = {**_TRITON_DTYPES, "f16": "tl.float32", "bf16": "tl.float32"}
_HALF = ("f16", "bf16")

# Helpers the generated module defines once (see PRELUDE): reductions that keep NaNs,
# as arith.maximumf/minimumf do (tl.max and tl.min drop them).
PRELUDE = '''\
import triton
import triton.language as tl


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _minimum(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _product(a, b):
    return a * b


@triton.jit
def _bitwise_and(a, b):
    return a & b


@triton.jit
def _bitwise_or(a, b):
    return a | b


@triton.jit
def _power(x, y):
    # powf through exp2 and log2 (libdevice.pow does not run in TRITON_INTERPRET mode,
    # where the tests check these kernels): a negative base takes an integral
    # exponent's sign and is NaN otherwise; x ** 0 and 1 ** y are 1.
    magnitude = tl.exp2(y * tl.log2(tl.abs(x)))
    integral = y == tl.floor(y)
    odd = tl.floor(y * 0.5) * 2.0 != y
    signed = tl.where(odd, -magnitude, magnitude)
    result = tl.where(x < 0, tl.where(integral, signed, float("nan")), magnitude)
    return tl.where(y == 0, 1.0, tl.where(x == 1, 1.0, result))
'''

_BINARY = {"arith.addf": "+", "arith.addi": "+", "arith.subf": "-", "arith.subi": "-",
           "arith.mulf": "*", "arith.muli": "*", "arith.divf": "/", "arith.andi": "&",
           "arith.ori": "|", "arith.xori": "^",
           # Triton's integer // and % truncate toward zero, as divsi and remsi do.
           "arith.divsi": "//", "arith.remsi": "%"}
_UNARY_CALLS = {"math.exp": "tl.exp", "math.exp2": "tl.exp2", "math.log": "tl.log",
                "math.log2": "tl.log2", "math.sqrt": "tl.sqrt", "math.rsqrt": "tl.rsqrt",
                "math.absf": "tl.abs", "math.absi": "tl.abs", "math.erf": "tl.erf",
                "math.sin": "tl.sin", "math.cos": "tl.cos", "math.floor": "tl.floor",
                "math.ceil": "tl.ceil"}
_CMPF = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}
# Unordered predicates: true when either side is NaN, else the ordered comparison.
_CMPF_UNORDERED = {"ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<="}
CMPI_OPERATORS = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
# In a body's `names`: the loop indices' expressions (per dim) and their kind.
_LOOP_INDICES = "loop indices"
_CASTS = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi",
          "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast")
# Reduction combiners: (reduce call, identity by element kind, how to merge the init).
_COMBINERS = {
    "arith.addf": ("tl.sum({x}, axis=0)", "0", "{init} + {x}"),
    "arith.addi": ("tl.sum({x}, axis=0)", "0", "{init} + {x}"),
    "arith.mulf": ("tl.reduce({x}, 0, _product)", "1", "{init} * {x}"),
    "arith.maximumf": ("tl.reduce({x}, 0, _maximum)", "float('-inf')", "_maximum({init}, {x})"),
    "arith.minimumf": ("tl.reduce({x}, 0, _minimum)", "float('inf')", "_minimum({init}, {x})"),
    "arith.maxnumf": ("tl.max({x}, axis=0)", "float('-inf')", "tl.maximum({init}, {x})"),
    "arith.minnumf": ("tl.min({x}, axis=0)", "float('inf')", "tl.minimum({init}, {x})"),
    # torch.all and torch.any (masks); all bits set is -1, or True for i1.
    "arith.andi": ("tl.reduce({x}, 0, _bitwise_and)", "-1", "{init} & {x}"),
    "arith.ori": ("tl.reduce({x}, 0, _bitwise_or)", "0", "{init} | {x}"),
}
# Sums and products of f16/bf16 round at every step: they accumulate in f32, as eager's
# reductions do (opmath), and round once. Max and min are exact in any type.
_WIDENED_COMBINERS = ("arith.addf", "arith.mulf")


def _accumulator_element(reduction: ir.Operation) -> str:
    """The element type a reduction accumulates in: f32 for a sum or product of
    f16/bf16, else its result's."""
    element = element_name(reduction.results[0])
    combiner = ir.combining_op(reduction)
    if element in ("f16", "bf16") and combiner is not None \
            and combiner.name in _WIDENED_COMBINERS:
        return "f32"
    return element


_CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt",
                    "uge", "ult", "ule", "une", "uno", "true"]
CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


@dataclass
class KernelResult:
    """A buffer the kernel writes whole, through strides the host passes."""
    shape: list[sizes.Extent]       # static sizes, or roots the host computes
    element: str                    # MLIR element type: f32, bf16, ...


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
    num_stages: int | None = None   # a gemm template's K-loop pipeline depth
    gemm: tuple[int, int, int] | None = None  # a gemm template's m, n, k, if it is tuned
    # The @triton.jit function that runs it: `name`, or an earlier kernel's with the same
    # source (repeated blocks of a network), which Triton then compiles once.
    function: str = ""

    def __post_init__(self):
        self.function = self.function or self.name


def _rank(value: ir.Value) -> int:
    return ir.ShapedType(value.type).rank


def element_name(value: ir.Value) -> str:
    """The MLIR element type of a tensor or scalar value (f32, bf16, i64, ...), as the
    dtype tables spell it."""
    value_type = value.type
    element = value_type.element_type if isinstance(value_type, ir.ShapedType) else value_type
    name = str(element)
    if name == "index":
        return "i64"
    if name not in _TRITON_DTYPES:
        raise UnsupportedKernel("tkern.kernel", f"element type {name} is not supported")
    return name


def scalar_literal(attribute: ir.Attribute) -> str:
    if isinstance(attribute, ir.FloatAttr):
        value = attribute.value
        if math.isnan(value):
            return "float('nan')"
        return repr(value) if math.isfinite(value) else f"float('{value}')"
    if isinstance(attribute, ir.BoolAttr):
        return str(attribute.value)
    if isinstance(attribute, ir.IntegerAttr):
        if str(attribute.type) == "i1":
            return str(bool(attribute.value))
        return str(attribute.value)
    if isinstance(attribute, ir.DenseElementsAttr) and attribute.is_splat:
        return scalar_literal(attribute.get_splat_value())
    raise UnsupportedKernel("arith.constant", f"constant {attribute} is not a scalar")


def _reduction_dims(generic: ir.Operation) -> set[int]:
    return {d for d, it in enumerate(ir.ArrayAttr(generic.attributes["iterator_types"]))
            if "reduction" in str(it)}


@dataclass
class _Slice:
    """A tile of a main-level tensor: `base` at per-dim offsets."""
    base: ir.Value
    offsets: list[Index]


@dataclass
class _Writer:
    name: str
    block: int
    lines: list[str] = field(default_factory=list)
    registers: dict = field(default_factory=dict)       # Value -> (expression, "row"|"scalar")
    literals: dict = field(default_factory=dict)        # Value -> (Python literal, "literal:f32")
    program_ids: dict = field(default_factory=dict)     # row loop index -> "row0", ...
    loads: dict = field(default_factory=dict)           # tl.load expression -> variable
    slices: dict = field(default_factory=dict)          # Value -> _Slice
    inputs: list = field(default_factory=list)          # main-level tensors read
    results: list = field(default_factory=list)         # KernelResult per output buffer
    row_shape: list | None = None                       # the iteration space `r` covers
    channels_last: bool = False                         # flat images walked NHWC (NLC)
    narrowed: frozenset = frozenset()                   # inputs held narrower than typed
    indent: str = ""                                    # inside a looped row's chunk loop
    # A looped pass: the reductions it accumulates (two for an online softmax), each
    # one's (accumulator, initial value), and each running max (see online_softmax):
    # its result -> (lanes' max, lanes' max before this chunk), the sum it rescales.
    accumulating: tuple = ()
    accumulators: dict = field(default_factory=dict)
    running: dict = field(default_factory=dict)
    running_maxima: dict = field(default_factory=dict)
    size_roots: list = field(default_factory=list)      # root per size parameter
    # A gemm template's 2-D tile: its shape, each loop dim's indices, its block sizes.
    tile: str = "[BLOCK]"
    tile_indices: list | None = None
    # The loop dims of the generic being written that `r` walks, in its order (its
    # result's dims), where they differ from the loop order; None: in loop order.
    walk_dims: list | None = None
    # Each result of an element-wise generic of the kernel -> that generic, which a
    # reader computes again at its own points (recompute); what it computed, per
    # (result, loop indices), in the scope of the current chunk loop.
    producers: dict = field(default_factory=dict)
    recomputed: dict = field(default_factory=dict)
    recomputing: int = 0
    points: dict = field(default_factory=dict)          # row register -> its tensor indices
    constants: tuple = ("BLOCK",)
    counter: int = 0

    # ----------------------------------------------------------------- names

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def size(self, extent: sizes.Extent) -> int | sympy.Symbol:
        """A static extent, or the size parameter that holds it."""
        if isinstance(extent, int):
            return extent
        if extent not in self.size_roots:
            self.size_roots.append(extent)
        return symbol(f"size{self.size_roots.index(extent)}")

    def same_extent(self, a: int | sympy.Symbol, b: int | sympy.Symbol) -> bool:
        """Whether two extents of fused generics are the same. A size the host computes
        (a "value" root) cannot be traced to an input's dim, so it is taken to equal
        another dynamic size in its place: the generics were fused as producer and
        consumer, and torch-mlir's runtime checks hold such sizes equal."""
        if a == b:
            return True
        roots = [self.size_roots[int(e.name.removeprefix("size"))] for e in (a, b)
                 if isinstance(e, sympy.Symbol)]
        return len(roots) == 2 and any(root[0] == "value" for root in roots)

    def shape(self, value: ir.Value) -> list[int | sympy.Symbol]:
        return [self.size(extent) for extent in sizes.shape(value)]

    def domain(self, generic: ir.Operation) -> list[int | sympy.Symbol]:
        """The loop ranges of a linalg.generic: ints, or size parameters."""
        ranges = loop_ranges(generic)
        for dim, static in enumerate(ranges):
            if static is None:
                ranges[dim] = self.size(_loop_extent(generic, dim))
        return ranges

    def row_extent(self, generic: ir.Operation) -> list[int | sympy.Symbol]:
        """The dims of size > 1 that `r` spans for this op (a dynamic size is never 1:
        Dynamo specializes sizes 0 and 1): a row reduction's whole iteration space;
        else its result's dims, in the result's order (the output points of a pooling
        window; a depthwise convolution's N, H, W, C loops as its NCHW result)."""
        domain = self.domain(generic)
        window = pooling_window(generic) or []
        positions = _output_positions(generic)
        if positions is None or set(_reduction_dims(generic)) - set(window):
            return [size for d, size in enumerate(domain) if size != 1 and d not in window]
        return [domain[p] for p in positions if domain[p] != 1]

    def input_pointer(self, value: ir.Value) -> str:
        for index, known in enumerate(self.inputs):
            if known == value:
                return f"in{index}"
        self.inputs.append(value)
        return f"in{len(self.inputs) - 1}"

    # ----------------------------------------------------------------- indices

    def local_indices(self, domain: list[int | sympy.Symbol]) -> tuple[list[Index], str]:
        """Per loop dim, the expression of its index over a generic's domain,
        and the domain's kind: "row" (spans `r`) or "scalar" (all dims of size 1). In a
        gemm template, the indices of its m x n tile."""
        if self.tile_indices is not None:
            return self.tile_indices, "row"
        wide = [size for size in domain if size != 1]
        if not wide:
            return [ZERO] * len(domain), "scalar"
        if not self.spans_row(domain):
            raise UnsupportedKernel("linalg.generic", f"iteration space {domain} differs "
                                    f"from the kernel's {self.row_shape}")
        # `r` walks the dims of size > 1 (every generic of the kernel whose iteration
        # space is the row's maps `r` to the same point), the last fastest.
        fastest_first = [d for d in reversed(range(len(domain))) if domain[d] != 1]
        if self.channels_last and len(domain) in layouts.RANKS:
            # NCHW walked as NHWC (NCL as NLC): consecutive lanes step through channels,
            # the order of channels-last buffers in memory (coalesced loads and stores).
            fastest_first = [d for d in (1, *range(len(domain) - 1, 1, -1), 0)
                             if domain[d] != 1]
        return walked(domain, fastest_first), "row"

    def walk_alone(self, extent: list[int | sympy.Symbol]) -> tuple[list[Index], str]:
        """Indices that walk a tensor of `extent`, off the row, with the row's first
        lanes, in row-major order, and the mask of those lanes. `r` spans the row's
        points: over a pointwise kernel's programs, a row kernel's block, or a looped
        row's chunks (the store then runs chunk by chunk)."""
        count, row = points(extent), points(self.row_shape)
        if not isinstance(count, int) or not isinstance(row, int) or count > row:
            raise UnsupportedKernel("linalg.generic", f"a result of {extent} points beside "
                                    f"the kernel's row of {self.row_shape}")
        row_major = [d for d in reversed(range(len(extent))) if extent[d] != 1]
        return walked(extent, row_major), f"(r < {count})"

    def spans_row(self, domain: list[int | sympy.Symbol]) -> bool:
        """Whether a domain's dims of size > 1 are the row's (or it has none)."""
        wide = [size for size in domain if size != 1]
        return not wide or (len(wide) == len(self.row_shape) and
                            all(map(self.same_extent, wide, self.row_shape)))

    def result_indices(self, domain: list[int | sympy.Symbol], output_map: ir.AffineMap
                       ) -> tuple[list[Index], str]:
        """Per loop dim, its index where the kernel's row walks the result of a generic
        over `domain` written through `output_map` (a projected permutation), and the
        kind: the row walks the result tensor's dims, which the loop dims may permute
        (torch-mlir's depthwise convolution loops over N, H, W, C and writes NCHW), and
        `walk_dims` records that order. The loop dims the result does not have (a
        window's) are 0."""
        positions = ir.dim_positions(output_map)
        if None in positions:
            raise UnsupportedKernel("linalg.generic", f"an output map {output_map}")
        tensor_indices, kind = self.local_indices([domain[p] for p in positions])
        self.walk_dims = [p for p in positions if domain[p] != 1]
        indices = [ZERO] * len(domain)
        for position, index in zip(positions, tensor_indices):
            indices[position] = index
        return indices, kind

    # ----------------------------------------------------------------- operands

    def read(self, value: ir.Value, affine_map: ir.AffineMap, indices: list[Index],
             kind: str, window: frozenset[int] = frozenset()) -> tuple[str, str]:
        """(expression, kind) of `value` read through `affine_map` at `indices`; the
        `window` dims of a windowed reduction are fixed positions, not row dims."""
        if value in self.literals:
            return self.literals[value]
        if value in self.running:
            return self.running[value][0], "row"  # a max per lane, in its chunk loop
        if value in self.registers:
            expression, value_kind = self.registers[value]
            point = through_map(affine_map, indices)
            if value_kind == "scalar" or self.points.get(value) == point or \
                    (kind == "row" and not self.recomputing and
                     self.in_row_order(value, affine_map, indices, window)):
                return expression, value_kind
            if value not in self.producers:
                raise UnsupportedKernel("linalg.generic", "a row value read through a map "
                                        f"other than the identity ({affine_map})")
        if value in self.producers:
            return self.recompute(value, affine_map, indices, kind)
        if not isinstance(value.type, ir.ShapedType):
            # An integer of main's (a symbolic size, `x * x.shape[0]` under dynamic=True):
            # the kernel takes it as a size parameter, which the host computes.
            try:
                return str(self.size(sizes.index_root(value))), "scalar"
            except sizes.UnknownSize:
                raise UnsupportedKernel("linalg.generic",
                                        f"a scalar argument of type {value.type}") from None
        tile = self.slices.get(value) or _Slice(value, [ZERO] * len(affine_map.results))
        if _is_empty(tile.base):
            raise UnsupportedKernel("linalg.generic", "a read of an uninitialized tensor")
        filled = fill_constant(tile.base)
        if filled is not None:
            return filled, f"literal:{element_name(tile.base)}"
        point = through_map(affine_map, indices)
        pointer = self.input_pointer(tile.base)
        offset = address(strides(pointer, len(point)), tile.offsets, point)
        kind = "row" if not all(map(is_position, point)) else "scalar"
        load = self.held(f"tl.load({pointer} + {text(offset)}"
                         + (", mask=mask)" if kind == "row" else ")"), tile.base)
        if load not in self.loads:  # one load per address, however many generics read it
            self.loads[load] = self.fresh()
            self.emit(f"{self.loads[load]} = {load}")
        return self.loads[load], kind

    def in_row_order(self, value: ir.Value, affine_map: ir.AffineMap, indices: list[Index],
                     window: frozenset[int]) -> bool:
        """Whether `affine_map` reads the row value `value` lane for lane: its results
        at `value`'s dims of size > 1 are the reader's dims that `r` spans, in order
        (a dim of size 1 holds one point, however it is indexed), in the order the row
        walks them (`walk_dims`: the reader's result's). A causal mask's row loop reads
        a [6] arange as (d0, d1) -> (d1) of its [1, 6] tile."""
        row_dims = self.walk_dims if self.walk_dims is not None else [
            d for d, index in enumerate(indices) if index != 0 and d not in window]
        return [position for position, size in zip(ir.dim_positions(affine_map),
                                                   self.shape(value)) if size != 1] == row_dims

    # ----------------------------------------------------------------- ops

    def generic(self, op: ir.Operation) -> None:
        if len(op.results) and op.results[0] in self.registers \
                and self.registers[op.results[0]][1] == "scalar":
            return  # a looped row's reduction, computed by an earlier pass
        domain = self.domain(op)
        window = pooling_window(op)
        if window is not None:
            self.window_reduction(op, domain, window)
            return
        maps = ir.indexing_maps(op)
        n_inputs = len(op.operands) - len(op.results)
        self.walk_dims = None
        if _reduction_dims(op):
            self.reduce_row(op, *self.local_indices(domain))
            return
        if self.tile_indices is not None:
            indices, kind = self.tile_indices, "row"
        else:
            # The row walks the result: loops that permute its dims read through them.
            if any(m != maps[n_inputs] for m in maps[n_inputs + 1:]):
                raise UnsupportedKernel("linalg.generic", "results written through different maps")
            self.producers.update((result, op) for result in op.results)
            positions = ir.dim_positions(maps[n_inputs])
            if None not in positions and not self.spans_row([domain[p] for p in positions]):
                return  # computed at its readers' points (recompute)
            indices, kind = self.result_indices(domain, maps[n_inputs])
        for result, (expression, value_kind) in zip(op.results,
                                                    self.evaluate(op, indices, kind)):
            if value_kind.startswith("literal"):
                # A fill: readers take the constant itself, through any map, and type it
                # where Triton needs a value (a register holds only Triton values).
                self.literals[result] = (expression, value_kind)
                continue
            if kind == "row" and value_kind == "scalar":
                widened = self.fresh()
                self.emit(f"{widened} = tl.full({self.tile}, {expression}, "
                          f"{_HELD_DTYPES[element_name(result)]})")
                expression = widened
            self.registers[result] = (expression, kind)
            self.points[result] = through_map(maps[n_inputs], indices)

    def reduce_row(self, op: ir.Operation, indices: list[Index], kind: str) -> None:
        """A reduction of the whole row (or of the chunk a looped row holds) to one
        value: its prologue per lane, then the combiner across the lanes."""
        maps = ir.indexing_maps(op)
        block = op.regions[0].blocks[0]
        n_inputs = len(op.operands) - len(op.results)
        body_ops = [o.operation for o in block.operations]
        used = {v for body_op in body_ops for v in body_op.operands}
        names: dict = {_LOOP_INDICES: (indices, kind)}
        for argument, operand, affine_map in zip(block.arguments, op.operands[:n_inputs], maps):
            if argument in used:  # a pooling window, say, only gives the loop its range
                names[argument] = self.read(operand, affine_map, indices, kind)
        if len(op.results) != 1:
            raise UnsupportedKernel("linalg.generic", "a reduction with several results")
        if kind != "row":
            raise UnsupportedKernel("linalg.generic", "a reduction of part of a row")
        out_argument = block.arguments[n_inputs]
        combiner = ir.combining_op(op)
        if combiner is None or combiner.name not in _COMBINERS:
            raise UnsupportedKernel("linalg.generic", "a reduction whose combiner is "
                                    f"{combiner.name if combiner else 'a block argument'}")
        others = [v for v in combiner.operands if v != out_argument]
        if len(others) != 1 or combiner != body_ops[-2]:
            raise UnsupportedKernel(combiner.name, "the reduction's init is not one operand")
        for body_op in body_ops[:-2]:
            self.body_op(body_op, names)
        if any(out_argument == v for body_op in body_ops[:-2] for v in body_op.operands):
            raise UnsupportedKernel("linalg.generic", "the reduction reads its init twice")
        _, identity, merge = _COMBINERS[combiner.name]
        element = element_name(op.results[0])
        if element == "i1" and identity == "-1":
            identity = "1"
        masked = self.fresh()
        prologue = _as_expression(self.value(others[0], names))
        accumulated = _HELD_DTYPES[_accumulator_element(op)]
        if accumulated != _HELD_DTYPES[element]:
            prologue = f"{prologue}.to({accumulated})"
        self.emit(f"{masked} = tl.where(mask, {prologue}, "
                  f"tl.full([BLOCK], {identity}, {accumulated}))")
        if op in self.accumulating:
            # A looped row: combine chunk by chunk; _looped_pass reduces after the loop.
            self.accumulate(op, masked, merge, f"tl.full([BLOCK], {identity}, {accumulated})")
            return
        self.finish_reduction(op, masked)

    def evaluate(self, op: ir.Operation, indices: list[Index], kind: str) -> list[tuple[str, str]]:
        """The (expression, kind) of each result of the element-wise generic `op` at
        the loop `indices`."""
        maps = ir.indexing_maps(op)
        block = op.regions[0].blocks[0]
        body_ops = [o.operation for o in block.operations]
        used = {v for body_op in body_ops for v in body_op.operands}
        names: dict = {_LOOP_INDICES: (indices, kind)}
        for argument, operand, affine_map in zip(block.arguments, op.operands, maps):
            if argument in used:
                names[argument] = self.read(operand, affine_map, indices, kind)
        for body_op in body_ops[:-1]:
            self.body_op(body_op, names)
        return [self.value(value, names) for value in body_ops[-1].operands]

    def recompute(self, value: ir.Value, affine_map: ir.AffineMap, indices: list[Index],
                  kind: str) -> tuple[str, str]:
        """`value`, a result of the element-wise generic that `producers` holds for it,
        computed at the point a reader reads it: through `affine_map` at the reader's
        loop `indices`. The producer's loop indices are that point's coordinates, each
        at the loop dim the producer's output map writes it from."""
        producer = self.producers[value]
        n_inputs = len(producer.operands) - len(producer.results)
        point = through_map(affine_map, indices)
        loops = [ZERO] * len(loop_ranges(producer))
        for position, index in zip(ir.dim_positions(ir.indexing_maps(producer)[n_inputs]),
                                   point):
            loops[position] = index
        key = (value, tuple(loops))
        if key not in self.recomputed:
            at = "row" if kind == "row" and not all(map(is_position, loops)) else "scalar"
            self.recomputing += 1
            try:
                results = self.evaluate(producer, loops, at)
            finally:
                self.recomputing -= 1
            self.recomputed.update(((result, tuple(loops)), computed)
                                   for result, computed in zip(producer.results, results))
        return self.recomputed[key]

    def accumulate(self, op: ir.Operation, masked: str, merge: str, initial: str) -> None:
        """Merge a chunk's `masked` values into `op`'s accumulator, lane by lane. A sum
        with a running max (online softmax) first rescales what it has to that max's
        new value; its summands, exp(x - lanes' max), are 0 where a lane has seen only
        -inf."""
        accumulator = self.fresh("acc")
        self.accumulators[op] = (accumulator, initial)
        if op in self.running_maxima.values():
            before = self.fresh("max")
            self.emit(f"{before} = {accumulator}")
            self.running[op.results[0]] = (accumulator, before)
        elif op in self.running_maxima:
            lanes, before = self.running[self.running_maxima[op].results[0]]
            masked = f"tl.where({lanes} == float('-inf'), 0.0, {masked})"
            self.emit(f"{accumulator} = {accumulator} * "
                      f"{online_softmax.rescale(before, lanes)} + {masked}")
            return
        self.emit(f"{accumulator} = {merge.format(init=accumulator, x=masked)}")

    def finish_reduction(self, op: ir.Operation, row: str) -> None:
        """The reduction `op` of the vector `row` (masked with its identity), merged with
        its init: a scalar register."""
        reduce_call, _, merge = _COMBINERS[ir.combining_op(op).name]
        reduced = self.fresh()
        self.emit(f"{reduced} = {reduce_call.format(x=row)}")
        n_inputs = len(op.operands) - 1
        init, init_kind = self.read(op.operands[n_inputs], ir.indexing_maps(op)[n_inputs],
                                    [ZERO] * len(loop_ranges(op)), "scalar")
        result = self.fresh()
        # A half sum stays in its f32 accumulator, rounded once where it is stored.
        self.emit(f"{result} = {merge.format(init=init, x=reduced)}")
        self.registers[op.results[0]] = (result, "scalar")

    def window_reduction(self, op: ir.Operation, domain: list[int | sympy.Symbol],
                         reductions: list[int]) -> None:
        """A reduction over a small window per output point (pooling): unrolled, one
        step per window position, the body applied as written (any combiner)."""
        if not all(isinstance(domain[d], int) for d in reductions):
            raise UnsupportedKernel("linalg.generic", "a reduction window of dynamic size")
        window = [range(domain[d]) for d in reductions]
        if math.prod(len(w) for w in window) > MAX_POOLING_WINDOW or len(op.results) != 1:
            raise UnsupportedKernel("linalg.generic", f"a reduction window of "
                                    f"{[len(w) for w in window]} per point")
        maps = ir.indexing_maps(op)
        block = op.regions[0].blocks[0]
        n_inputs = len(op.operands) - 1
        indices, kind = self.result_indices(domain, maps[n_inputs])
        body_ops = [o.operation for o in block.operations]
        used = {v for body_op in body_ops for v in body_op.operands}
        accumulator = self.read(op.operands[n_inputs], maps[n_inputs], indices, kind,
                                frozenset(reductions))
        for position in itertools.product(*window):
            at = list(indices)
            for d, index in zip(reductions, position):
                at[d] = sympy.Integer(index)
            names = {block.arguments[n_inputs]: accumulator, _LOOP_INDICES: (at, kind)}
            for argument, operand, affine_map in zip(block.arguments, op.operands, maps):
                if argument in used and argument not in names:
                    names[argument] = self.read(operand, affine_map, at, kind)
            for body_op in body_ops[:-1]:
                self.body_op(body_op, names)
            accumulator = self.value(body_ops[-1].operands[0], names)
        self.registers[op.results[0]] = (_as_expression(accumulator), kind)
        self.points[op.results[0]] = through_map(maps[n_inputs], indices)

    def value(self, value: ir.Value, names: dict) -> tuple[str, str]:
        if value in names:
            return names[value]
        if value in self.literals:
            return self.literals[value]
        if value in self.registers:
            return self.registers[value]
        if value in self.program_ids:
            return text(self.program_ids[value]), "scalar"  # a row loop's index (positions)
        if not isinstance(value.type, ir.ShapedType):
            # An integer of main's, as a size (a sequence length that masks compare to):
            # the kernel takes it as a size parameter.
            try:
                return str(self.size(sizes.index_root(value))), "scalar"
            except sizes.UnknownSize:
                pass
        raise UnsupportedKernel("linalg.generic", "a body value defined outside the kernel")

    def body_op(self, op: ir.Operation, names: dict) -> None:
        name = op.name
        if name == "arith.constant":
            names[op.results[0]] = (scalar_literal(op.attributes["value"]),
                                    f"literal:{element_name(op.results[0])}")
            return
        if name == "linalg.index":
            indices, kind = names[_LOOP_INDICES]
            index = indices[ir.IntegerAttr(op.attributes["dim"]).value]
            names[op.results[0]] = (text(index), "literal:i64" if is_position(index) else kind)
            return
        if name == "tensor.extract":
            names[op.results[0]] = self.gather(op, names)
            return
        if name == "cf.assert":
            # torch-mlir's runtime checks; Triton compiles them in under TRITON_DEBUG=1.
            condition, _ = self.value(op.operands[0], names)
            message = ir.StringAttr(op.attributes["msg"]).value.replace('"', "'")
            self.emit(f'tl.device_assert({condition}, "{message}")')
            return
        operands = [self.value(v, names) for v in op.operands]
        kind = "row" if any(k == "row" for _, k in operands) else "scalar"
        args = [expression for expression, _ in operands]
        if name in _CASTS and operands[0][1].startswith("literal"):
            names[op.results[0]] = (_cast_literal(args[0], element_name(op.results[0])),
                                    f"literal:{element_name(op.results[0])}")
            return
        typed = [_as_expression(o) for o in operands]
        if all(k.startswith("literal") for _, k in operands):
            args = typed  # else Python computes on them, in its own types and semantics
        expression = self.expression(op, typed, args)
        variable = self.fresh()
        self.emit(f"{variable} = {expression}")
        names[op.results[0]] = (variable, kind)

    def gather(self, op: ir.Operation, names: dict) -> tuple[str, str]:
        """tensor.extract from a tensor of `main` at computed indices (max pooling's
        indices compare each input with the window's maximum): a load through the
        tensor's strides."""
        pointer = self.input_pointer(op.operands[0])
        positions = [self.value(v, names) for v in op.operands[1:]]
        kind = "row" if any(k == "row" for _, k in positions) else "scalar"
        offset = address(strides(pointer, len(positions)), [ZERO] * len(positions),
                         [named(p) for p, _ in positions])
        load = f"tl.load({pointer} + {text(offset)}" + (", mask=mask)" if kind == "row" else ")")
        variable = self.fresh()
        self.emit(f"{variable} = {self.held(load, op.operands[0])}")
        return variable, kind

    def held(self, load: str, tensor: ir.Value) -> str:
        """A load of `tensor`'s elements, converted to the type they are held in (f32
        for f16/bf16, and for a narrowed input, its type in the IR)."""
        element = element_name(tensor)
        if tensor in self.narrowed or element in _HALF:
            return f"{load}.to({_HELD_DTYPES[element]})"
        return load

    def expression(self, op: ir.Operation, typed: list[str], args: list[str]) -> str:
        name = op.name
        if name in _BINARY:
            return f"{args[0]} {_BINARY[name]} {args[1]}"
        if name in _UNARY_CALLS or name in ("math.tanh", "math.log1p", "math.expm1"):
            return self.math_call(op, typed[0])
        if name == "arith.negf":
            return f"-{args[0]}"
        if name in ("arith.maximumf", "arith.minimumf"):
            return f"_{name.split('.')[1].removesuffix('f')}({typed[0]}, {typed[1]})"
        if name in ("arith.maxnumf", "arith.maxsi"):
            return f"tl.maximum({typed[0]}, {typed[1]})"
        if name in ("arith.minnumf", "arith.minsi"):
            return f"tl.minimum({typed[0]}, {typed[1]})"
        if name in ("arith.maxui", "arith.minui"):
            function = "tl.maximum" if name == "arith.maxui" else "tl.minimum"
            a, b = (_unsigned(op.operands[i], typed[i]) for i in range(2))
            return f"{function}({a}, {b}).to({_TRITON_DTYPES[element_name(op.results[0])]})"
        if name == "arith.select":
            return f"tl.where({typed[0]}, {typed[1]}, {typed[2]})"
        if name == "arith.cmpf":
            predicate = _CMPF_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
            a, b = args
            if predicate in _CMPF:
                return f"{a} {_CMPF[predicate]} {b}"
            if predicate in _CMPF_UNORDERED:
                return f"(({a} != {a}) | ({b} != {b}) | ({a} {_CMPF_UNORDERED[predicate]} {b}))"
            if predicate == "uno":
                return f"(({a} != {a}) | ({b} != {b}))"
            if predicate == "ord":
                return f"(({a} == {a}) & ({b} == {b}))"
            if predicate == "one":
                return f"(({a} == {a}) & ({b} == {b}) & ({a} != {b}))"
            raise UnsupportedKernel(name, f"predicate {predicate}")
        if name == "arith.cmpi":
            predicate = CMPI_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
            a, b = args
            if predicate.startswith("u"):  # ult, ule, ugt, uge compare the bits unsigned
                a, b = (_unsigned(op.operands[i], typed[i]) for i in range(2))
            return f"{a} {CMPI_OPERATORS[predicate]} {b}"
        if name in ("arith.extui", "arith.uitofp"):
            # Zero-extend: the signed Triton type of the source would sign-extend.
            return _cast(_unsigned(op.operands[0], typed[0]), element_name(op.results[0]))
        if name in _CASTS:
            return _cast(typed[0], element_name(op.results[0]))
        if name in ("arith.floordivsi", "arith.ceildivsi"):
            # Triton's // truncates toward zero: step the quotient by one where the
            # division is inexact and rounds the other way.
            a, b = args
            q = f"({a} // {b})"
            if name == "arith.floordivsi":
                stepped = f"tl.where(({a} < 0) != ({b} < 0), {q} - 1, {q})"
            else:
                stepped = f"tl.where(({a} < 0) == ({b} < 0), {q} + 1, {q})"
            return f"tl.where({a} % {b} != 0, {stepped}, {q})"
        if name == "affine.apply":  # index arithmetic on loop indices (an arange's)
            affine_map = ir.AffineMapAttr(op.attributes["map"]).value
            (result,) = affine_map.results
            operands = [named(arg) for arg in args]
            return text(from_affine(result, operands[:affine_map.n_dims],
                                    operands[affine_map.n_dims:]))
        if name == "math.fpowi" or name == "math.powf":
            return self.power(op, typed, args)
        raise UnsupportedKernel(name, "no Triton equivalent in tessel yet")

    def math_call(self, op: ir.Operation, operand: str) -> str:
        """A math function (of f16/bf16 too: they are held in f32, the type Triton's
        exp, log, ... take)."""
        x = operand
        if op.name == "math.tanh":
            # 1 - 2 / (exp(2x) + 1): exact limits at +-inf; libdevice.tanh does not run
            # in TRITON_INTERPRET mode, where the tests check these kernels.
            value = f"(1.0 - 2.0 / (tl.exp(2.0 * {x}) + 1.0))"
        elif op.name == "math.log1p":
            # Goldberg's log(u) * x / (u - 1), u = 1 + x: exact for small x, where
            # log(1 + x) loses x's low bits (T5's and DeBERTa's log-bucketed positions).
            u = f"({x} + 1.0)"
            value = (f"tl.where({u} == 1.0, {x}, tl.where({x} == float('inf'), {x}, "
                     f"tl.log({u}) * ({x} / ({u} - 1.0))))")
        elif op.name == "math.expm1":
            # Kahan's (u - 1) * x / log(u), u = exp(x), for the same reason.
            u = f"tl.exp({x})"
            value = (f"tl.where({u} == 1.0, {x}, tl.where(({u} - 1.0 == -1.0) | ({u} == "
                     f"float('inf')), {u} - 1.0, ({u} - 1.0) * ({x} / tl.log({u}))))")
        else:
            value = f"{_UNARY_CALLS[op.name]}({x})"
        return value

    def power(self, op: ir.Operation, typed: list[str], args: list[str]) -> str:
        """Small constant exponents as products or a square root; any other, `_power`
        in f32 (Adam's bias corrections raise betas to a step count held in a tensor)."""
        exponent = ir.operation_of(op.operands[1].owner)
        if exponent is not None and exponent.name == "arith.constant":
            value = float(scalar_literal(exponent.attributes["value"]))
            if value == 0.5:
                return f"tl.sqrt({typed[0]})"
            if value == int(value) and 1 <= value <= 4:
                return " * ".join([args[0]] * int(value))
        element = element_name(op.results[0])
        power = f"_power({typed[0]}.to(tl.float32), {typed[1]}.to(tl.float32))"
        return power if element in ("f32", *_HALF) else f"{power}.to({_TRITON_DTYPES[element]})"


def _cast(expression: str, element: str) -> str:
    """`expression` converted to `element`, as held: a conversion to f16/bf16 rounds
    and stays in f32."""
    if element in _HALF:
        return f"{expression}.to({_TRITON_DTYPES[element]}).to(tl.float32)"
    return f"{expression}.to({_TRITON_DTYPES[element]})"


def _output_positions(generic: ir.Operation) -> list[int] | None:
    """The loop dim of each result dim of `generic`'s first output, or None where its
    output map is not a projected permutation."""
    maps = ir.indexing_maps(generic)
    positions = ir.dim_positions(maps[len(generic.operands) - len(generic.results)])
    return None if None in positions else positions


def _unsigned(value: ir.Value, expression: str) -> str:
    """`expression` (an integer of `value`'s signless type) reinterpreted as unsigned;
    i1 is already 0 or 1."""
    element = element_name(value)
    if element == "i1":
        return expression
    if not element.startswith("i"):
        raise UnsupportedKernel("arith", f"an unsigned operation on {element}")
    return f"{expression}.to(tl.uint{element[1:]}, bitcast=True)"


def _as_expression(operand: tuple[str, str]) -> str:
    """A literal as a typed Triton scalar (tl functions take tensors), else as is."""
    expression, kind = operand
    if kind.startswith("literal:"):
        return f"tl.full([], {expression}, {_HELD_DTYPES[kind.split(':')[1]]})"
    return expression


def _cast_literal(literal: str, element: str) -> str:
    """A constant cast (arith.extf/truncf/sitofp/...) folded into its Python literal."""
    if "float(" in literal:
        return literal  # inf and nan stay what they are
    number = float(literal == "True") if literal in ("True", "False") else float(literal)
    if element.startswith("f") or element == "bf16":
        return repr(number)
    return str(bool(number)) if element == "i1" else str(int(number))


# --------------------------------------------------------------------------- kernels

def generate(kernel: ir.Operation, channels_last: bool = False,
             narrowed: frozenset = frozenset()) -> KernelSource:
    """The Triton source of `kernel` (form_kernels.is_kernel, with a `tessel.gpu` decision).
    With `channels_last`, pointwise kernels walk [N, C, H, W] and [N, C, L] spaces in
    NHWC (NLC) order: the host keeps their results channels-last (layouts.py). Inputs
    in `narrowed` are held in a narrower float type than their IR type
    (host_program.narrowed_values) and are widened as they are loaded."""
    decision = ir.DictAttr(kernel.attributes["tessel.gpu"])
    writer = _Writer(kernel_name(kernel), ir.DenseI64ArrayAttr(decision["block"])[0],
                     narrowed=narrowed)
    num_warps = ir.IntegerAttr(decision["num_warps"]).value
    body = kernel_body(kernel)
    forall = next((op for op in body if op.name == "scf.forall"), None)
    _capture_constants(kernel, writer)
    try:
        if kernel.name == "tm_tensor.scan":
            grid = _scan_kernel(writer, kernel)
        elif ir.StringAttr(decision["kind"]).value == "gemm_template":
            block = list(ir.DenseI64ArrayAttr(decision["block"]))
            gemm = _gemm_template(writer, body)
            grid = (template_programs(gemm[0], gemm[1], block[0], block[1]),)
            return KernelSource(writer.name, _function_source(writer), writer.inputs,
                                writer.results, grid, dict(zip(writer.constants, block)),
                                num_warps, num_stages=ir.IntegerAttr(decision["num_stages"]).value,
                                gemm=None if "forced" in decision else gemm)
        elif forall is not None:
            grid = _row_kernel(writer, forall, body)
        else:
            writer.channels_last = channels_last
            grid = _flat_kernel(writer, body)
    except sizes.UnknownSize as error:
        raise UnsupportedKernel(writer.name, str(error)) from error
    return KernelSource(writer.name, _function_source(writer), writer.inputs, writer.results,
                        _grid(grid), writer.block, num_warps, writer.size_roots)


def _grid(programs: tuple[Extent, ...]) -> tuple[int | str, ...]:
    """A launch grid as the host program takes it: ints, or Python over the size
    parameters."""
    return tuple(extent if isinstance(extent, int) else text(extent) for extent in programs)


def _loop_extent(generic: ir.Operation, dim: int) -> sizes.Extent:
    """The extent of loop `dim` of `generic`, from an operand that it indexes plainly."""
    for operand, affine_map in zip(generic.operands, ir.indexing_maps(generic)):
        for position, expr in enumerate(affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and expr.position == dim:
                return sizes.extent(operand, position)
    raise sizes.UnknownSize(f"loop dim {dim} indexes no operand plainly")


def _capture_constants(kernel: ir.Operation, writer: _Writer) -> None:
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


def _flat_kernel(writer: _Writer, body: list[ir.Operation]) -> tuple[int, ...]:
    if body[-1].name == "tkern.yield":
        ops, results = body[:-1], list(body[-1].operands)
    else:  # a generic left unwrapped (results of several types, e.g. nll_loss's
        # backward building a scatter's indices and values): its results are the kernel's
        ops, results = body, list(body[-1].results)
    generics = [op for op in ops if op.name == "linalg.generic"]
    if not generics or len(generics) != len(ops):
        names = sorted({op.name for op in ops if op.name != "linalg.generic"})
        raise UnsupportedKernel(names[0] if names else "tkern.kernel",
                                "only linalg.generic ops outside a row loop are supported")
    whole = _row_reductions(generics)
    reducing = bool(whole)
    writer.row_shape = writer.row_extent(whole[0] if reducing else generics[-1])
    size = points(writer.row_shape)
    if reducing:
        # A whole-tensor reduction: one program holds everything, or loops over it.
        if not isinstance(size, int):
            raise UnsupportedKernel("linalg.generic", "a whole-tensor reduction of dynamic size")
        if size > writer.block:
            return _looped_whole_reduction(writer, generics, whole, results, size)
        writer.emit("r = tl.arange(0, BLOCK)")
        grid = (1,)
    else:
        writer.emit("r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)")
        grid = (-(-size // writer.block) if isinstance(size, int)
                else text(FloorDiv(size + writer.block - 1, writer.block)),)
    writer.emit(f"mask = r < {text(size)}")
    for op in generics:
        writer.generic(op)
    _store_results(writer, results)
    return grid


def _looped_whole_reduction(writer: _Writer, generics: list[ir.Operation],
                            reductions: list[ir.Operation], results: list[ir.Value],
                            size: int) -> tuple[int]:
    """A whole-tensor reduction of more points than a block (a loss's mean over a
    batch of images): one program walks the tensor in chunks of BLOCK, one pass per
    reduction, as a looped row does, then computes what follows from the reductions'
    results. Those ops and the kernel's results must be of one point each (what
    follows a whole-tensor reduction usually is); a result of the tensor's size would
    need one more pass, which is not built."""
    rest = generics[generics.index(reductions[-1]) + 1:]
    if any(extent != 1 for op in rest for extent in loop_ranges(op)) or \
            any(points(ir.RankedTensorType(v.type).shape) != 1 for v in results):
        raise UnsupportedKernel("linalg.generic", f"a reduction of {size} elements, in one "
                                f"block of {writer.block}, with results of more than one point")
    _reduction_passes(writer, generics, {}, size, reductions)
    for op in rest:
        writer.generic(op)
    _store_results(writer, results)
    return (1,)


# Scans, by combiner: a chunk's scan, its total, the identity, and how a value merges
# with the carry of the chunks before.
_SUM = ("tl.cumsum({x}, axis=0)", "tl.sum({x}, axis=0)", "0", "{carry} + {x}")
_PRODUCT = ("tl.cumprod({x}, axis=0)", "tl.reduce({x}, 0, _product)", "1", "{carry} * {x}")
_SCANS = {"arith.addf": _SUM, "arith.addi": _SUM, "arith.mulf": _PRODUCT, "arith.muli": _PRODUCT}


def _scan_kernel(writer: _Writer, scan: ir.Operation) -> tuple[int]:
    """tm_tensor.scan, inclusive (cumsum, cumprod): one program per row along the
    scanned dim, which it walks in BLOCK-element chunks: each chunk is scanned with
    tl.cumsum / tl.cumprod and merged with the carry of the chunks before it (one pass
    over memory, for rows of any length). The carry at the end is the scan's second
    result, the accumulator."""
    dim = ir.IntegerAttr(scan.attributes["dimension"]).value
    if not ir.BoolAttr(scan.attributes["inclusive"]).value:
        raise UnsupportedKernel(scan.name, "an exclusive scan")
    block = scan.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    combiner = body[0]
    if len(body) != 2 or combiner.name not in _SCANS \
            or set(combiner.operands) != set(block.arguments):
        raise UnsupportedKernel(scan.name, "a scan whose body is not one add or multiply")
    source = scan.operands[0]
    shape = list(ir.RankedTensorType(source.type).shape)
    if not ir.RankedTensorType(source.type).has_static_shape:
        raise UnsupportedKernel(scan.name, "a scan of dynamic size")
    scan_call, total, identity, merge = _SCANS[combiner.name]
    element = element_name(scan.results[0])
    identity = _cast_literal(identity, element)
    rows = [d for d in range(len(shape)) if d != dim]
    writer.emit("row = tl.program_id(0)")
    row_indices = walked([shape[d] for d in rows], list(reversed(range(len(rows)))),
                         symbol("row"))
    pointer = writer.input_pointer(source)
    for result in scan.results:
        writer.results.append(KernelResult(list(ir.RankedTensorType(result.type).shape),
                                           element_name(result)))
    # The scanned dim is the chunk's lanes; the accumulator has the rows' dims, in order.
    chunk = dict(zip(rows, row_indices))
    chunk[dim] = LANES
    chunk_indices = [chunk[d] for d in range(len(shape))]
    source_offset, result_offset = (
        text(address(strides(name, len(shape)), [ZERO] * len(shape), chunk_indices))
        for name in (pointer, "out0"))
    accumulator = address(strides("out1", len(rows)), [ZERO] * len(rows), row_indices)
    dtype = _TRITON_DTYPES[element]
    writer.emit(f"carry = tl.full([], {identity}, {dtype})")
    writer.emit(f"for start in range(0, {shape[dim]}, BLOCK):")
    writer.emit("    r = start + tl.arange(0, BLOCK)")
    writer.emit(f"    mask = r < {shape[dim]}")
    writer.emit(f"    chunk = tl.load({pointer} + {source_offset}, mask=mask, other={identity})")
    scanned = merge.format(carry="carry", x=scan_call.format(x="chunk"))
    writer.emit(f"    tl.store(out0 + {result_offset}, {scanned}, mask=mask)")
    writer.emit(f"    carry = {merge.format(carry='carry', x=total.format(x='chunk'))}")
    writer.emit(f"tl.store(out1 + {text(accumulator)}, carry)")
    return (points([shape[d] for d in rows]),)


def _store_results(writer: _Writer, results: list[ir.Value]) -> None:
    """Store each result of a whole-tensor kernel into a buffer shaped like the init
    of the op that computes it."""
    for value in results:
        producer = ir.operation_of(value.owner)
        index = list(producer.results).index(value) if producer is not None else -1
        init = producer.operands[len(producer.operands) - len(producer.results) + index]
        _store(writer, value, [ZERO] * _rank(value), init)


# The largest M, N and K tiles a template is launched with (choose-gpu-blocks and
# autotuning): dims they divide need no masks in the K loop.
_LARGEST_TILE = (256, 256, 128)
# Programs walk the output tiles in groups of this many tile rows, column by column, so
# that programs running at the same time share their A rows and B columns in L2.
_GROUP_M = 8


def _gemm_template(writer: _Writer, body: list[ir.Operation]) -> tuple[int, int, int]:
    """A tl.dot template (fuse-gemm-epilogues): each program computes one BLOCK_M x
    BLOCK_N tile of `C = init + A B`, with f32 accumulation over BLOCK_K slices of K,
    then runs the epilogue's generics on the tile in registers and stores their results.
    The prologue's generics compute the initial accumulator on the same tile. Operands
    are read through the matmul's indexing maps and the strides the host passes, so
    a transposed A or B needs no copy; ragged edges are masked (loads give 0). Returns
    the gemm's (m, n, k)."""
    matmul = next(op for op in body if op.name == "linalg.matmul")
    position = body.index(matmul)
    m, n, k = loop_ranges(matmul)
    writer.constants = ("BLOCK_M", "BLOCK_N", "BLOCK_K")
    writer.tile = "[BLOCK_M, BLOCK_N]"
    writer.tile_indices = [symbol("rm[:, None]"), symbol("rn[None, :]")]
    # The source holds for any block sizes (autotuning launches it with others).
    writer.emit("program = tl.program_id(0)")
    writer.emit(f"group = {_GROUP_M} * tl.cdiv({n}, BLOCK_N)")
    writer.emit(f"first_m = program // group * {_GROUP_M}")
    writer.emit(f"group_m = tl.minimum(tl.cdiv({m}, BLOCK_M) - first_m, {_GROUP_M})")
    writer.emit("rm = (first_m + program % group % group_m) * BLOCK_M + tl.arange(0, BLOCK_M)")
    writer.emit("rn = program % group // group_m * BLOCK_N + tl.arange(0, BLOCK_N)")
    writer.emit(f"mask = (rm[:, None] < {m}) & (rn[None, :] < {n})")
    for op in body[:position]:
        writer.generic(op)
    identity = ir.AffineMap.get_identity(2, context=matmul.context)
    init, init_kind = writer.read(matmul.operands[2], identity, writer.tile_indices, "row")
    if init_kind.startswith("literal"):
        writer.emit(f"acc = tl.full([BLOCK_M, BLOCK_N], {init}, tl.float32)")
    else:
        # f32 + (a broadcast tile or literal of any float type): an f32 tile.
        writer.emit(f"acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32) + {init}")
    a_map, b_map, _ = ir.indexing_maps(matmul)
    element = element_name(matmul.operands[0])
    writer.emit(f"for k in range(0, {k}, BLOCK_K):")
    writer.emit("    rk = k + tl.arange(0, BLOCK_K)")
    # Tile indices per loop dim (m, n, k) of A's [BLOCK_M, BLOCK_K] and B's [BLOCK_K, BLOCK_N].
    a = _operand_tile(writer, matmul.operands[0], a_map,
                      {0: (symbol("rm[:, None]"), m, _LARGEST_TILE[0]),
                       2: (symbol("rk[None, :]"), k, _LARGEST_TILE[2])})
    b = _operand_tile(writer, matmul.operands[1], b_map,
                      {2: (symbol("rk[:, None]"), k, _LARGEST_TILE[2]),
                       1: (symbol("rn[None, :]"), n, _LARGEST_TILE[1])})
    # f32 operands multiply exactly, as torch's matmul does unless TF32 is allowed.
    precision = ", input_precision=\"ieee\"" if element == "f32" else ""
    writer.emit(f"    acc = tl.dot({a}, {b}, acc{precision})")
    result = element_name(matmul.results[0])
    writer.registers[matmul.results[0]] = (
        "acc" if result == "f32" else _cast("acc", result), "row")
    for op in body[position + 1:-1]:
        if op.name != "linalg.generic":
            raise UnsupportedKernel(op.name, "only element-wise generics around a gemm template")
        writer.generic(op)
    _store_results(writer, list(body[-1].operands))
    return m, n, k


def _operand_tile(writer: _Writer, operand: ir.Value, affine_map: ir.AffineMap,
                  dims: dict[int, tuple[Index, int, int]]) -> str:
    """Load a matmul operand's tile in the K loop: `dims` gives each loop dim it is
    indexed by as (tile index, extent, largest block); dims whose extent such a block
    might not divide are masked, with 0 (which adds nothing to the product)."""
    if operand in writer.registers or operand in writer.literals or operand in writer.slices:
        raise UnsupportedKernel("linalg.matmul", "an operand computed in the kernel")
    pointer = writer.input_pointer(operand)
    positions = [ir.AffineDimExpr(e).position for e in affine_map.results]
    offset = address(strides(pointer, len(positions)), [ZERO] * len(positions),
                     [dims[p][0] for p in positions])
    ragged = [f"({text(index)} < {extent})" for index, extent, largest in dims.values()
              if extent % largest]
    load = f"tl.load({pointer} + {text(offset)}" + (
        f", mask={' & '.join(ragged)}, other=0.0)" if ragged else ")")
    if operand in writer.narrowed:
        load += f".to({_TRITON_DTYPES[element_name(operand)]})"
    tile = writer.fresh("tile")
    writer.emit(f"    {tile} = {load}")
    return tile


def _row_kernel(writer: _Writer, forall: ir.Operation, body: list[ir.Operation]) -> tuple[int, ...]:
    if any(op != forall and op.name != "tkern.yield" for op in body):
        raise UnsupportedKernel("tkern.kernel", "a row loop next to other ops")
    bounds = _row_bounds(writer, forall)
    block = forall.regions[0].blocks[0]
    n_ivs = len(bounds)
    # One program per row, on a 1-D grid (its other axes stop at 65535 programs).
    writer.emit("row = tl.program_id(0)")
    row = symbol("row")
    for axis, iv in enumerate(list(block.arguments)[:n_ivs]):
        # The rows in row-major order; the first axis's index needs no modulo.
        index = FloorDiv(row, points(bounds[axis + 1:]))
        writer.program_ids[iv] = symbol(f"row{axis}")
        writer.emit(f"row{axis} = {text(Modulo(index, bounds[axis]) if axis else index)}")
    shared = list(block.arguments)[n_ivs:]
    inits = list(forall.operands)[len(forall.operands) - len(shared):]
    destinations = dict(zip(shared, inits))
    ops = [op.operation for op in block.operations]
    terminator = ops[-1]
    tiles = [op for op in ops[:-1] if op.name == "linalg.generic"]
    if not tiles:
        raise UnsupportedKernel("scf.forall", "a row loop without linalg.generic ops")
    # The widest reduction of whole rows sets the row, else the widest tile (a dynamic
    # one is the widest). Wider element-wise tiles (a layer norm over channels that a
    # mean over tokens reads, window by window) are computed at their readers' points.
    extents = [writer.row_extent(op) for op in _row_reductions(tiles) or tiles]
    writer.row_shape = max(extents, key=lambda extent: (not sizes.is_static(extent),
                                                        math.prod(e for e in extent
                                                                  if isinstance(e, int))))
    size = points(writer.row_shape)
    inserts = [o.operation for o in terminator.regions[0].blocks[0].operations]
    if any(insert.name != "tensor.parallel_insert_slice" for insert in inserts):
        raise UnsupportedKernel("scf.forall.in_parallel", "an op other than an insert")
    # Output buffers in the order of the loop's results (the host binds them so), not
    # in the order the terminator happens to insert them.
    position = {argument: index for index, argument in enumerate(shared)}
    inserts.sort(key=lambda insert: position[insert.operands[1]])
    if [position[insert.operands[1]] for insert in inserts] != list(range(len(shared))):
        raise UnsupportedKernel("scf.forall", "a loop result written by no insert, or by two")
    if not isinstance(size, int) or size > writer.block:
        # A looped row: one pass over the row per reduction, each recomputing what
        # feeds it chunk by chunk, then a pass that computes and stores the outputs.
        _reduction_passes(writer, ops[:-1], destinations, size, _row_reductions(tiles))
        _looped_pass(writer, ops[:-1], destinations, size, None, inserts)
        return (points(bounds),)
    writer.emit("r = tl.arange(0, BLOCK)")
    writer.emit(f"mask = r < {text(size)}")
    _row_ops(writer, ops[:-1], destinations, None)
    _store_rows(writer, inserts, destinations)
    return (points(bounds),)


def _row_bounds(writer: _Writer, forall: ir.Operation) -> list[int | sympy.Symbol]:
    """The row loop's upper bounds (its lower bounds are 0 and steps 1)."""
    lower, upper, step = ir.mixed_values(
        forall, ("staticLowerBound", "staticUpperBound", "staticStep"), 0)
    for attribute, bounds, start in (("lower bound", lower, 0), ("step", step, 1)):
        if any(b != start for b in bounds):
            raise UnsupportedKernel("scf.forall", f"a row loop whose {attribute} is not {start}")
    return [bound if isinstance(bound, int) else writer.size(sizes.index_root(bound))
            for bound in upper]


def _row_reductions(generics: list[ir.Operation]) -> list[ir.Operation]:
    """The generics that reduce whole rows (pooling windows are unrolled per point)."""
    return [op for op in generics if _reduction_dims(op) and pooling_window(op) is None]


def _reduction_passes(writer: _Writer, ops: list[ir.Operation], destinations: dict,
                      size: Extent, reductions: list[ir.Operation]) -> None:
    """A chunk loop per reduction of a looped row (or whole tensor), in order; a sum
    that an online softmax pairs with the max before it accumulates in that max's loop."""
    writer.running_maxima = online_softmax.running_maxima(reductions)
    for reduction in reductions:
        if reduction not in writer.running_maxima.values():
            _looped_pass(writer, ops, destinations, size, reduction, [])


def _looped_pass(writer: _Writer, ops: list[ir.Operation], destinations: dict, size: Extent,
                 reduction: ir.Operation | None, inserts: list[ir.Operation]) -> None:
    """One loop over a row in chunks of BLOCK: the ops up to `reduction`, which it
    accumulates and reduces after the loop (with its running max, if it has one), or
    (None) all of them and the stores."""
    # Loads, recomputed values and row values of an earlier chunk loop are out of scope.
    writer.loads.clear()
    writer.recomputed.clear()
    writer.registers = {v: e for v, e in writer.registers.items() if e[1] == "scalar"}
    header = len(writer.lines)
    writer.emit(f"for start in range(0, {text(size)}, BLOCK):")
    writer.indent = "    "
    writer.emit("r = start + tl.arange(0, BLOCK)")
    writer.emit(f"mask = r < {text(size)}")
    maximum = writer.running_maxima.get(reduction)
    writer.accumulating = (reduction,) if maximum is None else (maximum, reduction)
    known = set(writer.registers)
    _row_ops(writer, ops, destinations, reduction)
    _store_rows(writer, inserts, destinations)
    writer.indent, writer.accumulating = "", ()
    if reduction is None:
        return
    writer.loads.clear()
    writer.recomputed.clear()
    for accumulator, initial in reversed(writer.accumulators.values()):
        writer.lines.insert(header, f"{accumulator} = {initial}")
    accumulator, _ = writer.accumulators.pop(reduction)
    if maximum is not None:  # each lane's sum, rescaled to the row's max
        lanes, _ = writer.running.pop(maximum.results[0])
        writer.finish_reduction(maximum, lanes)
        row_max, _ = writer.registers[maximum.results[0]]
        rescaled = writer.fresh()
        writer.emit(f"{rescaled} = {accumulator} * {online_softmax.rescale(lanes, row_max)}")
        accumulator = rescaled
    writer.finish_reduction(reduction, accumulator)
    writer.accumulators.clear()
    # Of what this pass computed, later passes see only its reductions: a value of one
    # point (a generic of one point, marked scalar) is a variable of the chunk loop, and
    # one computed from the lanes' running max is not the row's. They recompute them.
    finished = {op.results[0] for op in (maximum, reduction) if op is not None}
    writer.registers = {value: register for value, register in writer.registers.items()
                        if value in known or value in finished}


def _row_ops(writer: _Writer, ops: list[ir.Operation], destinations: dict,
             last: ir.Operation | None) -> None:
    """The ops of a row loop's body, up to `last` (None: all of them)."""
    for op in ops:
        if op.name == "affine.apply":
            # A producer's tile offset (a strided consumer reads rows * stride).
            rows = [writer.program_ids.get(v) for v in op.operands]
            if None in rows:
                raise UnsupportedKernel(op.name, "an offset that is not a row index")
            (expr,) = ir.AffineMapAttr(op.attributes["map"]).value.results
            writer.program_ids[op.results[0]] = from_affine(expr, rows)
        elif op.name == "tensor.extract_slice":
            _slice(writer, op, destinations)
        elif op.name == "linalg.generic":
            writer.generic(op)
        else:
            raise UnsupportedKernel(op.name, "in a row loop")
        if last is not None and op == last:
            return


def _store_rows(writer: _Writer, inserts: list[ir.Operation], destinations: dict) -> None:
    for insert in inserts:
        offsets = _offsets(writer, insert, first_dynamic=2)
        _store(writer, insert.operands[0], offsets, destinations[insert.operands[1]])


def _offsets(writer: _Writer, op: ir.Operation, first_dynamic: int) -> list[Index]:
    """The offsets of an extract_slice / parallel_insert_slice: literals, or row
    indices; its strides must be 1."""
    offsets, _, strides = ir.mixed_values(
        op, ("static_offsets", "static_sizes", "static_strides"), first_dynamic)
    if any(s != 1 for s in strides):
        raise UnsupportedKernel(op.name, "strided slices are not supported yet")
    if any(not isinstance(o, int) and o not in writer.program_ids for o in offsets):
        raise UnsupportedKernel(op.name, "an offset that is not a row index")
    return [sympy.Integer(o) if isinstance(o, int) else writer.program_ids[o] for o in offsets]


def _slice(writer: _Writer, op: ir.Operation, destinations: dict) -> None:
    source = op.operands[0]
    if _rank(source) != _rank(op.results[0]):
        raise UnsupportedKernel(op.name, "rank-reducing slices are not supported yet")
    offsets = _offsets(writer, op, first_dynamic=1)
    if source in destinations:
        source = destinations[source]  # a tile of an output: its initial contents
    elif source in writer.slices or source in writer.registers:
        raise UnsupportedKernel(op.name, "a slice of a tile")
    writer.slices[op.results[0]] = _Slice(source, offsets)


def _store(writer: _Writer, value: ir.Value, offsets: list[Index], init: ir.Value) -> None:
    """Store `value` into a new output buffer shaped like `init` at `offsets`. The
    kernel writes every element (pointwise: all of them; row loops: every row), so
    the buffer never starts from `init`'s contents."""
    extent, mask = writer.shape(value), "mask"
    if value in writer.producers and value not in writer.registers and \
            value not in writer.literals:
        # Computed off the row (a mask that a kernel over more points also returns):
        # the row's first lanes walk its points in its own order.
        indices, mask = writer.walk_alone(extent)
        expression, kind = writer.recompute(
            value, ir.AffineMap.get_identity(len(extent), value.type.context), indices, "row")
        expression = _as_expression((expression, kind))
        kind = "row"
    else:
        indices, kind = writer.local_indices(extent)
        if value in writer.registers:
            expression, kind = writer.registers[value]
        elif value in writer.literals:  # a fill
            expression = _as_expression(writer.literals[value])
        else:
            raise UnsupportedKernel("tkern.yield", "a result not computed in the kernel")
    shape = sizes.shape(init)
    writer.results.append(KernelResult(shape, element_name(init)))
    pointer = f"out{len(writer.results) - 1}"
    offset = address(strides(pointer, len(shape)), offsets, indices)
    mask = f", mask={mask}" if kind == "row" else ""
    if element_name(init) in _HALF:
        expression = f"{expression}.to({_TRITON_DTYPES[element_name(init)]})"
    writer.emit(f"tl.store({pointer} + {text(offset)}, {expression}{mask})")


def fill_constant(value: ir.Value) -> str | None:
    """The literal a tensor holds everywhere when a kernel of its own only fills it with
    a constant (reduction and gemm inits), else None: readers use the literal instead."""
    generic = sole_generic(ir.operation_of(value.owner))
    if generic is None or len(generic.operands) != 1:
        return None
    generic_body = [op.operation for op in generic.regions[0].blocks[0].operations]
    if len(generic_body) != 1:
        return None  # computes its values (arange's body reads linalg.index)
    source = ir.operation_of(generic_body[0].operands[0].owner)
    if source is None or source.name != "arith.constant":
        return None
    return scalar_literal(source.attributes["value"])


def _is_empty(value: ir.Value) -> bool:
    owner = ir.operation_of(value.owner)
    return owner is not None and owner.name == "tensor.empty"


def _function_source(writer: _Writer) -> str:
    parameters = [f"in{i}" for i in range(len(writer.inputs))]
    parameters += [f"out{i}" for i in range(len(writer.results))]
    for index, value in enumerate(writer.inputs):
        parameters += [f"in{index}_stride{d}" for d in range(_rank(value))]
    for index, result in enumerate(writer.results):
        parameters += [f"out{index}_stride{d}" for d in range(len(result.shape))]
    parameters += [f"size{index}" for index in range(len(writer.size_roots))]
    parameters += [f"{name}: tl.constexpr" for name in writer.constants]
    lines = ["@triton.jit", f"def {writer.name}({', '.join(parameters)}):"]
    lines += [f"    {line}" for line in writer.lines]
    return "\n".join(lines) + "\n"

"""Native ops called from inside a compiled graph, instead of the graph split around them.

A target whose host program can call PyTorch (the Triton target's is Python) runs the
ATen ops left native on purpose (frontend/native_ops.py: cuDNN's convolution backward,
fused attention) between its kernels. The importer marks each such op `tessel.native`
with the overload it calls; `call-native-ops` turns it into a `func.call` of a private
declaration, before torch-mlir's lowering, which would otherwise decompose it (a
convolution's backward into forward convolutions on transposed copies). The lowering
converts the call's types like any other call; torch-mlir's own contract check then
rejects it, so `verify-linalg-on-tensors` runs that check on a copy without the calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel import ir
from tessel.errors import TesselError
from tessel.passes.registry import ModulePass, register

# On an op the importer made from a native node, then on the function its call calls:
# the overload's name ("aten.convolution_backward.default").
NATIVE = "tessel.native"
# On that function: the op's arguments in schema order, each the index (an `index`
# attribute) of the call operand that passes the tensor, or the constant itself (i64,
# f64, bool, string, unit for None, arrays for lists); and the positions of the op's
# results that the call returns (the others are None). On the declaration, not the
# call: torch-mlir's type conversion makes new calls, without their attributes.
NATIVE_ARGUMENTS = "tessel.native_arguments"
NATIVE_RESULTS = "tessel.native_results"
# On the op, then the function, where traced: each result's strides as eager's trace
# has them (an i64 array; unit for a None or a size computed at run time). aten lays
# its results out so: the host checks that once and takes their views as strided views.
NATIVE_STRIDES = "tessel.native_strides"


class NativeCallRefused(TesselError, ValueError):
    """A native op whose arguments or results a call cannot pass (a size computed at
    run time, a scalar result); the message names the op, so the graph splits around it."""


def native_functions(module) -> dict[str, ir.Operation]:
    """The declarations of native functions (call-native-ops) in `module`, by name."""
    return {ir.StringAttr(op.attributes["sym_name"]).value: op.operation
            for op in module.regions[0].blocks[0].operations
            if op.operation.name == "func.func" and NATIVE in op.operation.attributes}


@dataclass(frozen=True)
class Operand:
    """A tensor argument of a native call: the call's operand at `index`."""
    index: int


@dataclass(frozen=True)
class NativeCall:
    """What a call of a native function makes: `overload`'s call on `arguments` (in
    schema order: `Operand`s and Python constants), of whose results it returns those
    at `results` (the others are None), each with its traced strides where known
    (`strides`, by the op's result position)."""
    overload: str
    arguments: list
    results: list[int]
    strides: dict[int, tuple[int, ...]]


def native_call(op, functions: dict[str, ir.Operation]) -> NativeCall | None:
    """`op` as a call of one of `functions` (native_functions), or None."""
    if op.name != "func.call":
        return None
    function = functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    if function is None:
        return None
    traced = ir.ArrayAttr(function.attributes[NATIVE_STRIDES]) \
        if NATIVE_STRIDES in function.attributes else []
    return NativeCall(
        ir.StringAttr(function.attributes[NATIVE]).value,
        [_argument(a) for a in ir.ArrayAttr(function.attributes[NATIVE_ARGUMENTS])],
        [ir.IntegerAttr(p).value for p in ir.ArrayAttr(function.attributes[NATIVE_RESULTS])],
        {position: tuple(ir.DenseI64ArrayAttr(stride)) for position, stride in enumerate(traced)
         if isinstance(stride, ir.DenseI64ArrayAttr)})


def _argument(attribute):
    if isinstance(attribute, ir.UnitAttr):
        return None
    if isinstance(attribute, ir.BoolAttr):
        return attribute.value
    if isinstance(attribute, ir.IntegerAttr):
        value = attribute.value
        return Operand(value) if isinstance(attribute.type, ir.IndexType) else value
    if isinstance(attribute, ir.FloatAttr):
        return attribute.value
    if isinstance(attribute, ir.StringAttr):
        return attribute.value
    if isinstance(attribute, ir.ArrayAttr):
        return [_argument(element) for element in attribute]
    raise NativeCallRefused(f"a native call's argument {attribute} has no Python form")


def _constant(value: ir.Value):
    """The attribute of a torch constant (or a list of them) passed as an argument."""
    owner = ir.operation_of(value.owner)
    name = owner.name if owner is not None else "a block argument"
    if name == "torch.constant.none":
        return ir.UnitAttr.get()
    if name in ("torch.constant.int", "torch.constant.float", "torch.constant.str",
                "torch.constant.device"):
        return owner.attributes["value"]
    if name == "torch.constant.bool":
        return ir.BoolAttr.get(ir.BoolAttr(owner.attributes["value"]).value)
    if name == "torch.prim.ListConstruct":
        return ir.ArrayAttr.get([_constant(element) for element in owner.operands])
    raise NativeCallRefused(f"an argument computed by {name}, not a constant")


def _is_value_tensor(value_type) -> bool:
    return str(value_type).startswith("!torch.vtensor<")


def _declare(module: ir.Operation, name: str, inputs: list, results: list,
             attributes: dict) -> None:
    with module.context, ir.Location.unknown():
        declaration = ir.Operation.create(
            "func.func", regions=1, attributes={
                "sym_name": ir.StringAttr.get(name),
                "function_type": ir.TypeAttr.get(ir.FunctionType.get(inputs, results)),
                "sym_visibility": ir.StringAttr.get("private"), **attributes})
    module.regions[0].blocks[0].append(declaration)


def _call(module: ir.Operation, op, callee: str) -> None:
    """Replace native `op` with a call of its own declaration `callee`."""
    tensors, arguments = [], []
    index_type = ir.IndexType.get()
    for operand in op.operands:
        if _is_value_tensor(operand.type):
            arguments.append(ir.IntegerAttr.get(index_type, len(tensors)))
            tensors.append(operand)
        else:
            arguments.append(_constant(operand))
    returned = []
    for position, result in enumerate(op.results):
        if _is_value_tensor(result.type):
            returned.append(position)
        elif str(result.type) != "!torch.none" or list(result.uses):
            raise NativeCallRefused(f"result {position} of type {result.type}")
    result_types = [op.results[position].type for position in returned]
    i64 = ir.IntegerType.get_signless(64)
    traced = {NATIVE_STRIDES: op.attributes[NATIVE_STRIDES]} \
        if NATIVE_STRIDES in op.attributes else {}
    _declare(module, callee, [tensor.type for tensor in tensors], result_types, {
        **traced,
        NATIVE: op.attributes[NATIVE],
        NATIVE_ARGUMENTS: ir.ArrayAttr.get(arguments),
        NATIVE_RESULTS: ir.ArrayAttr.get(
            [ir.IntegerAttr.get(i64, position) for position in returned])})
    with op.location, ir.InsertionPoint(op):
        call = ir.Operation.create("func.call", results=result_types, operands=tensors,
                                   attributes={"callee": ir.FlatSymbolRefAttr.get(callee)})
    for result, position in zip(call.results, returned):
        op.results[position].replace_all_uses_with(result)
    op.erase()


@register
@dataclass(frozen=True)
class CallNativeOpsPass(ModulePass):
    """call-native-ops: turn each torch op marked `tessel.native` into a call of a
    private function, its constant arguments kept as attributes, for the host program
    to make.

    Before torch-mlir's lowering, which would decompose the op. An op whose arguments
    are not all tensors and constants, or that returns anything but tensors (and unused
    Nones), fails the pass with its name: the graph then splits around it.
    """

    name: ClassVar[str] = "call-native-ops"

    def run(self, module: ir.Operation) -> None:
        natives = ir.ops_where(module, lambda op: NATIVE in op.attributes
                               and op.name != "func.call")
        with module.context:
            for index, op in enumerate(natives):
                try:
                    _call(module, op, f"native_{index}")
                except NativeCallRefused as error:
                    raise NativeCallRefused(f"{op.name} at {op.location}: {error}") from None


@register
@dataclass(frozen=True)
class VerifyLinalgOnTensorsPass(ModulePass):
    """verify-linalg-on-tensors: torch-mlir's check of the linalg-on-tensors backend
    contract, on a copy of the module whose native calls (call-native-ops) are replaced
    by empty tensors, as a call is outside that contract.

    Its failure names the first op left unlowered, as torch-mlir's own check does.
    """

    name: ClassVar[str] = "verify-linalg-on-tensors"

    def run(self, module: ir.Operation) -> None:
        verify = "builtin.module(torch-verify-linalg-on-tensors-backend-contract)"
        with module.context:
            if not native_functions(module):
                ir.PassManager.parse(verify).run(module)
                return
            copy = ir.Module.parse(module.get_asm(enable_debug_info=True))
            natives = native_functions(copy.operation)
            for call in ir.ops_where(copy.operation,
                                     lambda op: native_call(op, natives) is not None):
                with call.location, ir.InsertionPoint(call):
                    for result in call.results:
                        dynamic = sum(ir.ShapedType.is_dynamic_size(size)
                                      for size in ir.ShapedType(result.type).shape)
                        sizes = []
                        if dynamic:  # any size will do: only the types are checked
                            one = ir.Operation.create(
                                "arith.constant", results=[ir.IndexType.get()],
                                attributes={"value": ir.IntegerAttr.get(ir.IndexType.get(), 1)})
                            sizes = [one.result] * dynamic
                        empty = ir.Operation.create("tensor.empty", results=[result.type],
                                                    operands=sizes)
                        result.replace_all_uses_with(empty.result)
                call.erase()
            for function in natives.values():
                function.erase()
            ir.PassManager.parse(verify).run(copy.operation)

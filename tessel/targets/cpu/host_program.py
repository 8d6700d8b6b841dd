"""Generates the CPU host program: readable Python that calls the JIT-compiled entry point.

The entry point takes memref descriptors ({allocated, aligned, offset, sizes, strides},
all 64-bit) and i64 scalars through MLIR's packed calling convention: one array of
pointers, one per argument. The host program keeps those descriptors in a flat int64
array (`_slots`), so a call fills one slice and makes one ctypes call, and torch
tensors reach the kernel without copies whenever they are contiguous.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from dataclasses import dataclass

import torch

from tessel.signature import GraphSignature, ScalarInput, TensorInput
from tessel.targets.base import RuntimeCheckFailed


@dataclass(frozen=True)
class EntryPointAbi:
    """Argument kinds of the lowered entry point: ('memref', rank) or ('scalar', 'i64'|'f64')."""
    inputs: list[tuple[str, object]]
    results: list[int]  # rank per tensor result (out-params appended after the inputs)


def _float_bits(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


def _descriptor(name: str) -> str:
    return f"{name}.data_ptr(), {name}.data_ptr(), 0, *{name}.shape, *{name}.stride()"


@dataclass(frozen=True)
class HostProgram:
    source: str            # defines host(*graph_inputs) -> tuple of graph outputs
    arguments: list[str]   # per entry-point argument: 'memref:SLOT' or 'scalar:SLOT'
    slot_count: int


def generate(signature: GraphSignature, abi: EntryPointAbi, graph_name: str,
             in_place: dict[int, int] | None = None) -> HostProgram:
    """The host program of one graph, with the slot layout of its entry point's
    arguments. Result i in `in_place` (write-inputs-in-place) is written into the input
    at position in_place[i], as it is passed (a contiguous copy is written instead, and
    copied back by the caller: input_mutations.writing_inputs)."""
    in_place = in_place or {}
    if len(abi.inputs) != len(signature.inputs) or len(abi.results) != len(signature.results):
        raise ValueError(
            f"entry point has {len(abi.inputs)} inputs/{len(abi.results)} results, graph "
            f"has {len(signature.inputs)}/{len(signature.results)}")
    lines = [f"# tessel host program for graph {graph_name} (target cpu)",
             f"def host({', '.join(arg.name for arg in signature.inputs)}):"]
    body = [f"{symbol} = {source}" for symbol, source in signature.symbol_bindings]
    slot_values: list[str] = []
    arguments: list[str] = []
    offset = 0
    for arg, (kind, detail) in zip(signature.inputs, abi.inputs):
        if isinstance(arg, TensorInput):
            if kind != "memref" or detail != arg.rank:
                raise ValueError(f"input {arg.name}: graph has a rank-{arg.rank} tensor, "
                                 f"entry point expects {kind} {detail}")
            if arg.permutation is not None:
                body.append(f"{arg.name} = {arg.name}.permute({list(arg.permutation)})")
            body.append(f"if not {arg.name}.is_contiguous(): {arg.name} = {arg.name}.contiguous()")
            slot_values.append(_descriptor(arg.name))
            arguments.append(f"memref:{offset}")
            offset += 3 + 2 * arg.rank
        else:
            assert isinstance(arg, ScalarInput)
            if kind != "scalar":
                raise ValueError(f"input {arg.name}: graph has a scalar, entry point expects {kind}")
            slot_values.append(arg.name if detail == "i64" else f"_float_bits({arg.name})")
            arguments.append(f"scalar:{offset}")
            offset += 1
    for index, result in enumerate(signature.results):
        shape = ", ".join(result.shape) + ("," if len(result.shape) == 1 else "")
        written = signature.inputs[in_place[index]] if index in in_place else None
        if written is not None and written.permutation is None:
            # The kernel writes the contiguous result into the contiguous input.
            body.append(f"out{index} = {written.name}")
        else:
            body.append(f"out{index} = _empty(({shape}), dtype={result.dtype})")
        slot_values.append(_descriptor(f"out{index}"))
        arguments.append(f"memref:{offset}")
        offset += 3 + 2 * len(result.shape)
    if slot_values:
        # One set of slots per host program: the lock keeps concurrent callers apart.
        body.append("with _slots_lock:")
        body.append(f"    _slots[0:{offset}] = ({', '.join(slot_values)},)")
        body.append("    _entry_point(_argv)")
        body.append("    if _failed_checks:")
        body.append("        raise _check_failure()")
    for index, result in enumerate(signature.results):
        if result.stride is not None:
            # Eager returns this output strided; callers may rely on its layout.
            body.append(f"out{index} = _empty_strided(out{index}.shape, "
                        f"({', '.join(result.stride)},), dtype={result.dtype}).copy_(out{index})")
    body.append(f"return ({''.join(r + ', ' for r in signature.returns)})")
    lines += ["    " + line for line in body]
    return HostProgram("\n".join(lines) + "\n", arguments, offset)


def build(program: HostProgram, entry_point, failed_checks: list[int],
          check_messages: list[str]) -> callable:
    """Execute the host program with its slots wired to `entry_point`. The compiled
    code appends to `failed_checks` the id of each runtime check that failed (its
    message is `check_messages[id]`), or the message of a library call that failed;
    the host program then raises RuntimeCheckFailed."""

    def check_failure() -> RuntimeCheckFailed:
        messages = [check_messages[i] if isinstance(i, int) else i for i in failed_checks]
        failed_checks.clear()
        return RuntimeCheckFailed("tessel: a runtime check of the compiled graph failed: "
                                  + "; ".join(messages))

    arguments = program.arguments
    slots = (ctypes.c_int64 * max(program.slot_count, 1))()
    base = ctypes.addressof(slots)
    memrefs = [a for a in arguments if a.startswith("memref")]
    descriptor_pointers = (ctypes.c_void_p * max(len(memrefs), 1))()
    argv = (ctypes.c_void_p * max(len(arguments), 1))()
    memref_index = 0
    for position, argument in enumerate(arguments):
        kind, offset = argument.split(":")
        if kind == "memref":
            descriptor_pointers[memref_index] = base + 8 * int(offset)
            argv[position] = ctypes.addressof(descriptor_pointers) + 8 * memref_index
            memref_index += 1
        else:
            argv[position] = base + 8 * int(offset)
    namespace = {
        "torch": torch, "_empty": torch.empty, "_empty_strided": torch.empty_strided,
        "_float_bits": _float_bits, "_slots": slots, "_argv": argv,
        "_slots_lock": threading.Lock(),
        "_failed_checks": failed_checks, "_check_failure": check_failure,
        "_entry_point": entry_point,
        # Keep the ctypes arrays alive as long as the host program.
        "_descriptor_pointers": descriptor_pointers,
    }
    exec(compile(program.source, "<tessel host program>", "exec"), namespace)
    return namespace["host"]

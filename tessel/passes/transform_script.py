"""Run transform-dialect lines (written as text) on a payload module."""

from __future__ import annotations

from torch_mlir.dialects.transform import interpreter

from tessel import ir
from tessel.errors import TesselError


class TransformError(TesselError, RuntimeError):
    """The transform script failed; the message carries its diagnostics."""


def apply_transform_script(payload: ir.Operation, lines: list[str]) -> None:
    """Apply `lines` as the body of a named sequence whose argument `%module` is `payload`."""
    body = "\n    ".join(lines)
    text = (
        "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main(%module: !transform.any_op) {\n"
        f"    {body}\n"
        "    transform.yield\n"
        "  }\n"
        "}\n"
    )
    with payload.context:
        script = ir.Module.parse(text)
        sequence = script.body.operations[0]
        # Transform failures are diagnostics; collect them so the caller gets an error.
        diagnostics: list[str] = []

        def collect(diagnostic):
            diagnostics.append(f"{diagnostic.location}: {diagnostic.message}")
            return True

        handler = payload.context.attach_diagnostic_handler(collect)
        try:
            interpreter.apply_named_sequence(payload, sequence, script)
        except Exception as error:  # the bindings raise a plain RuntimeError here
            raise TransformError("; ".join(diagnostics) or str(error)) from None
        finally:
            handler.detach()


def grouped(ops, key) -> dict:
    """`ops` by `key(op)`, in order of first appearance, those whose key is None left
    out: each group gets one script, its parameters the key (tile sizes, a loop order)."""
    groups: dict = {}
    for op in ops:
        value = key(op)
        if value is not None:
            groups.setdefault(value, []).append(op)
    return groups


def match_marked(handle: str, mark: str) -> str:
    """The script line binding `handle` to the payload ops that carry `mark`."""
    return (f"{handle} = transform.structured.match attributes {{{mark}}} in %module "
            ": (!transform.any_op) -> !transform.any_op")


def apply_to_marked(module: ir.Operation, ops: list[ir.Operation], mark: str,
                    lines: list[str]) -> None:
    """Tag `ops` with the unit attribute `mark`, apply `lines` (which match ops by
    it), then remove the tag from whatever carries it afterwards."""
    with module.context:
        for op in ops:
            op.attributes[mark] = ir.UnitAttr.get()
    apply_transform_script(module, lines)

    for op in ir.ops_where(module, lambda op: mark in op.attributes):
        del op.attributes[mark]

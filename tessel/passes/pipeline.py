"""Parse and run pass pipelines that mix upstream MLIR passes with tessel's Python passes.

Accepted forms: `builtin.module(canonicalize, cse)`, the shorthand `canonicalize,cse`,
and registered pipeline names (`cpu`), which expand in place. Consecutive upstream
elements go to the PassManager as text; tessel passes go in as Python passes, so a
single PassManager runs the whole pipeline (and `--mlir-print-ir-after-all` sees all).
"""

from __future__ import annotations

from tessel import ir
from tessel.errors import TesselError
from tessel.passes import registry


class PipelineError(TesselError, RuntimeError):
    """A pipeline failed to parse or to run; `pass_name` is the failing pass when known."""

    def __init__(self, message: str, pass_name: str | None = None):
        super().__init__(message)
        self.pass_name = pass_name


def split_top_level(text: str) -> list[str]:
    """Split `a{x=1,2}, func.func(b,c), d` at commas outside braces and parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pass pipeline {text!r}")
    parts.append("".join(current).strip())
    return [part for part in parts if part]


def _strip_module_anchor(text: str) -> str:
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        return text[len("builtin.module("):-1]
    return text


def top_level_elements(text: str) -> list[str]:
    """The pipeline's top-level elements, named pipelines left unexpanded."""
    return split_top_level(_strip_module_anchor(text))


def expand(text: str, _seen: tuple[str, ...] = ()) -> list[str]:
    """The flat list of top-level pipeline elements, with named pipelines expanded."""
    elements = []
    for element in top_level_elements(text):
        named = registry.lookup_pipeline(element)
        if named is not None:
            if element in _seen:
                raise PipelineError(f"pipeline {element!r} includes itself")
            elements.extend(expand(named, _seen + (element,)))
        else:
            elements.append(element)
    return elements


def canonical_text(text: str) -> str:
    """The pipeline as one `builtin.module(...)` string, named pipelines expanded (so
    that another process, which may not know a name registered here, can run it)."""
    return "builtin.module(" + ",".join(expand(text)) + ")"


def runs_anywhere(text: str) -> bool:
    """Whether every tessel pass in the pipeline is known to a fresh tessel process."""
    return all(registry.loadable_everywhere(_parse_element(e)[0]) for e in expand(text))


def _parse_element(element: str) -> tuple[str, dict[str, str]]:
    name, _, rest = element.partition("{")
    options = {}
    if rest:
        for item in rest.rstrip("}").split():
            key, _, value = item.partition("=")
            options[key] = value
    return name.strip(), options


def build_pass_manager(text: str, print_ir_after_all: bool = False) -> tuple[ir.PassManager, list]:
    """A PassManager for `text`; the list collects exceptions raised by Python passes."""
    failures: list[tuple[str, BaseException]] = []
    with ir.context():
        pm = ir.PassManager("builtin.module")
        upstream: list[str] = []

        def flush_upstream():
            if upstream:
                try:
                    pm.add(",".join(upstream))
                except ValueError as error:
                    raise PipelineError(f"cannot parse pass pipeline: {error}") from None
                upstream.clear()

        for element in expand(text):
            name, options = _parse_element(element)
            pass_class = registry.lookup_pass(name)
            if pass_class is None:
                upstream.append(element)
                continue
            flush_upstream()
            try:
                tessel_pass = pass_class.from_options(options)
            except (TypeError, ValueError) as error:
                raise PipelineError(str(error), name) from None
            pm.add(_as_external_pass(tessel_pass, failures), name=pass_class.__name__,
                   argument=name, description=pass_class.description())
        flush_upstream()
        if print_ir_after_all:
            pm.enable_ir_printing()
    return pm, failures


def _as_external_pass(tessel_pass: registry.ModulePass, failures: list):
    def run(op, external_pass):
        try:
            tessel_pass.run(op)
        except Exception as error:  # noqa: BLE001 -- reported after the PassManager stops
            failures.append((tessel_pass.name, error))
            external_pass.signal_pass_failure()
    return run


def run_pipeline(module: ir.Module, text: str, print_ir_after_all: bool = False) -> None:
    """Run `text` on `module` in place; raises PipelineError naming the failing pass."""
    pm, failures = build_pass_manager(text, print_ir_after_all)
    try:
        with ir.context():
            pm.run(module.operation)
    except ir.MLIRError as error:
        if failures:
            name, cause = failures[0]
            raise PipelineError(f"pass {name!r} failed: {cause}", name) from cause
        raise PipelineError(_describe_mlir_error(error)) from None


def _describe_mlir_error(error: ir.MLIRError) -> str:
    lines = [error.message if hasattr(error, "message") else "pass pipeline failed"]
    for diagnostic in error.error_diagnostics:
        lines.append(f"{diagnostic.location}: error: {diagnostic.message}")
        lines.extend(f"  {note.location}: note: {note.message}" for note in diagnostic.notes)
    return "\n".join(lines)

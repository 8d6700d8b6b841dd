"""tessel-opt: an mlir-opt-like driver for upstream MLIR passes plus tessel's Python passes.

    tessel-opt input.mlir -p cpu
    tessel-opt --pass-pipeline='builtin.module(check-contract{target=cpu},canonicalize)' in.mlir
    cat in.mlir | tessel-opt -p canonicalize,cse --split-input-file
    tessel-opt --list-passes
    tessel-opt kernels.mlir -p gpu --emit triton   # the kernels' Triton source
"""

from __future__ import annotations

import argparse
import re
import sys

from tessel import ir
from tessel.passes import registry
from tessel.passes.pipeline import PipelineError, run_pipeline

SPLIT_MARKER = "// -----"
_LOCATION = re.compile(r'loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)\)')


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tessel-opt", description="Run MLIR and tessel pass pipelines on .mlir input.")
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, '-' for stdin")
    parser.add_argument("-p", "--passes", help="comma-separated passes or pipeline names")
    parser.add_argument("--pass-pipeline", help="a full pipeline: 'builtin.module(...)'")
    parser.add_argument("-o", "--output", default="-", help="output file, '-' for stdout")
    parser.add_argument("--split-input-file", action="store_true",
                        help=f"process each chunk between '{SPLIT_MARKER}' lines separately")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true",
                        help="print the IR after every pass (to stderr)")
    parser.add_argument("--list-passes", action="store_true",
                        help="list tessel's passes and named pipelines")
    parser.add_argument("--emit", choices=("mlir", "triton"), default="mlir",
                        help="print the IR (default), or the Triton source of its kernels "
                             "(after the gpu pipeline)")
    return parser.parse_args(argv)


def list_passes() -> str:
    lines = ["tessel passes:"]
    lines += [f"  {name:<28} {cls.description()}" for name, cls in registry.all_passes().items()]
    lines.append("named pipelines:")
    lines += [f"  {name:<28} {doc}" for name, (_, doc) in registry.all_pipelines().items()]
    lines.append("Upstream MLIR and torch-mlir passes are accepted by name as well.")
    return "\n".join(lines)


def _chunks(text: str, split: bool) -> list[str]:
    """The chunks to process, each padded with the newlines before it in the file, so
    that every location (parse errors, op locations in pass errors) keeps file lines."""
    if not split:
        return [text]
    chunks, line_number, current = [], 0, []
    for line in text.splitlines(keepends=True):
        if line.strip() == SPLIT_MARKER:
            chunks.append("\n" * (line_number - len(current)) + "".join(current))
            current = []
        else:
            current.append(line)
        line_number += 1
    chunks.append("\n" * (line_number - len(current)) + "".join(current))
    return chunks


def _with_filename(message: str, filename: str) -> str:
    return message.replace('loc("-":', f'loc("{filename}":')


def _parse_error(error: ir.MLIRError, filename: str) -> str:
    messages = []
    for diagnostic in error.error_diagnostics:
        match = _LOCATION.search(str(diagnostic.location))
        where = f"{filename}:{match['line']}:{match['col']}" if match else filename
        messages.append(f"{where}: error: {diagnostic.message}")
    return "\n".join(messages) or f"{filename}: error: {error}"


def process(text: str, filename: str, pipeline: str | None, split: bool,
            print_ir_after_all: bool, emit: str = "mlir") -> tuple[str, list[str]]:
    """Run the pipeline on every chunk; returns (output text, error messages)."""
    outputs, errors = [], []
    for chunk in _chunks(text, split):
        try:
            module = ir.parse_module(chunk)
        except ir.MLIRError as error:
            errors.append(_parse_error(error, filename))
            continue
        if pipeline:
            try:
                run_pipeline(module, pipeline, print_ir_after_all)
            except PipelineError as error:
                errors.append(_with_filename(f"{filename}: error: {error}", filename))
                continue
        if emit == "triton":
            # The target's own translation: a driver, not a pass, may reach the targets.
            from tessel.targets.triton.translate import triton_source
            outputs.append(triton_source(module))
        else:
            outputs.append(str(module))
    return f"\n{SPLIT_MARKER}\n".join(outputs), errors


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.list_passes:
        print(list_passes())
        return 0
    if args.passes and args.pass_pipeline:
        print("tessel-opt: give either -p or --pass-pipeline, not both", file=sys.stderr)
        return 2
    filename = "<stdin>" if args.input == "-" else args.input
    try:
        text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    except OSError as error:
        print(f"tessel-opt: cannot read {filename}: {error.strerror}", file=sys.stderr)
        return 2
    output, errors = process(text, filename, args.pass_pipeline or args.passes,
                             args.split_input_file, args.mlir_print_ir_after_all, args.emit)
    for message in errors:
        print(message, file=sys.stderr)
    if output:
        if args.output == "-":
            print(output)
        else:
            with open(args.output, "w") as out:
                out.write(output + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs the stages of one graph's compilation: timing, dump files and repros.

Every pipeline a graph goes through runs via `Stages.run_pipeline`, which times it
into `tessel.stats()["compile_seconds"]`, writes its output to the dump directory,
and on failure writes a repro (the IR before the pipeline plus the `tessel-opt`
command that replays it) and raises `CompileFailure`.
"""

from __future__ import annotations

import shlex
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from tessel import counters, ir
from tessel.compile_worker import run_in_worker
from tessel.dump import GraphDump
from tessel.errors import TesselError
from tessel.passes.pipeline import PipelineError, canonical_text, run_pipeline, runs_anywhere
from tessel.worker_process import WorkerCrash


class CompileFailure(TesselError):
    """A stage failed. `op` is the offending op when known; `nodes` the names of the
    FX nodes the failing IR came from, where its locations name them (the frontend
    pins the failure on them); `repro` the repro folder."""

    def __init__(self, stage: str, message: str, op: str | None = None, repro: Path | None = None,
                 nodes: frozenset[str] = frozenset()):
        super().__init__(message)
        self.stage = stage
        self.message = message
        self.op = op
        self.repro = repro
        self.nodes = nodes


class Stages:
    def __init__(self, dump: GraphDump, in_worker: bool = True):
        self.dump = dump
        # Pipelines run in the compile worker process, unless they use a pass that
        # only this process knows (registered by a call at run time).
        self.in_worker = in_worker

    @contextmanager
    def timed(self, stage: str):
        with counters.timed_stage(stage):
            yield

    def write(self, stage_file: str, render: Callable[[], str]) -> None:
        self.dump.write(stage_file, render)

    def run_pipeline(self, module: ir.Module, stage: str, pipeline: str,
                     op_finder=None) -> ir.Module:
        """Run `pipeline` (text or a registered name) on `module`, dump the result as
        `<stage>.mlir` and return it (a new module when the worker ran the pipeline)."""
        in_worker = self.in_worker and runs_anywhere(pipeline)
        # The worker leaves `module` as it is, so its text is only needed on failure; a
        # pipeline run here changes it in place, so its input is kept first.
        before = None if in_worker else module.operation.get_asm(enable_debug_info=True)
        try:
            with self.timed(stage):
                if in_worker:
                    module = ir.parse_module(run_in_worker(
                        ir.to_bytecode(module), canonical_text(pipeline)))
                else:
                    run_pipeline(module, pipeline)
        except (PipelineError, WorkerCrash) as error:
            before = before or module.operation.get_asm(enable_debug_info=True)
            repro = self.write_repro(stage, before, pipeline)
            op = op_finder(str(error)) if op_finder and isinstance(error, PipelineError) else None
            raise CompileFailure(stage, f"{error}\n{self.repro_hint(repro)}", op, repro,
                                 nodes=frozenset(ir.location_names(str(error)))) from None
        self.write(f"{stage}.mlir", module.__str__)
        return module

    def write_repro(self, stage: str, ir_text: str, pipeline: str) -> Path:
        """Write the failing stage's input IR and replay command; returns the folder."""
        folder = (self.dump.path / "repro") if self.dump.path else Path(
            tempfile.mkdtemp(prefix=f"tessel-repro-{self.dump.graph_name}-"))
        folder.mkdir(parents=True, exist_ok=True)
        ir_file = folder / f"{stage}.input.mlir"
        ir_file.write_text(ir_text)
        flag = "--pass-pipeline=" if "(" in pipeline else "-p "
        command = f"tessel-opt {shlex.quote(str(ir_file))} {flag}{shlex.quote(pipeline)}"
        (folder / "replay.sh").write_text(f"#!/bin/sh\n{command}\n")
        return folder

    @staticmethod
    def repro_hint(repro: Path) -> str:
        command = (repro / "replay.sh").read_text().splitlines()[-1]
        return f"repro written to {repro}; replay with:\n  {command}"

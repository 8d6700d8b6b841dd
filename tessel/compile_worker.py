"""A separate process that runs pass pipelines, so that a crash or a hang in native
code (torch-mlir's lowerings, MLIR passes) costs a fallback, not the user's program.

The parent sends one JSON line per request, {"ir": bytecode, "pipeline": text}, with the
module as base64 MLIR bytecode (locations included); the worker answers {"ok": true,
"ir": bytecode} or {"ok": false, "error": message, "pass": name}.
It imports no torch, so it starts in well under a second, and it lives as long as
the parent uses it. Run as `python -m tessel.compile_worker`.

The parent's side of the exchange is a WorkerProcess (worker_process.py).
"""

from __future__ import annotations

import atexit
import base64
import select
import sys

from tessel import ir
from tessel.passes.pipeline import PipelineError, run_pipeline
from tessel.worker_process import WorkerProcess, serve


_worker = WorkerProcess("tessel.compile_worker")
atexit.register(_worker.close)


def start_worker() -> None:
    _worker.start()


def run_in_worker(bytecode: bytes, pipeline: str, timeout_s: float = 600.0) -> bytes:
    """The IR (bytecode) after `pipeline`, run by the worker; raises PipelineError (a
    pass failed) or WorkerCrash."""
    answer = _worker.request({"ir": base64.b64encode(bytecode).decode(),
                              "pipeline": pipeline}, timeout_s)
    if not answer["ok"]:
        raise PipelineError(answer["error"], answer.get("pass"))
    return base64.b64decode(answer["ir"])


def _serve() -> None:
    # Loading dialects and building the first pass pipelines takes a while: pay it while
    # the parent is still tracing its first graph, not on its first request, which goes
    # first if it comes before the warm-up is done.
    for pipeline in ("torch-to-linalg", "cpu", "gpu"):
        if select.select([sys.stdin], [], [], 0)[0]:
            break
        run_pipeline(ir.parse_module(""), pipeline)
    serve(_answer)


def _answer(request: dict) -> dict:
    try:
        module = ir.parse_module(base64.b64decode(request["ir"]))
        run_pipeline(module, request["pipeline"])
        return {"ok": True, "ir": base64.b64encode(ir.to_bytecode(module)).decode()}
    except PipelineError as error:
        return {"ok": False, "error": str(error), "pass": error.pass_name}
    except ir.MLIRError as error:
        return {"ok": False, "error": str(error)}


if __name__ == "__main__":
    _serve()

"""A separate process that runs pass pipelines, so that a crash or a hang in native
code (torch-mlir's lowerings, MLIR passes) costs a fallback, not the user's program.

The parent sends one JSON line per request, {"ir": bytecode, "pipeline": text}, with the
module as base64 MLIR bytecode (locations included); the worker answers {"ok": true,
"ir": bytecode} or {"ok": false, "error": message, "pass": name}.
It imports no torch, so it starts in well under a second, and it lives as long as
the parent uses it. Run as `python -m tessel.compile_worker`.

`WorkerProcess`, the parent's side of that exchange of JSON lines, also drives the
Triton target's kernel compile workers (targets/triton/compile_pool.py).
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading

from tessel import ir
from tessel.passes.pipeline import PipelineError, run_pipeline


class WorkerCrash(RuntimeError):
    """The worker died or timed out; the message says how, with its last stderr lines."""


class WorkerProcess:
    """The parent's handle on one worker process, `python -m <module>`, that answers
    each JSON line on its stdin with one on its stdout (started on first use, restarted
    after a crash). Requests are serialized: one at a time."""

    def __init__(self, module: str):
        self.module = module
        self._process: subprocess.Popen | None = None
        self._stderr = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        self._stderr = tempfile.TemporaryFile()
        environment = dict(os.environ, PYTHONUNBUFFERED="1")
        self._process = subprocess.Popen(
            [sys.executable, "-m", self.module], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, env=environment)

    def start(self) -> None:
        """Start the process now, if it is not running, without waiting for it."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()

    def request(self, request: dict, timeout_s: float) -> dict:
        """The worker's answer to `request`; raises WorkerCrash."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            timed_out = False
            try:
                self._process.stdin.write((json.dumps(request) + "\n").encode())
                self._process.stdin.flush()
                ready, _, _ = select.select([self._process.stdout], [], [], timeout_s)
                timed_out = not ready
                line = self._process.stdout.readline() if ready else b""
            except BrokenPipeError:
                line = b""
            if not line:
                raise self._crash(timed_out)
        return json.loads(line)

    def close(self) -> None:
        """Stop the worker (it also exits by itself when this process closes its stdin)."""
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            self._process.stdin.close()
            self._process.stdout.close()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _crash(self, timed_out: bool) -> WorkerCrash:
        process = self._process
        if process.poll() is None:
            process.kill()
        process.wait()
        self._stderr.seek(0)
        stderr_tail = self._stderr.read().decode(errors="replace").strip().splitlines()[-5:]
        self.close()
        if timed_out:
            how = "did not answer in time and was stopped"
        elif process.returncode < 0:
            how = f"crashed ({signal.Signals(-process.returncode).name})"
        else:
            how = f"exited with status {process.returncode}"
        details = "; ".join(stderr_tail)
        return WorkerCrash(f"compile worker {how}" + (f": {details}" if details else ""))


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
    # Loading dialects and building the first pass pipelines costs ~0.3 s: pay it while
    # the parent is still tracing its first graph, not on its first request, which goes
    # first if it comes before the warm-up is done.
    for pipeline in ("torch-to-linalg", "cpu", "gpu"):
        if select.select([sys.stdin], [], [], 0)[0]:
            break
        run_pipeline(ir.parse_module(""), pipeline)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            module = ir.parse_module(base64.b64decode(request["ir"]))
            run_pipeline(module, request["pipeline"])
            answer = {"ok": True, "ir": base64.b64encode(ir.to_bytecode(module)).decode()}
        except PipelineError as error:
            answer = {"ok": False, "error": str(error), "pass": error.pass_name}
        except ir.MLIRError as error:
            answer = {"ok": False, "error": str(error)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()

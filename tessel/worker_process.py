"""Worker processes that answer JSON lines, both sides of the exchange: the parent's
handle (WorkerProcess) and the worker's loop (`serve`), for the pass-pipeline worker
(compile_worker.py) and the Triton target's kernel compile workers
(targets/triton/compile_pool.py). It imports nothing heavy, so that a worker which
imports it starts fast.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Callable

from tessel.errors import TesselError

# The line a worker that announces readiness writes once it has started.
_READY = {"ready": True}


class WorkerCrash(TesselError, RuntimeError):
    """The worker died or timed out; the message says how, with its last stderr lines."""


class WorkerProcess:
    """The parent's handle on one worker process, `python -m <module>`, that answers
    each JSON line on its stdin with one on its stdout (started on first use, restarted
    after a crash). Requests are serialized: one at a time.

    A worker that `announces_ready` first writes a line of its own, {"ready": true},
    once it has started; `ready` tells whether that line has come."""

    def __init__(self, module: str, environment: dict[str, str] | None = None,
                 announces_ready: bool = False):
        self.module = module
        self.environment = environment or {}
        self.announces_ready = announces_ready
        self._process: subprocess.Popen | None = None
        self._stderr = None
        self._announced = False
        self._lock = threading.Lock()

    def _start(self) -> None:
        self._stderr = tempfile.TemporaryFile()
        environment = dict(os.environ, PYTHONUNBUFFERED="1", **self.environment)
        self._process = subprocess.Popen(
            [sys.executable, "-m", self.module], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, env=environment)
        self._announced = not self.announces_ready

    def _ensure_running(self) -> None:
        if self._process is None or self._process.poll() is not None:
            self._start()

    def start(self) -> None:
        """Start the process now, if it is not running, without waiting for it."""
        with self._lock:
            self._ensure_running()

    def _read_line(self, timeout_s: float) -> tuple[bytes, bool]:
        """The worker's next line (empty if it died or `timeout_s` passed), and whether
        the time ran out."""
        ready, _, _ = select.select([self._process.stdout], [], [], timeout_s)
        return (self._process.stdout.readline() if ready else b""), not ready

    def ready(self, timeout_s: float) -> bool:
        """Whether the worker has announced that it started, waiting up to `timeout_s`;
        raises WorkerCrash if it is not running (its next request restarts it)."""
        with self._lock:
            if self._process is None:
                raise WorkerCrash("compile worker not started")
            if not self._announced:
                line, timed_out = self._read_line(timeout_s)
                if not line and not timed_out:
                    raise self._crash(timed_out)
                self._announced = bool(line)
            return self._announced

    def request(self, request: dict, timeout_s: float) -> dict:
        """The worker's answer to `request`; raises WorkerCrash."""
        with self._lock:
            self._ensure_running()
            if not self._announced:  # read it first: one line in flight at a time
                line, timed_out = self._read_line(timeout_s)
                if not line:
                    raise self._crash(timed_out)
                self._announced = True
            try:
                self._process.stdin.write((json.dumps(request) + "\n").encode())
                self._process.stdin.flush()
                line, timed_out = self._read_line(timeout_s)
            except BrokenPipeError:
                line, timed_out = b"", False
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


def _write(answer: dict) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def serve(answer: Callable[[dict], dict], announce_ready: bool = False) -> None:
    """The worker's side: with `announce_ready`, first say it has started; then answer
    each JSON line on stdin with `answer`'s, one line on stdout, until stdin closes."""
    if announce_ready:
        _write(_READY)
    for line in sys.stdin:
        _write(answer(json.loads(line)))

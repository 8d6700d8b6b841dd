"""Run the model suite: a process per (model, backend, mode), rows appended to a JSON-lines file.

    python -m benchmarks.models.suite --device cuda --jobs 6 --budget 540 \\
        --results .gpu/models_cuda.jsonl
    python -m benchmarks.models.report .gpu/models_cuda.jsonl

Each row runs `python -m benchmarks.models.runner` in its own process (its own session,
killed as a group at --timeout), with empty Inductor, tessel and Triton cache
directories, so that first calls compile from scratch. Up to --jobs processes run at
once, a new one starting only while the host has --reserve-gb of memory available; they build, compile and warm up side by side, but time one at a time (a file lock
around each one's timed calls, during which the others are paused: measure.timed), and
each gets cores/jobs compile workers and threads. With --gpus N, a row runs on the card
with the fewest rows running (CUDA_VISIBLE_DEVICES), and still times with every other row
paused, on every card.
A row already in --results is skipped, so one command continues another's run: with
--budget, no row starts after that many seconds, and rows still running --grace seconds
later are stopped and left to the next command. See benchmarks/README.md, "Model suite".
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.models import catalog, measure
from benchmarks.models.runner import BACKENDS, MODES

ROOT = Path(__file__).resolve().parents[2]
# One lock for every suite on the machine: timed calls never overlap, whichever run.
LOCK = Path(tempfile.gettempdir()) / "tessel-model-suite.lock"
# Phases before the compiled model first runs: a process that dies there failed eagerly.
EAGER_PHASES = ("start-up", "build", "fp64 reference", "eager")
POLL_S = 0.5


@dataclass(frozen=True)
class Task:
    spec: catalog.ModelSpec
    backend: str
    mode: str
    dtype: str      # the run's, or the one its row is pinned to
    process: int = 1  # which of the row's --processes

    @property
    def label(self) -> str:
        kind = "" if self.spec.kind == "forward" else f" {self.spec.kind}"
        dtype = f" {self.dtype}" if self.spec.dtype else ""
        again = f" #{self.process}" if self.process > 1 else ""
        return f"{self.spec.name}{kind}{dtype} {self.backend} {self.mode}{again}"

    @property
    def cache_group(self) -> str:
        """What the rows sharing compile caches (--share-caches) have in common: all but
        the mode."""
        return f"{self.spec.name}.{self.spec.kind}.{self.dtype}.{self.backend}.{self.process}"

    @property
    def file_stem(self) -> str:
        return (f"{self.spec.name}.{self.spec.kind}.{self.dtype}.{self.backend}.{self.mode}"
                f".{self.process}")

    def fields(self, args: argparse.Namespace) -> dict:
        """The row's fields that say what it measured (row_key's)."""
        return {"model": self.spec.name, "source": self.spec.source, "kind": self.spec.kind,
                "backend": self.backend, "mode": self.mode, "device": args.device.split(":")[0],
                "dtype": self.dtype, "tiny": args.tiny, "options": args.options,
                "process": self.process}


def row_key(row: dict, with_process: bool = True) -> tuple:
    """What identifies a row across runs: a rerun with these skips it. Without its
    process: what the --processes runs of one row share."""
    key = (row["model"], row["kind"], row["backend"], row["mode"], row["device"], row["dtype"],
           row["tiny"], json.dumps(row["options"], sort_keys=True))
    return key + (row.get("process", 1),) if with_process else key


def git_commit() -> str | None:
    """The checkout's commit, '-dirty' with local changes; None without git (a copy)."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def selected(specs: list[catalog.ModelSpec], patterns: list[str] | None,
             kinds: list[str]) -> list[catalog.ModelSpec]:
    """The specs of the wanted kinds whose name matches a pattern (fnmatch: an exact name,
    or `hf_*`), all without patterns; models whose package is missing are left out."""
    chosen = [s for s in specs if s.kind in kinds
              and (patterns is None or any(fnmatch.fnmatch(s.name, p) for p in patterns))]
    missing = sorted({s.source for s in chosen if not catalog.source_installed(s.source)})
    if missing:
        print(f"skipping the {', '.join(missing)} models: not installed", file=sys.stderr)
    return [s for s in chosen if s.source not in missing]


def tasks_of(args: argparse.Namespace) -> list[Task]:
    specs = selected(catalog.load_catalog(), args.models, args.kinds)
    tasks: dict[tuple, Task] = {}
    for spec in specs:
        for mode in args.modes:
            for backend in args.backends:
                for process in range(1, args.processes + 1):
                    task = Task(spec, backend, mode, spec.dtype_in(args.dtype), process)
                    # A row pinned to the run's own dtype is the model's unpinned row again.
                    tasks.setdefault((spec.name, spec.kind, task.dtype, backend, mode, process),
                                     task)
    shard, shards = args.shard
    return list(tasks.values())[shard - 1::shards]


def done_keys(results: Path) -> set[tuple]:
    if not results.exists():
        return set()
    return {row_key(json.loads(line)) for line in results.read_text().splitlines() if line.strip()}


class Process:
    """A runner process for one task, with its row file, log and cache directories."""

    def __init__(self, task: Task, args: argparse.Namespace, workdir: Path, logs: Path,
                 peers: Path, gpu: int | None):
        self.task = task
        self.gpu = gpu
        self.fields = task.fields(args)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{task.file_stem}.", dir=workdir))
        self.row_file = self.dir / "row.json"
        self.log = logs / f"{task.file_stem}.log"
        caches = workdir / "caches" / task.cache_group if args.share_caches else self.dir
        # A row that finds its group's caches filled compiles partly from them: its first
        # call is not a cold one (the report leaves it out of the first-call mean).
        self.fields["warm_caches"] = args.share_caches and caches.exists()
        share = max(1, (os.cpu_count() or 1) // args.jobs)
        threads = args.threads or share
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
                   TESSEL_CACHE_DIR=str(caches / "tessel"),
                   TRITON_CACHE_DIR=str(caches / "triton"),
                   TORCHINDUCTOR_COMPILE_THREADS=str(share),
                   TESSEL_COMPILE_PROCESSES=str(share),
                   **{measure.PEERS_ENV: str(peers)})
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        command = [sys.executable, "-m", "benchmarks.models.runner",
                   "--model", task.spec.name, "--kind", task.spec.kind,
                   "--backend", task.backend, "--mode", task.mode, "--device", args.device,
                   "--dtype", task.dtype, "--warmup", str(args.warmup),
                   "--repeats", str(args.repeats), "--threads", str(threads),
                   "--lock", str(LOCK), "--row-file", str(self.row_file)]
        if args.tiny:
            command.append("--tiny")
        if args.options:
            command += ["--options", json.dumps(args.options)]
        self.start = time.monotonic()
        with open(self.log, "w") as log:
            # Its own session: a timeout kills the compile workers it started too.
            self.popen = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def resume(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGCONT)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.start

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()

    def row(self, timed_out: bool) -> dict:
        """The finished row; for a process that died or ran out of time, what it wrote
        before that, with the status that says so. The task's fields are the row's key
        (the runner does not know which of the row's --processes it is)."""
        written = json.loads(self.row_file.read_text()) if self.row_file.exists() else {}
        row = written | self.fields
        if row.get("phase") != "done":
            phase = row.get("phase") or "start-up"
            if timed_out:
                row.update(status="timeout",
                           error=f"no result after {self.seconds:.0f} s, in {phase}")
            else:
                code = self.popen.returncode
                died = (f"died of {signal.Signals(-code).name}" if code < 0
                        else f"exited with {code}")
                row.update(status="eager_fail" if phase in EAGER_PHASES else "fail_to_run",
                           error=f"process {died} in {phase}: {last_line(self.log)}")
        return row

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def write_peers(peers: Path, running: list[Process]) -> None:
    """The running rows' process groups (each runner leads its own session), for the one
    that times to pause (measure.others_paused); replaced whole, never read half-written."""
    partial = peers.with_suffix(".partial")
    partial.write_text(" ".join(str(p.popen.pid) for p in running))
    os.replace(partial, peers)


def available_memory_gb() -> float:
    """The host memory the kernel says a new process can take (MemAvailable); infinite
    where /proc/meminfo does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("inf")


def room_for_another(running: list[Process], reserve_gb: float) -> bool:
    """Whether a row may start beside `running`: the first always; another while the
    host has `reserve_gb` available. A train row holds its model, an fp64 copy and
    compile workers (hf_llama's and hf_deberta_v2's 21-23 GB at their peak): twelve at
    once on a 128 GiB H200 host had two killed by the kernel's OOM killer."""
    return not running or available_memory_gb() >= reserve_gb


def next_task(pending: list[Task], running: list[Process], share_caches: bool) -> Task | None:
    """The first pending task; with shared caches, the first whose cache group has no row
    running (the later mode waits for the earlier one's compiled code)."""
    busy = {p.task.cache_group for p in running} if share_caches else set()
    return next((t for t in pending if t.cache_group not in busy), None)


def least_loaded_gpu(gpus: int | None, running: list[Process]) -> int | None:
    """The card with the fewest running rows (the lowest index of those), None without --gpus."""
    if gpus is None:
        return None
    return min(range(gpus), key=lambda gpu: sum(p.gpu == gpu for p in running))


def last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def summary(row: dict) -> str:
    parts = [row["status"]]
    if row.get("speedup") is not None:
        parts.append(f"{row['speedup']:.2f}x eager")
    if row.get("first_call_s") is not None:
        parts.append(f"first call {row['first_call_s']:.1f} s")
    if row.get("error"):
        parts.append(row["error"][:160])
    return ", ".join(parts)


def run(args: argparse.Namespace) -> int:
    """Run the pending tasks; returns how many are left for a next command."""
    args.results.parent.mkdir(parents=True, exist_ok=True)
    logs = args.results.with_suffix(".logs")
    logs.mkdir(exist_ok=True)
    done = done_keys(args.results)
    pending = [t for t in tasks_of(args) if row_key(t.fields(args)) not in done]
    total = len(pending)
    print(f"{total} rows to run, {args.jobs} at a time", file=sys.stderr)
    commit = args.commit or git_commit()
    start = time.monotonic()
    running: list[Process] = []
    finished = 0
    with tempfile.TemporaryDirectory(prefix="model-suite-") as workdir:
        peers = Path(workdir) / "peers"
        while pending or running:
            elapsed = time.monotonic() - start
            over_budget = args.budget is not None and elapsed > args.budget
            # Rows running at the budget may finish within the grace; later ones are lost.
            out_of_grace = over_budget and elapsed > args.budget + args.grace
            # One row a poll at most: a row takes its memory after it starts.
            task = next_task(pending, running, args.share_caches)
            if task and len(running) < args.jobs and not over_budget and \
                    room_for_another(running, args.reserve_gb):
                pending.remove(task)
                running.append(Process(task, args, Path(workdir), logs, peers,
                                       least_loaded_gpu(args.gpus, running)))
            write_peers(peers, running)
            for process in list(running):
                timed_out = process.seconds > args.timeout
                if process.popen.poll() is None and not timed_out and not out_of_grace:
                    continue
                running.remove(process)
                if process.popen.poll() is None:
                    process.kill()
                write_peers(peers, running)
                if process.popen.returncode != 0:
                    # Killed or crashed, maybe while it timed: the others it paused go on.
                    for other in running:
                        other.resume()
                    if out_of_grace and not timed_out:  # the next command runs it
                        print(f"stopped {process.task.label} (budget)", file=sys.stderr)
                        process.remove()
                        continue
                row = process.row(timed_out) | {
                    "commit": commit, "process_s": process.seconds, "log": str(process.log),
                    "date": datetime.datetime.now().isoformat(timespec="seconds")}
                process.remove()
                with open(args.results, "a") as out:
                    out.write(json.dumps(row) + "\n")
                finished += 1
                print(f"[{finished}/{total}] {process.task.label}: {summary(row)} "
                      f"({process.seconds:.0f} s)", file=sys.stderr)
            if over_budget and not running:
                break
            time.sleep(POLL_S)
    left = total - finished
    print(f"{finished} rows written to {args.results}; "
          + (f"{left} left: run the same command again" if left else "the suite is complete"),
          file=sys.stderr)
    return left


def shard_arg(text: str) -> tuple[int, int]:
    try:
        shard, shards = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected i/n, e.g. 1/3") from None
    if not 1 <= shard <= shards:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: i must be in 1..n")
    return shard, shards


def comma_list(choices: tuple[str, ...] | None = None):
    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        unknown = sorted(set(items) - set(choices)) if choices else []
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {list(choices)}")
        return items
    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default=None,
                        help="default: bf16 on cuda, fp32 on cpu; rows of models.csv that name "
                             "a dtype run in theirs (a train row: bf16 autocast or fp32)")
    parser.add_argument("--modes", type=comma_list(MODES), default=None,
                        help="default: default,reduce-overhead on cuda, default on cpu "
                             "(reduce-overhead replays CUDA graphs: only CUDA has them)")
    parser.add_argument("--backends", type=comma_list(BACKENDS), default=list(BACKENDS),
                        help="compiled backends (each row also times eager)")
    parser.add_argument("--models", type=comma_list(), default=None,
                        help="comma-separated names or fnmatch patterns (hf_*); default: all")
    parser.add_argument("--kinds", type=comma_list(catalog.KINDS), default=list(catalog.KINDS),
                        help="forward (one inference call), generate (generate() with a static "
                             "cache), train (one training step); default: all")
    parser.add_argument("--shard", type=shard_arg, default=(1, 1),
                        help="i/n: every n-th row from the i-th (1-based)")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per row")
    parser.add_argument("--jobs", type=int, default=1, help="processes at once")
    parser.add_argument("--reserve-gb", type=float, default=24.0,
                        help="start another row only while the host has this much "
                             "memory available (GB)")
    parser.add_argument("--processes", type=int, default=1,
                        help="run each row in this many processes; the report shows the "
                             "median one (rows bound by host time move between processes)")
    parser.add_argument("--gpus", type=int, default=None,
                        help="spread the processes over this many cards of the host, each "
                             "row on one (default: each process sees what the machine shows)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds after which no row starts; rows still running "
                             "--grace seconds later are stopped and left to the next command")
    parser.add_argument("--grace", type=float, default=0.0,
                        help="seconds after --budget that running rows have to finish "
                             "(default 0: stopped at the budget)")
    parser.add_argument("--share-caches", action="store_true",
                        help="the modes of one model and backend share compile caches, one "
                             "mode's row after the other's: the later compiles partly from "
                             "the earlier's code (same kernels, a warm first call) and a "
                             "whole train run fits a GPU session")
    parser.add_argument("--results", type=Path, default=None,
                        help="JSON lines file, appended to (default: "
                             "benchmarks/results/models_<device>.jsonl)")
    parser.add_argument("--tiny", action="store_true", help="tiny configs of the hf models")
    parser.add_argument("--options", type=json.loads, default=None,
                        help="tessel options for the mlir rows, a JSON object")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads per process (default: cores / jobs; 1 on a "
                             "small shared machine, where parallel regions wait for cores)")
    parser.add_argument("--commit", default=None,
                        help="the commit the rows record (default: git describe of the checkout; "
                             "a device machine's copy may carry a stale .git, so name it there)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up calls per row")
    parser.add_argument("--repeats", type=int, default=15,
                        help="timed calls of eager and of compiled per row (0: no timing)")
    args = parser.parse_args(argv)
    device = args.device.split(":")[0]
    if device not in ("cpu", "cuda"):
        parser.error("--device must be cpu or cuda")
    args.dtype = args.dtype or ("bf16" if device == "cuda" else "fp32")
    args.modes = args.modes or (list(MODES) if device == "cuda" else ["default"])
    if args.jobs < 1 or args.processes < 1:
        parser.error("--jobs and --processes must be at least 1")
    if args.gpus is not None and (args.gpus < 1 or device != "cuda"):
        parser.error("--gpus takes a number of cards, at least 1, and --device cuda")
    if args.results is None:
        args.results = ROOT / "benchmarks" / "results" / f"models_{device}.jsonl"
    return args


def main(argv: list[str] | None = None) -> None:
    run(parse_args(argv))


if __name__ == "__main__":
    main()

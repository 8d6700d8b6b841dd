"""One row of the model suite: a model, a backend and a mode, in this process.

    python -m benchmarks.models.runner --model resnet50 --backend mlir --mode default \\
        --device cuda --dtype bf16 --row-file /tmp/row.json [--lock /tmp/suite.lock]

The suite (suite.py) starts one such process per row, so that a crash or a hang costs one
row; tests call run_row in their own process. The row (a JSON object) is written to
--row-file at each phase, so that the suite can tell where a process that died stopped;
statuses: pass, fail_accuracy, fail_to_run (the compiled model raised), eager_fail, and
the suite's timeout. See benchmarks/README.md, "Model suite".
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from benchmarks.models import catalog, measure
from benchmarks.models.forward import run_forward
from benchmarks.models.generation import run_generate
from benchmarks.models.interpreter_rounding import rounding_bfloat16_to_nearest_even
from benchmarks.models.train import run_train
from benchmarks.run import one_malloc_policy

BACKENDS = ("inductor", "mlir")
MODES = ("default", "reduce-overhead")
WARMUP = 3
REPEATS = 15
RUNS = {"forward": run_forward, "generate": run_generate, "train": run_train}


def find_spec(name: str, kind: str, dtype: str) -> catalog.ModelSpec:
    """The row of `name` and `kind` that runs in `dtype`: one pinned to it first."""
    specs = [s for s in catalog.load_catalog() if (s.name, s.kind) == (name, kind)
             and s.dtype in (dtype, None)]
    if not specs:
        raise KeyError(f"no {kind} model {name!r} in {dtype} in {catalog.LIST_FILE}")
    return min(specs, key=lambda s: s.dtype is None)


def run_row(name: str, backend: str, mode: str = "default", device: str = "cpu",
            dtype: str = "fp32", kind: str = "forward", options: dict | None = None,
            tiny: bool = False, warmup: int = WARMUP, repeats: int = REPEATS,
            lock: Path | None = None, row_file: Path | None = None) -> dict:
    """Measure one row and return it. `options` go to tessel (mlir only); `tiny` builds
    the hf models' tiny configs; `repeats` timed calls of each of eager and compiled
    (0: accuracy alone); `lock` serializes timing with other processes."""
    if backend not in BACKENDS or mode not in MODES:
        raise ValueError(f"backend must be one of {BACKENDS}, mode one of {MODES}")
    if warmup < 1 or repeats < 0:
        raise ValueError("warmup must be at least 1, repeats at least 0 (0: no timing)")
    spec = find_spec(name, kind, dtype)
    start = time.perf_counter()
    row = measure.Row(row_file, model=name, source=spec.source, kind=kind, backend=backend,
                      mode=mode, device=torch.device(device).type, dtype=dtype, tiny=tiny,
                      options=options, warmup=warmup, repeats=repeats,
                      env={**measure.environment(device),
                           "malloc": one_malloc_policy(device)})
    row.phase("build")
    with rounding_bfloat16_to_nearest_even():
        RUNS[kind](spec, row, backend, mode, device, measure.DTYPES[dtype], options, tiny,
                   warmup, repeats, lock)
    row["wall_s"] = time.perf_counter() - start
    row.phase("done")
    return row


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--kind", default="forward", choices=catalog.KINDS)
    parser.add_argument("--backend", required=True, choices=BACKENDS)
    parser.add_argument("--mode", default="default", choices=MODES)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="fp32", choices=measure.DTYPES)
    parser.add_argument("--options", type=json.loads, default=None,
                        help="tessel options, a JSON object (mlir only)")
    parser.add_argument("--tiny", action="store_true", help="tiny configs of the hf models")
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help="timed calls of each of eager and compiled; 0: accuracy alone")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads value")
    parser.add_argument("--lock", type=Path, default=None,
                        help="file locked around the timed calls (the suite's)")
    parser.add_argument("--row-file", type=Path, default=None,
                        help="where the row is written as it progresses (else printed)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if torch.device(args.device).type == "cuda":
        torch.cuda.set_device(torch.device(args.device).index or 0)
    row = run_row(args.model, args.backend, args.mode, args.device, args.dtype, args.kind,
                  args.options, args.tiny, args.warmup, args.repeats, args.lock, args.row_file)
    if args.row_file is None:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

"""Distributed training steps side by side: eager, Inductor and mlir, under torchrun.

Usage (one process per device; gloo on the CPU, NCCL on CUDA):
    torchrun --nproc-per-node 2 -m benchmarks.distributed --device cpu \\
        --output benchmarks/results/distributed_cpu.md
    torchrun --nproc-per-node 2 -m benchmarks.distributed --device cuda --output $OUT/dist.md

Suites (`--suites`):
- ddp: a residual MLP's training step (SGD, MSE) with `DDP(torch.compile(model))`, each
  backend in each `--modes` mode, under `--autocast` (bf16 on CUDA by default).
- fsdp: a GPT-2-sized language model (transformers' GPT2 config, random weights, no
  dropout) sharded with FSDP2 (`fully_shard` per block and at the root, parameters in
  bf16, gradients reduced in fp32), each block compiled; step time and peak memory
  per device (the largest over ranks).

Each backend trains its own copy of the same initial model on the same batches (each
rank its own). Timing: `--warmup` steps (the first, compile included, reported), then
`--rounds` rounds in which every backend of the suite runs `--steps` steps in turn,
each step synchronized (its loss read); the step time is the median, the largest
over ranks. Loss check (`--check-steps`, in fp32 without autocast, TF32 off): every
backend's losses against eager's, step by step, within `--rtol` relative.

A case that fails (compile, run, a mismatch) is recorded with its error and the run
goes on. Results: one JSON line per case (`<output>.jsonl`) as soon as it finished,
and a markdown report (`<output>`, rewritten after each case), printed at the end.
`--time-budget` seconds after the start, the cases not started yet are skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.distributed as dist

from benchmarks.residual_mlp import ResidualMLP
from benchmarks.run import environment

BACKENDS = ("eager", "inductor", "mlir")


def dynamo_backend(backend: str):
    """What torch.compile's `backend` takes for `backend`: tessel's callable for mlir,
    whose name comes from an entry point that a checkout used through PYTHONPATH
    alone (the GPU machines) does not install."""
    if backend != "mlir":
        return backend
    from tessel.frontend.backend import mlir_backend
    return mlir_backend


def compiler(backend: str, mode: str):
    """module -> module, compiled by `backend` in `mode` (eager: as it is)."""
    if backend == "eager":
        return lambda module: module
    return lambda module: torch.compile(module, backend=dynamo_backend(backend), mode=mode)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Suite:
    """One model and parallel wrapping; its cases are (backend, mode, precision)."""
    name: str

    def __init__(self, args, device: torch.device):
        self.args, self.device = args, device

    def build(self, backend: str, mode: str, check: bool):
        """A model ready to train (parallel, compiled) and its step function."""
        raise NotImplementedError

    def batches(self, count: int) -> list:
        raise NotImplementedError


class DDPSuite(Suite):
    name = "ddp"

    def __init__(self, args, device):
        super().__init__(args, device)
        torch.manual_seed(0)
        self.initial = ResidualMLP(args.ddp_width, args.ddp_depth)

    def batches(self, count):
        generator = torch.Generator().manual_seed(1 + dist.get_rank())
        shape = (self.args.ddp_batch, self.args.ddp_width)
        return [(torch.randn(shape, generator=generator).to(self.device),
                 torch.randn(shape, generator=generator).to(self.device))
                for _ in range(count)]

    def build(self, backend, mode, check):
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = copy.deepcopy(self.initial).to(self.device)
        ids = [self.device.index] if self.device.type == "cuda" else None
        model = DDP(compiler(backend, mode)(model), device_ids=ids)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        autocast = autocasting(self.device, None if check else self.args.autocast)

        def step(inputs, target):
            optimizer.zero_grad(set_to_none=True)
            with autocast():
                loss = torch.nn.functional.mse_loss(model(inputs).float(), target)
            loss.backward()
            optimizer.step()
            return loss
        return step


class FSDPSuite(Suite):
    name = "fsdp"

    def __init__(self, args, device):
        super().__init__(args, device)
        from transformers import GPT2Config, GPT2LMHeadModel
        self.config = GPT2Config(
            n_layer=args.gpt2_layers, n_embd=args.gpt2_width, n_head=args.gpt2_heads,
            n_positions=args.gpt2_tokens, vocab_size=args.gpt2_vocab,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
        torch.manual_seed(0)
        self.initial = GPT2LMHeadModel(self.config)

    def batches(self, count):
        generator = torch.Generator().manual_seed(1 + dist.get_rank())
        shape = (self.args.gpt2_batch, self.args.gpt2_tokens)
        return [(torch.randint(self.config.vocab_size, shape, generator=generator)
                 .to(self.device),) for _ in range(count)]

    def build(self, backend, mode, check):
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        model = copy.deepcopy(self.initial).to(self.device)
        policy = (MixedPrecisionPolicy() if check else
                  MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))
        for block in model.transformer.h:
            if backend != "eager":
                block.compile(backend=dynamo_backend(backend), mode=mode)
            fully_shard(block, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(tokens):
            optimizer.zero_grad(set_to_none=True)
            loss = model(input_ids=tokens, labels=tokens).loss
            loss.backward()
            optimizer.step()
            return loss
        return step


SUITES = {suite.name: suite for suite in (DDPSuite, FSDPSuite)}


def autocasting(device: torch.device, dtype: str | None):
    if dtype in (None, "none"):
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=getattr(torch, dtype))


def largest_over_ranks(value: float) -> float:
    tensor = torch.tensor([value], dtype=torch.float64, device=_collective_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.item()


def _collective_device() -> torch.device:
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_ranks_agree(ok: bool) -> bool:
    """Whether every rank's `ok` is true (a collective: every rank must call it)."""
    return largest_over_ranks(0.0 if ok else 1.0) == 0.0


def losses_of(suite: Suite, backend: str, mode: str, steps: int) -> list[float]:
    step = suite.build(backend, mode, check=True)
    return [step(*batch).item() for batch in suite.batches(steps)]


def measured(suite: Suite, cases: list[tuple[str, str]], args, within_budget) -> dict:
    """Per case: the first step's seconds, the median step time over the timed steps
    (alternating between cases round by round), tessel's counters after the warm-up,
    and on CUDA the peak memory of its build and warm-up: the most allocated then
    beyond what was allocated before (the cases built earlier, idle meanwhile)."""
    import tessel
    steps, records, batches = {}, {}, suite.batches(args.warmup + args.rounds * args.steps)
    torch._dynamo.reset()
    for case in cases:
        record = records[case] = {"times": [], "losses": []}
        if not within_budget():
            record["error"] = "skipped: time budget spent"
            continue
        tessel.reset_stats()
        try:
            if suite.device.type == "cuda":
                synchronize(suite.device)
                before = torch.cuda.memory_allocated(suite.device)
                torch.cuda.reset_peak_memory_stats(suite.device)
            step = suite.build(*case, check=False)
            start = time.perf_counter()
            record["losses"].append(step(*batches[0]).item())
            record["first_step_s"] = time.perf_counter() - start
            for batch in batches[1:args.warmup]:
                mark_step()
                record["losses"].append(step(*batch).item())
            if suite.device.type == "cuda":
                peak = torch.cuda.max_memory_allocated(suite.device) - before
                record["peak_memory_gb"] = peak / 2**30
            record["tessel"] = tessel.stats()
        except Exception as error:  # noqa: BLE001 -- one failing case costs one row
            record["error"] = failure(error)
        if all_ranks_agree("error" not in record):
            steps[case] = step
        else:
            record.setdefault("error", "failed on another rank")
    for round_index in range(args.rounds):
        for case, step in list(steps.items()):
            first = args.warmup + round_index * args.steps
            try:
                for batch in batches[first:first + args.steps]:
                    mark_step()
                    start = time.perf_counter()
                    record = records[case]
                    record["losses"].append(step(*batch).item())
                    synchronize(suite.device)
                    record["times"].append(time.perf_counter() - start)
            except Exception as error:  # noqa: BLE001
                records[case]["error"] = failure(error)
            if not all_ranks_agree("error" not in records[case]):
                records[case].setdefault("error", "failed on another rank")
                del steps[case]
    return records


def mark_step() -> None:
    """A new training step for CUDA graph trees (reduce-overhead): outputs of the last
    one may be overwritten."""
    if torch.cuda.is_available():
        torch.compiler.cudagraph_mark_step_begin()


def failure(error: Exception) -> str:
    print(traceback.format_exc(), file=sys.stderr, flush=True)
    first = next(iter(str(error).strip().splitlines()), "")
    return f"{type(error).__name__}: {first[:300]}"


class Report:
    """Results as JSON lines (appended per case) and markdown (rewritten per case),
    written by rank 0."""

    def __init__(self, output: Path, env: dict, writes: bool):
        self.output, self.env, self.writes, self.rows = output, env, writes, []
        self.lines = output.with_suffix(".jsonl")
        if writes:
            output.parent.mkdir(parents=True, exist_ok=True)
            self.lines.write_text(json.dumps({"environment": env}) + "\n")

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if self.writes:
            print(f"[distributed] {json.dumps(row)}", file=sys.stderr, flush=True)
            with self.lines.open("a") as lines:
                lines.write(json.dumps(row) + "\n")
            self.output.write_text(self.markdown())

    def markdown(self) -> str:
        lines = ["# Distributed training steps: eager, Inductor and mlir", ""]
        lines += [f"- {key}: {value}" for key, value in self.env.items()] + [""]
        timed = [r for r in self.rows if r["kind"] == "timing"]
        lines += ["## Step time", "",
                  ("| suite | backend | mode | step ms (median, max over ranks) | vs eager | "
                   "vs inductor | first step s | peak GB per device | status |"),
                  "|---|---|---|---|---|---|---|---|---|"]
        for row in timed:
            eager = _reference(timed, row, "eager")
            inductor = _reference(timed, row, "inductor")
            lines.append(
                f"| {row['suite']} | {row['backend']} | {row['mode']} | {_fmt(row.get('step_ms'), '.2f')} | "
                f"{_ratio(eager, row)} | {_ratio(inductor, row)} | "
                f"{_fmt(row.get('first_step_s'), '.2f')} | {_fmt(row.get('peak_memory_gb'), '.2f')} | "
                f"{row.get('error') or 'ok'} |")
        checks = [r for r in self.rows if r["kind"] == "loss_check"]
        if checks:
            lines += ["", f"## Loss check ({self.env['check steps']} steps, fp32, against eager)", "",
                      "| suite | backend | mode | largest relative difference | status |",
                      "|---|---|---|---|---|"]
            lines += [f"| {r['suite']} | {r['backend']} | {r['mode']} | "
                      f"{_fmt(r.get('max_relative_difference'), '.2e')} | "
                      f"{r.get('error') or ('pass' if r.get('passed') else 'FAIL')} |" for r in checks]
        return "\n".join(lines) + "\n"


def _reference(rows: list[dict], row: dict, backend: str) -> dict | None:
    mode = "default" if backend == "eager" else row["mode"]
    return next((r for r in rows if r["suite"] == row["suite"] and r["backend"] == backend
                 and r["mode"] == mode and r.get("step_ms")), None)


def _ratio(reference: dict | None, row: dict) -> str:
    if reference is None or not row.get("step_ms"):
        return "—"
    return f"{reference['step_ms'] / row['step_ms']:.2f}x"


def _fmt(value, spec: str) -> str:
    return "—" if value is None else f"{value:{spec}}"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git checkout)"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cuda = torch.cuda.is_available()
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if cuda else "cpu")
    parser.add_argument("--suites", default=None, help="comma-separated: ddp,fsdp "
                        "(default: ddp on the CPU, both on CUDA)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--modes", default=None, help="comma-separated torch.compile modes "
                        "of the ddp suite (default: default on the CPU, "
                        "default,reduce-overhead on CUDA)")
    parser.add_argument("--autocast", default=None, choices=("none", "bfloat16", "float16"),
                        help="ddp suite's autocast dtype (default: bfloat16 on CUDA, none on the CPU)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per case per round")
    parser.add_argument("--check-steps", type=int, default=10)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--no-check", action="store_true", help="skip the loss check")
    parser.add_argument("--time-budget", type=float, default=540.0, help="seconds")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads per process (default: cores / processes)")
    parser.add_argument("--ddp-width", type=int, default=None)
    parser.add_argument("--ddp-depth", type=int, default=4)
    parser.add_argument("--ddp-batch", type=int, default=None)
    parser.add_argument("--gpt2-layers", type=int, default=12)
    parser.add_argument("--gpt2-width", type=int, default=768)
    parser.add_argument("--gpt2-heads", type=int, default=12)
    parser.add_argument("--gpt2-vocab", type=int, default=50257)
    parser.add_argument("--gpt2-tokens", type=int, default=512)
    parser.add_argument("--gpt2-batch", type=int, default=8)
    parser.add_argument("--note", default=None, help="a line for the report's header "
                        "(the machine's state, say)")
    parser.add_argument("--output", type=Path, required=True,
                        help="markdown report; the JSON lines go next to it (.jsonl)")
    args = parser.parse_args(argv)
    on_cuda = args.device == "cuda"
    args.suites = (args.suites or ("ddp,fsdp" if on_cuda else "ddp")).split(",")
    args.backends = args.backends.split(",")
    args.modes = (args.modes or ("default,reduce-overhead" if on_cuda else "default")).split(",")
    args.autocast = args.autocast or ("bfloat16" if on_cuda else "none")
    # On CUDA, compute (0.4 TFLOP a step) and the all-reduce (134 MB) of about a
    # millisecond each on H200s; on the CPU, the all-reduce (8 MB) dominates.
    args.ddp_width = args.ddp_width or (1024 if on_cuda else 256)
    args.ddp_batch = args.ddp_batch or (2048 if on_cuda else 64)
    for name, given, known in (("suites", args.suites, SUITES), ("backends", args.backends, BACKENDS)):
        if unknown := set(given) - set(known):
            parser.error(f"unknown {name} {sorted(unknown)}; known: {', '.join(known)}")
    return args


def setup(args) -> torch.device:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if "RANK" not in os.environ:  # a plain `python -m`: a world of one
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "29531"))
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device, timeout=datetime.timedelta(seconds=300))
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // world))
    # Every case compiles the same model code again, with another backend or mode.
    torch._dynamo.config.recompile_limit = torch._dynamo.config.accumulated_recompile_limit = 256
    return device


def cases_of(suite: Suite, args) -> list[tuple[str, str]]:
    modes = args.modes if suite.name == "ddp" else ["default"]
    return [("eager", "default")] * ("eager" in args.backends) + [
        (backend, mode) for mode in modes for backend in args.backends if backend != "eager"]


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    start = time.perf_counter()
    device = setup(args)
    rank = dist.get_rank()
    env = environment(str(device), torch.get_num_threads(), args.rounds * args.steps)
    env.update({"processes": f"{dist.get_world_size()} ({dist.get_backend()})",
                "tessel commit": commit(),
                "timing": f"{args.warmup} warm-up steps (the first one's time reported, "
                          f"compile included, with the caches found on the machine), then "
                          f"{args.rounds} rounds of {args.steps} steps per case, cases "
                          "alternating", "check steps": args.check_steps})
    if "ddp" in args.suites:
        env["ddp model"] = (f"residual MLP, {args.ddp_depth} blocks of width {args.ddp_width}, "
                            f"batch {args.ddp_batch} per rank, autocast {args.autocast}")
    if "fsdp" in args.suites:
        env["fsdp model"] = (f"GPT-2 config, {args.gpt2_layers} layers, width {args.gpt2_width}, "
                             f"{args.gpt2_heads} heads, vocab {args.gpt2_vocab}, batch "
                             f"{args.gpt2_batch} x {args.gpt2_tokens} tokens per rank, "
                             "parameters in bf16, gradients reduced in fp32")
    if args.note:
        env["note"] = args.note
    report = Report(args.output, env, writes=rank == 0)

    def within_budget() -> bool:  # rank 0's clock decides, for every rank alike
        return all_ranks_agree(rank != 0 or time.perf_counter() - start < args.time_budget)

    suites = []
    for name in args.suites:
        try:
            suites.append(SUITES[name](args, device))
        except Exception as error:  # noqa: BLE001 -- e.g. transformers missing
            report.add({"kind": "timing", "suite": name, "backend": "—", "mode": "—",
                        "error": failure(error)})
    # Step times first, the loss checks (a compile each, in fp32) after them.
    for suite in suites:
        for case, record in measured(suite, cases_of(suite, args), args, within_budget).items():
            report.add(summarized(suite.name, case, record))
    for suite in suites if not args.no_check else ():
        check(suite, args, report, within_budget)
    if rank == 0:
        print(report.markdown())
    dist.destroy_process_group()


def check(suite: Suite, args, report: Report, within_budget) -> None:
    """Every backend's fp32 losses over `--check-steps` against eager's (default mode),
    with TF32 off."""
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    eager = None
    for backend in ["eager", *(b for b in args.backends if b != "eager")]:
        if not within_budget():
            break
        row = {"kind": "loss_check", "suite": suite.name, "backend": backend, "mode": "default"}
        torch._dynamo.reset()
        try:
            losses = losses_of(suite, backend, "default", args.check_steps)
        except Exception as error:  # noqa: BLE001 -- one failing case costs one row
            losses, row["error"] = None, failure(error)
        if not all_ranks_agree(losses is not None):
            row.setdefault("error", "failed on another rank")
        elif backend == "eager":
            eager = losses
            continue
        elif eager is None:
            row["error"] = "no eager losses to compare with"
        else:
            difference = max(abs(a - b) / abs(b) for a, b in zip(losses, eager))
            row.update(max_relative_difference=largest_over_ranks(difference),
                       losses=losses, eager_losses=eager)
            row["passed"] = row["max_relative_difference"] <= args.rtol
        report.add(row)
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def summarized(suite: str, case: tuple[str, str], record: dict) -> dict:
    backend, mode = case
    ok = all_ranks_agree("error" not in record and bool(record["times"]))
    row = {"kind": "timing", "suite": suite, "backend": backend, "mode": mode}
    if not ok:
        row["error"] = record.get("error", "failed on another rank")
        return row
    row.update(step_ms=largest_over_ranks(1000 * statistics.median(record["times"])),
               first_step_s=largest_over_ranks(record["first_step_s"]),
               timed_steps=len(record["times"]),
               first_losses=record["losses"][:3])
    if "peak_memory_gb" in record:
        row["peak_memory_gb"] = largest_over_ranks(record["peak_memory_gb"])
    if backend == "mlir":
        stats = record["tessel"]
        row.update(graphs_compiled=stats["graphs_compiled"],
                   graphs_fallback=stats["graphs_fallback"],
                   fallback_reasons=stats["fallback_reasons"][:5])
    return row


if __name__ == "__main__":
    main()

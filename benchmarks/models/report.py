"""Report of a model-suite run: CSV, Markdown and a PNG of speedups over eager.

    python -m benchmarks.models.report RESULTS.jsonl [--output-dir benchmarks/results]

writes models_<device>.csv, .md and .png, and models_<device>_train.png for the train rows
(the plots where matplotlib is installed). Per kind, dtype, backend and mode: the pass rate, how many mlir rows ran nothing eagerly but native ops,
the geomean speedup over eager and how many models ran slower than 0.95x eager, the
geomean ratio to Inductor, the mean first-call seconds and the geomean peak memory
against Inductor's. Performance figures are over passing rows only, as in PyTorch's
harness. A model's ratio to Inductor is its mlir speedup over its inductor speedup in
the same mode, each against the eager median of its own process; its time ratio is
Inductor's compiled median over mlir's (for a generation row, mlir's tokens/s over
Inductor's), which leaves out the eager medians: each row times eager in its own
process while other rows compile, and those medians differ between the two rows of one
model by up to 2x on the GPU machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path

from benchmarks.models.measure import STATUSES, VERSIONS
from benchmarks.models.suite import ROOT, git_commit, row_key
from benchmarks.run import fmt, geomean, ratio, table

SLOWER = 0.95                   # a speedup below this counts as slower than eager
REASONS_CHARS = 120             # fallback reasons and errors, truncated in the Markdown
COLUMNS = ("model", "source", "kind", "dtype", "backend", "mode", "status", "speedup",
           "vs_inductor", "time_vs_inductor", "eager_ms", "compiled_ms", "first_call_s", "graphs_compiled",
           "forward_graphs_compiled", "backward_graphs_compiled", "graphs_split",
           "graphs_fallback", "kernels", "dynamo_graphs", "graph_breaks", "peak_memory_mib",
           "memory_vs_inductor", "nothing_eager", "eager_tokens_per_s", "tokens_per_s",
           "matching_tokens", "reference", "max_abs_error", "inaccurate", "fallback_reasons",
           "native_ops", "error")


def load_rows(path: Path) -> list[dict]:
    """The results' rows, the last of each key where a row was run again; of a row run
    in several processes (suite --processes), the median one (median_process)."""
    rows = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row_key(row)] = row
    processes: dict[tuple, list[dict]] = {}
    for row in rows.values():
        processes.setdefault(row_key(row, with_process=False), []).append(row)
    return [median_process(runs) for runs in processes.values()]


def median_process(runs: list[dict]) -> dict:
    """Of one row's runs in separate processes, a failed one if any (a failure shows),
    else the one whose measure (tokens/s for a generate row, else the speedup over
    eager) is the median, the lower of two; with the number of runs and the measure's
    range among them."""
    if len(runs) == 1:
        return runs[0]
    failed = [run for run in runs if not passed(run)]
    if failed:
        return failed[0] | {"processes": len(runs)}
    measure = "tokens_per_s" if runs[0]["kind"] == "generate" else "speedup"
    ordered = sorted(runs, key=lambda run: run.get(measure) or 0.0)
    values = [run.get(measure) or 0.0 for run in ordered]
    return ordered[(len(ordered) - 1) // 2] | {"processes": len(runs),
                                                "measure_range": (values[0], values[-1])}


def nothing_eager(row: dict) -> bool | None:
    """For an mlir row that ran: whether tessel compiled every graph, leaving to PyTorch
    only the ops it leaves native by choice (native_ops); for a train row, a backward
    graph among them."""
    if row["backend"] != "mlir" or "graphs_compiled" not in row:
        return None
    backward = row["kind"] != "train" or row.get("backward_graphs_compiled", 0) >= 1
    return (not row["fallback_reasons"] and row["graphs_fallback"] == 0
            and row["graphs_compiled"] >= 1 and backward)


def add_derived(rows: list[dict]) -> None:
    """Per mlir row, its ratio to the inductor row of the same model and mode (speedup and
    peak memory); per row, peak memory in MiB and nothing_eager."""
    by_key = {(r["model"], r["kind"], r["dtype"], r["mode"], r["backend"]): r for r in rows}
    for row in rows:
        row["nothing_eager"] = nothing_eager(row)
        peak = row.get("peak_memory")
        row["peak_memory_mib"] = None if peak is None else peak / 2**20
        inductor = by_key.get((row["model"], row["kind"], row["dtype"], row["mode"], "inductor"))
        if row["backend"] == "mlir" and inductor and passed(row) and passed(inductor):
            row["vs_inductor"] = ratio(row.get("speedup"), inductor.get("speedup"))
            row["time_vs_inductor"] = ratio(inductor.get("compiled_ms"), row.get("compiled_ms"))
            row["memory_vs_inductor"] = ratio(peak, inductor.get("peak_memory"))


def passed(row: dict) -> bool:
    return row["status"] == "pass"


def summary(rows: list[dict]) -> list[dict]:
    """One line per kind, dtype, backend and mode."""
    lines = []
    groups = sorted({(r["kind"], r["dtype"], r["backend"], r["mode"]) for r in rows})
    for kind, dtype, backend, mode in groups:
        group = [r for r in rows
                 if (r["kind"], r["dtype"], r["backend"], r["mode"]) == (kind, dtype, backend, mode)]
        good = [r for r in group if passed(r)]
        speedups = [r["speedup"] for r in good if r.get("speedup")]
        first_calls = [r["first_call_s"] for r in group
                       if r.get("first_call_s") is not None and not r.get("warm_caches")]
        eager_free = [r for r in group if r["nothing_eager"]]
        lines.append({
            "kind": kind, "dtype": dtype, "backend": backend, "mode": mode,
            "pass": f"{len(good)}/{len(group)}",
            "statuses": {s: n for s in STATUSES if (n := sum(r["status"] == s for r in group))},
            "nothing_eager": f"{len(eager_free)}/{len(group)}" if backend == "mlir" else None,
            "geomean_speedup": geomean(speedups),
            "slower_than_eager": sum(s < SLOWER for s in speedups),
            "geomean_vs_inductor": geomean([r["vs_inductor"] for r in good
                                            if r.get("vs_inductor")]),
            "geomean_time_vs_inductor": geomean([r["time_vs_inductor"] for r in good
                                                 if r.get("time_vs_inductor")]),
            "mean_first_call_s": statistics.mean(first_calls) if first_calls else None,
            "geomean_memory_vs_inductor": geomean([r["memory_vs_inductor"] for r in good
                                                   if r.get("memory_vs_inductor")]),
        })
    return lines


def distinct(rows: list[dict], get) -> str:
    values = sorted({str(v) for r in rows if (v := get(r)) is not None})
    return ", ".join(values) or "unknown"


def header(rows: list[dict]) -> list[str]:
    """Machine, versions, dates and commits of the rows (several where they differ)."""
    commit = distinct(rows, lambda r: r.get("commit"))
    if commit == "unknown" and (here := git_commit()):  # a run from a copy without git
        commit = f"{here} (this checkout's, at report time: the run recorded none)"
    dates = sorted(r["date"] for r in rows if r.get("date"))
    lines = [f"- date: {dates[0]} to {dates[-1]}" if dates else "- date: unknown",
             f"- commit: {commit}",
             f"- gpu: {distinct(rows, lambda r: r.get('env', {}).get('gpu'))}",
             f"- cpu: {distinct(rows, lambda r: r.get('env', {}).get('cpu'))}",
             f"- python: {distinct(rows, lambda r: r.get('env', {}).get('python'))}",
             f"- malloc: {distinct(rows, lambda r: r.get('env', {}).get('malloc', 'unrecorded'))}"]
    lines += [f"- {name}: {distinct(rows, lambda r: r.get('env', {}).get(name))}"
              for name in VERSIONS]
    loads = [r["env"]["load_average"] for r in rows if "load_average" in r.get("env", {})]
    if loads:
        lines.append(f"- load average (1 min) at the rows' starts: {min(loads)} to {max(loads)}")
    lines.append(f"- dtype: {distinct(rows, lambda r: r.get('dtype'))}; tiny configs: "
                 f"{distinct(rows, lambda r: r.get('tiny'))}; tessel options: "
                 f"{distinct(rows, lambda r: json.dumps(r.get('options')))}")
    lines.append(f"- warm-up calls: {distinct(rows, lambda r: r.get('warmup'))}; timed calls "
                 f"of each of eager and compiled: {distinct(rows, lambda r: r.get('repeats'))}")
    return lines


def truncated(values, limit: int = REASONS_CHARS) -> str:
    text = "; ".join(values) if isinstance(values, list) else str(values or "")
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def bool_cell(value) -> str:
    return "—" if value is None else ("yes" if value else "no")


def measured_cell(row: dict, key: str, spec: str, unit: str = "") -> str:
    """row[key] formatted; where the row is the median of its processes and `key` their
    measure, with the measure's range among them."""
    cell = fmt(row.get(key), spec, unit)
    if "measure_range" in row and key == ("tokens_per_s" if row["kind"] == "generate"
                                          else "speedup"):
        low, high = row["measure_range"]
        cell += f" ({fmt(low, spec, unit)} to {fmt(high, spec, unit)}, {row['processes']} processes)"
    return cell


def markdown(rows: list[dict], lines_: list[dict], device: str) -> str:
    out = [f"# Model suite on {device}", ""] + header(rows) + ["", "## Summary", ""]
    out += table(
        ["kind", "dtype", "backend", "mode", "pass", "statuses", "nothing eager but native ops",
         "geomean speedup over eager", f"slower than {SLOWER}x eager",
         "geomean mlir / inductor", "geomean inductor time / mlir time", "mean first call s",
         "geomean peak memory / inductor's"],
        [[s["kind"], s["dtype"], s["backend"], s["mode"], s["pass"],
          ", ".join(f"{k} {v}" for k, v in s["statuses"].items()), s["nothing_eager"] or "—",
          fmt(s["geomean_speedup"], ".2f", "x"), str(s["slower_than_eager"]),
          fmt(s["geomean_vs_inductor"], ".2f", "x"), fmt(s["geomean_time_vs_inductor"], ".2f", "x"),
          fmt(s["mean_first_call_s"], ".1f"),
          fmt(s["geomean_memory_vs_inductor"], ".2f", "x")] for s in lines_])
    forward = [r for r in rows if r["kind"] == "forward"]
    if forward:
        out += ["", "## Forward rows", ""]
        out += table(
            ["model", "source", "mode", "backend", "status", "speedup", "vs inductor",
             "first call s", "graphs compiled / split / fallback", "kernels", "peak MiB",
             "fallback reasons or error"],
            [[r["model"], r["source"], r["mode"], r["backend"], r["status"],
              measured_cell(r, "speedup", ".2f", "x"), fmt(r.get("vs_inductor"), ".2f", "x"),
              first_call_cell(r), graphs_cell(r),
              str(r.get("kernels", "—")), fmt(r["peak_memory_mib"], ".0f"),
              truncated(r.get("error") or r.get("fallback_reasons"))]
             for r in forward])
    generate = [r for r in rows if r["kind"] == "generate"]
    if generate:
        out += ["", "## Generation rows (greedy, static cache, compiled forward)", ""]
        out += table(
            ["model", "mode", "backend", "status", "eager tokens/s", "tokens/s", "speedup",
             "vs inductor", "leading tokens equal eager's", "first step's logits same",
             "first call s", "fallback reasons or error"],
            [[r["model"], r["mode"], r["backend"], r["status"],
              fmt(r.get("eager_tokens_per_s"), ".0f"), measured_cell(r, "tokens_per_s", ".0f"),
              fmt(r.get("speedup"), ".2f", "x"), fmt(r.get("vs_inductor"), ".2f", "x"),
              f"{r['matching_tokens']}/{r['new_tokens']}" if "matching_tokens" in r else "—",
              bool_cell(r.get("first_logits_same")), first_call_cell(r),
              truncated(r.get("error") or r.get("fallback_reasons"))]
             for r in generate])
    train = [r for r in rows if r["kind"] == "train"]
    if train:
        out += ["", ("## Train rows (one step: zero_grad, forward, loss, backward, SGD step; "
                     "bf16 = autocast)"), ""]
        out += table(
            ["model", "source", "dtype", "mode", "backend", "status", "step speedup",
             "vs inductor", "first step s",
             "graphs compiled (forward / backward) / split / fallback", "kernels", "peak MiB",
             "inaccurate tensors, fallback reasons or error"],
            [[r["model"], r["source"], r["dtype"], r["mode"], r["backend"], r["status"],
              measured_cell(r, "speedup", ".2f", "x"), fmt(r.get("vs_inductor"), ".2f", "x"),
              first_call_cell(r), graphs_cell(r), str(r.get("kernels", "—")),
              fmt(r["peak_memory_mib"], ".0f"),
              truncated(r.get("error") or r.get("inaccurate") or r.get("fallback_reasons"))]
             for r in train])
    return "\n".join(out) + "\n"


def first_call_cell(row: dict) -> str:
    """The first call's seconds; "(warm)" where the row compiled with its other mode's
    caches filled (suite --share-caches)."""
    seconds = fmt(row.get("first_call_s"), ".1f")
    return f"{seconds} (warm)" if row.get("warm_caches") else seconds


def graphs_cell(row: dict) -> str:
    if "graphs_compiled" not in row:
        return "—"
    compiled = str(row["graphs_compiled"])
    if row["kind"] == "train":
        compiled += f" ({row['forward_graphs_compiled']} / {row['backward_graphs_compiled']})"
    return f"{compiled} / {row['graphs_split']} / {row['graphs_fallback']}"


def write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: "; ".join(value) if isinstance(value, list) else value
                             for key, value in row.items()})


def plot_label(row: dict) -> str:
    if row["kind"] == "train":
        return f"{row['model']} ({row['dtype']})"
    return row["model"] if row["kind"] == "forward" else f"{row['model']} (generate)"


def plot(rows: list[dict], path: Path, title: str) -> bool:
    """Speedup over eager per model, one panel per mode, a bar per backend (0 where the
    row did not pass); False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = sorted({r["mode"] for r in rows})
    models = list(dict.fromkeys(map(plot_label, rows)))
    backends = sorted({r["backend"] for r in rows})
    fig, axes = plt.subplots(len(modes), 1, figsize=(max(10, 0.32 * len(models)), 4 * len(modes)),
                             squeeze=False)
    width = 0.8 / (len(backends) + 1)
    for ax, mode in zip(axes[:, 0], modes):
        ax.bar(range(len(models)), [1.0] * len(models), width, label="eager",
               color="lightgray", align="edge")
        for i, backend in enumerate(backends):
            speedups = {plot_label(r): r.get("speedup") or 0.0 for r in rows
                        if r["mode"] == mode and r["backend"] == backend and passed(r)}
            ax.bar([x + (i + 1) * width for x in range(len(models))],
                   [speedups.get(m, 0.0) for m in models], width, label=backend, align="edge")
        ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
        ax.set_xticks([x + 0.4 for x in range(len(models))], models, rotation=90, fontsize=7)
        ax.set_ylabel("speedup over eager")
        ax.set_title(f"{title}, mode {mode} (no bar: the row did not pass)", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a JSON lines file of benchmarks.models.suite")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    rows = sorted(load_rows(args.results),
                  key=lambda r: (r["kind"], r["model"], r["mode"], r["backend"]))
    if not rows:
        parser.error(f"{args.results} holds no rows")
    add_derived(rows)
    device = distinct(rows, lambda r: r.get("device"))
    stem = args.output_dir / f"models_{device}"
    args.output_dir.mkdir(parents=True, exist_ok=True)
    lines_ = summary(rows)
    report = markdown(rows, lines_, device)
    stem.with_suffix(".md").write_text(report)
    write_csv(rows, stem.with_suffix(".csv"))
    title = distinct(rows, lambda r: r.get("env", {}).get("gpu") or r.get("env", {}).get("cpu"))
    written = [stem.with_suffix(".md"), stem.with_suffix(".csv")]
    inference = [r for r in rows if r["kind"] != "train"]
    train = [r for r in rows if r["kind"] == "train"]
    for plotted, path, what in ((inference, stem.with_suffix(".png"), "inference"),
                                (train, stem.with_name(f"{stem.name}_train.png"), "train step")):
        if plotted and plot(plotted, path, f"{title}, {what}"):
            written.append(path)
    print("\n## ".join(report.split("\n## ")[:2]).rstrip())  # the header and the summary
    print("wrote " + ", ".join(map(str, written)))


if __name__ == "__main__":
    main()

"""Plot a results JSON from benchmarks/run.py as speedup-over-eager bars, one per backend.

    python -m benchmarks.plot benchmarks/results/cpu.json   # writes cpu.png next to it
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _speedup(workload: dict, backend: str) -> float:
    """eager ms / backend ms; 0 where the backend has no compiled timing (error, fallback)."""
    return workload["backends"][backend]["speedup"] or 0.0


def _title(env: dict) -> str:
    where = env.get("gpu") or f"{env['machine']}, {env['torch threads']} threads"
    return f"{where}, torch {env['torch']}, {env['date'][:10]}"


def main(path: str) -> None:
    data = json.loads(Path(path).read_text())
    names = [w["name"] for w in data["workloads"]]
    backends = list(data["geomean"])
    fig, ax = plt.subplots(figsize=(9 + len(backends), 4))
    width = 0.8 / len(backends)
    for i, backend in enumerate(backends):
        offset = (i - (len(backends) - 1) / 2) * width
        speedups = [_speedup(w, backend) for w in data["workloads"]]
        bars = ax.bar([x + offset for x in range(len(names))], speedups, width, label=backend)
        # A star marks an output outside the harness's tolerance of eager's.
        marks = ["" if w["backends"][backend].get("matches", True) else "*"
                 for w in data["workloads"]]
        ax.bar_label(bars, labels=[f"{v:.2f}{m}" for v, m in zip(speedups, marks)], fontsize=7)
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
    ax.set_ylabel("speedup over eager (higher is better)")
    ax.set_title(_title(data["environment"]) + "   (* output outside tolerance of eager's)",
                 fontsize=9)
    ax.legend()
    fig.tight_layout()
    out = Path(path).with_suffix(".png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])

"""Plot a results JSON from benchmarks/run.py as speedup-over-eager bars.

    python -m benchmarks.plot benchmarks/results/cpu.json   # writes cpu.png next to it
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _speedup(workload: dict, backend: str) -> float:
    """eager ms / backend ms; 0 where the backend has no compiled timing."""
    eager, other = workload["backends"]["eager"], workload["backends"][backend]
    if not eager.get("ms") or not other.get("ms") or workload["status"] != "ok":
        return 0.0
    return eager["ms"] / other["ms"]


def main(path: str) -> None:
    data = json.loads(Path(path).read_text())
    names = [w["name"] for w in data["workloads"]]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.38
    for offset, backend in ((-width / 2, "inductor"), (width / 2, "mlir")):
        speedups = [_speedup(w, backend) for w in data["workloads"]]
        bars = ax.bar([i + offset for i in range(len(names))], speedups, width, label=backend)
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in speedups], fontsize=7)
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
    ax.set_ylabel("speedup over eager (higher is better)")
    env = data["environment"]
    ax.set_title(f"{env['machine']}, {env['torch threads']} threads, torch {env['torch']}, "
                 f"{env['date'][:10]}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    out = Path(path).with_suffix(".png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])

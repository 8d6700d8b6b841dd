"""tessel quickstart: compile GPT-2's MLP blocks with backend="mlir", check, time, look inside.

    python examples/quickstart.py

The model is two of GPT-2's MLP blocks (layer norm, up projection, GPT-2's tanh GELU as
transformers writes it, down projection, residual) over 1,024 tokens of width 128.
Eager runs the GELU as eight separate ops, each a pass over the 1,024 x 512
activation; tessel fuses them with the bias add into one kernel after the gemm, so
what is left is the gemms and one pass over memory. This is the work compiling saves
on a CPU; the gemms themselves are the same library calls in both.
"""

import math
import statistics
import tempfile
import time
from pathlib import Path

import torch

import tessel


def gelu_new(x):
    """GPT-2's GELU, tanh approximation, as transformers' NewGELUActivation writes it."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class MLPBlock(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(gelu_new(self.up(self.norm(x))))


def median_ms(model, compiled, x, calls=30):
    """Medians of eager and compiled calls taken in turn, so that both see the same machine."""
    eager, mlir = [], []
    for _ in range(calls):
        for fn, times in ((model, eager), (compiled, mlir)):
            start = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(eager), statistics.median(mlir)


def main():
    torch.manual_seed(0)
    width = 128
    model = torch.nn.Sequential(MLPBlock(width), MLPBlock(width)).eval()
    x = torch.randn(8, 128, width)
    dump_dir = Path(tempfile.mkdtemp(prefix="tessel_quickstart_"))
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(dump_dir)})

    with torch.no_grad():
        start = time.perf_counter()
        result = compiled(x)
        first_call = time.perf_counter() - start
        expected = model(x)
        torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-4)
        for _ in range(3):
            model(x), compiled(x)
        eager_ms, mlir_ms = median_ms(model, compiled, x)

    counters = tessel.stats()
    assert counters["graphs_compiled"] >= 1 and counters["graphs_fallback"] == 0, counters
    graph_dump = min(path for path in dump_dir.iterdir() if path.is_dir())
    linalg = next(graph_dump.glob("*_linalg.mlir"))
    print(f"matches eager: max abs error {(result - expected).abs().max().item():.2e}")
    print(f"graphs compiled: {counters['graphs_compiled']}, kernels: {counters['kernels']}")
    print(f"first call (compile): {first_call:.2f} s")
    print(f"eager: {eager_ms:.3f} ms   mlir: {mlir_ms:.3f} ms   speedup {eager_ms / mlir_ms:.2f}x"
          " (medians of 30 calls each, taken in turn)")
    print(f"every stage of the compiled graph: {graph_dump}")
    print(f"replay the cpu pipeline from linalg: tessel-opt {linalg} -p cpu")


if __name__ == "__main__":
    main()

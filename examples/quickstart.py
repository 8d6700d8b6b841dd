"""tessel quickstart: compile a small model with backend="mlir", check it, time it.

    python examples/quickstart.py
"""

import statistics
import time

import torch

import tessel


class Block(torch.nn.Module):
    def __init__(self, width=256):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def median_ms(fn, x, repeats=20):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(64, 256)
    compiled = torch.compile(model, backend="mlir")

    with torch.no_grad():
        start = time.perf_counter()
        result = compiled(x)
        first_call = time.perf_counter() - start
        expected = model(x)
        torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-4)
        eager_ms, mlir_ms = median_ms(model, x), median_ms(compiled, x)

    counters = tessel.stats()
    assert counters["graphs_compiled"] >= 1 and counters["graphs_fallback"] == 0, counters
    print(f"matches eager: max abs error {(result - expected).abs().max().item():.2e}")
    print(f"graphs compiled: {counters['graphs_compiled']}, kernels: {counters['kernels']}")
    print(f"first call (compile): {first_call:.2f} s")
    print(f"eager: {eager_ms:.3f} ms   mlir: {mlir_ms:.3f} ms  (median of 20 calls)")


if __name__ == "__main__":
    main()

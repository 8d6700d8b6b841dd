"""The plugin's pass inside a user pipeline of torch.compile (run after installing it).

    python examples/custom_dialect/run_in_pipeline.py
"""

import pathlib
import tempfile

import torch

import re

import tessel


def main():
    with tempfile.TemporaryDirectory() as dump_dir:
        fn = torch.compile(lambda x: torch.tanh(x) * 2 + 1, backend="mlir",
                           options={"pipeline": "cpu-with-flops", "dump_dir": dump_dir})
        x = torch.randn(16, 32)
        torch.testing.assert_close(fn(x), torch.tanh(x) * 2 + 1)
        assert tessel.stats()["graphs_compiled"] == 1, tessel.stats()
        (graph_dir,) = pathlib.Path(dump_dir).iterdir()
        llvm_ir = (graph_dir / "04_pipeline.mlir").read_text()
        flops = int(re.search(r"stats.flops = (\d+)", llvm_ir).group(1))
        assert flops > 0
        print(f"compiled through cpu-with-flops ({flops} flops); matches eager")


if __name__ == "__main__":
    main()

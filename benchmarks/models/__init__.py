"""The model suite: whole models under eager, Inductor and mlir, judged and timed as
PyTorch's benchmarks/dynamo harness does (benchmarks/README.md, "Model suite")."""

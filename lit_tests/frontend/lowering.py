# RUN: %PYTHON %s | filecheck %s
# Each case compiles a function with backend="mlir" and prints two of its dumped stages.

import pathlib
import tempfile

import torch

import tessel


def run(name, fn, *args, stages=("03_linalg.mlir",)):
    print(f"TEST: {name}")
    with tempfile.TemporaryDirectory() as dump_dir:
        torch._dynamo.reset()
        torch.compile(fn, backend="mlir", options={"dump_dir": dump_dir})(*args)
        (graph_dir,) = pathlib.Path(dump_dir).iterdir()
        for stage in stages:
            print((graph_dir / stage).read_text())
    print("compiled:", tessel.stats()["graphs_compiled"])
    tessel.reset_stats()


# CHECK-LABEL: TEST: matmul_relu
# CHECK:       func.func @main(%[[X:.*]]: tensor<4x3xf32>, %[[W:.*]]: tensor<3x5xf32>) -> tensor<4x5xf32>
# CHECK:         linalg.matmul ins(%[[X]], %[[W]] : tensor<4x3xf32>, tensor<3x5xf32>)
# CHECK:         linalg.generic
# CHECK:           arith.cmpf ugt
# CHECK:       compiled: 1
run("matmul_relu", lambda x, w: torch.relu(x @ w), torch.randn(4, 3), torch.randn(3, 5))

# Symbolic sizes stay dynamic and arrive as i64 arguments; the host binds them.
# CHECK-LABEL: TEST: dynamic_batch
# CHECK:       func.func @main(%[[S:.*]]: i64, %[[X:.*]]: tensor<?x8xf32>) -> tensor<?x8xf32>
# CHECK:       def host(arg0_1, arg1_1):
# CHECK-NEXT:    [[SYM:s[0-9]+]] = arg0_1
# CHECK:         out0 = _empty(([[SYM]], 8), dtype=torch.float32)
# CHECK:       compiled: 1
x = torch.randn(5, 8)
torch._dynamo.mark_dynamic(x, 0)
run("dynamic_batch", lambda x: x.sigmoid() * 2, x, stages=("03_linalg.mlir", "07_host_program.py"))

# The LLVM stage keeps the C interface that the host program calls.
# CHECK-LABEL: TEST: llvm_entry_point
# CHECK:       llvm.func @_mlir_ciface_main
# CHECK:       compiled: 1
run("llvm_entry_point", lambda x: x + 1, torch.randn(3), stages=("06_cpu-lower-to-llvm.mlir",))

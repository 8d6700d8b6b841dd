"""Extending tessel without editing it: a registration call, and the plugin example."""

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

import tessel
from tessel import ir
from tessel.passes.pipeline import run_pipeline

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "custom_dialect"


@dataclass(frozen=True)
class TagFunctionsPass(tessel.ModulePass):
    """tag-functions: mark every function with a unit attribute (a test pass)."""

    name: ClassVar[str] = "tag-functions"
    tag: str = "tessel.tagged"

    def run(self, module):
        with module.context:
            for op in module.regions[0].blocks[0].operations:
                if op.operation.name == "func.func":
                    op.operation.attributes[self.tag] = ir.UnitAttr.get()


def test_registered_pass_runs_in_tessel_opt_pipelines_and_torch_compile():
    tessel.register_pass(TagFunctionsPass)
    module = ir.parse_module("func.func @f() { return }")
    run_pipeline(module, "builtin.module(tag-functions{tag=user.mark},canonicalize)")
    assert "user.mark" in str(module)

    fn = torch.compile(lambda x: x * 3, backend="mlir",
                       options={"pipeline": "builtin.module(tag-functions,cpu)"})
    x = torch.randn(5)
    torch.testing.assert_close(fn(x), x * 3)
    assert tessel.stats()["graphs_compiled"] == 1 and tessel.stats()["graphs_fallback"] == 0


def test_plugin_example_through_entry_point():
    listing = subprocess.run([sys.executable, "-m", "tessel.passes.opt", "--list-passes"],
                             capture_output=True, text=True, check=True).stdout
    assert "count-flops" in listing and "cpu-with-flops" in listing
    result = subprocess.run([sys.executable, str(EXAMPLE / "run_in_pipeline.py")],
                            capture_output=True, text=True, check=True)
    assert "matches eager" in result.stdout

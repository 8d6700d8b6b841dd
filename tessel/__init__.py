"""tessel: an MLIR compiler stack behind torch.compile(model, backend="mlir")."""

from tessel.counters import reset_stats, stats
from tessel.explain import explain
from tessel.options import list_options
from tessel.passes.registry import ModulePass, register as register_pass, register_pipeline

__all__ = ["ModulePass", "explain", "list_options", "register_pass", "register_pipeline",
           "reset_stats", "stats"]

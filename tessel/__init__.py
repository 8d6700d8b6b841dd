"""tessel: an MLIR compiler stack behind torch.compile(model, backend="mlir")."""

from tessel.counters import reset_stats, stats
from tessel.options import list_options
from tessel.passes.registry import ModulePass, register as register_pass, register_pipeline

__all__ = ["ModulePass", "explain", "list_options", "register_pass", "register_pipeline",
           "reset_stats", "stats"]


def __getattr__(name: str):
    # `explain` needs torch; importing it lazily keeps torch out of the compile worker,
    # which imports this package and must start fast.
    if name == "explain":
        from tessel.explain import explain  # noqa: PLC0415
        return explain
    raise AttributeError(f"module 'tessel' has no attribute {name!r}")

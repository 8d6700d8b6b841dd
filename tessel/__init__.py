"""tessel: an MLIR compiler stack behind torch.compile(model, backend="mlir")."""

from tessel.counters import reset_stats, stats
from tessel.errors import TesselError
from tessel.options import list_options

__all__ = ["ModulePass", "TesselError", "explain", "list_options", "register_pass",
           "register_pipeline", "reset_stats", "stats"]


def __getattr__(name: str):
    # `explain` needs torch, and the pass registry MLIR's bindings: importing them lazily
    # keeps both out of the Triton target's kernel compile workers, which import this
    # package and must start fast.
    if name == "explain":
        from tessel.explain import explain  # noqa: PLC0415
        return explain
    if name in ("ModulePass", "register_pass", "register_pipeline"):
        from tessel.passes import registry  # noqa: PLC0415
        return getattr(registry, "register" if name == "register_pass" else name)
    raise AttributeError(f"module 'tessel' has no attribute {name!r}")

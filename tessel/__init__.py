"""tessel: an MLIR compiler stack behind torch.compile(model, backend="mlir")."""

from tessel.options import list_options
from tessel.counters import reset_stats, stats

__all__ = ["list_options", "reset_stats", "stats"]

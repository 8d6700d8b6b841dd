"""The dump directory: one folder per compiled graph, one file per stage."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

_graph_ids = itertools.count()


class GraphDump:
    """Writes the stages of one graph under `<dump_dir>/<NNN>_<name>/`, numbered in order.

    With no dump_dir it writes nothing, so callers never branch on whether dumping is on.
    """

    def __init__(self, dump_dir: str | None, graph_name: str):
        self.graph_id = next(_graph_ids)
        self.graph_name = f"{self.graph_id:03d}_{graph_name}"
        self.path: Path | None = None
        self._stage_ids = itertools.count()
        if dump_dir is not None:
            self.path = Path(dump_dir) / self.graph_name
            self.path.mkdir(parents=True, exist_ok=True)  # dump_dir was checked with the options

    def write(self, stage: str, render: Callable[[], str]) -> Path | None:
        """Write `render()` as the next stage file, e.g. `02_linalg.mlir`; returns its
        path. `render` runs only when dumping: printing IR is not free on big graphs."""
        if self.path is None:
            return None
        file = self.path / f"{next(self._stage_ids):02d}_{stage}"
        file.write_text(render())
        return file

"""options={"check_accuracy": True}: every call of a compiled graph compared with eager."""

from __future__ import annotations

import logging
import warnings

import torch
import torch.fx

from tessel import counters
from tessel.dump import GraphDump
from tessel.frontend.input_mutations import mutated_inputs

log = logging.getLogger("tessel")


def checked_against_eager(host, gm: torch.fx.GraphModule, dump: GraphDump, locate):
    """`host`, compared with eager `gm` on every call (options={"check_accuracy": True}),
    outputs and the inputs it writes; on a difference, `locate` names the first kernel
    that computes something else. Eager writes copies of those inputs."""
    where = f" (stages in {dump.path})" if dump.path else " (set dump_dir to keep its IR)"
    mutated = mutated_inputs(gm)

    def checked(*args):
        def copied() -> list:
            return [a.clone() if i in mutated else a for i, a in enumerate(args)]
        before, eager_args = copied(), copied()
        expected = gm(*eager_args)
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        compiled = host(*args)
        pairs = [*zip(compiled, expected), *((args[i], eager_args[i]) for i in mutated)]
        for index, (actual, reference) in enumerate(pairs):
            if not isinstance(reference, torch.Tensor):
                continue
            try:
                torch.testing.assert_close(actual, reference, equal_nan=True)
            except AssertionError as error:
                counters.count("accuracy_failures")
                try:
                    culprit = locate(*before)
                except Exception as failure:  # the diagnosis must not break the program
                    log.debug("tessel: bisecting graph %s failed", dump.graph_name, exc_info=True)
                    culprit = f"kernel bisection failed: {type(failure).__name__}: {failure}"
                what = (f"output {index}" if index < len(expected)
                        else f"input {mutated[index - len(expected)]} (written)")
                warnings.warn(f"tessel: graph {dump.graph_name} {what} differs from "
                              f"eager{where}: {str(error).splitlines()[0]}; {culprit}",
                              stacklevel=2)
                for i in mutated:
                    args[i].copy_(eager_args[i])
                return tuple(expected)
        return compiled
    return checked

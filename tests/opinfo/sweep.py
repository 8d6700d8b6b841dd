"""Sweep PyTorch's OpInfo database through backend="mlir": float32, CPU, forward.

    python -m tests.opinfo.sweep [--ops a,b] [--samples 3] [--output tests/opinfo/results.json]

Per op: "pass" (compiled, no fallback, matches eager), "fallback" (some graph ran
eagerly; the reason is recorded) or "mismatch" (a compiled result differs from eager).
Ops whose eager run fails or whose samples Dynamo cannot capture are "skipped".
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import torch
import torch._dynamo
from torch.testing._internal.common_methods_invocations import op_db

import tessel


def _leaves(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


def _same(first, second) -> bool:
    """Whether two eager runs agree (NaNs in the same places count as equal)."""
    return all(a.shape == b.shape and (torch.equal(a, b) or (
        a.is_floating_point() and torch.equal(a.nan_to_num(), b.nan_to_num())))
        for a, b in zip(_leaves(first), _leaves(second)))


def _readable(reason: str) -> str:
    """A fallback reason without the MLIR source locations that push the error itself
    past the recorded length: '<graph>: <op>: error: ...'."""
    where, _, message = reason.partition(": ")
    op, _, detail = message.partition(": ")
    return f"{where}: {op}: {detail[detail.find('error:'):] if 'error:' in detail else detail}"


def run_op(op, samples: int) -> dict:
    """The outcome of one OpInfo op over its first `samples` float32 CPU samples."""
    outcome = {"status": "pass", "reason": ""}
    try:
        inputs = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))[:samples]
    except Exception as error:  # noqa: BLE001 -- OpInfo's own generators may fail
        return {"status": "skipped", "reason": f"samples: {type(error).__name__}"}
    for sample in inputs:
        def call(*args, _op=op, _kwargs=sample.kwargs):
            return _op(*args, **_kwargs)
        args = (sample.input, *sample.args)
        try:
            expected = call(*args)
            again = call(*args)
        except Exception as error:  # noqa: BLE001
            return {"status": "skipped", "reason": f"eager: {type(error).__name__}"}
        try:
            deterministic = _same(expected, again)
        except (RuntimeError, NotImplementedError) as error:  # sparse and other layouts
            return {"status": "skipped", "reason": f"eager output: {type(error).__name__}"}
        if not deterministic or op.name.startswith(("empty", "new_empty")):
            return {"status": "skipped", "reason": "eager is nondeterministic (empty, random)"}
        torch._dynamo.reset()
        tessel.reset_stats()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                actual = torch.compile(call, backend="mlir")(*args)
        except Exception as error:  # noqa: BLE001
            return {"status": "skipped", "reason": f"dynamo: {type(error).__name__}: {str(error)[:120]}"}
        counters = tessel.stats()
        for a, e in zip(_leaves(actual), _leaves(expected), strict=False):
            try:
                torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4, equal_nan=True,
                                           check_dtype=True)
            except (RuntimeError, NotImplementedError) as error:
                return {"status": "skipped", "reason": f"compare: {type(error).__name__}"}
            except AssertionError as error:
                if counters["graphs_compiled"] and not counters["fallback_reasons"]:
                    return {"status": "mismatch", "reason": str(error).splitlines()[0][:200]}
                return {"status": "mismatch", "reason": "fallback result differs: "
                        + str(error).splitlines()[0][:160]}
        if counters["graphs_fallback"] or counters["graphs_split"]:
            outcome = {"status": "fallback",
                       "reason": _readable(counters["fallback_reasons"][0])[:200]}
        elif not counters["graphs_compiled"] and outcome["status"] == "pass":
            outcome = {"status": "skipped", "reason": "no graph reached tessel"}
    return outcome


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated op names (default: all)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--output", default="tests/opinfo/results.json")
    args = parser.parse_args(argv)
    wanted = set(args.ops.split(",")) if args.ops else None
    results = {}
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if wanted is not None and op.name not in wanted and name not in wanted:
            continue
        if torch.float32 not in op.supported_dtypes("cpu"):
            continue
        results[name] = run_op(op, args.samples)
        print(f"{name}: {results[name]['status']} {results[name]['reason'][:100]}", flush=True)
    summary = {s: sum(r["status"] == s for r in results.values())
               for s in ("pass", "fallback", "mismatch", "skipped")}
    with open(args.output, "w") as out:
        json.dump({"summary": summary, "ops": results}, out, indent=1, sort_keys=True)
    print(summary)
    return 1 if summary["mismatch"] else 0


if __name__ == "__main__":
    sys.exit(main())

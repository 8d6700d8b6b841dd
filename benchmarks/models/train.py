"""A train row: one training step of a model under a backend and mode, against eager, as
PyTorch's harness measures training (benchmarks/dynamo/common.py).

The step is a user's training loop's, and the harness's (forward_and_backward_pass and
its optimizer step): `optimizer.zero_grad(set_to_none=True)`; the forward and the loss
under `torch.autocast(bfloat16)` in a bf16 run (the weights stay float32; no autocast in
fp32); `loss.backward()`; `optimizer.step()`, with SGD (lr 0.01, foreach, no momentum: the
harness's SGD). The whole step is compiled, `torch.compile(step)`: Dynamo splits it
at the backward call, so the forward with its backward (aot_autograd's) and the
optimizer's step are the backend's graphs. The model is in train mode (batch norms use
the batch's statistics and update their running ones) with dropout, drop-path and
stochastic depth off, so that results compare.

Accuracy: after a step, torch._dynamo.testing.collect_results (the output, the loss,
every parameter's gradient and updated value, the buffers), each tensor judged by
`same` against eager's and an fp64 run's at the harness's training tolerance, 1e-2
(RMSE at most 3x eager's in bf16, 2x in fp32; cosine where fp64 does not fit). fp64,
eager and compiled copies start from the same weights and run the same steps on the
same batch; they are judged after the first step (the compiled one compiles) and after
the last warm-up step (under reduce-overhead, a CUDA-graph replay).

SGD rather than the harness's other optimizer, Adam: Adam's first step moves every
parameter by lr * sign(gradient), so an element whose gradient is within rounding of
zero moves by +lr or -lr depending on the rounding alone. On GPT-2's tiny config in
bf16, one element of a 64-element bias did so between eager and tessel's CPU target,
whose gradients were as close to fp64's as eager's, and its updated bias had 38x
eager's RMSE: updated parameters compare only under an update that is continuous in
the gradient. No momentum, as in the harness: SGD makes its momentum buffers inside its
first compiled step, and under Inductor's CUDA graph trees those are outputs of a replay
that the next step's replays overwrite (every Inductor reduce-overhead train row failed
so, "accessing tensor output of CUDAGraphs that has been overwritten").

Timing: the unit is a whole step, eager's and the compiled one alternated in rounds
(measure.timed), each copy stepping on from its own state.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.testing import collect_results
from torch.utils._pytree import keystr, tree_flatten_with_path

from benchmarks.models import catalog, hf, measure, vision
from benchmarks.run import ratio, synchronize

LEARNING_RATE = 0.01
TOLERANCE = 1e-2                # the harness's training tolerance, fp32 and bf16 alike
# The sections of collect_results' list, in its order.
SECTIONS = ("output", "loss", "grad", "param", "buffer")
Results = dict[str, torch.Tensor]


def without_dropout(model: nn.Module) -> nn.Module:
    """`model` with dropout, drop-path and stochastic depth off: nn.Dropout's `p`,
    torchvision's StochasticDepth's, and every float attribute whose name says drop
    (timm's drop_rate and DropPath's drop_prob, transformers' attention dropout
    probabilities and layer drop), of the modules and of a transformers config."""
    holders = list(model.modules())
    if hasattr(model, "config"):
        holders.append(model.config)
    for holder in holders:
        if isinstance(holder, nn.modules.dropout._DropoutNd) or (
                type(holder).__name__ == "StochasticDepth"):
            holder.p = 0.0
        for name, value in list(vars(holder).items()):
            if "drop" in name.lower() and isinstance(value, float):
                setattr(holder, name, 0.0)
    return model


def training_batch(spec: catalog.ModelSpec, built: catalog.Built,
                   device: str) -> tuple[tuple, dict, Callable]:
    """(args, kwargs, loss of the model's output): a transformers model is given labels
    and computes its own loss; a classifier's is the cross-entropy against random
    classes."""
    if spec.source == "hf":
        labels = hf.training_labels(spec.name, built.model.config, built.kwargs, device)
        return built.args, built.kwargs | labels, lambda output: output.loss
    targets = vision.class_targets(built.batch_size, device)
    return built.args, built.kwargs, lambda output: F.cross_entropy(output, targets)


def train_step(model: nn.Module, loss_of: Callable, device: str, autocast: bool) -> Callable:
    """step(args, kwargs) -> (output, loss): one training step of `model` with its own
    optimizer (module docstring)."""
    device_type = torch.device(device).type
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, foreach=True)

    def step(args: tuple, kwargs: dict):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type, dtype=torch.bfloat16, enabled=autocast):
            output = model(*args, **kwargs)
            loss = loss_of(output)
        loss.backward()
        optimizer.step()
        return output, loss
    return step


def results(model: nn.Module, output, loss: torch.Tensor) -> Results:
    """What a step is judged on (collect_results'), by name, copied to the CPU."""
    leaves, _ = tree_flatten_with_path(collect_results(model, output, loss, ()))
    return {f"{SECTIONS[path[0].idx]}{keystr(path[1:])}": value.detach().cpu()
            for path, value in leaves if isinstance(value, torch.Tensor)}


def first_and_last(model: nn.Module, step: Callable, args: tuple, kwargs: dict,
                   steps: int) -> list[Results]:
    """`steps` steps (at least 2); the results after the first one and the last one."""
    first = results(model, *step(args, kwargs))
    for _ in range(steps - 2):
        step(args, kwargs)
    return [first, results(model, *step(args, kwargs))]


def fp64_reference(model: nn.Module, args: tuple, kwargs: dict, loss_of: Callable,
                   device: str, steps: int) -> list[Results] | None:
    """first_and_last of a float64 copy of `model` (inputs cast, no autocast); None where
    it cannot run (out of memory, an op without float64): the verdict is then cosine
    similarity, as in PyTorch's harness."""
    try:
        copy64 = copy.deepcopy(model).to(torch.float64)
        args64, kwargs64 = measure.cast_floats((args, kwargs), torch.float64)
        step = train_step(copy64, loss_of, device, autocast=False)
        return first_and_last(copy64, step, args64, kwargs64, steps)
    except Exception:  # noqa: BLE001 - any failure only loses the fp64 reference
        return None
    finally:
        copy64 = step = None
        measure.release_cached_memory()


def inaccurate(eager: Results, compiled: Results, fp64: Results | None,
               device: str) -> list[str]:
    """The names of the compiled step's tensors that are not `same` as eager's (all of
    them where the two do not name the same tensors)."""
    if eager.keys() != compiled.keys():
        return sorted(eager.keys() ^ compiled.keys()) or list(eager)
    wrong = []
    for name, reference in eager.items():
        tensors = [[reference], [compiled[name]], None if fp64 is None else [fp64[name]]]
        if not measure.accurate(*(measure.on_device(t, device) for t in tensors),
                                reference.dtype, TOLERANCE):
            wrong.append(name)
    return wrong


def run_train(spec: catalog.ModelSpec, row: measure.Row, backend: str, mode: str,
              device: str, dtype: torch.dtype, options: dict | None, tiny: bool,
              warmup: int, repeats: int, lock: Path | None) -> measure.Row:
    torch.manual_seed(0)
    built = catalog.build(spec, device, tiny)
    model = without_dropout(built.model.train())
    args, kwargs, loss_of = training_batch(spec, built, device)
    autocast = dtype == torch.bfloat16
    steps = 1 + warmup
    row.update(batch_size=built.batch_size, size=built.size, optimizer="SGD",
               autocast=autocast)

    with row.exclusive(lock):
        row.phase("fp64 reference")
        fp64 = fp64_reference(model, args, kwargs, loss_of, device, steps)
        row["reference"] = "cosine" if fp64 is None else "fp64"
        row.phase("eager")
        eager_model = copy.deepcopy(model)
        eager_step = train_step(eager_model, loss_of, device, autocast)
        measure.reset_peak_memory(device)
        try:
            eager = first_and_last(eager_model, eager_step, args, kwargs, steps)
        except Exception as exc:  # noqa: BLE001 - a model eager cannot run is its own status
            return measure.failure(row, "eager_fail", exc)
        row["eager_peak_memory"] = measure.peak_memory(device)
        # The eager step's activations, cached, would crowd the compiled first steps of
        # the suite's other processes, which run beside this one's.
        measure.release_cached_memory()

    row.phase("compile")
    measure.reset_counters()
    compiled_step = measure.with_mark_step(
        measure.compile_fn(train_step(model, loss_of, device, autocast), backend, mode,
                           options), mode)
    try:
        start = time.perf_counter()
        first = compiled_step(args, kwargs)
        synchronize(device)
        row["first_call_s"] = time.perf_counter() - start
        first = results(model, *first)
        with row.exclusive(lock):
            row.phase("warm-up")
            measure.reset_peak_memory(device)
            for _ in range(warmup - 1):
                compiled_step(args, kwargs)
            last = results(model, *compiled_step(args, kwargs))
            row["peak_memory"] = measure.peak_memory(device)
            row.update(measure.compiler_counters(backend))
            row.phase("timing")
            row["eager_ms"], row["compiled_ms"] = measure.timed(
                lambda: eager_step(args, kwargs), lambda: compiled_step(args, kwargs),
                device, repeats)
    except Exception as exc:  # noqa: BLE001 - the compiled step's failure is the row's
        row.update(measure.compiler_counters(backend))
        return measure.failure(row, "fail_to_run", exc)

    row.phase("accuracy")
    row["speedup"] = ratio(row["eager_ms"], row["compiled_ms"])
    row["inaccurate"] = [f"step {number}: {name}"
                         for number, eager_results, compiled_results, fp64_results in (
                             (1, eager[0], first, fp64 and fp64[0]),
                             (steps, eager[1], last, fp64 and fp64[1]))
                         for name in inaccurate(eager_results, compiled_results, fp64_results,
                                                device)]
    row["status"] = "fail_accuracy" if row["inaccurate"] else "pass"
    return row

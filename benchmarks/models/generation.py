"""A generate row: greedy `generate()` with a static KV cache and a compiled forward,
against the same with an eager forward, as transformers' torch.compile guide does it
(/work/shared/reference/transformers_torch_compile.md):
`model.forward = torch.compile(model.forward, mode=..., fullgraph=True)`.

A fixed prompt (seeded token ids), a fixed number of new tokens (min_new_tokens too, so
that an end-of-sequence token stops no call early). transformers compiles a static
cache's decode steps on its own on CUDA (generation_config.compile_config, with
Inductor); that is switched off (disable_compile), so that eager is eager and the
compiled forward is the backend's. Under reduce-overhead each forward call is a step of
the CUDA graph trees (measure.with_mark_step), as in PyTorch's harness.

The verdict: the first step's logits must be `same` as eager's (against an fp64 forward
of the prompt). The tokens may then part from eager's: with random weights, the logits
are nearly flat, and two tokens whose logits differ by less than bf16's rounding
(a near-tie) are picked either way without anything being wrong. So where a sequence
first parts from eager's, that step's logits must still be `same` as eager's (cosine
similarity, there being no fp64 run of that step): the tokens parted on a near-tie, not
on a wrong result. The row keeps how many leading tokens match and where they part.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from benchmarks.models import catalog, hf, measure
from benchmarks.run import ratio, synchronize

NEW_TOKENS = 64


def greedy_generate(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor):
    """`generate(forward, **settings)`: NEW_TOKENS greedy tokens after the prompt `ids`,
    with a static cache and `forward` as the model's forward."""
    model.generation_config.update(
        cache_implementation="static", disable_compile=True, use_cache=True, do_sample=False,
        max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
        pad_token_id=model.config.eos_token_id)

    def generate(forward, **settings):
        model.forward = forward
        return model.generate(ids, attention_mask=mask, **settings)
    return generate


def run_generate(spec: catalog.ModelSpec, row: measure.Row, backend: str, mode: str,
                 device: str, dtype: torch.dtype, options: dict | None, tiny: bool,
                 warmup: int, repeats: int, lock: Path | None) -> measure.Row:
    # On CPU, a tiny config: there, a full-width decoder takes seconds per token.
    tiny = tiny or torch.device(device).type == "cpu"
    torch.manual_seed(0)
    with torch.device(device):  # weights drawn on the device: see catalog.build
        model = hf.build_model(spec.name, tiny).to(device)
    batch, prompt = catalog.input_shape(spec, device, tiny)
    row.update(tiny=tiny, batch_size=batch, size=prompt, new_tokens=NEW_TOKENS)
    ids = hf.token_ids(model.config, batch, prompt, device)
    mask = torch.ones_like(ids)
    generate = greedy_generate(model, ids, mask)

    def tokens_and_logits(forward) -> tuple[torch.Tensor, torch.Tensor]:
        """The new tokens (batch, steps) and each step's logits (steps, batch, vocab)."""
        out = generate(forward, output_logits=True, return_dict_in_generate=True)
        return out.sequences[:, prompt:].cpu(), torch.stack(out.logits).cpu()

    with row.exclusive(lock):
        row.phase("fp64 reference")
        fp64 = measure.fp64_run(model, lambda copy64: copy64(
            ids, attention_mask=mask, use_cache=False).logits[:, -1])
        row["reference"] = "cosine" if fp64 is None else "fp64"
        row.phase("eager")
        model.to(dtype)
        eager_forward = model.forward
        try:
            eager = tokens_and_logits(eager_forward)
        except Exception as exc:  # noqa: BLE001 - a model eager cannot run is its own status
            return measure.failure(row, "eager_fail", exc)

    row.phase("compile")
    measure.reset_counters()
    compiled_forward = measure.with_mark_step(
        measure.compile_fn(eager_forward, backend, mode, options, fullgraph=True), mode)
    try:
        start = time.perf_counter()
        compiled = tokens_and_logits(compiled_forward)
        synchronize(device)
        row["first_call_s"] = time.perf_counter() - start
        with row.exclusive(lock):
            row.phase("warm-up")
            for _ in range(warmup):
                generate(eager_forward)
            measure.reset_peak_memory(device)
            for _ in range(warmup):
                generate(compiled_forward)
            row["peak_memory"] = measure.peak_memory(device)
            row.update(measure.compiler_counters(backend))
            row.phase("timing")
            row["eager_ms"], row["compiled_ms"] = measure.timed(
                lambda: generate(eager_forward), lambda: generate(compiled_forward),
                device, repeats)
    except Exception as exc:  # noqa: BLE001 - the compiled forward's failure is the row's
        row.update(measure.compiler_counters(backend))
        return measure.failure(row, "fail_to_run", exc)
    finally:
        model.forward = eager_forward

    row.phase("accuracy")
    row["speedup"] = ratio(row["eager_ms"], row["compiled_ms"])
    row["eager_tokens_per_s"] = ratio(batch * NEW_TOKENS * 1e3, row["eager_ms"])
    row["tokens_per_s"] = ratio(batch * NEW_TOKENS * 1e3, row["compiled_ms"])
    row.update(verdict(eager, compiled, fp64, dtype, device))
    return row


def verdict(eager: tuple[torch.Tensor, torch.Tensor], compiled: tuple[torch.Tensor, torch.Tensor],
            fp64: list[torch.Tensor] | None, dtype: torch.dtype, device: str) -> dict:
    """The row's status and what it rests on (module docstring)."""
    (eager_tokens, eager_logits), (tokens, logits) = eager, compiled
    first_logits_same = measure.accurate(*(measure.on_device(tensors, device) for tensors in (
        [eager_logits[0]], [logits[0]], fp64)), dtype)
    leading = (tokens == eager_tokens).int().cumprod(dim=1).sum(dim=1).tolist()
    partings, near_ties = [], []
    for sequence, step in enumerate(leading):
        if step < NEW_TOKENS:
            near_ties.append(measure.accurate([eager_logits[step, sequence]],
                                              [logits[step, sequence]], None, dtype))
            partings.append(f"sequence {sequence} at token {step}: "
                            + ("a near-tie" if near_ties[-1] else "logits not eager's"))
    passes = first_logits_same and all(near_ties)
    return {"status": "pass" if passes else "fail_accuracy", "first_logits_same": first_logits_same,
            "matching_tokens": min(leading), "partings": partings}

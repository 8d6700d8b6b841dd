"""What a training step's forward saves for its backward under each partitioner, without
a GPU: tensors and bytes saved, kernel launches a step, gradients against eager.

The steps are the model suite's (benchmarks/models/train.py: zero_grad, forward and
loss, backward, a foreach SGD step; fp32, or bf16 autocast with --autocast) on the
tiny configs of its transformers models, and tests/test_models.py's tiny models with
an MSE loss. Each model is compiled under options={"partitioner": ...} for each of
tessel's partitioners (tessel/frontend/partitioner.py), twice: with the CPU target,
and with the Triton target on CPU tensors (TRITON_INTERPRET=1). Per row:
- saved: tessel.stats()'s tensors_saved_for_backward and bytes_saved_for_backward
  (the tensors the forward computes and keeps for the backward, not its inputs);
- launches: the Triton host programs' kernel launches in one step after two (a dry
  run, launcher.recorded_launches: forward, backward and the optimizer's graph);
- gradient error: over the parameters' gradients after the first step, the largest
  max|compiled - eager| / max|eager| (gradient_error), per target;
- eager ops: graphs that ran eagerly, whole or in part (graphs_fallback + graphs_split).

Usage:
    TRITON_INTERPRET=1 python -m benchmarks.saved_for_backward [--models hf_gpt2,mlp]
"""

from __future__ import annotations

import argparse
import copy

import torch
import torch.nn.functional as F

import tessel
from benchmarks.models import catalog, train
from benchmarks.train_step_launches import MODELS as TEST_MODELS
from benchmarks.train_step_launches import on_the_interpreter
from tessel.frontend.partitioner import PARTITIONERS
from tessel.targets.triton.launcher import recorded_launches

# The suite's train rows that have tiny configs (transformers), and its transformers
# convolution nets, in for torchvision's and timm's, which build full size only.
SUITE_MODELS = ("hf_gpt2", "hf_bert", "hf_roberta", "hf_albert", "hf_deberta_v2", "hf_t5",
                "hf_bart", "hf_llama", "hf_qwen2", "hf_vit", "hf_swin", "hf_segformer",
                "hf_resnet", "hf_convnext", "hf_mobilenet_v2")


def build(name: str):
    """(model, args, kwargs, loss of the output), the model in train mode, dropout off."""
    torch.manual_seed(0)
    if name in TEST_MODELS:
        model, inputs = TEST_MODELS[name]()
        with torch.no_grad():
            target = torch.randn_like(model(*inputs))
        return model.train(), inputs, {}, lambda output: F.mse_loss(output, target)
    spec = next(spec for spec in catalog.load_catalog() if spec.name == name)
    built = catalog.build(spec, "cpu", tiny=True)
    model = train.without_dropout(built.model.train())
    args, kwargs, loss_of = train.training_batch(spec, built, "cpu")
    return model, args, kwargs, loss_of


def gradient_error(model: torch.nn.Module, reference: torch.nn.Module) -> float:
    """The largest max|compiled - eager| / max|eager| over the gradients, less those that
    are zero up to rounding (a convolution's bias before a batch norm), whose every
    element is within 1e-6 of the largest gradient element."""
    pairs = [(p.grad, r.grad) for p, r in zip(model.parameters(), reference.parameters(),
                                             strict=True) if r.grad is not None]
    largest = max(expected.abs().max() for _, expected in pairs)
    return max(((grad - expected).abs().max() / expected.abs().max()).item()
               for grad, expected in pairs if expected.abs().max() > 1e-6 * largest)


def measure(name: str, partitioner: str, target: str, autocast: bool) -> dict:
    model, args, kwargs, loss_of = build(name)
    reference = copy.deepcopy(model)
    torch._dynamo.reset()
    tessel.reset_stats()
    step = torch.compile(train.train_step(model, loss_of, "cpu", autocast), backend="mlir",
                         options={"partitioner": partitioner, "target": target})
    step(args, kwargs)
    train.train_step(reference, loss_of, "cpu", autocast)(args, kwargs)
    stats = tessel.stats()
    result = {"tensors": stats["tensors_saved_for_backward"],
              "bytes": stats["bytes_saved_for_backward"],
              "error": gradient_error(model, reference),
              "eager": stats["graphs_fallback"] + stats["graphs_split"]}
    if target == "triton":
        step(args, kwargs)
        result["launches"] = len(recorded_launches(lambda: step(args, kwargs), ()))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join((*TEST_MODELS, *SUITE_MODELS)))
    parser.add_argument("--autocast", action="store_true", help="bf16 autocast")
    args = parser.parse_args()
    on_the_interpreter()
    print("| model | partitioner | tensors saved | bytes saved | launches a step (triton) | "
          "gradient error cpu / triton | graphs run eagerly, whole or split cpu / triton |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        for partitioner in PARTITIONERS:
            cpu = measure(name, partitioner, "cpu", args.autocast)
            triton = measure(name, partitioner, "triton", args.autocast)
            print(f"| {name} | {partitioner} | {cpu['tensors']} | {cpu['bytes']} | "
                  f"{triton['launches']} | {cpu['error']:.1e} / {triton['error']:.1e} | "
                  f"{cpu['eager']} / {triton['eager']} |", flush=True)


if __name__ == "__main__":
    main()

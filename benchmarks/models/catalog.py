"""The suite's list of models (models.csv) and how each one is built with its inputs.

A row of models.csv names a model, its source (torchvision, timm or hf), its kind
(forward: one inference call; generate: `generate()` with a static cache; train: one
training step), the GPU run's batch size and input size, and optionally the dtype the
row always runs in (empty: the run's). A CPU run takes smaller inputs (input_shape),
and a tiny build (tests, smoke runs) tiny configs and inputs.
"""

from __future__ import annotations

import csv
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from benchmarks.models import hf, vision
from benchmarks.models.measure import DTYPES

LIST_FILE = Path(__file__).with_name("models.csv")
SOURCES = ("torchvision", "timm", "hf")
KINDS = ("forward", "generate", "train")
SOURCE_PACKAGES = {"torchvision": "torchvision", "timm": "timm", "hf": "transformers"}
# A CPU run's inputs: 2 images at the listed size, or 2 sequences of at most 128 tokens.
CPU_BATCH = 2
CPU_TOKENS = 128


@dataclass(frozen=True)
class ModelSpec:
    name: str
    source: str
    kind: str
    batch_size: int
    size: int       # image side in pixels, or tokens (the prompt's, for generate)
    dtype: str | None = None  # the dtype of every run of this row; None: the run's

    def dtype_in(self, run_dtype: str) -> str:
        """The dtype this row runs in, in a run of `run_dtype`."""
        return self.dtype or run_dtype

    @property
    def takes_images(self) -> bool:
        return self.source != "hf" or hf.MODELS[self.name].inputs == "image"


@dataclass
class Built:
    """A model and the arguments of one call: model(*args, **kwargs)."""
    model: nn.Module
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    batch_size: int = 0
    size: int = 0


def load_catalog(path: Path = LIST_FILE) -> list[ModelSpec]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    specs = []
    for row in csv.DictReader(lines):
        spec = ModelSpec(row["name"], row["source"], row["kind"], int(row["batch_size"]),
                         int(row["size"]), row.get("dtype") or None)
        if spec.source not in SOURCES or spec.kind not in KINDS or spec.dtype not in (
                None, *DTYPES):
            raise ValueError(f"{path}: {spec}: source must be one of {SOURCES}, "
                             f"kind one of {KINDS}, dtype empty or one of {tuple(DTYPES)}")
        if spec.source == "hf" and spec.name not in hf.MODELS:
            raise ValueError(f"{path}: {spec.name} has no config in benchmarks/models/hf.py")
        specs.append(spec)
    return specs


def source_installed(source: str) -> bool:
    return importlib.util.find_spec(SOURCE_PACKAGES[source]) is not None


def input_shape(spec: ModelSpec, device: str, tiny: bool) -> tuple[int, int]:
    """(batch, size) of the inputs on this device; tiny ones for a tiny hf build."""
    if tiny and spec.source == "hf":
        return hf.TINY_BATCH, hf.TINY_IMAGE if spec.takes_images else hf.TINY_TOKENS
    if torch.device(device).type == "cpu":
        return CPU_BATCH, spec.size if spec.takes_images else min(spec.size, CPU_TOKENS)
    return spec.batch_size, spec.size


def build(spec: ModelSpec, device: str, tiny: bool = False) -> Built:
    """The model (float32, random weights of the current seed) and inputs on `device`.
    Only hf models have tiny configs; torchvision and timm ones build full size. Weights
    are drawn on the device itself: a CPU takes tens of seconds for a billion."""
    batch, size = input_shape(spec, device, tiny)
    with torch.device(device):
        if spec.source == "hf":
            model = hf.build_model(spec.name, tiny).to(device)
            return Built(model, kwargs=hf.build_inputs(spec.name, model.config, batch, size,
                                                       device), batch_size=batch, size=size)
        make = vision.torchvision_model if spec.source == "torchvision" else vision.timm_model
        return Built(make(spec.name).to(device), args=(vision.image_batch(batch, size, device),),
                     batch_size=batch, size=size)

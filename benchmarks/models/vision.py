"""torchvision and timm classifiers of the suite, with random weights (weights=None,
pretrained=False: nothing is downloaded), in eval mode, so dropout and drop-path are off
and batch norms use their running statistics, as in PyTorch's timm_models.py."""

from __future__ import annotations

import torch
from torch import nn

# The classes of every torchvision and timm classifier of the suite (ImageNet's).
CLASSES = 1000


def torchvision_model(name: str) -> nn.Module:
    import torchvision  # here, not at the top: a CPU run has no torchvision

    return getattr(torchvision.models, name)(weights=None).eval()


def timm_model(name: str) -> nn.Module:
    import timm

    return timm.create_model(name, pretrained=False).eval()


def image_batch(batch: int, size: int, device) -> torch.Tensor:
    return torch.randn(batch, 3, size, size, device=device)


def class_targets(batch: int, device) -> torch.Tensor:
    """A training step's targets: one class per image."""
    return torch.randint(CLASSES, (batch,), device=device)

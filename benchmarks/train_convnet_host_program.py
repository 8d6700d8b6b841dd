"""What a conv net's training step does in its Triton host programs, counted without a GPU.

A ResNet stem and basic block (7x7 stride-2 convolution, batch norm, ReLU, 3x3 stride-2
max pooling, two 3x3 convolutions with batch norms and a residual add, a linear head)
takes one training step as the model suite's train rows take it (benchmarks/models/
train.py: bf16 autocast, cross-entropy, backward, SGD with momentum, foreach), compiled
for the Triton target and run in Triton's interpreter on CPU tensors. A convolution's
backward is left to PyTorch as on CUDA (native_ops.py; on the CPU tessel lowers it), so
the backward graph splits around it into the pieces a GPU run gets. The dumped host
programs are then counted: kernel launches, scatters (index_put_ on the GPU) and those
that accumulate, zero fills, clones, `.contiguous()` copies, results made channels-last
and those copied into eager's strides, slice assignments and convolutions.

    python -m benchmarks.train_convnet_host_program [--batch 2] [--size 32] [--verbose]
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path
from unittest import mock

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import torch
import torch.nn.functional as F
from torch import nn

from tessel.frontend import native_ops

# What is counted: name -> pattern over a host program's text.
COUNTED = {
    "launches": r"^    launch_\w+\(",
    "scatters": r"\bscatter\(",
    "accumulating scatters": r"\bscatter\(.*accumulate=True",
    "zero fills": r"torch\.full\(",
    "clones": r"\.clone\(",
    "contiguous copies": r"\.contiguous\(\)",
    # A result made channels-last where it is not (cuDNN's results are: no copy).
    "to channels-last": r"\.contiguous\(memory_format=torch\.channels_last\)",
    # A result copied into the layout eager's trace has.
    "strided copies": r"torch\.empty_strided\(.*\)\.copy_\(",
    "slice assignments": r"^    \w+\[.*\] = ",
    "convolutions": r"torch\.convolution\(",
}


class StemAndBlock(nn.Module):
    def __init__(self, channels: int = 8, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.first = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(channels), nn.ReLU())
        self.second = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                                    nn.BatchNorm2d(channels))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.second(self.first(x)))
        return self.head(x.mean((2, 3)))


def counts(dump_dir: Path, verbose: bool) -> dict[str, int]:
    """COUNTED over every host program under `dump_dir`, summed."""
    total = dict.fromkeys(COUNTED, 0)
    for program in sorted(dump_dir.glob("*/*host_program.py")):
        text = program.read_text()
        found = {name: len(re.findall(pattern, text, re.MULTILINE))
                 for name, pattern in COUNTED.items()}
        if verbose:
            print(f"  {program.parent.name}: {found}")
        total = {name: total[name] + found[name] for name in COUNTED}
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--verbose", action="store_true", help="counts per host program")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = StemAndBlock()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
    x = torch.randn(args.batch, 3, args.size, args.size)
    targets = torch.randint(10, (args.batch,))

    def step(x):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), targets)
        loss.backward()
        optimizer.step()
        return loss

    # A fresh compile cache: a cached graph is not dumped.
    with tempfile.TemporaryDirectory() as directory, tempfile.TemporaryDirectory() as cache:
        dump_dir = Path(directory)
        options = {"target": "triton", "fallback": False, "dump_dir": str(dump_dir)}
        with mock.patch.dict(os.environ, {"TESSEL_CACHE_DIR": cache}), \
                mock.patch.object(native_ops, "on_cuda", lambda value: True):
            torch.compile(step, backend="mlir", options=options)(x)
        print(f"batch {args.batch}, {args.size}x{args.size}:", counts(dump_dir, args.verbose))


if __name__ == "__main__":
    main()

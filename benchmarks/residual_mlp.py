"""The residual MLP that the distributed test and benchmark train: blocks of layer
norm, an up projection, GELU, a down projection and a residual add, then a head."""

import torch


class ResidualBlock(torch.nn.Module):
    def __init__(self, width: int, expansion: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, expansion * width)
        self.down = torch.nn.Linear(expansion * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class ResidualMLP(torch.nn.Module):
    def __init__(self, width: int, depth: int, expansion: int = 4, outputs: int | None = None):
        super().__init__()
        self.blocks = torch.nn.Sequential(*(ResidualBlock(width, expansion)
                                            for _ in range(depth)))
        self.head = torch.nn.Linear(width, outputs or width)

    def forward(self, x):
        return self.head(self.blocks(x))

"""Distributed training under backend="mlir", on 2 CPU processes with gloo: each pattern
users run (DDP around a compiled model, a compiled DDP model split by DDPOptimizer,
FSDP2 compiled per block and whole, tensor parallel over DTensor, DDP with compiled
autograd, functional collectives in a compiled function) trains 10 steps within 1e-4
relative of eager's losses, with its graphs compiled by tessel, nothing run eagerly
but the collectives (native ops), and no collective inside compiled code.

One pair of processes runs every pattern, once, for the whole module (starting them
costs seconds); each test reads its pattern's results.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import socket
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from benchmarks.residual_mlp import ResidualMLP

WORLD = 2
STEPS = 10
WIDTH = 256  # with 3 blocks, 3 MB of parameters: DDPOptimizer's 1 MB buckets split them

COLLECTIVES = {"_c10d_functional.all_reduce.default", "_c10d_functional.wait_tensor.default"}


def residual_mlp(depth: int = 3) -> ResidualMLP:
    return ResidualMLP(WIDTH, depth, expansion=2, outputs=1)


class Attention(torch.nn.Module):
    def __init__(self, width: int, head_size: int = 16):
        super().__init__()
        self.head_size = head_size
        self.q, self.k, self.v, self.o = (torch.nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        batch, tokens, _ = x.shape
        # -1 heads: under tensor parallel each rank holds half of them.
        q, k, v = (p(x).view(batch, tokens, -1, self.head_size).transpose(1, 2)
                   for p in (self.q, self.k, self.v))
        mixed = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(mixed.transpose(1, 2).reshape(batch, tokens, -1))


class TransformerBlock(torch.nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.attn = Attention(width)
        self.up, self.down = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


def _compiled(module, options: dict | None):
    """`module` compiled by tessel with `options`; as it is where `options` is None
    (the eager run)."""
    return module if options is None else torch.compile(module, backend="mlir", options=options)


def ddp_around_compiled_model(model, options):
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(_compiled(model, options)), contextlib.nullcontext


def compiled_ddp(model, options):
    from torch.nn.parallel import DistributedDataParallel as DDP
    return _compiled(DDP(model, bucket_cap_mb=1), options), contextlib.nullcontext


def ddp_compiled_autograd(model, options):
    """Compiled autograd traces DDP's Python reducer: its all_reduces land in the
    backward graph, as functional collectives."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    if options is None:
        return DDP(model), contextlib.nullcontext
    torch._dynamo.config.optimize_ddp = "python_reducer"
    return _compiled(DDP(model), options), lambda: torch._dynamo.compiled_autograd._enable(
        torch.compile(backend="mlir", options=options))


def fsdp2_per_block(model, options):
    from torch.distributed.fsdp import fully_shard
    for block in model.blocks:
        if options is not None:
            block.compile(backend="mlir", options=options)
        fully_shard(block)
    return fully_shard(model), contextlib.nullcontext


def fsdp2_whole_model(model, options):
    from torch.distributed.fsdp import fully_shard
    for block in model.blocks:
        fully_shard(block)
    return _compiled(fully_shard(model), options), contextlib.nullcontext


def tensor_parallel(model, options):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )
    plan = {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(),
            "attn.v": ColwiseParallel(), "attn.o": RowwiseParallel(),
            "up": ColwiseParallel(), "down": RowwiseParallel()}
    mesh = init_device_mesh("cpu", (WORLD,))
    return _compiled(parallelize_module(model, mesh, plan), options), contextlib.nullcontext


# pattern -> (model, input shape, target shape, parallel wrapping (compiled with the
# options given, eager for None) and the context of its backward)
PATTERNS = {
    "ddp_around_compiled_model": (residual_mlp, (16, WIDTH), (16, 1), ddp_around_compiled_model),
    "compiled_ddp": (residual_mlp, (16, WIDTH), (16, 1), compiled_ddp),
    "ddp_compiled_autograd": (lambda: residual_mlp(depth=1), (16, WIDTH), (16, 1),
                              ddp_compiled_autograd),
    "fsdp2_per_block": (residual_mlp, (16, WIDTH), (16, 1), fsdp2_per_block),
    "fsdp2_whole_model": (residual_mlp, (16, WIDTH), (16, 1), fsdp2_whole_model),
    "tensor_parallel": (TransformerBlock, (2, 8, 64), (2, 8, 64), tensor_parallel),
}


def _losses(model, backward_context, batches) -> list[float]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for inputs, target in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), target)
        with backward_context():
            loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _train(pattern: str, rank: int, dump_dir: Path) -> dict:
    import tessel
    build, input_shape, target_shape, wrap = PATTERNS[pattern]
    torch._dynamo.reset()
    tessel.reset_stats()
    torch.manual_seed(0)
    initial = build()
    torch.manual_seed(1 + rank)  # each rank its own data, as data parallel trains
    batches = [(torch.randn(input_shape), torch.randn(target_shape)) for _ in range(STEPS)]
    eager = _losses(*wrap(copy.deepcopy(initial), None), batches)
    start = time.perf_counter()
    compiled = _losses(*wrap(copy.deepcopy(initial), {"dump_dir": str(dump_dir)}), batches)
    torch._dynamo.config.optimize_ddp = True
    return {"eager": eager, "compiled": compiled, "seconds": time.perf_counter() - start,
            "stats": tessel.stats()}


def _collective_function(rank: int, dump_dir: Path) -> dict:
    """A compiled function that all-reduces a matmul's result while it computes an
    independent sigmoid, then combines the two."""
    import torch.distributed._functional_collectives as collectives

    import tessel

    def step(x, w):
        reduced = collectives.all_reduce(torch.relu(x @ w), "sum", dist.group.WORLD)
        independent = torch.sigmoid(x) * 2
        return reduced * independent + 1

    torch._dynamo.reset()
    tessel.reset_stats()
    torch.manual_seed(rank)
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    compiled = torch.compile(step, backend="mlir", options={"dump_dir": str(dump_dir)})
    return {"eager": step(x, w).tolist(), "compiled": compiled(x, w).tolist(),
            "stats": tessel.stats()}


def _worker(rank: int, port: int, folder: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)  # two processes on the 2-core CI machine
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    results = {}
    try:
        for pattern in PATTERNS:
            results[pattern] = _train(pattern, rank, Path(folder) / pattern / str(rank))
        results["functional_collective"] = _collective_function(
            rank, Path(folder) / "functional_collective" / str(rank))
    finally:
        (Path(folder) / f"rank{rank}.json").write_text(json.dumps(results))
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, list[dict]]:
    folder = tmp_path_factory.mktemp("distributed")
    mp.spawn(_worker, args=(_free_port(), str(folder)), nprocs=WORLD)
    return folder, [json.loads((folder / f"rank{r}.json").read_text()) for r in range(WORLD)]


def _native_ops(stats: dict) -> set[str]:
    return {entry.split(": ")[1] for entry in stats["native_ops"]}


def _compiled_mlir(folder: Path) -> list[Path]:
    return list(folder.glob("*/*_torch.mlir"))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_trains_as_eager_does_with_its_graphs_compiled(runs, pattern):
    folder, ranks = runs
    for rank, results in enumerate(ranks):
        result = results[pattern]
        torch.testing.assert_close(torch.tensor(result["compiled"]),
                                   torch.tensor(result["eager"]), rtol=1e-4, atol=0)
        assert result["eager"][-1] < result["eager"][0]  # a real training run
        stats = result["stats"]
        assert stats["forward_graphs_compiled"] >= 1 and stats["graphs_compiled"] >= 2, stats
        assert stats["graphs_fallback"] == 0 and stats["fallback_reasons"] == [], stats
        assert _native_ops(stats) <= COLLECTIVES, stats["native_ops"]
        dumped = _compiled_mlir(folder / pattern / str(rank))
        assert dumped and not any("c10d" in path.read_text() for path in dumped)


def test_ddp_optimizer_splits_the_compiled_model_at_its_buckets(runs):
    _, ranks = runs
    for results in ranks:
        # 3 MB of parameters in 1 MB buckets: one graph per bucket, forward and backward.
        assert results["compiled_ddp"]["stats"]["forward_graphs_compiled"] >= 3


@pytest.mark.parametrize("pattern", ["tensor_parallel", "ddp_compiled_autograd"])
def test_collectives_in_training_graphs_run_natively(runs, pattern):
    """Tensor parallel's all_reduces (forward and backward) and DDP's gradient
    all_reduces traced by compiled autograd are native ops between compiled pieces."""
    _, ranks = runs
    for results in ranks:
        assert _native_ops(results[pattern]["stats"]) == COLLECTIVES


def test_a_functional_collective_overlaps_the_compute_it_does_not_feed(runs):
    """The all_reduce is issued before the independent sigmoid's piece runs and waited
    for only after it: three compiled pieces, the middle one in flight."""
    folder, ranks = runs
    for rank, results in enumerate(ranks):
        result = results["functional_collective"]
        torch.testing.assert_close(torch.tensor(result["compiled"]), torch.tensor(result["eager"]))
        stats = result["stats"]
        assert stats["graphs_compiled"] == 3 and stats["fallback_reasons"] == [], stats
        assert _native_ops(stats) == COLLECTIVES
        split = next((folder / "functional_collective" / str(rank)).glob("*/*split_graph.py"))
        calls = [line.split("=")[0].split(":")[0].strip() for line in split.read_text().splitlines()
                 if " = " in line and not line.strip().startswith("#")]
        assert calls[:5] == ["fused_0", "all_reduce", "fused_1", "wait_tensor", "fused_2"], calls

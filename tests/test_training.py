"""Training under backend="mlir": the whole train step (zero_grad, forward, loss,
backward, Adam) compiled as one function, as in the torch.compile tutorial, tracks
eager's loss curve over 20 steps within 1e-4 relative, with the backward graph
compiled by tessel and present in the dump."""

import copy

import pytest
import torch

import tessel
from conftest import assert_compiled
from test_models import cnn_with_batch_norm, mlp, on, transformer_encoder_layer

STEPS = 20


def make_train_step(model, **adam_options):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, **adam_options)

    def train(model, inputs, target):
        optimizer.zero_grad(True)
        output = model(*inputs)
        loss = torch.nn.functional.mse_loss(output, target)
        loss.backward()
        optimizer.step()
        return loss
    return train


@pytest.mark.parametrize("build", [mlp, cnn_with_batch_norm, transformer_encoder_layer])
def test_loss_curve_tracks_eager(build, tmp_path, device):
    model, inputs = on(device, *build())
    model.train()
    reference = copy.deepcopy(model)
    with torch.no_grad():
        target = torch.randn_like(model(*inputs))
    compiled_step = torch.compile(make_train_step(model), backend="mlir",
                                  options={"dump_dir": str(tmp_path)})
    eager_step = make_train_step(reference)
    compiled_losses, eager_losses = [], []
    for _ in range(STEPS):
        compiled_losses.append(compiled_step(model, inputs, target).item())
        eager_losses.append(eager_step(reference, inputs, target).item())
    torch.testing.assert_close(torch.tensor(compiled_losses), torch.tensor(eager_losses),
                               rtol=1e-4, atol=0)
    assert eager_losses[-1] < eager_losses[0]  # the curve is a real training run
    counters = assert_compiled(min_graphs=2)
    assert counters["backward_graphs_compiled"] > 0
    assert list(tmp_path.glob("*backward*/01_torch.mlir")), "backward graph missing from the dump"
    assert tessel.stats()["graphs_split"] == 0


def test_multi_tensor_adam_compiles_without_fallback(device):
    """Adam's multi-tensor path (`_foreach_*` ops, its default on CUDA) decomposes into
    per-tensor ops that tessel compiles."""
    model, inputs = on(device, *mlp())
    reference = copy.deepcopy(model)
    target = torch.randn(16, 8, device=device)
    compiled_step = torch.compile(make_train_step(model, foreach=True), backend="mlir")
    eager_step = make_train_step(reference, foreach=True)
    for _ in range(5):
        torch.testing.assert_close(compiled_step(model, inputs, target),
                                   eager_step(reference, inputs, target), rtol=1e-4, atol=0)
    assert_compiled(min_graphs=2)

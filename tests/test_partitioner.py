"""The `partitioner` option: what a training graph's forward saves for its backward."""

import copy

import pytest
import torch

import tessel
from conftest import assert_compiled

BATCH, FEATURES, HIDDEN = 8, 16, 32


def linear_gelu() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN, bias=False), torch.nn.GELU())


def loss_of(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x).square().sum()


@pytest.mark.parametrize("partitioner, saved", [
    # The backward reads the matmul's result h (gelu's derivative) and gelu(h) (square's):
    # min-cut saves h and recomputes gelu(h), an element-wise op, from it.
    ("min-cut", 1),
    ("save-all", 2),
])
def test_forward_saves_what_the_partitioner_chooses(partitioner, saved):
    model = linear_gelu()
    reference = copy.deepcopy(model)
    x = torch.randn(BATCH, FEATURES)
    compiled = torch.compile(loss_of, backend="mlir", options={"partitioner": partitioner})
    compiled(model, x).backward()
    loss_of(reference, x).backward()
    counters = assert_compiled(min_graphs=2)
    assert counters["backward_graphs_compiled"] == 1
    # The input and the weights, which the backward also reads, are not counted.
    assert counters["tensors_saved_for_backward"] == saved
    assert counters["bytes_saved_for_backward"] == saved * BATCH * HIDDEN * 4
    for parameter, expected in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(parameter.grad, expected.grad)


def test_min_cut_is_the_default():
    torch.compile(loss_of, backend="mlir")(linear_gelu(), torch.randn(BATCH, FEATURES)).backward()
    assert tessel.stats()["tensors_saved_for_backward"] == 1


def test_a_cross_entropy_saves_row_statistics_not_the_log_probabilities():
    # A language model's loss: log_softmax decomposed before the partition (as Inductor
    # does), so the forward saves each row's max and log-sum-exp, and the backward
    # recomputes the log-probabilities from the bf16 logits it holds anyway. Whole, the
    # op's f32 output (rows x classes x 4 bytes) was saved.
    rows, classes = 64, 1000
    logits = torch.randn(rows, classes, dtype=torch.bfloat16, requires_grad=True)
    targets = torch.randint(0, classes, (rows,))
    targets[::7] = -100  # ignored rows

    def loss(x, t):
        return torch.nn.functional.cross_entropy(x.float(), t)

    torch.compile(loss, backend="mlir")(logits, targets).backward()
    compiled_grad, logits.grad = logits.grad, None
    loss(logits, targets).backward()
    counters = assert_compiled(min_graphs=2)
    # Two f32 values a row, and the loss's f32 divisor (the rows not ignored).
    assert counters["bytes_saved_for_backward"] == 2 * rows * 4 + 4
    torch.testing.assert_close(compiled_grad, logits.grad)

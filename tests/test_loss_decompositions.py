"""nll_loss's backward as a select on the class index (decompositions.py), against
PyTorch's kernel."""

import pytest
import torch

from tessel.frontend.decompositions import nll_loss_backward_as_select

aten = torch.ops.aten
NONE, MEAN, SUM = 0, 1, 2


@pytest.mark.parametrize("reduction", [NONE, MEAN, SUM])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_nll_loss_backward_as_select_matches_the_kernel(reduction, weighted, ignore_index):
    torch.manual_seed(0)
    rows, classes = 6, 5
    x = torch.randn(rows, classes).log_softmax(1)
    target = torch.tensor([0, 2, 4, 2, 1, 3])
    if ignore_index < 0:
        target[3] = ignore_index
    weight = torch.rand(classes) if weighted else None
    _, total_weight = aten.nll_loss_forward(x, target, weight, reduction, ignore_index)
    grad = torch.randn(rows) if reduction == NONE else torch.tensor(1.5)
    args = (grad, x, target, weight, reduction, ignore_index, total_weight)
    torch.testing.assert_close(nll_loss_backward_as_select(*args), aten.nll_loss_backward(*args))


def test_nll_loss_backward_as_select_of_one_sample():
    x = torch.randn(5).log_softmax(0)
    target = torch.tensor(3)
    _, total_weight = aten.nll_loss_forward(x, target, None, MEAN, -100)
    args = (torch.tensor(0.5), x, target, None, MEAN, -100, total_weight)
    torch.testing.assert_close(nll_loss_backward_as_select(*args), aten.nll_loss_backward(*args))

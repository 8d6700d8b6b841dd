"""Inputs a graph writes (an optimizer's parameters and states, batch norm's running
statistics) are written in place by the kernel that computes their new values, where
that kernel is the input's only reader, element for element
(passes/write_inputs_in_place.py): no buffer for the new value, no copy back. Both
targets; the Triton target's kernels run in Triton's interpreter. The counters are
per call: `inputs_written_in_place` counts writes the kernels made into inputs,
`inputs_copied_back` those copied from a result after the call."""

import copy

import pytest
import torch

import tessel
from conftest import parameters_with_gradients

TARGETS = ["cpu", "triton"]
SHAPES = [(16, 8), (8,), (4, 4, 4), (3,)]


def _compiled(fn, target: str):
    return torch.compile(fn, backend="mlir", options={"target": target, "fallback": False})


def _adam(parameters):
    return torch.optim.Adam(parameters, lr=1e-2, foreach=True)


def _sgd_with_momentum(parameters):
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9, foreach=True)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("optimizer", [_adam, _sgd_with_momentum])
def test_a_foreach_optimizer_step_writes_parameters_and_states_in_place(target, optimizer):
    compiled_params = parameters_with_gradients(SHAPES)
    eager_params = parameters_with_gradients(SHAPES)
    compiled_optimizer, eager_optimizer = optimizer(compiled_params), optimizer(eager_params)
    step = _compiled(compiled_optimizer.step, target)
    addresses = [p.data_ptr() for p in compiled_params]
    # SGD's first step makes its momentum buffers (a graph that writes only the
    # parameters); the steps after it write parameters and buffers.
    for _ in range(3):
        tessel.reset_stats()
        step()
        eager_optimizer.step()
        for actual, expected in zip(compiled_params, eager_params):
            torch.testing.assert_close(actual, expected)
    for compiled_param, eager_param in zip(compiled_params, eager_params):
        expected_state = eager_optimizer.state[eager_param]
        for key, value in compiled_optimizer.state[compiled_param].items():
            torch.testing.assert_close(value, expected_state[key])
    assert [p.data_ptr() for p in compiled_params] == addresses
    counters = tessel.stats()
    # Adam writes each parameter, both averages and the step count; SGD each parameter
    # and its momentum buffer.
    writes = len(SHAPES) * (4 if optimizer is _adam else 2)
    assert counters["inputs_written_in_place"] == writes, counters
    assert counters["inputs_copied_back"] == 0, counters


@pytest.mark.parametrize("target", TARGETS)
def test_a_batch_norm_training_forward_writes_running_statistics_in_place(target):
    """In train mode without autograd (with it, the backward also reads the new running
    statistics: they are outputs too, and copied back)."""
    torch.manual_seed(0)
    norm = torch.nn.BatchNorm2d(4)
    reference = copy.deepcopy(norm)
    x = torch.randn(2, 4, 5, 5)
    compiled = _compiled(norm, target)
    for _ in range(2):
        tessel.reset_stats()
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), reference(x))
    for buffer in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(norm, buffer), getattr(reference, buffer))
    counters = tessel.stats()
    assert counters["inputs_written_in_place"] == 3, counters
    assert counters["inputs_copied_back"] == 0, counters


def _write_then_read_the_old_value(x):
    old = x.clone()
    x.add_(1)
    return old.t() * 2


@pytest.mark.parametrize("target", TARGETS)
def test_an_input_whose_old_value_a_later_kernel_reads_is_copied_back(target):
    """x's new value and the doubled old x (transposed: a kernel of its own, launched
    after x's) both read x: written in place, the second would read the new x."""
    x = torch.randn(8, 8)
    expected_x = x.clone()
    compiled = _compiled(_write_then_read_the_old_value, target)
    for _ in range(2):
        tessel.reset_stats()
        expected = _write_then_read_the_old_value(expected_x)
        torch.testing.assert_close(compiled(x), expected)
        torch.testing.assert_close(x, expected_x)
    counters = tessel.stats()
    assert counters["inputs_written_in_place"] == 0, counters
    assert counters["inputs_copied_back"] == 1, counters

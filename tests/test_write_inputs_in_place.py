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
import torch.nn.functional as F

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


def _cache_update(cache, positions, new, query):
    """A static KV cache's update (transformers' StaticCache: index_copy_ of the new
    entries), then a read of the whole new cache."""
    cache.index_copy_(2, positions, new)
    return query @ cache.transpose(-2, -1)


def _repeat_heads(cache):
    """transformers' repeat_kv: each of the cache's heads twice, a copy."""
    batch, heads, length, width = cache.shape
    return cache[:, :, None].expand(batch, heads, 2, length, width).reshape(
        batch, heads * 2, length, width)


def _cache_update_then_attention(keys, values, positions, new_keys, new_values, query):
    """Both caches updated, then grouped-query attention over them (as a Llama layer
    decodes): PyTorch's fused attention, which runs natively between compiled pieces
    (the piece that updates the caches, the one after the attention)."""
    keys.index_copy_(2, positions, new_keys)
    values.index_copy_(2, positions, new_values)
    return F.scaled_dot_product_attention(query, _repeat_heads(keys),
                                          _repeat_heads(values)).sin()


def _cache_args():
    torch.manual_seed(0)
    return (torch.randn(2, 3, 10, 4), torch.tensor([4]), torch.randn(2, 3, 1, 4),
            torch.randn(2, 3, 1, 4))


def _embedded_cache_update(cache, positions, tokens, table, query):
    """The new entries looked up in an embedding table: the gather's kernel checks its
    indices (device asserts on the Triton target, which run nothing eagerly)."""
    return _cache_update(cache, positions, F.embedding(tokens, table).view(2, 3, 1, 4), query)


def test_a_static_cache_update_next_to_checked_gathers_is_in_place():
    cache, positions, _, query = _cache_args()
    tokens, table = torch.tensor([[1], [3], [0], [2], [3], [1]]), torch.randn(5, 4)
    expected_cache = cache.clone()
    compiled = _compiled(_embedded_cache_update, "triton")
    for _ in range(2):
        tessel.reset_stats()
        expected = _embedded_cache_update(expected_cache, positions, tokens, table, query)
        torch.testing.assert_close(compiled(cache, positions, tokens, table, query), expected)
        torch.testing.assert_close(cache, expected_cache)
    counters = tessel.stats()
    assert counters["inputs_written_in_place"] == 1, counters
    assert counters["inputs_copied_back"] == 0, counters


def test_a_static_cache_update_scatters_into_the_cache_itself():
    """The scatter that writes the new entries reads the cache (its original) and
    nothing else does: the Triton host scatters into the cache itself, neither cloning
    it first nor copying the new value back."""
    cache, positions, new, query = _cache_args()
    expected_cache = cache.clone()
    address = cache.data_ptr()
    compiled = _compiled(_cache_update, "triton")
    for step in range(2):
        tessel.reset_stats()
        positions = torch.tensor([4 + step])
        expected = _cache_update(expected_cache, positions, new, query)
        torch.testing.assert_close(compiled(cache, positions, new, query), expected)
        torch.testing.assert_close(cache, expected_cache)
    assert cache.data_ptr() == address
    counters = tessel.stats()
    assert counters["inputs_written_in_place"] == 1, counters
    assert counters["inputs_copied_back"] == 0, counters


def test_caches_updated_before_a_native_attention_are_written_by_their_piece():
    """The graph is split around the fused attention; the caches' writes, which
    aot_autograd puts at the graph's end (in the last piece), go into the piece that
    scatters, which writes them in place: nothing is copied back."""
    keys, _, new_keys, _ = _cache_args()
    values, new_values = torch.randn_like(keys), torch.randn_like(new_keys)
    first, second = _decode_steps(keys, values, new_keys, new_values, torch.randn(2, 6, 1, 4))
    assert len(first["native_ops"]) == 1, first  # the first call compiled the pieces
    assert second["inputs_written_in_place"] == 2, second
    assert second["inputs_copied_back"] == 0, second


def _decode_steps(keys, values, new_keys, new_values, query) -> list[dict]:
    """Two steps of _cache_update_then_attention compiled for the Triton target, at
    positions 4 and 5, each checked against eager (its result and both caches); each
    step's counters."""
    expected_keys, expected_values = keys.clone(), values.clone()
    compiled = _compiled(_cache_update_then_attention, "triton")
    counters = []
    for step in range(2):
        tessel.reset_stats()
        positions = torch.tensor([4 + step])
        with torch.no_grad():
            expected = _cache_update_then_attention(expected_keys, expected_values, positions,
                                                    new_keys, new_values, query)
            actual = compiled(keys, values, positions, new_keys, new_values, query)
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close(keys, expected_keys)
        torch.testing.assert_close(values, expected_values)
        counters.append(tessel.stats())
    return counters


def test_caches_of_one_head_whose_repeats_are_views_are_written_in_place():
    """Multi-query attention (Gemma's one key/value head): repeat_kv's expand and
    reshape of the updated cache is a view of it, which the piece returns beside the
    new value for the native attention. The new value was then not taken for the
    cache's (the frontend counted the view as a second use of the result), and each
    decode step cloned both caches, scattered into the clones and copied them back."""
    torch.manual_seed(0)
    keys, values = torch.randn(2, 1, 10, 4), torch.randn(2, 1, 10, 4)
    new_keys, new_values = torch.randn(2, 1, 1, 4), torch.randn(2, 1, 1, 4)
    _, second = _decode_steps(keys, values, new_keys, new_values, torch.randn(2, 2, 1, 4))
    assert second["inputs_written_in_place"] == 2, second
    assert second["inputs_copied_back"] == 0, second


def _cache_update_reading_the_old_cache(cache, positions, new, query):
    old = query @ cache.transpose(-2, -1)
    cache.index_copy_(2, positions, new)
    return old + query @ cache.transpose(-2, -1)


def test_a_cache_whose_old_value_is_read_too_is_copied_back():
    """A gemm reads the cache before its update: scattered into in place, it might
    read the new entries."""
    cache, positions, new, query = _cache_args()
    expected_cache = cache.clone()
    compiled = _compiled(_cache_update_reading_the_old_cache, "triton")
    tessel.reset_stats()
    expected = _cache_update_reading_the_old_cache(expected_cache, positions, new, query)
    torch.testing.assert_close(compiled(cache, positions, new, query), expected)
    torch.testing.assert_close(cache, expected_cache)
    counters = tessel.stats()
    assert counters["inputs_written_in_place"] == 0, counters
    assert counters["inputs_copied_back"] == 1, counters

"""Small real models under backend="mlir", each matching eager with the compiled path proven."""

import warnings

import pytest
import torch

import tessel

from conftest import assert_compiled


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)), (torch.randn(16, 32),)


def cnn_with_batch_norm():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    return model, (torch.randn(2, 3, 16, 16),)


class DenseTransition(torch.nn.Module):
    """densenet121's pattern: a dense layer's output concatenated to its input, then a
    transition's 1x1 convolution and 2x2 average pooling (on 15x15 maps: the last row
    and column fall outside every window, so their gradient is 0)."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Sequential(torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                          torch.nn.Conv2d(4, 4, 3, padding=1))
        self.transition = torch.nn.Sequential(torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                               torch.nn.Conv2d(8, 6, 1), torch.nn.AvgPool2d(2, 2))

    def forward(self, x):
        return self.transition(torch.cat([x, self.layer(x)], 1)).flatten(1)


def dense_transition():
    return DenseTransition(), (torch.randn(2, 4, 15, 15),)


def transformer_encoder_layer():
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                             batch_first=True, dropout=0.0)
    return layer, (torch.randn(2, 10, 32),)


def on(device, model, inputs):
    """`model` and `inputs` moved to `device`."""
    return model.to(device), tuple(t.to(device) for t in inputs)


@pytest.mark.parametrize("build, training", [
    (mlp, False), (mlp, True), (cnn_with_batch_norm, False), (cnn_with_batch_norm, True),
    (transformer_encoder_layer, True)])
def test_model_inference(build, training, device):
    model, inputs = on(device, *build())
    model.train(training)
    compiled = torch.compile(model, backend="mlir")
    with torch.no_grad():
        expected = model(*inputs)
        actual = compiled(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    assert_compiled()


def test_transformer_layer_fast_path_stays_native(device):
    """In eval mode without grad, the layer is one call to PyTorch's fused kernel, which
    tessel leaves native on purpose (native_ops.py): no fallback, no warning, reported."""
    model, inputs = on(device, *transformer_encoder_layer())
    compiled = torch.compile(model.eval(), backend="mlir")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        actual = compiled(*inputs)
    torch.testing.assert_close(actual, model(*inputs))
    counters = tessel.stats()
    assert counters["graphs_fallback"] == 0 and not counters["fallback_reasons"]
    assert len(counters["native_ops"]) == 1
    assert "aten._transformer_encoder_layer_fwd" in counters["native_ops"][0]


@pytest.mark.parametrize("build", [mlp, cnn_with_batch_norm, transformer_encoder_layer,
                                   dense_transition])
def test_model_gradients(build, device):
    model, inputs = on(device, *build())
    reference = build()[0].to(device)
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="mlir")
    compiled(*inputs).square().mean().backward()
    reference(*inputs).square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4, msg=name)
    counters = assert_compiled(min_graphs=2)
    assert counters["backward_graphs_compiled"] >= 1


@pytest.mark.parametrize("window", [
    dict(kernel_size=2),                                           # tiling (densenet)
    dict(kernel_size=3, stride=1, padding=1),                      # overlapping, padded
    dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, divisor_override=4)])
def test_average_pooling_gradients_compile(window, device):
    """avg_pool2d's backward (which torch-mlir does not lower) is decomposed for every
    window but ceil_mode's: the backward graph compiles and matches eager."""
    x = torch.randn(2, 3, 9, 10, device=device, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()

    def fn(t):
        return torch.nn.functional.avg_pool2d(t.relu(), **window)
    out = torch.compile(fn, backend="mlir")(x)
    weights = torch.randn_like(out)
    (out * weights).sum().backward()
    (fn(x_eager) * weights).sum().backward()
    torch.testing.assert_close(x.grad, x_eager.grad)
    assert assert_compiled(min_graphs=2)["backward_graphs_compiled"] == 1


def test_device_put_to_the_tensors_own_device_compiles(device):
    """transformers' static cache calls `.to("cuda")` on tensors on cuda:0: torch._refs
    makes that a prims.device_put, which torch-mlir cannot lower."""
    def fn(x):
        return torch.ops.prims.device_put(x, torch.device(device.type)) * 2
    x = torch.randn(8, device=device)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x), fn(x))
    assert_compiled()
    assert not tessel.stats()["fallback_reasons"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fn", [torch.erf, torch.nn.functional.gelu, torch.tanh],
                         ids=["erf", "gelu", "tanh"])
def test_half_math_compiles_in_f32_on_the_cpu(fn, dtype):
    """libm and torch-mlir's erf expansion have no bf16/f16 forms: BERT's GELU in bf16
    fell back to eager on the CPU target."""
    x = torch.randn(4, 64, dtype=dtype)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x), fn(x))
    assert_compiled()
    assert not tessel.stats()["fallback_reasons"]

"""Every example of the torch.compile tutorial (../shared/reference) under backend="mlir"."""

import pytest
import scipy.fft
import torch

import tessel
from conftest import assert_compiled


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


def test_function():
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    opt_foo1 = torch.compile(foo, backend="mlir")
    torch.testing.assert_close(opt_foo1(x, y), foo(x, y))
    assert_compiled()


def test_decorator():
    t1, t2 = torch.randn(10, 10), torch.randn(10, 10)

    @torch.compile(backend="mlir")
    def opt_foo2(x, y):
        a = torch.sin(x)
        b = torch.cos(y)
        return a + b

    torch.testing.assert_close(opt_foo2(t1, t2), foo(t1, t2))
    assert_compiled()


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


class OuterModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner_module = MyModule()
        self.outer_lin = torch.nn.Linear(10, 2)

    def forward(self, x):
        x = self.inner_module(x)
        return torch.nn.functional.relu(self.outer_lin(x))


@pytest.mark.parametrize("module_class", [MyModule, OuterModule])
def test_module(module_class):
    t = torch.randn(10, 100)
    mod = module_class()
    opt_mod = torch.compile(mod, backend="mlir")
    torch.testing.assert_close(opt_mod(t), mod(t))
    assert_compiled()


def test_parameters_are_inputs_not_constants():
    """Changing a weight after compiling changes the compiled result (nothing was baked)."""
    mod = MyModule()
    opt_mod = torch.compile(mod, backend="mlir")
    t = torch.randn(4, 100)
    opt_mod(t)
    with torch.no_grad():
        mod.lin.bias += 1.0
    torch.testing.assert_close(opt_mod(t), mod(t))
    assert tessel.stats()["graphs_fallback"] == 0


def test_nested_function_calls():
    t1, t2 = torch.randn(10, 10), torch.randn(10, 10)

    def nested_function(x):
        return torch.sin(x)

    @torch.compile(backend="mlir")
    def outer_function(x, y):
        a = nested_function(x)
        b = torch.cos(y)
        return a + b

    torch.testing.assert_close(outer_function(t1, t2), torch.sin(t1) + torch.cos(t2))
    assert_compiled()


def test_disable_non_recursive_complex():
    def complex_conjugate(z):
        return torch.conj(z)

    @torch.compiler.disable(recursive=False)
    def complex_function(real, imag):
        z = torch.complex(real, imag)
        return complex_conjugate(z)

    def outer_function():
        real = torch.tensor([2, 3], dtype=torch.float32)
        imag = torch.tensor([4, 5], dtype=torch.float32)
        z = complex_function(real, imag)
        return torch.abs(z)

    opt_outer_function = torch.compile(outer_function, backend="mlir")
    # Graphs with complex tensors fall back to eager, each with a warning that says why.
    with pytest.warns(UserWarning, match="complex"):
        result = opt_outer_function()
    torch.testing.assert_close(result, outer_function())
    counters = tessel.stats()
    assert counters["graphs_compiled"] >= 1, counters  # the real-valued graph compiled
    assert all("complex" in reason for reason in counters["fallback_reasons"]), counters


def f1(x, y):
    if x.sum() < 0:
        return -y
    return y


def test_data_dependent_control_flow():
    inp1, inp2 = torch.randn(5, 5), torch.randn(5, 5)
    compile_f1 = torch.compile(f1, backend="mlir")
    assert torch.allclose(f1(inp1, inp2), compile_f1(inp1, inp2))
    assert torch.allclose(f1(-inp1, inp2), compile_f1(-inp1, inp2))
    assert_compiled(min_graphs=2)


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_graph_breaks_both_branches():
    opt_bar = torch.compile(bar, backend="mlir")
    inp1, inp2 = torch.randn(10), torch.randn(10)
    torch.testing.assert_close(opt_bar(inp1, inp2), bar(inp1, inp2))
    torch.testing.assert_close(opt_bar(inp1, -inp2), bar(inp1, -inp2))
    assert_compiled(min_graphs=3)


def test_int_argument():
    def f2(x, y):
        return x + y

    inp1 = torch.randn(5, 5)
    compile_f2 = torch.compile(f2, backend="mlir")
    assert torch.allclose(f2(inp1, 3), compile_f2(inp1, 3))
    assert_compiled()


def test_numpy_scipy_call():
    def f3(x):
        x = x * 2
        x = scipy.fft.dct(x.numpy())
        x = torch.from_numpy(x)
        x = x * 2
        return x

    inp2 = torch.randn(5, 5)
    compile_f3 = torch.compile(f3, backend="mlir")
    torch.testing.assert_close(compile_f3(inp2), f3(inp2))
    assert_compiled(min_graphs=2)


def test_explain():
    explain_output = torch._dynamo.explain(bar)(torch.randn(10), torch.randn(10))
    assert explain_output.graph_count == 2
    assert explain_output.graph_break_count == 1
    # The explained function still compiles with backend="mlir" afterwards.
    opt_bar = torch.compile(bar, backend="mlir")
    a, b = torch.randn(10), torch.randn(10)
    torch.testing.assert_close(opt_bar(a, b), bar(a, b))
    assert_compiled()


def test_fullgraph_raises_on_graph_break():
    opt_bar = torch.compile(bar, backend="mlir", fullgraph=True)
    with pytest.raises(Exception, match="(?i)graph break|data-dependent|generic_jump|Unsupported"):
        opt_bar(torch.randn(10), torch.randn(10))


def test_training_step_like_tutorial():
    """The tutorial's train(): zero_grad, forward, CrossEntropy, backward, Adam step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    reference = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    reference.load_state_dict(model.state_dict())
    data = [(torch.randn(8, 16), torch.randint(10, (8,))) for _ in range(3)]

    def make_train(mod):
        opt = torch.optim.Adam(mod.parameters())

        def train(mod, batch):
            opt.zero_grad(True)
            pred = mod(batch[0])
            loss = torch.nn.CrossEntropyLoss()(pred, batch[1])
            loss.backward()
            opt.step()
            return loss
        return train

    train_opt = torch.compile(make_train(model), backend="mlir")
    train_ref = make_train(reference)
    for batch in data:
        torch.testing.assert_close(train_opt(model, batch), train_ref(reference, batch),
                                   rtol=1e-4, atol=1e-5)
    assert tessel.stats()["backward_graphs_compiled"] >= 1
    assert tessel.stats()["graphs_compiled"] >= 2

"""Training under backend="mlir": the whole train step (zero_grad, forward, loss,
backward, Adam) compiled as one function, as in the torch.compile tutorial, tracks
eager's loss curve over 20 steps within 1e-4 relative, with the backward graph
compiled by tessel and present in the dump."""

import copy

import pytest
import torch

import tessel
from conftest import CountedOps, assert_compiled, parameters_with_gradients
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
def test_loss_curve_tracks_eager(build, tmp_path, device, monkeypatch):
    # A graph from tessel's cache skips the stages whose dump the test reads.
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))
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
    assert list(tmp_path.glob("*backward*/*_torch.mlir")), "backward graph missing from the dump"
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


def test_an_optimizer_step_writes_parameters_and_states_in_place(device):
    """The step's graph keeps its input mutations (new parameters and momentum
    buffers): its kernels write them into the parameters and buffers
    (passes/write_inputs_in_place.py), with no copy, neither one `copy_` per tensor from
    aot_autograd's wrapper nor the host's `_foreach_copy_`, and no buffer allocated for
    them; they equal eager's."""
    def parameters() -> list[torch.nn.Parameter]:
        torch.manual_seed(0)
        made = [torch.nn.Parameter(torch.randn(8, 8, device=device)) for _ in range(6)]
        for p in made:
            p.grad = torch.randn(8, 8, device=device)
        return made
    compiled_params, eager_params = parameters(), parameters()
    compiled_step = torch.compile(
        torch.optim.SGD(compiled_params, lr=0.1, momentum=0.9).step, backend="mlir")
    eager_step = torch.optim.SGD(eager_params, lr=0.1, momentum=0.9).step
    for _ in range(2):  # the first step creates the momentum buffers
        compiled_step()
        eager_step()
    with CountedOps() as counted:
        compiled_step()
    eager_step()
    assert not any("copy" in op or "empty" in op for op in counted.calls), counted.calls
    for compiled, eager in zip(compiled_params, eager_params):
        torch.testing.assert_close(compiled, eager)
    assert_compiled(min_graphs=2)


@pytest.mark.parametrize("target, mode", [("cpu", "default"), ("triton", "reduce-overhead")])
@pytest.mark.parametrize("role", ["forward", "backward", "inference"])
def test_a_graph_of_a_compiled_train_step_that_raises_leaves_training_right(
        role, target, mode, monkeypatch, tmp_path):
    """Nothing a compiled graph raises at run time reaches the user in training: in a
    whole compiled train step, the forward, its backward or the optimizer's step (an
    inference graph) raises from its second call on; the step goes on eagerly, with
    eager's losses, gradients and parameters, and the failure is a recorded fallback.
    On the Triton target (kernels in its interpreter), reduce-overhead runs the
    forward and backward through the CUDA graph trees' wrapper."""
    from tessel.targets.cpu.target import CpuTarget
    from tessel.targets.triton.launcher import interpreting
    from tessel.targets.triton.target import TritonTarget

    if target == "triton" and not interpreting():
        pytest.skip("the Triton variant runs CPU tensors, in Triton's interpreter")
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))  # a cached graph skips compile
    target_class = CpuTarget if target == "cpu" else TritonTarget
    real_compile = target_class.compile
    calls = []

    def raising_from_the_second_call(self, module, signature, options, stages, cache_key=None):
        host, kernels = real_compile(self, module, signature, options, stages, cache_key)
        if signature.role != role:
            return host, kernels

        def raising(*inputs):
            calls.append(len(inputs))
            if len(calls) > 1:
                raise RuntimeError(f"an injected {role} failure")
            return host(*inputs)
        return raising, kernels

    monkeypatch.setattr(target_class, "compile", raising_from_the_second_call)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32),
                                torch.nn.GELU(), torch.nn.Linear(32, 4))
    reference = copy.deepcopy(model)

    def train_step(net):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)

        def step(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(net(x), y)
            loss.backward()
            optimizer.step()
            return loss
        return step
    compiled_step = torch.compile(train_step(model), backend="mlir",
                                  options={"target": target, "mode": mode})
    eager_step = train_step(reference)

    def three_steps_alongside_eager():
        for _ in range(3):
            x, y = torch.randn(8, 16), torch.randn(8, 4)
            torch.testing.assert_close(compiled_step(x, y), eager_step(x, y))
            for actual, expected in zip(model.parameters(), reference.parameters()):
                torch.testing.assert_close(actual.grad, expected.grad)
                torch.testing.assert_close(actual, expected)
    with pytest.warns(UserWarning, match=f"injected {role} failure"):
        three_steps_alongside_eager()
    assert len(calls) == 2, "the graph's compiled code ran again after it raised"
    counters = tessel.stats()
    assert counters["backward_graphs_compiled"] >= 1, counters
    assert any(f"injected {role} failure" in r for r in counters["fallback_reasons"]), counters


def test_a_backward_graph_whose_compiler_raises_runs_eagerly(monkeypatch):
    """aot_autograd compiles a backward graph at its first backward call: an exception
    out of tessel's compiler there would reach the user's `loss.backward()`. It runs the
    graph eagerly instead, its failure a recorded fallback."""
    from tessel.frontend import compile_graph

    real_native_ops_in = compile_graph.native_ops_in

    def raising_for_backward(gm):
        if any(n.op == "placeholder" and n.name.startswith("tangents") for n in gm.graph.nodes):
            raise RuntimeError("an injected compiler failure")
        return real_native_ops_in(gm)

    monkeypatch.setattr(compile_graph, "native_ops_in", raising_for_backward)
    model, inputs = mlp()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir")
    with pytest.warns(UserWarning, match="injected compiler failure"):
        compiled(*inputs).square().mean().backward()
    reference(*inputs).square().mean().backward()
    for actual, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(actual.grad, expected.grad)
    counters = tessel.stats()
    assert counters["forward_graphs_compiled"] == 1, counters
    assert counters["graphs_fallback"] == 1, counters
    assert any("injected compiler failure" in r for r in counters["fallback_reasons"]), counters


def test_a_max_pool_saves_int8_offsets_for_its_backward(tmp_path, monkeypatch):
    """A max pool's backward reads its argmax: saved as int64 indices it is 8 bytes an
    output point, which the gradient's gather reads at each of its taps. As Inductor's
    low-memory pooling, the forward saves each point's int8 offset in its window and the
    backward computes the indices again; the gradients are eager's."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(3, 2, 1), torch.nn.Conv2d(8, 4, 1))
    reference = copy.deepcopy(model)
    x = torch.randn(2, 3, 13, 11)
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path / "dump")})
    compiled(x).square().sum().backward()
    reference(x).square().sum().backward()
    for actual, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(actual.grad, expected.grad, rtol=1e-4, atol=1e-5)
    assert_compiled()
    (backward,) = (tmp_path / "dump").glob("*_backward/00_fx_graph.py")
    signature = backward.read_text().splitlines()[1]
    assert '"i8[2, 8, 7, 6]"' in signature and "i64" not in signature, signature


def test_the_backward_of_a_pad_crops_with_negative_amounts(device):
    """F.pad's backward pads its gradient by negative amounts (a crop): forward and
    backward compile, and the gradient is eager's."""
    x = torch.randn(2, 3, 6, 7, device=device, requires_grad=True)

    def fn(x):
        return (torch.nn.functional.pad(x, (1, 2, 0, 3)) ** 2).sum()
    compiled = torch.compile(fn, backend="mlir", options={"fallback": False})
    (grad,) = torch.autograd.grad(compiled(x), x)
    (expected,) = torch.autograd.grad(fn(x), x)
    torch.testing.assert_close(grad, expected)
    assert assert_compiled()["backward_graphs_compiled"] >= 1


@pytest.mark.parametrize("channels, filters, groups, stride, dilation", [
    (8, 8, 8, 2, 1),    # depthwise, strided (MobileNet's, EfficientNet's downsampling)
    (8, 16, 8, 1, 1),   # two filters per channel
    (4, 8, 2, 3, 2),    # groups of two channels, strided and dilated
])
def test_a_grouped_convolution_backward_compiles(channels, filters, groups, stride, dilation,
                                                 device):
    """A grouped convolution's backward (torch-mlir's own lowering failed) compiles, and
    the gradients of the input, the weight and the bias are eager's."""
    conv = torch.nn.Conv2d(channels, filters, 3, stride=stride, padding=1, dilation=dilation,
                           groups=groups).to(device)
    x = torch.randn(2, channels, 11, 11, device=device, requires_grad=True)

    def fn(x):
        return (conv(x) ** 2).sum()
    compiled = torch.compile(fn, backend="mlir", options={"fallback": False})
    wanted = (x, conv.weight, conv.bias)
    grads = torch.autograd.grad(compiled(x), wanted)
    expected = torch.autograd.grad(fn(x), wanted)
    torch.testing.assert_close(grads, expected, rtol=1e-4, atol=1e-4)
    assert assert_compiled()["backward_graphs_compiled"] >= 1


@pytest.mark.parametrize("norm", [
    lambda: torch.nn.BatchNorm2d(8), lambda: torch.nn.GroupNorm(2, 8),
    lambda: torch.nn.LayerNorm([8, 6, 6])], ids=["batch", "group", "layer"])
@pytest.mark.parametrize("eager_role", ["forward", "backward"])
def test_a_cpu_autocast_norm_runs_eagerly_beside_compiled_code(norm, eager_role, monkeypatch):
    """Under CPU autocast a norm of a bf16 input with float32 weights runs PyTorch's
    mixed-dtype kernels, whose statistics are float32 where the traced graphs say bf16:
    with one of the step's graphs run eagerly (its compiler fails) and the other
    compiled, the step raised, or handed the statistics on in the wrong dtype."""
    from tessel.frontend import compile_graph

    real_native_ops_in = compile_graph.native_ops_in

    def raising_for(gm):
        backward = any(n.op == "placeholder" and n.name.startswith("tangents")
                       for n in gm.graph.nodes)
        if backward == (eager_role == "backward"):
            raise RuntimeError(f"an injected {eager_role} compiler failure")
        return real_native_ops_in(gm)

    monkeypatch.setattr(compile_graph, "native_ops_in", raising_for)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), norm(), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * 36, 4))
    reference = copy.deepcopy(model)
    x = torch.randn(4, 3, 6, 6)

    def loss_of(net):
        with torch.autocast("cpu", torch.bfloat16):
            return net(x).float().square().mean()
    with pytest.warns(UserWarning, match=f"injected {eager_role} compiler failure"):
        torch.compile(loss_of, backend="mlir")(model).backward()
    loss_of(reference).backward()
    for actual, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(actual.grad, expected.grad, rtol=2e-2, atol=2e-2)
    counters = tessel.stats()
    assert counters["graphs_compiled"] == 1 and counters["graphs_fallback"] == 1, counters


def test_adam_updates_a_parameter_and_its_averages_in_one_kernel():
    """Adam's step returns both averages it updates and reads them again for the
    parameter's update: fused (passes/fuse_returned_producers.py), the step compiles
    into two kernels per parameter (its step count's, and one for the rest) instead of
    four, and updates as eager does."""
    shapes = [(16, 8), (8,), (4, 4, 4), (3,)]
    compiled_params = parameters_with_gradients(shapes)
    eager_params = parameters_with_gradients(shapes)
    compiled_step = torch.compile(torch.optim.Adam(compiled_params, foreach=True).step,
                                  backend="mlir")
    eager_step = torch.optim.Adam(eager_params, foreach=True).step
    for _ in range(3):
        compiled_step()
        eager_step()
    for actual, expected in zip(compiled_params, eager_params):
        torch.testing.assert_close(actual, expected)
    counters = assert_compiled()
    assert counters["kernels"] == 2 * len(shapes), counters

"""The fallback contract: what tessel cannot compile runs eagerly as the user's own ops,
in their own dtypes, and no larger than the nodes a failure is pinned on; nothing that
compiled code raises reaches the user unless eager raises it too."""

import inspect
import os

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import tessel
from tessel.stages import CompileFailure
from tessel.targets.cpu.target import CpuTarget
from tessel.targets.triton import kernel_source


class _RecordingOps(TorchDispatchMode):
    """Records every op dispatched, with the dtypes of its tensor arguments."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        dtypes = {a.dtype for a in torch.utils._pytree.tree_leaves(args)
                  if isinstance(a, torch.Tensor)}
        self.calls.append((str(func), dtypes))
        return func(*args, **(kwargs or {}))


def _bf16_block():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.LayerNorm(32),
                               torch.nn.GELU()).to(torch.bfloat16).eval()


def _failing_compile(self, module, signature, options, stages, cache_key=None):
    raise CompileFailure("cpu-fuse", "an injected failure that names no op")


def test_a_graph_that_cannot_compile_runs_the_users_ops_in_their_dtypes(monkeypatch):
    monkeypatch.setattr(CpuTarget, "compile", _failing_compile)
    model, x = _bf16_block(), torch.randn(8, 32, dtype=torch.bfloat16)
    compiled = torch.compile(model, backend="mlir")
    with torch.no_grad(), pytest.warns(UserWarning, match="injected failure"):
        compiled(x)
    with torch.no_grad(), _RecordingOps() as recorded:
        actual = compiled(x)
    assert tessel.stats()["graphs_fallback"] == 1
    ops = [name for name, _ in recorded.calls]
    assert not [name for name in ops if name.startswith("prims.")], ops
    assert "aten.native_layer_norm.default" in ops and "aten.gelu.default" in ops, ops
    assert all(dtypes <= {torch.bfloat16} for _, dtypes in recorded.calls), recorded.calls
    with torch.no_grad():
        torch.testing.assert_close(actual, model(x))


def test_an_exception_at_run_time_runs_the_graph_eagerly_from_then_on(monkeypatch):
    real_compile = CpuTarget.compile
    calls = []

    def raising_compile(self, *args, **kwargs):
        host, kernels = real_compile(self, *args, **kwargs)

        def raising(*inputs):
            calls.append(len(inputs))
            raise RuntimeError("an injected run-time failure")
        return raising, kernels

    monkeypatch.setattr(CpuTarget, "compile", raising_compile)
    fn = lambda x: torch.sin(x) * 2 + x.sum()  # noqa: E731
    compiled = torch.compile(fn, backend="mlir")
    x = torch.randn(16)
    with pytest.warns(UserWarning, match="injected run-time failure"):
        torch.testing.assert_close(compiled(x), fn(x))
    torch.testing.assert_close(compiled(x + 1), fn(x + 1))
    assert len(calls) == 1, "the compiled code ran again after it raised"
    (reason,) = tessel.stats()["fallback_reasons"]
    assert "run time: RuntimeError: an injected run-time failure" in reason


def test_an_error_eager_raises_too_is_raised_as_eager_raises_it():
    compiled = torch.compile(lambda x, i: x[i] * 2, backend="mlir")
    with pytest.raises(IndexError):
        compiled(torch.randn(4), torch.tensor([7]))


def test_an_exception_in_a_backward_graph_leaves_the_gradients_right(monkeypatch):
    real_compile = CpuTarget.compile

    def raising_in_backward(self, module, signature, options, stages, cache_key=None):
        host, kernels = real_compile(self, module, signature, options, stages, cache_key)
        if signature.role != "backward":
            return host, kernels

        def raising(*inputs):
            raise RuntimeError("an injected backward failure")
        return raising, kernels

    monkeypatch.setattr(CpuTarget, "compile", raising_in_backward)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    reference = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                    torch.nn.Linear(16, 1))
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="mlir")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 16)
        for net, opt in ((compiled, optimizer), (reference, reference_optimizer)):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
    for actual, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(actual, expected)
    assert tessel.stats()["forward_graphs_compiled"] >= 1
    assert any("injected backward failure" in r for r in tessel.stats()["fallback_reasons"])


def _gelu_after_a_gemm_on_triton(warning: str):
    """GELU(x @ w) * 3 + 1 compiled for the Triton target and called once, matching
    eager and warning `warning`: (the compiled function, the eager one, w)."""
    fn = lambda x, w: F.gelu(x @ w) * 3 + 1  # noqa: E731
    x, w = torch.randn(16, 32), torch.randn(32, 32)
    compiled = torch.compile(fn, backend="mlir", options={"target": "triton"})
    with pytest.warns(UserWarning, match=warning):
        torch.testing.assert_close(compiled(x, w), fn(x, w), rtol=1e-4, atol=1e-4)
    return compiled, fn, w


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="Triton's interpreter")
def test_a_kernel_the_generator_refuses_falls_back_for_its_nodes_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    real_generate = kernel_source.generate

    def refusing_erf(kernel, *args, **kwargs):
        if "math.erf" in str(kernel):
            raise kernel_source.UnsupportedKernel("linalg.generic", "an injected refusal")
        return real_generate(kernel, *args, **kwargs)

    monkeypatch.setattr(kernel_source, "generate", refusing_erf)
    _gelu_after_a_gemm_on_triton(warning=r"aten\.gelu\.default.* runs eagerly")
    counters = tessel.stats()
    assert counters["graphs_split"] == 1 and counters["graphs_fallback"] == 0, counters
    assert counters["graphs_compiled"] >= 1, counters


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="Triton's interpreter")
def test_a_kernel_that_fails_to_build_at_its_first_launch_falls_back_for_its_nodes(
        monkeypatch, tmp_path):
    from triton.compiler.errors import CompilationError

    from tessel.targets.triton.launcher import KernelLauncher
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    real_call = KernelLauncher.__call__

    def failing_erf(self, direct, stream, *args):
        source = inspect.getsource(self.kernel.fn)  # Triton's interpreter keeps the function
        if "tl.erf" in source:
            raise CompilationError(source, None, "an injected build failure")
        return real_call(self, direct, stream, *args)

    monkeypatch.setattr(KernelLauncher, "__call__", failing_erf)
    compiled, fn, w = _gelu_after_a_gemm_on_triton(warning=r"aten\.gelu\.default.* run eagerly")
    x = torch.randn(16, 32) + 1
    torch.testing.assert_close(compiled(x, w), fn(x, w), rtol=1e-4, atol=1e-4)
    counters = tessel.stats()
    assert counters["graphs_split"] == 1 and counters["graphs_fallback"] == 0, counters
    assert any("kernel build" in r for r in counters["fallback_reasons"]), counters


def test_an_import_failure_that_names_no_op_falls_back_for_its_node_alone(monkeypatch):
    """torch-mlir's importer may raise without naming an op (a literal's tolist() made
    under Dynamo's fake mode ran DeBERTa's whole forward eagerly): the failure is pinned
    on the node being imported, and the graph splits around it."""
    from torch_mlir.extras.fx_importer import GraphNodeImporter
    real_import = GraphNodeImporter._import_torch_op_overload

    def failing_on_sin(self, loc, node, *args, **kwargs):
        if node.target is torch.ops.aten.sin.default:
            raise RuntimeError("an injected failure")
        return real_import(self, loc, node, *args, **kwargs)

    monkeypatch.setattr(GraphNodeImporter, "_import_torch_op_overload", failing_on_sin)

    def fn(x):
        return torch.exp((x * 2).sin() + 1).sum(0)
    x = torch.randn(8, 16)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x), fn(x))
    counters = tessel.stats()
    assert counters["graphs_split"] == 1 and counters["graphs_fallback"] == 0, counters
    assert counters["graphs_compiled"] >= 1, counters
    assert any("aten.sin" in r and "injected" in r for r in counters["fallback_reasons"]), counters


def test_a_kernel_build_failure_whose_split_raises_runs_the_graph_eagerly(monkeypatch):
    """A kernel that fails to build at its first launch has its graph split around the
    nodes it computes; where that split raises (a compiler bug), the graph runs
    eagerly instead of raising in the user's program."""
    from tessel.frontend import compile_graph
    from tessel.targets.base import KernelBuildFailed

    real_compile = CpuTarget.compile

    def failing_to_build_sin(self, *args, **kwargs):
        _, kernels = real_compile(self, *args, **kwargs)

        def failing(*inputs):
            raise KernelBuildFailed("an injected build failure", frozenset({"sin"}))
        return failing, kernels

    def raising_split(*args, **kwargs):
        raise RuntimeError("an injected split failure")

    monkeypatch.setattr(CpuTarget, "compile", failing_to_build_sin)
    monkeypatch.setattr(compile_graph, "split_graph", raising_split)
    fn = lambda x: torch.sin(x) * 2 + x.sum()  # noqa: E731
    compiled = torch.compile(fn, backend="mlir")
    x = torch.randn(16)
    with pytest.warns(UserWarning, match="injected build failure"):
        torch.testing.assert_close(compiled(x), fn(x))
    torch.testing.assert_close(compiled(x + 1), fn(x + 1))
    assert any("kernel build" in r for r in tessel.stats()["fallback_reasons"])


def test_a_copy_to_another_device_is_a_native_op_not_a_fallback():
    """A `.to(device)` across devices (transformers' static cache moves a CPU tensor to
    the GPU) is PyTorch's own copy between compiled pieces."""
    fn = lambda x: (x.sin() * 2).to("meta")  # noqa: E731
    assert torch.compile(fn, backend="mlir")(torch.randn(8)).device.type == "meta"
    counters = tessel.stats()
    assert counters["graphs_compiled"] == 1 and not counters["fallback_reasons"], counters
    (native,) = counters["native_ops"]
    assert "aten._to_copy.default: a copy between devices" in native


@pytest.mark.parametrize(("fn", "native_op"), [
    (lambda a: torch.linalg.inv(a @ a.mT + 4 * torch.eye(4)) * 2 + 1, "aten.linalg_inv_ex.default"),
    (lambda a: torch.linalg.eigvalsh(a + a.mT).exp(), "aten._linalg_eigh.default"),
    (lambda a: torch.fft.rfft(a.sin() * 2), "aten._fft_r2c.default"),
], ids=["inv", "eigvalsh", "rfft"])
def test_lapack_and_fft_calls_are_native_ops_with_fallback_off(fn, native_op):
    """LAPACK factorizations and FFTs run as PyTorch's library calls between compiled
    pieces (native_ops.py, as Inductor leaves them to ATen): no fallback, so they run
    with fallback off too."""
    a = torch.randn(4, 4)
    compiled = torch.compile(fn, backend="mlir", options={"fallback": False})
    torch.testing.assert_close(compiled(a), fn(a))
    counters = tessel.stats()
    assert counters["graphs_compiled"] >= 1 and not counters["fallback_reasons"], counters
    assert any(f": {native_op}: " in entry for entry in counters["native_ops"]), counters


def test_a_split_graph_whose_eager_ops_fail_on_compiled_results_runs_eagerly(monkeypatch):
    """The eager calls between compiled pieces are guarded too: a piece returning a
    wrong value that only the next eager op trips over (a CUDA piece returned a CPU
    tensor: "Expected all tensors to be on the same device") runs the graph eagerly."""
    real_compile = CpuTarget.compile

    def truncating(self, *args, **kwargs):
        host, kernels = real_compile(self, *args, **kwargs)
        return (lambda *inputs: tuple(r[..., :3] for r in host(*inputs))), kernels

    monkeypatch.setattr(CpuTarget, "compile", truncating)
    fn = lambda x, y: torch.special.zeta(x.sin() + 2, y) * 2  # noqa: E731 -- zeta: eager
    x, y = torch.rand(8), torch.rand(8) + 1
    compiled = torch.compile(fn, backend="mlir")
    with pytest.warns(UserWarning, match="its compiled code raised"):
        torch.testing.assert_close(compiled(x, y), fn(x, y))
    torch.testing.assert_close(compiled(x, y), fn(x, y))
    assert tessel.stats()["graphs_split"] == 1


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="Triton's interpreter")
def test_a_constant_tensor_is_an_input_of_the_compiled_code(monkeypatch, tmp_path):
    """torch-mlir imports `torch.tensor([...])` as a dense literal, which the Triton
    host program could not make ("is not a scalar": the whole graph ran eagerly)."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    fn = lambda x: (x.sin(), torch.tensor([[1.0, 2.0, 3.0]]).expand(4, 3) * 2 + x)  # noqa: E731
    x = torch.randn(4, 3)
    compiled = torch.compile(fn, backend="mlir", options={"target": "triton"})
    for actual, expected in zip(compiled(x), fn(x)):
        torch.testing.assert_close(actual, expected)
    counters = tessel.stats()
    assert counters["graphs_compiled"] == 1 and not counters["fallback_reasons"], counters


def test_a_graph_of_constants_alone_compiles():
    """A graph with no inputs: its lifted constants are its only inputs."""
    fn = lambda: torch.tensor([2.0, 3.0]) * 2  # noqa: E731
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(), fn())
    counters = tessel.stats()
    assert counters["graphs_compiled"] == 1 and not counters["fallback_reasons"], counters


def test_a_piece_that_writes_an_input_and_returns_one_value():
    """A split graph's piece that writes an input (a static cache's update) and returns
    a single value: its results were spread as a tuple ("Value after * must be an
    iterable, not Node", the Llama and Gemma decoders' cache update ran eagerly)."""
    def fn(x, cache):
        cache.add_(torch.special.zeta(x.abs() + 2, 2.0))  # zeta runs eagerly
        return cache.sin()
    x, cache = torch.rand(8), torch.rand(8)
    expected_cache = cache.clone()
    expected = fn(x, expected_cache)
    actual = torch.compile(fn, backend="mlir")(x, cache)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(cache, expected_cache)
    reasons = tessel.stats()["fallback_reasons"]
    assert all("special_zeta" in r for r in reasons), reasons


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_a_convolution_backward_is_native_on_cuda_only(device):
    """On CUDA a convolution's backward stays one aten call, cuDNN's (its lowering ran
    ResNet-50's weight gradients as slow huge-kernel convolutions), grouped ones too:
    their decomposition into forward convolutions declines CUDA tensors. On the CPU
    both are compiled. Traced on fake tensors, so no GPU is needed."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tessel.frontend.lowerable_decompositions import grouped_convolution_backward
    from tessel.frontend.native_ops import native_reason

    with FakeTensorMode():
        grad = torch.empty(2, 8, 6, 6, device=device)
        x = torch.empty(2, 8, 6, 6, device=device)
        weight = torch.empty(8, 2, 3, 3, device=device)
        graph = torch.fx.Graph()
        placeholders = []
        for name, value in (("grad", grad), ("x", x), ("weight", weight)):
            placeholders.append(graph.placeholder(name))
            placeholders[-1].meta["val"] = value
        node = graph.call_function(torch.ops.aten.convolution_backward.default, (
            *placeholders, [8], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]))
        reason = native_reason(node)
        decomposed = grouped_convolution_backward(grad, x, weight, [8], [1, 1], [1, 1],
                                                  [1, 1], False, [0, 0], 4, [True, True, False])
    if device == "cuda":
        assert reason is not None and "cuDNN" in reason
        assert decomposed is NotImplemented
    else:
        assert reason is None
        assert decomposed[0].shape == x.shape and decomposed[1].shape == weight.shape

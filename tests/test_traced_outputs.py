"""A compiled graph's results are what Dynamo traced: the code after a graph break is
traced on them (tessel/frontend/traced_outputs.py)."""

import operator

import pytest
import torch
from conftest import assert_compiled

import tessel
from tessel.targets.cpu.target import CpuTarget


def _compiled_results_changed(monkeypatch, change):
    """Every host program the CPU target compiles returns `change(result)` for each
    2-D result."""
    real_compile = CpuTarget.compile

    def compile_changing(self, module, signature, options, stages, cache_key=None):
        host, kernels = real_compile(self, module, signature, options, stages, None)

        def changed(*inputs):
            return tuple(change(r) if isinstance(r, torch.Tensor) and r.dim() == 2 else r
                         for r in host(*inputs))
        return changed, kernels
    monkeypatch.setattr(CpuTarget, "compile", compile_changing)


def scaled_then_viewed(x):
    y = x * 2 + 1
    torch._dynamo.graph_break()
    return y.view(-1) * 3   # a view that eager's contiguous `y` takes, a transposed one not


def test_a_result_laid_out_otherwise_is_copied_into_eager_layout(monkeypatch):
    """A result that comes back transposed in memory would make Dynamo's trace of the
    code after the graph break raise (a view of it) into the user's program."""
    _compiled_results_changed(monkeypatch, lambda r: r.t().contiguous().t())
    x = torch.randn(6, 5)
    compiled = torch.compile(scaled_then_viewed, backend="mlir")
    for _ in range(2):
        torch.testing.assert_close(compiled(x), scaled_then_viewed(x))
    assert_compiled()


def test_a_result_of_another_dtype_runs_the_graph_eagerly(monkeypatch):
    _compiled_results_changed(monkeypatch, lambda r: r.double())
    x = torch.randn(6, 5)
    compiled = torch.compile(scaled_then_viewed, backend="mlir")
    with pytest.warns(UserWarning, match="runs eagerly.*dtype torch.float64"):
        actual = compiled(x)
    torch.testing.assert_close(actual, scaled_then_viewed(x))
    torch.testing.assert_close(compiled(x), scaled_then_viewed(x))
    assert any("results: result 0 has dtype" in r for r in tessel.stats()["fallback_reasons"])


@pytest.mark.parametrize("native", [True, False])
def test_a_native_op_s_result_may_come_back_on_another_device(native):
    """The fused attentions' philox seed and offset are CPU tensors in eager outside a
    CUDA graph capture, while their fake kernel puts them on the query's device: the
    compiled code returns eager's own op's result, which is not a wrong one. A result
    tessel computes on another device than traced still sends the graph to eager."""
    from tessel.frontend.traced_outputs import as_traced
    aten = torch.ops.aten
    graph = torch.fx.Graph()
    q = graph.placeholder("q")
    q.meta["val"] = torch.empty(1, 2, 4, 8, device="meta")
    if native:
        attention = graph.call_function(aten._scaled_dot_product_efficient_attention.default,
                                        (q, q, q, None, False))
        attention.meta["val"] = aten._scaled_dot_product_efficient_attention(
            q.meta["val"], q.meta["val"], q.meta["val"], None, False)
        result = graph.call_function(operator.getitem, (attention, 2))
    else:
        result = graph.call_function(aten.sum.default, (q,))
    result.meta["val"] = torch.empty((), dtype=torch.long if native else torch.float,
                                     device="meta")
    graph.output((result,))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    returned = torch.tensor(7 if native else 7.0)   # on the CPU, traced on "meta"
    compiled = as_traced(lambda q: (returned,), gm, "g", fallback=False)
    if native:
        assert compiled(torch.empty(1, 2, 4, 8))[0] is returned
    else:
        with pytest.raises(RuntimeError, match="result 0 has device cpu, traced meta"):
            compiled(torch.empty(1, 2, 4, 8))




def _traced_scaling_positions_on(device: str) -> torch.fx.GraphModule:
    """The trace of `torch.arange(4, device=device) * scale` for a 0-d CPU `scale`, as
    aot_autograd leaves it: fake values on each node (a CUDA one needs no GPU)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    graph = torch.fx.Graph()
    scale = graph.placeholder("scale")
    positions = graph.call_function(torch.ops.aten.arange.default, (4,), {"device": device})
    scaled = graph.call_function(torch.ops.aten.mul.Tensor, (positions, scale))
    graph.output((scaled,))
    with FakeTensorMode():
        scale.meta["val"] = torch.empty(())
        positions.meta["val"] = torch.empty(4, device=device)
        scaled.meta["val"] = torch.empty(4, device=device)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_a_graph_that_makes_its_gpu_tensors_from_cpu_scalars_compiles_for_the_gpu():
    """A graph whose inputs are CPU scalars but which computes CUDA tensors (positions
    made on the GPU, scaled) compiles for the Triton target: "auto" had picked the CPU
    target by the inputs alone, whose results then came back on the CPU where Dynamo
    traced cuda:0 (a run-time fallback at every call)."""
    from tessel.frontend.traced_facts import computing_device, resolve_target
    from tessel.options import Options
    gpu, cpu = _traced_scaling_positions_on("cuda"), _traced_scaling_positions_on("cpu")
    assert computing_device(gpu) == "cuda:0" and computing_device(cpu) == "cpu"
    assert resolve_target(Options(target="auto"), gpu) == "triton"
    assert resolve_target(Options(target="auto"), cpu) == "cpu"

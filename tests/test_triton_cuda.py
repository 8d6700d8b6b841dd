"""The Triton target on a real GPU (skipped without one): run with TRITON_INTERPRET=0,
e.g. `TRITON_INTERPRET=0 python -m pytest tests/test_triton_cuda.py`."""

import json

import pytest
import torch
import triton

import tessel
from conftest import assert_compiled
from tessel.targets.triton import compile_pool, cubin_launch, target
from tessel.targets.triton.launcher import KernelLauncher, compile_in_parallel, interpreting

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or interpreting(),
                                reason="needs a CUDA device and TRITON_INTERPRET=0")


def _recorded_cuda_graphs(node_lists) -> list:
    """The nodes of a CUDA graph tree (roots or children, by function), depth first."""
    return [recorded for nodes in node_lists.values() for node in nodes
            for recorded in [node, *_recorded_cuda_graphs(node.children)]]


def recorded_in_trees() -> list:
    """The graphs recorded in the current device's CUDA graph tree."""
    from torch._inductor import cudagraph_trees
    manager = cudagraph_trees.get_container(torch.cuda.current_device()).tree_manager
    return [] if manager is None else _recorded_cuda_graphs(manager.roots)


@pytest.fixture
def runners(monkeypatch) -> list:
    """The CUDA graph runners the Triton target creates while a test runs."""
    created = []

    class RecordedRunner(target.CudaGraphRunner):
        def __init__(self, *args):
            super().__init__(*args)
            created.append(self)
    monkeypatch.setattr(target, "CudaGraphRunner", RecordedRunner)
    return created


def test_launches_after_the_first_skip_the_jit_and_respecialize_for_unaligned_inputs(
        tmp_path, monkeypatch):
    launchers = []

    class RecordedLauncher(KernelLauncher):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            launchers.append(self)
    monkeypatch.setattr(target, "KernelLauncher", RecordedLauncher)

    def fn(a, b):
        return torch.sigmoid(a) * b + a
    compiled = torch.compile(fn, backend="mlir", options={
        "dump_dir": str(tmp_path), "mode": "max-autotune-no-cudagraphs"})
    storage = torch.randn(2 * 4096 + 1, device="cuda")
    aligned, unaligned = storage[:8192].view(64, 128), storage[1:8193].view(64, 128)
    b = torch.randn(64, 128, device="cuda")
    for a in (aligned, aligned, unaligned, aligned):
        torch.testing.assert_close(compiled(a, b), fn(a, b))
    assert_compiled()
    # Each launcher loaded its kernel once, into PyTorch's static launcher.
    assert launchers and all(launcher.launch is not None and launcher.cubin is not None
                             for launcher in launchers)
    assert "launch_mode(device, arg0_1, arg1_1)" in next(tmp_path.rglob("*host_program.py")).read_text()


def test_a_cached_graph_loads_its_kernels_from_cubins_without_triton_s_jit(
        tmp_path, monkeypatch):
    """The graph cache keeps each launch's cubin description: a second compile of the
    graph (as in a new process) launches the same kernels without the JIT."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))

    def fn(x, w):
        return torch.softmax(x * w, -1) + torch.sin(x)
    x, w = torch.randn(64, 256, device="cuda"), torch.randn(256, device="cuda")
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x, w), fn(x, w))
    entries = [json.loads(path.read_text()) for path in (tmp_path / "graphs").glob("*.json")]
    cubins = [cubin for entry in entries for cubin in entry.get("cubins", {}).values()]
    assert cubins and tessel.stats()["kernels_loaded_from_cubins"] == 0

    def no_jit(*args, **kwargs):
        raise AssertionError("Triton's JIT ran for a cached graph")
    monkeypatch.setattr(triton.runtime.jit.JITFunction, "run", no_jit)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x, w), fn(x, w))
    counters = assert_compiled(min_graphs=2)
    assert counters["graphs_cached"] == 1
    assert counters["kernels_loaded_from_cubins"] == len(cubins)


def test_kernels_the_static_launcher_refuses_launch_through_triton_s(monkeypatch):
    monkeypatch.setattr(cubin_launch, "describe", lambda compiled, arguments: None)

    def fn(x):
        return torch.nn.functional.gelu(x) * 3
    x = torch.randn(300, 70, device="cuda")
    compiled = torch.compile(fn, backend="mlir")
    for _ in range(2):
        torch.testing.assert_close(compiled(x), fn(x))
    assert_compiled()


def test_reduce_overhead_replays_a_cuda_graph_that_sees_new_inputs():
    def fn(x, w):
        return torch.softmax(x @ w, dim=-1) * 2
    compiled = torch.compile(fn, backend="mlir", mode="reduce-overhead")
    w = torch.randn(64, 64, device="cuda")
    for _ in range(3):
        x = torch.randn(32, 64, device="cuda")
        torch.testing.assert_close(compiled(x, w), fn(x, w), atol=1e-3, rtol=1e-3)
    assert tessel.stats()["graphs_compiled"] == 1


def test_reduce_overhead_keeps_an_inference_graph_s_outputs_in_the_trees_pool(runners):
    """An inference graph replays in the CUDA graph trees, which return its outputs
    where the replay wrote them instead of a clone: a later call's output takes the
    same memory (torch.compile's contract for this mode, as with Inductor)."""
    def fn(x):
        return torch.sin(x) * 2
    compiled = torch.compile(fn, backend="mlir", mode="reduce-overhead")
    for _ in range(3):  # a warm-up call, a recording, a replay
        x = torch.randn(64, 64, device="cuda")
        torch.testing.assert_close(compiled(x), fn(x))
    first = compiled(torch.randn(64, 64, device="cuda"))
    x = torch.randn(64, 64, device="cuda")
    second = compiled(x)
    torch.testing.assert_close(second, fn(x))
    assert second.data_ptr() == first.data_ptr()
    assert len(recorded_in_trees()) == 1 and runners == []


def accumulate(x, total):
    total.add_(x)
    return total * 2


def test_reduce_overhead_launches_one_by_one_where_a_replay_with_its_copies_is_slower(
        runners):
    """A graph that writes its input replays in a capture of its own. Here one
    pointwise kernel over large tensors: the replay saves one launch and copies the
    inputs in, the written one back and the output out, so plain launches are kept
    (timed at capture)."""
    compiled = torch.compile(accumulate, backend="mlir", mode="reduce-overhead")
    total, expected = (torch.zeros(4096, 8192, device="cuda") for _ in range(2))
    for _ in range(2):
        x = torch.randn(4096, 8192, device="cuda")
        torch.testing.assert_close(compiled(x, total), accumulate(x, expected))
    assert tessel.stats()["cuda_graphs_declined"] == 1
    assert len(runners) == 1 and list(runners[0].captures.values()) == [None]


def test_reduce_overhead_replays_untimed_where_timing_runs_out_of_memory(monkeypatch, runners):
    from tessel.targets.triton import cuda_graphs

    def out_of_memory(call):
        raise torch.OutOfMemoryError("CUDA out of memory (a test's)")
    monkeypatch.setattr(cuda_graphs, "gpu_milliseconds", out_of_memory)
    compiled = torch.compile(accumulate, backend="mlir", mode="reduce-overhead")
    total, expected = (torch.zeros(64, 64, device="cuda") for _ in range(2))
    for _ in range(2):
        x = torch.randn(64, 64, device="cuda")
        torch.testing.assert_close(compiled(x, total), accumulate(x, expected))
    assert len(runners) == 1 and all(c is not None for c in runners[0].captures.values())


def test_reduce_overhead_captures_a_graph_whose_index_inputs_are_checked(runners):
    """Token ids into an embedding are range-checked at every call with new ids: on the
    GPU by a device assert, which a capture holds, where reading the range back to the
    host made the capture fail (GPT-2 and Whisper ran without replays)."""
    table = torch.randn(100, 64, device="cuda")

    def fn(ids):
        return torch.nn.functional.embedding(ids, table).relu() * 2
    compiled = torch.compile(fn, backend="mlir", mode="reduce-overhead")
    for _ in range(3):
        ids = torch.randint(0, 100, (8, 32), device="cuda")
        torch.testing.assert_close(compiled(ids), fn(ids))
    assert len(recorded_in_trees()) == 1 and runners == []
    torch.randn(4, device="cuda")


def test_a_failed_capture_leaves_the_stream_and_the_random_generator_as_they_were():
    from tessel.targets.triton.cuda_graphs import captured

    stream = torch.cuda.current_stream()
    x = torch.randn(16, device="cuda")
    with pytest.raises(RuntimeError):
        captured(torch.cuda.CUDAGraph(), lambda t: float(t.sum()), [x])
    assert torch.cuda.current_stream() == stream
    assert torch.randn(4, device="cuda").isfinite().all()


def attention_block():
    """A block that is split around its fused attention (left native by choice), with
    kernels on both sides of it."""
    attention = torch.nn.MultiheadAttention(64, 4, batch_first=True, device="cuda",
                                            dtype=torch.float16).eval()

    def fn(x):
        y = torch.nn.functional.layer_norm(x, (64,))
        q, k, v = (y * scale for scale in (1.0, 0.5, 2.0))
        out = torch.nn.functional.scaled_dot_product_attention(
            *(t.view(2, 128, 4, 16).transpose(1, 2) for t in (q, k, v)), is_causal=True)
        return attention.out_proj(out.transpose(1, 2).reshape(2, 128, 64)).relu() + x
    return fn


def test_reduce_overhead_captures_the_attention_between_pieces_in_one_cuda_graph(runners):
    """The split block replays as one CUDA graph, attention included, and sees each
    call's new input."""
    fn = attention_block()
    compiled = torch.compile(fn, backend="mlir", mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(2, 128, 64, device="cuda", dtype=torch.float16)
            torch.testing.assert_close(compiled(x), fn(x), atol=2e-2, rtol=2e-2)
    counters = tessel.stats()
    assert counters["native_ops"] and counters["graphs_compiled"] >= 2
    # One recording, of the whole split graph: no piece replays on its own.
    assert len(recorded_in_trees()) == 1 and runners == []


def test_a_split_graph_compiles_its_pieces_kernels_before_any_piece_runs(
        tmp_path, monkeypatch):
    """The split block's first call compiles both pieces' kernels in one batch; each
    piece's own first call then finds all of its kernels compiled."""
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))  # nothing compiled before
    to_compile = []

    def counting(launches):
        to_compile.append(len(compile_pool.specializations(launches)))
        compile_in_parallel(launches)
    monkeypatch.setattr(target, "compile_in_parallel", counting)
    fn = attention_block()
    with torch.no_grad():
        x = torch.randn(2, 128, 64, device="cuda", dtype=torch.float16)
        torch.testing.assert_close(torch.compile(fn, backend="mlir")(x), fn(x),
                                   atol=2e-2, rtol=2e-2)
    assert tessel.stats()["native_ops"]
    assert_compiled(min_graphs=2)
    together, *by_piece = to_compile
    assert together >= 2 and by_piece == [0, 0]


def test_bf16_linear_multiplies_bf16_operands_into_f32():
    """GPT-2's projections: PyTorch's addmm decomposition widens to f32; the gemm runs
    on the bf16 tensors with an f32 result (torch.mm's out_dtype)."""
    def fn(x, w, b):
        return torch.nn.functional.linear(x, w, b).relu()
    x, w, b = (torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
               for shape in ((256, 128), (64, 128), (64,)))
    compiled = torch.compile(fn, backend="mlir")
    torch.testing.assert_close(compiled(x, w, b), fn(x, w, b))
    assert_compiled()


def test_a_cpu_scalar_tensor_next_to_cuda_tensors_compiles():
    """A 0-d CPU tensor mixes with CUDA tensors in eager (dynamic=True passes Python
    floats so): the host program moves it to the GPU instead of refusing the graph."""
    def fn(x, scale):
        return torch.sigmoid(x) * scale
    compiled = torch.compile(fn, backend="mlir")
    x, scale = torch.randn(64, 32, device="cuda"), torch.tensor(3.0)
    torch.testing.assert_close(compiled(x, scale), fn(x, scale))
    assert_compiled()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (300, 200, 500)], ids=["square", "ragged"])
def test_gemm_templates_match_eager_in_half_precision(dtype, shape, tmp_path):
    """Under max-autotune, a half linear + bias + gelu small enough for
    fuse-gemm-epilogues runs as one tl.dot template, its tile timed; with bf16
    arithmetic (which Triton's interpreter gets wrong) checked here."""
    m, k, n = shape
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = torch.randn(n, k, device="cuda", dtype=dtype) * k ** -0.5
    b = torch.randn(n, device="cuda", dtype=dtype)

    def fn(x, w, b):
        return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b), approximate="tanh")
    compiled = torch.compile(fn, backend="mlir", options={
        "dump_dir": str(tmp_path), "mode": "max-autotune-no-cudagraphs"})
    # The template sums K in another order than cuBLAS, so where the sum lies near a
    # rounding boundary, its half result can be one ulp off eager's: against the result
    # in f64, its error may exceed eager's by one ulp of the largest output, no more.
    exact = fn(x.double(), w.double(), b.double())
    eager_error = (fn(x, w, b).double() - exact).abs().max().item()
    compiled_error = (compiled(x, w, b).double() - exact).abs().max().item()
    ulp = torch.finfo(dtype).eps * exact.abs().max().item()
    assert compiled_error <= eager_error + ulp, (compiled_error, eager_error, ulp)
    assert assert_compiled()["kernels"] == 1
    assert "tl.dot(" in next(tmp_path.rglob("*triton_kernels.py")).read_text()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_a_graph_whose_tensors_are_on_another_device_than_the_current_runs_there(mode):
    """Kernels load and launch, and CUDA graphs capture, on the current device: a graph
    whose tensors sit on another makes theirs current while it runs."""
    def fn(x, w):
        return torch.softmax(x @ w, -1) + torch.sin(x).sum(-1, keepdim=True)
    x, w = torch.randn(64, 128, device="cuda:1"), torch.randn(128, 128, device="cuda:1")
    assert torch.cuda.current_device() == 0
    compiled = torch.compile(fn, backend="mlir", options={"mode": mode, "fallback": False})
    for _ in range(3):
        torch.testing.assert_close(compiled(x, w), fn(x, w))
    assert_compiled()
    assert torch.cuda.current_device() == 0


def test_a_graph_making_gpu_tensors_from_a_cpu_scalar_runs_on_the_gpu():
    """Its only input is a 0-d CPU tensor; it makes its tensors on the GPU: it compiles
    for the Triton target and its result is on the GPU, as traced (the CPU target had
    returned it on the CPU, and every call fell back)."""
    def positions(scale):
        return torch.arange(64, device="cuda") * scale
    scale = torch.tensor(2.0)
    compiled = torch.compile(positions, backend="mlir", options={"fallback": False})
    for _ in range(2):
        torch.testing.assert_close(compiled(scale), positions(scale))
    assert assert_compiled()["graphs_compiled"] == 1


def test_bf16_sums_accumulate_in_f32():
    """On the GPU too (tl.sum adds bf16 in bf16): looped rows of 0.3s and rows of one
    block match eager's f32-accumulated sums."""
    def fn(x, y):
        return x.sum(-1), y.sum(-1)
    x = torch.full((2, 131072), 0.3, dtype=torch.bfloat16, device="cuda")
    y = torch.rand(4, 4096, dtype=torch.bfloat16, device="cuda")
    for actual, expected in zip(torch.compile(fn, backend="mlir")(x, y), fn(x, y)):
        torch.testing.assert_close(actual, expected)
    assert_compiled()


def test_a_whole_tensor_reduction_larger_than_a_block_loops_in_one_program():
    """A loss's mean and a variance over 19207 points (blocks of 1024; a prime number,
    which split-reductions cannot cut into equal pieces) compile for the GPU and match
    eager."""
    def fn(x, y):
        return torch.nn.functional.mse_loss(x, y), x.var()
    x, y = torch.randn(19207, device="cuda"), torch.randn(19207, device="cuda")
    for actual, expected in zip(torch.compile(fn, backend="mlir")(x, y), fn(x, y)):
        torch.testing.assert_close(actual, expected)
    assert_compiled()


def test_a_train_step_replays_forward_and_backward_in_one_cuda_graph_tree(runners):
    """reduce-overhead on a model's loss and its backward: the forward and the backward
    are recorded once each, in PyTorch's CUDA graph trees, where the backward reads the
    forward's activations in place (no copies, unlike a capture of its own); the losses
    follow eager's, step by step, with the optimizer's update between replays."""
    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10)).cuda()
    model, reference = build(), build()

    def trainer(module, compiled: bool):
        optimizer = torch.optim.SGD(module.parameters(), lr=0.1)

        def loss_of(x, y):
            return torch.nn.functional.cross_entropy(module(x), y)
        if compiled:
            loss_of = torch.compile(loss_of, backend="mlir", mode="reduce-overhead")

        def step(x, y):
            optimizer.zero_grad(True)
            loss = loss_of(x, y)
            loss.backward()
            optimizer.step()
            return loss.item()
        return step
    compiled, eager = trainer(model, True), trainer(reference, False)
    for _ in range(5):
        x, y = torch.randn(16, 3, 16, 16, device="cuda"), torch.randint(10, (16,), device="cuda")
        torch.testing.assert_close(compiled(x, y), eager(x, y), atol=1e-4, rtol=1e-4)
    assert_compiled()
    # torch 2.11 compiles the loss twice here (2 forward and 2 backward graphs; the
    # CPU's 2.13 once), and records 3 of them.
    recorded = recorded_in_trees()
    assert len(recorded) >= 2
    assert any(node.cudagraph_managed_idxs for node in recorded[1:]), \
        "a backward reads its forward's outputs in place"
    assert runners == []


def test_a_train_step_replays_a_backward_split_around_convolutions_whole(runners):
    """A backward split around cuDNN's convolution backwards (native ops) is recorded
    in the step's CUDA graph tree as one graph, the convolutions included, not one
    recording per piece; the losses follow eager's step by step."""
    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Flatten(), torch.nn.Linear(8 * 16 * 16, 10)).cuda()
    model, reference = build(), build()
    compiled_loss = torch.compile(
        lambda x, y: torch.nn.functional.cross_entropy(model(x), y), backend="mlir",
        mode="reduce-overhead")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in (model, reference)]
    for _ in range(5):
        x, y = torch.randn(16, 3, 16, 16, device="cuda"), torch.randint(10, (16,), device="cuda")
        losses = []
        for loss_of, optimizer in ((compiled_loss, optimizers[0]), (
                lambda x, y: torch.nn.functional.cross_entropy(reference(x), y), optimizers[1])):
            optimizer.zero_grad(True)
            loss = loss_of(x, y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        # Within rounding: a replay that read a stale input would be off by far more.
        torch.testing.assert_close(*losses, atol=1e-3, rtol=1e-3)
    counters = tessel.stats()
    assert any("convolution_backward" in line for line in counters["native_ops"])
    # A forward and a backward per compile (torch 2.11 compiles the loss twice): a
    # recording per backward piece would make at least three per backward.
    assert 2 <= len(recorded_in_trees()) <= 4 and runners == []


@pytest.mark.parametrize("forced", [False, True], ids=["timed", "replayed"])
def test_reduce_overhead_writes_the_inputs_a_graph_mutates(forced, runners, monkeypatch):
    """An accumulator that the graph writes, neither a parameter nor marked static: the
    capture's timing restores it after its extra calls, and a replay copies it back
    from the capture's buffer."""
    from tessel.targets.triton import cuda_graphs
    if forced:
        monkeypatch.setattr(cuda_graphs.CudaGraphRunner, "_replay_is_faster",
                            lambda self, capture, args: True)
    compiled = torch.compile(accumulate, backend="mlir", mode="reduce-overhead")
    total, expected = (torch.zeros(64, 64, device="cuda") for _ in range(2))
    for _ in range(4):
        x = torch.randn(64, 64, device="cuda")
        torch.testing.assert_close(compiled(x, total), accumulate(x, expected))
        torch.testing.assert_close(total, expected)
    assert_compiled()
    assert len(runners) == 1 and len(runners[0].mutated_inputs) == 1
    if forced:
        assert all(capture is not None for capture in runners[0].captures.values())


def _gradients_of(attention, *inputs) -> list:
    """The gradients of `attention(*inputs).sum()` for each input, from a backward of
    its own (the inputs' gradients reset first)."""
    for t in inputs:
        t.grad = None
    attention(*inputs).sum().backward()
    return [t.grad for t in inputs]


def test_a_training_step_through_efficient_attention_stays_compiled():
    """fp32 attention with a mask runs PyTorch's memory-efficient kernel, whose philox
    seed and offset are CPU tensors in eager (outside a capture) and traced on the
    query's device. The forward saves them for the backward: the first-call check took
    them for wrong results and ran the forward eagerly from then on (the suite's fp32
    train rows of gpt2, bert and deit_small, hf_swin's)."""
    q, k, v = (torch.randn(2, 4, 128, 32, device="cuda", requires_grad=True) for _ in range(3))
    mask = torch.randn(2, 1, 128, 128, device="cuda")

    def attention(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    compiled = torch.compile(attention, backend="mlir")
    for _ in range(2):
        compiled(q, k, v).sum().backward()
    grads = [t.grad / 2 for t in (q, k, v)]
    for got, expected in zip(grads, _gradients_of(attention, q, k, v)):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    counters = tessel.stats()
    assert counters["native_ops"] and counters["fallback_reasons"] == [], counters


def test_a_backward_reading_efficient_attention_s_cpu_seed_replays_in_the_tree(runners):
    """Without dropout, the memory-efficient attention's seed and offset are CPU
    scalars even in a capture, and the backward takes them from the forward: the
    backward is recorded in the step's tree all the same (it launched its kernels one
    by one: hf_swin's step was bound by its host), and its gradients are eager's."""
    from torch._inductor import cudagraph_trees
    q, k, v = (torch.randn(2, 4, 128, 32, device="cuda", requires_grad=True) for _ in range(3))
    mask = torch.randn(2, 1, 128, 128, device="cuda")

    def attention(q, k, v):
        return (torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                * 2).sin()
    compiled = torch.compile(attention, backend="mlir", mode="reduce-overhead")
    for _ in range(4):
        grads = _gradients_of(compiled, q, k, v)
    for got, expected in zip(grads, _gradients_of(attention, q, k, v)):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    manager = cudagraph_trees.get_container(torch.cuda.current_device()).tree_manager
    assert any(manager.id_to_mode[node.wrapped_function.id]
               == cudagraph_trees.CompilationMode.BACKWARD for node in recorded_in_trees())
    assert runners == []


def test_a_gather_s_backward_adds_its_elements_atomically(tmp_path):
    """DeBERTa's relative attention gathers scores along the row; its backward adds one
    update per element, in bf16: one scatter kernel of bf16 atomics (which Triton's
    interpreter lacks), computing each element's index row where it adds it."""
    x = torch.randn(4, 8, 256, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    index = torch.randint(0, 512, (4, 8, 256, 256), device="cuda")

    def pick(x, i):
        return torch.gather(x, -1, i).float().square().sum()
    torch.compile(pick, backend="mlir", options={"dump_dir": str(tmp_path)})(x, index).backward()
    compiled, x.grad = x.grad, None
    pick(x, index).backward()
    torch.testing.assert_close(compiled, x.grad, atol=1e-2, rtol=1e-2)
    assert_compiled(2)
    (backward,) = tmp_path.glob("*_backward")
    assert "scatter(" not in (backward / "06_host_program.py").read_text()
    assert "tl.atomic_add(" in (backward / "05_triton_kernels.py").read_text()


def test_constants_made_on_the_cpu_for_the_gpu_leave_no_cpu_piece(runners):
    """DeBERTa's log-bucketed relative positions divide by `torch.log(torch.tensor(...))`
    (a CPU scalar) and compare with `torch.tensor(mid - 1).type_as(positions)` (a copy
    to the GPU): both are computed when the graph compiles and kept on the GPU, so the
    step neither splits around a copy between devices (a CPU piece, whose copy from
    pageable memory waited for the GPU's queue) nor leaves the CUDA graph trees; its
    gradients are eager's."""
    weight = torch.randn(64, 64, device="cuda", requires_grad=True)

    def bucketed(x, weight):
        relative = torch.arange(64, device="cuda")[:, None] - torch.arange(64, device="cuda")
        mid = torch.tensor(3).type_as(relative)
        buckets = torch.ceil(torch.log(relative.abs().clamp(min=1) / 4)
                             / torch.log(torch.tensor(31 / 4)) * 3) + mid
        return ((x @ weight) * buckets).sin()
    x = torch.randn(64, 64, device="cuda", requires_grad=True)
    compiled = torch.compile(bucketed, backend="mlir", mode="reduce-overhead")
    for _ in range(4):
        grads = _gradients_of(compiled, x, weight)
    for got, expected in zip(grads, _gradients_of(bucketed, x, weight)):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    counters = assert_compiled()
    assert counters["graphs_split"] == 0 and counters["native_ops"] == [], counters
    assert runners == [] and len(recorded_in_trees()) >= 2

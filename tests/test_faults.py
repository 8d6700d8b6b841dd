"""Bad and unusual input, one case at a time: each gets eager's answer (compiled, or
run eagerly with a warning that names the reason) or a clear error, and the Python
process never crashes."""

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_compiled

import tessel

nan, inf = float("nan"), float("inf")
I32, I64 = torch.iinfo(torch.int32), torch.iinfo(torch.int64)


def compile_and_compare(fn, *args, **kwargs):
    """fn compiled with backend="mlir" on copies of `args`, checked against eager."""
    compiled = torch.compile(fn, backend="mlir", **kwargs)
    actual = compiled(*[a.clone() for a in args])
    expected = fn(*[a.clone() for a in args])
    torch.testing.assert_close(actual, expected, equal_nan=True, rtol=1e-5, atol=1e-5)
    return actual


def fallback_warning(record) -> str:
    (message,) = [str(w.message) for w in record if str(w.message).startswith("tessel:")]
    return message


# --- zero-size tensors ---------------------------------------------------------------

@pytest.mark.parametrize("fn, shapes", [
    (lambda x: torch.sin(x) * 2 + 1, [(0, 4)]),
    (lambda x: x.sum(0), [(0, 4)]),             # zeros: a reduction over nothing
    (lambda x: x.mean(), [(0,)]),               # nan, as eager
    (lambda x: torch.softmax(x, -1), [(3, 0)]),
    (lambda x, y: x @ y, [(3, 0), (0, 5)]),     # an empty contraction: zeros
    (lambda x, y: torch.cat([x, y]), [(0, 3), (2, 3)]),
], ids=["elementwise", "sum", "mean", "softmax", "matmul", "cat"])
def test_zero_size_tensors(fn, shapes):
    compile_and_compare(fn, *[torch.randn(s) for s in shapes])
    assert_compiled()


def test_zero_size_reduction_without_identity_is_eagers_error():
    compiled = torch.compile(lambda x: x.amax(1), backend="mlir")
    with pytest.raises(Exception, match="zero-size dimension"):
        compiled(torch.randn(3, 0))


# --- NaN and Inf ---------------------------------------------------------------------

SPECIALS = torch.tensor([[nan, 1.0, -2.0, inf], [-inf, 0.0, nan, 3.0], [1.0, 2.0, 3.0, 4.0]])


@pytest.mark.parametrize("fn", [
    lambda x: x.exp() + x.tanh() + x.sigmoid(),
    lambda x: (x / 0, x * 0, x.log(), x.sqrt()),
    lambda x: torch.relu(x) + F.leaky_relu(x) + F.silu(x),
    lambda x: (torch.softmax(x, -1), torch.log_softmax(x, -1), x.logsumexp(-1)),
    lambda x: (x.sum(-1), x.mean(-1), x.amax(-1), x.amin(-1), x.max()),
    lambda x: (x.isnan(), x.isinf(), x > 0, x <= 1),
    lambda x: (x.nan_to_num(), torch.where(x > 0, x, -x), torch.fmax(x, x.flip(-1))),
    lambda x: F.max_pool1d(x[None], 2),
    lambda x: F.layer_norm(x, (4,)),
    lambda x: x @ x.t(),
    lambda x: (torch.maximum(x, x.flip(-1)), torch.minimum(x, x.flip(-1))),
    lambda x: (x.clamp(-1, 1), F.hardtanh(x)),
    lambda x: (x.max(-1), x.argmax(-1), x.argmin(-1)),
    lambda x: x.sort(-1),
], ids=["unary", "division", "activations", "softmax", "reductions", "tests", "select",
        "max_pool", "layer_norm", "matmul", "maximum_minimum", "clamp", "max_argmax", "sort"])
def test_nan_and_inf_propagate_like_eager(fn):
    compile_and_compare(fn, SPECIALS)
    assert_compiled()


# torch-mlir folds `eq(x, x)` to true (and torch's isfinite decomposes to x == x &
# |x| != inf): tessel's decompositions spell both without that comparison.
@pytest.mark.parametrize("fn", [lambda x: x.isfinite(), lambda x: torch.eq(x, x)],
                         ids=["isfinite", "eq_self"])
def test_nan_is_not_equal_to_itself(fn):
    compile_and_compare(fn, SPECIALS)
    assert_compiled()


@pytest.mark.parametrize("largest", [True, False])
def test_topk_ranks_nan_as_the_largest_value(largest):
    def fn(x):
        return torch.topk(x * 2, 3, largest=largest)
    x = torch.tensor([[1.0, float("nan"), 3.0, 2.0, -1.0], [0.5, float("nan"), 9.0, 0.2, 4.0]])
    actual, expected = torch.compile(fn, backend="mlir")(x), fn(x)
    torch.testing.assert_close(actual.values, expected.values, equal_nan=True)
    torch.testing.assert_close((x * 2).gather(1, actual.indices), actual.values, equal_nan=True)
    assert_compiled()


def test_reciprocal_of_zero_does_not_abort_the_process():
    # torch-mlir's reciprocal asserts x != 0; a failed check must not abort(). In a
    # child process, so that a regression cannot take pytest down with it.
    code = ("import torch\n"
            "f = torch.compile(lambda x: 1 / x, backend='mlir')\n"
            "print(f(torch.tensor([0.0, 2.0])).tolist())\n")
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", code],
                            check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.strip() == "[inf, 0.5]"


# --- devices -------------------------------------------------------------------------

def test_cpu_and_meta_tensors_is_eagers_device_error():
    compiled = torch.compile(lambda x, y: x + y, backend="mlir")
    with pytest.raises(Exception, match="cpu and meta"):
        compiled(torch.randn(3), torch.randn(3, device="meta"))
    assert tessel.stats()["graphs_compiled"] == 0


def test_cpu_scalar_with_meta_tensor_runs_eagerly_naming_the_input():
    # Eager allows a 0-d CPU tensor next to any device; tessel has no meta target.
    s, y = torch.tensor(2.0), torch.randn(3, device="meta")
    with pytest.warns(UserWarning) as record:
        actual = torch.compile(torch.mul, backend="mlir")(s, y)
    assert "is on meta" in fallback_warning(record)
    assert actual.device.type == "meta" and actual.shape == (3,)
    assert tessel.stats()["graphs_fallback"] == 1


# --- layouts -------------------------------------------------------------------------

def conv_net():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 3, stride=2), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    ).eval()


@pytest.mark.parametrize("model_layout", [torch.contiguous_format, torch.channels_last])
def test_conv_net_with_channels_last_input(model_layout):
    net = conv_net().to(memory_format=model_layout)
    x = torch.randn(2, 3, 16, 16).to(memory_format=torch.channels_last)
    with torch.no_grad():
        compile_and_compare(net, x)
    assert_compiled()


def test_conv_output_keeps_eagers_channels_last_layout():
    conv = torch.nn.Conv2d(3, 8, 3).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 10, 10).to(memory_format=torch.channels_last)
    with torch.no_grad():
        actual = compile_and_compare(conv, x)
    assert actual.stride() == conv(x).stride()
    assert_compiled()


def test_permuted_and_strided_inputs():
    base = torch.randn(4, 6, 8)
    x, y = base.permute(2, 0, 1), base[:, ::2, ::3].transpose(0, 2)
    compile_and_compare(lambda x, y: x.sum(0) * 2 + y.amax(), x, y)
    assert_compiled()


# --- in-place ops on inputs ----------------------------------------------------------

def add_one_in_place(x):
    x.add_(1)
    return x * 2


def scale_tail_in_place(x):
    x[1:].mul_(3)
    return x.sum()


@pytest.mark.parametrize("fn", [add_one_in_place, scale_tail_in_place])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_in_place_ops_mutate_the_input_like_eager(fn, layout):
    base = torch.randn(5, 4)
    x = base if layout == "contiguous" else base.t()
    eager_base = base.clone()
    eager_x = eager_base if layout == "contiguous" else eager_base.t()
    actual, expected = torch.compile(fn, backend="mlir")(x), fn(eager_x)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(base, eager_base)   # the caller's storage changed as in eager
    assert_compiled()


def test_mutated_input_returned_is_the_input():
    def fn(x):
        x.mul_(2)
        return x

    x = torch.randn(6)
    expected = x * 2
    actual = torch.compile(fn, backend="mlir")(x)
    assert actual.data_ptr() == x.data_ptr()
    torch.testing.assert_close(x, expected)
    assert_compiled()


# --- aliasing outputs ----------------------------------------------------------------

def layout_of(tensors, base):
    return [(t.shape, t.stride(), t.storage_offset(),
             t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr())
            for t in tensors]


def test_outputs_that_are_views_of_the_input():
    def fn(x):
        return x, x.view(-1), x[1:]

    x = torch.randn(3, 4)
    outputs = torch.compile(fn, backend="mlir")(x)
    assert layout_of(outputs, x) == layout_of(fn(x), x)
    outputs[1].zero_()
    assert x.abs().sum() == 0


@pytest.mark.parametrize("requires_grad", [False, True])
def test_outputs_that_are_views_of_each_other(requires_grad):
    def fn(x):
        y = x * 2
        return y, y.view(-1), y[1:], y.t(), y.unsqueeze(0)[:, 1:, ::2]

    x = torch.randn(3, 4, requires_grad=requires_grad)
    outputs, expected = torch.compile(fn, backend="mlir")(x), fn(x)
    for actual, reference in zip(outputs, expected):
        torch.testing.assert_close(actual, reference)
    # Same storage, strides and offsets as eager: a write to one shows in the others.
    assert layout_of(outputs, outputs[0]) == layout_of(expected, expected[0])
    with torch.no_grad():
        outputs[0].fill_(7)
    assert all(bool((out == 7).all()) for out in outputs)
    counters = assert_compiled()
    assert counters["graphs_split"] == 0


def test_pieces_of_a_split_are_views_of_one_buffer():
    """Attention's query, key and value: pieces of one projection, viewed as heads and
    transposed. Eager returns views of the projection; so does the host program, where
    the kernel would otherwise copy each transposed piece."""
    def fn(x, w):
        return [t.view(2, 5, 2, 4).transpose(1, 2) for t in (x @ w).split(8, dim=-1)]

    x, w = torch.randn(2, 5, 16), torch.randn(16, 24)
    outputs, expected = torch.compile(fn, backend="mlir")(x, w), fn(x, w)
    for actual, reference in zip(outputs, expected):
        torch.testing.assert_close(actual, reference)
    assert layout_of(outputs, outputs[0]) == layout_of(expected, expected[0])
    assert_compiled()


def test_a_static_view_output_is_one_call_where_its_base_has_eager_s_strides():
    """The host takes a view of static size in one reinterpret_tensor call (Inductor's
    as_strided without its dispatch), valid for the base's strides in eager; a base
    strided otherwise gets the views op by op."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from tessel.frontend.prepare_graph import _host_view, view_chain

    gm = make_fx(lambda x: (x + 1).view(2, 5, 2, 4).transpose(1, 2),
                 tracing_mode="fake")(torch.randn(2, 5, 8))
    (out,) = [n for n in gm.graph.nodes if n.op == "output"][0].args
    root, views = view_chain(out)
    text = _host_view(root, views, set())
    assert text.startswith("(torch._C._dynamo.guards._reinterpret_tensor(")
    view = eval("lambda base: " + text.format("base"), {"torch": torch})
    for base in (torch.randn(2, 5, 8), torch.randn(2, 5, 16)[..., 8:]):
        actual, expected = view(base), base.view(2, 5, 2, 4).transpose(1, 2)
        assert actual.data_ptr() == expected.data_ptr() and torch.equal(actual, expected)
        assert actual.stride() == expected.stride()


def test_view_outputs_with_symbolic_sizes():
    def fn(x):
        y = x + 1
        return y, y.view(-1), y[:, 1:]

    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for rows in (3, 5):
        x = torch.randn(rows, 4)
        outputs, expected = compiled(x), fn(x)
        for actual, reference in zip(outputs, expected):
            torch.testing.assert_close(actual, reference)
        assert layout_of(outputs, outputs[0]) == layout_of(expected, expected[0])
    assert_compiled()


def test_outputs_computing_the_same_value():
    # Two results that CSE makes one value need two buffers.
    compile_and_compare(lambda x: (torch.sin(x), x.sin()), torch.randn(5))
    assert_compiled()


# --- out-of-range indices -------------------------------------------------------------
# The kernels do not check indices (embedding's abort() the process, the others read out
# of bounds): the host checks index inputs first and raises an error of eager's type.

def embed(weight, ids):
    return F.embedding(ids.view(-1), weight) * 2


def take_rows(x, rows):
    return x[rows] + 1


def take_columns(x, columns):
    return x[:, columns] + 1


def gather_rows(x, index):
    return x.gather(0, index) + 1


def select_columns(x, index):
    return x.index_select(1, index) + 1


@pytest.mark.parametrize("fn, index, message", [
    (embed, [[0], [4]], "aten.embedding.default: index 4 is out of range for a dimension of size 4"),
    (take_rows, [0, 7], "aten.index.Tensor: index 7 is out of range for a dimension of size 4"),
    (take_rows, [0, -5], "aten.index.Tensor: index -5 is out of range"),
    (take_columns, [2, 3], "aten.index.Tensor: index 3 is out of range for a dimension of size 3"),
    (gather_rows, [[0, -1, 0]], "aten.gather.default: index -1 is out of range"),
    (select_columns, [0, 3], "aten.index_select.default: index 3 is out of range"),
], ids=["embedding", "index", "index_negative", "index_dim1", "gather", "index_select"])
def test_out_of_range_index_is_eagers_error(fn, index, message):
    x, index = torch.randn(4, 3), torch.tensor(index)
    with pytest.raises((IndexError, RuntimeError)) as eager:
        fn(x, index)
    compiled = torch.compile(fn, backend="mlir")
    with pytest.raises(eager.type, match=message):
        compiled(x, index)
    # In-range indices (negative ones count from the end for x[i]) compile and match.
    in_range = index.clamp(-3, 2) if fn in (take_rows, take_columns) else index.clamp(0, 2)
    torch.testing.assert_close(compiled(x, in_range), fn(x, in_range))
    assert_compiled()


def test_an_index_tensor_is_checked_again_only_when_it_changes(monkeypatch):
    """The range check syncs with the device: an index buffer passed again unchanged is
    not read back again, one written in place (a new version) is."""
    calls = []
    aminmax = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda t: calls.append(t) or aminmax(t))
    x, index = torch.randn(4, 3), torch.tensor([0, 2])
    compiled = torch.compile(take_rows, backend="mlir")
    for _ in range(3):
        torch.testing.assert_close(compiled(x, index), take_rows(x, index))
    assert len(calls) == 1
    assert_compiled()
    index[1] = 7
    with pytest.raises(IndexError, match="index 7 is out of range"):
        compiled(x, index)


# --- integer overflow and division ---------------------------------------------------

@pytest.mark.parametrize("fn, args", [
    (lambda x, y: x + y, (torch.tensor([I32.max, I32.min], dtype=torch.int32),
                          torch.tensor([1, -1], dtype=torch.int32))),
    (lambda x, y: x * y, (torch.tensor([I64.max, I64.min, 2**40]), torch.tensor([2, 2, 2**40]))),
    (lambda x: (-x, x.abs()), (torch.tensor([I32.min, I32.max], dtype=torch.int32),)),
    (lambda x: x * 3 + 7, (torch.tensor([I32.max, I32.min], dtype=torch.int32),)),
    (lambda x: x.sum(dtype=torch.int32), (torch.full((4,), I32.max, dtype=torch.int32),)),
    (lambda x: x.sum(), (torch.full((4,), I32.max, dtype=torch.int32),)),   # int64 result
    (lambda x: (x // 3, x % 3, x // -1, x % -1), (torch.tensor([I64.min, I64.max, -7, 7]),)),
    # int8 divisions (torch-mlir's lowering crashed the compile worker): -128 // -1 wraps.
    (lambda x: (x // 3, x % 3, torch.div(x, 3, rounding_mode="trunc"), x // -1),
     (torch.tensor([-128, 127, -7, 7], dtype=torch.int8),)),
], ids=["int32_add", "int64_mul", "neg_abs", "int32_scalar", "int32_sum", "promoted_sum",
        "constant_divisor", "int8_constant_divisor"])
def test_integer_arithmetic_wraps_like_eager(fn, args):
    compile_and_compare(fn, *args)
    assert_compiled()


INTEGER_DIVISIONS = {
    "floor": lambda x, y: x // y,
    "trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    "remainder": lambda x, y: x % y,
    "fmod": torch.fmod,
}


@pytest.mark.parametrize("name", INTEGER_DIVISIONS)
def test_integer_division_by_zero_is_eagers_error(name):
    # Compiled sdiv/srem would trap (SIGFPE) or give garbage; the division runs eagerly.
    fn = INTEGER_DIVISIONS[name]
    compiled = torch.compile(lambda x, y: fn(x + 1, y) * 2, backend="mlir")
    with (pytest.warns(UserWarning, match="divisor that may be 0"),
          pytest.raises(RuntimeError, match="ZeroDivisionError")):
        compiled(torch.tensor([5, 7, -7]), torch.tensor([0, -2, 2]))
    assert tessel.stats()["graphs_split"] == 1


def test_a_max_pool_window_whose_maximum_is_nan_points_at_its_last_nan():
    # torch-mlir's lowering gave such a window an index outside it (-9), so a
    # training step's gradient reached no input; eager's is the window's last NaN.
    x = torch.randn(2, 3, 13, 11)
    x[0, 0, 3, 4] = x[1, 2, 5, 5] = x[1, 2, 5, 6] = float("nan")
    values, indices = compile_and_compare(
        lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x)
    assert indices[1, 2, 2, 3] == 5 * 11 + 6  # of its NaNs at (5, 5) and (5, 6)
    assert_compiled()


def test_int_min_floor_divided_by_minus_one_matches_eager():
    x, y = torch.tensor([I64.min, 7, -7]), torch.tensor([-1, -2, 2])
    with pytest.warns(UserWarning, match="aten.floor_divide.default runs eagerly"):
        compile_and_compare(lambda x, y: (x // y, x % y), x, y)


# --- very large dimensions -----------------------------------------------------------

BIG = 2**31 + 7


def test_view_too_big_to_materialize_runs_eagerly_naming_the_op():
    # Eager's expand is a view; compiled code would allocate its 8 PiB.
    with pytest.warns(UserWarning) as record:
        compile_and_compare(lambda x: x.expand(2**20, BIG)[-2:, -3:] + 1, torch.arange(2.0, 3.0))
    assert "aten.expand.default makes a 8388608.0 GiB tensor" in fallback_warning(record)
    assert tessel.stats()["graphs_fallback"] == 1


def available_memory_bytes() -> int:
    with open("/proc/meminfo") as meminfo:
        fields = dict(line.split(":", 1) for line in meminfo)
    return int(fields["MemAvailable"].split()[0]) * 1024


@pytest.mark.skipif(available_memory_bytes() < 4 * 2**30, reason="needs 2 GiB for the input")
def test_buffer_of_more_than_two_to_the_31_elements():
    # Offsets past 2**31 in the kernel and in the host's memref descriptors.
    x = torch.zeros(BIG, dtype=torch.bool)
    x[-5:] = torch.tensor([True, False, True, True, False])
    def tail(x):
        return x[2**31:].int() * 3 + 1

    torch.testing.assert_close(torch.compile(tail, backend="mlir")(x), tail(x))
    assert_compiled()


# --- options of the wrong type -------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ({"dump_dir": 3}, "option 'dump_dir' expects str or PathLike, got int (3)"),
    ({"opt_level": "fast"}, "option 'opt_level' expects int, got str ('fast')"),
    ({"opt_level": True}, "option 'opt_level' expects int, got bool (True)"),
    ({"fallback": "no"}, "option 'fallback' expects bool, got str ('no')"),
    ({"check_accuracy": 1}, "option 'check_accuracy' expects bool, got int (1)"),
    ({"pipeline": ["cpu"]}, "option 'pipeline' expects str, got list (['cpu'])"),
])
def test_option_of_the_wrong_type_is_an_error_naming_it(options, message):
    fn = torch.compile(lambda x: x + 1, backend="mlir", options=options)
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        fn(torch.randn(2))
    assert tessel.stats()["graphs_compiled"] == 0


# --- a dump_dir that cannot hold files -----------------------------------------------
# The user asked for dumps: an unusable dump_dir is an error naming the option before
# anything compiles (a silent run without dumps would leave nothing to debug with).

@pytest.mark.parametrize("where, message", [
    ("file", "is a file, not a directory"),
    ("under_file", "cannot be created: Not a directory"),
    ("empty", "is an empty path"),
])
def test_unusable_dump_dir_is_an_error_naming_the_option(tmp_path, where, message):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a directory")
    dump_dir = {"file": str(a_file), "under_file": str(a_file / "dumps"), "empty": ""}[where]
    fn = torch.compile(lambda x: x + 1, backend="mlir", options={"dump_dir": dump_dir})
    with pytest.raises(Exception, match=f"option 'dump_dir' .*{message}"):
        fn(torch.randn(2))
    # The program goes on: the same function with a usable dump_dir compiles.
    fn = torch.compile(lambda x: x + 1, backend="mlir", options={"dump_dir": str(tmp_path / "ok")})
    torch.testing.assert_close(fn(torch.ones(2)), torch.full((2,), 2.0))
    assert_compiled()
    assert list((tmp_path / "ok").glob("*/00_fx_graph.py"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_dump_dir_is_an_error_naming_the_option(tmp_path):
    read_only = tmp_path / "read_only"
    read_only.mkdir(mode=0o555)
    fn = torch.compile(lambda x: x + 1, backend="mlir",
                       options={"dump_dir": str(read_only / "dumps")})
    with pytest.raises(Exception, match="option 'dump_dir' .*cannot be created: Permission denied"):
        fn(torch.randn(2))

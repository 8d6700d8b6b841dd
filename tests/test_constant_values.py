"""constant_values.py: a tensor a graph assembles from no input (a Swin block's
shifted-window mask) is computed once, at compile time; the compiled graph reads it."""

import torch

from conftest import assert_compiled


class ShiftedWindowMask(torch.nn.Module):
    """torchvision's Swin mask, built in forward from the image's size alone: zeros,
    nine slice assignments, a window partition and masked fills."""

    def forward(self, x):
        height, width = x.shape[1], x.shape[2]
        mask = x.new_zeros((height, width))
        count = 0
        for rows in ((0, -4), (-4, -2), (-2, None)):
            for columns in ((0, -4), (-4, -2), (-2, None)):
                mask[rows[0]:rows[1], columns[0]:columns[1]] = count
                count += 1
        mask = mask.view(height // 4, 4, width // 4, 4).permute(0, 2, 1, 3).reshape(-1, 16)
        mask = mask.unsqueeze(1) - mask.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        windows = x.view(x.shape[0], height // 4, 4, width // 4, 4, x.shape[3])
        windows = windows.permute(0, 1, 3, 2, 4, 5).reshape(x.shape[0], -1, 16, x.shape[3])
        scores = windows @ windows.transpose(-2, -1) + mask
        return scores.softmax(-1) @ windows


def test_a_mask_made_from_sizes_is_computed_once(tmp_path):
    model, x = ShiftedWindowMask(), torch.randn(2, 8, 8, 6)
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    for _ in range(2):
        torch.testing.assert_close(compiled(x), model(x))
    assert_compiled()
    (imported,) = tmp_path.glob("*/*torch.mlir")
    text = imported.read_text()
    # No slice_scatter is left to run at each call: the mask is an input of the code.
    assert "slice_scatter" not in text and "vtensor<[4,16,16],f32>" in text


def test_a_value_of_indices_alone_stays_in_the_graph(tmp_path):
    """A causal mask from aranges costs kernels less to compute than to load."""
    def causal(x):
        rows = torch.arange(x.shape[-2])
        mask = (rows[:, None] >= rows[None, :]).float()
        return x * mask

    compiled = torch.compile(causal, backend="mlir", options={"dump_dir": str(tmp_path)})
    x = torch.randn(3, 5, 5)
    torch.testing.assert_close(compiled(x), causal(x))
    assert_compiled()
    (imported,) = tmp_path.glob("*/*torch.mlir")
    assert "arange" in imported.read_text()


def test_a_constant_copied_between_devices_is_computed_once_on_its_device():
    """DeBERTa's relative positions (aranges) are compared with `torch.tensor(mid - 1)
    .type_as(positions)`, a CPU constant copied to the GPU: the copy, a native op the
    graph was split around, is computed when the graph compiles (under the fake mode
    Dynamo compiles a forward in) and kept on its device, while the positions that read
    it stay in the graph. The "meta" device stands for the GPU (test_triton_cuda.py
    runs the same on one)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from tessel.frontend.constant_values import constants_on_their_readers_devices

    def positions(x):
        relative = torch.arange(4, device="meta")[:, None] - torch.arange(4, device="meta")
        return x * (relative + torch.tensor(3).to("meta"))
    gm = make_fx(positions, tracing_mode="fake")(torch.empty(4, 4, device="meta"))
    copies = [n for n in gm.graph.nodes if n.target is torch.ops.aten._to_copy.default]
    assert len(copies) == 1, gm.code
    fake_mode = copies[0].meta["val"].fake_mode
    with fake_mode:  # Dynamo's, active while a forward compiles
        constants_on_their_readers_devices(gm)
    targets = [n.target for n in gm.graph.nodes]
    assert torch.ops.aten._to_copy.default not in targets, gm.code
    assert torch.ops.aten.arange.start_step in targets or \
        torch.ops.aten.arange.default in targets, gm.code
    kept = [value for name, value in gm.named_buffers() if name.startswith("_tessel_constant")]
    assert len(kept) == 1 and kept[0].device.type == "meta", kept


def test_a_one_element_constant_is_imported_under_dynamo_s_fake_mode():
    """A forward compiles under Dynamo's fake mode, and the importer reads a one-element
    constant's value with tolist(), which copies a CUDA tensor to the CPU first: made
    in fake mode, that copy was a fake tensor without storage, and DeBERTa's graph ran
    eagerly. A negative view's tolist() copies (resolves the sign) on the CPU too."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tessel.frontend.importer import import_graph
    module = torch.nn.Module()
    module.scale = torch._neg_view(torch.tensor(-2.0))
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    scale = graph.get_attr("scale")
    product = graph.call_function(torch.ops.aten.mul.Tensor, (x, scale))
    graph.output((product,))
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    x.meta["val"] = product.meta["val"] = fake_mode.from_tensor(torch.ones(3))
    scale.meta["val"] = fake_mode.from_tensor(module.scale)
    with fake_mode:
        text = str(import_graph(torch.fx.GraphModule(module, graph).graph))
    assert "torch.vtensor.literal(dense<2.000000e+00> : tensor<f32>)" in text

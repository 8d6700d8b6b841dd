"""The layouts the Triton host program computes for the views it takes as one strided
view (targets/triton/strided_views.py) are the ones torch's own view ops give."""

import pytest
import torch

from tessel.targets.triton import strided_views
from tessel.targets.triton.strided_views import Layout


def _layout(tensor: torch.Tensor) -> Layout:
    return Layout(tuple(tensor.shape), tuple(tensor.stride()))


# (how the source is laid out, the shape it is viewed as)
_RESHAPES = [
    (lambda: torch.empty(2, 17, 4, 16), (34, 64)),
    (lambda: torch.empty(2, 17, 4, 16), (2, 17, 64)),
    (lambda: torch.empty(34, 64), (2, 17, 4, 16)),
    (lambda: torch.empty(2, 1, 64), (2, 64)),
    (lambda: torch.empty(2, 64), (2, 1, 1, 64)),
    (lambda: torch.empty(1, 1), ()),
    (lambda: torch.empty(2, 3, 4).transpose(0, 1), (3, 2, 2, 2)),
    (lambda: torch.empty(2, 8, 5, 5).permute(0, 2, 3, 1), (2, 25, 8)),
    (lambda: torch.empty(6, 10)[:, 2:6], (6, 2, 2)),
    (lambda: torch.empty(2, 16, 4, 4, memory_format=torch.channels_last), (2, 16, 16)),
    (lambda: torch.empty(3, 4).t(), (12,)),
    (lambda: torch.empty(2, 16, 4, 4, memory_format=torch.channels_last), (2, 256)),
    (lambda: torch.empty(2, 4, 6, 6, memory_format=torch.channels_last), (2, 144)),
    (lambda: torch.empty(2, 8, 8, 8, memory_format=torch.channels_last), (2, 64, 8)),
]


@pytest.mark.parametrize("make, shape", _RESHAPES)
def test_a_view_has_reshape_s_strides_or_none_where_reshape_copies(make, shape):
    source = make()
    reshaped = source.reshape(shape)
    layout = strided_views.viewed(_layout(source), shape)
    if reshaped.data_ptr() != source.data_ptr() or not reshaped._is_view():
        assert layout is None
    else:
        assert layout == _layout(reshaped)


def test_slices_and_transposes_keep_offsets_from_the_chain_s_first_tensor():
    base = torch.arange(60.0).reshape(6, 10)
    layout = strided_views.sliced(_layout(base), [1, 2], [3, 4], [2, 1])
    view = base[1:6:2, 2:6]
    assert (layout.size, layout.stride, layout.offset) == (
        tuple(view.shape), view.stride(), view.storage_offset())
    transposed = strided_views.transposed(layout)
    taken = strided_views.reinterpret(base, transposed.size, transposed.stride,
                                      transposed.offset)
    torch.testing.assert_close(taken, view.transpose(-2, -1), rtol=0, atol=0)


def test_reinterpret_counts_its_offset_from_the_tensor_s_own():
    """Host programs take views of views: the offset adds to the view's own."""
    base = torch.arange(10.0)
    view = base[2:]
    taken = strided_views.reinterpret(view, (2, 2), (1, 2), 1)
    torch.testing.assert_close(taken, torch.tensor([[3.0, 5.0], [4.0, 6.0]]))
    fallback = strided_views._as_strided_from(view, (2, 2), (1, 2), 1)
    torch.testing.assert_close(fallback, taken, rtol=0, atol=0)

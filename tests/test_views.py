"""View ops against PyTorch: sizes, strides, storage offsets, shared storage and version counter,
``_base``, writes through views, the in-place metadata ops, and every error (type and message),
on CPU and meta tensors."""
import numpy as np
import pytest

import ember
from helpers import assert_same, from_np

SHAPE = (2, 3, 4)


def _pair(torch, shape=SHAPE, device="cpu", dtype="float32"):
    """The same tensor in ember and PyTorch: arange values on CPU, uninitialized on meta."""
    if device == "meta":
        return (ember.empty(shape, dtype=getattr(ember, dtype), device="meta"),
                torch.empty(shape, dtype=getattr(torch, dtype), device="meta"))
    a = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    return from_np(a), torch.arange(a.size).to(getattr(torch, dtype)).reshape(shape).clone()


def _check_view(e, t, e_base, t_base):
    """``e`` is the view PyTorch's ``t`` is: geometry, values, storage and version sharing."""
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride()
    assert e.storage_offset() == t.storage_offset()
    assert e.dtype.name == str(t.dtype).split(".")[-1]
    assert e.untyped_storage() is e_base.untyped_storage()
    assert e._vc is e_base._vc
    assert e._is_view() == t._is_view()
    assert (e._base is (e_base._base if e_base._base is not None else e_base)) == t._is_view()
    assert e.is_contiguous() == t.is_contiguous()
    if e.device.type == "cpu":
        assert _data_offset(e, e_base) == _data_offset(t, t_base)
        assert_same(e, t)


def _data_offset(view, base):
    """Bytes from the base's data to the view's (None for an empty view: it has no data_ptr)."""
    return view.data_ptr() - base.data_ptr() if view.data_ptr() else None


def _check_error(torch, fn, shape=SHAPE, device="cpu", match=True):
    e, t = _pair(torch, shape, device)
    with pytest.raises(Exception) as te:
        fn(t, torch)
    with pytest.raises(Exception) as ee:
        fn(e, ember)
    assert type(ee.value) is type(te.value), (ee.value, te.value)
    if match:
        assert str(ee.value) == str(te.value)


# (id, input shape, fn(x, lib)) -- each must return a view (or a tuple of views) in both libraries
VIEWS = [
    ("view", SHAPE, lambda x, m: x.view(4, 6)),
    ("view_infer", SHAPE, lambda x, m: x.view(-1, 2)),
    ("view_tuple", SHAPE, lambda x, m: x.view((6, 4))),
    ("view_kw", SHAPE, lambda x, m: x.view(size=(24,))),
    ("view_split_dim_of_transposed", SHAPE, lambda x, m: x.transpose(0, 1).view(3, 2, 2, 2)),
    ("view_scalar", (), lambda x, m: x.view(1, 1)),
    ("view_dtype_same", SHAPE, lambda x, m: x.view(m.int32)),
    ("view_dtype_smaller", SHAPE, lambda x, m: x.view(m.int16)),
    ("view_dtype_bigger", SHAPE, lambda x, m: x.view(m.float64)),
    ("view_dtype_scalar_same", (), lambda x, m: x.view(m.int32)),
    ("view_dtype_transposed", (2, 3), lambda x, m: x.t().view(m.int32)),
    ("view_dtype_offset", (4, 6), lambda x, m: x.view(m.int16)[:, 2:4].view(m.int32)),
    ("view_dtype_kw", SHAPE, lambda x, m: x.view(dtype=m.uint8)),
    ("reshape_view", SHAPE, lambda x, m: x.reshape(6, -1)),
    ("reshape_fn", SHAPE, lambda x, m: m.reshape(x, (3, 8))),
    ("as_strided", SHAPE, lambda x, m: x.as_strided((3, 3), (4, 1), 2)),
    ("as_strided_fn", SHAPE, lambda x, m: m.as_strided(x, (2, 2), (1, 2))),
    ("transpose", SHAPE, lambda x, m: x.transpose(0, 2)),
    ("transpose_neg", SHAPE, lambda x, m: m.transpose(x, -1, 0)),
    ("transpose_same", SHAPE, lambda x, m: x.transpose(1, 1)),
    ("swapaxes", SHAPE, lambda x, m: x.swapaxes(0, 1)),
    ("swapdims", SHAPE, lambda x, m: m.swapdims(x, 1, 2)),
    ("permute", SHAPE, lambda x, m: x.permute(2, 0, 1)),
    ("permute_list", SHAPE, lambda x, m: m.permute(x, [-1, 1, 0])),
    ("T", SHAPE, lambda x, m: x.T),
    ("mT", SHAPE, lambda x, m: x.mT),
    ("t_2d", (3, 4), lambda x, m: x.t()),
    ("t_1d", (4,), lambda x, m: m.t(x)),
    ("t_0d", (), lambda x, m: x.t()),
    ("narrow", SHAPE, lambda x, m: x.narrow(1, 1, 2)),
    ("narrow_neg", SHAPE, lambda x, m: m.narrow(x, -1, -3, 2)),
    ("narrow_empty_end", SHAPE, lambda x, m: x.narrow(1, 3, 0)),
    ("select", SHAPE, lambda x, m: x.select(1, 2)),
    ("select_neg", SHAPE, lambda x, m: m.select(x, -1, -4)),
    ("slice", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 1, 0, 3, 2)),
    ("slice_clamp", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 1, -10, 10, 2)),
    ("slice_empty", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 1, 2, 1)),
    ("slice_past_end", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 1, 5, 7)),
    ("slice_neg_start", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 2, -3, None, 2)),
    ("slice_defaults", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x)),
    ("unsqueeze", SHAPE, lambda x, m: x.unsqueeze(1)),
    ("unsqueeze_end", SHAPE, lambda x, m: m.unsqueeze(x, -1)),
    ("unsqueeze_0d", (), lambda x, m: x.unsqueeze(0)),
    ("unsqueeze_transposed", SHAPE, lambda x, m: x.transpose(0, 2).unsqueeze(1)),
    ("squeeze", (1, 3, 1), lambda x, m: x.squeeze()),
    ("squeeze_dim", (1, 3, 1), lambda x, m: x.squeeze(-1)),
    ("squeeze_dim_not_one", (1, 3, 1), lambda x, m: m.squeeze(x, 1)),
    ("squeeze_dims", (1, 3, 1), lambda x, m: x.squeeze((0, 1))),
    ("squeeze_dims_varargs", (1, 3, 1), lambda x, m: x.squeeze(0, 2)),
    ("squeeze_0d", (), lambda x, m: x.squeeze(0)),
    ("expand", (3, 1), lambda x, m: x.expand(2, 3, 4)),
    ("expand_keep", (3, 1), lambda x, m: x.expand(-1, 5)),
    ("expand_list", (3,), lambda x, m: x.expand([2, 3])),
    ("expand_zero", (3, 1), lambda x, m: x.expand(3, 0)),
    ("expand_as", (3, 1), lambda x, m: x.expand_as(m.empty(2, 3, 4))),
    ("broadcast_to", (3,), lambda x, m: m.broadcast_to(x, (2, 3))),
    ("flatten", SHAPE, lambda x, m: x.flatten()),
    ("flatten_part", SHAPE, lambda x, m: m.flatten(x, 1)),
    ("flatten_same", SHAPE, lambda x, m: x.flatten(1, 1)),
    ("flatten_0d", (), lambda x, m: x.flatten()),
    ("unflatten", SHAPE, lambda x, m: x.unflatten(2, (2, 2))),
    ("unflatten_infer", SHAPE, lambda x, m: m.unflatten(x, -1, (-1, 1))),
    ("unflatten_transposed", SHAPE, lambda x, m: x.transpose(1, 2).unflatten(2, (1, 3))),
    ("unfold", SHAPE, lambda x, m: x.unfold(2, 2, 1)),
    ("unfold_step", SHAPE, lambda x, m: x.unfold(-1, 2, 2)),
    ("unfold_0d", (), lambda x, m: x.unfold(0, 1, 1)),
    ("diagonal", SHAPE, lambda x, m: x.diagonal()),
    ("diagonal_offset", SHAPE, lambda x, m: m.diagonal(x, 1, 1, 2)),
    ("diagonal_neg_offset", SHAPE, lambda x, m: x.diagonal(-1, 2, 1)),
    ("diagonal_empty", SHAPE, lambda x, m: x.diagonal(5, 1, 2)),
    ("movedim", SHAPE, lambda x, m: x.movedim(0, 2)),
    ("movedim_list", SHAPE, lambda x, m: m.movedim(x, (0, 1), (2, 0))),
    ("movedim_neg", SHAPE, lambda x, m: x.movedim(-1, 0)),
    ("moveaxis", SHAPE, lambda x, m: m.moveaxis(x, 1, 0)),
    ("moveaxis_list", SHAPE, lambda x, m: x.moveaxis([0], [-1])),
    ("movedim_0d", (), lambda x, m: x.movedim(0, 0)),
    ("split", SHAPE, lambda x, m: x.split(2, 2)),
    ("split_uneven", SHAPE, lambda x, m: m.split(x, 2, 1)),
    ("split_big", SHAPE, lambda x, m: x.split(5, 2)),
    ("split_sizes", SHAPE, lambda x, m: x.split([1, 3], 2)),
    ("split_zero_size", SHAPE, lambda x, m: x.split([0, 4], -1)),
    ("split_empty_dim", (0,), lambda x, m: x.split(0)),
    ("split_with_sizes", SHAPE, lambda x, m: m.split_with_sizes(x, [1, 2], 1)),
    ("chunk", SHAPE, lambda x, m: x.chunk(3, 2)),
    ("chunk_more_than_size", SHAPE, lambda x, m: m.chunk(x, 5, 2)),
    ("chunk_uneven", (5,), lambda x, m: x.chunk(3)),
    ("chunk_empty", (0, 2), lambda x, m: x.chunk(3)),
    ("unbind", SHAPE, lambda x, m: x.unbind(1)),
    ("unbind_fn", SHAPE, lambda x, m: m.unbind(x)),
    ("alias", SHAPE, lambda x, m: m.ops.aten.alias(x)),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name,shape,fn", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_matches_pytorch(torch, name, shape, fn, device):
    e_base, t_base = _pair(torch, shape, device)
    e, t = fn(e_base, ember), fn(t_base, torch)
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for ei, ti in zip(e, t):
            _check_view(ei, ti, e_base, t_base)
    else:
        _check_view(e, t, e_base, t_base)


def test_views_of_views_point_to_the_root_base(torch):
    x = from_np(np.arange(24.0).reshape(2, 3, 4))
    v = x.transpose(0, 1)[1].unsqueeze(0).narrow(2, 1, 2)
    assert v._base is x and x._base is None and not x._is_view()


def test_reshape_copies_when_no_view_exists(torch):
    e_base, t_base = _pair(torch)
    e, t = e_base.transpose(0, 2).reshape(-1), t_base.transpose(0, 2).reshape(-1)
    assert_same(e, t, check_stride=True)
    assert e.untyped_storage() is not e_base.untyped_storage() and e._vc is not e_base._vc


def test_flatten_of_transposed_copies(torch):
    e_base, t_base = _pair(torch)
    e, t = e_base.transpose(0, 2).flatten(), t_base.transpose(0, 2).flatten()
    assert_same(e, t, check_stride=True)
    assert e.untyped_storage() is not e_base.untyped_storage()


def test_detach_shares_storage_and_version_but_is_not_a_view(torch):
    e_base, t_base = _pair(torch)
    e, t = e_base.detach(), t_base.detach()
    assert e._is_view() == t._is_view() is False and e._base is None
    assert e.untyped_storage() is e_base.untyped_storage()
    e.add_(1)
    t.add_(1)
    assert e_base._version == t_base._version == 1
    assert_same(e_base, t_base)


def test_writes_through_views_reach_the_base(torch):
    e_base, t_base = _pair(torch)
    for lib, x in ((ember, e_base), (torch, t_base)):
        x.transpose(0, 2).select(0, 1).add_(100)
        x.diagonal(0, 1, 2).mul_(-1)
        x.unfold(2, 2, 2)[..., 0].fill_(7)
    assert_same(e_base, t_base)
    assert e_base._version == t_base._version


def test_version_counter_is_shared_by_views(torch):
    e_base, t_base = _pair(torch)
    e_views = [e_base[:1], e_base.permute(2, 1, 0), e_base.view(-1)]
    t_views = [t_base[:1], t_base.permute(2, 1, 0), t_base.view(-1)]
    e_views[0].mul_(2)
    t_views[0].mul_(2)
    assert [v._version for v in e_views] == [v._version for v in t_views] == [1, 1, 1]
    assert e_base._version == t_base._version == 1
    e_views[2].add_(1)
    t_views[2].add_(1)
    assert e_base._version == t_base._version == 2
    assert_same(e_base, t_base)


# ---- in-place metadata ops -------------------------------------------------------------------------

INPLACE = [
    ("t_", (3, 4), lambda x: x.t_()),
    ("t_1d", (4,), lambda x: x.t_()),
    ("transpose_", SHAPE, lambda x: x.transpose_(0, 2)),
    ("squeeze_", (1, 3, 1), lambda x: x.squeeze_()),
    ("squeeze_dim", (1, 3, 1), lambda x: x.squeeze_(0)),
    ("squeeze_dims", (1, 3, 1), lambda x: x.squeeze_((0, 2))),
    ("unsqueeze_", SHAPE, lambda x: x.unsqueeze_(-1)),
    ("as_strided_", SHAPE, lambda x: x.as_strided_((3, 2), (1, 3), 1)),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name,shape,fn", INPLACE, ids=[v[0] for v in INPLACE])
def test_inplace_metadata_ops(torch, name, shape, fn, device):
    e, t = _pair(torch, shape, device)
    e_storage = e.untyped_storage()
    if device == "cpu":
        e._nd()  # fill the NumPy cache: the op must drop it
    assert fn(e) is e and fn(t) is t
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert e.storage_offset() == t.storage_offset()
    assert e._version == t._version == 1
    assert e.untyped_storage() is e_storage
    if device == "cpu":
        assert_same(e, t)


def test_inplace_metadata_op_on_a_view_keeps_it_a_view(torch):
    for lib, x in ((ember, from_np(np.zeros((2, 3), np.float32))), (torch, torch.zeros(2, 3))):
        y = x.t()
        y.t_()
        assert y._base is x and tuple(y.shape) == (2, 3) and y.stride() == (3, 1)
        assert x._version == 1


# ---- seeds -----------------------------------------------------------------------------------------

def test_seed002_section_3_2(torch):
    for lib in (ember, torch):
        a = lib.arange(24, dtype=lib.float32).view(2, 3, 4)
        assert a.stride() == (12, 4, 1)
        b = a.transpose(0, 2)
        assert tuple(b.shape) == (4, 3, 2) and b.stride() == (1, 4, 12)
        assert b.is_contiguous() is False and b.data_ptr() == a.data_ptr()
        c = a.narrow(1, 1, 2)
        assert (tuple(c.shape), c.stride(), c.storage_offset()) == ((2, 2, 4), (12, 4, 1), 4)
        assert c.data_ptr() == a.data_ptr() + 4 * 4
        d = a.unsqueeze(0)
        assert (tuple(d.shape), d.stride()) == ((1, 2, 3, 4), (24, 12, 4, 1))


def test_seed002_exercise_1(torch):
    for lib in (ember, torch):
        a = lib.arange(60).view(3, 4, 5)
        assert a.stride() == (20, 5, 1)
        b = a.permute(2, 0, 1)
        assert (tuple(b.shape), b.stride(), b.storage_offset()) == ((5, 3, 4), (1, 20, 5), 0)
        assert not b.is_contiguous()


def test_contiguity_and_channels_last(torch):
    for lib in (ember, torch):
        x = lib.empty(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
        assert tuple(x.shape) == (2, 3, 4, 5) and x.stride() == (60, 1, 15, 3)
        assert not x.is_contiguous() and x.is_contiguous(memory_format=lib.channels_last)
    cases = [
        lambda m: m.empty(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)[:, :1],
        lambda m: m.empty(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)[:, 1:],
        lambda m: m.empty(2, 3, 4, 5).transpose(2, 3),
        lambda m: m.empty(2, 3, 4).unsqueeze(1).expand(2, 5, 3, 4),
        lambda m: m.empty(2, 1, 4).expand(2, 1, 4).transpose(0, 1),
        lambda m: m.empty(3, 1, 4).transpose(0, 1),
        lambda m: m.empty(1, 3, 1, 1).squeeze(0).unsqueeze(0),
        lambda m: m.empty(2, 0, 4).transpose(0, 2),
    ]
    for make in cases:
        e, t = make(ember), make(torch)
        assert e.stride() == t.stride()
        assert e.is_contiguous() == t.is_contiguous()
        assert e.is_contiguous(memory_format=ember.channels_last) == \
            t.is_contiguous(memory_format=torch.channels_last)


# ---- errors ----------------------------------------------------------------------------------------

ERRORS = [
    ("view_incompatible", SHAPE, lambda x, m: x.transpose(0, 1).view(-1)),
    ("view_merge_transposed", SHAPE, lambda x, m: x.transpose(1, 2).view(2, 12, 1)),
    ("view_bad_numel", SHAPE, lambda x, m: x.view(5, 5)),
    ("view_two_infer", SHAPE, lambda x, m: x.view(-1, -1)),
    ("view_dtype_0d", (), lambda x, m: x.view(m.int16)),
    ("view_dtype_last_size", (2, 3), lambda x, m: x.view(m.float64)),
    ("view_dtype_last_stride_up", (2, 4), lambda x, m: x.t().view(m.float64)),
    ("view_dtype_last_stride_down", (2, 3), lambda x, m: x.t().view(m.int16)),
    ("view_dtype_offset", (4, 6), lambda x, m: x.view(m.int16)[:, 1:3].view(m.int32)),
    ("view_dtype_stride", (4, 6), lambda x, m: x.view(m.int16)[:, 2:].view(m.int64)),
    ("reshape_bad_numel", SHAPE, lambda x, m: x.reshape(7, -1)),
    ("as_strided_bounds", SHAPE, lambda x, m: x.as_strided((2,), (1,), 23)),
    ("as_strided_neg_stride", SHAPE, lambda x, m: x.as_strided((2,), (-1,))),
    ("as_strided_neg_offset", SHAPE, lambda x, m: x.as_strided((2,), (1,), -1)),
    ("as_strided_rank", SHAPE, lambda x, m: x.as_strided((2, 2), (1,))),
    ("transpose_dim", SHAPE, lambda x, m: x.transpose(0, 3)),
    ("permute_len", SHAPE, lambda x, m: x.permute(0, 1)),
    ("permute_repeat", SHAPE, lambda x, m: x.permute(0, 1, 1)),
    ("permute_range", SHAPE, lambda x, m: x.permute(0, 1, 3)),
    ("t_3d", SHAPE, lambda x, m: x.t()),
    ("t__3d", SHAPE, lambda x, m: x.t_()),
    ("mT_1d", (3,), lambda x, m: x.mT),
    ("narrow_neg_length", SHAPE, lambda x, m: x.narrow(0, 0, -1)),
    ("narrow_start", SHAPE, lambda x, m: x.narrow(0, 5, 1)),
    ("narrow_too_long", SHAPE, lambda x, m: x.narrow(1, 2, 2)),
    ("narrow_0d", (), lambda x, m: x.narrow(0, 0, 1)),
    ("narrow_float_tensor_start", SHAPE, lambda x, m: x.narrow(0, m.ones(()), 1)),
    ("select_range", SHAPE, lambda x, m: x.select(1, 5)),
    ("select_neg_range", SHAPE, lambda x, m: x.select(1, -4)),
    ("select_dim", SHAPE, lambda x, m: x.select(3, 0)),
    ("select_0d", (), lambda x, m: x.select(0, 0)),
    ("slice_step_zero", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 1, 0, 3, 0)),
    ("slice_step_neg", SHAPE, lambda x, m: m.ops.aten.slice.Tensor(x, 1, 0, 3, -1)),
    ("slice_0d", (), lambda x, m: m.ops.aten.slice.Tensor(x, 0, 0, 1)),
    ("unsqueeze_dim", SHAPE, lambda x, m: x.unsqueeze(4)),
    ("unsqueeze_neg_dim", SHAPE, lambda x, m: x.unsqueeze(-5)),
    ("squeeze_dim", SHAPE, lambda x, m: x.squeeze(3)),
    ("squeeze_0d_dim", (), lambda x, m: x.squeeze(1)),
    ("squeeze_dims_repeat", (1, 3, 1), lambda x, m: x.squeeze((0, 0))),
    ("squeeze__dim", SHAPE, lambda x, m: x.squeeze_(5)),
    ("expand_fewer_sizes", SHAPE, lambda x, m: x.expand(2, 4)),
    ("expand_mismatch", (3,), lambda x, m: x.expand(2, 4)),
    ("expand_leading_minus_one", (3, 1), lambda x, m: x.expand(-1, 3, 4)),
    ("broadcast_to_mismatch", (3,), lambda x, m: m.broadcast_to(x, (2, 4))),
    ("flatten_order", SHAPE, lambda x, m: x.flatten(2, 1)),
    ("flatten_dim", SHAPE, lambda x, m: x.flatten(0, 5)),
    ("unflatten_product", SHAPE, lambda x, m: x.unflatten(1, (2, 2))),
    ("unflatten_empty", SHAPE, lambda x, m: x.unflatten(1, ())),
    ("unflatten_zero_infer", SHAPE, lambda x, m: x.unflatten(2, (0, -1))),
    ("unfold_too_big", SHAPE, lambda x, m: x.unfold(2, 5, 1)),
    ("unfold_step", SHAPE, lambda x, m: x.unfold(2, 2, 0)),
    ("unfold_neg_size", SHAPE, lambda x, m: x.unfold(2, -1, 1)),
    ("unfold_0d", (), lambda x, m: x.unfold(0, 2, 1)),
    ("diagonal_same_dims", SHAPE, lambda x, m: x.diagonal(0, 1, 1)),
    ("diagonal_dim", SHAPE, lambda x, m: x.diagonal(0, 1, 3)),
    ("movedim_lengths", SHAPE, lambda x, m: x.movedim((0, 1), (2,))),
    ("movedim_repeat_source", SHAPE, lambda x, m: x.movedim((-1, -1), (0, 1))),
    ("movedim_repeat_destination", SHAPE, lambda x, m: x.movedim((0, 1), (2, 2))),
    ("movedim_dim", SHAPE, lambda x, m: x.movedim(3, 0)),
    ("split_zero", SHAPE, lambda x, m: x.split(0, 2)),
    ("split_negative", SHAPE, lambda x, m: x.split(-1, 2)),
    ("split_sum", SHAPE, lambda x, m: x.split([1, 2], 2)),
    ("split_negative_size", SHAPE, lambda x, m: x.split([1, -1, 4], 2)),
    ("split_0d", (), lambda x, m: x.split(1)),
    ("chunk_zero", SHAPE, lambda x, m: x.chunk(0, 2)),
    ("chunk_0d", (), lambda x, m: x.chunk(1)),
    ("unbind_0d", (), lambda x, m: x.unbind()),
    ("unbind_dim", SHAPE, lambda x, m: x.unbind(3)),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name,shape,fn", ERRORS, ids=[v[0] for v in ERRORS])
def test_errors_match_pytorch(torch, name, shape, fn, device):
    if name == "t__3d" and device == "meta":
        pytest.skip("PyTorch's meta t_ raises AssertionError('t_ expects...'); ember raises the "
                    "CPU error on every device")
    if name == "as_strided_bounds" and device == "meta":
        pytest.skip("meta storage bounds are not checked: see test_as_strided_on_meta_skips_bounds")
    _check_error(torch, fn, shape, device)


def test_as_strided_on_meta_skips_bounds(torch):
    e, t = _pair(torch, device="meta")
    ev, tv = e.as_strided((2,), (1,), 23), t.as_strided((2,), (1,), 23)
    assert ev.storage_offset() == tv.storage_offset() == 23


def test_unflatten_two_inferred_dims_is_a_runtime_error(torch):
    _check_error(torch, lambda x, m: x.unflatten(2, (-1, -1)), match=False)


def test_failed_inplace_metadata_op_leaves_tensor_unchanged(torch):
    e, t = _pair(torch)
    for x in (e, t):
        with pytest.raises(IndexError):
            x.transpose_(0, 7)
        with pytest.raises(RuntimeError):
            x.as_strided_((100,), (1,))
    assert tuple(e.shape) == tuple(t.shape) == SHAPE and e.stride() == t.stride()
    assert e._version == t._version


def _ops_called(fn):
    """The aten ops a call dispatches, in order (from ember's dispatch trace)."""
    import io
    import re
    buf = io.StringIO()
    ember._C._set_dispatch_trace(True, buf)
    try:
        fn()
    finally:
        ember._C._set_dispatch_trace(False)
    names = re.findall(r"op=\[aten::([a-z_.A-Z]+)\]", buf.getvalue())
    return [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]


def test_composite_views_decompose_like_pytorch():
    x = from_np(np.arange(24.0).reshape(2, 3, 4))
    assert _ops_called(lambda: x.narrow(0, 0, 1)) == ["narrow", "slice.Tensor"]
    assert _ops_called(lambda: x.reshape(4, 6)) == ["reshape", "view"]
    copied = _ops_called(lambda: x.transpose(0, 2).reshape(-1))
    # (ATen's copy path: the clone's _unsafe_view, so the result is not a view)
    assert copied[:3] == ["transpose.int", "reshape", "clone"] and copied[-1] == "_unsafe_view"
    assert _ops_called(lambda: x.movedim(0, 1)) == ["movedim.int", "permute"]
    assert _ops_called(lambda: ember.broadcast_to(x, (2, 2, 3, 4))) == ["broadcast_to", "expand"]
    assert _ops_called(lambda: x.swapaxes(0, 1)) == ["swapaxes", "transpose.int"]
    assert _ops_called(lambda: x.split([1, 2], 1)) == ["split.sizes", "split_with_sizes"]
    assert _ops_called(lambda: x.chunk(2, 2)) == ["chunk", "split.Tensor"]


def test_contiguous_view_strides_shortcut_agrees_with_the_walk():
    """compute_view_stride answers a contiguous tensor with contiguous strides without ATen's
    walk over dimension chunks: the walk gives the same strides for every such view (random
    shapes with 0s and 1s, new shapes from factorisations of the size)."""
    import math
    import random
    from ember._core import strides as st
    rng = random.Random(0)
    checked = 0
    for _ in range(3000):
        old = tuple(rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(rng.randint(1, 4)))
        size = math.prod(old)
        new, rest = [], size
        for _ in range(rng.randint(0, 3)):
            d = rng.choice([d for d in range(1, rest + 1) if rest % d == 0]) if size else 0
            new.append(d)
            rest = rest // d if size else 0
        new.append(rest if size else rng.choice([0, 2]))
        rng.shuffle(new)
        new.insert(rng.randint(0, len(new)), 1)
        if math.prod(new) != size:
            continue
        stride = st.contiguous_strides(old)
        assert (st.compute_view_stride(old, stride, tuple(new)) ==
                st._view_stride_walk(old, stride, tuple(new))), (old, new)
        checked += 1
    assert checked > 2000


def test_suggested_memory_format_as_pytorch(torch):
    """strides.suggests_channels_last against PyTorch's suggest_memory_format (its Python port
    in torch._prims_common, the same rule as ATen's) on permuted, sliced, empty and size-1
    layouts of 4-d and 5-d tensors."""
    import random
    from torch._prims_common import suggest_memory_format
    from ember._core import strides as st
    rng = random.Random(1)
    for _ in range(3000):
        nd = rng.choice([4, 5])
        size = [rng.choice([0, 1, 1, 2, 3]) for _ in range(nd)]
        perm = list(range(nd))
        rng.shuffle(perm)
        t = torch.empty([size[p] for p in perm]).permute(*[perm.index(i) for i in range(nd)])
        if rng.random() < 0.3:
            t = t[tuple(slice(None, None, rng.choice([1, 2])) for _ in range(nd))]
        want = suggest_memory_format(t) in (torch.channels_last, torch.channels_last_3d)
        assert st.suggests_channels_last(tuple(t.shape), tuple(t.stride())) == want, \
            (t.shape, t.stride())

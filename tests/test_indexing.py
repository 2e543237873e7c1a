"""``Tensor.__getitem__`` / ``__setitem__`` against PyTorch: basic indexing returns views made of
select/slice/unsqueeze, advanced indexing goes through ``aten::index`` / ``aten::index_put_``;
results, writes, version counters and errors (type and message) on CPU and meta tensors."""
import io
import re
import warnings

import numpy as np
import pytest

import ember
from helpers import assert_same, from_np

SHAPE = (2, 3, 4)


def _pair(torch, shape=SHAPE, device="cpu"):
    if device == "meta":
        return ember.empty(*shape, device="meta"), torch.empty(*shape, device="meta")
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return from_np(a), torch.from_numpy(a.copy())


def _ix(lib, i):
    """Index ``i`` with ember/torch tensors standing for the NumPy arrays in it."""
    if isinstance(i, tuple):
        return tuple(_ix(lib, j) for j in i)
    if isinstance(i, np.ndarray):
        return from_np(i) if lib is ember else __import__("torch").from_numpy(i.copy())
    return i


def _ops_called(fn):
    """The aten ops a call dispatches at the top level, in order (ember's dispatch trace)."""
    buf = io.StringIO()
    ember._C._set_dispatch_trace(True, buf)
    try:
        fn()
    finally:
        ember._C._set_dispatch_trace(False)
    return re.findall(r"^\[[^\]]*\] op=\[aten::([A-Za-z_.]+)\]", buf.getvalue(), re.M)


BASIC = [
    ("int", 1),
    ("neg_int", -1),
    ("tuple_ints", (1, 2)),
    ("all_ints", (1, -1, 3)),
    ("slice", slice(1, None)),
    ("slice_step", (slice(None), slice(None, None, 2))),
    ("slice_neg_bounds", (Ellipsis, slice(-3, -1))),
    ("slice_clamped", (slice(None), slice(-10, 10))),
    ("slice_empty", (slice(None), slice(2, 1))),
    ("slice_full_explicit", slice(0, 2)),
    ("slice_full", slice(None)),
    ("none", None),
    ("none_middle", (slice(None), None, 1)),
    ("ellipsis", Ellipsis),
    ("ellipsis_int", (Ellipsis, 1)),
    ("int_ellipsis_int", (0, Ellipsis, 1)),
    ("ellipsis_none", (Ellipsis, None)),
    ("two_ellipses", (Ellipsis, Ellipsis)),
    ("empty_tuple", ()),
    ("mixed", (1, None, slice(0, 3, 2), Ellipsis, None)),
    ("numpy_int", np.int64(1)),
    ("tensor_0d_int", np.array(1)),
    ("tensor_0d_int_tuple", (0, np.array(2, dtype=np.int32))),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name,index", BASIC, ids=[b[0] for b in BASIC])
def test_basic_indexing_gives_views(torch, name, index, device):
    e_base, t_base = _pair(torch, device=device)
    e, t = e_base[_ix(ember, index)], t_base[_ix(torch, index)]
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
    assert e is not e_base and e._base is e_base and t._base is t_base
    assert e.untyped_storage() is e_base.untyped_storage() and e._vc is e_base._vc
    if device == "cpu":
        assert_same(e, t)
        if t.numel():
            assert e.data_ptr() - e_base.data_ptr() == t.data_ptr() - t_base.data_ptr()
        else:
            assert e.data_ptr() == t.data_ptr() == 0


def test_indexing_a_0d_tensor(torch):
    for index in (Ellipsis, None, ()):
        e, t = from_np(np.array(3.0, np.float32))[index], torch.tensor(3.0)[index]
        assert tuple(e.shape) == tuple(t.shape)


def test_basic_indexing_is_made_of_view_ops():
    x = from_np(np.zeros(SHAPE, np.float32))
    assert _ops_called(lambda: x[0, 1:2, None, ...]) == ["select.int", "slice.Tensor", "unsqueeze"]
    assert _ops_called(lambda: x[1]) == ["select.int"]
    assert _ops_called(lambda: x[:]) == ["slice.Tensor"]
    assert _ops_called(lambda: x[0:2]) == ["alias"]  # a whole-dim slice is skipped, as in PyTorch
    assert _ops_called(lambda: x[...]) == ["alias"]
    assert _ops_called(lambda: x[[0, 1]]) == ["index.Tensor"]
    assert _ops_called(lambda: x.__setitem__(0, 1.0)) == ["select.int", "fill_.Tensor"]
    assert _ops_called(lambda: x.__setitem__(0, x[1])) == ["select.int", "select.int", "copy_"]
    assert _ops_called(lambda: x.__setitem__([0], 2.0)) == ["index_put_"]


def test_writes_through_basic_index_views(torch):
    e, t = _pair(torch)
    for x in (e, t):
        y = x[:1]
        y.mul_(2)
        x[1, :, ::2].add_(100)
    assert_same(e, t)
    assert e._version == t._version == 2


SETS = [
    ("int_number", 0, 5.0),
    ("int_bool_number", 1, True),
    ("slice_number", (slice(None), 1), 7),
    ("ellipsis", Ellipsis, -1.0),
    ("none", None, 2.0),
    ("bool_true", True, 3.0),
    ("row_tensor", 0, np.arange(4, dtype=np.float32)),
    ("broadcast_rows", (slice(None), slice(0, 2)), np.arange(4, dtype=np.float32)),
    ("leading_ones", 0, np.ones((1, 1, 4), np.float32)),
    ("step", (0, slice(None, None, 2)), np.array([[1.0], [2.0]], np.float32)),
    ("list", [0, 1], np.ones(4, np.float32)),
    ("list_leading_ones", [1], np.ones((1, 1, 4), np.float32)),
    ("mask", np.array([[True, False, True], [False, False, True]]), -5.0),
    ("two_lists", ([0, 0, 1], [1, 1, 2]), np.array([[1.0], [2.0], [3.0]], np.float32)),
    ("three_lists", ([0, 1, 1], [1, 1, 2], [0, 3, 3]), np.array([1.0, 2.0, 3.0], np.float32)),
    ("list_and_slice", ([1, 0], slice(1, 3), 2), 9.0),
]


@pytest.mark.parametrize("name,index,value", SETS, ids=[s[0] for s in SETS])
def test_setitem_matches_pytorch(torch, name, index, value):
    e, t = _pair(torch)
    e_view, t_view = e[:], t[:]
    e[_ix(ember, index)] = _ix(ember, value)
    t[_ix(torch, index)] = _ix(torch, value)
    assert_same(e, t)
    assert e._version == t._version == e_view._version == t_view._version == 1


def test_setitem_casts_numbers_to_the_tensor_dtype(torch):
    e = from_np(np.zeros(3, np.int64))
    t = torch.zeros(3, dtype=torch.int64)
    for x in (e, t):
        x[0] = 2.7
        x[[1]] = -1.9
        x[2] = True
    assert_same(e, t)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_setitem_on_meta_and_cpu_checks_shapes_only(torch, device):
    e, t = _pair(torch, device=device)
    for x, lib in ((e, ember), (t, torch)):
        x[0] = 1.0
        x[[0, 1], 1:] = 2.0
        x[0] = lib.ones(3, 4, device=device)
    assert e._version == t._version == 3


ADVANCED = [
    ("list", [0, 1]),
    ("list_repeat_neg", [1, 1, -2]),
    ("empty_list", []),
    ("nested_list", [[0, 1], [1, 0]]),
    ("long_tensor", np.array([1, 0])),
    ("int32_tensor", (slice(None), np.array([2, 0], dtype=np.int32))),
    ("2d_index", np.array([[0], [1]])),
    ("bool_list", [True, False]),
    ("mask_1d", np.array([True, False])),
    ("mask_2d", np.array([[True, False, True], [False, False, True]])),
    ("mask_3d", np.arange(24).reshape(SHAPE) % 5 == 0),
    ("mask_then_slice", (np.array([[True, False, True], [False, False, True]]), slice(1, 3))),
    ("mask_then_list", (np.array([[True, False, True], [False, False, True]]), [0, 1, 2])),
    ("adjacent", (slice(None), [0, 1], [1, 2])),
    ("separated", ([0, 1], slice(None), [1, 2])),
    ("int_between", ([0], 1, [1, 2])),
    ("none_between", (np.array([[0, 1]]), None, np.array([1, 2]))),
    ("slice_none_list", (slice(1, None), None, [1, 2])),
    ("bool_scalar_and_list", (slice(1, None), True, [1, 2])),
    ("true", True),
    ("false", False),
    ("tensor_0d_bool", np.array(True)),
    ("ellipsis_list", (Ellipsis, [3, 0])),
    ("broadcast", (np.array([[0], [1]]), np.array([0, 2]))),
    ("tuple_in_tuple", ((0, 1), (1, 2))),
]


@pytest.mark.parametrize("name,index", ADVANCED, ids=[a[0] for a in ADVANCED])
def test_advanced_indexing_matches_pytorch(torch, name, index):
    e_base, t_base = _pair(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = e_base[_ix(ember, index)], t_base[_ix(torch, index)]
    assert_same(e, t, check_stride=True)
    assert e._base is None and e.untyped_storage() is not e_base.untyped_storage()


def test_advanced_indexing_on_meta(torch):
    cases = [[0, 1], (slice(None), [0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]), True,
             np.array([True, False]), (Ellipsis, [3, 0])]
    e_base, t_base = _pair(torch, device="meta")
    for index in cases:
        e, t = e_base[_ix(ember, index)], t_base[_ix(torch, index)]
        assert e.device.type == "meta" and tuple(e.shape) == tuple(t.shape)


def test_list_with_slices_is_a_tuple_index(torch):
    e_base, t_base = _pair(torch)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        e = e_base[[0, slice(None)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = t_base[[0, slice(None)]]
    assert_same(e, t)
    assert e._base is e_base


def test_index_put_accumulates(torch):
    e = from_np(np.zeros(3, np.float32))
    t = torch.zeros(3)
    for x, lib in ((e, ember), (t, torch)):
        idx = from_np(np.array([0, 0, 2])) if lib is ember else torch.tensor([0, 0, 2])
        vals = from_np(np.array([1.0, 2.0, 3.0], np.float32)) if lib is ember else torch.tensor(
            [1.0, 2.0, 3.0])
        x.index_put_((idx,), vals, accumulate=True)
        lib.index_put_(x, [idx], vals, True)
    assert_same(e, t)
    assert e._version == t._version == 2


def test_index_put_functional_leaves_input(torch):
    e = from_np(np.zeros(3, np.float32))
    t = torch.zeros(3)
    er = e.index_put([from_np(np.array([1]))], from_np(np.array(5.0, np.float32)))
    tr = t.index_put([torch.tensor([1])], torch.tensor(5.0))
    assert_same(er, tr)
    assert_same(e, t)
    assert e._version == 0


def test_uint8_mask_is_deprecated_but_works(torch):
    e_base, t_base = _pair(torch)
    m = np.array([1, 0], np.uint8)
    with pytest.warns(UserWarning, match="uint8"):
        e = e_base[from_np(m)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = t_base[torch.from_numpy(m)]
    assert_same(e, t)


GET_ERRORS = [
    ("int_range", 5),
    ("neg_int_range", -3),
    ("int_range_later_dim", (0, 5)),
    ("int_range_after_none", (None, 5)),
    ("int_range_after_ellipsis", (Ellipsis, 5)),
    ("neg_step", slice(None, None, -1)),
    ("zero_step", slice(None, None, 0)),
    ("float_slice", slice(0, 1.5)),
    ("too_many", (0, 0, 0, 0)),
    ("float", 1.5),
    ("list_range", [0, 5]),
    ("float_tensor", np.array([0.5])),
    ("mask_shape", np.array([True, False, True])),
    ("broadcast", ([0, 1], [0, 1, 2])),
    ("too_many_advanced", (slice(None), [0, 1], slice(None), [1, 2])),
    ("tensor_range_later_dim", (slice(None), np.array([3]))),
]


@pytest.mark.parametrize("name,index", GET_ERRORS, ids=[g[0] for g in GET_ERRORS])
def test_getitem_errors_match_pytorch(torch, name, index):
    e, t = _pair(torch)
    with pytest.raises(Exception) as te:
        t[_ix(torch, index)]
    with pytest.raises(Exception) as ee:
        e[_ix(ember, index)]
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("index", [0, -1, slice(None), (0, None)])
def test_0d_index_errors(torch, index):
    with pytest.raises(IndexError) as te:
        torch.tensor(3.0)[index]
    with pytest.raises(IndexError) as ee:
        from_np(np.array(3.0, np.float32))[index]
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_meta_getitem_errors(torch, device):
    e, t = _pair(torch, device=device)
    for index in (5, (0, 0, 0, 0), slice(None, None, -1), 1.5):
        with pytest.raises(Exception) as te:
            t[index]
        with pytest.raises(Exception) as ee:
            e[index]
        assert type(ee.value) is type(te.value) and str(ee.value) == str(te.value)


SET_ERRORS = [
    ("value_shape", 0, np.ones(3, np.float32)),
    ("value_rank", 0, np.ones((2, 4), np.float32)),
    ("advanced_value_shape", [0, 1], np.ones(3, np.float32)),
    ("advanced_value_dtype", [0, 1], np.ones(4, np.int64)),
    ("str", 0, "a"),
    ("index_range", 5, 1.0),
]


@pytest.mark.parametrize("name,index,value", SET_ERRORS, ids=[s[0] for s in SET_ERRORS])
def test_setitem_errors_match_pytorch_and_leave_tensor_unchanged(torch, name, index, value):
    e, t = _pair(torch)
    with pytest.raises(Exception) as te:
        t[_ix(torch, index)] = _ix(torch, value)
    with pytest.raises(Exception) as ee:
        e[_ix(ember, index)] = _ix(ember, value)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)
    assert_same(e, t)
    assert e._version == 0


def test_setitem_advanced_index_out_of_range(torch):
    # PyTorch may have written some elements before it finds the bad index; ember checks first
    e, t = _pair(torch)
    with pytest.raises(IndexError) as te:
        t[[0, 7]] = 1.0
    with pytest.raises(IndexError) as ee:
        e[[0, 7]] = 1.0
    assert str(ee.value) == str(te.value)
    assert e._version == 0 and float(e[0, 0, 0]) == 0.0

"""The PyTorch API surface beyond aten schemas: top-level functions torch defines in Python
(torch/functional.py, torch/__init__.py) and the aten ops that return Python values (numel,
is_* predicates, result_type), each compared with PyTorch; plus the alias methods."""
import warnings

import numpy as np
import pytest

import ember
from helpers import assert_same, from_np, to_torch


def _pair(torch, a):
    e = from_np(np.asarray(a))
    return e, to_torch(torch, e)


def _same_exc(torch, fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    assert type(ee.value).__name__ == type(te.value).__name__, (ee.value, te.value)


# -- predicates and metadata ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "int8", "bool"])
def test_predicates(torch, dtype):
    e = ember.ones((2, 3), dtype=getattr(ember, dtype))
    t = torch.ones((2, 3), dtype=getattr(torch, dtype))
    for name in ("numel", "is_floating_point", "is_complex", "is_signed", "is_inference",
                 "is_tensor"):
        assert getattr(ember, name)(e) == getattr(torch, name)(t), name
    assert ember.is_same_size(e, e) and not ember.is_same_size(e, ember.ones(3))
    assert e.is_same_size(e) == t.is_same_size(t)
    assert not ember.is_tensor([1]) and not ember.is_storage(e)
    assert ember.is_storage(e.untyped_storage())


def test_is_nonzero(torch):
    for vals in ([1.5], [0], [True], [[0.0]]):
        e, t = _pair(torch, vals)
        assert ember.is_nonzero(e) == torch.is_nonzero(t) == e.is_nonzero()
    for vals in ([1, 2], np.zeros((0,))):
        e, t = _pair(torch, vals)
        _same_exc(torch, lambda: ember.is_nonzero(e), lambda: torch.is_nonzero(t))


def test_where_of_a_condition_alone_is_its_nonzero_indices(torch):
    for vals in ([[0, 1], [2, 0]], [0.0, 3.0, -0.0], 5, 0, [[True, False], [False, True]],
                 np.zeros((2, 0))):
        e, t = _pair(torch, vals)
        got, want = ember.where(e), torch.where(t)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype is ember.int64 and g.tolist() == w.tolist()


def test_constants_aliases_and_small_functions_as_pytorch(torch):
    for name in ("pi", "e", "inf", "newaxis"):
        assert getattr(ember, name) == getattr(torch, name)
    assert np.isnan(ember.nan) and np.isnan(torch.nan)
    assert ember.GradScaler is ember.amp.GradScaler
    try:
        for args in ((True,), (True, False), (False,)):
            ember.set_anomaly_enabled(*args)
            torch.set_anomaly_enabled(*args)
            assert (ember.is_anomaly_enabled(), ember.is_anomaly_check_nan_enabled()) == \
                (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    finally:
        ember.set_anomaly_enabled(False)
        torch.set_anomaly_enabled(False)
    assert ember.get_device(ember.ones(2)) == torch.get_device(torch.ones(2)) == -1
    _same_exc(torch, lambda: ember.get_device(3), lambda: torch.get_device(3))
    e, t = _pair(torch, np.arange(24.0).reshape(2, 3, 4))
    assert_same(ember.adjoint(e), torch.adjoint(t))
    assert_same(e.adjoint(), t.adjoint())
    e, t = _pair(torch, [1.0, 2.0])
    _same_exc(torch, lambda: e.adjoint(), lambda: t.adjoint())


def test_result_type(torch):
    cases = [(("float32", (2,)), 1), (("int64", (2,)), 2.5), (("uint8", (2,)), 300),
             (("int32", ()), ("int64", (2,))), (("float16", (2,)), ("float64", ())),
             (("bool", (2,)), True)]
    for a, b in cases:
        def make(lib, spec):
            if isinstance(spec, tuple):
                return lib.ones(spec[1], dtype=getattr(lib, spec[0]))
            return spec
        er = ember.result_type(make(ember, a), make(ember, b))
        tr = torch.result_type(make(torch, a), make(torch, b))
        assert er.name == str(tr).split(".")[-1], (a, b)
    assert str(ember.result_type(1, 2.0)).split(".")[-1] == "float32"
    assert ember.result_type(2, ember.ones(1, dtype=ember.uint8)) is ember.uint8


def test_typename(torch):
    assert ember.typename(ember.zeros(2)) == torch.typename(torch.zeros(2))
    assert ember.typename(ember.zeros(2, dtype=ember.int64)) == "torch.LongTensor"
    assert ember.typename(3) == torch.typename(3) == "int"
    assert ember.typename(np.ndarray) == torch.typename(np.ndarray)


# -- broadcasting, atleast, unravel_index, cdist, kl_div -----------------------------------------

def test_broadcast_shapes(torch):
    for shapes in [((2, 1), (3,)), ((2,), (3, 1), (1, 1, 1)), (2, (3, 1)), ((),), ((0, 1), (3,)),
                   ()]:
        assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    for shapes in [((2, 1), (3, 4)), ((-1,),)]:
        _same_exc(torch, lambda: ember.broadcast_shapes(*shapes),
                  lambda: torch.broadcast_shapes(*shapes))


def test_broadcast_tensors_varargs(torch):
    a, ta = _pair(torch, np.arange(3.0).reshape(3, 1))
    b, tb = _pair(torch, np.arange(4))
    er, tr = ember.broadcast_tensors(a, b), torch.broadcast_tensors(ta, tb)
    assert isinstance(er, tuple) and len(er) == 2
    for x, y in zip(er, tr):
        assert_same(x, y)
        assert x.stride() == y.stride()  # expanded views, not copies


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast_nd(torch, n):
    ef, tf = getattr(ember, f"atleast_{n}d"), getattr(torch, f"atleast_{n}d")
    arrays = [np.array(2.0), np.arange(3.0), np.ones((2, 3)), np.ones((2, 3, 4))]
    pairs = [_pair(torch, a) for a in arrays]
    for e, t in pairs:
        assert_same(ef(e), tf(t))
    er = ef(*[e for e, _ in pairs])
    tr = tf(*[t for _, t in pairs])
    assert isinstance(er, tuple) and len(er) == len(tr)
    for x, y in zip(er, tr):
        assert_same(x, y)
    assert len(ef([e for e, _ in pairs])) == len(pairs)  # one sequence argument


def test_unravel_index(torch):
    for idx, shape in [([5, 7, 0], (3, 4)), ([-1, 11], (3, 4)), ([17, 23], (2, 3, 4)), ([3], 5)]:
        e, t = _pair(torch, idx)
        er, tr = ember.unravel_index(e, shape), torch.unravel_index(t, shape)
        assert len(er) == len(tr)
        for x, y in zip(er, tr):
            assert_same(x, y)
    e, t = _pair(torch, [1.5])
    _same_exc(torch, lambda: ember.unravel_index(e, (3,)), lambda: torch.unravel_index(t, (3,)))
    e, t = _pair(torch, [1])
    _same_exc(torch, lambda: ember.unravel_index(e, (-3,)), lambda: torch.unravel_index(t, (-3,)))


def test_cdist_compute_modes(torch):
    a, ta = _pair(torch, np.random.default_rng(0).normal(size=(4, 3)))
    b, tb = _pair(torch, np.random.default_rng(1).normal(size=(5, 3)))
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                 "donot_use_mm_for_euclid_dist"):
        assert_same(ember.cdist(a, b, compute_mode=mode), torch.cdist(ta, tb, compute_mode=mode),
                    rtol=1e-6, atol=1e-9)
    _same_exc(torch, lambda: ember.cdist(a, b, compute_mode="x"),
              lambda: torch.cdist(ta, tb, compute_mode="x"))


def test_kl_div_public_default_is_elementwise(torch):
    a, ta = _pair(torch, -np.arange(1.0, 7.0).reshape(2, 3) / 7)
    b, tb = _pair(torch, np.arange(1.0, 7.0).reshape(2, 3) / 7)
    assert_same(ember.kl_div(a, b), torch.kl_div(ta, tb))
    assert_same(ember.kl_div(a, b, 2), torch.kl_div(ta, tb, 2))
    assert_same(ember.kl_div(a, a, 1, log_target=True), torch.kl_div(ta, ta, 1, log_target=True))


def test_top_level_nn_functional_names(torch):
    a, ta = _pair(torch, np.arange(12.0).reshape(4, 3))
    b, tb = _pair(torch, np.arange(12.0).reshape(4, 3)[::-1].copy())
    assert_same(ember.cosine_similarity(a, b), torch.cosine_similarity(ta, tb))
    assert_same(ember.pairwise_distance(a, b), torch.pairwise_distance(ta, tb))
    assert_same(ember.pdist(a), torch.pdist(ta), rtol=1e-6)


# -- cov weights (kwarg tensors: not in the OpInfo table) ----------------------------------------

def test_cov_weights(torch):
    x, tx = _pair(torch, np.random.default_rng(2).normal(size=(3, 5)))
    fw, tfw = _pair(torch, np.array([1, 2, 0, 3, 1]))
    aw, taw = _pair(torch, np.array([0.5, 1.0, 2.0, 0.25, 1.5]))
    for kw in ({"fweights": (fw, tfw)}, {"aweights": (aw, taw)},
               {"fweights": (fw, tfw), "aweights": (aw, taw), "correction": 2},
               {"aweights": (aw, taw), "correction": 0}):
        ek = {k: v[0] if isinstance(v, tuple) else v for k, v in kw.items()}
        tk = {k: v[1] if isinstance(v, tuple) else v for k, v in kw.items()}
        assert_same(ember.cov(x, **ek), torch.cov(tx, **tk), rtol=1e-10)
    bad = [{"fweights": (aw, taw)}, {"aweights": (fw, tfw)},
           {"fweights": _pair(torch, np.array([1, 2]))},
           {"fweights": _pair(torch, np.array([1, -2, 0, 3, 1]))},
           {"fweights": _pair(torch, np.zeros(5, dtype=np.int64))}]
    for kw in bad:
        ek = {k: v[0] for k, v in kw.items()}
        tk = {k: v[1] for k, v in kw.items()}
        _same_exc(torch, lambda: ember.cov(x, **ek), lambda: torch.cov(tx, **tk))
    one, tone = _pair(torch, np.ones((2, 1)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = ember.cov(one)
    assert any("degrees of freedom" in str(m.message) for m in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(r, torch.cov(tone))


# -- global state: threads, default device, determinism, matmul precision ------------------------

def test_threads(torch):
    old = ember.get_num_threads()
    assert isinstance(old, int) and old >= 1 and ember.get_num_interop_threads() >= 1
    ember.set_num_threads(3)
    assert ember.get_num_threads() == 3
    ember.set_num_threads(old)
    for bad in (0, -1, 2.5):
        _same_exc(torch, lambda: ember.set_num_threads(bad), lambda: torch.set_num_threads(bad))
    _same_exc(torch, lambda: ember.set_num_interop_threads(0),
              lambda: torch.set_num_interop_threads(0))


def test_default_device(torch):
    assert ember.get_default_device() == ember.device("cpu")
    try:
        ember.set_default_device("meta")
        assert ember.zeros(2).device.type == "meta" and ember.get_default_device().type == "meta"
        with ember.device("cpu"):  # an explicit context wins
            assert ember.zeros(2).device.type == "cpu"
        assert ember.ones(1, device="cpu").device.type == "cpu"
    finally:
        ember.set_default_device(None)
    assert ember.zeros(1).device.type == "cpu"
    assert ember.get_default_device() == ember.device("cpu")


def test_deterministic_flags(torch):
    assert ember.are_deterministic_algorithms_enabled() is False
    try:
        ember.use_deterministic_algorithms(True, warn_only=True)
        assert ember.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled()
        assert ember.get_deterministic_debug_mode() == 1
        ember.set_deterministic_debug_mode("error")
        assert ember.get_deterministic_debug_mode() == 2
        for bad in ("foo", 5):
            _same_exc(torch, lambda: ember.set_deterministic_debug_mode(bad),
                      lambda: torch.set_deterministic_debug_mode(bad))
        _same_exc(torch, lambda: ember.use_deterministic_algorithms(1),
                  lambda: torch.use_deterministic_algorithms(1))
    finally:
        ember.use_deterministic_algorithms(False)
    assert ember.get_deterministic_debug_mode() == 0


def test_float32_matmul_precision(torch):
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("high")
        assert ember.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning):
            ember.set_float32_matmul_precision("foo")
        assert ember.get_float32_matmul_precision() == "high"
    finally:
        ember.set_float32_matmul_precision("highest")


# -- alias methods and functions ------------------------------------------------------------------

_ALIAS_METHODS = ["absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh",
                  "negative", "fix", "deg2rad", "rad2deg", "isreal", "ravel"]
_ALIAS_BINARY = ["divide", "multiply", "subtract", "greater", "greater_equal", "less",
                 "less_equal", "not_equal", "arctan2", "ldexp", "dist"]


def test_alias_methods(torch):
    e, t = _pair(torch, np.array([[0.5, -0.25, 1.5], [2.0, 0.75, -1.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _ALIAS_METHODS:
            assert_same(getattr(e, name)(), getattr(t, name)())
            if hasattr(torch, name):
                assert_same(getattr(ember, name)(e), getattr(torch, name)(t))
        for name in _ALIAS_BINARY:
            assert_same(getattr(e, name)(e), getattr(t, name)(t), rtol=1e-6)
            assert_same(getattr(ember, name)(e, e), getattr(torch, name)(t, t), rtol=1e-6)
    assert_same(e.divide(2, rounding_mode="floor"), t.divide(2, rounding_mode="floor"))
    assert_same(ember.subtract(e, 1, alpha=2), torch.subtract(t, 1, alpha=2))
    assert_same(e.greater(0.5), t.greater(0.5))
    assert_same(ember.concat([e, e], 1), torch.concat([t, t], 1))
    assert_same(ember.concatenate([e, e]), torch.concatenate([t, t]))
    for name in ("arcsin_", "negative_", "fix_", "divide_", "multiply_", "less_"):
        e2, t2 = e.clone(), t.clone()
        args = () if name in ("arcsin_", "negative_", "fix_") else (2,)
        r = getattr(e2, name)(*args)
        getattr(t2, name)(*args)
        assert r is e2
        assert_same(e2, t2)
    out = ember.empty(0, dtype=ember.float64)
    ember.divide(e, e, out=out)
    assert_same(out, torch.divide(t, t))


def test_split_family_methods(torch):
    e, t = _pair(torch, np.arange(24.0).reshape(2, 4, 3))
    for name, arg in (("hsplit", 2), ("vsplit", [1]), ("dsplit", 3)):
        er, tr = getattr(e, name)(arg), getattr(t, name)(arg)
        assert len(er) == len(tr)
        for x, y in zip(er, tr):
            assert_same(x, y)
            assert x._base is e  # views
    assert_same(e.diff(), t.diff())
    assert_same(e.narrow_copy(1, 1, 2), t.narrow_copy(1, 1, 2))
    assert e.ravel()._base is e
    assert_same(ember.row_stack([e[0], e[1]]), torch.row_stack([t[0], t[1]]))


def test_float_values_kept_out_of_the_table(torch):
    """vander and as_strided_scatter on floats (their table entries are integer-only)."""
    e, t = _pair(torch, np.array([0.5, -1.5, 2.0, 3.0]))
    for args in ((), (3, True), (0,), (1,)):
        assert_same(ember.vander(e, *args), torch.vander(t, *args))
    for dt in ("float32", "float64"):
        a, ta = _pair(torch, np.arange(12.0).reshape(3, 4).astype(dt))
        b, tb = _pair(torch, -np.arange(4.0).reshape(2, 2).astype(dt))
        assert_same(ember.as_strided_scatter(a, b, [2, 2], [4, 1], 1),
                    torch.as_strided_scatter(ta, tb, [2, 2], [4, 1], 1))
        assert_same(ember.detach_copy(a), torch.detach_copy(ta))


_WINDOWS = {"hann_window": [()], "hamming_window": [(), (0.6,), (0.6, 0.3)],
            "blackman_window": [()], "bartlett_window": [()], "kaiser_window": [(), (5.0,)]}


@pytest.mark.parametrize("name", sorted(_WINDOWS))
def test_window_functions_as_pytorch(torch, name):
    """Every overload, length, periodicity and floating dtype against torch (values within a
    few ulp: the cosines and Bessel functions are different libraries), PyTorch's errors."""
    for extra in _WINDOWS[name]:
        for n in (0, 1, 2, 5, 8, 31):
            for periodic in (True, False):
                for dtype, tol in (("float32", 2e-6), ("float64", 1e-12), ("float16", 2e-3),
                                   ("bfloat16", 1e-2)):
                    args = (n, periodic, *extra) if extra or not periodic else (n,)
                    e = getattr(ember, name)(*args, dtype=getattr(ember, dtype))
                    t = getattr(torch, name)(*args, dtype=getattr(torch, dtype))
                    assert e.dtype is getattr(ember, dtype) and tuple(e.shape) == tuple(t.shape)
                    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), atol=tol,
                                               rtol=0, err_msg=f"{name}{args} {dtype}")
    w = getattr(ember, name)(6, requires_grad=True)
    assert w.requires_grad and w.dtype is ember.float32
    assert getattr(ember, name)(6, device="meta").shape == (6,)
    for bad in (dict(args=(5,), dtype="int64"), dict(args=(-1,), dtype="float32")):
        with pytest.raises(RuntimeError) as te:
            getattr(torch, name)(*bad["args"], dtype=getattr(torch, bad["dtype"]))
        with pytest.raises(RuntimeError) as ee:
            getattr(ember, name)(*bad["args"], dtype=getattr(ember, bad["dtype"]))
        assert str(ee.value) == str(te.value)


def test_range_is_inclusive_and_deprecated_as_in_pytorch(torch):
    for args, kw in (((1, 4), {}), ((0, 1, 0.25), {}), ((1, 4), {"dtype": "int64"}),
                     ((3, -2, -1.5), {"dtype": "float64"})):
        kwe = {k: getattr(ember, v) for k, v in kw.items()}
        kwt = {k: getattr(torch, v) for k, v in kw.items()}
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            e = ember.range(*args, **kwe)
        with pytest.warns(UserWarning):
            t = torch.range(*args, **kwt)
        assert_same(e, t)


def test_frombuffer_shares_the_buffer_as_pytorch(torch):
    import array
    raw = bytes(range(1, 13))
    be, bt = bytearray(raw), bytearray(raw)
    e = ember.frombuffer(be, dtype=ember.int32)
    t = torch.frombuffer(bt, dtype=torch.int32)
    assert e.tolist() == t.tolist()
    be[0] = bt[0] = 99  # the buffer's memory: a write shows in the tensor
    assert e.tolist() == t.tolist()
    e[1] = t[1] = 7
    assert be[4] == bt[4] == 7
    assert ember.frombuffer(be, dtype=ember.int16, count=2, offset=4).tolist() == \
        torch.frombuffer(bt, dtype=torch.int16, count=2, offset=4).tolist()
    f = ember.frombuffer(array.array("f", [1.5, 2.5]), dtype=ember.float32, requires_grad=True)
    assert f.requires_grad and f.tolist() == [1.5, 2.5]
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        assert ember.frombuffer(b"abcd", dtype=ember.uint8).tolist() == [97, 98, 99, 100]
    for kwargs in ({"count": 5}, {"offset": 13}, {"count": 0}):
        with pytest.raises(ValueError) as te:
            torch.frombuffer(bytearray(raw), dtype=torch.int32, **kwargs)
        with pytest.raises(ValueError) as ee:
            ember.frombuffer(bytearray(raw), dtype=ember.int32, **kwargs)
        assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError) as te:
        torch.frombuffer(bytearray(5), dtype=torch.int32)
    with pytest.raises(ValueError) as ee:
        ember.frombuffer(bytearray(5), dtype=ember.int32)
    assert str(ee.value) == str(te.value)


def test_legacy_tensor_types_as_pytorch(torch):
    names = ["DoubleTensor", "FloatTensor", "BFloat16Tensor", "HalfTensor", "LongTensor",
             "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]
    x, xt = ember.ones(2), torch.ones(2)
    for name in names:
        e, t = getattr(ember, name), getattr(torch, name)
        assert repr(e) == repr(t) and e.dtype.name == str(t.dtype).split(".")[1]
        assert (e.is_cuda, e.is_sparse) == (t.is_cuda, t.is_sparse) == (False, False)
        assert ember.cuda.__dict__[name].is_cuda and repr(ember.cuda.__dict__[name]) == \
            repr(torch.cuda.__dict__[name])
        assert isinstance(x, e) == isinstance(xt, t)
        assert not issubclass(e, ember.Tensor)
        assert_same(x.type(e), xt.type(t))
        assert_same(e([1, 0, 2]), t([1, 0, 2]))
        assert tuple(e(2, 3).shape) == (2, 3) and e(2, 3).dtype is e.dtype
        assert tuple(e().shape) == (0,)
        if name != "FloatTensor":
            _same_exc(torch, lambda: e(x), lambda: t(xt))
    y, yt = ember.FloatTensor(x), torch.FloatTensor(xt)  # an alias of the same memory
    assert (y is x, y._is_view(), y.data_ptr() == x.data_ptr()) == \
        (yt is xt, yt._is_view(), yt.data_ptr() == xt.data_ptr())
    assert not isinstance(x, ember.cuda.FloatTensor)
    assert x.type("torch.IntTensor").dtype is ember.int32
    with pytest.raises(RuntimeError, match="expects device type: cpu but device type: meta"):
        ember.FloatTensor(2, device="meta")


def test_set_default_tensor_type_as_pytorch(torch):
    try:
        for t in ("DoubleTensor", "torch.FloatTensor"):
            with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
                ember.set_default_tensor_type(getattr(ember, t) if "." not in t else t)
            with warnings.catch_warnings():  # PyTorch warns once per process
                warnings.simplefilter("ignore")
                torch.set_default_tensor_type(getattr(torch, t) if "." not in t else t)
            assert ember.ones(1).dtype.name == str(torch.ones(1).dtype).split(".")[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for bad in ("LongTensor", 3):
                _same_exc(torch, lambda: ember.set_default_tensor_type(
                    getattr(ember, bad) if isinstance(bad, str) else bad),
                    lambda: torch.set_default_tensor_type(
                        getattr(torch, bad) if isinstance(bad, str) else bad))
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


def test_detach_in_place_as_pytorch(torch):
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        assert y.detach_() is y and not y.requires_grad and y.grad_fn is None and y.is_leaf
        w = lib.ones(2, requires_grad=True)
        assert lib.detach_(w) is w and not w.requires_grad
    _same_exc(torch, lambda: (ember.ones(3, requires_grad=True) * 2)[1:].detach_(),
              lambda: (torch.ones(3, requires_grad=True) * 2)[1:].detach_())
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    y.detach_()
    z = (y * x).sum()  # y is a constant now: the gradient reaches x through one path only
    z.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]

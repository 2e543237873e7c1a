"""Tensor creation compared with PyTorch: constant factories, ranges, eye, *_like and new_*,
fills, resize_, ember.tensor's type inference and errors, the legacy constructor, the meta
device and the ``with ember.device(...)`` default."""
import numpy as np
import pytest

import ember
from helpers import assert_same, to_torch_dtype


def _same_error(torch, ember_fn, torch_fn):
    """Both calls fail with the same exception type and message."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(type(te.value)) as ee:
        ember_fn()
    assert str(ee.value) == str(te.value), (str(ee.value), str(te.value))


def _both(torch, name, *args, **kwargs):
    return getattr(ember, name)(*args, **kwargs), getattr(torch, name)(*args, **_tk(torch, kwargs))


def _tk(torch, kwargs):
    return {k: to_torch_dtype(torch, v) if isinstance(v, ember.dtype) else v
            for k, v in kwargs.items()}


# ---- constant factories ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zeros", "ones"])
@pytest.mark.parametrize("args,kwargs", [((2, 3), {}), (((2, 3),), {}), ((4,), {"dtype": ember.int32}),
                                         (((),), {}), ((0, 2), {"dtype": ember.bool}),
                                         ((2,), {"dtype": ember.bfloat16}),
                                         ((3,), {"dtype": ember.complex64})])
def test_zeros_ones(torch, name, args, kwargs):
    e, t = _both(torch, name, *args, **kwargs)
    assert_same(e, t, check_stride=True)


@pytest.mark.parametrize("value,kwargs", [(True, {}), (3, {}), (3.5, {}), (1j, {}),
                                          (2.7, {"dtype": ember.int64}), (-1, {"dtype": ember.uint8}),
                                          (7, {"dtype": ember.float64})])
def test_full_dtype_inference(torch, value, kwargs):
    e, t = _both(torch, "full", (2, 3), value, **kwargs)
    assert_same(e, t)


@pytest.mark.parametrize("value,dtype", [(300, "uint8"), (1e40, "float32"), (1j, "float32"),
                                         (float("nan"), "int64"), (-1.0, "uint8"), (1e10, "float16")])
def test_full_overflow(torch, value, dtype):
    _same_error(torch, lambda: ember.full((2,), value, dtype=getattr(ember, dtype)),
                lambda: torch.full((2,), value, dtype=getattr(torch, dtype)))


def test_negative_sizes(torch):
    for name, args in [("zeros", (2, -1)), ("ones", (-1,)), ("empty", (-3,))]:
        _same_error(torch, lambda: getattr(ember, name)(*args), lambda: getattr(torch, name)(*args))
    _same_error(torch, lambda: ember.full((-1,), 2), lambda: torch.full((-1,), 2))


def test_scalar_tensor(torch):
    for v in (5, True, 2.5):
        e, t = _both(torch, "scalar_tensor", v)
        assert_same(e, t)
        assert e.stride() == t.stride() == ()
    e, t = _both(torch, "scalar_tensor", 5, dtype=ember.int32)
    assert_same(e, t)


def test_requires_grad_argument(torch):
    assert ember.zeros(2, requires_grad=True).requires_grad
    assert not ember.ones(2).requires_grad
    assert ember.zeros_like(ember.ones(2), requires_grad=True).requires_grad
    assert ember.ones(2).new_zeros(2, requires_grad=True).requires_grad


def test_default_dtype_is_honoured(torch):
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.zeros(2).dtype is ember.float64
        assert ember.full((1,), 1.5).dtype is ember.float64
        assert ember.arange(1.0, 2.0).dtype is ember.float64
        assert ember.tensor([1.0]).dtype is ember.float64
        assert ember.tensor(1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(old)


# ---- ranges ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}), ((2.5,), {}), ((True,), {}), ((1, 4, 0.5), {}), ((0, 1, 0.1), {}), ((10, 0, -3), {}),
    ((-1.5, 2), {}), ((0, 5.5), {"dtype": ember.int64}), ((0.5, 3), {"dtype": ember.int32}),
    ((0, 10, 3.5), {"dtype": ember.int64}), ((0, 7), {"dtype": ember.float16}),
    ((1, 2, 0.25), {"dtype": ember.float64}), ((0, 3), {"dtype": ember.bfloat16}),
    ((24,), {"dtype": ember.float32})])
def test_arange(torch, args, kwargs):
    e, t = _both(torch, "arange", *args, **kwargs)
    assert_same(e, t, check_stride=True)


@pytest.mark.parametrize("args", [(5, 1), (0, 5, 0), (0, float("inf")), (0, 1e20), (0, 2 ** 62, 1e-5),
                                  (1j,), (3, 0, 1)])
def test_arange_errors(torch, args):
    _same_error(torch, lambda: ember.arange(*args), lambda: torch.arange(*args))


def test_seed_002_strides(torch):
    e = ember.arange(24, dtype=ember.float32).view(2, 3, 4)
    t = torch.arange(24, dtype=torch.float32).view(2, 3, 4)
    assert_same(e, t, check_stride=True)
    assert e.is_contiguous()


@pytest.mark.parametrize("args,kwargs", [((0, 10, 5), {}), ((0, 10, 4), {"dtype": ember.int64}),
                                         ((0, 10, 1), {}), ((0, 10, 0), {}),
                                         ((0, 1, 7), {"dtype": ember.int32}),
                                         ((-3, 3, 4), {"dtype": ember.int64}), ((0, 1j, 3), {}),
                                         ((1, 2, 3), {"dtype": ember.float64}), ((-1.5, 7.25, 11), {})])
def test_linspace(torch, args, kwargs):
    e, t = _both(torch, "linspace", *args, **kwargs)
    assert_same(e, t)


def test_linspace_negative_steps(torch):
    _same_error(torch, lambda: ember.linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1))


@pytest.mark.parametrize("args,kwargs", [((3,), {}), ((2, 3), {}), ((3,), {"dtype": ember.bool}),
                                         ((0,), {}), ((4, 2), {"dtype": ember.int64})])
def test_eye(torch, args, kwargs):
    e, t = _both(torch, "eye", *args, **kwargs)
    assert_same(e, t, check_stride=True)


def test_eye_errors(torch):
    _same_error(torch, lambda: ember.eye(-1), lambda: torch.eye(-1))
    _same_error(torch, lambda: ember.eye(2, -1), lambda: torch.eye(2, -1))


# ---- *_like and new_* ------------------------------------------------------------------------

def _transposed(lib):
    return lib.arange(6, dtype=lib.float32).view(2, 3).t()


def test_like_preserves_dense_strides(torch):
    e, t = _transposed(ember), _transposed(torch)
    for name in ("empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"):
        er, tr = getattr(ember, name)(e), getattr(torch, name)(t)
        assert er.stride() == tr.stride() and er.shape == tr.shape and er.dtype.name == "float32"
    assert_same(ember.zeros_like(e, dtype=ember.int32), torch.zeros_like(t, dtype=torch.int32),
                check_stride=True)
    assert_same(ember.ones_like(e, memory_format=ember.contiguous_format),
                torch.ones_like(t, memory_format=torch.contiguous_format), check_stride=True)


def test_full_like(torch):
    assert_same(ember.full_like(ember.ones(2), 7), torch.full_like(torch.ones(2), 7))
    assert_same(ember.full_like(ember.ones(2, dtype=ember.int64), 2.7),
                torch.full_like(torch.ones(2, dtype=torch.int64), 2.7))
    _same_error(torch, lambda: ember.full_like(ember.ones(2, dtype=ember.uint8), 300),
                lambda: torch.full_like(torch.ones(2, dtype=torch.uint8), 300))


def test_new_family(torch):
    e, t = ember.ones(2, dtype=ember.int64), torch.ones(2, dtype=torch.int64)
    assert_same(e.new_zeros(2, 3), t.new_zeros(2, 3), check_stride=True)
    assert_same(e.new_ones((2,)), t.new_ones((2,)))
    assert_same(e.new_full((3,), 7), t.new_full((3,), 7))
    assert_same(e.new_full((3,), 7, dtype=ember.float64), t.new_full((3,), 7, dtype=torch.float64))
    assert e.new_empty(4, dtype=ember.int8).dtype is ember.int8
    assert e.new_zeros(2, device="meta").device.type == "meta"
    _same_error(torch, lambda: e.new_zeros(-1), lambda: t.new_zeros(-1))


# ---- fills and resize_ -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,value", [("float32", 3), ("int32", 2.7), ("int32", True), ("bool", 2.5),
                                         ("uint8", -1), ("float32", float("inf")),
                                         ("complex64", 1 + 2j), ("float32", 1 + 0j)])
def test_fill_(torch, dtype, value):
    e = ember.zeros(2, 3, dtype=getattr(ember, dtype))
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    assert e.fill_(value) is e
    t.fill_(value)
    assert_same(e, t)


@pytest.mark.parametrize("dtype,value", [("float32", 1j), ("uint8", 300), ("int64", float("nan")),
                                         ("uint8", -1.0), ("int32", float("inf")),
                                         ("bfloat16", 1e39), ("int64", 2 ** 63)])
def test_fill_overflow_leaves_self_unchanged(torch, dtype, value):
    e = ember.ones(2, dtype=getattr(ember, dtype))
    _same_error(torch, lambda: e.fill_(value),
                lambda: torch.ones(2, dtype=getattr(torch, dtype)).fill_(value))
    assert e.tolist() == ember.ones(2, dtype=getattr(ember, dtype)).tolist()


def test_fill_tensor_and_zero_(torch):
    e, t = ember.ones(2, 3), torch.ones(2, 3)
    assert_same(e.fill_(ember.tensor(3)), t.fill_(torch.tensor(3)))
    assert_same(ember.zero_(e), torch.zero_(t))
    _same_error(torch, lambda: e.fill_(ember.tensor([1.0])), lambda: t.fill_(torch.tensor([1.0])))
    v = e._version
    e.zero_()
    assert e._version == v + 1


def test_fill_on_view_writes_base(torch):
    e = ember.zeros(6)
    e.view(2, 3).fill_(4)
    assert e.tolist() == [4.0] * 6


def test_resize_(torch):
    e, t = ember.ones(6), torch.ones(6)
    assert_same(e.resize_(2, 3), t.resize_(2, 3), check_stride=True)
    e2 = ember.ones(2).resize_(3, 2)
    assert e2.shape == (3, 2) and e2.stride() == (2, 1)
    assert e2.view(6).tolist()[:2] == [1.0, 1.0]  # growing keeps the old elements
    m = ember.ones(2, device="meta").resize_(4, 5)
    assert m.shape == (4, 5) and m.device.type == "meta"
    _same_error(torch, lambda: ember.ones(2, 3).resize_(2, 2, memory_format=ember.channels_last),
                lambda: torch.ones(2, 3).resize_(2, 2, memory_format=torch.channels_last))


# ---- meta device and default device ---------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda L: L.zeros(2, 3, device="meta"), lambda L: L.ones(2, device="meta", dtype=L.int8),
    lambda L: L.full((2,), 1.5, device="meta"), lambda L: L.arange(5, device="meta"),
    lambda L: L.arange(0, 1, 0.25, device="meta"), lambda L: L.linspace(0, 1, 7, device="meta"),
    lambda L: L.eye(2, 3, device="meta"), lambda L: L.scalar_tensor(2, device="meta"),
    lambda L: L.rand(2, 3, device="meta"), lambda L: L.randn(4, device="meta", dtype=L.float64),
    lambda L: L.randint(0, 5, (3,), device="meta"), lambda L: L.normal(0.0, 1.0, (2,), device="meta"),
    lambda L: L.empty(2, 3, 4, 5, device="meta", memory_format=L.channels_last),
    lambda L: L.zeros_like(L.empty(2, 3, device="meta").t()),
])
def test_meta_factories(torch, make):
    e, t = make(ember), make(torch)
    assert e.device.type == t.device.type == "meta"
    assert e.shape == t.shape and e.stride() == t.stride() and e.dtype.name == str(t.dtype)[6:]


def test_meta_factory_errors(torch):
    _same_error(torch, lambda: ember.arange(5, 1, device="meta"), lambda: torch.arange(5, 1, device="meta"))
    _same_error(torch, lambda: ember.zeros(-1, device="meta"), lambda: torch.zeros(-1, device="meta"))
    _same_error(torch, lambda: ember.linspace(0, 1, -1, device="meta"),
                lambda: torch.linspace(0, 1, -1, device="meta"))
    _same_error(torch, lambda: ember.eye(-1, device="meta"), lambda: torch.eye(-1, device="meta"))
    _same_error(torch, lambda: ember.arange(0, float("inf"), device="meta"),
                lambda: torch.arange(0, float("inf"), device="meta"))
    _same_error(torch, lambda: ember.empty(2, device="meta").fill_(ember.tensor([1.0])),
                lambda: torch.empty(2, device="meta").fill_(torch.tensor([1.0])))
    # like PyTorch's, meta kernels skip checks on values that are never written
    assert ember.full((2,), 300, dtype=ember.uint8, device="meta").dtype is ember.uint8
    assert torch.full((2,), 300, dtype=torch.uint8, device="meta").dtype is torch.uint8


def test_device_context_manager(torch):
    with ember.device("meta"):
        for t in (ember.zeros(2), ember.arange(3), ember.rand(2), ember.tensor([1, 2]),
                  ember.empty(1), ember.full((1,), 2)):
            assert t.device.type == "meta"
    assert ember.zeros(2).device.type == "cpu"


# ---- ember.tensor -----------------------------------------------------------------------------

@pytest.mark.parametrize("data", [
    [[1, 2], [3, 4]], [1, 2.5], [True, 2], [True, False], [1, 1j], 5, 2.5, True, 1j, [], [[]],
    [[1, 2], (3, 4)], range(3), [True, 1.5], [[[1.5]]],
])
def test_tensor_inference(torch, data):
    assert_same(ember.tensor(data), torch.tensor(data), check_stride=True)


def test_tensor_numpy_inputs(torch):
    for data in [np.float64(1.0), np.int32(3), [np.float32(1), 2], [np.float64(1.0), 2],
                 [np.int32(3)], [np.bool_(True)], [1, np.float16(2)], np.arange(6).reshape(2, 3),
                 np.arange(6.0).reshape(2, 3).T, np.array(5.0), [[np.float32(1)]]]:
        assert_same(ember.tensor(data), torch.tensor(data), check_stride=True)


def test_tensor_from_tensor_elements(torch):
    assert_same(ember.tensor([ember.tensor(1.0), ember.tensor(2)]),
                torch.tensor([torch.tensor(1.0), torch.tensor(2)]))


@pytest.mark.parametrize("data,kwargs", [([1.5], {"dtype": "int32"}), ([300, -1], {"dtype": "int16"}),
                                         (-1, {"dtype": "uint8"}), ([1e40], {"dtype": "float32"}),
                                         (1.5, {"dtype": "bool"}), ([1, 2], {"dtype": "float64"}),
                                         ([0.5, 1.5], {"dtype": "bfloat16"})])
def test_tensor_explicit_dtype(torch, data, kwargs):
    e = ember.tensor(data, dtype=getattr(ember, kwargs["dtype"]))
    t = torch.tensor(data, dtype=getattr(torch, kwargs["dtype"]))
    assert_same(e, t)


@pytest.mark.parametrize("data,kwargs", [
    ([[1, 2], [3, 4, 5]], {}), ([[1], [2, 3]], {}), ([[1, 2], []], {}), ([[1, 2], 3], {}),
    ([1, [2]], {}), ("abc", {}), ([1, "a"], {}), (None, {}), ({1: 2}, {}), (2 ** 63, {}),
    ([1, 2 ** 63], {}), (300, {"dtype": "uint8"}), ([300], {"dtype": "uint8"}),
    (float("nan"), {"dtype": "int64"}), (1j, {"dtype": "float32"}),
    ([ember.tensor([1, 2])], {}),
])
def test_tensor_errors(torch, data, kwargs):
    td = {"dtype": getattr(torch, kwargs["dtype"])} if kwargs else {}
    ed = {"dtype": getattr(ember, kwargs["dtype"])} if kwargs else {}
    tdata = [torch.tensor([1, 2])] if isinstance(data, list) and data and \
        isinstance(data[0], ember.Tensor) else data
    _same_error(torch, lambda: ember.tensor(data, **ed), lambda: torch.tensor(tdata, **td))


def test_tensor_object_array_error(torch):
    a = np.array([1, 2], dtype=object)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
        ember.tensor(a)


def test_tensor_copies_and_flags(torch):
    a = np.zeros(3)
    e = ember.tensor(a)
    a[0] = 1
    assert e.tolist() == [0.0, 0.0, 0.0]
    src = ember.ones(2)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        c = ember.tensor(src, dtype=ember.float64)
    assert c.dtype is ember.float64 and c.untyped_storage() is not src.untyped_storage()
    r = ember.tensor([1.0, 2.0], requires_grad=True)
    assert r.requires_grad
    m = ember.tensor([1, 2], device="meta")
    assert m.device.type == "meta" and m.dtype is ember.int64


# ---- legacy constructor -------------------------------------------------------------------------

def test_legacy_constructor(torch):
    for args in [(2, 3), ([1, 2],), ((2, 3),), ([[1, 2], [3, 4]],), (), (np.array([1, 2]),)]:
        e, t = ember.Tensor(*args), torch.Tensor(*args)
        assert e.shape == t.shape and e.dtype.name == str(t.dtype)[6:]
        if args and not isinstance(args[0], int):
            assert_same(e, t)
    e = ember.Tensor(ember.Size([2, 3]))
    assert e.shape == (2, 3) and e.dtype is ember.float32
    src = ember.tensor([1, 2])
    alias = ember.Tensor(src)
    assert alias.dtype is ember.int64 and alias.untyped_storage() is src.untyped_storage()
    _same_error(torch, lambda: ember.Tensor(2.5), lambda: torch.Tensor(2.5))
    _same_error(torch, lambda: ember.Tensor(-1), lambda: torch.Tensor(-1))
    _same_error(torch, lambda: ember.Tensor(2, device="meta"), lambda: torch.Tensor(2, device="meta"))


def test_binding_errors(torch):
    _same_error(torch, lambda: ember.zeros("a"), lambda: torch.zeros("a"))
    _same_error(torch, lambda: ember.ones(size="a"), lambda: torch.ones(size="a"))
    for call in (lambda L: L.rand(2, 3, generator=L.Generator(), dtype=L.float64),
                 lambda L: L.randn((2, 3), generator=L.Generator()),
                 lambda L: L.randint(10, size=(3,)), lambda L: L.arange(start=1, end=5),
                 lambda L: L.eye(3, m=2), lambda L: L.full(size=(2,), fill_value=3),
                 lambda L: L.linspace(0, 1, steps=3), lambda L: L.zeros(2, dtype=float)):
        e, t = call(ember), call(torch)
        assert e.shape == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]


def test_factory_out_takes_dtype_and_device_from_out(torch):
    import warnings
    for name, args in [("zeros", (3,)), ("ones", (2, 2)), ("full", ((2,), 7)), ("arange", (5,)),
                       ("arange", (1, 7, 2)), ("linspace", (0, 1, 5)), ("eye", (2, 3))]:
        for dt in ["float64", "int32"]:
            e_out = ember.empty(0, dtype=getattr(ember, dt))
            t_out = torch.empty(0, dtype=getattr(torch, dt))
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # an empty out is resized silently
                r = getattr(ember, name)(*args, out=e_out)
            getattr(torch, name)(*args, out=t_out)
            assert r is e_out and e_out.dtype.name == dt
            assert e_out.tolist() == t_out.tolist(), (name, args, dt)
    t = ember.empty(4, dtype=ember.int64)
    assert ember.randint(3, 9, (4,), out=t) is t and all(3 <= v < 9 for v in t.tolist())
    with pytest.raises(RuntimeError, match="dtype Long does not match dtype of out parameter"):
        ember.zeros(3, dtype=ember.int64, out=ember.empty(3))
    with pytest.raises(RuntimeError, match="dtype Long does not match dtype of out parameter"):
        torch.zeros(3, dtype=torch.int64, out=torch.empty(3))

"""Copies and conversions compared with PyTorch: copy_ (broadcast, dtype conversion, overlap,
meta), clone/contiguous memory formats, every form of Tensor.to, from_numpy/as_tensor/asarray
memory sharing, and pickling."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import ember
from helpers import assert_same


def _same_error(ember_fn, torch_fn):
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(type(te.value)) as ee:
        ember_fn()
    assert str(ee.value) == str(te.value), (str(ee.value), str(te.value))


def _m(lib):
    return lib.arange(6, dtype=lib.float32).view(2, 3)


# ---- copy_ ----------------------------------------------------------------------------------------

def test_copy_broadcasts_and_converts(torch):
    e, t = ember.zeros(2, 3, dtype=ember.int32), torch.zeros(2, 3, dtype=torch.int32)
    e.copy_(ember.tensor([1.7, -2.2, 3.9]))
    t.copy_(torch.tensor([1.7, -2.2, 3.9]))
    assert_same(e, t)
    e = ember.zeros(2)
    assert e.copy_(ember.tensor(5.0)) is e
    assert_same(e, torch.zeros(2).copy_(torch.tensor(5.0)))
    for src in ([True, False], [300, -200]):
        e, t = ember.zeros(2, dtype=ember.int8), torch.zeros(2, dtype=torch.int8)
        assert_same(e.copy_(ember.tensor(src)), t.copy_(torch.tensor(src)))
    e, t = ember.zeros(3, dtype=ember.bfloat16), torch.zeros(3, dtype=torch.bfloat16)
    assert_same(e.copy_(ember.tensor([1.0, 2.5, 3.25])), t.copy_(torch.tensor([1.0, 2.5, 3.25])))


def test_copy_bumps_version_and_writes_views(torch):
    base = ember.zeros(6)
    v = base._version
    base.view(2, 3).copy_(ember.ones(3))
    assert base.tolist() == [1.0] * 6 and base._version == v + 1


def test_copy_complex_to_real_warns(torch):
    e = ember.zeros(2)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        e.copy_(ember.tensor([1 + 2j, 3j]))
    assert e.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("dst,src", [((2, 3), (4,)), ((3,), (2, 3))])
def test_copy_shape_errors_leave_dst_unchanged(torch, dst, src):
    e = ember.ones(*dst)
    _same_error(lambda: e.copy_(ember.zeros(*src)), lambda: torch.ones(*dst).copy_(torch.zeros(*src)))
    assert e.tolist() == ember.ones(*dst).tolist()


def test_copy_overlapping(torch):
    # a partly overlapping source is refused, as PyTorch refuses it; a cloned one is fine
    def shift(lib, clone):
        x = lib.arange(6)
        src = x.as_strided((5,), (1,), 0)
        x.as_strided((5,), (1,), 1).copy_(src.clone() if clone else src)
        return x
    _same_error(lambda: shift(ember, False), lambda: shift(torch, False))
    assert_same(shift(ember, True), shift(torch, True))


def test_copy_meta(torch):
    m = ember.zeros(2, device="meta")
    assert m.copy_(ember.ones(2)) is m
    _same_error(lambda: ember.zeros(2).copy_(ember.ones(2, device="meta")),
                lambda: torch.zeros(2).copy_(torch.ones(2, device="meta")))
    _same_error(lambda: ember.zeros(2).copy_(ember.tensor(5.0, device="meta")),
                lambda: torch.zeros(2).copy_(torch.tensor(5.0, device="meta")))
    _same_error(lambda: ember.zeros(2, device="meta").copy_(ember.ones(3, device="meta")),
                lambda: torch.zeros(2, device="meta").copy_(torch.ones(3, device="meta")))


# ---- clone / contiguous -------------------------------------------------------------------------

def test_clone_memory_formats(torch):
    e, t = _m(ember).t(), _m(torch).t()
    assert_same(e.clone(), t.clone(), check_stride=True)
    assert_same(ember.clone(e, memory_format=ember.contiguous_format),
                torch.clone(t, memory_format=torch.contiguous_format), check_stride=True)
    c = e.clone()
    c.fill_(0)
    assert e.tolist() == t.tolist()  # a clone owns its memory


def test_contiguous(torch):
    e, t = _m(ember), _m(torch)
    assert e.contiguous() is e
    assert_same(e.t().contiguous(), t.t().contiguous(), check_stride=True)
    e4 = ember.ones(2, 3, 4, 5)
    t4 = torch.ones(2, 3, 4, 5)
    cl = e4.contiguous(memory_format=ember.channels_last)
    assert cl.stride() == t4.contiguous(memory_format=torch.channels_last).stride()
    assert cl.contiguous(memory_format=ember.channels_last) is cl
    _same_error(lambda: e.contiguous(memory_format=ember.channels_last),
                lambda: t.contiguous(memory_format=torch.channels_last))
    _same_error(lambda: e.contiguous(memory_format=ember.preserve_format),
                lambda: torch.ones(2, 3).t().contiguous(memory_format=torch.preserve_format))


def test_empty_channels_last(torch):
    e = ember.empty(2, 3, 4, 5, memory_format=ember.channels_last)
    assert e.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()
    _same_error(lambda: ember.empty(2, 3, memory_format=ember.channels_last),
                lambda: torch.empty(2, 3, memory_format=torch.channels_last))


# ---- Tensor.to ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs", [
    (("float64",), {}), (("int32",), {}), (("cpu", "int32"), {}), (("cpu", "int32", False, False), {}),
    ((), {"dtype": "float16"}), ((), {"device": "cpu", "dtype": "float64"}), ((float,), {}),
    ((int,), {}), (("float32", True, True), {}), (("cpu",), {"copy": True}), (("bool",), {}),
])
def test_to_forms(torch, args, kwargs):
    def conv(lib, v):
        return getattr(lib, v) if isinstance(v, str) and v != "cpu" else v
    e = _m(ember).t().to(*[conv(ember, a) for a in args], **{k: conv(ember, v) for k, v in kwargs.items()})
    t = _m(torch).t().to(*[conv(torch, a) for a in args], **{k: conv(torch, v) for k, v in kwargs.items()})
    assert_same(e, t, check_stride=True)


def test_to_returns_self_when_nothing_changes(torch):
    e = _m(ember)
    assert e.to(ember.float32) is e
    assert e.to("cpu") is e
    assert e.to(e) is e
    assert e.to(None) is e
    assert e.to(ember.device("cpu"), ember.float32) is e
    assert e.to(ember.float32, copy=True) is not e
    assert e.to(ember.float32, memory_format=ember.contiguous_format) is e


def test_to_other_tensor_and_meta(torch):
    e = _m(ember)
    assert_same(e.to(ember.zeros(1, dtype=ember.int8)), _m(torch).to(torch.zeros(1, dtype=torch.int8)))
    m = e.to("meta")
    assert m.device.type == "meta" and m.shape == (2, 3) and m.dtype is ember.float32
    m2 = e.to("meta", ember.int32)
    assert m2.dtype is ember.int32 and m2.device.type == "meta"
    m3 = e.to(dtype=ember.int32, device="meta")
    assert m3.dtype is ember.int32 and m3.device.type == "meta"
    _same_error(lambda: m.to("cpu"), lambda: torch.ones(2, device="meta").to("cpu"))


def test_to_errors(torch):
    _same_error(lambda: _m(ember).to(ember.float32, memory_format=ember.channels_last),
                lambda: _m(torch).to(torch.float32, memory_format=torch.channels_last))
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination of arguments"):
        _m(ember).to(other=ember.zeros(1))
    with pytest.raises(TypeError):
        torch.ones(1).to(other=torch.zeros(1))


def test_dtype_shortcuts(torch):
    e, t = _m(ember), _m(torch)
    for name in ("double", "half", "int", "long", "bool", "byte", "cfloat", "bfloat16"):
        assert_same(getattr(e, name)(), getattr(t, name)())


# ---- NumPy interop ------------------------------------------------------------------------------

def test_from_numpy_shares_memory(torch):
    a = np.zeros(3)
    e = ember.from_numpy(a)
    assert e.dtype is ember.float64
    e.fill_(5)
    assert a.tolist() == [5.0, 5.0, 5.0]
    a[1] = 7
    assert e.tolist() == [5.0, 7.0, 5.0]


def test_from_numpy_strided(torch):
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    e, t = ember.from_numpy(a), torch.from_numpy(a)
    assert_same(e, t, check_stride=True)
    e.zero_()
    assert (a == 0).all()
    s = ember.from_numpy(np.array(3.0))
    assert s.shape == () and s.item() == 3.0


def test_from_numpy_is_not_resizable(torch):
    e = ember.from_numpy(np.zeros(2))
    with pytest.raises(RuntimeError):
        e.resize_(10)


@pytest.mark.parametrize("arg", ["object", "list", "scalar", "negative", "byteorder"])
def test_from_numpy_errors(torch, arg):
    make = {"object": lambda: np.array([1, 2], dtype=object), "list": lambda: [1, 2],
            "scalar": lambda: np.float64(3), "negative": lambda: np.zeros((3, 4))[:, ::-1],
            "byteorder": lambda: np.zeros(3, dtype=">f4")}[arg]
    with pytest.raises(Exception) as te:
        torch.from_numpy(make())
    with pytest.raises(type(te.value)) as ee:
        ember.from_numpy(make())
    if arg != "object":  # PyTorch also lists uint16/32/64, which ember does not have
        assert str(ee.value) == str(te.value)


def test_as_tensor_and_asarray(torch):
    a = np.zeros(3)
    e = ember.as_tensor(a)
    e.fill_(2)
    assert a.tolist() == [2.0] * 3
    c = ember.as_tensor(a, dtype=ember.float32)
    c.fill_(9)
    assert a.tolist() == [2.0] * 3 and c.dtype is ember.float32
    assert_same(ember.as_tensor([1, 2]), torch.as_tensor([1, 2]))
    t = ember.ones(2)
    assert ember.as_tensor(t) is t
    assert ember.as_tensor(t, dtype=ember.float64).dtype is ember.float64
    assert_same(ember.asarray([1, 2.5]), torch.asarray([1, 2.5]))
    assert_same(ember.asarray(np.zeros(2), dtype=ember.int32), torch.asarray(np.zeros(2), dtype=torch.int32))
    b = np.ones(2)
    ember.asarray(b).zero_()
    assert b.tolist() == [0.0, 0.0]
    ember.asarray(b, copy=True).fill_(4)
    assert b.tolist() == [0.0, 0.0]
    assert ember.asarray(t, copy=True) is not t


# ---- pickle / deepcopy / item -------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: ember.arange(6).view(2, 3), lambda: ember.arange(6.0).view(2, 3).t(),
    lambda: ember.tensor([1 + 2j]), lambda: ember.tensor(True), lambda: ember.zeros(2, dtype=ember.bfloat16),
    lambda: ember.ones(3, requires_grad=True), lambda: ember.empty(2, 3, device="meta"),
])
def test_pickle_round_trip(torch, make):
    t = make()
    r = pickle.loads(pickle.dumps(t))
    assert (r.shape, r.stride(), r.dtype, r.device, r.requires_grad) == \
        (t.shape, t.stride(), t.dtype, t.device, t.requires_grad)
    if t.device.type == "cpu":
        assert r.tolist() == t.tolist()
        assert r.untyped_storage() is not t.untyped_storage()


def test_deepcopy(torch):
    t = ember.arange(4.0)
    d = copy.deepcopy(t)
    d.fill_(0)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_attributes_set_on_a_tensor_as_pytorch(torch):
    """A program may set attributes on a tensor (as on PyTorch's): deepcopy copies them (deep),
    with requires_grad and the gradient, and keeps a leaf a leaf; pickle keeps them;
    as_subclass makes a new object without them; deepcopy of a non-leaf raises PyTorch's
    error."""
    def run(lib):
        t = lib.ones(2, requires_grad=True)
        t.grad = lib.full((2,), 3.0)
        t.tag = {"shards": [1, 2]}
        d = copy.deepcopy(t)
        p = pickle.loads(pickle.dumps(t))
        sub = t.as_subclass(type("Sub", (lib.Tensor,), {}))
        with pytest.raises(RuntimeError) as err:
            copy.deepcopy(t * 2)
        return (d.tag, d.tag is not t.tag and d.tag["shards"] is not t.tag["shards"],
                d.is_leaf, d.requires_grad, d.grad_fn, d.grad.tolist(), d.grad is not t.grad,
                p.tag, hasattr(sub, "tag"), str(err.value), vars(lib.zeros(1)))
    assert run(ember) == run(torch)


def test_item(torch):
    for data in (3, 2.5, True, 1 + 2j):
        assert ember.tensor(data).item() == torch.tensor(data).item()
    assert ember.tensor([7]).item() == 7
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ember.tensor([1, 2]).item()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.tensor(1.5, dtype=ember.bfloat16).item() == 1.5


def test_to_memory_format_aliases_like_pytorch(torch):
    # PyTorch compares with suggest_memory_format: a transposed matrix "is" contiguous_format
    e, t = _m(ember).t(), _m(torch).t()
    assert e.to(memory_format=ember.contiguous_format) is e
    assert t.to(memory_format=torch.contiguous_format) is t
    e4 = ember.ones(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    t4 = torch.ones(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert e4.to(memory_format=ember.channels_last) is e4
    assert e4.to(memory_format=ember.contiguous_format).stride() == \
        t4.to(memory_format=torch.contiguous_format).stride()


def test_new_tensor(torch):
    e, t = ember.ones(2, dtype=ember.float64), torch.ones(2, dtype=torch.float64)
    assert_same(e.new_tensor([1, 2]), t.new_tensor([1, 2]))
    assert_same(e.new_tensor([1, 2], dtype=ember.int32), t.new_tensor([1, 2], dtype=torch.int32))
    assert ember.ones(1, device="meta").new_tensor([1.0]).device.type == "meta"


def test_aten_to_overloads_as_pytorch(torch):
    """aten::to's overloads (what exported graphs name: aten.to.dtype ...): the same schemas,
    the tensor itself when nothing changes, else a copy; a Device argument given by name."""
    assert sorted(o for o in ember.ops.aten.to.overloads()) == sorted(
        o for o in torch.ops.aten.to.overloads() if not o.startswith("prim_"))
    for o in ember.ops.aten.to.overloads():
        assert str(getattr(ember.ops.aten.to, o)._schema) == \
            str(getattr(torch.ops.aten.to, o)._schema)
    for lib in (ember, torch):
        t = lib.ones(2, 3)
        to = lib.ops.aten.to
        assert to.dtype(t, lib.float32) is t and to.dtype(t, lib.float32, copy=True) is not t
        assert to.dtype(t, lib.bool).dtype == lib.bool
        assert to.other(t, lib.zeros(1, dtype=lib.int64)).dtype == lib.int64
        assert to.other(t, lib.zeros(1)) is t
        m = to.device(t, "meta", lib.float16)
        assert m.device.type == "meta" and m.dtype == lib.float16
        assert to.dtype_layout(t, dtype=lib.float64).dtype == lib.float64
        assert to.dtype_layout(t) is t
        x = lib.ones(2, 3, 4, 5)
        cl = to.dtype_layout(x, memory_format=lib.channels_last)
        assert cl.stride() == (60, 1, 15, 3)
        assert to.dtype_layout(cl, memory_format=lib.channels_last) is cl


def test_shape_as_tensor(torch):
    for shape in ((2, 3), (), (0, 4, 1)):
        for lib in (ember, torch):
            r = lib._shape_as_tensor(lib.ones(shape, device="meta"))
            assert r.tolist() == list(shape) and str(r.dtype)[6:] == "int64"
            assert r.device.type == "cpu"


def test_legacy_new_resize_and_storage_queries(torch):
    """Tensor.new (the legacy constructor of the tensor's type, on its device), the deprecated
    non-inplace resize/resize_as (a reshape on the graph), is_set_to, const_data_ptr and
    storage_type, as PyTorch's."""
    def run(lib):
        x = lib.ones(2, dtype=lib.float64)
        out = [tuple(x.new(2, 3).shape), x.new([1, 2]).tolist(), str(x.new([1, 2]).dtype)[6:],
               tuple(x.new().shape), tuple(x.new(lib.Size([2, 2])).shape), x.new((1, 2)).tolist(),
               x.new(x).data_ptr() == x.data_ptr(), x.const_data_ptr() == x.data_ptr(),
               x.is_set_to(x), x.is_set_to(x.clone()), x.is_set_to(x.view(2)),
               x.storage_type().__name__]
        for bad in (lambda: x.new(lib.tensor([1, 2])), lambda: x.new(3.5),
                    lambda: x.new(2, 3, device="meta"), lambda: lib.arange(6.0).resize(4)):
            with pytest.raises(Exception) as e:
                bad()
            out.append((type(e.value).__name__, str(e.value)[:60]))
        g = lib.arange(6.0, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = g.resize(2, 3)
            s = lib.ones(3).resize_as(lib.ones(1, 3))
        r.sum().backward()
        out += [r.tolist(), tuple(s.shape), g.grad.tolist(), [str(m.message) for m in w]]
        return out
    assert run(ember) == run(torch)

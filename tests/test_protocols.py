"""The Python-protocol surface of ``Tensor`` compared with PyTorch: ``len``/``iter``/``bool``,
number conversions, ``item``/``tolist``/``numpy``/``__array__``, and metadata (``size``,
``stride``, ``Size``, storage, ``data_ptr``, ``type()``)."""
import operator

import ml_dtypes
import numpy as np
import pytest

import ember
from helpers import from_np


def pair(torch, a):
    """An ember tensor and a torch tensor holding (copies of) the NumPy array ``a``."""
    a = np.array(a)
    if a.dtype == ml_dtypes.bfloat16:
        return from_np(a), torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return from_np(a), torch.from_numpy(a.copy())


def same_error(ember_call, torch_call):
    """Both calls raise the same exception type with the same message (modulo the module name)."""
    with pytest.raises(Exception) as te:
        torch_call()
    with pytest.raises(Exception) as ee:
        ember_call()
    assert type(ee.value) is type(te.value), (ee.value, te.value)
    assert str(ee.value).replace("ember.", "torch.") == str(te.value)


def needs(method):
    if not hasattr(ember.Tensor, method):
        pytest.skip(f"Tensor.{method} not written yet")


ARRAYS = [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    np.array([True, False]),
    np.array([1 + 2j, 3 - 4j], np.complex64),
    np.array(2.5),
    np.zeros((0, 3), np.float32),
    np.zeros((2, 0), np.int32),
    np.array([1.5, -2], ml_dtypes.bfloat16),
    np.array([1.5, -2], np.float16),
]


# -- len / iter / bool ---------------------------------------------------------------------------

def test_len(torch):
    for a in ARRAYS:
        e, t = pair(torch, a)
        if t.dim() == 0:
            same_error(lambda: len(e), lambda: len(t))
        else:
            assert len(e) == len(t)


def test_iter_zero_dim_error(torch):
    e, t = pair(torch, np.array(1.0))
    same_error(lambda: iter(e), lambda: iter(t))


def test_iter_rows(torch):
    needs("unbind")
    e, t = pair(torch, np.arange(6, dtype=np.float32).reshape(2, 3))
    rows = list(e)
    assert len(rows) == 2 and [r.tolist() for r in rows] == [r.tolist() for r in t]
    assert list(from_np(np.zeros((0, 2)))) == []


@pytest.mark.parametrize("value", [0.0, 1.0, -0.0, float("nan"), 0, 3, True, False, 1j, 0j])
def test_bool_single_element(torch, value):
    e, t = pair(torch, np.array(value))
    assert bool(e) is bool(t)
    e, t = pair(torch, np.array([[value]]))
    assert bool(e) is bool(t)


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 3), (1, 0)])
def test_bool_ambiguous(torch, shape):
    e, t = pair(torch, np.zeros(shape))
    same_error(lambda: bool(e), lambda: bool(t))


# -- number conversions ------------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [(2.7, np.float32), (-2.7, np.float64), (7, np.int64),
                                         (-3, np.int8), (True, np.bool_), (1.5, np.float16),
                                         (2.5, ml_dtypes.bfloat16), (200, np.uint8)])
def test_int_float_complex(torch, value, dtype):
    e, t = pair(torch, np.array(value, dtype))
    for convert in (int, float, complex):
        r_e, r_t = convert(e), convert(t)
        assert type(r_e) is type(r_t) and r_e == r_t, (convert, r_e, r_t)


def test_number_conversion_of_complex(torch):
    e, t = pair(torch, np.array(1 + 2j, np.complex128))
    assert complex(e) == complex(t)
    same_error(lambda: float(e), lambda: float(t))
    same_error(lambda: int(e), lambda: int(t))


@pytest.mark.parametrize("convert", [int, float, complex])
def test_number_conversion_needs_one_element(torch, convert):
    e, t = pair(torch, np.array([1.0, 2.0]))
    same_error(lambda: convert(e), lambda: convert(t))


@pytest.mark.parametrize("value,dtype", [(3, np.int64), (-2, np.int32), (5, np.uint8),
                                         (True, np.bool_), ([4], np.int16), (2.0, np.float32),
                                         ([1, 2], np.int64)])
def test_index(torch, value, dtype):
    e, t = pair(torch, np.array(value, dtype))
    try:
        expected = operator.index(t)
    except TypeError:
        same_error(lambda: operator.index(e), lambda: operator.index(t))
        return
    assert operator.index(e) == expected
    assert [10, 11, 12, 13, 14, 15][e] == [10, 11, 12, 13, 14, 15][t]


def test_format_zero_dim(torch):
    e, t = pair(torch, np.array(2.5, np.float32))
    assert f"{e:.2f}" == f"{t:.2f}" and f"{e}" == f"{t}"


# -- item / tolist -------------------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [(2.5, np.float32), (0.1, np.float64), (7, np.int64),
                                         (-1, np.int16), (True, np.bool_), (1 - 1j, np.complex64),
                                         (0.1, np.float16), (0.1, ml_dtypes.bfloat16),
                                         ([[3.0]], np.float32)])
def test_item(torch, value, dtype):
    e, t = pair(torch, np.array(value, dtype))
    r_e, r_t = e.item(), t.item()
    assert type(r_e) is type(r_t) and r_e == r_t


@pytest.mark.parametrize("shape", [(2, 3), (0,), (3, 0)])
def test_item_needs_one_element(torch, shape):
    e, t = pair(torch, np.zeros(shape))
    same_error(e.item, t.item)


def test_tolist(torch):
    for a in ARRAYS + [np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)[:, ::2]]:
        e, t = pair(torch, a)
        r_e, r_t = e.tolist(), t.tolist()
        assert r_e == r_t
        flat_e, flat_t = np.array(r_e, dtype=object).ravel(), np.array(r_t, dtype=object).ravel()
        assert [type(x) for x in flat_e] == [type(x) for x in flat_t]


def test_tolist_of_view(torch):
    a = np.arange(12.0)
    e = ember.as_strided(from_np(a), (2, 3), (1, 4), 1)
    t = torch.as_strided(torch.from_numpy(a.copy()), (2, 3), (1, 4), 1)
    assert e.tolist() == t.tolist()


# -- numpy / __array__ ---------------------------------------------------------------------------

def test_numpy_shares_memory_both_ways(torch):
    e = from_np(np.arange(6.0).reshape(2, 3))
    n = e.numpy()
    assert n.dtype == np.float64 and n.shape == (2, 3)
    n[0, 1] = 42.0  # NumPy -> tensor
    assert e.tolist()[0][1] == 42.0
    e.add_(1)  # tensor -> NumPy
    assert n[0, 1] == 43.0 and n[1, 2] == 6.0


def test_numpy_of_view_has_torch_strides(torch):
    a = np.arange(12, dtype=np.float32)
    e = ember.as_strided(from_np(a), (3, 2), (1, 3), 2)
    t = torch.as_strided(torch.from_numpy(a.copy()), (3, 2), (1, 3), 2)
    n_e, n_t = e.numpy(), t.numpy()
    assert n_e.strides == n_t.strides and n_e.tolist() == n_t.tolist()
    n_e[0, 0] = -1.0
    assert e.tolist()[0][0] == -1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16,
                                   np.int32, np.int64, np.uint8, np.bool_, np.complex64,
                                   np.complex128])
def test_numpy_dtypes(torch, dtype):
    e, t = pair(torch, np.ones((2, 2), dtype))
    assert e.numpy().dtype == t.numpy().dtype


def test_numpy_errors(torch):
    same_error(lambda: ember.empty(2, device="meta").numpy(),
               lambda: torch.empty(2, device="meta").numpy())
    e, t = pair(torch, np.array([1.0, 2.0], ml_dtypes.bfloat16))
    same_error(e.numpy, t.numpy)
    e, t = pair(torch, np.array([1.0, 2.0], np.float32))
    e.requires_grad_()
    t.requires_grad_()
    same_error(e.numpy, t.numpy)


def test_numpy_force(torch):
    needs("detach")
    from ember import _factories
    if not hasattr(_factories, "tensor_to"):  # numpy(force=True) copies with .cpu()
        pytest.skip("Tensor.to not written yet")
    e, t = pair(torch, np.array([1.0, 2.0], np.float32))
    e.requires_grad_()
    t.requires_grad_()
    assert e.numpy(force=True).tolist() == t.numpy(force=True).tolist()


# PyTorch's own __array__ lacks numpy 2's copy= keyword and warns about it.
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")
def test_array_protocol(torch):
    e, t = pair(torch, np.arange(6, dtype=np.int32).reshape(2, 3))
    assert np.asarray(e).dtype == np.asarray(t).dtype == np.int32
    assert np.asarray(e, dtype=np.float32).tolist() == np.asarray(t, dtype=np.float32).tolist()
    assert np.asarray(e, dtype=np.float32).dtype == np.float32
    assert np.array(e).tolist() == np.array(t).tolist()
    assert np.shares_memory(np.asarray(e), e.numpy())


def test_array_protocol_bfloat16(torch):
    e, t = pair(torch, np.array([1.0, 2.0], ml_dtypes.bfloat16))
    same_error(lambda: np.asarray(e), lambda: np.asarray(t))


# -- sizes, strides, Size --------------------------------------------------------------------------

def test_size_and_shape(torch):
    for a in ARRAYS:
        e, t = pair(torch, a)
        assert isinstance(e.size(), ember.Size) and isinstance(e.shape, ember.Size)
        assert repr(e.size()).replace("ember.", "torch.") == repr(t.size())
        assert str(e.shape).replace("ember.", "torch.") == str(t.shape)
        assert e.size() == t.size() == tuple(a.shape)
        for d in range(-t.dim(), t.dim()):
            assert e.size(d) == t.size(d) and e.shape[d] == t.shape[d]


def test_size_errors(torch):
    e, t = pair(torch, np.zeros((2, 3)))
    for d in (2, -3, 10):
        same_error(lambda: e.size(d), lambda: t.size(d))
        same_error(lambda: e.stride(d), lambda: t.stride(d))
    e, t = pair(torch, np.array(1.0))
    same_error(lambda: e.size(0), lambda: t.size(0))
    same_error(lambda: e.stride(0), lambda: t.stride(0))


def test_size_type(torch):
    s, ts = ember.Size([2, 3, 4]), torch.Size([2, 3, 4])
    for r, tr in ((s[1:], ts[1:]), (s[::-1], ts[::-1]), (s + (5,), ts + (5,)),
                  ((1,) + s, (1,) + ts), (s * 2, ts * 2), (ember.Size(), torch.Size())):
        assert type(r) is ember.Size and type(tr) is torch.Size
        assert repr(r).replace("ember.", "torch.") == repr(tr)
    assert s[0] == 2 and type(s[0]) is int
    assert s.numel() == ts.numel() and ember.Size([]).numel() == torch.Size([]).numel()
    assert s == (2, 3, 4) and hash(s) == hash((2, 3, 4))
    same_error(lambda: ember.Size([1.5]), lambda: torch.Size([1.5]))


def test_stride_and_contiguity(torch):
    a = np.arange(24, dtype=np.float32)
    cases = [((2, 3, 4), (12, 4, 1), 0), ((4, 3), (1, 4), 0), ((3, 2), (8, 2), 1),
             ((2, 2), (0, 1), 3), ((1, 4), (100, 1), 0), ((3,), (2,), 5)]
    for size, stride, offset in cases:
        e = ember.as_strided(from_np(a), size, stride, offset)
        t = torch.as_strided(torch.from_numpy(a.copy()), size, stride, offset)
        assert e.stride() == t.stride() and type(e.stride()) is type(t.stride())
        assert [e.stride(d) for d in range(-e.dim(), e.dim())] == \
               [t.stride(d) for d in range(-t.dim(), t.dim())]
        assert e.storage_offset() == t.storage_offset()
        assert e.is_contiguous() == t.is_contiguous()
        assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()


def test_stride_of_zero_dim(torch):
    e, t = pair(torch, np.array(1.0))
    assert e.stride() == t.stride() == ()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16,
                                   np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_,
                                   np.complex64, np.complex128])
def test_counts_and_byte_sizes(torch, dtype):
    e, t = pair(torch, np.zeros((2, 3, 5), dtype))
    assert e.dim() == t.dim() and e.ndim == t.ndim and e.ndimension() == t.ndimension()
    assert e.numel() == t.numel() and e.nelement() == t.nelement()
    assert e.element_size() == t.element_size()
    assert e.itemsize == t.itemsize
    assert e.nbytes == t.nbytes


def test_nbytes_of_view_counts_only_viewed_elements(torch):
    a = np.arange(20, dtype=np.float64)
    e = ember.as_strided(from_np(a), (2, 2), (10, 1), 3)
    t = torch.as_strided(torch.from_numpy(a.copy()), (2, 2), (10, 1), 3)
    assert e.nbytes == t.nbytes == 32
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes() == 160


def test_data_ptr_and_storage(torch):
    a = np.arange(12, dtype=np.float32)
    base = from_np(a)
    view = ember.as_strided(base, (2, 2), (4, 1), 3)
    tbase = torch.from_numpy(a).clone()  # clone: storage allocated by torch, hence resizable
    tview = torch.as_strided(tbase, (2, 2), (4, 1), 3)
    assert view.data_ptr() - base.data_ptr() == tview.data_ptr() - tbase.data_ptr() == 12
    s, ts = view.untyped_storage(), tview.untyped_storage()
    assert s.data_ptr() == base.data_ptr() and ts.data_ptr() == tbase.data_ptr()
    assert s.nbytes() == ts.nbytes() == 48
    assert str(s.device) == str(ts.device) == "cpu"
    assert s.resizable() == ts.resizable()
    assert base.data_ptr() == base.untyped_storage().data_ptr() == base.numpy().ctypes.data


def test_meta_storage_and_pointer(torch):
    e, t = ember.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")
    assert e.data_ptr() == t.data_ptr() == 0
    assert str(e.untyped_storage().device) == str(t.untyped_storage().device) == "meta"
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    assert e.is_meta and t.is_meta and str(e.device) == str(t.device)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16,
                                   np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_,
                                   np.complex64, np.complex128])
def test_type_string(torch, dtype):
    e, t = pair(torch, np.zeros(2, dtype))
    assert e.type().replace("ember.", "torch.") == t.type()


def test_type_string_meta(torch):
    e, t = ember.empty(2, device="meta"), torch.empty(2, device="meta")
    assert e.type().replace("ember.", "torch.") == t.type()


# NumPy values meeting tensors: each expression, given a library (ember or torch) and a float32
# tensor of ones, must give the same type, dtype and values (or the same exception type)
NUMPY_MEETS_TENSOR = {
    "f64_times_tensor": lambda L, t: np.float64(2.0) * t,
    "f32_times_tensor": lambda L, t: np.float32(2.0) * t,
    "tensor_times_f32": lambda L, t: t * np.float32(2.0),
    "i64_times_tensor": lambda L, t: np.int64(3) * t,
    "tensor_plus_f16": lambda L, t: t + np.float16(1),
    "f64_minus_tensor": lambda L, t: np.float64(1) - t,
    "f64_over_tensor": lambda L, t: np.float64(1) / t,
    "f64_pow_tensor": lambda L, t: np.float64(2) ** t,
    "f64_less_tensor": lambda L, t: np.float64(1) < t,
    "bool_times_tensor": lambda L, t: np.bool_(True) * t,
    "int_tensor_times_i64": lambda L, t: t.int() * np.int64(3),
    "int_tensor_times_f32": lambda L, t: t.int() * np.float32(1.5),
    "uint8_plus_i64_wraps": lambda L, t: t.to(L.uint8) + np.int64(300),
    "mul_f32": lambda L, t: L.mul(t, np.float32(2)),
    "clamp_numpy_bounds": lambda L, t: L.clamp(t * 3, np.float32(0), np.int64(2)),
    "add_alpha_f32": lambda L, t: L.add(t, t, alpha=np.float32(2)),
    "full_f32": lambda L, t: L.full((2,), np.float32(1.5)),
    "where_f32": lambda L, t: L.where(t > 0, t, np.float32(0)),
    "array_plus_tensor": lambda L, t: np.ones(3) + t,
    "0d_array_times_tensor": lambda L, t: np.array(2.0) * t,
    "ufunc_sin": lambda L, t: np.sin(t),
    "ufunc_add": lambda L, t: np.add(t, 1),
    "ufunc_greater": lambda L, t: np.greater(t, 0),
    "index_int_array": lambda L, t: L.arange(12).reshape(3, 4)[np.array([0, 2])],
    "index_0d_array": lambda L, t: L.arange(12).reshape(3, 4)[np.array(1)],
    "index_bool_array": lambda L, t: L.arange(12).reshape(3, 4)[np.array([True, False, True])],
    "index_float_array": lambda L, t: L.arange(12).reshape(3, 4)[np.array([1.0, 2.0])],
    "index_tuple_array": lambda L, t: L.arange(12).reshape(3, 4)[:, np.array([1, 3])],
}


@pytest.mark.parametrize("case", NUMPY_MEETS_TENSOR)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_numpy_values_meet_tensors_as_in_pytorch(torch, case):
    """NumPy's scalars are numbers (``np.float32(2) * t`` is a float32 tensor on the graph, not
    an array made through ``__array__``: ``__array_priority__``), ufuncs of tensors give tensors
    (``__array_wrap__``), and arrays index as tensors."""
    results = []
    for lib in (torch, ember):
        try:
            r = NUMPY_MEETS_TENSOR[case](lib, lib.ones(3))
            results.append((type(r).__name__, str(r.dtype).split(".")[-1], r.tolist()))
        except Exception as e:
            results.append((type(e).__name__,))
    assert results[1] == results[0]


def test_numpy_scalar_keeps_the_graph(torch):
    for lib in (torch, ember):
        g = lib.ones(3, requires_grad=True)
        (np.float32(3.0) * g).sum().backward()
        assert g.grad.tolist() == [3.0, 3.0, 3.0]


def test_device_equals_devices_only(torch):
    for lib in (torch, ember):
        d = lib.device("cpu")
        assert (d == "cpu", "cpu" == d, d != "cpu", d == lib.device("cpu:0")) == \
            (False, False, True, False)
        assert d == lib.device("cpu") and d.type == "cpu" and str(d) == "cpu"

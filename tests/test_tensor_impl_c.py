"""The C functions of ``ember/_core/tensor_impl.c`` against the Python functions they stand in
for (``tensor_impl._wrap_array_py``, ``_alias_py``, ``_make_tensor_py``, ``_data_ptr_py``): every
slot (or the address) equal, for the common case the C code takes and for each case it hands
back to Python."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember._core import tensor_impl as ti
from ember._core import storage as _storage
from helpers import has_c_compiler


pytestmark = pytest.mark.skipif(not has_c_compiler(),
                                reason="no C compiler: tensors are built in Python")

SLOTS = [s for s in ember.Tensor.__slots__ if s not in ("__weakref__", "_fw_grad")]
MISSING = object()


def _fields(t):
    return {s: getattr(t, s, MISSING) for s in SLOTS}


def _same(c, py, copied=False):
    """Both tensors have equal slots; arrays and storages must be the very same objects (equal
    arrays where ``copied``: each call made its own copy of the input)."""
    assert type(c) is type(py) is ember.Tensor
    fc, fp = _fields(c), _fields(py)
    for name in SLOTS:
        a, b = fc[name], fp[name]
        if copied and isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        elif isinstance(a, np.ndarray) or name in ("_storage_", "_base_", "_dtype", "_device"):
            assert a is b, name
        else:
            assert a == b and type(a) is type(b), (name, a, b)
    assert not hasattr(c, "_fw_grad") and not hasattr(py, "_fw_grad")


def test_module_is_built_and_used():
    assert ti._C is not None
    assert ti.wrap_array is ti._C.wrap_array and ti._alias is ti._C._alias
    assert ti.make_tensor is ti._C.make_tensor and ti.data_ptr is ti._C.data_ptr


@pytest.mark.parametrize("array", [
    np.ones(3, np.float32),
    np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    np.zeros((2, 0, 3), np.float64),           # a zero-size dimension: its stride counts it as 1
    np.array(5, np.int16),                      # 0-d
    np.ones((1, 1, 7), np.bool_),
    np.ones((3, 2), np.complex64),
    np.ones(4, np.float16),
    np.ones((2, 3), np.uint8),
])
def test_wrap_array_common_case(array):
    _same(ti.wrap_array(array), ti._wrap_array_py(array))


@pytest.mark.parametrize("array,copied", [
    (np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2], True),  # gaps: copied
    (np.arange(24, dtype=np.float32).reshape(4, 6).T, False),       # Fortran order: kept
    (np.arange(5, dtype=np.float32)[::-1], True),                   # negative stride: copied
    (np.ones(3, np.float32).view(np.recarray), True),               # an ndarray subclass
    (np.ones(3, ">f4"), False),                 # byte-swapped: float32 as in Python
])
def test_wrap_array_other_cases_follow_python(array, copied):
    _same(ti.wrap_array(array), ti._wrap_array_py(array), copied)


def test_wrap_array_errors_are_python_errors():
    a = np.array([object()])
    with pytest.raises(TypeError, match="unsupported NumPy dtype object"):
        ti._wrap_array_py(a)
    with pytest.raises(TypeError, match="unsupported NumPy dtype object"):
        ti.wrap_array(a)


def test_keyword_arguments_follow_python():
    a = np.ones(3, np.float32)
    _same(ti.wrap_array(a, device=ti.CPU), ti._wrap_array_py(a, device=ti.CPU))
    base = ember.ones(4)
    base._storage
    _same(ti._alias(base, (2, 2), (2, 1), 0, dtype=ember.int32),
          ti._alias_py(base, (2, 2), (2, 1), 0, dtype=ember.int32))


def test_wrap_array_under_inference_mode():
    a = np.ones(3, np.float32)
    with ember.inference_mode():
        c, py = ti.wrap_array(a), ti._wrap_array_py(a)
    _same(c, py)
    assert c._vc is None and c.is_inference()


def test_wrap_array_on_an_explicit_device():
    a = np.ones(3, np.float32)
    _same(ti.wrap_array(a, ti.CPU), ti._wrap_array_py(a, ti.CPU))
    meta = ember.device("meta")
    c, py = ti.wrap_array(a, meta), ti._wrap_array_py(a, meta)
    assert c._device == py._device == meta
    assert type(c._storage_) is type(py._storage_) is _storage.UntypedStorage


def test_wrap_array_with_the_memory_profiler_watching():
    """An allocation observer must see the storage at once: the Python function builds it."""
    seen = []
    _storage._alloc_observers.append(seen.append)
    try:
        t = ti.wrap_array(np.ones(3, np.float32))
    finally:
        _storage._alloc_observers.remove(seen.append)
    assert type(t._storage_) is _storage.UntypedStorage and seen == [t._storage_]


def test_wrap_array_versions_are_separate():
    a, b = ti.wrap_array(np.ones(2, np.float32)), ti.wrap_array(np.ones(2, np.float32))
    assert a._vc == [0] and a._vc is not b._vc


@pytest.mark.parametrize("dtype", [None, ember.int32])
def test_alias_matches_python(dtype):
    base = ember.ones(3, 4)
    base._storage  # an UntypedStorage already
    args = (base, (4, 3), (1, 4), 0) + (() if dtype is None else (dtype,))
    c, py = ti._alias(*args), ti._alias_py(*args)
    _same(c, py)
    assert c._base_ is base and c._vc is base._vc


def test_alias_of_a_view_points_at_the_root():
    root = ember.ones(6)
    root._storage
    v = ti._alias(root, (2, 3), (3, 1), 0)
    w, wp = ti._alias(v, (3, 2), (2, 1), 0), ti._alias_py(v, (3, 2), (2, 1), 0)
    _same(w, wp)
    assert w._base_ is root


def test_alias_of_a_fresh_result_builds_its_storage():
    fresh = ember.ones(3) + 1
    assert isinstance(fresh._storage_, np.ndarray)
    v = ti._alias(fresh, (3,), (1,), 0)
    assert type(fresh._storage_) is _storage.UntypedStorage and v._storage_ is fresh._storage_


def test_alias_of_a_subclass_makes_a_tensor():
    class Sub(ember.Tensor):
        pass
    base = ember.ones(4).as_subclass(Sub)
    base._storage
    c, py = ti._alias(base, (2, 2), (2, 1), 0), ti._alias_py(base, (2, 2), (2, 1), 0)
    _same(c, py)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("inference", [False, True])
def test_make_tensor_matches_python(device, inference):
    buf = np.empty(64, np.uint8)
    args = (buf, (2, 3), (3, 1), 1, ember.float32, ember.device(device))
    with ember.inference_mode(inference):
        c, py = ti.make_tensor(*args), ti._make_tensor_py(*args)
    _same(c, py)
    assert c._vc is not py._vc or c._vc is None


def test_make_tensor_of_a_subclass_follows_python():
    class Sub(ember.Tensor):
        pass
    storage = ember.ones(4)._storage
    args = (storage, (4,), (1,), 0, ember.float32, ti.CPU, Sub)
    c, py = ti.make_tensor(*args), ti._make_tensor_py(*args)
    assert type(c) is type(py) is Sub
    assert c._storage_ is py._storage_ is storage and c.tolist() == py.tolist()


def _data_ptr_cases():
    class Sub(ember.Tensor):
        pass
    x = ember.arange(12.).reshape(3, 4)
    fresh = x + 1  # storage still its kernel's array
    built = ember.arange(12.)
    built._storage  # an UntypedStorage
    return [x, x[1:], x[1:, 2:], x.t(), fresh, fresh[2], built[5:], ember.empty(0),
            ember.empty(3, 0)[1:], ember.zeros(3, dtype=ember.bfloat16)[1:],
            ember.zeros(4, dtype=ember.complex64)[2:], ember.zeros(2, dtype=ember.bool)[1:],
            ember.ones(4).as_subclass(Sub)[1:], ember.ones(2, device="meta")]


@pytest.mark.parametrize("i", range(len(_data_ptr_cases())))
def test_data_ptr_matches_python(i):
    t = _data_ptr_cases()[i]
    assert ti.data_ptr(t) == ti._data_ptr_py(t) == t.data_ptr()
    if t.numel() and t.device.type == "cpu" and t.dtype is not ember.bfloat16:
        assert ti.data_ptr(t) == t.numpy().__array_interface__["data"][0]  # NumPy's view agrees


def test_data_ptr_of_an_offset_view_counts_bytes():
    x = ember.zeros(10, dtype=ember.float64)
    assert x[3:].data_ptr() - x.data_ptr() == 3 * 8
    y = ember.zeros(10, dtype=ember.int16)
    assert y[5:].data_ptr() - y.data_ptr() == 5 * 2


def test_off_switch_keeps_python():
    code = ("from ember._core import tensor_impl as ti; import ember;"
            "assert ti._C is None and ti.wrap_array is ti._wrap_array_py;"
            "print((ember.ones(2) + 1).tolist())")
    env = {**os.environ, "EMBER_TENSOR_IMPL_C": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 2.0]"


def test_source_compiles_without_warnings(tmp_path, monkeypatch, caplog):
    from ember._inductor import codecache
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with caplog.at_level("WARNING", logger="ember._inductor.codecache"):
        module = codecache.CppCodeCache.load(ti._c_source(), "ember_tensor_impl", parallel=False)
    assert module is not None
    assert not [r for r in caplog.records if "compiler output" in r.getMessage()]


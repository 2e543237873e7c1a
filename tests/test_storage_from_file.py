"""Storages as safetensors' ``load_file`` uses them (the way diffusers and transformers read
checkpoints): ``UntypedStorage.from_file`` and the legacy classes' ``from_file``, a storage's
slice sharing its memory, and ``asarray``/``as_tensor`` over a storage, as PyTorch's."""
import warnings

import numpy as np
import pytest

import ember


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
        return None, (type(e).__name__, str(e))


def test_untyped_storage_from_file(torch, tmp_path):
    path = str(tmp_path / "bytes.bin")
    np.arange(16, dtype=np.uint8).tofile(path)
    for lib in (ember, torch):
        s = lib.UntypedStorage.from_file(path, shared=False, nbytes=8)
        assert type(s) is lib.UntypedStorage and s.untyped() is s
        assert s.tolist() == list(range(8)) and s.is_shared() and not s.resizable()
        s[0] = 99  # a private mapping: the file keeps its bytes
        assert np.fromfile(path, np.uint8)[0] == 0
        assert lib.UntypedStorage.from_file(path).nbytes() == 0
    e, t = (_outcome(lambda: lib.UntypedStorage.from_file(path, False, 100))
            for lib in (ember, torch))
    assert e[1] == t[1]


def test_typed_storage_from_file(torch, tmp_path):
    path = str(tmp_path / "floats.bin")
    np.arange(4, dtype=np.float32).tofile(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (TypedStorage is deprecated)
        for lib in (ember, torch):
            s = lib.FloatStorage.from_file(path, False, 3)
            assert s.dtype is lib.float32 and s.tolist() == [0.0, 1.0, 2.0]
            assert lib.ByteStorage.from_file(path, False, 5).tolist() == [0, 0, 0, 0, 0]
        e, t = (_outcome(lambda: lib.TypedStorage.from_file(path, False, 3))
                for lib in (ember, torch))
    assert e[1] == t[1] == ("RuntimeError", "from_file can only be called on derived classes")


def test_storage_slice_shares_memory(torch):
    for lib in (ember, torch):
        s = lib.UntypedStorage(10)
        s.fill_(3)
        v = s[2:5]
        assert type(v) is lib.UntypedStorage and v.nbytes() == 3 and not v.resizable()
        assert v.data_ptr() - s.data_ptr() == 2
        v[0] = 9
        assert s.tolist() == [3, 3, 9] + [3] * 7
        assert s[-3:].nbytes() == 3 and s[5:100].nbytes() == 5 and s[8:2].nbytes() == 0
    m = ember.UntypedStorage(8, device="meta")[2:6]
    assert m.nbytes() == 4 and m.device.type == "meta"
    e, t = (_outcome(lambda: lib.UntypedStorage(8)[1:8:2]) for lib in (ember, torch))
    assert e[1] == t[1]


@pytest.mark.parametrize("fn", ["asarray", "as_tensor"])
def test_tensor_over_a_storage(torch, fn):
    """safetensors' zero-copy read: ``asarray(storage[a:b], dtype=uint8).view(dtype=...)``."""
    for lib in (ember, torch):
        s = lib.UntypedStorage(16)
        s.fill_(1)
        for dtype, shape in ((None, (2,)), (lib.uint8, (16,)), (lib.float32, (4,))):
            t = getattr(lib, fn)(s, dtype=dtype)
            assert t.dtype is (dtype or lib.int64) and t.shape == shape
            assert t.data_ptr() == s.data_ptr()
        t = getattr(lib, fn)(s[4:12], dtype=lib.uint8).view(dtype=lib.float32)
        assert t.tolist() == [np.frombuffer(b"\1" * 4, np.float32)[0]] * 2
        t[0] = 0.0
        assert s.tolist()[4:8] == [0, 0, 0, 0]  # shared
        assert getattr(lib, fn)(s[0:6], dtype=lib.float32).shape == (1,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (TypedStorage is deprecated)
        assert ember.asarray(ember.FloatStorage(3)).dtype is ember.float32
        e, t = (_outcome(lambda: getattr(lib, fn)(lib.FloatStorage(3), dtype=lib.float64))
                for lib in (ember, torch))
    assert e[1] == t[1]

"""``torch.serialization``'s API beyond save/load, and ``torch.types``: each function against
PyTorch's on the same inputs, and files written under each option read by the other library
(``skip_data``, crc32 off, byte orders, mmap flags, storage locations, zip64 records)."""
import contextlib
import io
import mmap
import os
import struct
import subprocess
import sys
import types
import warnings
import zipfile

import numpy as np
import pytest

import ember
import ember.serialization as S


def _raised(fn, *args, **kwargs):
    """(exception type name, message) of what ``fn`` raises; the result when it returns."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (compared with what PyTorch raises)
        return type(e).__name__, str(e)


def _save(lib, obj, **kwargs):
    buf = io.BytesIO()
    lib.save(obj, buf, **kwargs)
    return buf.getvalue()


def _rewrite(raw, fn):
    """Zip checkpoint ``raw`` with each record's bytes replaced by ``fn(name, data)`` (None
    drops the record)."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = fn(name, src.read(name))
            if data is not None:
                dst.writestr(name, data)
    return out.getvalue()


def _layout(raw):
    """Per record of a zip checkpoint: its name, local and central flags, where its bytes start
    modulo 64, what follows them before the next record, and (for the fixed records) its size."""
    zf = zipfile.ZipFile(io.BytesIO(raw))
    infos = zf.infolist()
    central = raw.index(b"PK\x01\x02")
    rows = []
    for k, info in enumerate(infos):
        head = raw[info.header_offset:info.header_offset + 30]
        (flags,) = struct.unpack("<H", head[6:8])
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        start = info.header_offset + 30 + name_len + extra_len
        end = start + info.file_size
        nxt = infos[k + 1].header_offset if k + 1 < len(infos) else central
        fixed = not info.filename.endswith(("data.pkl", "serialization_id"))
        rows.append((info.filename, flags, info.flag_bits, start % 64, raw[end:nxt][:4],
                     nxt - end, info.file_size if fixed else None))
    return rows


@contextlib.contextmanager
def _options(torch, crc32=None, endianness=None, mmap_flags=None):
    """Both libraries' options set alike for the block, restored after."""
    saved = [(lib.serialization.get_crc32_options(),
              lib.serialization.get_default_load_endianness(),
              lib.serialization.get_default_mmap_options()) for lib in (ember, torch)]
    try:
        for lib in (ember, torch):
            ser = lib.serialization
            if crc32 is not None:
                ser.set_crc32_options(crc32)
            if endianness is not None:
                ser.set_default_load_endianness(
                    None if endianness == "default" else ser.LoadEndianness[endianness])
            if mmap_flags is not None:
                ser.set_default_mmap_options(mmap_flags)
        yield
    finally:
        for lib, (crc, endian, flags) in zip((ember, torch), saved):
            lib.serialization.set_crc32_options(crc)
            lib.serialization.set_default_load_endianness(endian)
            lib.serialization.set_default_mmap_options(flags)


def test_public_names_are_pytorchs(torch):
    assert set(torch.serialization.__all__) == set(S.__all__)
    for name in S.__all__:
        assert hasattr(S, name), name
    assert issubclass(S.SourceChangeWarning, Warning)
    assert [(m.name, m.value) for m in S.LoadEndianness] == \
        [(m.name, m.value) for m in torch.serialization.LoadEndianness]


def test_options_get_and_set_as_pytorch(torch):
    for lib in (ember, torch):
        ser = lib.serialization
        assert ser.get_default_load_endianness() is None and ser.get_crc32_options() is True
        assert ser.get_default_mmap_options() == mmap.MAP_PRIVATE
    with _options(torch):
        for name, arg in (("set_default_load_endianness", "little"),
                          ("set_default_mmap_options", 5)):
            assert _raised(getattr(S, name), arg) == \
                _raised(getattr(torch.serialization, name), arg)
        got = []
        for lib in (ember, torch):
            ser = lib.serialization
            ser.set_default_load_endianness(ser.LoadEndianness.BIG)
            ser.set_crc32_options("anything")  # kept as given, as PyTorch's config keeps it
            with ser.set_default_mmap_options(mmap.MAP_SHARED):
                inside = ser.get_default_mmap_options()
            got.append((ser.get_default_load_endianness().name, ser.get_crc32_options(),
                        inside, ser.get_default_mmap_options()))
        assert got[0] == got[1] == ("BIG", "anything", mmap.MAP_SHARED, mmap.MAP_PRIVATE)


def test_archive_laid_out_as_pytorchs(torch, tmp_path):
    """Every record starts at a multiple of 64 with the same flags and data descriptors as in
    PyTorch's file (an empty storage has none), so PyTorch can compute where ember's storages
    start (its calculate_storage_offsets, checked by its debug assertions) and map them."""
    def objects(lib):
        return {"a": lib.arange(5.0), "e": lib.empty(0), "i": lib.ones(3, dtype=lib.int16)}
    assert _layout(_save(ember, objects(ember))) == _layout(_save(torch, objects(torch)))
    with S.skip_data(), torch.serialization.skip_data():
        assert _layout(_save(ember, objects(ember))) == _layout(_save(torch, objects(torch)))
    path = tmp_path / "e.pt"
    ember.save(objects(ember), path)
    from torch.utils.serialization import config
    saved = config.load.calculate_storage_offsets
    config.load.calculate_storage_offsets = True
    os.environ["TORCH_SERIALIZATION_DEBUG"] = "1"
    try:
        got = torch.load(path, mmap=True)
    finally:
        config.load.calculate_storage_offsets = saved
        del os.environ["TORCH_SERIALIZATION_DEBUG"]
    assert got["a"].tolist() == [0, 1, 2, 3, 4] and got["i"].tolist() == [1, 1, 1]


def test_crc32_off_files_cross_both_ways(torch):
    with _options(torch, crc32=False):
        ours = _save(ember, {"a": ember.arange(3.0)})
        theirs = _save(torch, {"a": torch.arange(3.0)})
    for raw in (ours, theirs):
        zf = zipfile.ZipFile(io.BytesIO(raw))
        assert {info.CRC for info in zf.infolist()} == {0}
        assert zf.testzip() is not None  # zip tools see bad crcs, as PyTorch's note says
        for lib in (ember, torch):
            assert lib.load(io.BytesIO(raw))["a"].tolist() == [0.0, 1.0, 2.0]
    assert S.PyTorchFileReader(io.BytesIO(theirs)).get_record("data/0") == \
        np.arange(3, dtype=np.float32).tobytes()
    default = zipfile.ZipFile(io.BytesIO(_save(ember, ember.ones(2))))
    assert 0 not in [info.CRC for info in default.infolist()]


def test_skip_data_writes_and_reads_no_bytes(torch, tmp_path):
    path = tmp_path / "skip.pt"
    with S.skip_data(), torch.serialization.skip_data():
        ember.save({"w": ember.arange(6.0).view(2, 3), "b": ember.ones(2, dtype=ember.int64)},
                   path)
        assert _raised(ember.save, ember.ones(1), io.BytesIO(),
                       _use_new_zipfile_serialization=False) == \
            _raised(torch.save, torch.ones(1), io.BytesIO(),
                    _use_new_zipfile_serialization=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            meta = _save(ember, ember.ones(2, device="meta"))
        assert [str(w.message) for w in caught] == [
            "Serializing tensors on the meta device under skip_data context manager is a no-op"]
        unfilled = ember.load(path)
        assert unfilled["w"].shape == (2, 3) and unfilled["b"].dtype == ember.int64
    sizes = {i.filename: (i.file_size, i.CRC) for i in zipfile.ZipFile(path).infolist()}
    assert sizes["skip/data/0"] == (24, 0) and sizes["skip/data/1"] == (16, 0)
    for lib in (ember, torch):  # the space left reads as zeros
        got = lib.load(path)
        assert got["w"].tolist() == [[0.0] * 3] * 2 and got["b"].tolist() == [0, 0]
        assert lib.load(io.BytesIO(meta)).device.type == "meta"
    with torch.serialization.skip_data():
        theirs = _save(torch, {"w": torch.arange(4.0)})
    assert ember.load(io.BytesIO(theirs))["w"].tolist() == [0.0] * 4


def test_skip_data_materializes_fake_tensors(torch):
    from ember._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        w = ember.ones(3, 2)
        row = w[1]
    with S.skip_data(materialize_fake_tensors=True):
        raw = _save(ember, {"w": w, "row": row})
    got = torch.load(io.BytesIO(raw))
    assert got["w"].shape == (3, 2) and got["row"].tolist() == [0.0, 0.0]
    assert got["row"].untyped_storage().data_ptr() == got["w"].untyped_storage().data_ptr()


def _big_endian(torch):
    """A checkpoint as a big-endian machine writes it (its storages' elements byte-swapped,
    its byteorder record "big"), and what it holds."""
    obj = {"f": torch.arange(4.0), "h": torch.arange(3, dtype=torch.float16),
           "c": torch.tensor([1 + 2j, 3 - 4j]), "i": torch.tensor([1, 256], dtype=torch.int16),
           "bf": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
           "b": torch.tensor([True, False])}
    sizes = {"0": 4, "1": 2, "2": 4, "3": 2, "4": 2, "5": 1}  # element (complex: part) sizes

    def swap(name, data):
        if name.endswith("byteorder"):
            return b"big"
        key = name.rsplit("/", 1)[1]
        if "/data/" in name and sizes[key] > 1:
            return np.frombuffer(data, f"u{sizes[key]}").byteswap().tobytes()
        return data
    return _rewrite(_save(torch, obj), swap), obj


def test_byte_orders_read_as_pytorch(torch):
    big, obj = _big_endian(torch)
    for lib in (ember, torch):
        got = lib.load(io.BytesIO(big))
        assert {k: v.tolist() for k, v in got.items()} == {k: v.tolist() for k, v in obj.items()}
    unmarked = _rewrite(big, lambda name, data: None if name.endswith("byteorder") else data)
    for endianness in ("BIG", "LITTLE", "NATIVE", "default"):
        with _options(torch, endianness=endianness):
            ours, theirs = ember.load(io.BytesIO(unmarked)), torch.load(io.BytesIO(unmarked))
        assert {k: v.tolist() for k, v in ours.items()} == \
            {k: v.tolist() for k, v in theirs.items()}, endianness
        assert (ours["i"].tolist() == [1, 256]) == (endianness == "BIG")
    odd = _rewrite(big, lambda name, data: b"middle" if name.endswith("byteorder") else data)
    assert _raised(ember.load, io.BytesIO(odd)) == _raised(torch.load, io.BytesIO(odd)) == \
        ("ValueError", "Unknown endianness type: middle")


def test_mmap_flags_honoured(torch, tmp_path):
    path = tmp_path / "m.pt"
    ember.save({"a": ember.arange(4.0)}, path)
    with _options(torch, mmap_flags=mmap.MAP_SHARED):
        ember.load(path, mmap=True)["a"].add_(10)  # through the mapping, into the file
    assert torch.load(path)["a"].tolist() == [10.0, 11.0, 12.0, 13.0]
    ember.load(path, mmap=True)["a"].add_(10)  # MAP_PRIVATE: the file is untouched
    assert torch.load(path)["a"].tolist() == [10.0, 11.0, 12.0, 13.0]
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.ones(2), legacy, _use_new_zipfile_serialization=False)
    for f in (str(legacy), io.BytesIO(legacy.read_bytes())):
        assert _raised(ember.load, f, mmap=True) == _raised(torch.load, f, mmap=True)


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("true",))


@pytest.mark.filterwarnings("ignore:`torch.jit.s:DeprecationWarning")
def test_unsafe_globals_listed_as_pytorch(torch):
    def both(raw):
        return (_raised(lambda: sorted(S.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)))),
                _raised(lambda: sorted(torch.serialization.get_unsafe_globals_in_checkpoint(
                    io.BytesIO(raw)))))
    plenty = {"t": torch.ones(2, dtype=torch.bfloat16), "p": torch.nn.Parameter(torch.ones(1)),
              "s": {1}, "c": 1j, "ba": bytearray(b"x"), "by": b"x",
              "u": torch.ones(1, dtype=torch.uint16)}
    for raw in (_save(torch, plenty), _save(torch, {"x": _RunsCode(), "m": torch.nn.Linear(2, 2)}),
                _save(ember, {"x": _RunsCode(), "t": ember.ones(2), "sz": ember.Size([1])}),
                _save(torch, torch.ones(2), pickle_protocol=4)):
        ours, theirs = both(raw)
        assert ours == theirs
    raw = _save(torch, {"x": _RunsCode(), "m": torch.nn.Linear(2, 2)})
    assert both(raw)[0] == ["posix.system", "torch.nn.modules.linear.Linear"]
    # allowing ember's class allows the torch name it stands for
    with S.safe_globals([ember.nn.Linear]), torch.serialization.safe_globals([torch.nn.Linear]):
        assert both(raw)[0] == both(raw)[1] == ["posix.system"]
    scripted = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), scripted)
    legacy = _save(torch, torch.ones(1), _use_new_zipfile_serialization=False)
    for raw in (scripted.getvalue(), legacy, b"PK\x03\x04abcd"):
        assert both(raw)[0] == both(raw)[1]
    allowed = torch._weights_only_unpickler._get_allowed_globals()
    assert set(allowed) <= S._safe_global_names()


def test_location_registry_as_pytorch(torch):
    ours, theirs = ember.ones(3).untyped_storage(), torch.ones(3).untyped_storage()
    for lib, storage in ((ember, ours), (torch, theirs)):
        ser = lib.serialization
        assert ser.location_tag(storage) == "cpu"
        assert ser.location_tag(lib.ones(1, device="meta").untyped_storage()) == "meta"
        assert ser.default_restore_location(storage, "cpu") is storage
        meta = ser.default_restore_location(storage, "meta")
        assert meta.device.type == "meta" and meta.nbytes() == 12
    assert _raised(S.location_tag, 3) == _raised(torch.serialization.location_tag, 3)
    for location in ["foo", "cpu:0", "hpu:0"] + ([] if ember.cuda.is_available() else ["cuda:0"]):
        got = _raised(S.default_restore_location, ours, location)
        expected = _raised(torch.serialization.default_restore_location, theirs, location)
        assert got == (expected[0], expected[1].replace(
            "torch.storage.UntypedStorage", ember.typename(ours))), location
    if not ember.cuda.is_available():
        for location in ("cuda:0", "cuda", "cpu", 0):
            assert _raised(S.validate_cuda_device, location) == \
                _raised(torch.serialization.validate_cuda_device, location)
    assert _raised(S.validate_hpu_device, "hpu:0") == \
        _raised(torch.serialization.validate_hpu_device, "hpu:0")


def test_registered_package_tags_and_restores(torch):
    """A tagger registered ahead of the CPU's names ember's storages on save; its deserializer
    brings them back on load; PyTorch reads the same tag from the file."""
    restored = []

    def tag(storage):
        return "vault" if storage.device.type == "cpu" else None

    def deserialize(storage, location):
        if location == "vault":
            restored.append(storage.nbytes())
            return storage
    S.register_package(1, tag, deserialize)
    try:
        assert S.location_tag(ember.ones(1).untyped_storage()) == "vault"
        raw = _save(ember, {"a": ember.arange(3.0)})
        assert ember.load(io.BytesIO(raw))["a"].tolist() == [0.0, 1.0, 2.0]
    finally:
        S._package_registry.remove((1, tag, deserialize))
    assert restored == [12]
    seen = []
    torch.load(io.BytesIO(raw), map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["vault"]
    assert _raised(ember.load, io.BytesIO(raw))[1].endswith("(tagged with vault)")


def test_map_location_forms_as_pytorch(torch):
    raw = _save(torch, {"a": torch.arange(3.0), "p": torch.nn.Parameter(torch.ones(2))})
    for lib in (ember, torch):
        calls = []
        got = lib.load(io.BytesIO(raw), map_location=lambda s, loc: calls.append(
            (type(s).__name__, loc, s.device.type, s.nbytes())))
        assert calls == [("UntypedStorage", "cpu", "cpu", 12), ("UntypedStorage", "cpu", "cpu", 8)]
        assert got["a"].tolist() == [0.0, 1.0, 2.0] and got["p"].requires_grad
        meta = lib.load(io.BytesIO(raw), map_location="meta")
        assert meta["a"].device.type == meta["p"].device.type == "meta"
        assert lib.load(io.BytesIO(raw), map_location={"cpu": "cpu"})["a"].tolist() == [0, 1, 2]
    for where in ("cpu:0", {"cpu": "hpu"}, {"cpu": "nowhere"}):
        got, expected = (_raised(lib.load, io.BytesIO(raw), map_location=where)
                         for lib in (ember, torch))
        assert got == (expected[0], expected[1].replace(
            "torch.storage.UntypedStorage", ember.typename(ember.UntypedStorage()))), where


def test_cuda_locations_with_simulated_cuda(torch):
    from helpers import simulated_cuda
    with simulated_cuda():
        base = ember.arange(6.0, device="cuda")
        param = ember.nn.Parameter(ember.ones(2).cuda())
        raw = _save(ember, {"w": base, "v": base[2:], "p": param})
        assert S.location_tag(base.untyped_storage()) == "cuda:0"
        back = ember.load(io.BytesIO(raw))
        assert back["w"].device.type == back["v"].device.type == back["p"].device.type == "cuda"
        back["w"][3] = 100.0  # the view still shares its base's (restored) storage
        assert back["v"].tolist() == [2.0, 100.0, 4.0, 5.0]
        assert ember.load(io.BytesIO(raw), map_location="cpu")["w"].device.type == "cpu"
        moved = ember.load(io.BytesIO(_save(ember, {"x": ember.ones(2)})),
                           map_location=lambda storage, loc: storage.cuda())
        assert moved["x"].device.type == "cuda"
        legacy = _save(torch, {"x": torch.arange(3.0)}, _use_new_zipfile_serialization=False)
        got = ember.load(io.BytesIO(legacy), map_location="cuda:0")
        assert got["x"].device.type == "cuda" and got["x"].tolist() == [0.0, 1.0, 2.0]
        assert S.validate_cuda_device("cuda:0") == S.validate_cuda_device(0) == 0
        assert "torch.cuda.device_count() is 1" in _raised(S.validate_cuda_device, "cuda:3")[1]
    theirs = torch.load(io.BytesIO(raw), map_location="cpu")
    assert theirs["v"].tolist() == [2.0, 3.0, 4.0, 5.0]
    seen = []
    torch.load(io.BytesIO(raw), map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cuda:0", "cuda:0"]


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_helpers_as_pytorch(torch):
    module = types.ModuleType("m")
    cases = [((1, 2),), ((1, 3),), ((1, 2, 3, 4),), (("1", "x"),)]
    for version in ("1.2.3", "1.x"):
        module.__version__ = version
        for args in cases + [((1, 2, 3, 4), False)]:
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                got = _raised(S.check_module_version_greater_or_equal, module, *args)
            with warnings.catch_warnings(record=True) as theirs:
                warnings.simplefilter("always")
                expected = _raised(torch.serialization.check_module_version_greater_or_equal,
                                   module, *args)
            assert got == expected and [str(w.message) for w in ours] == \
                [str(w.message) for w in theirs], (version, args)
    bare = types.ModuleType("bare")
    assert _raised(S.check_module_version_greater_or_equal, bare, (1,)) == \
        _raised(torch.serialization.check_module_version_greater_or_equal, bare, (1,))
    with S.mkdtemp() as d:
        assert os.path.isdir(d)
        open(os.path.join(d, "f"), "w").close()
    assert not os.path.exists(d)
    for name in ("FloatStorage", "BFloat16Storage", "UntypedStorage", "Foo"):
        got = _raised(lambda: str(S.StorageType(name)))
        expected = _raised(lambda: str(torch.serialization.StorageType(name)))
        assert (got.replace("ember.", "torch.") if isinstance(got, str) else got) == expected
    assert S.StorageType("HalfStorage").dtype is ember.float16
    for cls in (ember.FloatStorage, ember.UntypedStorage, ember.TypedStorage):
        assert S.normalize_storage_type(cls) is cls
    assert S.normalize_storage_type(int) is ember.int32
    assert torch.serialization.normalize_storage_type(int) is torch.int32
    for ours, theirs in ((ember.ones(1).untyped_storage(), torch.ones(1).untyped_storage()),
                         (ember.FloatStorage(), torch.FloatStorage())):
        assert _raised(S.storage_to_tensor_type, ours)[0] == \
            _raised(torch.serialization.storage_to_tensor_type, theirs)[0] == "AttributeError"


def test_zip64_records_read_by_both(torch, monkeypatch):
    """Records past the 32-bit limits get zip64 fields (checked by lowering the limit)."""
    monkeypatch.setattr(S, "_ZIP64_LIMIT", 100)
    raw = _save(ember, {"a": ember.arange(40.0), "b": ember.ones(3)})
    monkeypatch.undo()
    zf = zipfile.ZipFile(io.BytesIO(raw))
    assert zf.testzip() is None and any(info.extra for info in zf.infolist())
    for lib in (ember, torch):
        assert lib.load(io.BytesIO(raw))["a"][-1].item() == 39.0


def test_meta_tensors_and_mixed_dtypes_as_pytorch(torch):
    ours = ember.load(io.BytesIO(_save(torch, torch.ones(2, 3, device="meta"))))
    assert ours.device.type == "meta" and ours.shape == (2, 3)
    theirs = torch.load(io.BytesIO(_save(ember, ember.ones(2, 3, device="meta").t())))
    assert theirs.device.type == "meta" and theirs.stride() == (1, 3)
    x, y = ember.ones(2), torch.ones(2)
    assert _raised(ember.save, [x, x.view(ember.int32)], io.BytesIO()) == \
        _raised(torch.save, [y, y.view(torch.int32)], io.BytesIO())


def test_types_module_as_pytorchs(torch):
    import torch.types as theirs
    import ember.types as ours
    public = {n for n in dir(theirs) if n[0].isupper() or n.startswith("_") and not
              n.startswith("__")} - {"TYPE_CHECKING", "TypeAlias", "Any", "IO", "Union", "Self",
                                     "Sequence", "_qscheme"}
    assert public <= set(dir(ours))
    assert ours.__all__ == theirs.__all__
    assert ours.Number == theirs.Number and ours._Number == theirs._Number
    assert ours._int is int and ours._complex is complex
    assert ours._dtype is ember.dtype and ours._device is ember.device
    assert ours.py_sym_types == (ember.SymInt, ember.SymFloat, ember.SymBool)
    assert ours._size == ember.Size | list[int] | tuple[int, ...]
    assert ours.Device == ember.device | str | int | None
    members = {n for n in vars(theirs.Storage) if not n.startswith("__") or n == "__deepcopy__"}
    assert members == {n for n in vars(ours.Storage) if not n.startswith("__")
                       or n == "__deepcopy__"}
    assert not isinstance(ember.ones(1).untyped_storage(), ours.Storage)  # as PyTorch's
    code = ("import ember.as_torch as a; a.install(); import torch.types, ember; "
            "from torch.types import Number, _size, FileLike, Storage; "
            "print(torch.types is ember.types)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == "True", out.stderr

"""Checkpoints that cannot hurt (issue 18, items 4 and 5): PyTorch's legacy format, tensors that
reach outside their storage, damaged files, atomic saves, and safetensors validated as the
reference implementation validates it. PyTorch and safetensors write the oracle files."""
import io
import os
import pickle
import stat
import zipfile

import pytest

import ember
from ember import safetensors as st


def _patched_zip(raw, old, new):
    """A copy of zip checkpoint ``raw`` with ``old`` replaced by ``new`` in its data.pkl."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("data.pkl"):
                assert old in data
                data = data.replace(old, new, 1)
            dst.writestr(name, data)
    return out.getvalue()


# -- legacy format ---------------------------------------------------------------------------

def test_legacy_format_written_by_pytorch_loads(torch, tmp_path):
    t = torch.arange(6.0).reshape(2, 3)
    obj = {"w": t, "view": t[1], "ints": torch.tensor([1, 2], dtype=torch.int16),
           "tags": {"a", "b"}, "n": 3}
    path = tmp_path / "legacy.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=False)
    got = ember.load(path)
    assert got["w"].tolist() == t.tolist() and got["w"].dtype == ember.float32
    assert got["view"].tolist() == [3.0, 4.0, 5.0]
    assert got["ints"].dtype == ember.int16 and got["ints"].tolist() == [1, 2]
    assert got["tags"] == {"a", "b"} and got["n"] == 3
    # the view still shares the loaded storage, as in PyTorch
    got["w"][1, 0] = 9.0
    assert got["view"][0].item() == 9.0


def test_truncated_legacy_file_says_so(torch, tmp_path):
    buf = io.BytesIO()
    torch.save(torch.arange(100.0), buf, _use_new_zipfile_serialization=False)
    path = tmp_path / "cut.pt"
    path.write_bytes(buf.getvalue()[:-40])
    with pytest.raises(RuntimeError, match="unexpected EOF, expected 40 more bytes"):
        ember.load(path)


# -- tensors outside their storage -----------------------------------------------------------

@pytest.mark.parametrize("weights_only", [True, False])
def test_tensor_reaching_outside_its_storage_is_refused(torch, tmp_path, weights_only):
    buf = io.BytesIO()
    torch.save(torch.arange(4.0), buf)
    path = tmp_path / "oob.pt"
    path.write_bytes(_patched_zip(buf.getvalue(), b"K\x04\x85", b"K\x0a\x85"))  # size 4 -> 10
    with pytest.raises(RuntimeError) as expected:
        torch.load(path, weights_only=weights_only)
    with pytest.raises(RuntimeError) as got:
        ember.load(path, weights_only=weights_only)
    assert str(got.value) == str(expected.value)


def test_truncated_zip_reports_missing_central_directory(torch, tmp_path):
    buf = io.BytesIO()
    torch.save({"a": torch.ones(8)}, buf)
    path = tmp_path / "half.pt"
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(RuntimeError) as expected:
        torch.load(path)
    with pytest.raises(RuntimeError) as got:
        ember.load(path)
    assert str(got.value) == str(expected.value)
    assert "failed finding central directory" in str(got.value)


# -- atomic saves ----------------------------------------------------------------------------

class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def test_failed_save_keeps_previous_checkpoint(tmp_path):
    path = tmp_path / "model.pt"
    ember.save({"w": ember.ones(3)}, path)
    os.chmod(path, 0o640)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="cannot pickle this"):
        ember.save({"w": ember.zeros(3), "bad": _Unpicklable()}, path)
    assert path.read_bytes() == before
    ember.save({"w": ember.zeros(3)}, path)
    assert ember.load(path)["w"].tolist() == [0.0, 0.0, 0.0]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640  # the replacement keeps the mode
    assert sorted(os.listdir(tmp_path)) == ["model.pt"]  # no temporary file left behind


def test_failed_safetensors_save_keeps_previous_file(tmp_path):
    path = tmp_path / "w.safetensors"
    st.save_file({"a": ember.ones(2)}, path)
    before = path.read_bytes()
    t = ember.arange(4.0)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        st.save_file({"x": ember.ones(2), "a": t, "b": t}, path)
    with pytest.raises(ValueError, match="non contiguous tensor: `a`"):
        st.save_file({"a": ember.ones(3, 3).t()}, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["w.safetensors"]


# -- safetensors against the reference implementation ----------------------------------------

def test_safetensors_bytes_equal_reference(torch):
    sref = pytest.importorskip("safetensors.torch")
    data = {"z": [1.0, 2.0], "a": [1, 2], "m": [0.5, 0.25], "b": [True, False]}
    dtypes = {"z": "float32", "a": "int8", "m": "float64", "b": "bool"}
    theirs = sref.save({k: torch.tensor(v, dtype=getattr(torch, dtypes[k])) for k, v in data.items()},
                       metadata={"format": "pt"})
    ours = st.save({k: ember.tensor(v, dtype=getattr(ember, dtypes[k])) for k, v in data.items()},
                   metadata={"format": "pt"})
    assert ours == theirs


def _bad_inputs(m):
    t = m.arange(6.0)
    return {"shared": {"a": t, "b": t}, "overlapping_views": {"a": t[:4], "b": t[2:]},
            "noncontig": {"a": m.ones(3, 3).t()}, "badkey": {1: t}, "notensor": {"a": 1}}


@pytest.mark.parametrize("case", ["shared", "overlapping_views", "noncontig", "badkey", "notensor"])
def test_safetensors_refuses_what_reference_refuses(torch, case):
    sref = pytest.importorskip("safetensors.torch")
    with pytest.raises(Exception) as expected:
        sref.save(_bad_inputs(torch)[case])
    with pytest.raises(Exception) as got:
        st.save(_bad_inputs(ember)[case])
    assert type(got.value) is type(expected.value)
    if case != "overlapping_views":  # the set's printed order is arbitrary
        assert str(got.value) == str(expected.value)


def test_safetensors_disjoint_views_of_one_storage_are_fine():
    t = ember.arange(6.0)
    got = st.load(st.save({"a": t[:3], "b": t[3:]}))
    assert got["a"].tolist() == [0.0, 1.0, 2.0] and got["b"].tolist() == [3.0, 4.0, 5.0]


def _damaged(raw):
    import json
    import struct
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])

    def rebuilt(h):
        hb = json.dumps(h).encode()
        hb += b" " * (-len(hb) % 8)
        return struct.pack("<Q", len(hb)) + hb + raw[8 + n:]
    bad_offset = json.loads(json.dumps(header))
    bad_offset["z"]["data_offsets"] = [0, 1000]
    bad_shape = json.loads(json.dumps(header))
    bad_shape["z"]["shape"] = [5]
    return {"header_too_small": raw[:4], "header_cut": raw[:20], "data_cut": raw[:-3],
            "bad_offset": rebuilt(bad_offset), "bad_shape": rebuilt(bad_shape)}


@pytest.mark.parametrize("case", ["header_too_small", "header_cut", "data_cut", "bad_offset",
                                  "bad_shape"])
def test_damaged_safetensors_reported_like_reference(torch, case):
    sref = pytest.importorskip("safetensors.torch")
    raw = sref.save({"z": torch.ones(2)})
    bad = _damaged(raw)[case]
    with pytest.raises(Exception) as expected:
        sref.load(bad)
    with pytest.raises(st.SafetensorError) as got:
        st.load(bad)
    assert str(got.value) == str(expected.value)


# -- whole-module checkpoints and old pickles ---------------------------------------------------

class Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def test_whole_module_checkpoint_under_safe_globals(tmp_path):
    net = Net()
    path = tmp_path / "net.pt"
    ember.save(net, path)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(path)
    with ember.serialization.safe_globals([Net, ember.nn.Linear]):
        loaded = ember.load(path)
    x = ember.ones(1, 3)
    assert loaded(x).tolist() == net(x).tolist()


def test_pytorch_whole_module_checkpoint_loads_into_ember_classes(torch, tmp_path):
    lin = torch.nn.Linear(3, 2)
    path = tmp_path / "lin.pt"
    torch.save(lin, path)
    with ember.serialization.safe_globals([ember.nn.Linear]):
        loaded = ember.load(path)
    assert isinstance(loaded, ember.nn.Linear)
    assert loaded.weight.tolist() == lin.weight.tolist()


def test_protocol_2_pickle_with_python2_names(tmp_path):
    # what Python 2 (and PyTorch's protocol-2 files) write for a set: __builtin__.set
    raw = pickle.dumps({"s": {1, 2}, "c": complex(1, 2), "b": bytearray(b"ab")}, protocol=2,
                       fix_imports=True)
    assert b"__builtin__" in raw
    path = tmp_path / "p2.pt"
    path.write_bytes(raw)
    assert ember.load(path) == {"s": {1, 2}, "c": complex(1, 2), "b": bytearray(b"ab")}

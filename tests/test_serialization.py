"""ember.save / ember.load: PyTorch's zip checkpoint format in both directions, safe loading
(weights_only refuses code-running pickles), nested containers, views sharing storage, and
safetensors files."""
import collections
import fractions
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import ember
import ember.nn as nn
from helpers import to_np


def test_round_trip_nested_containers(tmp_path):
    base = ember.arange(12.).view(3, 4)
    obj = {"a": base, "view": base[1:, ::2], "list": [ember.ones(2, dtype=ember.int64), 3.5],
           "tuple": (ember.tensor([True, False]), "s"), "none": None,
           "od": collections.OrderedDict(x=ember.zeros(1, dtype=ember.float16)),
           "dtype": ember.bfloat16, "size": ember.Size([2, 3]), "dev": ember.device("cpu"),
           "param": nn.Parameter(ember.ones(2))}
    path = tmp_path / "ckpt.pt"
    ember.save(obj, path)
    out = ember.load(path)
    np.testing.assert_array_equal(to_np(out["a"]), to_np(base))
    np.testing.assert_array_equal(to_np(out["view"]), to_np(base[1:, ::2]))
    assert out["view"].stride() == base[1:, ::2].stride()
    # The view and its base still share one storage after loading.
    out["a"][2, 0] = 100.0
    assert float(out["view"][1, 0]) == 100.0
    assert out["list"][0].dtype == ember.int64 and out["list"][1] == 3.5
    assert out["tuple"][1] == "s" and out["none"] is None
    assert type(out["od"]) is collections.OrderedDict and out["od"]["x"].dtype == ember.float16
    assert out["dtype"] is ember.bfloat16 and out["size"] == ember.Size([2, 3])
    assert isinstance(out["param"], nn.Parameter) and out["param"].requires_grad
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert "ckpt/data.pkl" in names and "ckpt/version" in names and "ckpt/data/0" in names


def test_file_objects_and_bytes():
    buf = io.BytesIO()
    ember.save([ember.ones(3)], buf)
    buf.seek(0)
    assert to_np(ember.load(buf)[0]).tolist() == [1.0, 1.0, 1.0]


def test_module_state_dict_round_trip_keeps_metadata(tmp_path):
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    ember.save(m.state_dict(), tmp_path / "m.pth")
    sd = ember.load(tmp_path / "m.pth")
    assert list(sd.keys()) == list(m.state_dict().keys())
    assert sd._metadata == m.state_dict()._metadata
    m2 = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m2.load_state_dict(sd)
    np.testing.assert_array_equal(to_np(m2[0].weight), to_np(m[0].weight))
    assert sd["1.num_batches_tracked"].dtype == ember.int64


def test_reads_checkpoint_written_by_torch(torch, tmp_path):
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    path = tmp_path / "torch_model.pt"
    torch.save({"model": tm.state_dict(), "epoch": 5,
                "half": torch.arange(4, dtype=torch.float16),
                "bf": torch.ones(2, dtype=torch.bfloat16),
                "view": torch.arange(10).view(2, 5).t(),
                "p": torch.nn.Parameter(torch.ones(2))}, path)
    ck = ember.load(path)
    assert ck["epoch"] == 5
    em = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    em.load_state_dict(ck["model"])
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(to_np(em.state_dict()[k]), v.numpy())
    assert ck["half"].dtype == ember.float16 and to_np(ck["half"]).tolist() == [0, 1, 2, 3]
    assert ck["bf"].dtype == ember.bfloat16
    assert to_np(ck["view"]).tolist() == torch.arange(10).view(2, 5).t().tolist()
    assert ck["view"].stride() == (1, 5)
    assert isinstance(ck["p"], nn.Parameter)


def test_torch_reads_checkpoint_written_by_ember(torch, tmp_path):
    em = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    path = tmp_path / "ember_model.pt"
    ember.save({"model": em.state_dict(), "i": ember.arange(5)[1:], "dt": ember.float64}, path)
    ck = torch.load(path, weights_only=True)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    tm.load_state_dict(ck["model"])
    for k, v in em.state_dict().items():
        np.testing.assert_array_equal(tm.state_dict()[k].numpy(), to_np(v))
    assert ck["i"].tolist() == [1, 2, 3, 4] and ck["dt"] is torch.float64


def test_whole_model_checkpoint_from_pytorch_with_sync_batch_norm(torch, tmp_path):
    """A pickled model names each layer's class where PyTorch defines it
    (torch.nn.modules.batchnorm.SyncBatchNorm): ember's class is found there too."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.SyncBatchNorm(4))
    torch.save(tm, tmp_path / "m.pt")
    em = ember.load(tmp_path / "m.pt", weights_only=False)
    assert type(em[1]) is nn.SyncBatchNorm and type(em[0]) is nn.Conv2d
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(to_np(em.state_dict()[k]), v.numpy())


class Evil:
    def __reduce__(self):
        return (os.system, ("echo should-not-run > /dev/null",))


def test_attributes_on_tensors_and_parameters_cross_both_ways(torch):
    """A tensor or parameter with attributes set on it is written as PyTorch writes it
    (``_rebuild_from_type_v2``, ``_rebuild_parameter_with_state``): each library reads the
    other's file with the attributes, weights_only or not; a tensor without attributes is
    written as before."""
    def objects(lib):
        t, u = lib.arange(3.0), lib.ones(2, dtype=lib.uint16)
        p = lib.nn.Parameter(lib.ones(2))
        t.tag, u.tag, p.tag = "t", ("u", 1), {"p": 2}
        return {"t": t, "u": u, "p": p, "plain": lib.zeros(1)}

    def read(obj):
        return [(k, type(v).__name__, v.tolist(), dict(vars(v))) for k, v in sorted(obj.items())]
    for writer, reader in ((ember, torch), (torch, ember), (ember, ember)):
        buf = io.BytesIO()
        writer.save(objects(writer), buf)
        for weights_only in (True, False):
            got = read(reader.load(io.BytesIO(buf.getvalue()), weights_only=weights_only))
            assert got == read(objects(reader)), (writer.__name__, weights_only)
    plain = io.BytesIO()
    ember.save(ember.zeros(1), plain)
    assert b"_rebuild_from_type_v2" not in plain.getvalue()


def test_refuses_pickle_that_would_run_code(tmp_path):
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("evil/data.pkl", pickle.dumps({"x": Evil()}, protocol=2))
        zf.writestr("evil/version", "3\n")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*os.system|posix"):
        ember.load(path)
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(raw)


def test_refuses_torch_written_code_pickle(torch, tmp_path):
    path = tmp_path / "evil_torch.pt"
    torch.save({"w": torch.ones(1), "x": Evil()}, path)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)


def test_safe_globals_and_weights_only_false(tmp_path):
    path = tmp_path / "point.pt"
    ember.save({"p": fractions.Fraction(1, 3)}, path)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)
    with ember.serialization.safe_globals([fractions.Fraction]):
        assert ember.load(path)["p"] == fractions.Fraction(1, 3)
    assert ember.load(path, weights_only=False)["p"] == fractions.Fraction(1, 3)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)


def test_map_location(tmp_path):
    ember.save({"a": ember.ones(2)}, tmp_path / "a.pt")
    out = ember.load(tmp_path / "a.pt", map_location="cpu")
    assert out["a"].device.type == "cpu"
    out = ember.load(tmp_path / "a.pt", map_location=lambda storage, loc: storage)
    assert to_np(out["a"]).tolist() == [1.0, 1.0]


def test_safetensors_round_trip_and_interop(tmp_path):
    from ember import safetensors as st
    tensors = {"w": ember.arange(6, dtype=ember.float32).view(2, 3),
               "b": ember.tensor([1, 2], dtype=ember.int64),
               "h": ember.ones(3, dtype=ember.bfloat16), "m": ember.tensor([True, False])}
    path = tmp_path / "x.safetensors"
    st.save_file(tensors, path, metadata={"format": "pt"})
    out = st.load_file(path)
    assert set(out) == set(tensors)
    for k in tensors:
        assert out[k].dtype == tensors[k].dtype and out[k].shape == tensors[k].shape
        np.testing.assert_array_equal(to_np(out[k]).astype(np.float64),
                                      to_np(tensors[k]).astype(np.float64))
    assert st.load_metadata(path) == {"format": "pt"}
    raw = path.read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    assert header_len % 8 == 0 and raw[8:9] == b"{"
    assert st.load(st.save({"x": ember.ones(2)}))["x"].tolist() == [1.0, 1.0]


def test_safetensors_readable_by_reference_implementation(tmp_path):
    st_ref = pytest.importorskip("safetensors.numpy")
    from ember import safetensors as st
    path = tmp_path / "y.safetensors"
    st.save_file({"a": ember.arange(4, dtype=ember.float32)}, path)
    assert st_ref.load_file(str(path))["a"].tolist() == [0, 1, 2, 3]
    st_ref.save_file({"z": np.full((2, 2), 3, np.int32)}, str(tmp_path / "z.safetensors"))
    assert st.load_file(tmp_path / "z.safetensors")["z"].tolist() == [[3, 3], [3, 3]]


def test_load_mmap_reads_storages_in_place_copy_on_write(torch, tmp_path):
    """load(mmap=True) maps each storage's bytes from the file (PyTorch's MAP_PRIVATE: writes
    stay in the process); ember aligns them at 64 bytes in the files it writes, as PyTorch."""
    import numpy as np
    import zipfile
    path = tmp_path / "m.pt"
    ember.save({"a": ember.arange(6.0), "b": ember.ones(3, dtype=ember.float64)}, path)
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for info in zf.infolist():
            if "/data/" in info.filename:
                fh.seek(info.header_offset + 26)
                n, e = __import__("struct").unpack("<HH", fh.read(4))
                assert (info.header_offset + 30 + n + e) % 64 == 0
    assert torch.load(path)["a"].tolist() == list(range(6))
    loaded = ember.load(path, mmap=True)
    assert isinstance(loaded["a"].untyped_storage()._buf, np.memmap)
    loaded["a"].add_(1)
    assert ember.load(path)["a"].tolist() == list(range(6))  # the file is untouched
    torch.save({"t": torch.arange(5.0)}, tmp_path / "t.pt")
    assert ember.load(tmp_path / "t.pt", mmap=True)["t"].tolist() == list(range(5))
    import io
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)


def test_legacy_format_save_is_read_by_pytorch(torch, tmp_path):
    """save(_use_new_zipfile_serialization=False) writes PyTorch's pre-zip format."""
    base = ember.arange(6.0)
    sd = {"w": base.view(2, 3), "row": base.view(2, 3)[1], "b": ember.ones(2, dtype=ember.float64)}
    path = tmp_path / "legacy.pt"
    ember.save(sd, path, _use_new_zipfile_serialization=False)
    import zipfile
    assert not zipfile.is_zipfile(path)
    loaded = torch.load(path)
    assert loaded["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and loaded["row"].tolist() == [3, 4, 5]
    assert loaded["row"].untyped_storage().data_ptr() == loaded["w"].untyped_storage().data_ptr()
    assert loaded["b"].dtype == torch.float64
    back = ember.load(path)
    assert back["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["b"].dtype is ember.float64

"""ember.distributed.checkpoint's HuggingFace safetensors storage and consolidation, against
PyTorch's: each reads the other's files through dcp.load, the file names, index json and headers
are PyTorch's, the safetensors package reads ember's files, and consolidating shards writes
PyTorch's bytes. In-process, on ember's and PyTorch's 1-rank gloo groups."""
import json
import os
import struct

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint._consolidate_hf_safetensors import (
    consolidate_safetensors_files, consolidate_safetensors_files_on_every_rank)

needs_mpi = pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")


@pytest.fixture(scope="module")
def torch(torch):
    """PyTorch, with its distributed checkpoint imported."""
    import torch.distributed.checkpoint  # noqa: F401
    return torch


def _state_dicts(torch):
    """The same state dict for ember and PyTorch: floats, bfloat16, ints, nested keys."""
    rng = np.random.default_rng(0)
    arrays = {"embed.weight": rng.standard_normal((4, 6)).astype(np.float32),
              "layers.0.bias": rng.standard_normal(6).astype(np.float32),
              "layers.0.weight": rng.standard_normal((6, 6)).astype(np.float32),
              "step": np.arange(5, dtype=np.int64)}
    esd = {k: ember.tensor(v) for k, v in arrays.items()}
    tsd = {k: torch.tensor(v) for k, v in arrays.items()}
    esd["norm.scale"] = ember.tensor(arrays["layers.0.bias"]).to(ember.bfloat16)
    tsd["norm.scale"] = torch.tensor(arrays["layers.0.bias"]).to(torch.bfloat16)
    return esd, tsd


def _as_np(t):
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return t.detach().numpy()


def _assert_same(esd, tsd):
    assert sorted(esd) == sorted(tsd)
    for k in tsd:
        assert str(esd[k].dtype).split(".")[1] == str(tsd[k].dtype).split(".")[1], k
        np.testing.assert_array_equal(_as_np(esd[k]), _as_np(tsd[k]), err_msg=k)


def _header(path):
    """(parsed header with the DCP sharding info decoded, the data bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    extra = header.get("__metadata__", {})
    if "DCP_SHARDING_INFO" in extra:
        extra["DCP_SHARDING_INFO"] = json.loads(extra["DCP_SHARDING_INFO"])
    return header, raw[8 + n:]


def _files(d):
    return sorted(f for f in os.listdir(d) if not os.path.isdir(os.path.join(d, f)))


MAPPING = {"embed.weight": 1, "layers.0.bias": 2, "layers.0.weight": 2, "step": 3,
           "norm.scale": 3}


@needs_mpi
@pytest.mark.parametrize("mapping", [None, MAPPING])
def test_writer_files_as_pytorch_and_pytorch_reads_them(worlds, tmp_path, mapping):
    torch = worlds
    import safetensors.torch as st
    esd, tsd = _state_dicts(torch)
    ed, td = tmp_path / "ember", tmp_path / "torch"
    dcp.save(esd, storage_writer=dcp.HuggingFaceStorageWriter(str(ed), mapping))
    torch.distributed.checkpoint.save(
        tsd, storage_writer=torch.distributed.checkpoint.HuggingFaceStorageWriter(str(td),
                                                                                 mapping))
    assert _files(ed) == _files(td)
    assert "model.safetensors.index.json" in _files(ed)
    assert (ed / "model.safetensors.index.json").read_text() == \
        (td / "model.safetensors.index.json").read_text()
    for name in _files(ed):
        if name.endswith(".safetensors"):
            # the header's __metadata__ order is random in the safetensors package
            assert _header(ed / name) == _header(td / name), name
            loaded = st.load_file(str(ed / name))
            _assert_same({k: esd[k] for k in loaded}, loaded)

    out = {k: torch.zeros_like(v) for k, v in tsd.items()}
    torch.distributed.checkpoint.load(
        out, storage_reader=torch.distributed.checkpoint.HuggingFaceStorageReader(str(ed)))
    _assert_same(esd, out)
    back = {k: ember.zeros_like(v) for k, v in esd.items()}
    dcp.load(back, storage_reader=dcp.HuggingFaceStorageReader(str(ed)))
    _assert_same(back, tsd)


@needs_mpi
def test_reader_reads_pytorch_checkpoint_and_metadata(worlds, tmp_path):
    torch = worlds
    esd, tsd = _state_dicts(torch)
    torch.distributed.checkpoint.save(
        tsd, storage_writer=torch.distributed.checkpoint.HuggingFaceStorageWriter(
            str(tmp_path), MAPPING))
    out = {k: ember.zeros_like(v) for k, v in esd.items()}
    dcp.load(out, storage_reader=dcp.HuggingFaceStorageReader(str(tmp_path)))
    _assert_same(out, tsd)

    emd = dcp.HuggingFaceStorageReader(str(tmp_path)).read_metadata()
    tmd = torch.distributed.checkpoint.HuggingFaceStorageReader(str(tmp_path)).read_metadata()
    assert list(emd.state_dict_metadata) == list(tmd.state_dict_metadata)
    for k, t in tmd.state_dict_metadata.items():
        e = emd.state_dict_metadata[k]
        assert str(e.properties.dtype) == str(t.properties.dtype).replace("torch", "ember")
        assert list(e.size) == list(t.size)
        assert [(list(c.offsets), list(c.sizes)) for c in e.chunks] == \
            [(list(c.offsets), list(c.sizes)) for c in t.chunks]
    assert {(i.fqn, tuple(i.offset), s.relative_path, tuple(s.shape))
            for i, s in emd.storage_data.items()} == \
        {(i.fqn, tuple(i.offset), s.relative_path, tuple(s.shape))
         for i, s in tmd.storage_data.items()}


@needs_mpi
def test_reader_reads_plain_huggingface_files(worlds, tmp_path):
    torch = worlds
    import safetensors.torch as st
    esd, tsd = _state_dicts(torch)
    st.save_file({k: tsd[k] for k in ("embed.weight", "step")},
                 str(tmp_path / "model-00001-of-00002.safetensors"), metadata={"format": "pt"})
    st.save_file({k: tsd[k] for k in ("layers.0.bias", "layers.0.weight", "norm.scale")},
                 str(tmp_path / "model-00002-of-00002.safetensors"))
    out = {k: ember.zeros_like(v) for k, v in esd.items()}
    dcp.load(out, storage_reader=dcp.HuggingFaceStorageReader(str(tmp_path)))
    tout = {k: torch.zeros_like(v) for k, v in tsd.items()}
    torch.distributed.checkpoint.load(
        tout, storage_reader=torch.distributed.checkpoint.HuggingFaceStorageReader(
            str(tmp_path)))
    _assert_same(out, tout)
    _assert_same(out, tsd)


def _write_shards(tmp_path, torch):
    """What two ranks write with save_distributed: "w" split by rows, "v" by columns, "u" (3-D)
    by its first dimension, "s" replicated on rank 1 only."""
    import safetensors.torch as st
    rng = np.random.default_rng(1)
    full = {"w": torch.tensor(rng.standard_normal((4, 3)).astype(np.float32)),
            "v": torch.tensor(rng.standard_normal((3, 5)).astype(np.float32)).bfloat16(),
            "u": torch.tensor(rng.standard_normal((4, 2, 3)).astype(np.float32)),
            "s": torch.tensor(rng.standard_normal(7).astype(np.float32))}
    shards = [({"w": full["w"][:2], "v": full["v"][:, :3], "u": full["u"][:1]},
               {"w": [0, 0], "v": [0, 0], "u": [0, 0, 0]}),
              ({"w": full["w"][2:], "v": full["v"][:, 3:], "u": full["u"][1:], "s": full["s"]},
               {"w": [2, 0], "v": [0, 3], "u": [1, 0, 0], "s": [0]})]
    shard_dir = tmp_path / "sharded"
    shard_dir.mkdir()
    for rank, (tensors, offsets) in enumerate(shards, start=1):
        st.save_file({k: v.contiguous() for k, v in tensors.items()},
                     str(shard_dir / f"shard-{rank:05d}-model-00001-of-00001.safetensors"),
                     metadata={"DCP_SHARDING_INFO": json.dumps(
                         {k: {"saved_offsets": o} for k, o in offsets.items()}),
                         "DCP_VERSION": "1.0", "format": "pt"})
    return full, shard_dir


@needs_mpi
def test_reader_assembles_shards(worlds, tmp_path):
    torch = worlds
    full, shard_dir = _write_shards(tmp_path, torch)
    out = {k: ember.zeros(tuple(v.shape), dtype=getattr(ember, str(v.dtype).split(".")[1]))
           for k, v in full.items()}
    dcp.load(out, storage_reader=dcp.HuggingFaceStorageReader(str(shard_dir)))
    tout = {k: torch.zeros_like(v) for k, v in full.items()}
    torch.distributed.checkpoint.load(
        tout, storage_reader=torch.distributed.checkpoint.HuggingFaceStorageReader(
            str(shard_dir)))
    _assert_same(out, tout)
    _assert_same(out, full)
    emd = dcp.HuggingFaceStorageReader(str(shard_dir)).read_metadata()
    assert len(emd.state_dict_metadata["w"].chunks) == 2
    assert list(emd.state_dict_metadata["v"].size) == [3, 5]


@pytest.mark.parametrize("mapping", [None, {"w": 1, "v": 2, "u": 2, "s": 1}])
def test_consolidation_bytes_as_pytorch(tmp_path, torch, mapping):
    from torch.distributed.checkpoint._consolidate_hf_safetensors import \
        consolidate_safetensors_files as t_consolidate
    import safetensors.torch as st
    full, shard_dir = _write_shards(tmp_path, torch)
    mapping = mapping or dict.fromkeys(full, 1)
    ed, td = tmp_path / "ember", tmp_path / "torch"
    ed.mkdir()
    td.mkdir()
    consolidate_safetensors_files(str(shard_dir), str(ed), mapping, num_threads=2)
    t_consolidate(str(shard_dir), str(td), mapping, num_threads=2)
    assert _files(ed) == _files(td)
    for name in _files(ed):
        assert (ed / name).read_bytes() == (td / name).read_bytes(), name
    loaded = {}
    for name in _files(ed):
        if name.endswith(".safetensors"):
            loaded.update(st.load_file(str(ed / name)))
    _assert_same(loaded, full)


def test_consolidation_needs_dcp_metadata(tmp_path, torch):
    import safetensors.torch as st
    st.save_file({"w": torch.ones(2)}, str(tmp_path / "model-00001-of-00001.safetensors"))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ValueError, match="No DCP custom metadata found"):
        consolidate_safetensors_files(str(tmp_path), str(out), {"w": 1})


@needs_mpi
def test_consolidation_on_every_rank_as_pytorch(worlds, tmp_path):
    torch = worlds
    from torch.distributed.checkpoint._consolidate_hf_safetensors import \
        consolidate_safetensors_files_on_every_rank as t_consolidate
    full, shard_dir = _write_shards(tmp_path, torch)
    mapping = {"w": 1, "v": 2, "u": 3, "s": 3}
    ed, td = tmp_path / "ember", tmp_path / "torch"
    ed.mkdir()
    td.mkdir()
    consolidate_safetensors_files_on_every_rank(str(shard_dir), str(ed), mapping)
    t_consolidate(str(shard_dir), str(td), mapping)
    assert _files(ed) == _files(td)
    assert "model.safetensors.index.json" in _files(ed)
    for name in _files(ed):
        assert (ed / name).read_bytes() == (td / name).read_bytes(), name


@needs_mpi
@pytest.mark.parametrize("consolidate", [False, True])
def test_save_distributed_as_pytorch(worlds, tmp_path, consolidate):
    torch = worlds
    esd, tsd = _state_dicts(torch)
    del esd["step"], tsd["step"]  # PyTorch's consolidation sizes elements with finfo
    ed, td = tmp_path / "ember", tmp_path / "torch"
    dcp.save(esd, storage_writer=dcp.HuggingFaceStorageWriter(
        str(ed), save_distributed=True, enable_consolidation=consolidate))
    torch.distributed.checkpoint.save(
        tsd, storage_writer=torch.distributed.checkpoint.HuggingFaceStorageWriter(
            str(td), save_distributed=True, enable_consolidation=consolidate))
    assert _files(ed) == _files(td)
    sharded = (ed / "sharded", td / "sharded") if consolidate else (ed, td)
    assert _files(sharded[0]) == _files(sharded[1]) == \
        ["shard-00001-model-00001-of-00001.safetensors"]
    name = _files(sharded[0])[0]
    assert _header(sharded[0] / name) == _header(sharded[1] / name)
    if consolidate:
        assert _files(ed) == ["model-00001-of-00001.safetensors", "model.safetensors.index.json"]
        for name in _files(ed):
            assert (ed / name).read_bytes() == (td / name).read_bytes(), name
    back = {k: ember.zeros_like(v) for k, v in esd.items()}
    dcp.load(back, storage_reader=dcp.HuggingFaceStorageReader(str(ed)))
    _assert_same(back, tsd)


@needs_mpi
def test_non_tensor_values_are_refused(worlds, tmp_path):
    with pytest.raises(dcp.CheckpointException) as excinfo:
        dcp.save({"w": ember.ones(2), "epoch": 3},
                 storage_writer=dcp.HuggingFaceStorageWriter(str(tmp_path)))
    error = excinfo.value.failures[0][0]
    assert isinstance(error, ValueError)
    assert "safetensors files hold tensors only, and 'epoch' is not a tensor" in str(error)
    assert not any(f.endswith(".safetensors") for f in os.listdir(tmp_path))


def test_exports_as_pytorch(torch):
    assert {"HuggingFaceStorageReader", "HuggingFaceStorageWriter"} <= set(dir(dcp))
    assert dcp.hf_storage.__all__ == torch.distributed.checkpoint.hf_storage.__all__

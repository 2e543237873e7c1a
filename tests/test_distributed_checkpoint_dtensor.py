"""Distributed checkpoints of DTensor state dicts (DCP): each rank writes its own shards, a
load reads the overlapping pieces of every saved chunk into each rank's shard (resharding).

One rank, in process: the write items, chunk lists, read items and metadata are PyTorch's for
the same DTensor state dict; PyTorch loads ember's sharded checkpoints and ember PyTorch's;
``broadcast_from_rank0``; PyTorch's errors. Two ranks (tests/_dcp_dtensor_worker.py): FSDP2
and tensor-parallel models saved, loaded back into other shardings, optimizer state round
trips, HuggingFace shards; then PyTorch's own ``dcp.load`` reads the two-rank checkpoint here,
in one process, into full tensors equal to what the ranks computed."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_optimizer_state_dict,
                                                     set_model_state_dict,
                                                     set_optimizer_state_dict)
from ember.distributed.device_mesh import init_device_mesh
from ember.distributed.fsdp import fully_shard
from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_dcp_dtensor_worker.py")

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled, unavailable or uninitialized",
    "ignore:Detected an existing checkpoint")


def _np(t):
    t = t.detach()
    if hasattr(t, "full_tensor"):
        t = t.full_tensor()
    return np.asarray(t.float().tolist())


def _sd(lib, mesh, shard):
    """A DTensor state dict (and the full values) in ``lib``: sharded on rows, on columns,
    replicated, a 0-dim tensor and non-tensor values."""
    g = np.random.default_rng(0)
    w = g.standard_normal((5, 3)).astype(np.float32)
    b = g.standard_normal(4).astype(np.float32)
    full = {"w": w, "b": b, "r": w * 2}
    sd = {"w": shard(lib.tensor(w), mesh, [lib.distributed.tensor.Shard(0)]),
          "nested": {"b": shard(lib.tensor(b), mesh, [lib.distributed.tensor.Shard(0)]),
                     "c": shard(lib.tensor(w), mesh, [lib.distributed.tensor.Shard(1)])},
          "r": shard(lib.tensor(w * 2), mesh, [lib.distributed.tensor.Replicate()]),
          "step": lib.tensor(3.0), "epoch": 7}
    return sd, full


def _describe_items(items):
    out = []
    for i in items:
        d = (i.index.fqn, tuple(i.index.offset) if i.index.offset is not None else None,
             i.type.name)
        if i.tensor_data is not None:
            td = i.tensor_data
            d += (tuple(td.chunk.offsets), tuple(td.chunk.sizes), tuple(td.size),
                  str(td.properties.dtype).split(".")[-1], td.properties.requires_grad,
                  td.properties.pin_memory)
        out.append(d)
    return out


def _describe_md(md):
    out = {}
    for k, v in md.state_dict_metadata.items():
        if hasattr(v, "chunks"):
            out[k] = (tuple(v.size), str(v.properties.dtype).split(".")[-1],
                      [(tuple(c.offsets), tuple(c.sizes)) for c in v.chunks])
        else:
            out[k] = type(v).__name__
    return out


def _both(torch):
    from torch.distributed.device_mesh import init_device_mesh as t_mesh
    from torch.distributed.tensor import distribute_tensor as t_dist
    e_sd, full = _sd(ember, init_device_mesh("cpu", (1,)), distribute_tensor)
    t_sd, _ = _sd(torch, t_mesh("cpu", (1,)), t_dist)
    return e_sd, t_sd, full


def test_hooks_plans_and_metadata_as_pytorch(worlds):
    torch = worlds
    from torch.distributed.checkpoint import default_planner as t_dp
    from ember.distributed.checkpoint import default_planner as e_dp
    e_sd, t_sd, _ = _both(torch)
    # the DTensor hooks
    for key in ("w", "r"):
        assert ([(tuple(c.offsets), tuple(c.sizes)) for c in e_sd[key].__create_chunk_list__()]
                == [(tuple(c.offsets), tuple(c.sizes))
                    for c in t_sd[key].__create_chunk_list__()])
        assert (_describe_items(e_sd[key].__create_write_items__(key, e_sd[key]))
                == _describe_items(t_sd[key].__create_write_items__(key, t_sd[key])))
        shard = e_sd[key].__get_tensor_shard__(None)
        assert type(shard).__name__ == "Tensor" and _np(shard).tolist() == _np(e_sd[key]).tolist()
    assert e_sd["w"].is_pinned() is t_sd["w"].is_pinned() is False
    # the local and global save plans and the metadata
    from ember.distributed.checkpoint._traverse import flatten_state_dict
    from torch.distributed.checkpoint._nested_dict import flatten_state_dict as t_flatten
    e_flat, t_flat = flatten_state_dict(e_sd)[0], t_flatten(t_sd)[0]
    e_plan = e_dp.create_default_local_save_plan(e_flat, True)
    t_plan = t_dp.create_default_local_save_plan(t_flat, True)
    assert _describe_items(e_plan.items) == _describe_items(t_plan.items)
    e_global, e_md = e_dp.create_default_global_save_plan([e_plan])
    t_global, t_md = t_dp.create_default_global_save_plan([t_plan])
    assert _describe_md(e_md) == _describe_md(t_md)
    assert ([i.index.index for i in e_global[0].items]
            == [i.index.index for i in t_global[0].items])
    assert (_describe_md(e_dp._create_default_local_metadata(e_flat))
            == _describe_md(t_dp._create_default_local_metadata(t_flat)))
    # the load plan of a DTensor state dict
    e_lp = e_dp.create_default_local_load_plan(e_flat, e_md)
    t_lp = t_dp.create_default_local_load_plan(t_flat, t_md)
    assert _read_items(e_lp.items) == _read_items(t_lp.items)


def _read_items(items):
    return [(i.type.name, i.dest_index.fqn, tuple(i.dest_index.offset or ()),
             i.dest_index.index, tuple(i.dest_offsets), i.storage_index.fqn,
             tuple(i.storage_index.offset or ()), i.storage_index.index,
             tuple(i.storage_offsets), tuple(i.lengths)) for i in items]


def test_resharding_read_items_as_pytorch(torch):
    """Saved chunks of one sharding read into the chunks of another: the same reads, in the
    same order, as PyTorch's sweep."""
    from torch.distributed.checkpoint.metadata import ChunkStorageMetadata as TChunk
    from torch.distributed.checkpoint.metadata import TensorProperties as TProps
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata as TMd
    from torch.distributed.checkpoint.planner_helpers import \
        create_read_items_for_chunk_list as t_create
    from ember.distributed.checkpoint.metadata import (ChunkStorageMetadata, TensorProperties,
                                                       TensorStorageMetadata)
    from ember.distributed.checkpoint.planner_helpers import create_read_items_for_chunk_list
    cases = [
        # rows of 4 ranks (uneven, an empty shard) read as columns of 3
        ((9, 6), [((0, 0), (3, 6)), ((3, 0), (3, 6)), ((6, 0), (3, 6)), ((9, 0), (0, 6))],
         [((0, 0), (9, 2)), ((0, 2), (9, 2)), ((0, 4), (9, 2))]),
        # a 2x2 grid read as two row blocks, chunks listed out of order
        ((4, 4), [((2, 2), (2, 2)), ((0, 0), (2, 2)), ((2, 0), (2, 2)), ((0, 2), (2, 2))],
         [((1, 0), (3, 4)), ((0, 0), (1, 4))]),
        # a 0-dim tensor, and a 1-d one saved whole
        ((), [((), ())], [((), ())]),
        ((7,), [((0,), (7,))], [((4,), (3,)), ((0,), (4,))]),
    ]
    for size, saved, local in cases:
        e_md = TensorStorageMetadata(TensorProperties(), ember.Size(size),
                                     [ChunkStorageMetadata(ember.Size(o), ember.Size(s))
                                      for o, s in saved])
        t_md = TMd(TProps(), torch.Size(size),
                   [TChunk(torch.Size(o), torch.Size(s)) for o, s in saved])
        e_items = create_read_items_for_chunk_list(
            "x", e_md, [ChunkStorageMetadata(ember.Size(o), ember.Size(s)) for o, s in local])
        t_items = t_create("x", t_md, [TChunk(torch.Size(o), torch.Size(s)) for o, s in local])
        assert _read_items(e_items) == _read_items(t_items), size
        assert e_items


def test_global_plan_validation_as_pytorch(torch):
    """Overlapping, out-of-bounds and (several ranks) incomplete chunks: PyTorch's errors."""
    from torch.distributed.checkpoint import default_planner as t_dp
    from torch.distributed.checkpoint import metadata as t_m
    from torch.distributed.checkpoint.planner import SavePlan as TPlan
    from ember.distributed.checkpoint import default_planner as e_dp
    from ember.distributed.checkpoint import metadata as e_m
    from ember.distributed.checkpoint.planner import SavePlan

    def md(m, size_fn, chunks, size):
        return m.Metadata({"w": m.TensorStorageMetadata(
            m.TensorProperties(), size_fn(size),
            [m.ChunkStorageMetadata(size_fn(o), size_fn(s)) for o, s in chunks])})
    for chunks in ([((0, 0), (3, 4)), ((2, 0), (2, 4))],   # overlap
                   [((0, 0), (2, 4)), ((2, 0), (3, 4))],   # out of bounds
                   [((0, 0), (2, 4))]):                     # does not cover
        e_err = e_dp._validate_global_plan([SavePlan([])] * 2, md(e_m, ember.Size, chunks,
                                                                 (4, 4)))
        t_err = t_dp._validate_global_plan([TPlan([])] * 2, md(t_m, torch.Size, chunks, (4, 4)))
        assert [m.replace("ember.", "torch.") for m in e_err] == t_err and e_err


def test_sharded_checkpoints_between_ember_and_pytorch(worlds, tmp_path):
    torch = worlds
    import torch.distributed.checkpoint as tdcp
    e_sd, t_sd, full = _both(torch)
    # ember's sharded checkpoint: PyTorch reads it as its own DTensors and as plain tensors,
    # with the same metadata PyTorch writes for the same state dict
    dcp.save(e_sd, checkpoint_id=tmp_path / "e")
    tdcp.save(t_sd, checkpoint_id=tmp_path / "t")
    e_md = tdcp.FileSystemReader(tmp_path / "e").read_metadata()
    t_md = tdcp.FileSystemReader(tmp_path / "t").read_metadata()
    assert _describe_md(e_md) == _describe_md(t_md)
    assert set(e_md.storage_data) == set(t_md.storage_data)
    _, t_target, _ = _both(torch)
    for v in (t_target["w"], t_target["r"], t_target["nested"]["c"]):
        v.to_local().zero_()
    t_target["epoch"] = 0
    tdcp.load(t_target, checkpoint_id=tmp_path / "e")
    plain = {"w": torch.zeros(5, 3), "r": torch.zeros(5, 3),
             "nested": {"b": torch.zeros(4), "c": torch.zeros(5, 3)},
             "step": torch.tensor(0.0), "epoch": 0}
    tdcp.load(plain, checkpoint_id=tmp_path / "e", planner=tdcp.DefaultLoadPlanner())
    for got in (t_target, plain):
        np.testing.assert_array_equal(_np(got["w"]), full["w"])
        np.testing.assert_array_equal(_np(got["r"]), full["r"])
        np.testing.assert_array_equal(_np(got["nested"]["c"]), full["w"])
        np.testing.assert_array_equal(_np(got["nested"]["b"]), full["b"])
        assert got["epoch"] == 7 and float(got["step"]) == 3.0
    # PyTorch's sharded checkpoint loads into ember's DTensors, in place
    e_target, _, _ = _both(torch)
    locals_before = {k: e_target[k]._local_tensor for k in ("w", "r")}
    for v in (e_target["w"], e_target["r"], e_target["nested"]["b"]):
        v.to_local().zero_()
    e_target["epoch"] = None
    dcp.load(e_target, checkpoint_id=tmp_path / "t")
    for k in ("w", "r"):
        assert type(e_target[k]) is DTensor and e_target[k]._local_tensor is locals_before[k]
    np.testing.assert_array_equal(_np(e_target["w"]), full["w"])
    np.testing.assert_array_equal(_np(e_target["r"]), full["r"])
    np.testing.assert_array_equal(_np(e_target["nested"]["b"]), full["b"])
    assert e_target["epoch"] == 7


def _fsdp_model(seed, **kwargs):
    ember.manual_seed(seed)
    model = ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.ReLU(), ember.nn.Linear(5, 2))
    fully_shard(model[0], **kwargs)
    fully_shard(model, **kwargs)
    return model


def _step(model, opt):
    x = ember.tensor(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()


def test_fsdp_model_and_optimizer_on_one_rank(world, torch, tmp_path):
    """The FSDP2 recipe on one rank: ``dcp.save`` of the model's DTensor state dict and its
    optimizer's, PyTorch's ``dcp.load`` reading them into plain tensors, and ember's loading
    them into a fresh model that then trains identically."""
    import torch.distributed.checkpoint as tdcp
    model = _fsdp_model(0)
    opt = ember.optim.AdamW(model.parameters(), lr=0.01)
    _step(model, opt)
    osd = get_optimizer_state_dict(model, opt)
    assert type(osd["state"]["0.weight"]["exp_avg"]) is DTensor
    dcp.save({"model": model.state_dict(), "optim": osd}, checkpoint_id=tmp_path)
    t_state = {"model": {k: torch.zeros(tuple(v.shape)) for k, v in model.state_dict().items()},
               "optim": {"state": {k: {"exp_avg": torch.zeros(tuple(v["exp_avg"].shape)),
                                       "exp_avg_sq": torch.zeros(tuple(v["exp_avg"].shape)),
                                       "step": torch.tensor(0.0)}
                                   for k, v in osd["state"].items()},
                         "param_groups": [dict.fromkeys(g) for g in osd["param_groups"]]}}
    tdcp.load(t_state, checkpoint_id=tmp_path, no_dist=True)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(t_state["model"][k].numpy(), _np(v))
        for s in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(t_state["optim"]["state"][k][s].numpy(),
                                          _np(osd["state"][k][s]))
    assert t_state["optim"]["param_groups"][0]["lr"] == 0.01
    fresh = _fsdp_model(5)
    fresh_opt = ember.optim.AdamW(fresh.parameters(), lr=0.5)
    state = {"model": fresh.state_dict(), "optim": get_optimizer_state_dict(fresh, fresh_opt)}
    dcp.load(state, checkpoint_id=tmp_path)
    fresh.load_state_dict(state["model"])
    set_optimizer_state_dict(fresh, fresh_opt, state["optim"])
    # a meta-device state dict is materialized by the load (DTensors keep their layout)
    with ember.device("meta"):
        meta = ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.ReLU(),
                                   ember.nn.Linear(5, 2))
    fully_shard(meta)
    meta_state = {"model": meta.state_dict()}
    dcp.load(meta_state, checkpoint_id=tmp_path)
    for k, v in meta_state["model"].items():
        assert type(v) is DTensor and v.device.type == "cpu" and v.placements == (Shard(0),)
        np.testing.assert_array_equal(_np(v), _np(model.state_dict()[k]))
    _step(model, opt)
    _step(fresh, fresh_opt)
    for p, q in zip(model.parameters(), fresh.parameters()):
        np.testing.assert_array_equal(_np(p), _np(q))


def test_broadcast_from_rank0_as_pytorch(worlds):
    """``broadcast_from_rank0``: the full model and optimizer state dicts into sharded ones."""
    torch = worlds
    from torch.distributed.checkpoint.state_dict import StateDictOptions as TOptions
    from torch.distributed.checkpoint.state_dict import set_model_state_dict as t_set
    from torch.distributed.checkpoint.state_dict import \
        set_optimizer_state_dict as t_set_optim
    from torch.distributed.fsdp import fully_shard as t_fully_shard
    model = _fsdp_model(0)
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    _step(model, opt)
    opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    msd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    osd = get_optimizer_state_dict(model, opt, options=StateDictOptions(full_state_dict=True))
    fresh = _fsdp_model(3)
    fresh_opt = ember.optim.Adam(fresh.parameters(), lr=0.5)
    # (a copy: as in PyTorch, the load puts the model's own tensors into the dict given)
    e_keys = set_model_state_dict(fresh, dict(msd), options=opts)
    set_optimizer_state_dict(fresh, fresh_opt, osd, options=opts)
    for p, q in zip(model.parameters(), fresh.parameters()):
        assert type(q) is DTensor
        np.testing.assert_array_equal(_np(p), _np(q))
    for p, q in zip(model.parameters(), fresh.parameters()):
        for k in ("exp_avg", "exp_avg_sq"):
            assert type(fresh_opt.state[q][k]) is DTensor
            np.testing.assert_array_equal(_np(opt.state[p][k]), _np(fresh_opt.state[q][k]))
    assert fresh_opt.param_groups[0]["lr"] == 0.01
    # PyTorch's result for the same calls
    torch.manual_seed(3)
    t = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    t_fully_shard(t[0])
    t_fully_shard(t)
    t_opt = torch.optim.Adam(t.parameters(), lr=0.5)
    t_msd = {k: torch.tensor(_np(v)) for k, v in msd.items()}
    t_keys = t_set(t, t_msd, options=TOptions(full_state_dict=True, broadcast_from_rank0=True))
    assert list(e_keys.missing_keys) == list(t_keys.missing_keys)
    assert list(e_keys.unexpected_keys) == list(t_keys.unexpected_keys)
    t_osd = {"state": {k: {s: torch.tensor(_np(v)) for s, v in st.items()}
                       for k, st in osd["state"].items()},
             "param_groups": osd["param_groups"]}
    t_set_optim(t, t_opt, t_osd, options=TOptions(full_state_dict=True,
                                                  broadcast_from_rank0=True))
    for q, tq in zip(fresh.parameters(), t.parameters()):
        np.testing.assert_array_equal(_np(q), tq.detach().full_tensor().numpy())
        assert (sorted(type(v).__name__ for v in fresh_opt.state[q].values())
                == sorted(type(v).__name__ for v in t_opt.state[tq].values()))
    # (the flattening that PyTorch does on the way turns the tuple of betas into a list)
    assert fresh_opt.param_groups[0]["betas"] == t_opt.param_groups[0]["betas"] == [0.9, 0.999]
    # a model built on the meta device takes the broadcast values by assignment
    with ember.device("meta"):
        meta = ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.ReLU(),
                                   ember.nn.Linear(5, 2))
    fully_shard(meta)
    set_model_state_dict(meta, dict(msd), options=opts)
    for p, q in zip(model.parameters(), meta.parameters()):
        assert type(q) is DTensor and q.device.type == "cpu"
        np.testing.assert_array_equal(_np(p), _np(q))
    # the option needs full_state_dict, as in PyTorch
    with pytest.raises(ValueError, match="full_state_dict must be True when "
                                         "broadcast_from_rank0 is True."):
        set_model_state_dict(fresh, msd, options=StateDictOptions(broadcast_from_rank0=True))


def test_errors_as_pytorch(worlds, tmp_path):
    torch = worlds
    from torch.distributed.device_mesh import init_device_mesh as t_mesh
    from torch.distributed.tensor import DTensor as TDTensor
    from torch.distributed.tensor import Partial as TPartial
    from ember.distributed.tensor import Partial
    e = DTensor.from_local(ember.ones(2), init_device_mesh("cpu", (1,)), [Partial()])
    t = TDTensor.from_local(torch.ones(2), t_mesh("cpu", (1,)), [TPartial()])
    for fn in (lambda x: x.__create_write_items__("a", x), lambda x: x.__create_chunk_list__(),
               lambda x: x.__get_tensor_shard__(None)):
        with pytest.raises(ValueError) as t_err:
            fn(t)
        with pytest.raises(ValueError) as e_err:
            fn(e)
        assert str(e_err.value) == str(t_err.value)
    with pytest.raises(dcp.CheckpointException, match="partial placements"):
        dcp.save({"a": e}, checkpoint_id=tmp_path)
    # a DTensor of another global size does not load
    dcp.save({"a": distribute_tensor(ember.ones(4), init_device_mesh("cpu", (1,)), [Shard(0)])},
             checkpoint_id=tmp_path)
    with pytest.raises(dcp.CheckpointException, match=r"Size mismatch between saved"):
        dcp.load({"a": distribute_tensor(ember.ones(3), init_device_mesh("cpu", (1,)),
                                         [Replicate()])}, checkpoint_id=tmp_path)


@pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")
def test_two_ranks(tmp_path, torch):
    """2 ranks save FSDP2 and tensor-parallel models and their optimizers, and load them back
    sharded otherwise (the worker compares); here, in one process, PyTorch's ``dcp.load``
    reads those checkpoints into full tensors equal to the ranks' full state dicts, and ember
    reads the HuggingFace shards the same way."""
    import torch.distributed.checkpoint as tdcp
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                        "--nproc-per-node", "2", WORKER, str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(2):
        assert f"PASS {r}" in out, out
    # each rank wrote its own shards: both files hold a part of the sharded weight
    md = tdcp.FileSystemReader(tmp_path / "fsdp").read_metadata()
    files = {(k.fqn, tuple(k.offset)): v.relative_path for k, v in md.storage_data.items()
             if k.fqn == "model.0.weight"}
    assert files == {("model.0.weight", (0, 0)): "__0_0.distcp",
                     ("model.0.weight", (3, 0)): "__1_0.distcp"}
    # the chunks are PyTorch's shards of the same placements on 2 ranks
    from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset
    from torch.distributed.tensor import Shard as TShard
    for key in ("model.0.weight", "model.2.weight", "model.2.bias"):
        size = tuple(md.state_dict_metadata[key].size)
        want = sorted(tuple(map(tuple, _compute_local_shape_and_global_offset(
            size, (2,), [r], [TShard(0)])[::-1])) for r in range(2))
        got = sorted((tuple(c.offsets), tuple(c.sizes))
                     for c in md.state_dict_metadata[key].chunks)
        assert got == want, key
    # tensor parallel: the replicated bias written once, the row-parallel weight's columns
    # by each rank
    md = tdcp.FileSystemReader(tmp_path / "tp").read_metadata()
    assert [k.fqn for k in md.storage_data].count("model.2.bias") == 1
    assert ([(tuple(c.offsets), tuple(c.sizes))
             for c in md.state_dict_metadata["model.2.weight"].chunks]
            == [((0, 0), (3, 3)), ((0, 3), (3, 3))])
    full = torch.load(tmp_path / "full.pt")
    # PyTorch's load, in one process and no process group, of the 2-rank checkpoints
    for name in ("fsdp", "tp"):
        state = {"model": {k: torch.zeros_like(v) for k, v in full[name]["model"].items()}}
        if name == "fsdp":
            state["optim"] = {"state": {k: {s: torch.zeros_like(v) for s, v in st.items()}
                                        for k, st in full["fsdp"]["optim"]["state"].items()},
                              "param_groups": [dict.fromkeys(g)
                                               for g in full["fsdp"]["optim"]["param_groups"]]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tdcp.load(state, checkpoint_id=tmp_path / name, planner=tdcp.DefaultLoadPlanner(),
                      no_dist=True)
        for k, v in full[name]["model"].items():
            assert torch.equal(state["model"][k], v), (name, k)
        if name == "fsdp":
            for k, st in full["fsdp"]["optim"]["state"].items():
                for s, v in st.items():
                    assert torch.equal(state["optim"]["state"][k][s], v), (k, s)
            assert (state["optim"]["param_groups"][0]["params"]
                    == list(full["fsdp"]["model"]))
    # ember, in one process, reads the HuggingFace shards of both ranks into full tensors
    hf = {k: ember.zeros(tuple(v.shape)) for k, v in full["hf"].items()}
    dcp.load(hf, storage_reader=dcp.HuggingFaceStorageReader(tmp_path / "hf"), no_dist=True)
    for k, v in hf.items():
        np.testing.assert_array_equal(_np(v), full["hf"][k].numpy())


def test_strided_shard_blocks(torch):
    """FSDP2 + TP's (``_StridedShard(0, split_factor=2)``, ``Shard(0)``) on a 2x2 mesh leaves
    every rank one block of rows (PyTorch's offsets); a lone ``_StridedShard`` does not, and
    checkpointing it raises instead of writing a wrong chunk."""
    from types import SimpleNamespace
    from torch.distributed.tensor import Shard as TShard
    from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset as t_cl
    from torch.distributed.tensor.placement_types import _StridedShard as TStrided
    from ember.distributed.checkpoint.planner_helpers import _check_strided_shard_is_a_block
    from ember.distributed.tensor._utils import _compute_local_shape_and_global_offset
    from ember.distributed.tensor.placement_types import _StridedShard

    class Mesh:
        def __init__(self, shape, coord):
            self.shape, self.coord = shape, coord

        def get_coordinate(self):
            return self.coord

        def size(self, dim):
            return self.shape[dim]

    for coord in ([0, 0], [0, 1], [1, 0], [1, 1]):
        placements = (_StridedShard(0, split_factor=2), Shard(0))
        _check_strided_shard_is_a_block(SimpleNamespace(
            shape=(8, 3), device_mesh=Mesh((2, 2), coord), placements=placements))
        assert (_compute_local_shape_and_global_offset((8, 3), (2, 2), coord, placements)
                == t_cl((8, 3), (2, 2), coord, (TStrided(0, split_factor=2), TShard(0))))
    with pytest.raises(NotImplementedError, match=r"non-contiguous indices \[2, 3, 6, 7\]"):
        _check_strided_shard_is_a_block(SimpleNamespace(
            shape=(8,), device_mesh=Mesh((2,), [1]),
            placements=(_StridedShard(0, split_factor=2),)))

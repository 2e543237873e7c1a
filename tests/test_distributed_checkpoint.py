"""ember.distributed.checkpoint (DCP): checkpoints in PyTorch's on-disk format, read and
written by both, through ``get_state_dict``/``set_state_dict``; training resumes exactly; two
ranks share the writing; PyTorch's errors for missing keys and bad directories."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_optimizer_state_dict, get_state_dict,
                                                     set_model_state_dict, set_optimizer_state_dict,
                                                     set_state_dict)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled, unavailable or uninitialized")


def ember_model():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))


def torch_model(torch):
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def train(lib, model, opt, steps, seed=1):
    g = np.random.default_rng(seed)
    for _ in range(steps):
        x = lib.tensor(g.standard_normal((5, 3)).astype(np.float32))
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


def np_of(t):
    return np.asarray(t.detach().cpu().tolist())


def assert_states_equal(e_model, e_opt, t_model, t_opt):
    for (en, ep), (tn, tp) in zip(e_model.state_dict().items(), t_model.state_dict().items()):
        assert en == tn
        np.testing.assert_array_equal(np_of(ep), np_of(tp))
    e_state = [e_opt.state[p] for p in e_model.parameters()]
    t_state = [t_opt.state[p] for p in t_model.parameters()]
    for es, ts in zip(e_state, t_state):
        assert sorted(es) == sorted(ts)
        for k in es:
            np.testing.assert_array_equal(np_of(es[k]), np_of(ts[k]))
    assert e_opt.param_groups[0]["lr"] == t_opt.param_groups[0]["lr"]


def test_ember_checkpoint_loads_in_pytorch(tmp_path, torch):
    import torch.distributed.checkpoint as tdcp
    from torch.distributed.checkpoint.state_dict import get_state_dict as t_get
    from torch.distributed.checkpoint.state_dict import set_state_dict as t_set
    model = ember_model()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    train(ember, model, opt, 3)
    msd, osd = get_state_dict(model, opt)
    # keys are FQNs, optimizer states too
    assert list(msd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert list(osd["state"]) == list(msd) and osd["param_groups"][0]["params"] == list(msd)
    meta = dcp.save({"model": msd, "optim": osd, "extra": {"epoch": 7, "note": "x"}},
                    checkpoint_id=tmp_path)
    assert sorted(os.listdir(tmp_path)) == [".metadata", "__0_0.distcp"]
    # PyTorch's writer-thread split: items in two files
    dcp.save({"model": msd, "optim": osd},
             storage_writer=dcp.FileSystemWriter(tmp_path / "threads", thread_count=2))
    assert sorted(os.listdir(tmp_path / "threads")) == [".metadata", "__0_0.distcp",
                                                        "__0_1.distcp"]
    assert "optim.state.0.weight.exp_avg" in meta.state_dict_metadata
    assert type(meta.state_dict_metadata["extra.epoch"]).__name__ == "BytesStorageMetadata"

    t_model = torch_model(torch)
    t_opt = torch.optim.Adam(t_model.parameters(), lr=0.5)
    t_msd, t_osd = t_get(t_model, t_opt)
    state = {"model": t_msd, "optim": t_osd, "extra": {"epoch": 0, "note": ""}}
    tdcp.load(state, checkpoint_id=tmp_path)
    t_set(t_model, t_opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert state["extra"] == {"epoch": 7, "note": "x"}
    assert_states_equal(model, opt, t_model, t_opt)
    again = {"model": {k: torch.zeros_like(v) for k, v in t_msd.items()}}
    tdcp.load(again, checkpoint_id=tmp_path / "threads",
              planner=tdcp.DefaultLoadPlanner(allow_partial_load=True))
    for k, v in msd.items():
        np.testing.assert_array_equal(np_of(v), np_of(again["model"][k]))
    # PyTorch reads ember's metadata as its own classes
    t_meta = tdcp.FileSystemReader(tmp_path).read_metadata()
    assert isinstance(t_meta, tdcp.Metadata)
    assert t_meta.state_dict_metadata["model.0.weight"].size == torch.Size([4, 3])
    assert t_meta.planner_data["optim.state.0.weight.step"] == ("optim", "state", "0.weight",
                                                                "step")


def test_pytorch_checkpoint_loads_in_ember(tmp_path, torch):
    import torch.distributed.checkpoint as tdcp
    from torch.distributed.checkpoint.state_dict import get_state_dict as t_get
    torch.manual_seed(0)
    t_model = torch_model(torch)
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.1, momentum=0.9)
    train(torch, t_model, t_opt, 2)
    t_msd, t_osd = t_get(t_model, t_opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.save({"model": t_msd, "optim": t_osd, "tags": ["a", "b"]}, checkpoint_id=tmp_path,
                  storage_writer=tdcp.FileSystemWriter(tmp_path, thread_count=2))
    assert sorted(os.listdir(tmp_path)) == [".metadata", "__0_0.distcp", "__0_1.distcp"]

    model = ember_model()
    opt = ember.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "tags": None}
    dcp.load(state, checkpoint_id=tmp_path)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert state["tags"] == ["a", "b"]
    assert_states_equal(model, opt, t_model, t_opt)
    # and both continue identically
    train(torch, t_model, t_opt, 2, seed=5)
    train(ember, model, opt, 2, seed=5)
    for ep, tp in zip(model.parameters(), t_model.parameters()):
        np.testing.assert_allclose(np_of(ep), np_of(tp), rtol=1e-5, atol=1e-6)


def test_round_trip_resumes_training_identically(tmp_path):
    model = ember_model()
    opt = ember.optim.AdamW(model.parameters(), lr=0.02)
    train(ember, model, opt, 3)
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=tmp_path)

    ember.manual_seed(123)  # a different initialization, overwritten by the load
    fresh = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    fresh_opt = ember.optim.AdamW(fresh.parameters(), lr=0.9)
    # a fresh optimizer has no state: get_state_dict makes it (a zero-lr step) to load into
    assert not fresh_opt.state
    f_msd, f_osd = get_state_dict(fresh, fresh_opt)
    assert set(f_osd["state"]["0.weight"]) == {"step", "exp_avg", "exp_avg_sq"}
    state = {"model": f_msd, "optim": f_osd}
    dcp.load(state, checkpoint_id=tmp_path)
    set_state_dict(fresh, fresh_opt, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    assert fresh_opt.param_groups[0]["lr"] == 0.02

    train(ember, model, opt, 3, seed=9)
    train(ember, fresh, fresh_opt, 3, seed=9)
    for a, b in zip(model.parameters(), fresh.parameters()):
        np.testing.assert_array_equal(np_of(a), np_of(b))
    for p, q in zip(model.parameters(), fresh.parameters()):
        for k in opt.state[p]:
            np.testing.assert_array_equal(np_of(opt.state[p][k]), np_of(fresh_opt.state[q][k]))


class Counter:
    def __init__(self):
        self.n = 0
        self.t = ember.zeros(2)

    def state_dict(self):
        return {"n": self.n, "t": self.t}

    def load_state_dict(self, sd):
        self.n, self.t = sd["n"], sd["t"]


def test_stateful_options_and_async_save(tmp_path, torch):
    from torch.distributed.checkpoint.state_dict import StateDictOptions as TOptions
    c = Counter()
    c.n, c.t = 5, ember.tensor([1.0, 2.0])
    fut = dcp.async_save({"c": c}, checkpoint_id=tmp_path / "a")
    c.t.add_(10)  # staged before the background write: the checkpoint keeps [1, 2]
    fut.result()
    d = Counter()
    target = d.t
    dcp.load({"c": d}, checkpoint_id=tmp_path / "a")
    assert d.n == 5 and d.t is target and d.t.tolist() == [1.0, 2.0]
    # options
    assert [f.name for f in __import__("dataclasses").fields(StateDictOptions)] == \
        [f.name for f in __import__("dataclasses").fields(TOptions)]
    model = ember_model()
    model[0].weight.requires_grad_(False)
    sd = get_model_state_dict(model, options=StateDictOptions(ignore_frozen_params=True,
                                                              cpu_offload=True))
    assert list(sd) == ["0.bias", "2.weight", "2.bias"]
    opt = ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1,
                          momentum=0.9)
    flat = get_optimizer_state_dict(model, opt,
                                    options=StateDictOptions(flatten_optimizer_state_dict=True))
    assert "state.2.weight.momentum_buffer" in flat and flat["param_groups.2.bias.lr"] == 0.1
    set_optimizer_state_dict(model, opt, flat)
    # strict: the module's own missing-key error, as PyTorch's
    from torch.distributed.checkpoint.state_dict import set_model_state_dict as t_set
    with pytest.raises(RuntimeError) as e:
        set_model_state_dict(model, {"2.bias": ember.zeros(2)})
    with pytest.raises(RuntimeError) as t:
        t_set(torch_model(torch), {"2.bias": torch.zeros(2)})
    assert str(e.value) == str(t.value)
    # not strict: the missing keys are returned
    got = set_model_state_dict(model, {"2.bias": ember.zeros(2)},
                               options=StateDictOptions(strict=False))
    assert got.missing_keys == ["0.weight", "0.bias", "2.weight"] and model[2].bias.sum() == 0


def failure(exc_info):
    (rank, (exc, _)), = exc_info.value.failures.items()
    return rank, type(exc), str(exc)


def test_errors_as_pytorch(tmp_path, torch):
    import torch.distributed.checkpoint as tdcp
    dcp.save({"a": ember.ones(2)}, checkpoint_id=tmp_path / "c")
    tdcp.save({"a": torch.ones(2)}, checkpoint_id=tmp_path / "t")
    # a key the checkpoint lacks
    with pytest.raises(dcp.CheckpointException) as e:
        dcp.load({"a": ember.zeros(2), "b": ember.zeros(1)}, checkpoint_id=tmp_path / "t")
    with pytest.raises(tdcp.CheckpointException) as t:
        tdcp.load({"a": torch.zeros(2), "b": torch.zeros(1)}, checkpoint_id=tmp_path / "c")
    assert failure(e) == failure(t) == (0, RuntimeError,
                                        "Missing key in checkpoint state_dict: b.")
    # a partial load is allowed when asked
    part = {"a": ember.zeros(2), "b": ember.zeros(1)}
    dcp.load(part, checkpoint_id=tmp_path / "t",
             planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    assert part["a"].tolist() == [1.0, 1.0] and part["b"].tolist() == [0.0]
    # a size mismatch
    with pytest.raises(dcp.CheckpointException) as e:
        dcp.load({"a": ember.zeros(3)}, checkpoint_id=tmp_path / "t")
    with pytest.raises(tdcp.CheckpointException) as t:
        tdcp.load({"a": torch.zeros(3)}, checkpoint_id=tmp_path / "c")
    assert failure(t)[1:] == (ValueError, "Size mismatch between saved torch.Size([2]) and "
                                          "current: torch.Size([3]) for a")
    assert failure(e)[1:] == (ValueError, "Size mismatch between saved ember.Size([2]) and "
                                          "current: ember.Size([3]) for a")
    # no checkpoint in the directory
    (tmp_path / "empty").mkdir()
    with pytest.raises(dcp.CheckpointException) as e:
        dcp.load({"a": ember.zeros(2)}, checkpoint_id=tmp_path / "empty")
    with pytest.raises(tdcp.CheckpointException) as t:
        tdcp.load({"a": torch.zeros(2)}, checkpoint_id=tmp_path / "empty")
    assert failure(e) == failure(t)
    assert failure(e)[1] is AssertionError and failure(e)[2].startswith(
        "metadata is None; global metadata read failed: [Errno 2] No such file or directory")
    # no storage named at all
    msg = "`checkpoint_id` must be specified if storage_reader/storage_writer is None."
    with pytest.raises(RuntimeError, match=msg):
        dcp.save({"a": ember.ones(1)})
    with pytest.raises(RuntimeError, match=msg):
        torch.distributed.checkpoint.save({"a": torch.ones(1)})
    # overwrite=False refuses an existing checkpoint, on the write step
    with pytest.raises(dcp.CheckpointException) as e:
        dcp.save({"a": ember.ones(2)},
                 storage_writer=dcp.FileSystemWriter(tmp_path / "c", overwrite=False))
    assert failure(e)[1:] == (RuntimeError, "Checkpoint already exists and self.overwrite=False.")


WORKER = textwrap.dedent("""
    import sys, warnings
    import ember, ember.distributed as dist, ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    path = sys.argv[1]
    # replicated values (same on every rank), as DDP keeps them
    sd = {"w": ember.arange(12.0).reshape(3, 4), "b": ember.ones(64), "step": 3,
          "nested": {"v": ember.tensor([5, 6])}}
    meta = dcp.save(sd, checkpoint_id=path)
    # DDP's "module." prefix is not part of the FQNs, in the model's or the optimizer's keys
    ember.manual_seed(0)
    ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 1))
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    msd, osd = get_state_dict(ddp, opt)
    print(f"RANK {rank} FQNS {list(msd)} {list(osd['state'])}", flush=True)
    msd["weight"].fill_(2.0)
    set_state_dict(ddp, opt, model_state_dict=msd, optim_state_dict=osd)
    assert ddp.module.weight.tolist() == [[2.0, 2.0]]
    back = {"w": ember.zeros(3, 4), "b": ember.zeros(64), "step": 0,
            "nested": {"v": ember.zeros(2, dtype=ember.int64)}}
    dcp.load(back, checkpoint_id=path)
    ok = (back["w"].tolist() == sd["w"].tolist() and back["b"].tolist() == [1.0] * 64
          and back["step"] == 3 and back["nested"]["v"].tolist() == [5, 6])
    print(f"RANK {rank} OK {ok} KEYS {sorted(meta.state_dict_metadata)}", flush=True)
    # a torch.save file read on rank 0 and broadcast (format_utils)
    from ember.distributed.checkpoint.format_utils import (BroadcastingTorchSaveReader,
                                                           DynamicMetaLoadPlanner)
    if rank == 0:
        ember.save({"w": ember.arange(12.0).reshape(3, 4) * 2,
                    "nested": {"v": ember.tensor([7, 8])}}, path + ".pt")
    got = {"w": ember.zeros(3, 4), "nested": {"v": ember.zeros(2, dtype=ember.int64)}}
    dcp.load(got, checkpoint_id=path + ".pt", storage_reader=BroadcastingTorchSaveReader(),
             planner=DynamicMetaLoadPlanner())
    print(f"RANK {rank} BROADCAST {got['w'].sum().item()} {got['nested']['v'].tolist()}",
          flush=True)
    dist.destroy_process_group()
""")


def test_format_utils_convert_as_pytorch(tmp_path, torch):
    """dcp_to_torch_save / torch_save_to_dcp, each direction read by the other library, the
    model-free load Lightning uses (_EmptyStateDictLoadPlanner, with ``keys`` too) and the
    command line."""
    from ember.distributed.checkpoint import format_utils as fu
    from ember.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
    from ember.distributed.checkpoint.state_dict_loader import _load_state_dict
    import torch.distributed.checkpoint.format_utils as tfu
    model = ember_model()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    train(ember, model, opt, 2)
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd, "epoch": 3}, checkpoint_id=tmp_path / "dcp")

    def same(a, b):  # nested dicts/lists of tensors and plain values, compared as numbers
        if isinstance(a, dict):
            assert sorted(a) == sorted(b)
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        elif hasattr(a, "shape"):
            assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
            np.testing.assert_array_equal(np_of(a), np_of(b))
        else:
            assert a == b

    fu.dcp_to_torch_save(tmp_path / "dcp", tmp_path / "mine.pt")
    tfu.dcp_to_torch_save(tmp_path / "dcp", tmp_path / "theirs.pt")
    mine = torch.load(tmp_path / "mine.pt")
    same(mine, torch.load(tmp_path / "theirs.pt"))
    same(mine["model"], dict(msd))
    assert mine["epoch"] == 3
    # a PyTorch torch.save file to a DCP directory, read back by both
    t_sd = {"w": torch.arange(6.0).reshape(2, 3), "n": {"i": torch.tensor([1, 2])}, "s": "x"}
    torch.save(t_sd, tmp_path / "t.pt")
    fu.torch_save_to_dcp(tmp_path / "t.pt", tmp_path / "dcp2")
    back = {}
    tdcp_sd = {"w": torch.zeros(2, 3), "n": {"i": torch.zeros(2, dtype=torch.int64)}, "s": ""}
    import torch.distributed.checkpoint as tdcp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.load(tdcp_sd, checkpoint_id=tmp_path / "dcp2")
    same(tdcp_sd, t_sd)
    _load_state_dict(back, storage_reader=dcp.FileSystemReader(tmp_path / "dcp2"),
                     planner=_EmptyStateDictLoadPlanner(keys=["n"]), no_dist=True)
    assert sorted(back) == ["n"] and back["n"]["i"].tolist() == [1, 2]
    # the command line, and PyTorch's for a missing source
    subprocess.run([sys.executable, "-m", "ember.distributed.checkpoint.format_utils",
                    "dcp_to_torch", str(tmp_path / "dcp2"), str(tmp_path / "cli.pt")],
                   cwd=ROOT, check=True, capture_output=True)
    same(torch.load(tmp_path / "cli.pt"), t_sd)
    out = subprocess.run([sys.executable, "-m", "ember.distributed.checkpoint.format_utils",
                          "torch_to_dcp", str(tmp_path / "none.pt"), str(tmp_path / "x")],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert out.splitlines()[-1] == f"No checkpoint found at {tmp_path / 'none.pt'}. Skipping " \
                                   f"conversion."


@pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")
def test_two_ranks_save_and_load(tmp_path, torch):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    ckpt = tmp_path / "ckpt"
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                        "--nproc-per-node", "2", str(script), str(ckpt)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for r in range(2):
        assert f"RANK {r} OK True KEYS ['b', 'nested.v', 'step', 'w']" in out, out
        assert f"RANK {r} FQNS ['weight', 'bias'] ['weight', 'bias']" in out, out
        assert f"RANK {r} BROADCAST 132.0 [7, 8]" in out, out
    # rank 0 wrote the metadata; the replicated values were split between the ranks' files
    assert sorted(os.listdir(ckpt)) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    import torch.distributed.checkpoint as tdcp
    md = tdcp.FileSystemReader(ckpt).read_metadata()
    files = {k.fqn: v.relative_path for k, v in md.storage_data.items()}
    assert set(files.values()) == {"__0_0.distcp", "__1_0.distcp"}
    # the split is PyTorch's: dedup over the same plans gives the same files
    from torch.distributed.checkpoint._dedup_save_plans import dedup_save_plans
    from torch.distributed.checkpoint.default_planner import create_default_local_save_plan
    t_sd = {"w": torch.zeros(3, 4), "b": torch.zeros(64), "step": 3, "nested.v": torch.zeros(2)}
    plans = [create_default_local_save_plan(t_sd, r == 0) for r in range(2)]
    t_files = {i.index.fqn: f"__{r}_0.distcp" for r, plan in enumerate(dedup_save_plans(plans))
               for i in plan.items}
    assert files == t_files
    state = {"w": torch.zeros(3, 4), "b": torch.zeros(64), "step": 0,
             "nested": {"v": torch.zeros(2, dtype=torch.int64)}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdcp.load(state, checkpoint_id=ckpt)
    assert state["w"].tolist() == np.arange(12.0).reshape(3, 4).tolist() and state["step"] == 3

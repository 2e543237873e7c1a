"""The program that tests/test_distributed_checkpoint_dtensor.py runs on two ranks through
``python -m ember.distributed.run`` (argument: the output directory). An FSDP2 model trained
with AdamW is saved with ``dcp.save`` (its DTensor state dict and its optimizer's, each rank
writing its shards) and loaded back into the same model sharded on columns, into replicated
DTensors and into plain tensors; the optimizer state round trips and training continues
identically. A tensor-parallel model's checkpoint loads into an FSDP2 one (Shard(1) and
Replicate saved, Shard(0) loaded). ``broadcast_from_rank0`` loads rank 0's full state dicts.
HuggingFace shards (``save_distributed``) load back. A ``_StridedShard`` whose shard is not one
block is refused. Rank 0 writes ``full.pt``, the full state dicts, for the test to compare
PyTorch's load with. Prints ``PASS <rank>``."""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.distributed.checkpoint as dcp  # noqa: E402
from ember.distributed.checkpoint.state_dict import (StateDictOptions,  # noqa: E402
                                                     get_model_state_dict,
                                                     get_optimizer_state_dict,
                                                     set_model_state_dict,
                                                     set_optimizer_state_dict)
from ember.distributed.device_mesh import init_device_mesh  # noqa: E402
from ember.distributed.fsdp import fully_shard  # noqa: E402
from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor  # noqa: E402
from ember.distributed.tensor.parallel import (ColwiseParallel,  # noqa: E402
                                               RowwiseParallel, parallelize_module)
from ember.distributed.tensor.placement_types import _StridedShard  # noqa: E402

FULL = StateDictOptions(full_state_dict=True)


def make(seed, mesh, **kwargs):
    """Linear(4, 5) (rows sharded 3 + 2) and Linear(5, 1) (rank 1's row shard is empty)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 1))
    if mesh is not None:
        fully_shard(model[0], mesh=mesh, **kwargs)
        fully_shard(model, mesh=mesh, **kwargs)
    return model


def on_columns(p):
    """Shard(1) where dim 1 splits evenly (FSDP2 shards other dims evenly only), else rows."""
    return Shard(1) if p.ndim == 2 and p.shape[1] % 2 == 0 else Shard(0)


def step(model, opt, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(6, 4, generator=g)
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()


def same(a, b, msg):
    a = a.full_tensor() if isinstance(a, DTensor) else a
    b = b.full_tensor() if isinstance(b, DTensor) else b
    assert tuple(a.shape) == tuple(b.shape) and torch.equal(a, b), f"{msg}: {a} != {b}"


def same_state(model, full_msd, msg):
    for k, v in get_model_state_dict(model, options=FULL).items():
        same(v, full_msd[k], f"{msg} {k}")


def same_optim(model, opt, full_osd, msg):
    osd = get_optimizer_state_dict(model, opt, options=FULL)

    def lists(groups):  # a full optimizer state dict's load gives tuples back as lists
        return [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()}
                for g in groups]
    assert lists(osd["param_groups"]) == lists(full_osd["param_groups"]), msg
    for k, st in full_osd["state"].items():
        for s, v in st.items():
            same(osd["state"][k][s], v, f"{msg} {k}.{s}")


def main():
    out = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2,))

    # --- FSDP2: save each rank's shards
    model = make(0, mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    for s in range(2):
        step(model, opt, s)
    full_msd = get_model_state_dict(model, options=FULL)
    # a snapshot: the 0-dim step tensors are the optimizer's own, which later steps advance
    full_osd = copy.deepcopy(get_optimizer_state_dict(model, opt, options=FULL))
    dcp.save({"model": model.state_dict(), "optim": get_optimizer_state_dict(model, opt)},
             checkpoint_id=f"{out}/fsdp")

    # loaded into the model sharded on columns where it can be, with another optimizer
    cols = make(1, mesh, shard_placement_fn=on_columns)
    assert cols[0].weight.placements == (Shard(1),)
    cols_opt = torch.optim.AdamW(cols.parameters(), lr=0.5)
    state = {"model": cols.state_dict(), "optim": get_optimizer_state_dict(cols, cols_opt)}
    dcp.load(state, checkpoint_id=f"{out}/fsdp")
    cols.load_state_dict(state["model"])
    set_optimizer_state_dict(cols, cols_opt, state["optim"])
    same_state(cols, full_msd, "Shard(1) load")
    same_optim(cols, cols_opt, full_osd, "Shard(1) optimizer load")
    step(model, opt, 7)
    step(cols, cols_opt, 7)
    same_state(cols, get_model_state_dict(model, options=FULL), "after a step")

    # loaded into replicated DTensors and into plain tensors
    rep = {k: distribute_tensor(torch.zeros_like(v), mesh, [Replicate()])
           for k, v in full_msd.items()}
    plain = {k: torch.zeros_like(v) for k, v in full_msd.items()}
    dcp.load({"model": rep}, checkpoint_id=f"{out}/fsdp")
    dcp.load({"model": plain}, checkpoint_id=f"{out}/fsdp")
    for k, v in full_msd.items():
        assert rep[k].placements == (Replicate(),)
        same(rep[k].to_local(), v, f"Replicate load {k}")
        same(plain[k], v, f"plain load {k}")

    # --- tensor parallel: Shard(0), Shard(1) and Replicate saved, loaded into FSDP2's Shard(0)
    torch.manual_seed(2)
    tp = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    parallelize_module(tp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    assert tp[2].weight.placements == (Shard(1),) and tp[2].bias.placements == (Replicate(),)
    tp_full = get_model_state_dict(tp, options=FULL)
    dcp.save({"model": tp.state_dict()}, checkpoint_id=f"{out}/tp")
    torch.manual_seed(3)
    fsdp_tp = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    fully_shard(fsdp_tp, mesh=mesh)
    dcp.load({"model": fsdp_tp.state_dict()}, checkpoint_id=f"{out}/tp")
    same_state(fsdp_tp, tp_full, "tensor parallel into FSDP")

    # --- broadcast_from_rank0: only rank 0 has the full state dicts
    bcast = make(4, mesh)
    bcast_opt = torch.optim.AdamW(bcast.parameters(), lr=0.5)
    opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    # (copies: as in PyTorch, loading puts the model's own tensors into the dict given)
    set_model_state_dict(bcast, dict(full_msd) if rank == 0 else {}, options=opts)
    set_optimizer_state_dict(bcast, bcast_opt, copy.deepcopy(full_osd) if rank == 0 else {},
                             options=opts)
    same_state(bcast, full_msd, "broadcast_from_rank0")
    same_optim(bcast, bcast_opt, full_osd, "broadcast_from_rank0 optimizer")
    assert all(isinstance(p, DTensor) for p in bcast.parameters())

    # --- HuggingFace safetensors: each rank its shard files
    dcp.save(model.state_dict(),
             storage_writer=dcp.HuggingFaceStorageWriter(f"{out}/hf", save_distributed=True))
    hf_full = get_model_state_dict(model, options=FULL)
    hf_cols = make(5, mesh, shard_placement_fn=on_columns)
    hf_sd = hf_cols.state_dict()
    dcp.load(hf_sd, storage_reader=dcp.HuggingFaceStorageReader(f"{out}/hf"))
    same_state(hf_cols, hf_full, "HuggingFace shards")

    # --- a _StridedShard whose rows are not one block: refused
    strided = distribute_tensor(torch.arange(8.0), mesh, [_StridedShard(0, split_factor=2)])
    try:
        dcp.save({"s": strided}, checkpoint_id=f"{out}/strided")
    except dcp.CheckpointException as e:
        assert "non-contiguous indices" in str(e), e
    else:
        raise AssertionError("a non-contiguous _StridedShard was saved")

    if rank == 0:
        torch.save({"fsdp": {"model": full_msd, "optim": full_osd},
                    "tp": {"model": tp_full}, "hf": hf_full}, f"{out}/full.pt")
    dist.barrier()
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

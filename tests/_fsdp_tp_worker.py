"""The program that tests/test_fsdp_tp.py runs on four ranks through
``python -m ember.distributed.run``: the 2-D "FSDP + TP" recipe on a (dp=2, tp=2) mesh. A
small Llama (tests/_tp_worker.py) is parallelized on "tp" (torchtitan's plan, with
``loss_parallel``), then ``fully_shard`` on each block and on the root over "dp"; three AdamW
steps are compared with the same model trained plainly in this process on the full batch (dp
rank d gets half d of the batch, both tp ranks of a dp group the same half): the loss, every
parameter's and gradient's ``full_tensor()``, the gradient norm (``clip_grad_norm_``), the
2-D placements (``_StridedShard`` where TP also shards dim 0), the TP-local unsharded
parameters and the state dict. Prints ``PASS <rank>``."""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.distributed.tensor as dt  # noqa: E402
import ember.distributed.tensor.parallel as tp  # noqa: E402
from ember.distributed.device_mesh import init_device_mesh  # noqa: E402
from ember.distributed.fsdp import fully_shard  # noqa: E402
from ember.distributed.tensor import DTensor, Replicate, Shard  # noqa: E402
from ember.distributed.tensor.placement_types import _StridedShard  # noqa: E402
from _tp_worker import make_transformer, tp_plan  # noqa: E402

VOCAB = 10  # 5 rows per tp rank: FSDP shards of 3 and 2 (padded)
BATCH, SEQ = 4, 6
F = torch.nn.functional


def close(a, b, msg, atol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), f"{msg}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert torch.allclose(a, b, atol=atol, rtol=1e-4), f"{msg}: {a} != {b}"


def expected_placements(name):
    """FSDP's Shard(0) over "dp" before the TP placement over "tp"; strided where TP shards
    dim 0 too (column-parallel weights, the row-parallel embedding)."""
    strided = (_StridedShard(0, split_factor=2), Shard(0))
    if name.endswith(("wq.weight", "wk.weight", "wv.weight", "w1.weight", "w3.weight")) \
            or name in ("tok_embeddings.weight", "output.weight"):
        return strided
    if name.endswith(("wo.weight", "w2.weight")):
        return (Shard(0), Shard(1))
    return (Shard(0), Replicate())


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp_rank, tp_rank = mesh.get_coordinate()
    torch.manual_seed(0)
    ref = make_transformer(torch, vocab=VOCAB, n_layers=1)
    model = tp.parallelize_module(copy.deepcopy(ref), mesh["tp"], tp_plan(tp, dt))
    for layer in model.layers:
        fully_shard(layer, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    for name, p in model.named_parameters():
        assert isinstance(p, DTensor) and p.device_mesh.mesh_dim_names == ("dp", "tp"), name
        assert p.placements == expected_placements(name), (name, p.placements)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=0.01)
    half = BATCH // 2
    for step in range(3):
        g = torch.Generator().manual_seed(10 + step)
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
        labels = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
        mine = slice(dp_rank * half, (dp_rank + 1) * half)
        pred = model(tokens[mine])
        with tp.loss_parallel():
            loss = F.cross_entropy(pred.flatten(0, 1), labels[mine].flatten(0, 1))
            loss.backward()
        ref_loss = F.cross_entropy(ref(tokens).flatten(0, 1), labels.flatten(0, 1))
        ref_loss.backward()
        # the full batch's mean loss: the two dp halves' mean
        mean_loss = loss.to_local().detach().clone()
        dist.all_reduce(mean_loss, group=mesh.get_group("dp"))
        close(mean_loss / 2, ref_loss, f"loss, step {step}")
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            assert p.grad.placements == p.placements, (name, p.grad.placements)
            assert p.grad.to_local().shape == p.to_local().shape, name
            close(p.grad.full_tensor(), q.grad, f"grad {name}, step {step}")
        # the norm over every rank's pieces of the 2-D gradients (clipping acts at 0.5)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        ref_norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        assert norm.placements == (Replicate(), Replicate()), norm.placements
        close(norm.full_tensor(), ref_norm, f"gradient norm, step {step}")
        opt.step()
        opt_ref.step()
        opt.zero_grad()
        opt_ref.zero_grad()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            close(p.full_tensor(), q.detach(), f"{name}, step {step}")
    # unsharded: the TP DTensors the TP layers compute with, over "tp"
    block = model.layers[0]
    block.unshard()
    wq, ref_wq = block.attention.wq.weight, ref.layers[0].attention.wq.weight
    assert isinstance(wq, DTensor) and wq.placements == (Shard(0),), wq.placements
    assert wq.device_mesh.mesh_dim_names == ("tp",)
    close(wq.to_local(), ref_wq.detach().chunk(2)[tp_rank], "unsharded wq (this tp rank's)")
    block.reshard()
    sd = model.state_dict()
    assert list(sd) == list(ref.state_dict())
    for key, value in sd.items():
        assert isinstance(value, DTensor) and value.placements == expected_placements(key), key
        close(value.full_tensor(), ref.state_dict()[key], f"state_dict {key}")
    dist.barrier()
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

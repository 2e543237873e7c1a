"""The program that tests/test_fsdp.py runs on every rank through
``python -m ember.distributed.run``: a small transformer-style model with ``fully_shard`` on
each block and on the root, trained with AdamW, compared step by step with the same model
trained unsharded in this process on the full batch (rank r's FSDP model sees only its half;
FSDP's averaged gradients equal the full-batch mean). Covers uneven and empty shards, the
default and explicit ``reshard_after_forward``, explicit prefetching and async unshard,
gradient accumulation without synchronization, bfloat16 mixed precision, HSDP, and the full
state dict. Prints ``PASS <rank>``."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.distributed.checkpoint.state_dict import (StateDictOptions,  # noqa: E402
                                                     get_model_state_dict,
                                                     set_model_state_dict)
from ember.distributed.device_mesh import init_device_mesh  # noqa: E402
from ember.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard  # noqa: E402
from ember.distributed.tensor import DTensor, Replicate, Shard  # noqa: E402

BATCH, DIM_IN = 8, 5


def close(a, b, msg, atol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), f"{msg}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert torch.allclose(a, b, atol=atol, rtol=1e-5), f"{msg}: {a} != {b}"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)
        self.fc1 = nn.Linear(6, 9)  # 9 rows: shards of 5 and 4 (padded)
        self.fc2 = nn.Linear(9, 6)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(DIM_IN, 6)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(6, 1)  # one row: rank 1's shard is empty

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make_models(seed, mesh, **kwargs):
    torch.manual_seed(seed)
    ref = Model()
    model = Model()
    model.load_state_dict(ref.state_dict())
    for block in model.blocks:
        fully_shard(block, mesh=mesh, **kwargs)
    fully_shard(model, mesh=mesh, **kwargs)
    return ref, model


def data(step, rank, W):
    """The full batch (every rank draws the same) and this rank's half."""
    g = torch.Generator().manual_seed(100 + step)
    x, y = torch.randn(BATCH, DIM_IN, generator=g), torch.randn(BATCH, 1, generator=g)
    n = BATCH // W
    return x, y, x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]


def mse(out, y):
    return ((out.float() - y) ** 2).mean()


def check_params(model, ref, msg):
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert isinstance(p, DTensor) and p.placements[-1] == Shard(0), (name, type(p))
        close(p.full_tensor(), q.detach(), f"{msg}: {name}")


def mean_over_ranks(t):
    t = t.detach().clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    return t


def check_training(mesh, rank, W, steps, prefetch=False, **kwargs):
    ref, model = make_models(0, mesh, **kwargs)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=0.02)
    if prefetch:
        blocks = list(model.blocks)
        blocks[0].set_modules_to_forward_prefetch([blocks[1]])
        blocks[1].set_modules_to_backward_prefetch([blocks[0]])
    for step in range(steps):
        x, y, xs, ys = data(step, rank, W)
        if prefetch:  # the first block's all-gather, issued ahead and waited for in forward
            handle = model.blocks[0].unshard(async_op=True)
            assert type(handle).__name__ == "_UnshardHandleImpl"
        loss = mse(model(xs), ys)
        ref_loss = mse(ref(x), y)
        close(mean_over_ranks(loss), ref_loss, f"loss {kwargs}, step {step}")
        loss.backward()
        ref_loss.backward()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            assert isinstance(p.grad, DTensor) and p.grad.placements[-1] == Shard(0), name
            assert p.grad.to_local().shape == p.to_local().shape, name
            close(p.grad.full_tensor(), q.grad, f"grad {name} {kwargs}, step {step}")
        opt.step()
        opt_ref.step()
        opt.zero_grad()
        opt_ref.zero_grad()
        check_params(model, ref, f"{kwargs} step {step}")
    return ref, model


def check_resharding(model, W):
    """The root keeps its parameters unsharded after forward, the blocks do not; backward
    reshards everything and frees the unsharded memory."""
    x = torch.randn(2, DIM_IN)
    out = model(x)
    assert not isinstance(model.inp.weight, DTensor)  # the root: reshard_after_forward False
    assert isinstance(model.blocks[0].fc1.weight, DTensor)
    group = model.blocks[0]._get_fsdp_state()._fsdp_param_group
    assert all(b.untyped_storage().size() == 0 for b in group._unsharded_buffers.values())
    out.sum().backward()
    for name, p in model.named_parameters():
        assert isinstance(p, DTensor), name
    model.zero_grad()


def check_state_dict(model, ref, rank, W):
    sd = model.state_dict()
    assert list(sd) == list(ref.state_dict())
    for key, value in sd.items():
        assert isinstance(value, DTensor) and value.placements == (Shard(0),), key
        full = ref.state_dict()[key]
        pieces = torch.chunk(full, W, dim=0)
        if rank < len(pieces):
            close(value.to_local(), pieces[rank], f"state_dict local {key}")
        else:
            assert value.to_local().numel() == 0, key
    full_sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    assert list(full_sd) == list(ref.state_dict())
    for key, value in full_sd.items():
        assert not isinstance(value, DTensor), key
        close(value, ref.state_dict()[key], f"full state dict {key}")
    # loading: the full values into another FSDP model, and the sharded ones back
    _, other = make_models(5, init_device_mesh("cpu", (W,)))
    set_model_state_dict(other, full_sd, options=StateDictOptions(full_state_dict=True))
    check_params(other, ref, "set_model_state_dict(full_state_dict=True)")
    _, other = make_models(6, init_device_mesh("cpu", (W,)))
    other.load_state_dict(sd)
    check_params(other, ref, "load_state_dict of the sharded state dict")


def check_grad_accumulation(mesh, rank, W):
    """Two microbatches, the first without gradient synchronization, then a step."""
    ref, model = make_models(1, mesh)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=0.02)
    for micro in range(2):
        x, y, xs, ys = data(10 + micro, rank, W)
        model.set_requires_gradient_sync(micro == 1)
        mse(model(xs), ys).backward()
        mse(ref(x), y).backward()
        if micro == 0:  # nothing reduced: the sharded parameters have no gradient yet
            assert all(p.grad is None for p in model.parameters())
    opt.step()
    opt_ref.step()
    check_params(model, ref, "gradient accumulation")


def check_mixed_precision(mesh, rank, W):
    """param_dtype=bfloat16: each rank computes in bfloat16 on its half, the gradients are
    averaged in bfloat16 and the float32 shards step. The reference computes both halves the
    same way in one process."""
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
    ref, model = make_models(2, mesh, mp_policy=policy)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=0.02)
    n = BATCH // W
    for step in range(2):
        x, y, xs, ys = data(20 + step, rank, W)
        out = model(xs)
        assert out.dtype == torch.bfloat16
        mse(out, ys).backward()
        low = Model().to(torch.bfloat16)
        grads = []
        for r in range(W):
            low.load_state_dict({k: v.to(torch.bfloat16) for k, v in ref.state_dict().items()})
            low.zero_grad()
            mse(low(x[r * n:(r + 1) * n].to(torch.bfloat16)), y[r * n:(r + 1) * n]).backward()
            grads.append([p.grad.float() for p in low.parameters()])
        for p, *gs in zip(ref.parameters(), *grads):
            p.grad = (sum(gs) / W).to(torch.bfloat16).float()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            assert p.dtype == torch.float32 and p.grad.dtype == torch.float32, name
            close(p.grad.full_tensor(), q.grad, f"bf16 grad {name}, step {step}", atol=1e-6)
        opt.step()
        opt_ref.step()
        opt.zero_grad()
        opt_ref.zero_grad()
        check_params(model, ref, f"mixed precision step {step}")


def check_hsdp(rank, W):
    """2-D (replicate, shard) meshes, W x 1 and 1 x W: parameters (Replicate(), Shard(0)),
    gradients reduce-scattered over the shard dim and all-reduced over the replicate dim."""
    for shape in ((W, 1), (1, W)):
        mesh = init_device_mesh("cpu", shape, mesh_dim_names=("replicate", "shard"))
        ref, model = check_training(mesh, rank, W, 1)
        for name, p in model.named_parameters():
            assert p.placements == (Replicate(), Shard(0)), (name, p.placements)


def main():
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (W,))
    ref, model = check_training(mesh, rank, W, 3, prefetch=True)
    assert isinstance(model, FSDPModule) and type(model).__name__ == "FSDPModel"
    check_state_dict(model, ref, rank, W)
    check_resharding(model, W)
    check_training(mesh, rank, W, 2, reshard_after_forward=False)
    check_training(mesh, rank, W, 1, reshard_after_forward=True)
    check_grad_accumulation(mesh, rank, W)
    check_mixed_precision(mesh, rank, W)
    check_hsdp(rank, W)
    dist.barrier()
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

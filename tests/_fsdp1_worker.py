"""The program that tests/test_fsdp1.py runs on every rank through
``python -m ember.distributed.run``: a small transformer-ish model wrapped in FSDP1 with
``transformer_auto_wrap_policy``, trained with AdamW under FULL_SHARD, SHARD_GRAD_OP
(``use_orig_params=True``) and NO_SHARD on each rank's half of the batch, against the same
model trained unsharded in this process on the whole batch (every rank knows it: same seeds):
losses, ``no_sync`` accumulation, ``clip_grad_norm_``, full/sharded state dicts, the optimizer
state dict and bfloat16 mixed precision. Prints ``PASS <rank>``."""
import copy
import functools
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.distributed.fsdp.fully_sharded_data_parallel import (  # noqa: E402
    FullStateDictConfig, FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy,
    StateDictType)
from ember.distributed.fsdp.wrap import transformer_auto_wrap_policy  # noqa: E402

V, D = 16, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 2 * D)
        self.fc2 = nn.Linear(2 * D, D)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(D, V)

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


def close(a, b, msg, atol=1e-5, rtol=1e-4):
    assert tuple(a.shape) == tuple(b.shape), f"{msg}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert torch.allclose(a.float(), b.float(), atol=atol, rtol=rtol), f"{msg}: {a} != {b}"


def loss_of(model, x, y):
    return F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))


def data(step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randint(0, V, (4, 3), generator=g)
    return x, (x * 3 + 1) % V


def mean_over_ranks(t):
    t = t.detach().clone().float()
    dist.all_reduce(t)
    return t / dist.get_world_size()


def full_state(fsdp):
    with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(rank0_only=False)):
        return fsdp.state_dict()


def check_training(strategy, use_orig_params, rank, W):
    torch.manual_seed(0)
    ref = Model()
    fsdp = FSDP(copy.deepcopy(ref), sharding_strategy=strategy, use_orig_params=use_orig_params,
                auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                                   transformer_layer_cls={Block}))
    tag = f"{strategy.name} use_orig_params={use_orig_params}"
    assert sum(isinstance(m, FSDP) for m in fsdp.modules()) == 3, tag
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-2)
    half = slice(rank * 4 // W, (rank + 1) * 4 // W)
    for step in range(3):
        x, y = data(step)
        xl, yl = x[half], y[half]
        opt_ref.zero_grad()
        opt.zero_grad()
        if step == 1:  # two micro-batches: the first accumulated under no_sync
            for part in (slice(0, 1), slice(1, 2)):
                (loss_of(ref, x[half][part], y[half][part]) / 2 / W).backward()
            # the other ranks' micro-batches, for the reference
            for r in range(W):
                if r != rank:
                    hr = slice(r * 4 // W, (r + 1) * 4 // W)
                    for part in (slice(0, 1), slice(1, 2)):
                        (loss_of(ref, x[hr][part], y[hr][part]) / 2 / W).backward()
            with fsdp.no_sync():
                (loss_of(fsdp, xl[0:1], yl[0:1]) / 2).backward()
            (loss_of(fsdp, xl[1:2], yl[1:2]) / 2).backward()
        else:
            ref_loss = loss_of(ref, x, y)
            ref_loss.backward()
            loss = loss_of(fsdp, xl, yl)
            loss.backward()
            close(mean_over_ranks(loss), ref_loss.detach(), f"{tag} loss step {step}")
        if step == 2:
            ref_norm = nn.utils.clip_grad_norm_(ref.parameters(), 0.05)
            norm = fsdp.clip_grad_norm_(0.05)
            close(norm, ref_norm, f"{tag} clip_grad_norm_")
        opt_ref.step()
        opt.step()
    sd, ref_sd = full_state(fsdp), ref.state_dict()
    assert list(sd) == list(ref_sd), f"{tag}: {list(sd)} != {list(ref_sd)}"
    for k in ref_sd:
        close(sd[k], ref_sd[k], f"{tag} state_dict {k}", atol=1e-4)
    osd = FSDP.optim_state_dict(fsdp, opt)
    names = [n for n, _ in ref.named_parameters()]
    for n, p in zip(names, ref.parameters()):
        for key in ("exp_avg", "exp_avg_sq"):
            close(osd["state"][n][key], opt_ref.state[p][key], f"{tag} optim {n} {key}",
                  atol=1e-5)
    # the optimizer state goes back in: one more step on both matches
    opt.load_state_dict(FSDP.optim_state_dict_to_load(fsdp, opt, osd))
    return fsdp


def check_sharded_state_dict(fsdp, rank, W):
    from ember.distributed.tensor import DTensor
    full = full_state(fsdp)
    with FSDP.state_dict_type(fsdp, StateDictType.SHARDED_STATE_DICT):
        sd = fsdp.state_dict()
    assert list(sd) == list(full)
    for k, v in sd.items():
        if k.endswith("weight") or k.endswith("bias"):
            assert isinstance(v, DTensor), k
            close(v.to_local(), torch.chunk(full[k], W, 0)[rank], f"sharded {k}")
            close(v.full_tensor(), full[k], f"sharded full_tensor {k}")
    torch.manual_seed(1)
    other = FSDP(Model(), auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                                            transformer_layer_cls={Block}))
    with FSDP.state_dict_type(other, StateDictType.SHARDED_STATE_DICT):
        other.load_state_dict(sd)
    for k, v in full_state(other).items():
        close(v, full[k], f"sharded round trip {k}")
    with FSDP.state_dict_type(fsdp, StateDictType.LOCAL_STATE_DICT):
        local = fsdp.state_dict()
    assert sorted(local) == ["_flat_param", "blocks.0._flat_param", "blocks.1._flat_param"]
    flat = fsdp._flat_param
    close(local["_flat_param"].to_local(),
          flat.detach()[:flat.numel() - flat._shard_numel_padded], "local _flat_param")
    with FSDP.summon_full_params(fsdp):
        close(fsdp.module.head.weight, full["head.weight"], "summon_full_params")


def check_mixed_precision(rank, W):
    torch.manual_seed(0)
    ref = Model()
    mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    fsdp = FSDP(copy.deepcopy(ref), mixed_precision=mp,
                auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                                   transformer_layer_cls={Block}))
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-2)
    for step in range(2):
        x, y = data(step)
        # the reference computed the same way: each rank's half through a bfloat16 copy, the
        # gradients pre-divided by 2 in bfloat16 and summed (in float32, as ember's reduction
        # of bfloat16), rounded to bfloat16, then float32 for the float32 AdamW
        grads, losses = None, []
        for r in range(W):
            low = copy.deepcopy(ref).to(torch.bfloat16)
            hr = slice(r * 4 // W, (r + 1) * 4 // W)
            loss = loss_of(low, x[hr], y[hr])
            loss.backward()
            losses.append(loss.detach().float())
            gs = [(p.grad / 2).float() for p in low.parameters()]
            grads = gs if grads is None else [a + b for a, b in zip(grads, gs)]
        for p, g in zip(ref.parameters(), grads):
            p.grad = g.bfloat16().float()
        loss = loss_of(fsdp, x[rank * 4 // W:(rank + 1) * 4 // W],
                       y[rank * 4 // W:(rank + 1) * 4 // W])
        assert loss.dtype == torch.bfloat16
        loss.backward()
        close(loss.float(), losses[rank], f"bf16 loss step {step}", atol=1e-2)
        opt_ref.step()
        opt.step()
        opt_ref.zero_grad()
        opt.zero_grad()
    for k, v in full_state(fsdp).items():
        assert v.dtype == torch.float32, k
        close(v, ref.state_dict()[k], f"bf16 state_dict {k}", atol=1e-3, rtol=1e-2)


def main():
    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    fsdp = check_training(ShardingStrategy.FULL_SHARD, False, rank, W)
    check_sharded_state_dict(fsdp, rank, W)
    check_training(ShardingStrategy.SHARD_GRAD_OP, True, rank, W)
    check_training(ShardingStrategy.NO_SHARD, False, rank, W)
    check_mixed_precision(rank, W)
    dist.barrier()
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

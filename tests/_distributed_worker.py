"""The program that tests/test_distributed.py runs on every rank through
``python -m ember.distributed.run``: each check compares a collective (or DDP training) with the
result computed in this one process from every rank's known inputs. Prints ``PASS <rank>``."""
import os
import signal
import sys
import time
from datetime import timedelta

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def data(r, n=6, dtype=torch.float32):
    """Rank ``r``'s input: known to every rank, so each can compute the expected result."""
    return (torch.arange(n, dtype=torch.float64) * (r + 1) + r).to(dtype)


def eq(a, b, msg, atol=0.0):
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.numpy() if hasattr(b, "numpy") else np.asarray(b)
    assert a.shape == b.shape and np.allclose(a, b, atol=atol, rtol=0), f"{msg}: {a} != {b}"


def check_collectives(rank, W):
    Op = dist.ReduceOp
    every = [data(r) for r in range(W)]
    stacked = torch.stack(every)
    for op, ref in [(Op.SUM, stacked.sum(0)), (Op.AVG, stacked.mean(0)),
                    (Op.PRODUCT, stacked.prod(0)), (Op.MIN, stacked.amin(0)),
                    (Op.MAX, stacked.amax(0))]:
        t = data(rank)
        dist.all_reduce(t, op=op)
        eq(t, ref, f"all_reduce {op}", atol=1e-5)
    ints = [data(r, dtype=torch.int64) for r in range(W)]
    for op, f in [(Op.BAND, np.bitwise_and), (Op.BOR, np.bitwise_or),
                  (Op.BXOR, np.bitwise_xor)]:
        t = data(rank, dtype=torch.int64)
        dist.all_reduce(t, op=op)
        eq(t, f.reduce(np.stack([i.numpy() for i in ints])), f"all_reduce {op}")
    # non-contiguous, bfloat16, bool
    base = torch.zeros(6, 2)
    nc = base[:, 0]
    nc.copy_(data(rank))
    dist.all_reduce(nc)
    eq(base[:, 0], stacked.sum(0), "all_reduce of a non-contiguous tensor")
    eq(base[:, 1], torch.zeros(6), "all_reduce wrote outside its view")
    bf = data(rank, dtype=torch.bfloat16)
    dist.all_reduce(bf)
    eq(bf.float(), stacked.sum(0).bfloat16().float(), "all_reduce bfloat16", atol=0.5)
    b = torch.tensor([rank == 0, False])
    dist.all_reduce(b)
    eq(b, torch.tensor([True, False]), "all_reduce bool")

    # async: Work owns its buffers; the future chains
    t = data(rank)
    w = dist.all_reduce(t, async_op=True)
    fut = w.get_future().then(lambda f: f.value()[0] * 2)
    eq(fut.wait(), stacked.sum(0) * 2, "future.then")
    assert w.is_completed()
    w.wait()

    src = W - 1
    t = data(rank)
    dist.broadcast(t, src=src)
    eq(t, every[src], "broadcast")
    t = data(rank)
    dist.reduce(t, dst=src, op=Op.MAX)
    if rank == src:
        eq(t, stacked.amax(0), "reduce")
    outs = [torch.empty(6) for _ in range(W)]
    dist.all_gather(outs, data(rank))
    eq(torch.stack(outs), stacked, "all_gather")
    out = torch.empty(W * 6)
    dist.all_gather_into_tensor(out, data(rank))
    eq(out, stacked.reshape(-1), "all_gather_into_tensor")
    g = [torch.empty(6) for _ in range(W)] if rank == 0 else None
    dist.gather(data(rank), g, dst=0)
    if rank == 0:
        eq(torch.stack(g), stacked, "gather")
    t = torch.empty(6)
    dist.scatter(t, [data(r) * 10 for r in range(W)] if rank == 0 else None, src=0)
    eq(t, data(rank) * 10, "scatter")
    # reduce_scatter: rank r contributes data(r) + j to chunk j
    t = torch.empty(6)
    dist.reduce_scatter(t, [data(rank) + j for j in range(W)])
    eq(t, stacked.sum(0) + W * rank, "reduce_scatter")
    t = torch.empty(6)
    dist.reduce_scatter_tensor(t, torch.cat([data(rank) + j for j in range(W)]))
    eq(t, stacked.sum(0) + W * rank, "reduce_scatter_tensor")
    # all_to_all: rank r sends 100*r + j to rank j
    outs = [torch.empty(2) for _ in range(W)]
    dist.all_to_all(outs, [torch.full((2,), 100.0 * rank + j) for j in range(W)])
    eq(torch.stack(outs), torch.stack([torch.full((2,), 100.0 * r + rank) for r in range(W)]),
       "all_to_all")
    # all_to_all_single with uneven splits: rank r sends j+1 rows to rank j
    inp = torch.cat([torch.full((j + 1, 2), 10.0 * rank + j) for j in range(W)])
    out = torch.empty(W * (rank + 1), 2)
    dist.all_to_all_single(out, inp, [rank + 1] * W, [j + 1 for j in range(W)])
    eq(out, torch.cat([torch.full((rank + 1, 2), 10.0 * r + rank) for r in range(W)]),
       "all_to_all_single")

    # point to point: a ring
    nxt, prv = (rank + 1) % W, (rank - 1) % W
    t = torch.empty(6)
    if rank % 2 == 0:
        dist.send(data(rank), nxt)
        got = dist.recv(t, prv)
    else:
        got = dist.recv(t, prv)
        dist.send(data(rank), nxt)
    assert got == prv
    eq(t, every[prv], "send/recv")
    t = torch.empty(6)
    works = [dist.isend(data(rank), nxt), dist.irecv(t, prv)]
    for w in works:
        w.wait()
    eq(t, every[prv], "isend/irecv")
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)

    # objects
    objs = [{"rank": rank, "s": "x" * rank}] if rank == 0 else [None]
    dist.broadcast_object_list(objs, src=0)
    assert objs[0] == {"rank": 0, "s": ""}
    got = [None] * W
    dist.all_gather_object(got, ("obj", rank))
    assert got == [("obj", r) for r in range(W)], got
    got = [None] * W if rank == 0 else None
    dist.gather_object([rank] * rank, got, dst=0)
    if rank == 0:
        assert got == [[r] * r for r in range(W)]

    # a subgroup of ranks 0 and 1
    sub = dist.new_group([0, 1])
    t = data(rank)
    dist.all_reduce(t, group=sub)
    if rank <= 1:
        eq(t, every[0] + every[1], "all_reduce on new_group([0, 1])")
        assert dist.get_world_size(sub) == 2 and dist.get_rank(sub) == rank
    else:
        eq(t, every[rank], "a non-member's tensor is untouched")

    # tensors of different sizes: every rank raises, naming each rank's size
    try:
        dist.all_reduce(torch.ones(3 + rank))
        raise AssertionError("a size mismatch passed")
    except RuntimeError as e:
        assert "rank 0: 3" in str(e) and "rank 1: 4" in str(e), str(e)


def mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3))


def mse_steps(model, x, y, steps):
    """``steps`` of SGD (lr 0.1) on the mean squared error; returns the model."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def mlp_data(rank, W):
    """The full batch every rank knows, and this rank's shard of it."""
    B = 4 * W
    torch.manual_seed(123)
    X, Y = torch.randn(B, 5), torch.randn(B, 3)
    return X, Y, slice(rank * (B // W), (rank + 1) * (B // W))


def check_ddp(rank, W):
    X, Y, shard = mlp_data(rank, W)
    lo, hi = shard.start, shard.stop
    B = 4 * W
    ref = mse_steps(mlp(0), X, Y, 5)  # reference: one process, full batch

    # DDP from a different initialization on each rank (rank 0's wins); tiny buckets so that
    # there are several, launched while backward goes on, and rebuilt after step 1
    for cap, hook in [(None, None), (0.0005, None), (0.0005, "fp16")]:
        dist._DEFAULT_FIRST_BUCKET_BYTES = 256 if cap else 1024 * 1024
        model = DDP(mlp(rank + 7), bucket_cap_mb=cap)
        if hook:
            from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
            model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        if cap:
            assert len(model._buckets) > 1
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        # start from the reference's initial weights
        with torch.no_grad():
            for p, q in zip(model.module.parameters(), mlp(0).parameters()):
                p.copy_(q)
        for _ in range(5):
            opt.zero_grad()
            nn.functional.mse_loss(model(X[lo:hi]), Y[lo:hi]).backward()
            opt.step()
        assert model._rebuilt
        tol = 1e-3 if hook else 1e-6
        for (n, p), q in zip(model.module.named_parameters(), ref.parameters()):
            eq(p.detach(), q.detach(), f"DDP(bucket_cap_mb={cap}, hook={hook}) {n}", atol=tol)

    # no_sync: two micro-batches accumulated locally, the third synchronizes the sum
    model = DDP(mlp(0))
    full = mlp(0)
    micro = [(torch.randn(2 * W, 5), torch.randn(2 * W, 3)) for _ in range(3)]
    for xk, yk in micro:
        nn.functional.mse_loss(full(xk), yk).backward()
    for k, (xk, yk) in enumerate(micro):
        shard = slice(2 * rank, 2 * rank + 2)
        if k < 2:
            with model.no_sync():
                nn.functional.mse_loss(model(xk[shard]), yk[shard]).backward()
        else:
            nn.functional.mse_loss(model(xk[shard]), yk[shard]).backward()
    for p, q in zip(model.module.parameters(), full.parameters()):
        eq(p.grad, q.grad, "no_sync accumulation", atol=1e-6)

    # find_unused_parameters: a branch only rank 0 uses; the never-used one keeps grad None
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.never = nn.Linear(5, 3), nn.Linear(5, 3), nn.Linear(5, 3)

        def forward(self, x, use_b):
            return self.a(x) + (self.b(x) if use_b else 0)

    torch.manual_seed(1)
    m = Branchy()
    model = DDP(m, find_unused_parameters=True)
    model(X[lo:hi], rank == 0).sum().backward()
    assert m.never.weight.grad is None
    ref_b = X[0:B // W].sum(0)  # only rank 0's batch drives b: its average over ranks
    eq(m.b.weight.grad, (torch.ones(3, 1) * ref_b) / W, "grad of a locally unused parameter",
       atol=1e-5)

    # an unused parameter without find_unused_parameters: the next forward names it (from
    # debug level INFO on; at OFF, its index)
    torch.manual_seed(1)
    model = DDP(Branchy())
    model(X[lo:hi], True).sum().backward()
    dist.set_debug_level(dist.DebugLevel.INFO)
    try:
        model(X[lo:hi], True)
        raise AssertionError("no error for an unused parameter")
    except RuntimeError as e:
        assert "Expected to have finished reduction" in str(e), str(e)
        assert f"did not receive grad for rank {rank}: never.bias, never.weight" in str(e), str(e)
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)

    # SyncBatchNorm: the statistics of the whole batch
    torch.manual_seed(5)
    xb = torch.randn(B, 4, 3)
    bn = nn.BatchNorm1d(4)
    sbn = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(4)))
    xr = xb.clone().requires_grad_(True)
    (bn(xr) * torch.arange(3.0)).sum().backward()
    xs = xb[lo:hi].clone().requires_grad_(True)
    (sbn(xs) * torch.arange(3.0)).sum().backward()
    eq(sbn[0].running_mean, bn.running_mean, "SyncBatchNorm running_mean", atol=1e-6)
    eq(sbn[0].running_var, bn.running_var, "SyncBatchNorm running_var", atol=1e-6)
    eq(xs.grad, xr.grad[lo:hi], "SyncBatchNorm input gradient", atol=1e-5)


def check_ddp_gpt(rank, W):
    """The GPT of examples/train_gpt.py, 5 steps with clipping: DDP over the ranks' shards of the
    batch equals one process on the whole batch. SGD with momentum, not the example's AdamW:
    the attention's key bias has a gradient that is zero up to rounding, and Adam scales any
    rounding difference up to a full learning-rate step, in PyTorch as here."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), "examples"))
    from train_gpt import GPT
    B, T, V = 2 * W, 16, 65
    torch.manual_seed(11)
    X, Y = torch.randint(V, (B, T)), torch.randint(V, (B, T))
    lo, hi = rank * (B // W), (rank + 1) * (B // W)

    def train(model, x, y):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
        for _ in range(5):
            _, loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        return model

    def fresh(seed):
        torch.manual_seed(seed)
        return GPT(V, context=T, width=32, n_layer=2, n_head=4)

    ref = train(fresh(0), X, Y)
    model = DDP(fresh(rank + 3))  # rank 0's weights win at construction
    with torch.no_grad():
        for p, q in zip(model.module.parameters(), fresh(0).parameters()):
            p.copy_(q)
    train(model, X[lo:hi], Y[lo:hi])
    for (n, p), q in zip(model.module.named_parameters(), ref.parameters()):
        eq(p.detach(), q.detach(), f"DDP GPT {n}", atol=1e-6)


def check_cuda(rank, W):
    """Collectives and DDP on CUDA tensors (through host memory, as PyTorch's gloo does them;
    the launcher's environment gives each rank the simulated device in CI)."""
    t = torch.full((5,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    assert t.is_cuda
    eq(t.cpu(), torch.full((5,), float(sum(range(1, W + 1)))), "all_reduce of a CUDA tensor")
    out = torch.empty(W * 3, device="cuda")
    dist.all_gather_into_tensor(out, torch.full((3,), float(rank), device="cuda"))
    eq(out.cpu(), torch.arange(W).repeat_interleave(3).float(), "all_gather_into_tensor (cuda)")
    X, Y, shard = mlp_data(rank, W)
    ref = mse_steps(mlp(0), X, Y, 3)
    model = mse_steps(DDP(mlp(0).cuda()), X[shard].cuda(), Y[shard].cuda(), 3)
    for (n, p), q in zip(model.module.named_parameters(), ref.parameters()):
        assert p.is_cuda
        eq(p.detach().cpu(), q.detach(), f"DDP on cuda {n}", atol=1e-6)


def main():
    """argv: the checks, then how the run ends: ``kill`` (rank 1 is killed inside a collective:
    the launcher must stop the job and fail) or ``leave`` (the last rank exits quietly: the
    others' collective times out naming it)."""
    end = sys.argv[1]
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and W == int(os.environ["WORLD_SIZE"])
    check_collectives(rank, W)
    check_ddp(rank, W)
    check_ddp_gpt(rank, W)
    if torch.cuda.is_available():
        check_cuda(rank, W)
    print(f"PASS {rank}", flush=True)
    if end == "kill":
        if rank == 1:
            time.sleep(0.5)  # rank 0 is waiting in the all_reduce by now
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(torch.ones(4))
        print(f"rank {rank} finished a collective without rank 1", flush=True)
    elif end == "leave":
        short = dist.new_group(list(range(W)), timeout=timedelta(seconds=1))
        alive = dist.new_group(list(range(W - 1)))
        dist.barrier()
        if rank == W - 1:
            os._exit(0)
        time.sleep(0.3)
        try:
            dist.all_reduce(torch.ones(4), group=short)
            print(f"rank {rank}: no timeout", flush=True)
        except dist.DistBackendError as e:
            print(f"TIMEOUT {rank}: {e}", flush=True)
        dist.barrier(group=alive)  # rank 0 hosts the store: it stays until all have asked it
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""The program that tests/test_dtensor.py runs on every rank through
``python -m ember.distributed.run``: DTensor layouts, redistribution, a tensor-parallel MLP with
its optimizer steps, and the functional collectives, each compared with what this one process
computes from the global tensors (every rank knows them: same seeds). Prints ``PASS <rank>``."""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.distributed._functional_collectives as funcol  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.distributed.device_mesh import init_device_mesh  # noqa: E402
from ember.distributed.tensor import (DTensor, Partial, Replicate, Shard,  # noqa: E402
                                      distribute_tensor)
from ember.distributed.tensor.placement_types import _StridedShard  # noqa: E402


def close(a, b, msg, atol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), f"{msg}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert torch.allclose(a, b, atol=atol, rtol=1e-5), f"{msg}: {a} != {b}"


def chunk(t, n, dim, i):
    """Rank ``i``'s piece under torch.chunk's rule (empty past the last chunk)."""
    pieces = torch.chunk(t, n, dim=dim)
    if i < len(pieces):
        return pieces[i]
    shape = list(t.shape)
    shape[dim] = 0
    return t.new_zeros(shape)


def check_layouts(mesh, rank, W):
    for shape in ((4, 6), (5, 3), (1, 3)):  # even, uneven, fewer rows than ranks
        full = torch.arange(float(shape[0] * shape[1])).reshape(shape)
        for dim in (0, 1):
            d = distribute_tensor(full, mesh, [Shard(dim)])
            close(d.to_local(), chunk(full, W, dim, rank), f"local shard {shape} S({dim})")
            assert d.shape == full.shape and d.stride() == full.stride()
            close(d.full_tensor(), full, f"full_tensor {shape} S({dim})")
            close(d.redistribute(mesh, [Replicate()]).to_local(), full, f"S({dim})->R {shape}")
            other = d.redistribute(mesh, [Shard(1 - dim)])
            close(other.to_local(), chunk(full, W, 1 - dim, rank),
                  f"S({dim})->S({1 - dim}) {shape}")
        r = distribute_tensor(full, mesh, [Replicate()])
        close(r.redistribute(mesh, [Shard(0)]).to_local(), chunk(full, W, 0, rank),
              f"R->S(0) {shape}")
        # Partial: rank r holds (r + 1) * full; the reduction is the sum over ranks
        p = DTensor.from_local(full * (rank + 1), mesh, [Partial()])
        total = full * sum(range(1, W + 1))
        close(p.redistribute(mesh, [Replicate()]).to_local(), total, f"P->R {shape}")
        close(p.redistribute(mesh, [Shard(0)]).to_local(), chunk(total, W, 0, rank),
              f"P->S(0) (reduce-scatter) {shape}")
        avg = DTensor.from_local(full * (rank + 1), mesh, [Partial("avg")])
        close(avg.full_tensor(), total / W, f"P(avg)->R {shape}")
    # src_data_rank: rank 0's tensor is the source of truth
    mine = torch.full((4, 2), float(rank))
    close(distribute_tensor(mine, mesh, [Replicate()]).to_local(), torch.zeros(4, 2),
          "distribute_tensor broadcasts from rank 0")
    close(distribute_tensor(mine, mesh, [Replicate()], src_data_rank=None).to_local(), mine,
          "src_data_rank=None keeps the local tensor")
    # from_local(run_check=True) broadcasts replicas
    close(DTensor.from_local(mine, mesh, [Replicate()], run_check=True).to_local(),
          torch.zeros(4, 2), "from_local run_check broadcast")


def check_autograd(mesh, rank, W):
    torch.manual_seed(1)
    full, w = torch.randn(6, 4), torch.randn(6, 4)
    x = distribute_tensor(full, mesh, [Shard(0)]).requires_grad_()
    y = x.redistribute(mesh, [Replicate()]).to_local()
    (y * w).sum().backward()
    assert x.grad.placements == (Shard(0),)
    close(x.grad.to_local(), chunk(w, W, 0, rank), "grad through redistribute S->R")
    # from_local / to_local: Partial forward, Replicate gradient
    local = torch.ones(3, requires_grad=True)
    p = DTensor.from_local(local, mesh, [Partial()])
    (p.full_tensor() * torch.arange(3.0)).sum().backward()
    close(local.grad, torch.arange(3.0), "grad through from_local(Partial)")
    # cross-entropy over a batch-sharded input: Partial(avg) loss, sharded gradient
    logits, target = torch.randn(4 * W, 5), torch.randint(0, 5, (4 * W,))
    x = distribute_tensor(logits, mesh, [Shard(0)]).requires_grad_()
    loss = torch.nn.functional.cross_entropy(x, distribute_tensor(target, mesh, [Shard(0)]))
    assert loss.placements == (Partial("avg"),), loss.placements
    ref = logits.clone().requires_grad_()
    ref_loss = torch.nn.functional.cross_entropy(ref, target)
    close(loss.full_tensor(), ref_loss, "batch-sharded cross_entropy")
    loss.backward()
    ref_loss.backward()
    close(x.grad.full_tensor(), ref.grad, "batch-sharded cross_entropy backward")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(6, 8)
        self.down = nn.Linear(8, 5)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def check_mlp(mesh, rank, W):
    """Column-parallel then row-parallel Linear (Megatron): forward, backward and optimizer
    steps equal the single-process model's."""
    for make_opt in (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                     lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=False),
                     lambda ps: torch.optim.AdamW(ps, lr=0.05),
                     lambda ps: torch.optim.AdamW(ps, lr=0.05, foreach=False)):
        torch.manual_seed(0)
        ref = MLP()
        tp = MLP()
        tp.load_state_dict(ref.state_dict())
        layout = {"up.weight": [Shard(0)], "up.bias": [Shard(0)],
                  "down.weight": [Shard(1)], "down.bias": [Replicate()]}
        for name, param in list(tp.named_parameters()):
            mod, attr = name.split(".")
            setattr(getattr(tp, mod), attr,
                    nn.Parameter(distribute_tensor(param.detach(), mesh, layout[name])))
        opt_ref, opt_tp = make_opt(ref.parameters()), make_opt(tp.parameters())
        for step in range(2):
            x = torch.randn(4, 6)
            target = torch.randn(4, 5)
            out = tp(DTensor.from_local(x, mesh, [Replicate()]))
            assert out.placements == (Partial(),), out.placements
            loss = ((out.full_tensor() - target) ** 2).mean()
            ref_loss = ((ref(x) - target) ** 2).mean()
            close(loss, ref_loss, f"TP MLP loss, step {step}")
            opt_tp.zero_grad()
            opt_ref.zero_grad()
            loss.backward()
            ref_loss.backward()
            for (name, p), q in zip(tp.named_parameters(), ref.parameters()):
                assert p.grad.placements == tuple(layout[name]), (name, p.grad.placements)
                close(p.grad.full_tensor(), q.grad, f"TP MLP grad {name}, step {step}")
            # gradient clipping: the norm of sharded gradients is a _NormPartial, reduced
            norm = nn.utils.clip_grad_norm_(tp.parameters(), 0.5)
            close(norm.full_tensor(), nn.utils.clip_grad_norm_(ref.parameters(), 0.5),
                  f"clip_grad_norm_, step {step}")
            for p, q in zip(tp.parameters(), ref.parameters()):
                close(p.grad.full_tensor(), q.grad, f"clipped grad, step {step}")
            opt_tp.step()
            opt_ref.step()
            for (name, p), q in zip(tp.named_parameters(), ref.parameters()):
                assert p.placements == tuple(layout[name])
                close(p.full_tensor(), q.detach(), f"{type(opt_tp).__name__} {name}, step {step}")


def check_functional_collectives(mesh, rank, W):
    group = dist.group.WORLD
    t = torch.arange(4.0) + rank
    every = torch.stack([torch.arange(4.0) + r for r in range(W)])
    close(funcol.all_reduce(t, "sum", group), every.sum(0), "funcol.all_reduce sum")
    close(funcol.all_reduce(t, "avg", mesh), every.mean(0), "funcol.all_reduce avg (mesh)")
    close(funcol.all_reduce(t, "max", (mesh, 0)), every.amax(0), "funcol.all_reduce max")
    assert funcol.wait_tensor(t) is t
    x = torch.arange(6.0).reshape(2, 3) + 10 * rank
    xs = [torch.arange(6.0).reshape(2, 3) + 10 * r for r in range(W)]
    close(funcol.all_gather_single(x, 0, group), torch.cat(xs, 0), "all_gather dim 0")
    with warnings.catch_warnings(record=True):
        close(funcol.all_gather_tensor(x, 1, group), torch.cat(xs, 1), "all_gather dim 1")
    y = torch.arange(float(2 * W * 3)).reshape(2 * W, 3) * (rank + 1)
    ys = sum(torch.arange(float(2 * W * 3)).reshape(2 * W, 3) * (r + 1) for r in range(W))
    close(funcol.reduce_scatter_single(y, "sum", 0, group), chunk(ys, W, 0, rank),
          "reduce_scatter dim 0")
    # all_to_all_single with uneven splits: rank r sends r + j + 1 rows to rank j
    send = [r + j + 1 for j in range(W) for r in [rank]]
    rows = torch.arange(float(sum(send))) + 100 * rank
    recv = [r + rank + 1 for r in range(W)]
    out = funcol.all_to_all_single(rows, recv, send, group)
    expected = []
    for r in range(W):
        sent = [r + j + 1 for j in range(W)]
        start = sum(sent[:rank])
        expected.append(torch.arange(float(sum(sent)))[start:start + sent[rank]] + 100 * r)
    close(out, torch.cat(expected), "all_to_all_single uneven")
    # the autograd version: the gradient goes back along the reverse all-to-all
    z = (torch.arange(float(2 * W)) + rank).requires_grad_()
    out = funcol.all_to_all_single_autograd(z, None, None, group)
    (out * (torch.arange(float(2 * W)) + 1)).sum().backward()
    weights = (torch.arange(float(2 * W)) + 1).reshape(W, 2)
    close(z.grad, weights[rank].repeat(W), "all_to_all_single_autograd backward")
    # all_gather's backward is a reduce-scatter of the gradient
    g = torch.ones(2, requires_grad=True)
    funcol.all_gather_single(g, 0, group).sum().backward()
    close(g.grad, torch.full((2,), float(W)), "all_gather backward")


def check_2d(rank):
    """A 2 x 2 mesh: sub-meshes, nested and strided sharding."""
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    assert mesh.get_coordinate() == (rank // 2, rank % 2)
    assert dist.get_process_group_ranks(mesh.get_group("tp")) == [rank // 2 * 2,
                                                                   rank // 2 * 2 + 1]
    assert dist.get_process_group_ranks(mesh["dp"].get_group()) == [rank % 2, rank % 2 + 2]
    assert mesh["tp"].get_local_rank() == rank % 2
    full = torch.arange(48.0).reshape(8, 6)
    for placements in ([Shard(0), Shard(1)], [Shard(0), Shard(0)], [Replicate(), Shard(1)],
                       [_StridedShard(0, split_factor=2), Shard(0)]):
        d = distribute_tensor(full, mesh, placements)
        close(d.full_tensor(), full, f"2-D full_tensor {placements}")
        close(d.redistribute(mesh, [Shard(1), Replicate()]).to_local(),
              chunk(full, 2, 1, rank // 2), f"2-D redistribute {placements}")
    # [Shard(0), Shard(0)] rows by rank: 0, 1, 2, 3; strided (FSDP over TP): 0, 2, 1, 3
    nested = distribute_tensor(full, mesh, [Shard(0), Shard(0)]).to_local()
    close(nested, chunk(full, 4, 0, rank), "nested Shard(0), Shard(0)")
    strided = distribute_tensor(full, mesh, [_StridedShard(0, split_factor=2), Shard(0)])
    close(strided.to_local(), chunk(full, 4, 0, [0, 2, 1, 3][rank]), "_StridedShard rows")
    # partial over dp, sharded over tp: a sum on both dims
    p = DTensor.from_local(torch.ones(2, 3) * (rank + 1), mesh, [Partial(), Shard(0)])
    expect = torch.cat([torch.full((2, 3), float(1 + 3)), torch.full((2, 3), float(2 + 4))])
    close(p.full_tensor(), expect, "2-D Partial + Shard")
    flat = mesh["dp", "tp"]._flatten("dp_tp")
    assert flat.get_coordinate() == (rank,) and flat.size() == 4
    assert dist.get_process_group_ranks(flat.get_group()) == [0, 1, 2, 3]
    with warnings.catch_warnings(record=True):
        assert mesh["dp_tp"] == flat


def main():
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    if W == 4:
        check_2d(rank)
    else:
        mesh = init_device_mesh("cpu", (W,), mesh_dim_names=("tp",))
        check_layouts(mesh, rank, W)
        check_autograd(mesh, rank, W)
        check_mlp(mesh, rank, W)
        check_functional_collectives(mesh, rank, W)
    dist.barrier()
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

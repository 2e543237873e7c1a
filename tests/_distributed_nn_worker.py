"""The program that tests/test_distributed_nn.py runs on 2 ranks through
``python -m ember.distributed.run``: the differentiable collectives of
``ember.distributed.nn`` (outputs and gradients, against the same math computed here on every
rank's known inputs), ZeroRedundancyOptimizer (its partition, training under DDP against a plain
optimizer over the whole batch, consolidate_state_dict / state_dict / load_state_dict, uneven
inputs under Join), the module-state helpers of ``ember.distributed.utils``, and model
averaging. Prints ``PASS <rank>``."""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.distributed.nn as dnn  # noqa: E402
from ember.distributed.algorithms.join import Join  # noqa: E402
from ember.distributed.algorithms.model_averaging import averagers  # noqa: E402
from ember.distributed.algorithms.model_averaging.hierarchical_model_averager import (  # noqa: E402,E501
    HierarchicalModelAverager)
from ember.distributed.optim import PostLocalSGDOptimizer, ZeroRedundancyOptimizer  # noqa: E402
from ember.distributed.utils import (_sync_module_states,  # noqa: E402
                                     _verify_param_shape_across_processes)
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

W = 2


def close(a, b, msg, atol=1e-6):
    assert a.shape == b.shape and torch.allclose(a, b, atol=atol, rtol=1e-5), \
        f"{msg}:\n{a}\n!=\n{b}"


def inputs(r, shapes):
    """Rank ``r``'s inputs, known to every rank."""
    return [(torch.arange(torch.Size(s).numel(), dtype=torch.float32).reshape(s) * (r + 1)
             + 10 * i + r) for i, s in enumerate(shapes)]


def weights(r, outs):
    """Rank ``r``'s loss weights for its outputs: its loss is ``sum((w * out).sum())``."""
    return [torch.arange(o.numel(), dtype=torch.float32).reshape(o.shape) * 0.5 - r + i
            for i, o in enumerate(outs)]


def check_collective(rank, name, shapes, run, reference, compare_out=None):
    """``run(my inputs)`` on every rank against ``reference(every rank's inputs)`` (each
    rank's outputs, in one process): the outputs (those ``compare_out(rank)`` allows), and the
    gradients of the sum of every rank's loss with respect to this rank's inputs."""
    mine = [t.requires_grad_() for t in inputs(rank, shapes)]
    outs = run(mine)
    ws = weights(rank, outs)
    sum((w * o).sum() for w, o in zip(ws, outs)).backward()
    every = [[t.requires_grad_() for t in inputs(r, shapes)] for r in range(W)]
    ref_outs = reference(every)
    total = 0
    for r in range(W):
        total = total + sum((w * o).sum() for w, o in zip(weights(r, ref_outs[r]), ref_outs[r]))
    total.backward()
    if compare_out is None or compare_out(rank):
        for i, (o, e) in enumerate(zip(outs, ref_outs[rank])):
            close(o.detach(), e.detach(), f"{name}: output {i}")
    for i, (x, e) in enumerate(zip(mine, every[rank])):
        expected = e.grad if e.grad is not None else torch.zeros_like(e)
        close(x.grad, expected, f"{name}: gradient of input {i}")


def check_functional(rank):
    warnings.simplefilter("ignore", FutureWarning)
    s = [(2, 3)]
    check_collective(rank, "all_reduce", s, lambda x: [dnn.all_reduce(x[0])],
                     lambda ev: [[ev[0][0] + ev[1][0]]] * W)
    check_collective(rank, "all_reduce AVG", s,
                     lambda x: [dnn.all_reduce(x[0], op=dist.ReduceOp.AVG)],
                     lambda ev: [[(ev[0][0] + ev[1][0]) / 2]] * W)
    check_collective(rank, "broadcast", s, lambda x: [dnn.broadcast(x[0], 1)],
                     lambda ev: [[ev[1][0]]] * W)
    # reduce: only dst's output is defined, so only dst's loss counts
    check_collective(rank, "reduce", s, lambda x: [dnn.reduce(x[0], 1) * float(rank == 1)],
                     lambda ev: [[ev[0][0] * 0.0], [ev[0][0] + ev[1][0]]])
    # gather: dst holds every rank's tensor, the others zeros
    check_collective(rank, "gather", s, lambda x: list(dnn.gather(x[0], dst=0)),
                     lambda ev: [[ev[0][0], ev[1][0]],
                                 [torch.zeros(2, 3), torch.zeros(2, 3)]])
    # scatter from 1: rank r gets rank 1's r-th tensor (rank 0's tensors are only shapes)
    check_collective(rank, "scatter", [(2, 3), (2, 3)], lambda x: [dnn.scatter(x, src=1)],
                     lambda ev: [[ev[1][0]], [ev[1][1]]])
    check_collective(rank, "all_gather", s, lambda x: list(dnn.all_gather(x[0])),
                     lambda ev: [[ev[0][0], ev[1][0]]] * W)
    check_collective(rank, "_all_gather_base", s,
                     lambda x: [dnn.functional._all_gather_base(torch.empty(4, 3), x[0])],
                     lambda ev: [[torch.cat([ev[0][0], ev[1][0]])]] * W)
    check_collective(rank, "reduce_scatter", [(3,), (3,)],
                     lambda x: [dnn.reduce_scatter(torch.empty(3), x)],
                     lambda ev: [[ev[0][r] + ev[1][r]] for r in range(W)])
    # all_to_all: rank r's i-th input goes to rank i's r-th output (equal sizes)
    check_collective(rank, "all_to_all", [(2,), (2,)],
                     lambda x: list(dnn.all_to_all([torch.empty(2), torch.empty(2)], x)),
                     lambda ev: [[ev[0][i], ev[1][i]] for i in range(W)])
    # all_to_all_single with uneven splits: rank 0 sends 1 row to 0 and 3 to 1, rank 1 sends
    # 2 and 2
    splits_in = [[1, 3], [2, 2]]
    splits_out = [[splits_in[0][r], splits_in[1][r]] for r in range(W)]
    check_collective(
        rank, "all_to_all_single", [(4, 2)],
        lambda x: [dnn.all_to_all_single(torch.empty(sum(splits_out[rank]), 2), x[0],
                                         splits_out[rank], splits_in[rank])],
        lambda ev: [[torch.cat([ev[k][0].split(splits_in[k])[r] for k in range(W)])]
                    for r in range(W)])
    # a subgroup whose only rank is 1: src/dst are global ranks
    solo, _ = dist.new_subgroups(1)
    x = torch.full((2,), float(rank + 1), requires_grad=True)
    y = dnn.broadcast(x, rank, group=solo)
    (y * 3).sum().backward()
    close(y.detach(), x.detach(), "broadcast on a subgroup")
    close(x.grad, torch.full((2,), 3.0), "broadcast's gradient on a subgroup")


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))


def batch():
    torch.manual_seed(123)
    return torch.randn(8, 5), torch.randn(8, 3)


def train(step_model, opt, x, y, steps=3):
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(step_model(x), y).backward()
        opt.step()


def check_zero(rank):
    X, Y = batch()
    shard = slice(4 * rank, 4 * rank + 4)
    # the whole batch with a plain Adam: the reference
    ref = model(0)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.05, weight_decay=0.01)
    train(ref, ref_opt, X, Y)
    for bucket_view in (False, True):
        m = model(0)
        ddp = DDP(m)
        opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.Adam,
                                      parameters_as_bucket_view=bucket_view, lr=0.05,
                                      weight_decay=0.01)
        # PyTorch's partition: largest first, each to the rank with the fewest elements so
        # far: 20 -> 0, 12 -> 1, 4 -> 1, 3 -> 1
        w1, b1, w2, b2 = m.parameters()
        part = opt._partition_parameters()
        assert [[id(p) for p in g["params"]] for g in (part[0][0], part[1][0])] == \
            [[id(w1)], [id(w2), id(b1), id(b2)]], part
        mine = part[rank][0]["params"]
        assert [id(p) for p in opt.optim.param_groups[0]["params"]] == [id(p) for p in mine]
        train(ddp, opt, X[shard], Y[shard])
        for (n, p), q in zip(m.named_parameters(), ref.parameters()):
            close(p.detach(), q.detach(), f"ZeRO (bucket view {bucket_view}) {n}", atol=1e-6)
        # only this rank's part has optimizer state
        assert {id(p) for p in opt.optim.state} == {id(p) for p in mine}
    # the consolidated state is the plain optimizer's, on the rank it was sent to
    opt.consolidate_state_dict(to=1)
    if rank == 0:
        try:
            opt.state_dict()
            raise AssertionError("state_dict() without a consolidated state")
        except RuntimeError as e:
            assert "Please call `consolidate_state_dict(to=0)` on all ranks" in str(e), e
        sd = None
    else:
        sd = opt.state_dict()
        expected = ref_opt.state_dict()
        assert sd["param_groups"] == expected["param_groups"], (sd["param_groups"],
                                                                expected["param_groups"])
        assert sorted(sd["state"]) == sorted(expected["state"]) == [0, 1, 2, 3]
        for i, st in expected["state"].items():
            for k, v in st.items():
                close(sd["state"][i][k], v, f"consolidated state {i} {k}", atol=1e-6)
    box = [sd]
    dist.broadcast_object_list(box, src=1)
    sd = box[0]
    # load it into a fresh ZeRO over a copy of the trained model: its next steps are the
    # plain optimizer's
    fresh = model(1)
    fresh.load_state_dict(m.state_dict())
    opt2 = ZeroRedundancyOptimizer(fresh.parameters(), optimizer_class=torch.optim.Adam, lr=1.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.05 and opt2.optim.param_groups[0]["lr"] == 0.05
    assert sd["state"][0 if rank == 1 else 1] is None  # the other rank's entries are cleared
    train(DDP(fresh), opt2, X[shard], Y[shard], steps=2)
    train(ref, ref_opt, X, Y, steps=2)
    for (n, p), q in zip(fresh.named_parameters(), ref.parameters()):
        close(p.detach(), q.detach(), f"ZeRO after load_state_dict {n}", atol=1e-5)
    # add_param_group: the new group is partitioned after the others (20 on rank 0 and 19 on
    # rank 1 so far: the new parameter goes to rank 1); rank 0's local optimizer gets an
    # empty group, as in PyTorch
    extra = torch.nn.Parameter(torch.ones(30))
    opt2.add_param_group({"params": [extra], "lr": 0.5})
    part = opt2._partition_parameters()
    assert [[id(p) for p in part[r][1]["params"]] for r in range(W)] == [[], [id(extra)]]
    assert len(opt2.optim.param_groups) == 2
    assert opt2.optim.param_groups[1]["lr"] == 0.5


def check_zero_join(rank):
    """Uneven inputs under Join: rank 1 runs a third iteration, which rank 0 shadows (DDP's
    all-reduce of zeros, ZeRO's step and broadcasts)."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    ref = torch.nn.Linear(3, 2)
    ref.load_state_dict(m.state_dict())
    ddp = DDP(m)
    opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)
    assert opt._param_to_rank[m.weight] == 0 and opt._param_to_rank[m.bias] == 1
    with Join([ddp, opt]):
        for i in range(2 + rank):
            opt.zero_grad()
            ddp(torch.ones(4, 3) * (i + 1)).sum().backward()
            opt.step()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for i in range(2):
        ref_opt.zero_grad()
        ref(torch.ones(4, 3) * (i + 1)).sum().backward()
        ref_opt.step()
    # the third step: DDP halves rank 1's gradient (the initial world size divides); the
    # weight is rank 0's to update, and its join hook steps with the gradient it has, the
    # second iteration's (PyTorch's hook: "gradients must be properly set")
    weight_grad = ref.weight.grad.clone()
    ref_opt.zero_grad()
    (ref(torch.ones(4, 3) * 3).sum() * 0.5).backward()
    ref.weight.grad = weight_grad
    ref_opt.step()
    for p, q in zip(m.parameters(), ref.parameters()):
        close(p.detach(), q.detach(), "ZeRO and DDP under Join")


def check_utils(rank):
    m = model(rank)  # different weights on each rank
    _verify_param_shape_across_processes(dist.group.WORLD, list(m.parameters()))
    _sync_module_states(m, dist.group.WORLD, 250 * 1024 * 1024, 0, set())
    ref = model(0)
    for p, q in zip(m.parameters(), ref.parameters()):
        close(p.detach(), q.detach(), "_sync_module_states")
    # rank 1's first parameter has another shape: rank 1 raises PyTorch's message
    params = list(m.parameters())
    if rank == 1:
        params[0] = torch.zeros(4, 6)
    try:
        _verify_param_shape_across_processes(dist.group.WORLD, params)
        assert rank == 0, "a shape mismatch passed"
    except RuntimeError as e:
        assert rank == 1 and str(e) == ("[1]: params[0] in this process with sizes [4, 6] "
                                        "appears not to match sizes of the same param in "
                                        "process 0."), e
    # rank 1 has a parameter fewer: both raise
    try:
        _verify_param_shape_across_processes(dist.group.WORLD, params[:3 + (rank == 0)])
        raise AssertionError("a count mismatch passed")
    except RuntimeError as e:
        other = 1 - rank
        assert str(e) == (f"DDP expects same model across all ranks, but Rank {rank} has "
                          f"{4 - rank} params, while rank {other} has inconsistent "
                          f"{4 - other} params."), e


def check_averaging(rank):
    p = torch.nn.Parameter(torch.full((3,), float(rank)))
    q = torch.nn.Parameter(torch.full((2,), 10.0 * rank, dtype=torch.float64))
    frozen = torch.nn.Parameter(torch.full((2,), float(rank)))  # no gradient: not averaged
    p.grad, q.grad = torch.zeros(3), torch.zeros(2, dtype=torch.float64)
    averager = averagers.PeriodicModelAverager(period=2, warmup_steps=1)
    seen = []
    for step in range(4):
        with torch.no_grad():
            p.add_(rank)
        averager.average_parameters([p, q, frozen])
        seen.append(p.detach().clone())
    # steps 1 and 3 average; 0 and 2 do not
    expected = [2 * rank, 1.5, 1.5 + rank, 2.5]
    for step, (got, e) in enumerate(zip(seen, expected)):
        close(got, torch.full((3,), float(e)), f"PeriodicModelAverager step {step}")
    assert averager.step == 4 and q.dtype == torch.float64
    close(q.detach(), torch.full((2,), 5.0, dtype=torch.float64), "averaged float64 parameter")
    close(frozen.detach(), torch.full((2,), float(rank)), "a parameter without gradient")
    # hierarchical: period 1 within groups of one rank (no change), period 2 over both
    h = HierarchicalModelAverager(period_group_size_dict={1: 1, 2: 2})
    r = torch.nn.Parameter(torch.full((2,), float(rank)))
    r.grad = torch.zeros(2)
    h.average_parameters([r])  # step 0: period 2 divides it: both ranks
    close(r.detach(), torch.full((2,), 0.5), "HierarchicalModelAverager step 0")
    with torch.no_grad():
        r.add_(rank)
    h.average_parameters([r])  # step 1: the one-rank groups
    close(r.detach(), torch.full((2,), 0.5 + rank), "HierarchicalModelAverager step 1")
    # post-local SGD: a local SGD step, then the periodic averaging
    m = model(rank)
    opt = PostLocalSGDOptimizer(torch.optim.SGD(m.parameters(), lr=0.1),
                                averagers.PeriodicModelAverager(period=2, warmup_steps=0))
    X, Y = batch()
    torch.nn.functional.mse_loss(m(X[rank::2]), Y[rank::2]).backward()
    local = [(p - 0.1 * p.grad).detach() for p in m.parameters()]
    opt.step()  # step 0 averages
    every = [None] * W
    dist.all_gather_object(every, [t.tolist() for t in local])
    for i, p in enumerate(m.parameters()):
        mean = (torch.tensor(every[0][i]) + torch.tensor(every[1][i])) / 2
        close(p.detach(), mean, f"PostLocalSGDOptimizer parameter {i}")
    assert opt.state_dict()["step"] == 1


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    assert dist.get_world_size() == W
    check_functional(rank)
    check_zero(rank)
    check_zero_join(rank)
    check_utils(rank)
    check_averaging(rank)
    print(f"PASS {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

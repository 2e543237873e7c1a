"""``ember.distributed.nn`` (the differentiable collectives), ``ember.distributed.optim``
(ZeroRedundancyOptimizer, PostLocalSGDOptimizer, _apply_optimizer_in_backward),
``ember.distributed.utils`` and ``ember.distributed.algorithms.model_averaging``. In one process
against PyTorch (a one-rank gloo world beside ember's); then one 2-rank run
(tests/_distributed_nn_worker.py) for the gradients across ranks, ZeRO's sharded training and
state, and averaging."""
import dataclasses
import os
import warnings
from collections import OrderedDict, namedtuple

import pytest

import ember
import ember.distributed as dist
from helpers import assert_same
from test_distributed import ROOT, launch, needs_mpi

WORKER = os.path.join(ROOT, "tests", "_distributed_nn_worker.py")


def _error(f):
    try:
        return "ok", f()
    except Exception as e:
        return type(e).__name__, str(e)


def _both(torch):
    """ember and PyTorch, with their distributed packages imported."""
    import torch.distributed.nn  # noqa: F401
    import torch.distributed.optim  # noqa: F401
    import torch.distributed.algorithms.model_averaging.averagers  # noqa: F401
    import ember.distributed.nn  # noqa: F401
    import ember.distributed.optim  # noqa: F401
    import ember.distributed.algorithms.model_averaging.averagers  # noqa: F401
    return ember, torch


def test_module_names_as_pytorch(torch):
    _both(torch)
    import ember.distributed.nn as ours
    import torch.distributed.nn as theirs
    # PyTorch also has RemoteModule (its RPC build) and its own subpackages api/jit
    missing = {n for n in dir(theirs) if not n.startswith("__")} - set(dir(ours))
    assert missing <= {"RemoteModule", "api", "jit", "torch"}, missing
    assert ours.functional._all_gather_base
    import ember.distributed.optim as oo
    import torch.distributed.optim as to
    assert set(oo.__all__) == set(to.__all__) - {"DistributedOptimizer", "as_functional_optim"}


@needs_mpi
def test_functional_world_of_one_as_pytorch(worlds):
    torch = worlds
    _both(torch)
    cases = [
        ("all_reduce", lambda m, x: (m.all_reduce(x),)),
        ("all_reduce AVG", lambda m, x: (m.all_reduce(x, op=m.ReduceOp.AVG),)),
        ("broadcast", lambda m, x: (m.broadcast(x, 0),)),
        ("reduce", lambda m, x: (m.reduce(x, 0),)),
        ("gather", lambda m, x: m.gather(x)),
        ("scatter", lambda m, x: (m.scatter([x * 2]),)),
        ("all_gather", lambda m, x: m.all_gather(x)),
        ("reduce_scatter", lambda m, x: (m.reduce_scatter(x.new_empty(x.shape), [x]),)),
        ("all_to_all", lambda m, x: m.all_to_all([x.new_empty(x.shape)], [x])),
        ("all_to_all_single", lambda m, x: (m.all_to_all_single(x.new_empty(x.shape), x),)),
    ]
    for name, f in cases:
        results = []
        for lib in (ember, torch):
            mod = lib.distributed.nn
            x = lib.arange(6.0).reshape(2, 3).requires_grad_()
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                outs = f(mod, x)
            sum((o * lib.arange(6.0).reshape(2, 3)).sum() for o in outs).backward()
            results.append((outs, x.grad, [(c.category, str(c.message)) for c in w]))
        (eo, eg, ew), (to, tg, tw) = results
        assert len(eo) == len(to), name
        for a, b in zip(eo, to):
            assert_same(a.detach(), b.detach())
            assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__, name
        assert_same(eg, tg)
        assert ew == tw, name  # the deprecation warnings: none, or PyTorch's
    # _all_gather_base: the same output, but PyTorch's backward off NCCL raises "Backend not
    # supported!"; ember's backends reduce-scatter, so it has the gradient
    grads = []
    for lib in (ember, torch):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        out = lib.distributed.nn.functional._all_gather_base(lib.empty(2, 3), x)
        assert out.tolist() == x.tolist()
        grads.append(_error(lambda: (out * lib.arange(6.0).reshape(2, 3)).sum().backward()))
    assert grads[1] == ("RuntimeError", "Backend not supported!") and grads[0][0] == "ok"
    assert x.grad is None


def _linear_model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.ReLU(), lib.nn.Linear(5, 3))


def _copy(src, dst):
    for p, q in zip(src.parameters(), dst.parameters()):
        with ember.no_grad():
            q.copy_(ember.tensor(p.detach().numpy()))


def _train(lib, model, opt, steps=3):
    gen = lib.Generator().manual_seed(1)
    for _ in range(steps):
        x = lib.randn(6, 4, generator=gen)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


@needs_mpi
def test_zero_world_of_one_as_pytorch(worlds):
    torch = worlds
    _both(torch)
    runs = []
    for lib in (torch, ember):
        model = _linear_model(torch)
        if lib is ember:
            em = _linear_model(ember)
            _copy(model, em)
            model = em
        Zero = lib.distributed.optim.ZeroRedundancyOptimizer
        params = list(model.parameters())
        opt = Zero([{"params": params[:2]}, {"params": params[2:], "lr": 0.01}],
                   optimizer_class=lib.optim.AdamW, lr=0.03, betas=(0.8, 0.9))
        _train(lib, model, opt)
        runs.append((lib, model, opt))
    (_, tm, topt), (_, em, eopt) = runs
    for p, q in zip(em.parameters(), tm.parameters()):
        assert_same(p.detach(), q.detach(), atol=1e-6, rtol=1e-5)
    assert eopt.param_groups[1]["lr"] == topt.param_groups[1]["lr"] == 0.01
    assert set(eopt.param_groups[0]) == set(topt.param_groups[0])
    # state_dict before consolidate_state_dict, then the consolidated global state
    assert _error(eopt.state_dict) == _error(topt.state_dict)
    eopt.consolidate_state_dict()
    topt.consolidate_state_dict()
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"]) == [0, 1, 2, 3]
    for i in tsd["state"]:
        assert set(esd["state"][i]) == set(tsd["state"][i])
        for k, v in tsd["state"][i].items():
            assert_same(esd["state"][i][k], v, atol=1e-6, rtol=1e-5)
    # load it into fresh optimizers: the next steps agree again
    runs2 = []
    for lib, model, sd in ((torch, tm, tsd), (ember, em, esd)):
        params = list(model.parameters())
        opt = lib.distributed.optim.ZeroRedundancyOptimizer(
            [{"params": params[:2]}, {"params": params[2:]}],
            optimizer_class=lib.optim.AdamW, lr=1.0)
        opt.load_state_dict(sd)
        assert opt.param_groups[1]["lr"] == 0.01 and opt.optim.param_groups[0]["lr"] == 0.03
        _train(lib, model, opt, steps=2)
        runs2.append(opt)
    for p, q in zip(em.parameters(), tm.parameters()):
        assert_same(p.detach(), q.detach(), atol=1e-6, rtol=1e-5)
    # add_param_group and the bucket view
    for lib, model in ((torch, tm), (ember, em)):
        extra = lib.nn.Parameter(lib.ones(3))
        runs2[lib is ember].add_param_group({"params": [extra], "lr": 0.5})
        assert len(runs2[lib is ember].optim.param_groups) == 3
    assert runs2[1].optim.param_groups[2]["lr"] == runs2[0].optim.param_groups[2]["lr"]


@needs_mpi
def test_zero_bucket_view_and_partition_as_pytorch(worlds):
    torch = worlds
    _both(torch)
    models = []
    for lib in (torch, ember):
        model = _linear_model(lib)
        if lib is ember:
            _copy(_linear_model(torch), model)
        opt = lib.distributed.optim.ZeroRedundancyOptimizer(
            model.parameters(), optimizer_class=lib.optim.SGD, parameters_as_bucket_view=True,
            lr=0.1, momentum=0.9)
        assert len(opt._buckets) == 1 and opt._buckets[0][0].numel() == 43
        # the parameters are views of the bucket
        assert model[0].weight.data_ptr() == opt._buckets[0][0].data_ptr()
        _train(lib, model, opt)
        models.append((model, opt))
    for p, q in zip(models[1][0].parameters(), models[0][0].parameters()):
        assert_same(p.detach(), q.detach(), atol=1e-6, rtol=1e-5)
    # the partition over 2 and 3 ranks, on both (PyTorch's method on stand-in instances)
    shapes = [(7,), (3, 4), (2,), (5, 5), (1,), (4, 2), (6,)]
    for world_size in (2, 3):
        got = []
        for lib in (torch, ember):
            Zero = lib.distributed.optim.ZeroRedundancyOptimizer
            z = object.__new__(Zero)
            params = [lib.zeros(s) for s in shapes]
            z.world_size = world_size
            z.param_groups = [{"params": params[:4], "lr": 1}, {"params": params[4:]}]
            z._partition_parameters_cache = []
            part = z._partition_parameters()
            index = {id(p): i for i, p in enumerate(params)}
            got.append([[[index[id(p)] for p in g["params"]] for g in groups]
                        for groups in part])
        assert got[0] == got[1], (world_size, got)


@needs_mpi
def test_zero_errors_as_pytorch(worlds):
    torch = worlds
    _both(torch)
    cases = [
        lambda lib: [],
        lambda lib: lib.ones(2),
        lambda lib: 3,
        lambda lib: [lib.ones(2), {"params": [lib.ones(2)]}],
        lambda lib: [{"lr": 1}],
        lambda lib: [lib.ones(2), lib.ones(2, dtype=lib.float64)],
        lambda lib: [lib.ones(2), lib.ones(2, device="meta")],
    ]
    for make in cases:
        ours = _error(lambda: ember.distributed.optim.ZeroRedundancyOptimizer(
            make(ember), ember.optim.SGD, lr=0.1))
        theirs = _error(lambda: torch.distributed.optim.ZeroRedundancyOptimizer(
            make(torch), torch.optim.SGD, lr=0.1))
        assert ours == theirs
    with pytest.raises(NotImplementedError, match="overlap_with_ddp=True"):
        ember.distributed.optim.ZeroRedundancyOptimizer([ember.ones(2)], ember.optim.SGD,
                                                        overlap_with_ddp=True, lr=0.1)
    # a partition given by hand: PyTorch's checks
    for lib in (ember, torch):
        z = lib.distributed.optim.ZeroRedundancyOptimizer([lib.ones(2)], lib.optim.SGD, lr=0.1)
        assert _error(lambda: z._partition_parameters([[lib.ones(1)]]))[0] == "AssertionError"
    results = []
    for lib in (ember, torch):
        z = object.__new__(lib.distributed.optim.ZeroRedundancyOptimizer)
        z.world_size, z._all_params = 1, [lib.ones(1)]
        z.param_groups, z._partition_parameters_cache = [{"params": z._all_params}], []
        results.append([_error(lambda: z._partition_parameters(bad))[:2]
                        for bad in ([[], []], [[lib.ones(1)]])])
    assert results[0] == results[1]


def test_utils_as_pytorch(torch):
    import torch.distributed.utils as tu
    import ember.distributed.utils as eu

    @dataclasses.dataclass
    class Box:
        a: object
        b: int = 1

    Pair = namedtuple("Pair", "x y")
    for lib, u in ((ember, eu), (torch, tu)):
        assert u._pack_kwargs(1, 2, a=3, b=4) == ((1, 2, 3, 4), ("a", "b"))
        assert u._unpack_kwargs((1, 2, 3, 4), ("a", "b")) == ((1, 2), {"a": 3, "b": 4})
        assert u._unpack_kwargs((1,), ()) == ((1,), {})
    assert _error(lambda: eu._unpack_kwargs((1,), ("a", "b"))) == _error(
        lambda: tu._unpack_kwargs((1,), ("a", "b")))
    for u in (eu, tu):
        sd = {"layer.x": 1, "other": 2, "layer.y": 3}
        u._replace_by_prefix(sd, "layer.", "module.layer.")
        assert list(sd.items()) == [("other", 2), ("module.layer.x", 1), ("module.layer.y", 3)]
    assert _error(lambda: eu._replace_by_prefix({}, "a", "a")) == _error(
        lambda: tu._replace_by_prefix({}, "a", "a"))

    def nested(lib):
        return {"box": Box(lib.ones(2)), "od": OrderedDict(k=lib.ones(1, dtype=lib.float64)),
                "pair": Pair(lib.arange(3), [lib.zeros(2, dtype=lib.float16)]), "n": 5,
                "set": {7}}

    outs = []
    for lib, u in ((ember, eu), (torch, tu)):
        args, kwargs = u._cast_forward_inputs(lib.bfloat16, lib.ones(2), 3, x=nested(lib))
        x = kwargs["x"]
        outs.append([args[0].dtype, args[1], x["box"].a.dtype, type(x["od"]).__name__,
                     x["od"]["k"].dtype, type(x["pair"]).__name__, x["pair"].x.dtype,
                     x["pair"].y[0].dtype, x["n"], x["set"]])
        outs[-1] = [str(v).split(".")[-1] for v in outs[-1]]
        seq = lib.nn.utils.rnn.pack_sequence([lib.ones(2), lib.ones(1)])
        seen = []
        assert u._apply_to_tensors(seen.append, {"s": seq})["s"] is seq
        assert len(seen) == 1 and seen[0] is seq.data
        assert u._cast_forward_inputs(None, 1, a=2) == ((1,), {"a": 2})
        cpu = lib.device("cpu")
        moved, moved_kw = u._to_kwargs((lib.ones(1), Pair(1, lib.ones(2))), {"k": 3}, cpu,
                                       False)
        assert len(moved) == len(moved_kw) == 1 and moved_kw[0] == {"k": 3}
        assert type(moved[0][1]).__name__ == "Pair" and moved[0][1].x == 1
        assert u._to_kwargs((), None, cpu, False) == ((), ())
        assert u._to_kwargs((), {"a": 1}, cpu, False) == (((),), ({"a": 1},))
        t = lib.ones(4)
        view = t[1:]
        u._free_storage(t)
        assert t.untyped_storage().nbytes() == 0 and t.shape == (4,)
        u._alloc_storage(t, lib.Size([4]))
        t.fill_(2)
        assert t.untyped_storage().nbytes() == 16 and view.tolist() == [2.0] * 3
        u._alloc_storage(t, lib.Size([4]))  # already there: nothing to do
        m = lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.Sequential(lib.nn.ReLU()))
        assert u._get_root_modules([m[1], m, m[1][0]]) == [m]
        assert u._get_root_modules([m[1][0], m[0]]) == [m[1][0], m[0]]
    assert outs[0] == outs[1]
    for u in (eu, tu):
        with pytest.raises(AssertionError, match="Freeing a tensor's storage is unsafe"):
            u._free_storage(torch.ones(4)[1:] if u is tu else ember.ones(4)[1:])
        u._p_assert(True, "fine")
        with pytest.raises(AssertionError, match="^no$"):
            u._p_assert(False, "no")
        u._p_assert(False, "printed only", raise_assertion_error=False)


def test_one_implementation_of_the_helpers():
    """The wrappers that had their own copies now use ember.distributed.utils."""
    import sys
    import ember.distributed.utils as eu
    from ember.distributed.algorithms._checkpoint import checkpoint_wrapper
    from ember.distributed.fsdp import fully_sharded_data_parallel as fsdp1
    from ember.distributed.fsdp._fully_shard import _fsdp_common
    contract = sys.modules["ember.distributed._composable.contract"]
    assert checkpoint_wrapper._replace_by_prefix is eu._replace_by_prefix
    assert checkpoint_wrapper._pack_kwargs is eu._pack_kwargs
    assert fsdp1._apply_to_tensors is _fsdp_common._apply_to_tensors is eu._apply_to_tensors
    assert contract._get_root_modules is eu._get_root_modules


@needs_mpi
def test_module_state_helpers_world_of_one(worlds):
    torch = worlds
    import torch.distributed.utils as tu
    import ember.distributed.utils as eu
    for lib, u in ((ember, eu), (torch, tu)):
        m = _linear_model(lib)
        m.register_buffer("count", lib.arange(3))
        before = [t.clone() for t in m.state_dict().values()]
        u._verify_param_shape_across_processes(lib.distributed.group.WORLD,
                                               list(m.parameters()))
        u._sync_module_states(m, lib.distributed.group.WORLD, 64, 0, {"0.bias"})
        for a, b in zip(before, m.state_dict().values()):
            assert a.tolist() == b.tolist()
        assert _error(lambda: lib.distributed._broadcast_coalesced(
            lib.distributed.group.WORLD, [lib.ones(2)], 64, 1))[0] != "ok"
    assert dist._rank_not_in_group(None) is False
    assert dist._rank_not_in_group(dist.GroupMember.NON_GROUP_MEMBER) is True
    out = ember.empty(3)
    dist._all_gather_base(out, ember.arange(3.0))
    dist._reduce_scatter_base(out, out * 2)
    assert out.tolist() == [0.0, 2.0, 4.0]


@needs_mpi
def test_model_averaging_world_of_one_as_pytorch(worlds):
    torch = worlds
    _both(torch)
    import torch.distributed.algorithms.model_averaging.hierarchical_model_averager as th
    import torch.distributed.algorithms.model_averaging.utils as tu
    import ember.distributed.algorithms.model_averaging.hierarchical_model_averager as eh
    import ember.distributed.algorithms.model_averaging.utils as eu
    for lib, h, u in ((ember, eh, eu), (torch, th, tu)):
        A = lib.distributed.algorithms.model_averaging.averagers
        a = A.PeriodicModelAverager(period=3, warmup_steps=2)
        p = lib.nn.Parameter(lib.arange(3.0))
        q = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.zeros(3)
        for _ in range(5):
            a.average_parameters([p, q])
        assert a.step == 5 and p.tolist() == [0.0, 1.0, 2.0]
        assert u.get_params_to_average([p, q]) == [p]
        assert u.get_params_to_average([{"params": [q, p]}]) == [p]
        opt = lib.distributed.optim.PostLocalSGDOptimizer(
            lib.optim.SGD([p], lr=0.5), A.PeriodicModelAverager(period=2))
        opt.step()
        assert p.tolist() == [0.0, 1.0, 2.0] and opt.state_dict()["step"] == 1
        assert opt.state is opt.optim.state and repr(opt) == repr(opt.optim)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            opt.load_state_dict(opt.optim.state_dict())
        assert opt.averager.step == 0 and "does not contain a step counter" in str(w[0].message)
        with pytest.warns(UserWarning, match="When the maximum period in arg"):
            h1 = h.HierarchicalModelAverager({1: 1})
        assert h1.period_process_group_dict[1] is lib.distributed.group.WORLD
    for make in (lambda A, h, u: A.PeriodicModelAverager(period=0),
                 lambda A, h, u: A.PeriodicModelAverager(period=2, warmup_steps=-1),
                 lambda A, h, u: h.HierarchicalModelAverager({}),
                 lambda A, h, u: h.HierarchicalModelAverager({0: 1}),
                 lambda A, h, u: h.HierarchicalModelAverager({2: 4}),
                 lambda A, h, u: u.get_params_to_average([3])):
        ours = _error(lambda: make(ember.distributed.algorithms.model_averaging.averagers,
                                   eh, eu))
        theirs = _error(lambda: make(torch.distributed.algorithms.model_averaging.averagers,
                                     th, tu))
        assert ours[0] == theirs[0] and ours[1].replace("ember", "torch") == theirs[1]
    for lib in (ember, torch):
        A = lib.distributed.algorithms.model_averaging.averagers
        with pytest.warns(UserWarning, match="When period is 1, no need to use model averaging"):
            A.PeriodicModelAverager(period=1)


def test_apply_optimizer_in_backward_as_pytorch(torch):
    import torch.distributed.optim as to
    import ember.distributed.optim as eo
    results = []
    for lib, o in ((ember, eo), (torch, to)):
        model = _linear_model(lib)
        if lib is ember:
            _copy(_linear_model(torch), model)
        params = list(model.parameters())
        o._apply_optimizer_in_backward(lib.optim.SGD, params[:2], {"lr": 0.1})
        o._apply_optimizer_in_backward(lib.optim.Adam, params[2:], {"lr": 0.01})
        model(lib.ones(2, 4)).sum().backward()
        assert all(p.grad is None for p in params)
        optims = o._get_in_backward_optimizers(model)
        assert [type(x).__name__ for x in optims] == ["SGD", "SGD", "Adam", "Adam"]
        results.append([p.detach().numpy().copy() for p in params])
    for a, b in zip(*results):
        assert_same(ember.tensor(a), ember.tensor(b), atol=1e-6, rtol=1e-5)


@needs_mpi
def test_two_ranks():
    p, seconds = launch(2, "nn", worker=WORKER)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "PASS 0" in out and "PASS 1" in out, out


def test_inputs_to_devices_and_zero_device_mix():
    """``_to_kwargs`` onto a (simulated) device, through the side stream between devices, and
    ZeRO refusing parameters on two device types, with PyTorch's message."""
    from helpers import real_gpu, simulated_cuda
    import ember.distributed.optim  # noqa: F401
    import ember.distributed.utils as eu
    if real_gpu():
        pytest.skip("uses two simulated devices")
    with simulated_cuda(2):
        try:
            seq = ember.nn.utils.rnn.pack_sequence([ember.ones(2), ember.ones(1)])
            for src, side in (("cpu", True), ("cuda:0", True), ("cuda:0", False)):
                args, kwargs = eu._to_kwargs((ember.ones(2, device=src), seq.to(src)),
                                             {"k": [ember.arange(3, device=src)]},
                                             ember.device("cuda", 1), side)
                assert args[0][0].device == args[0][1].data.device == ember.device("cuda", 1)
                assert kwargs[0]["k"][0].tolist() == [0, 1, 2]
                assert kwargs[0]["k"][0].device == ember.device("cuda", 1)
            with pytest.raises(ValueError, match="same dense type for all parameters but got "
                                                 "both torch.FloatTensor and "
                                                 "torch.cuda.FloatTensor"):
                ember.distributed.optim.ZeroRedundancyOptimizer(
                    [ember.ones(2), ember.ones(2, device="cuda")], ember.optim.SGD, lr=0.1)
        finally:
            eu._streams.clear()  # they belong to this simulated runtime

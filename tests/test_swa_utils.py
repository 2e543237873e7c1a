"""``ember.optim.swa_utils`` against PyTorch: averaged parameters and buffers, ``n_averaged`` and
state dicts of ``AveragedModel`` for every averaging function, ``update_bn``'s running
statistics, ``SWALR``'s lr sequences and state dict, and the errors and warnings."""
import warnings

import numpy as np
import pytest

import ember
from helpers import assert_same, from_np

RNG = np.random.default_rng(0)


def _net(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def _load(lib, model, arrays):
    """Overwrite ``model``'s parameters and buffers with NumPy arrays (in their order)."""
    with lib.no_grad():
        for t, a in zip([*model.parameters(), *model.buffers()], arrays):
            t.copy_(from_np(a) if lib is ember else lib.from_numpy(a.copy()))


def _random_state(model):
    return [RNG.standard_normal(tuple(t.shape)).astype(np.float32) if t.is_floating_point()
            else np.array(RNG.integers(0, 10), dtype=np.int64)
            for t in [*model.parameters(), *model.buffers()]]


def _pair(torch):
    e, t = _net(ember), _net(torch)
    state = _random_state(e)
    _load(ember, e, state)
    _load(torch, t, state)
    return e, t


def _assert_state_dicts(e, t):
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in es:
        assert_same(es[k], ts[k], rtol=1e-5, atol=1e-6)


AVERAGERS = [
    ("swa", {}),
    ("avg_fn_ema", {"avg_fn": "get_ema_avg_fn"}),
    ("avg_fn_swa", {"avg_fn": "get_swa_avg_fn"}),
    ("multi_ema", {"multi_avg_fn": "get_ema_multi_avg_fn"}),
    ("multi_swa", {"multi_avg_fn": "get_swa_multi_avg_fn"}),
]


@pytest.mark.parametrize("use_buffers", [False, True])
@pytest.mark.parametrize("name,kw", AVERAGERS, ids=[a[0] for a in AVERAGERS])
def test_averaged_model_matches_torch(torch, name, kw, use_buffers):
    def make(lib, model):
        args = {}
        for key, fn in kw.items():
            f = getattr(lib.optim.swa_utils, fn)
            args[key] = f(0.7) if "ema" in fn else f()
        return lib.optim.swa_utils.AveragedModel(model, use_buffers=use_buffers, **args)

    e, t = _pair(torch)
    ea, ta = make(ember, e), make(torch, t)
    _assert_state_dicts(ea, ta)
    assert int(ea.n_averaged) == 0 and ea.n_averaged.dtype == ember.long
    for step in range(4):
        state = _random_state(e)
        _load(ember, e, state)
        _load(torch, t, state)
        if step and use_buffers and name == "multi_swa":
            # the long buffer num_batches_tracked: the integer addcdiv error in both
            with pytest.raises(RuntimeError) as te:
                ta.update_parameters(t)
            with pytest.raises(RuntimeError) as ee:
                ea.update_parameters(e)
            assert str(ee.value) == str(te.value)
            return
        ea.update_parameters(e)
        ta.update_parameters(t)
        assert int(ea.n_averaged) == int(ta.n_averaged) == step + 1
        _assert_state_dicts(ea, ta)
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    ea.eval(), ta.eval()
    assert_same(ea(from_np(x)), ta(torch.from_numpy(x)), rtol=1e-5, atol=1e-6)


def test_averaged_model_device_and_parameters(torch):
    e, _ = _pair(torch)
    ea = ember.optim.swa_utils.AveragedModel(e, device="cpu")
    assert ea.module is not e and ea.n_averaged.device.type == "cpu"
    # the averaged copy's parameters are its own
    assert all(p is not q for p, q in zip(ea.parameters(), e.parameters()))
    assert [n for n, _ in ea.named_parameters()] == [f"module.{n}" for n, _ in e.named_parameters()]


def test_averaged_model_argument_errors(torch):
    for lib in (ember, torch):
        S = lib.optim.swa_utils
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be "
                                                 "provided"):
            S.AveragedModel(lib.nn.Linear(2, 2), avg_fn=S.get_swa_avg_fn(),
                            multi_avg_fn=S.get_swa_multi_avg_fn())
    for fn in ("get_ema_avg_fn", "get_ema_multi_avg_fn"):
        for decay in (-0.1, 1.5):
            with pytest.raises(ValueError) as te:
                getattr(torch.optim.swa_utils, fn)(decay)
            with pytest.raises(ValueError) as ee:
                getattr(ember.optim.swa_utils, fn)(decay)
            assert str(ee.value) == str(te.value)


def _int_lists(lib, values):
    return [lib.tensor(v) for v in values]


def test_multi_avg_fns_on_integer_tensors_match_torch(torch):
    a, b = [[1, 2, 3], [4]], [[4, 6, 9], [10]]
    # EMA: a loop of single-tensor updates
    ea, ta = _int_lists(ember, a), _int_lists(torch, a)
    ember.optim.swa_utils.get_ema_multi_avg_fn(0.5)(ea, _int_lists(ember, b), 1)
    torch.optim.swa_utils.get_ema_multi_avg_fn(0.5)(ta, _int_lists(torch, b), 1)
    for x, y in zip(ea, ta):
        assert_same(x, y)
    # SWA: foreach sub then addcdiv / add with a float alpha: both integer errors
    for n in (lambda lib: lib.tensor(1), lambda lib: 1):
        with pytest.raises(RuntimeError) as te:
            torch.optim.swa_utils.get_swa_multi_avg_fn()(_int_lists(torch, a),
                                                         _int_lists(torch, b), n(torch))
        with pytest.raises(RuntimeError) as ee:
            ember.optim.swa_utils.get_swa_multi_avg_fn()(_int_lists(ember, a),
                                                         _int_lists(ember, b), n(ember))
        assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("n_averaged", [3, "tensor"])
def test_single_and_multi_avg_fns_match_torch(torch, n_averaged):
    x = [RNG.standard_normal((3, 2)), RNG.standard_normal(4)]
    y = [RNG.standard_normal((3, 2)), RNG.standard_normal(4)]

    def n(lib):
        return lib.tensor(3) if n_averaged == "tensor" else 3

    for fn, args in [("get_swa_avg_fn", ()), ("get_ema_avg_fn", (0.25,))]:
        for a, b in zip(x, y):
            e = getattr(ember.optim.swa_utils, fn)(*args)(from_np(a), from_np(b), n(ember))
            t = getattr(torch.optim.swa_utils, fn)(*args)(torch.from_numpy(a),
                                                          torch.from_numpy(b), n(torch))
            assert_same(e, t, rtol=1e-12)
    # the single-tensor functions record no graph
    p = ember.nn.Parameter(from_np(x[1]))
    assert not ember.optim.swa_utils.get_swa_avg_fn()(p, p * 2, n(ember)).requires_grad
    for fn, args in [("get_swa_multi_avg_fn", ()), ("get_ema_multi_avg_fn", (0.25,))]:
        es, ts = [from_np(a) for a in x], [torch.from_numpy(a.copy()) for a in x]
        getattr(ember.optim.swa_utils, fn)(*args)(es, [from_np(b) for b in y], n(ember))
        getattr(torch.optim.swa_utils, fn)(*args)(ts, [torch.from_numpy(b) for b in y], n(torch))
        for e, t in zip(es, ts):
            assert_same(e, t, rtol=1e-12)


def test_update_bn_matches_torch(torch):
    e, t = _pair(torch)
    e[1].momentum = t[1].momentum = 0.3
    batches = [RNG.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    # a batch is a tensor or a list/tuple whose first element is the input
    eloader = [from_np(batches[0]), (from_np(batches[1]), 0), [from_np(batches[2]), None]]
    tloader = [torch.from_numpy(batches[0]), (torch.from_numpy(batches[1]), 0),
               [torch.from_numpy(batches[2]), None]]
    e.eval(), t.eval()
    assert ember.optim.swa_utils.update_bn(eloader, e) is None
    torch.optim.swa_utils.update_bn(tloader, t)
    _assert_state_dicts(e, t)
    assert int(e[1].num_batches_tracked) == 3
    assert e[1].momentum == 0.3 and not e.training
    # with device=, and on an AveragedModel
    ea = ember.optim.swa_utils.AveragedModel(e)
    ta = torch.optim.swa_utils.AveragedModel(t)
    ea.update_parameters(e), ta.update_parameters(t)
    ember.optim.swa_utils.update_bn(eloader[:2], ea, device="cpu")
    torch.optim.swa_utils.update_bn(tloader[:2], ta, device="cpu")
    _assert_state_dicts(ea, ta)
    assert ea.training


def test_update_bn_without_batchnorm_does_nothing():
    m = ember.nn.Linear(2, 2).eval()
    calls = []
    m.register_forward_hook(lambda *a: calls.append(1))
    ember.optim.swa_utils.update_bn([ember.ones(1, 2)], m)
    assert calls == [] and not m.training


def _opts(lib, groups=2, lr=0.5):
    params = [lib.nn.Parameter(lib.ones(2)) for _ in range(groups)]
    return lib.optim.SGD([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(params)],
                         lr=lr)


def _lr_trace(opt, sched, n=14):
    out = [[g["lr"] for g in opt.param_groups] + sched.get_last_lr()]
    for _ in range(n):
        opt.step()
        sched.step()
        out.append([g["lr"] for g in opt.param_groups] + sched.get_last_lr())
    return out


SWALR_CASES = [
    dict(swa_lr=0.05),
    dict(swa_lr=[0.05, 0.2], anneal_epochs=4, anneal_strategy="linear"),
    dict(swa_lr=0.01, anneal_epochs=0),
    dict(swa_lr=0.01, anneal_epochs=1, anneal_strategy="cos"),
]


@pytest.mark.parametrize("kw", SWALR_CASES, ids=range(len(SWALR_CASES)))
def test_swalr_matches_torch(torch, kw):
    eo, to = _opts(ember), _opts(torch)
    es = ember.optim.swa_utils.SWALR(eo, **kw)
    ts = torch.optim.swa_utils.SWALR(to, **kw)
    assert [g["swa_lr"] for g in eo.param_groups] == [g["swa_lr"] for g in to.param_groups]
    e, t = _lr_trace(eo, es), _lr_trace(to, ts)
    assert np.allclose(e, t, rtol=1e-12, atol=0)


def test_swalr_after_another_scheduler_matches_torch(torch):
    def run(lib):
        opt = _opts(lib)
        first = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)
        out = []
        for _ in range(3):
            opt.step()
            first.step()
        swa = lib.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3)
        out += _lr_trace(opt, swa, n=5)
        return out
    assert np.allclose(run(ember), run(torch), rtol=1e-12, atol=0)


def test_swalr_state_dict_matches_torch(torch):
    eo, to = _opts(ember), _opts(torch)
    es = ember.optim.swa_utils.SWALR(eo, swa_lr=0.05, anneal_strategy="linear")
    ts = torch.optim.swa_utils.SWALR(to, swa_lr=0.05, anneal_strategy="linear")
    for _ in range(3):
        eo.step(), es.step(), to.step(), ts.step()
    esd, tsd = es.state_dict(), ts.state_dict()
    assert sorted(esd) == sorted(tsd)
    assert "anneal_func" not in esd and "optimizer" not in esd
    for key in ("anneal_epochs", "_anneal_strategy", "base_lrs", "last_epoch", "_step_count",
                "_last_lr"):
        assert esd[key] == tsd[key], key
    # loading restores the anneal function from its name
    eo2 = _opts(ember)
    es2 = ember.optim.swa_utils.SWALR(eo2, swa_lr=0.05)
    es2.load_state_dict(esd)
    assert es2.anneal_func is ember.optim.swa_utils.SWALR._linear_anneal
    assert es2.last_epoch == 3


def test_swalr_errors_and_warning_match_torch(torch):
    for kw in [dict(swa_lr=0.1, anneal_strategy="exp"), dict(swa_lr=0.1, anneal_epochs=-1),
               dict(swa_lr=0.1, anneal_epochs=2.0), dict(swa_lr=[0.1, 0.2, 0.3])]:
        with pytest.raises(ValueError) as te:
            torch.optim.swa_utils.SWALR(_opts(torch), **kw)
        with pytest.raises(ValueError) as ee:
            ember.optim.swa_utils.SWALR(_opts(ember), **kw)
        assert str(ee.value) == str(te.value)
    es = ember.optim.swa_utils.SWALR(_opts(ember), swa_lr=0.1)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        es.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        es.optimizer.step()
        es.step()


def test_averaged_model_on_cuda_matches_torch(torch, cuda_device):
    """On a CUDA device the default average is the multi-tensor one (``_foreach_lerp_``);
    PyTorch on the CPU (a loop of single-tensor averages) gives the same values."""
    e, t = _pair(torch)
    ea = ember.optim.swa_utils.AveragedModel(e, device="cuda")
    ta = torch.optim.swa_utils.AveragedModel(t)
    assert ea.n_averaged.device.type == "cuda"
    assert all(p.device.type == "cuda" for p in ea.parameters())
    for _ in range(3):
        state = _random_state(e)
        _load(ember, e, state)
        _load(torch, t, state)
        ea.update_parameters(e)
        ta.update_parameters(t)
    es, ts = ea.state_dict(), ta.state_dict()
    assert list(es) == list(ts)
    for k in es:
        assert_same(es[k].cpu(), ts[k], rtol=1e-5, atol=1e-6)

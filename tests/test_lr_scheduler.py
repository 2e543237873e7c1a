"""Learning-rate schedulers against PyTorch: the lr (and momentum) sequence over many steps,
state dict round trips, and argument errors."""
import warnings

import pytest

import ember
import ember.nn as nn


def pair(torch, opt="SGD", groups=1, **kw):
    kw.setdefault("lr", 0.1)
    if opt == "SGD":
        kw.setdefault("momentum", 0.9)
    ep = [nn.Parameter(ember.ones(2)) for _ in range(groups)]
    tp = [torch.nn.Parameter(torch.ones(2)) for _ in range(groups)]
    eo = getattr(ember.optim, opt)([{"params": [p]} for p in ep], **kw)
    to = getattr(torch.optim, opt)([{"params": [p]} for p in tp], **kw)
    return eo, to


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.25, total_iters=4)),
    ("ConstantLR", dict(factor=0.5, total_iters=3)),
    ("PolynomialLR", dict(total_iters=6, power=2.0)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=14)),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], total_steps=14, three_phase=True,
                        anneal_strategy="linear")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=3,
                      mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range",
                      gamma=0.9)),
]


def assert_close(a, b):
    """Recursive comparison of traces (lists/tuples of floats and Nones)."""
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_close(x, y)
    elif a is None or b is None:
        assert a is b
    else:
        assert a == pytest.approx(b, rel=1e-12)


def trace(lib, opt, sched, n=13, metric=None):
    out = []
    for i in range(n):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(i))
        out.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])
        out[-1].append(tuple(sched.get_last_lr()))
    return out


@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[s[0] + str(i) for i, s in
                                                         enumerate(SCHEDULERS)])
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_scheduler_matches_torch(torch, name, kwargs, opt):
    eo, to = pair(torch, opt, groups=2)
    es = getattr(ember.optim.lr_scheduler, name)(eo, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kwargs)
    assert es.get_last_lr() == pytest.approx(ts.get_last_lr())
    assert_close(trace(ember, eo, es), trace(torch, to, ts))


def test_reduce_lr_on_plateau_matches_torch(torch):
    metrics = [5, 4, 4, 4, 4, 4, 3.9999, 4, 4, 4, 4, 4, 1]
    for kw in (dict(patience=2, factor=0.5), dict(mode="max", threshold_mode="abs", cooldown=1,
                                                  patience=1, min_lr=[0.02, 0.03])):
        eo, to = pair(torch, groups=2)
        es = ember.optim.lr_scheduler.ReduceLROnPlateau(eo, **kw)
        ts = torch.optim.lr_scheduler.ReduceLROnPlateau(to, **kw)
        assert_close(trace(ember, eo, es, metric=metrics.__getitem__),
                     trace(torch, to, ts, metric=metrics.__getitem__))


def test_sequential_and_chained_match_torch(torch):
    def build(lib, opt):
        S = lib.optim.lr_scheduler
        seq = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=3),
                                   S.ExponentialLR(opt, gamma=0.8)], milestones=[3])
        return seq
    eo, to = pair(torch)
    assert_close(trace(ember, eo, build(ember, eo)), trace(torch, to, build(torch, to)))

    def chained(lib, opt):
        S = lib.optim.lr_scheduler
        return S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4),
                                   S.ExponentialLR(opt, gamma=0.9)])
    eo, to = pair(torch)
    assert_close(trace(ember, eo, chained(ember, eo)), trace(torch, to, chained(torch, to)))


def test_closed_form_with_epoch_argument(torch):
    eo, to = pair(torch)
    es = ember.optim.lr_scheduler.StepLR(eo, step_size=2)
    ts = torch.optim.lr_scheduler.StepLR(to, step_size=2)
    eo.step()
    to.step()
    with pytest.warns(UserWarning, match="The epoch parameter"):
        es.step(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts.step(5)
    assert es.get_last_lr() == pytest.approx(ts.get_last_lr())


def test_state_dict_round_trip():
    eo, _ = pair(__import__("torch"))
    s = ember.optim.lr_scheduler.CosineAnnealingLR(eo, T_max=10)
    for _ in range(4):
        eo.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    eo2, _ = pair(__import__("torch"))
    eo2.load_state_dict(eo.state_dict())
    s2 = ember.optim.lr_scheduler.CosineAnnealingLR(eo2, T_max=10, last_epoch=-1)
    s2.load_state_dict(sd)
    eo.step(), eo2.step()
    s.step(), s2.step()
    assert s.get_last_lr() == s2.get_last_lr()


def test_warnings_and_errors_match_torch(torch):
    eo, to = pair(torch)
    es = ember.optim.lr_scheduler.StepLR(eo, 1)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before"):
        es.step()
    for name, kw in [("ConstantLR", dict(factor=2)), ("LinearLR", dict(start_factor=0)),
                     ("OneCycleLR", dict(max_lr=1.0)),
                     ("CosineAnnealingWarmRestarts", dict(T_0=0))]:
        eo, to = pair(torch)
        with pytest.raises(ValueError) as te:
            getattr(torch.optim.lr_scheduler, name)(to, **kw)
        with pytest.raises(ValueError) as ee:
            getattr(ember.optim.lr_scheduler, name)(eo, **kw)
        assert str(ee.value) == str(te.value)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        ember.optim.lr_scheduler.StepLR([], 1)
    eo, _ = pair(torch)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified"):
        ember.optim.lr_scheduler.StepLR(eo, 1, last_epoch=3)

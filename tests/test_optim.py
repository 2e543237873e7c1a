"""Optimizers against PyTorch: the same model, copied weights, the same gradients, several
steps of each optimizer (and option combinations); param groups; state dicts; zero_grad."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
from helpers import to_np

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 3)).astype(np.float32)


def make_pair(torch):
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    em = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return em, tm


def loss_of(lib, m):
    out = m[2](lib.tanh(m[0](lib.tensor(X))))
    d = out - lib.tensor(Y)
    return (d * d).mean()


def run_steps(torch, name, kwargs, steps=5, groups=False):
    em, tm = make_pair(torch)

    def params(m):
        if groups:
            return [{"params": m[0].parameters()},
                    {"params": m[2].parameters(), "lr": kwargs.get("lr", 1e-2) * 0.5}]
        return m.parameters()

    eo = getattr(ember.optim, name)(params(em), **kwargs)
    to = getattr(torch.optim, name)(params(tm), **kwargs)
    for _ in range(steps):
        for lib, m, o in ((ember, em, eo), (torch, tm, to)):
            o.zero_grad()
            loss_of(lib, m).backward()
            o.step()
    return em, tm, eo, to


def assert_params_close(em, tm, rtol=1e-5, atol=1e-6):
    for (n, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(to_np(pe.detach()), pt.detach().numpy(), rtol=rtol,
                                   atol=atol, err_msg=n)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, betas=(0.8, 0.9))),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.05)),
    ("Adamax", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.01)),
]


@pytest.mark.parametrize("name,kwargs", CASES,
                         ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_optimizer_matches_torch(torch, name, kwargs):
    # RAdam needs > 5 steps before its rectified branch kicks in.
    em, tm, eo, to = run_steps(torch, name, kwargs, steps=8)
    # Centered RMSprop takes sqrt(E[g^2] - E[g]^2), which amplifies the one extra rounding of
    # ember's unfused addcmul; everything else agrees to float32 precision.
    rtol = 1e-4 if kwargs.get("centered") else 1e-5
    assert_params_close(em, tm, rtol=rtol, atol=1e-5 if kwargs.get("centered") else 1e-6)
    es, ts = eo.state_dict(), to.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert sorted(es["state"]) == sorted(ts["state"])
    for k in ts["state"]:
        assert sorted(es["state"][k]) == sorted(ts["state"][k])
        for key, tv in ts["state"][k].items():
            ev = es["state"][k][key]
            if hasattr(tv, "numpy"):
                assert ev.dtype.name == str(tv.dtype).replace("torch.", "")
                np.testing.assert_allclose(to_np(ev), tv.numpy(), rtol=rtol, atol=1e-5)


def test_param_groups_match_torch(torch):
    em, tm, eo, to = run_steps(torch, "Adam", dict(lr=0.01), groups=True)
    assert_params_close(em, tm)
    assert [g["lr"] for g in eo.param_groups] == [g["lr"] for g in to.param_groups]


def test_lbfgs_matches_torch(torch):
    if not hasattr(ember, "cat"):
        pytest.skip("missing ops: cat")
    for ls in (None, "strong_wolfe"):
        em, tm = make_pair(torch)
        eo = ember.optim.LBFGS(em.parameters(), lr=0.5, max_iter=5, line_search_fn=ls)
        to = torch.optim.LBFGS(tm.parameters(), lr=0.5, max_iter=5, line_search_fn=ls)
        for lib, m, o in ((ember, em, eo), (torch, tm, to)):
            def closure():
                o.zero_grad()
                loss = loss_of(lib, m)
                loss.backward()
                return loss
            for _ in range(2):
                o.step(closure)
        assert_params_close(em, tm, rtol=1e-4, atol=1e-5)


def test_state_dict_round_trip_continues_identically(torch):
    em, tm, eo, to = run_steps(torch, "Adam", dict(lr=0.01, amsgrad=True), steps=3)
    sd = copy.deepcopy(eo.state_dict())  # state_dict() holds references, as in PyTorch
    em2 = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))
    em2.load_state_dict(em.state_dict())
    eo2 = ember.optim.Adam(em2.parameters(), lr=0.5)
    eo2.load_state_dict(sd)
    assert eo2.param_groups[0]["lr"] == 0.01
    for m, o in ((em, eo), (em2, eo2)):
        o.zero_grad()
        loss_of(ember, m).backward()
        o.step()
    for pa, pb in zip(em.parameters(), em2.parameters()):
        np.testing.assert_array_equal(to_np(pa.detach()), to_np(pb.detach()))


def test_load_state_dict_errors_match_torch(torch):
    em, tm = make_pair(torch)
    eo = ember.optim.SGD(em.parameters(), lr=0.1)
    to = torch.optim.SGD(tm.parameters(), lr=0.1)
    bad_t = to.state_dict()
    bad_t["param_groups"] = bad_t["param_groups"] * 2
    with pytest.raises(ValueError) as te:
        to.load_state_dict(bad_t)
    bad_e = eo.state_dict()
    bad_e["param_groups"] = bad_e["param_groups"] * 2
    with pytest.raises(ValueError) as ee:
        eo.load_state_dict(bad_e)
    assert str(ee.value) == str(te.value)


def test_constructor_errors_match_torch(torch):
    p_e, p_t = nn.Parameter(ember.ones(1)), torch.nn.Parameter(torch.ones(1))
    cases = [("SGD", dict(lr=-1)), ("SGD", dict(lr=0.1, nesterov=True)),
             ("Adam", dict(betas=(1.0, 0.9))), ("Adam", dict(eps=-1)),
             ("RMSprop", dict(alpha=-1)), ("Adadelta", dict(rho=2))]
    for name, kw in cases:
        with pytest.raises(ValueError) as te:
            getattr(torch.optim, name)([p_t], **kw)
        with pytest.raises(ValueError) as ee:
            getattr(ember.optim, name)([p_e], **kw)
        assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        ember.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be"):
        ember.optim.SGD(p_e, lr=0.1)
    with pytest.raises(TypeError, match="optimizer parameters need to be organized"):
        ember.optim.SGD([{"params": {p_e}}], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        ember.optim.SGD([{"params": [p_e]}, {"params": [p_e]}], lr=0.1)


def test_add_param_group_and_zero_grad():
    a, b = nn.Parameter(ember.ones(2)), nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([a], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["momentum"] == 0.5 and opt.param_groups[1]["lr"] == 0.01
    (a.sum() + b.sum()).backward()
    opt.zero_grad(set_to_none=False)
    assert float(a.grad.abs().sum()) == 0.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_step_hooks_and_closure():
    p = nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.5)
    calls = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert calls == ["pre", "post"] and float(loss) == 2.0
    np.testing.assert_allclose(to_np(p.detach()), [0.0, 0.0])


def test_updates_do_not_record_graph():
    p = nn.Parameter(ember.ones(2))
    opt = ember.optim.Adam([p], lr=0.1)
    (p * 3).sum().backward()
    opt.step()
    assert p.grad_fn is None and p.is_leaf and p.requires_grad
    assert p._version > 0


def test_step_is_wrapped_at_init_as_pytorch(torch):
    """PyTorch wraps a class's step (hooks, a profiler range) in Optimizer.__init__: a wrapper
    class that never calls it (Accelerate's AcceleratedOptimizer) keeps its own step."""
    for lib in (ember, torch):
        class Wrapper(lib.optim.Optimizer):
            def __init__(self, inner):
                self.inner = inner

            def step(self, closure=None):
                return self.inner.step(closure)

        m = lib.nn.Linear(2, 2)
        inner = lib.optim.SGD(m.parameters(), lr=0.1)
        m(lib.ones(1, 2)).sum().backward()
        w = Wrapper(inner)
        w.step()
        assert not getattr(Wrapper.step, "hooked", False)
        assert lib.optim.SGD.step.hooked
        with lib.profiler.profile() as prof:
            inner.step()
            inner.zero_grad()
        names = [e.name for e in prof.events() if e.name.startswith("Optimizer.")]
        assert names == ["Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"]

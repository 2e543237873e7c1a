"""Rprop, ASGD, Adafactor and Muon against PyTorch: several steps from the same parameters with
the same gradients (per-tensor and foreach paths, maximize, weight decay, complex and float64
parameters, tensor learning rates), the state and its layout, state dicts loaded across the two
libraries, PyTorch's errors, the differentiable step, and capturable steps on a CUDA device."""
import copy
import importlib
import inspect
import warnings

import numpy as np
import pytest

import ember
from helpers import to_np

SHAPES = [(3, 4), (5,), (2, 3, 4), ()]  # Adafactor factors the first and third
MATRICES = [(4, 6), (7, 3), (5, 5)]  # Muon: wide, tall (transposed for the iteration), square


def _arrays(rng, shapes, dtypes, complex_):
    """Gradients of random signs with some exact zeros (Rprop's sign logic has a branch for
    each)."""
    out = []
    for shape, dtype in zip(shapes, dtypes):
        a = rng.standard_normal(shape).astype(dtype)
        if complex_:
            a = a + 1j * rng.standard_normal(shape).astype(dtype)
        out.append(np.asarray(a * (rng.random(shape) > 0.15)))
    return out


def _case_data(shapes, steps, dtypes, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    dtypes = dtypes if isinstance(dtypes, list) else [dtypes] * len(shapes)
    init = [rng.standard_normal(s).astype(d) for s, d in zip(shapes, dtypes)]
    if complex_:
        init = [np.asarray(a + 1j * rng.standard_normal(a.shape).astype(a.dtype)) for a in init]
    return init, [_arrays(rng, shapes, dtypes, complex_) for _ in range(steps)]


def _groups(params, lr_of_second):
    """Two parameter groups, the second with its own learning rate."""
    return [{"params": params[:1]}, {"params": params[1:], "lr": lr_of_second}]


def _make(lib, name, init, kwargs):
    params = [lib.tensor(a).requires_grad_() for a in init]
    lr = kwargs.get("lr", 1e-2)
    second_lr = lr * 0.5 if not hasattr(lr, "numel") else lib.tensor(0.005)
    opt = getattr(lib.optim, name)(_groups(params, second_lr), **kwargs)
    return params, opt


def _step(lib, params, opt, grads):
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g)
    opt.step()


def _tolerances(dtype):
    # float64 parameters still meet float32 scalars (ASGD's eta, the step counts)
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-6, atol=1e-8)


# Muon orthogonalises in bfloat16: a last-bit difference in the float32 momentum (PyTorch's
# lerp rounds once, with an FMA) can flip one bfloat16 rounding, which moves the parameters by
# about bfloat16's precision times the learning rate.
MUON_PARAM_TOL = dict(rtol=1e-5, atol=2e-4)


def _assert_close(e, t, **tol):
    a, b = to_np(e.detach()), to_np(t.detach())
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if np.iscomplexobj(b):
        np.testing.assert_allclose(a.real, b.real, **tol)
        np.testing.assert_allclose(a.imag, b.imag, **tol)
    else:
        np.testing.assert_allclose(a, b, **tol)


def _assert_same_state(eo, to, tol):
    es, ts = eo.state_dict(), to.state_dict()
    assert _plain(es["param_groups"]) == _plain(ts["param_groups"])
    assert [g["params"] for g in es["param_groups"]] == [g["params"] for g in ts["param_groups"]]
    assert list(es["state"]) == list(ts["state"])
    for k, tstate in ts["state"].items():
        assert list(es["state"][k]) == list(tstate), (list(es["state"][k]), list(tstate))
        for key, tv in tstate.items():
            ev = es["state"][k][key]
            assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], key
            assert ev.device.type == tv.device.type == "cpu"
            _assert_close(ev, tv, **tol)


def _plain(groups):
    """Param groups' hyper-parameters, tensors as numbers, to compare across libraries."""
    return [{k: (v.item() if hasattr(v, "item") and not isinstance(v, (int, float)) else v)
             for k, v in g.items() if k != "params"} for g in groups]


CASES = [
    ("Rprop", {}, SHAPES, np.float32, False),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1), maximize=True),
     SHAPES, np.float32, False),
    ("Rprop", {}, SHAPES, np.float32, True),
    ("Rprop", dict(lr=0.02, maximize=True), SHAPES, np.float64, True),
    ("Rprop", {}, SHAPES, [np.float32, np.float64, np.float32, np.float64], False),
    ("ASGD", dict(t0=2), SHAPES, np.float32, False),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True),
     SHAPES, np.float32, False),
    ("ASGD", dict(t0=2, weight_decay=0.1), SHAPES, np.float32, True),
    ("ASGD", dict(t0=1, weight_decay=0.05), SHAPES, np.float64, False),
    ("ASGD", dict(t0=2, maximize=True), SHAPES, [np.float64, np.float32, np.float32,
                                                    np.float64], False),
    ("Adafactor", {}, SHAPES, np.float32, False),
    ("Adafactor", dict(lr=0.1, beta2_decay=-0.5, eps=(1e-4, 1e-3), d=1.5, weight_decay=0.1,
                       maximize=True), SHAPES, np.float32, False),
    ("Adafactor", dict(weight_decay=0.01), SHAPES, np.float64, False),
    ("Adafactor", {}, SHAPES, [np.float32, np.float64, np.float64, np.float32], False),
    ("Muon", {}, MATRICES, np.float32, False),
    ("Muon", dict(lr=0.02, momentum=0.9, nesterov=False, weight_decay=0.0,
                  adjust_lr_fn="match_rms_adamw"), MATRICES, np.float32, False),
    ("Muon", dict(ns_steps=3, ns_coefficients=(3.0, -3.2, 1.2), eps=1e-5,
                  adjust_lr_fn="original"), MATRICES, np.float64, False),
]
FOREACH = {"Rprop": (None, False, True), "ASGD": (None, False, True),
           "Adafactor": (None, False, True), "Muon": (None,)}


def _case_id(case):
    name, kwargs, _, dtype, complex_ = case
    dt = "mixed" if isinstance(dtype, list) else np.dtype(dtype).name
    return "-".join([name, dt] + (["complex"] if complex_ else []) + list(kwargs))


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_steps_match_torch(torch, case):
    name, kwargs, shapes, dtype, complex_ = case
    init, grads = _case_data(shapes, 6, dtype, complex_)
    tol = _tolerances(dtype if not isinstance(dtype, list) else np.float32)
    for foreach in FOREACH[name]:
        kw = dict(kwargs, foreach=foreach) if foreach is not None else kwargs
        ep, eo = _make(ember, name, init, kw)
        tp, to = _make(torch, name, init, kw)
        for g in grads:
            _step(ember, ep, eo, g)
            _step(torch, tp, to, g)
        param_tol = MUON_PARAM_TOL if name == "Muon" and dtype == np.float32 else tol
        for e, t in zip(ep, tp):
            _assert_close(e, t, **param_tol)
        _assert_same_state(eo, to, tol)


@pytest.mark.parametrize("name,kwargs", [
    ("Rprop", {}), ("Rprop", dict(foreach=True)), ("ASGD", dict(t0=1, weight_decay=0.1)),
    ("ASGD", dict(t0=1, foreach=True)), ("Adafactor", dict(weight_decay=0.1)),
    ("Adafactor", dict(foreach=True)), ("Muon", {})])
def test_tensor_lr_matches_torch(torch, name, kwargs):
    shapes = MATRICES if name == "Muon" else SHAPES
    init, grads = _case_data(shapes, 4, np.float32, seed=1)
    ep, eo = _make(ember, name, init, dict(kwargs, lr=ember.tensor([0.02])))
    tp, to = _make(torch, name, init, dict(kwargs, lr=torch.tensor([0.02])))
    for g in grads:
        _step(ember, ep, eo, g)
        _step(torch, tp, to, g)
    tol = MUON_PARAM_TOL if name == "Muon" else _tolerances(np.float32)
    for e, t in zip(ep, tp):
        _assert_close(e, t, **tol)


def _as_torch(torch, t):
    return torch.tensor(to_np(t.detach()))  # (helpers.to_torch makes 0-dim tensors 1-dim)


def _to_torch_tree(torch, x):
    if isinstance(x, dict):
        return {k: _to_torch_tree(torch, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch_tree(torch, v) for v in x)
    return _as_torch(torch, x) if isinstance(x, ember.Tensor) else x


def _to_ember_tree(torch, x):
    if isinstance(x, dict):
        return {k: _to_ember_tree(torch, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_ember_tree(torch, v) for v in x)
    return ember.tensor(x.numpy()) if isinstance(x, torch.Tensor) else x


ROUND_TRIPS = [("Rprop", dict(maximize=True), SHAPES, True),
               ("ASGD", dict(t0=2, weight_decay=0.1), SHAPES, True),
               ("ASGD", dict(t0=2, foreach=True), SHAPES, False),
               ("Adafactor", dict(weight_decay=0.1), SHAPES, False),
               ("Muon", dict(momentum=0.9), MATRICES, False)]


@pytest.mark.parametrize("name,kwargs,shapes,complex_", ROUND_TRIPS,
                         ids=[f"{c[0]}-{'-'.join(c[1])}" for c in ROUND_TRIPS])
def test_state_dict_loads_across_libraries(torch, name, kwargs, shapes, complex_):
    """Each library's state dict, loaded into the other's optimizer (built with other
    hyper-parameters, which the state dict replaces), continues as the original does."""
    init, grads = _case_data(shapes, 6, np.float32, complex_, seed=2)
    ep, eo = _make(ember, name, init, kwargs)
    tp, to = _make(torch, name, init, kwargs)
    for g in grads[:3]:
        _step(ember, ep, eo, g)
        _step(torch, tp, to, g)
    other = dict(lr=0.5, weight_decay=0.3) if name in ("ASGD", "Adafactor", "Muon") else \
        dict(lr=0.5)
    ep2 = [ember.tensor(to_np(p.detach())).requires_grad_() for p in tp]
    eo2 = getattr(ember.optim, name)(_groups(ep2, 0.5), **other)
    eo2.load_state_dict(_to_ember_tree(torch, copy.deepcopy(to.state_dict())))
    tp2 = [_as_torch(torch, p).requires_grad_() for p in ep]
    to2 = getattr(torch.optim, name)(_groups(tp2, 0.5), **other)
    to2.load_state_dict(_to_torch_tree(torch, eo.state_dict()))
    assert _plain(eo2.param_groups) == _plain(to.param_groups)
    for g in grads[3:]:
        for lib, params, opt in ((ember, ep, eo), (torch, tp, to), (ember, ep2, eo2),
                                 (torch, tp2, to2)):
            _step(lib, params, opt, g)
    tol = MUON_PARAM_TOL if name == "Muon" else _tolerances(np.float32)
    for e, t, e2, t2 in zip(ep, tp, ep2, tp2):
        _assert_close(e2, t, **tol)
        _assert_close(e, t2, **tol)
    _assert_same_state(eo2, to, _tolerances(np.float32))
    _assert_same_state(eo, to2, _tolerances(np.float32))


@pytest.mark.parametrize("name,kwargs", [("Rprop", {}), ("ASGD", dict(t0=1)),
                                         ("Adafactor", {})])
def test_state_with_python_number_scalars_loads_as_torch(torch, name, kwargs):
    """A state dict whose step counts (ASGD: and eta, mu) are Python numbers, as older PyTorch
    saved them, loads with those made tensors, and the steps go on as PyTorch's."""
    init, grads = _case_data(SHAPES, 4, np.float32, seed=3)
    ep, eo = _make(ember, name, init, kwargs)
    tp, to = _make(torch, name, init, kwargs)
    for lib, params, opt in ((ember, ep, eo), (torch, tp, to)):
        _step(lib, params, opt, grads[0])
        sd = copy.deepcopy(opt.state_dict())
        for state in sd["state"].values():
            for key in ("step", "eta", "mu"):
                if key in state:
                    state[key] = state[key].item()
        opt.load_state_dict(sd)
    for key in ("step", "eta", "mu"):
        if key in to.state[tp[0]]:
            assert isinstance(eo.state[ep[0]][key], ember.Tensor)
            assert eo.state[ep[0]][key].dtype == ember.float32
    for g in grads[1:]:
        _step(ember, ep, eo, g)
        _step(torch, tp, to, g)
    for e, t in zip(ep, tp):
        _assert_close(e, t, rtol=1e-5, atol=1e-6)


CONSTRUCTOR_ERRORS = [
    ("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.0, 1.2))), ("Rprop", dict(etas=(0.5, 1.0))),
    ("Rprop", dict(etas=(0.0, 2.0))), ("ASGD", dict(lr=-0.1)), ("ASGD", dict(weight_decay=-1)),
    ("Adafactor", dict(lr=-1)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(eps=(None, -1.0))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1.0)),
    ("Muon", dict(lr=-1)), ("Muon", dict(momentum=-0.5)), ("Muon", dict(weight_decay=-1)),
    ("Muon", dict(adjust_lr_fn="spectral")),
]


def _raises_as_torch(torch, fn):
    """``fn(lib)`` raises the same exception type with the same message in both libraries
    (``torch.`` in PyTorch's message reads ``ember.`` in ember's)."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)) as ee:
        fn(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


@pytest.mark.parametrize("name,kwargs", CONSTRUCTOR_ERRORS,
                         ids=[f"{n}-{'-'.join(k)}" for n, k in CONSTRUCTOR_ERRORS])
def test_constructor_errors_match_torch(torch, name, kwargs):
    _raises_as_torch(torch, lambda lib: getattr(lib.optim, name)(
        [lib.nn.Parameter(lib.ones(2, 2))], **kwargs))


def test_more_constructor_errors_match_torch(torch):
    for name in ("Rprop", "ASGD", "Adafactor", "Muon"):
        _raises_as_torch(torch, lambda lib: getattr(lib.optim, name)(
            [lib.nn.Parameter(lib.ones(2, 2))], lr=lib.tensor([0.1, 0.2])))
    for shape in ((3,), (2, 3, 4)):
        _raises_as_torch(torch, lambda lib: lib.optim.Muon([lib.nn.Parameter(lib.ones(shape))]))


def _step_with(name, grad, param=None, **kwargs):
    def run(lib):
        p = lib.nn.Parameter(param(lib) if param else lib.ones(3, 3))
        p.grad = grad(lib)
        getattr(lib.optim, name)([p], **kwargs).step()
    return run


def _sparse(lib):
    return lib.sparse_coo_tensor(lib.tensor([[0, 1], [1, 2]]), lib.tensor([1.0, 2.0]), (3, 3))


def _complex(lib):
    return lib.ones(3, 3, dtype=lib.complex64)


def _dense(lib):
    return lib.ones(3, 3)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_step_errors_match_torch(torch):
    for name in ("Rprop", "ASGD", "Adafactor", "Muon"):
        _raises_as_torch(torch, _step_with(name, _sparse))
    for name in ("Adafactor", "Muon"):
        _raises_as_torch(torch, _step_with(name, _complex, param=_complex))
    _raises_as_torch(torch, _step_with("Muon", _dense, ns_steps=100))
    _raises_as_torch(torch, _step_with("Muon", _dense, ns_coefficients=(1.0, 2.0)))
    for foreach in (False, True):
        # capturable steps need their parameters on a device whose steps graphs capture
        for name in ("Rprop", "ASGD"):
            _raises_as_torch(torch, _step_with(name, _dense, capturable=True, foreach=foreach))

    def differentiable_foreach(name):
        def run(lib):
            p = lib.ones(3, requires_grad=True).clone()
            p.grad = lib.ones(3)
            getattr(lib.optim, name)([p], differentiable=True, foreach=True).step()
        return run
    for name in ("Rprop", "ASGD"):
        _raises_as_torch(torch, differentiable_foreach(name))

    def scaled_adafactor(lib):  # a GradScaler must unscale before Adafactor steps
        p = lib.nn.Parameter(lib.ones(3, 3))
        p.grad = lib.ones(3, 3)
        opt = lib.optim.Adafactor([p])
        opt.grad_scale = lib.tensor(2.0)
        opt.step()
    _raises_as_torch(torch, scaled_adafactor)


def _functional(lib, module, fn):
    return getattr(importlib.import_module(f"{lib.__name__}.optim.{module}"), fn)


def test_functional_forms_match_torch(torch):
    """The functional updates: PyTorch's argument errors, and the same arithmetic."""
    muon_kw = dict(lr=0.1, weight_decay=0.0, momentum=0.9, nesterov=True,
                   ns_coefficients=(3.4445, -4.775, 2.0315), ns_steps=5, eps=1e-7,
                   adjust_lr_fn=None, has_complex=False)
    _raises_as_torch(torch, lambda lib: _functional(lib, "_muon", "muon")(
        [lib.ones(2, 2)], [lib.ones(2, 2)], [lib.zeros(2, 2)], foreach=True, **muon_kw))
    _raises_as_torch(torch, lambda lib: _functional(lib, "_muon", "muon")(
        [lib.ones(2, 2)], [lib.ones(4)], [lib.zeros(4)], **muon_kw))
    _raises_as_torch(torch, lambda lib: _functional(lib, "rprop", "rprop")(
        [lib.ones(2)], [lib.ones(2)], [lib.ones(2)], [lib.ones(2)], [1.0], step_size_min=0,
        step_size_max=1, etaminus=0.5, etaplus=1.2))
    _raises_as_torch(torch, lambda lib: _functional(lib, "_adafactor", "adafactor")(
        [lib.ones(2)], [lib.ones(2)], [None], [None], [lib.ones(2)], [1.0], d=1.0, lr=0.1,
        beta2_decay=-0.8, weight_decay=0.0, eps1=None, eps2=1e-3, maximize=False))
    rng = np.random.default_rng(4)
    p0, g0, a0 = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
    results = []
    for lib in (ember, torch):
        p, ax = lib.tensor(p0), lib.tensor(a0)
        scalars = [lib.tensor(v) for v in (2.0, 0.01, 0.5)]  # step, eta, mu
        _functional(lib, "asgd", "asgd")([p], [lib.tensor(g0)], [ax], [scalars[2]],
                                         [scalars[1]], [scalars[0]], foreach=True, lambd=1e-3,
                                         lr=0.01, t0=1.0, alpha=0.75, weight_decay=0.1)
        results.append((p, ax, *scalars))
    for e, t in zip(*results):
        _assert_close(e, t, rtol=1e-6, atol=1e-7)


def _differentiable_run(lib, name, kwargs, p0, g0, c0, state0):
    """Two leaves (weights, gradient), a step of a differentiable optimizer on copies of them,
    and a loss of the updated parameter and state: the step itself is differentiated."""
    w = lib.tensor(p0, requires_grad=True)
    g = lib.tensor(g0, requires_grad=True)
    p = w.clone()
    p.grad = g.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
    leaves = {}
    if state0:  # state that depends on leaves too (in-place updates need non-leaf copies)
        opt.state[p]["step"] = lib.tensor(1.0)
        for key, value in state0.items():
            leaves[key] = lib.tensor(value, requires_grad=True)
            opt.state[p][key] = leaves[key].clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the step reads .grad of a non-leaf: PyTorch warns
        opt.step()
    loss = (p * lib.tensor(c0)).sum()
    for key, value in opt.state[p].items():
        if isinstance(value, lib.Tensor) and value.requires_grad:
            loss = loss + (value * value).sum()
    loss.backward()
    return [p.detach(), w.grad, g.grad] + [leaves[k].grad for k in sorted(leaves)]


@pytest.mark.parametrize("name,kwargs,with_state", [
    ("ASGD", dict(lambd=0.1, weight_decay=0.1, t0=0.0), False),
    ("ASGD", dict(lambd=0.1, t0=5.0, maximize=True), False),
    ("Rprop", {}, True), ("Rprop", dict(maximize=True), True)])
def test_differentiable_step_matches_torch(torch, name, kwargs, with_state):
    rng = np.random.default_rng(5)
    p0, g0, c0, prev0 = (rng.standard_normal(6).astype(np.float32) for _ in range(4))
    state0 = dict(prev=prev0, step_size=np.abs(c0) * 0.1) if with_state else {}
    got = _differentiable_run(ember, name, kwargs, p0, g0, c0, state0)
    want = _differentiable_run(torch, name, kwargs, p0, g0, c0, state0)
    for e, t in zip(got, want):
        _assert_close(e, t, rtol=1e-6, atol=1e-7)


def _signature(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_match_torch(torch):
    for name in ("Rprop", "ASGD", "Adafactor", "Muon"):
        assert _signature(getattr(ember.optim, name).__init__) == \
            _signature(getattr(torch.optim, name).__init__)
    for module, fn in (("rprop", "rprop"), ("asgd", "asgd"), ("_adafactor", "adafactor"),
                       ("_muon", "muon"), ("_muon", "_zeropower_via_newtonschulz"),
                       ("_muon", "_adjust_lr")):
        assert _signature(_functional(ember, module, fn)) == \
            _signature(_functional(torch, module, fn))
        assert _functional(ember, module, "__all__") == _functional(torch, module, "__all__")


def test_exports_match_torch(torch):
    assert [n for n in torch.optim.__all__ if n != "swap_in_optimizer_params_and_state"] \
        == ember.optim.__all__
    for name in ("Rprop", "ASGD", "Adafactor", "Muon"):
        assert getattr(ember.optim, name).__module__ == \
            getattr(torch.optim, name).__module__.replace("torch", "ember")
    for module in ("rprop", "asgd"):  # importable by path, not attributes of the package
        assert hasattr(ember.optim, module) == hasattr(torch.optim, module)
        importlib.import_module(f"ember.optim.{module}")
    assert _functional(ember, "_muon", "DEFAULT_NS_STEPS") == 5
    for name in ("Rprop", "ASGD", "Adafactor", "Muon"):
        p_e, p_t = ember.nn.Parameter(ember.ones(2, 2)), torch.nn.Parameter(torch.ones(2, 2))
        assert _plain(getattr(ember.optim, name)([p_e]).param_groups) == \
            _plain(getattr(torch.optim, name)([p_t]).param_groups)


# -- capturable steps, last: the CUDA device (a real GPU or the simulated one) stays up for the
# rest of the module once a test asks for it

@pytest.mark.parametrize("name,kwargs", [("Rprop", {}), ("Rprop", dict(foreach=True)),
                                         ("ASGD", dict(t0=2, weight_decay=0.1)),
                                         ("ASGD", dict(t0=2, foreach=True, maximize=True))])
def test_capturable_on_cuda_matches_torch(torch, cuda_device, name, kwargs):
    """capturable=True keeps the scalars on the device and computes from them there; the
    values follow PyTorch's (non-capturable, CPU) steps, and a state dict loaded back puts the
    step count on the device again."""
    init, grads = _case_data(SHAPES[:3], 5, np.float32, seed=6)
    params = [ember.tensor(a, device="cuda").requires_grad_() for a in init]
    opt = getattr(ember.optim, name)(params, capturable=True, **kwargs)
    tp = [torch.tensor(a).requires_grad_() for a in init]
    to = getattr(torch.optim, name)(tp, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # capturable=True run uncaptured: PyTorch's warning
        for g in grads:
            for p, gi in zip(params, g):
                p.grad = ember.tensor(gi, device="cuda")
            opt.step()
            _step(torch, tp, to, g)
    for e, t in zip(params, tp):
        np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert {v.device.type for v in opt.state[params[0]].values()} == {"cuda"}
    sd = copy.deepcopy(opt.state_dict())
    for state in sd["state"].values():
        state["step"] = state["step"].cpu()
    opt2 = getattr(ember.optim, name)([p.detach().clone() for p in params], capturable=True,
                                      **kwargs)
    opt2.load_state_dict(sd)
    step = opt2.state[opt2.param_groups[0]["params"][0]]["step"]
    assert step.device.type == "cuda" and step.dtype == ember.float32

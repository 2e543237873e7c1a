"""ember.optim in PyTorch's module layout: each optimizer's module (``ember.optim.adam`` ...) with
its class and its functional form, ``ember.optim._functional``, and the functional forms against
PyTorch's on the same inputs (single-tensor and foreach paths, real and complex parameters)."""
import importlib
import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from helpers import to_np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "adamax": "Adamax", "nadam": "NAdam",
           "radam": "RAdam", "rmsprop": "RMSprop", "adagrad": "Adagrad",
           "adadelta": "Adadelta"}


def test_modules_match_torchs_layout(torch):
    for module, cls in MODULES.items():
        ours = importlib.import_module(f"ember.optim.{module}")
        theirs = importlib.import_module(f"torch.optim.{module}")
        assert ours.__all__ == theirs.__all__ == [cls, module]
        assert getattr(ember.optim, cls) is getattr(ours, cls)
        assert getattr(ours, cls).__module__ == f"ember.optim.{module}"
        assert getattr(theirs, cls).__module__ == f"torch.optim.{module}"
        # the functional form takes PyTorch's arguments, in PyTorch's order and kinds
        fn, ref = inspect.signature(getattr(ours, module)), inspect.signature(getattr(theirs,
                                                                                      module))
        assert [(p.name, p.kind, p.default) for p in fn.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in ref.parameters.values()], module
        # as PyTorch: importable by path, not attributes of the package
        assert hasattr(ember.optim, module) == hasattr(torch.optim, module) is False


def test_functional_namespace_matches_torchs(torch):
    from ember.optim import _functional as F
    import torch.optim._functional as TF

    def public(m):
        return {n for n in dir(m) if not n.startswith("__") and callable(getattr(m, n))
                and not inspect.isclass(getattr(m, n))}
    assert public(F) - {"sparse_coo_tensor"} == public(TF) - {"Tensor"}
    assert inspect.signature(F.sparse_adam).parameters.keys() == \
        inspect.signature(TF.sparse_adam).parameters.keys()
    from ember.optim.adam import Adam, adam  # noqa: F401
    from ember.optim.sgd import SGD, sgd  # noqa: F401
    assert F.adamw is importlib.import_module("ember.optim.adamw").adamw


# -- the functional forms against PyTorch's -------------------------------------------------

# name -> (state lists after params and grads, hyper-parameters of the configurations)
# State kinds: zeros (a zero tensor per param), none (None per param), step (a 0.0 step
# tensor), one (a 1.0 tensor), sum (Adagrad's accumulator at 0.1), empty (an empty list).
ALGORITHMS = {
    "sgd": (["none"], [
        dict(lr=0.1, momentum=0.9, dampening=0.0, nesterov=True, weight_decay=0.0,
             maximize=False),
        dict(lr=0.05, momentum=0.5, dampening=0.1, nesterov=False, weight_decay=0.1,
             maximize=True)]),
    "adam": (["zeros", "zeros", "empty", "step"], [
        dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False,
             maximize=False),
        dict(lr=0.01, beta1=0.8, beta2=0.99, weight_decay=0.1, eps=1e-6, amsgrad=True,
             maximize=True)]),
    "adamw": (["zeros", "zeros", "empty", "step"], [
        dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.01, eps=1e-8, amsgrad=False,
             maximize=False),
        dict(lr=0.01, beta1=0.8, beta2=0.99, weight_decay=0.1, eps=1e-6, amsgrad=True,
             maximize=True)]),
    "adamax": (["zeros", "zeros", "step"], [
        dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, maximize=False),
        dict(lr=0.01, beta1=0.8, beta2=0.99, weight_decay=0.1, eps=1e-6, maximize=True)]),
    "nadam": (["zeros", "zeros", "one", "step"], [
        dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.0, momentum_decay=4e-3, eps=1e-8,
             maximize=False),
        dict(lr=0.01, beta1=0.8, beta2=0.99, weight_decay=0.1, momentum_decay=4e-3, eps=1e-6,
             maximize=True, decoupled_weight_decay=True)]),
    "radam": (["zeros", "zeros", "step"], [  # 8 steps: past rho_t > 5 with beta2=0.9
        dict(lr=0.01, beta1=0.9, beta2=0.9, weight_decay=0.0, eps=1e-8, maximize=False),
        dict(lr=0.01, beta1=0.8, beta2=0.9, weight_decay=0.1, eps=1e-6, maximize=True,
             decoupled_weight_decay=True)]),
    "rmsprop": (["zeros", "empty", "empty", "step"], [
        dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
             maximize=False),
        dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.5, centered=True,
             maximize=True)]),
    "adagrad": (["sum", "step"], [
        dict(lr=0.1, weight_decay=0.0, lr_decay=0.0, eps=1e-10, maximize=False),
        dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, eps=1e-6, maximize=True)]),
    "adadelta": (["zeros", "zeros", "step"], [
        dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False),
        dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)]),
}
SHAPES = [(4, 3), (5,), ()]
STEPS = 8


def _data(dtype, seed=0):
    rng = np.random.default_rng(seed)

    def draw(shape):
        a = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        return np.asarray(a, dtype=dtype)
    return [draw(s) for s in SHAPES], [[draw(s) for s in SHAPES] for _ in range(STEPS)]


def _state(lib, params, kind, hyper):
    if kind == "empty":
        # AMSGrad's maxima, centered RMSprop's averages and its momentum buffers when used
        return []
    return [{"zeros": lambda p: lib.zeros_like(p), "none": lambda p: None,
             "step": lambda p: lib.tensor(0.0), "one": lambda p: lib.tensor(1.0),
             "sum": lambda p: lib.full_like(p, 0.1)}[kind](p) for p in params]


def _run(lib, name, hyper, foreach, init, grads):
    """STEPS calls of ``lib``'s functional form of ``name``; the parameters and the state."""
    module = importlib.import_module(f"{lib.__name__}.optim.{name}")
    fn = getattr(module, name)
    kinds, _ = ALGORITHMS[name]
    params = [lib.tensor(a) for a in init]
    state = [_state(lib, params, k, hyper) for k in kinds]
    # the lists that only some configurations use
    if name in ("adam", "adamw") and hyper["amsgrad"]:
        state[2] = [lib.zeros_like(p) for p in params]
    if name == "rmsprop":
        state[1] = [lib.zeros_like(p) for p in params] if hyper["centered"] else []
        state[2] = [lib.zeros_like(p) for p in params] if hyper["momentum"] > 0 else []
    kwargs = dict(hyper, foreach=foreach)
    if name not in ("sgd",):
        kwargs["has_complex"] = any(p.is_complex() for p in params)
    with lib.no_grad():
        for step_grads in grads:
            fn(params, [lib.tensor(g) for g in step_grads], *state, **kwargs)
    tensors = params + [t for lst in state for t in lst if t is not None]
    return [to_np(t) if lib is ember else t.numpy() for t in tensors]


# SGD's paths and Adam's per-tensor loop compute the bits of PyTorch's loop (AdamW's decoupled
# decay with AMSGrad differs by an ulp in places, as the class did before the functional forms).
# Adam's foreach path is its loop op for op on ember's foreach kernels, which round the last
# place differently in places; PyTorch's CPU foreach kernels round like its loop, so SGD's and
# Adam's foreach paths compare with PyTorch's loop. The other per-tensor loops round once more
# (mul_/add_ for lerp_/addcmul_), and the other foreach paths are PyTorch's op for op: those
# compare with PyTorch's same path within tolerances.
SAME_BITS_AS_THE_LOOP = {"sgd", "adam", "adamw"}
EXACT = {("sgd", 0, False), ("sgd", 1, False), ("sgd", 0, True), ("sgd", 1, True),
         ("adam", 0, False), ("adam", 1, False), ("adamw", 0, False)}


# RAdam's foreach path divides by a zero bias correction before its rectification applies (as
# PyTorch's does); ember's CPU foreach kernel lets NumPy warn about it
@pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")
@pytest.mark.parametrize("foreach", [False, True], ids=["loop", "foreach"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64],
                         ids=["f32", "f64", "c64"])
@pytest.mark.parametrize("config", [0, 1])
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_functional_form_matches_torch(torch, name, config, dtype, foreach):
    hyper = ALGORITHMS[name][1][config]
    init, grads = _data(dtype, seed=config)
    got = _run(ember, name, hyper, foreach, init, grads)
    want = _run(torch, name, hyper, foreach and name not in SAME_BITS_AS_THE_LOOP, init, grads)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if (name, config, foreach) in EXACT and np.dtype(dtype).kind == "f":
            np.testing.assert_array_equal(g, w)
        else:
            tol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(MODULES))
def test_class_step_is_its_functional_form(name):
    """The class gathers its state and calls its module's functional form (what a library
    patching ``torch.optim.adam.adam`` relies on)."""
    module = importlib.import_module(f"ember.optim.{name}")
    # as PyTorch's, AdamW's step is Adam's: it calls adam(decoupled_weight_decay=True)
    fn_module, fn_name = (importlib.import_module("ember.optim.adam"), "adam") \
        if name == "adamw" else (module, name)
    calls = []
    real = getattr(fn_module, fn_name)
    p = ember.nn.Parameter(ember.ones(3))
    p.grad = ember.ones(3)
    opt = getattr(module, MODULES[name])([p], lr=0.1)
    try:
        setattr(fn_module, fn_name, lambda *a, **k: (calls.append(k), real(*a, **k))[1])
        opt.step()
    finally:
        setattr(fn_module, fn_name, real)
    assert len(calls) == 1 and calls[0]["lr"] == 0.1
    assert not ember.equal(p.detach(), ember.ones(3))


def _module(lib, name):
    """``lib.optim.<name>``, which is importable by path but no attribute of the package."""
    return importlib.import_module(f"{lib.__name__}.optim.{name}")


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_functional_errors_match_torch(torch):
    def raises(lib, fn):
        with pytest.raises(Exception) as info:
            fn(lib)
        return type(info.value).__name__, str(info.value)

    def plain_steps(lib):  # the pre-1.12 API: steps as Python numbers
        p = lib.ones(2)
        _module(lib, "adam").adam([p], [p.clone()], [lib.zeros(2)], [lib.zeros(2)], [], [1],
                            amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.0,
                            eps=1e-8, maximize=False)

    def tensor_lr_foreach(lib):
        p = lib.ones(2)
        _module(lib, "adam").adam([p], [p.clone()], [lib.zeros(2)], [lib.zeros(2)], [],
                            [lib.tensor(0.0)], foreach=True, amsgrad=False, beta1=0.9,
                            beta2=0.99, lr=lib.tensor(0.1), weight_decay=0.0, eps=1e-8,
                            maximize=False)

    def nadam_mu_products(lib):
        p = lib.ones(2)
        _module(lib, "nadam").nadam([p], [p.clone()], [lib.zeros(2)], [lib.zeros(2)], [1.0],
                              [lib.tensor(0.0)], beta1=0.9, beta2=0.99, lr=0.1,
                              weight_decay=0.0, momentum_decay=4e-3, eps=1e-8)

    def differentiable_foreach(lib):
        p = lib.ones(2)
        _module(lib, "rmsprop").rmsprop([p], [p.clone()], [lib.zeros(2)], [], [], [lib.tensor(0.0)],
                                  foreach=True, differentiable=True, lr=0.1, alpha=0.9,
                                  eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False)

    def sparse_in_adam(lib):
        p = lib.nn.Parameter(lib.ones(3, 3))
        p.grad = lib.sparse_coo_tensor(lib.tensor([[0], [1]]), lib.tensor([1.0]), (3, 3))
        _module(lib, "adam").Adam([p]).step()

    for case in (plain_steps, tensor_lr_foreach, nadam_mu_products, differentiable_foreach,
                 sparse_in_adam):
        assert raises(ember, case) == raises(torch, case), case.__name__


def test_sparse_adam_matches_torch(torch):
    from ember.optim._functional import sparse_adam
    from torch.optim._functional import sparse_adam as torch_sparse_adam
    rng = np.random.default_rng(3)
    init = rng.standard_normal((5, 3)).astype(np.float32)
    rows = [[0, 2], [2, 4, 4], [1]]
    values = [rng.standard_normal((len(r), 3)).astype(np.float32) for r in rows]

    def run(lib, fn, maximize):
        p = lib.tensor(init)
        m, v = lib.zeros_like(p), lib.zeros_like(p)
        for step, (r, val) in enumerate(zip(rows, values), 1):
            g = lib.sparse_coo_tensor(lib.tensor([r]), lib.tensor(val), (5, 3))
            fn([p], [g], [m], [v], [step], eps=1e-8, beta1=0.9, beta2=0.99, lr=0.1,
               maximize=maximize)
        return [t.numpy() if lib is torch else to_np(t) for t in (p, m, v)]
    for maximize in (False, True):
        for g, w in zip(run(ember, sparse_adam, maximize), run(torch, torch_sparse_adam,
                                                                maximize)):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_sparse_gradients_take_the_loop_under_foreach(torch):
    """SGD and Adagrad step with sparse gradients on the foreach path too (as PyTorch: those
    parameters go through the per-tensor loop)."""
    def run(lib, name, **kw):
        p = lib.nn.Parameter(lib.ones(4, 2))
        opt = getattr(lib.optim, name)([p], lr=0.1, foreach=True, **kw)
        for _ in range(2):
            p.grad = lib.sparse_coo_tensor(lib.tensor([[0, 3]]), lib.tensor([[1.0, 2.0],
                                                                            [3.0, 4.0]]),
                                           (4, 2))
            opt.step()
        return p.detach()
    for name, kw in (("SGD", dict(momentum=0.9)), ("Adagrad", {})):
        np.testing.assert_allclose(to_np(run(ember, name, **kw)), run(torch, name, **kw).numpy(),
                                   rtol=1e-6)


def test_as_torch_imports_optimizers_by_module_path(tmp_path):
    script = textwrap.dedent("""
        import torch
        from torch.optim.sgd import SGD, sgd
        from torch.optim.adam import Adam, adam
        from torch.optim import _functional as F
        p = torch.nn.Parameter(torch.ones(2))
        p.grad = torch.ones(2)
        SGD([p], lr=0.5).step()
        q = torch.ones(2)
        sgd([q], [torch.ones(2)], [None], weight_decay=0.0, momentum=0.0, lr=0.5,
            dampening=0.0, nesterov=False, maximize=False)
        # under as_torch ember's classes carry PyTorch's module names
        assert F.sgd is sgd and F.adam is adam and Adam.__module__ == "torch.optim.adam"
        print(SGD.__module__, p.tolist(), q.tolist())
    """)
    (tmp_path / "prog.py").write_text(script)
    p = subprocess.run([sys.executable, "-m", "ember.as_torch", str(tmp_path / "prog.py")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["torch.optim.sgd", "[0.5,", "0.5]", "[0.5,", "0.5]"]

"""``ember.autograd.functional`` (vjp, jvp, jacobian, hessian, vhp, hvp) and ``ember.func``
(grad, grad_and_value, vjp), compared with PyTorch: values, return structure, requires_grad of
the results, and the error types and messages of bad arguments."""
import numpy as np
import pytest

import ember
from helpers import to_torch


def _inputs(torch, *shapes):
    rng = np.random.default_rng(0)
    e = tuple(ember.tensor(rng.standard_normal(s)) for s in shapes)
    return e, tuple(to_torch(torch, x) for x in e)


def _flat(x):
    """Nested tuples of tensors as nested lists of (shape, values, requires_grad)."""
    if isinstance(x, (tuple, list)):
        return [type(x).__name__] + [_flat(v) for v in x]
    if isinstance(x, dict):
        return {k: _flat(v) for k, v in x.items()}
    if hasattr(x, "shape"):
        return (tuple(x.shape), np.round(np.array(x.detach().tolist(), dtype=np.float64), 8)
                .tolist(), x.requires_grad)
    return x


def _outcome(fn):
    try:
        return _flat(fn()), None
    except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
        return None, (type(e).__name__, str(e).replace("torch.", "ember."))


def _same(torch, call, *shapes):
    e_in, t_in = _inputs(torch, *shapes)
    e = _outcome(lambda: call(ember, *e_in))
    t = _outcome(lambda: call(torch, *t_in))
    if t[1] is not None:
        assert e[1] is not None and e[1][0] == t[1][0], (e, t)
        assert e[1][1] == t[1][1].replace("torch.Size", "torch.Size")
    else:
        assert e == t


def f_single(lib, x):
    return (x ** 3).sum(-1) * 2


def f_multi(lib, x, y):
    return (x * y.sum()).exp(), (x.sin() * 2).sum()


def f_scalar(lib, x, y):
    return (x.exp() * (y ** 2).sum()).sum()


CASES = {
    "vjp": (lambda lib, x: lib.autograd.functional.vjp(lambda a: f_single(lib, a), x,
                                                        lib.ones(2, dtype=x.dtype)), [(2, 3)]),
    "vjp tuple": (lambda lib, x, y: lib.autograd.functional.vjp(
        lambda a, b: f_multi(lib, a, b), (x, y), (x.cos(), lib.tensor(1.5, dtype=x.dtype))),
        [(3,), (2,)]),
    "vjp create_graph": (lambda lib, x: lib.autograd.functional.vjp(
        lambda a: f_single(lib, a), x.requires_grad_(), lib.ones(2, dtype=x.dtype),
        create_graph=True), [(2, 3)]),
    "vjp no v": (lambda lib, x: lib.autograd.functional.vjp(lambda a: (a ** 2).sum(), x),
                 [(3,)]),
    "vjp no v error": (lambda lib, x: lib.autograd.functional.vjp(lambda a: a ** 2, x), [(3,)]),
    "vjp bad v length": (lambda lib, x, y: lib.autograd.functional.vjp(
        lambda a, b: f_multi(lib, a, b), (x, y), (x,)), [(3,), (2,)]),
    "vjp bad v size": (lambda lib, x: lib.autograd.functional.vjp(
        lambda a: f_single(lib, a), x, lib.ones(3, dtype=x.dtype)), [(2, 3)]),
    "vjp bad input": (lambda lib, x: lib.autograd.functional.vjp(lambda a: a, (x, 3)), [(3,)]),
    "vjp bad input single": (lambda lib, x: lib.autograd.functional.vjp(lambda a: a, [x]),
                             [(3,)]),
    "vjp unused strict": (lambda lib, x, y: lib.autograd.functional.vjp(
        lambda a, b: (a * 2).sum(), (x, y), strict=True), [(3,), (2,)]),
    "vjp unused": (lambda lib, x, y: lib.autograd.functional.vjp(
        lambda a, b: (a * 2).sum(), (x, y)), [(3,), (2,)]),
    "vjp strict no grad": (lambda lib, x: lib.autograd.functional.vjp(
        lambda a: a.detach().sum(), x, strict=True), [(3,)]),
    "jvp": (lambda lib, x: lib.autograd.functional.jvp(lambda a: f_single(lib, a), x,
                                                        x.cos()), [(2, 3)]),
    "jvp tuple": (lambda lib, x, y: lib.autograd.functional.jvp(
        lambda a, b: f_multi(lib, a, b), (x, y), (x.cos(), y * 0.5)), [(3,), (2,)]),
    "jvp no v error": (lambda lib, x: lib.autograd.functional.jvp(lambda a: a * 2, x), [(3,)]),
    "jvp create_graph": (lambda lib, x: lib.autograd.functional.jvp(
        lambda a: a.sin(), x.requires_grad_(), x.detach(), create_graph=True), [(3,)]),
    "jacobian": (lambda lib, x: lib.autograd.functional.jacobian(lambda a: f_single(lib, a), x),
                 [(2, 3)]),
    "jacobian tuple": (lambda lib, x, y: lib.autograd.functional.jacobian(
        lambda a, b: f_multi(lib, a, b), (x, y)), [(3,), (2,)]),
    "jacobian vectorize": (lambda lib, x, y: lib.autograd.functional.jacobian(
        lambda a, b: f_multi(lib, a, b), (x, y), vectorize=True), [(3,), (2,)]),
    "jacobian forward-mode": (lambda lib, x, y: lib.autograd.functional.jacobian(
        lambda a, b: f_multi(lib, a, b), (x, y), vectorize=True, strategy="forward-mode"),
        [(3,), (2,)]),
    "jacobian forward-mode no vectorize": (lambda lib, x: lib.autograd.functional.jacobian(
        lambda a: a * 2, x, strategy="forward-mode"), [(3,)]),
    "jacobian create_graph": (lambda lib, x: lib.autograd.functional.jacobian(
        lambda a: a.exp(), x, create_graph=True), [(3,)]),
    "jacobian strict": (lambda lib, x, y: lib.autograd.functional.jacobian(
        lambda a, b: a * 2, (x, y), strict=True), [(3,), (2,)]),
    "hessian": (lambda lib, x: lib.autograd.functional.hessian(
        lambda a: (a ** 3).sum(), x), [(2, 2)]),
    "hessian tuple": (lambda lib, x, y: lib.autograd.functional.hessian(
        lambda a, b: f_scalar(lib, a, b), (x, y)), [(3,), (2,)]),
    "hessian not scalar": (lambda lib, x: lib.autograd.functional.hessian(
        lambda a: a ** 3, x), [(3,)]),
    "vhp": (lambda lib, x, y: lib.autograd.functional.vhp(
        lambda a, b: f_scalar(lib, a, b), (x, y), (x.cos(), y + 1)), [(3,), (2,)]),
    "hvp": (lambda lib, x, y: lib.autograd.functional.hvp(
        lambda a, b: f_scalar(lib, a, b), (x, y), (x.cos(), y + 1)), [(3,), (2,)]),
    "hvp single": (lambda lib, x: lib.autograd.functional.hvp(
        lambda a: (a.sin() * a).sum(), x, x * 2), [(4,)]),
    "hvp create_graph": (lambda lib, x: lib.autograd.functional.hvp(
        lambda a: (a ** 4).sum(), x.requires_grad_(), x.detach(), create_graph=True), [(3,)]),
    "vhp not scalar": (lambda lib, x: lib.autograd.functional.vhp(
        lambda a: a ** 3, x, x), [(3,)]),
    "hvp linear strict": (lambda lib, x: lib.autograd.functional.hvp(
        lambda a: (a * 2).sum(), x, x, strict=True), [(3,)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_autograd_functional(torch, name):
    call, shapes = CASES[name]
    _same(torch, call, *shapes)


FUNC_CASES = {
    "grad": (lambda lib, x: lib.func.grad(lambda a: (a ** 3).sum())(x), [(3,)]),
    "grad argnums": (lambda lib, x, y: lib.func.grad(
        lambda a, b: (a * b.sum()).sum(), argnums=(0, 1))(x, y), [(3,), (2,)]),
    "grad argnum 1": (lambda lib, x, y: lib.func.grad(
        lambda a, b: (a.sum() * b).sum(), argnums=1)(x, y), [(3,), (2,)]),
    "grad negative argnum": (lambda lib, x, y: lib.func.grad(
        lambda a, b: (a.sum() * b).sum(), argnums=-1)(x, y), [(3,), (2,)]),
    "grad pytree": (lambda lib, x, y: lib.func.grad(
        lambda d: (d["a"] * d["b"][0].sum()).sum())({"a": x, "b": [y]}), [(3,), (2,)]),
    "grad has_aux": (lambda lib, x: lib.func.grad(
        lambda a: ((a ** 2).sum(), a.detach() * 2), has_aux=True)(x), [(3,)]),
    "grad_and_value": (lambda lib, x: lib.func.grad_and_value(lambda a: a.sin().sum())(x),
                       [(3,)]),
    "grad of grad": (lambda lib, x: lib.func.grad(lambda a: lib.func.grad(
        lambda b: (b ** 3).sum())(a).sum())(x), [(3,)]),
    "grad requires_grad input": (lambda lib, x: lib.func.grad(
        lambda a: (a ** 3).sum())(x.requires_grad_()), [(3,)]),
    "grad unused": (lambda lib, x, y: lib.func.grad(lambda a, b: (b * 2).sum())(x, y),
                    [(3,), (2,)]),
    "grad not scalar": (lambda lib, x: lib.func.grad(lambda a: a * 2)(x), [(3,)]),
    "grad not tensor": (lambda lib, x: lib.func.grad(lambda a: 3.0)(x), [(3,)]),
    "grad tuple output": (lambda lib, x: lib.func.grad(lambda a: (a.sum(), 1))(x), [(3,)]),
    "grad bad aux": (lambda lib, x: lib.func.grad(lambda a: a.sum(), has_aux=True)(x), [(3,)]),
    "grad bad argnums": (lambda lib, x: lib.func.grad(lambda a: a.sum(), argnums="a")(x),
                         [(3,)]),
    "grad argnum range": (lambda lib, x: lib.func.grad(lambda a: a.sum(), argnums=2)(x),
                          [(3,)]),
    "grad empty argnums": (lambda lib, x: lib.func.grad(lambda a: a.sum(), argnums=())(x),
                           [(3,)]),
    "grad int input": (lambda lib, x: lib.func.grad(lambda a: a.sum())(3), [(3,)]),
    "vjp": (lambda lib, x, y: (lambda r: (r[0], r[1](x.cos())))(
        lib.func.vjp(lambda a, b: a * b.sum(), x, y)), [(3,), (2,)]),
    "vjp twice": (lambda lib, x: (lambda r: (r[1](x), r[1](x * 2)))(
        lib.func.vjp(lambda a: a.exp(), x)), [(3,)]),
    "vjp tuple output": (lambda lib, x: (lambda r: r[1]((x, x.sum())))(
        lib.func.vjp(lambda a: (a.sin(), (a * 3).sum()), x)), [(3,)]),
    "vjp has_aux": (lambda lib, x: (lambda r: (r[0], r[1](x), r[2]))(
        lib.func.vjp(lambda a: (a * 2, a.detach() + 1), x, has_aux=True)), [(3,)]),
    "vjp bad cotangent": (lambda lib, x: lib.func.vjp(lambda a: a * 2, x)[1](x[:2]), [(3,)]),
}


@pytest.mark.parametrize("name", list(FUNC_CASES))
def test_func(torch, name):
    call, shapes = FUNC_CASES[name]
    _same(torch, call, *shapes)


def test_closure_requiring_grad_keeps_graph(torch):
    """A closure tensor that requires grad makes the result differentiable, as in PyTorch."""
    w = ember.tensor(2.0, requires_grad=True)
    x = ember.tensor([1.0, 2.0])
    g = ember.func.grad(lambda a: (a * a * w).sum())(x)
    assert g.requires_grad
    g.sum().backward()
    assert w.grad.tolist() == 6.0

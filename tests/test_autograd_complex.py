"""Complex autograd follows PyTorch's convention (the gradient is the conjugate Wirtinger
derivative: formulas multiply by the conjugate of the local derivative, and a real input of a
complex computation gets the real part): gradients compared with PyTorch's."""
import numpy as np
import pytest

import ember
from helpers import assert_same, to_torch

FUNCS = {
    "mul conj": lambda lib, x, y: (x * x.conj()).real.sum(),
    "abs of product": lambda lib, x, y: (x * y).abs().sum(),
    "div": lambda lib, x, y: (x / y).abs().sum(),
    "exp sin": lambda lib, x, y: (x.exp() * x.sin()).abs().sum(),
    "log sqrt": lambda lib, x, y: (x.log() + y.sqrt()).abs().sum(),
    "cos tanh sigmoid": lambda lib, x, y: (x.cos() * y.tanh() + x.sigmoid()).abs().sum(),
    "reciprocal pow": lambda lib, x, y: (x.reciprocal() + y.pow(3)).abs().sum(),
    "mm": lambda lib, x, y: lib.mm(x.view(2, 2), y.view(2, 2)).abs().sum(),
    "dot": lambda lib, x, y: lib.dot(x, y).abs(),
    "real input": lambda lib, x, y: (x * lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64)
                                     .requires_grad_()).abs().sum(),
}


def _complex_pair(torch, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    e = ember.tensor(a).requires_grad_()
    return e, to_torch(torch, e.detach()).requires_grad_()


@pytest.mark.parametrize("name", list(FUNCS))
def test_complex_grads(torch, name):
    ex, tx = _complex_pair(torch, 0)
    ey, ty = _complex_pair(torch, 1)
    FUNCS[name](ember, ex, ey).backward()
    FUNCS[name](torch, tx, ty).backward()
    for e, t in ((ex, tx), (ey, ty)):
        if t.grad is None:
            assert e.grad is None
        else:
            assert_same(e.grad, t.grad, rtol=1e-10, atol=1e-12)


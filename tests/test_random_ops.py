"""The distribution samplers (randperm, bernoulli, multinomial, poisson, exponential_,
geometric_, cauchy_, log_normal_, randint_like): shapes and dtypes against PyTorch, the
distributions by their statistics, reproducibility through seeds, generators, rng state and
fork_rng (the values of each step equal PyTorch's), Meta results, and PyTorch's argument errors
(same exception type and message, self untouched after a failed call)."""
import numpy as np
import pytest

import ember
from ember._core.device import META
from ember._tensor import empty_tensor
from helpers import to_np

N = 20000

SAMPLERS = {  # name -> (call on torch or ember, **generator kwargs)
    "randperm": lambda L, **g: L.randperm(10, **g),
    "randperm_float": lambda L, **g: L.randperm(6, dtype=L.float32, **g),
    "bernoulli": lambda L, **g: L.bernoulli(L.full((3, 4), 0.5), **g),
    "bernoulli_p": lambda L, **g: L.bernoulli(L.zeros(5, dtype=L.float64), 0.3, **g),
    "bernoulli_p_int": lambda L, **g: L.bernoulli(L.zeros(5, dtype=L.int32), 0.3, **g),
    "bernoulli_method": lambda L, **g: L.full((4,), 0.5).bernoulli(**g),
    "bernoulli_tensor_": lambda L, **g: L.zeros(2, 3).bernoulli_(L.full((3,), 0.5), **g),
    "bernoulli_float_": lambda L, **g: L.zeros(6, dtype=L.bool).bernoulli_(0.5, **g),
    "multinomial": lambda L, **g: L.multinomial(L.tensor([0.1, 0.2, 0.7]), 2, **g),
    "multinomial_repl": lambda L, **g: L.multinomial(L.ones(2, 4), 6, True, **g),
    "poisson": lambda L, **g: L.poisson(L.full((2, 3), 4.0), **g),
    "exponential_": lambda L, **g: L.empty(6).exponential_(2.0, **g),
    "geometric_": lambda L, **g: L.empty(6, dtype=L.int64).geometric_(0.3, **g),
    "cauchy_": lambda L, **g: L.empty(6, dtype=L.float64).cauchy_(1.0, 2.0, **g),
    "log_normal_": lambda L, **g: L.empty(6, dtype=L.float16).log_normal_(0.0, 0.5, **g),
}
NO_GENERATOR = {"randint_like": lambda L: L.randint_like(L.zeros(2, 3), 10),
                "randint_like_low": lambda L: L.randint_like(L.zeros(4, dtype=L.int8), -5, 5),
                "randint_like_tensor": lambda L: L.randint_like(L.zeros(4), L.tensor(7)),
                "randint_like_dtype": lambda L: L.randint_like(L.zeros(3).t(), 5,
                                                               dtype=L.int64)}


def _vals(t):
    return to_np(t).astype(np.float64).tolist()


@pytest.mark.parametrize("name", sorted(SAMPLERS) + sorted(NO_GENERATOR))
def test_shape_dtype_and_seed(torch, name):
    fn = SAMPLERS.get(name) or NO_GENERATOR[name]
    t = fn(torch)
    ember.manual_seed(123)
    a, b = fn(ember), fn(ember)
    ember.manual_seed(123)
    c = fn(ember)
    assert tuple(a.shape) == tuple(t.shape) and a.dtype.name == str(t.dtype)[6:]
    assert tuple(a.stride()) == tuple(t.stride())
    assert _vals(a) == _vals(c)
    if name not in ("bernoulli_float_",):  # 6 fair bits may repeat
        assert _vals(a) != _vals(b)


def _state_and_fork_steps(L, fn):
    """Each draw of a sequence that seeds, uses explicit generators, restores a saved state and
    forks the default generator."""
    steps = []
    L.manual_seed(7)
    steps.append(_vals(fn(L)))
    L.manual_seed(7)
    g = L.Generator().manual_seed(99)
    steps.append(_vals(fn(L, generator=g)))  # must not advance the default generator
    steps.append(_vals(fn(L)))
    g1, g2 = L.Generator().manual_seed(5), L.Generator().manual_seed(5)
    steps += [_vals(fn(L, generator=g1)), _vals(fn(L, generator=g2))]
    state = L.get_rng_state()
    steps.append(_vals(fn(L)))
    L.set_rng_state(state)
    steps.append(_vals(fn(L)))
    with L.random.fork_rng():
        steps.append(_vals(fn(L)))
    steps.append(_vals(fn(L)))
    return steps


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_generator_state_and_fork(torch, name):
    fn = SAMPLERS[name]
    steps = _state_and_fork_steps(ember, fn)
    assert steps[2] == steps[0] and steps[3] == steps[4] and steps[6] == steps[5]
    assert steps[8] == steps[7]  # fork_rng restored the state it found
    assert steps == _state_and_fork_steps(torch, fn)


def test_randperm(torch):
    ember.manual_seed(0)
    p = to_np(ember.randperm(1000))
    assert sorted(p.tolist()) == list(range(1000))
    assert (p != np.arange(1000)).any()
    assert ember.randperm(0).shape == (0,)
    assert ember.randperm(5, dtype=ember.float16).dtype is ember.float16
    out = ember.empty(2, 2)
    assert ember.ops.aten.randperm.out(7, out=out) is out
    assert out.shape == (7,) and sorted(to_np(out).tolist()) == list(range(7))
    assert ember.randperm(4, device="meta").device.type == "meta"


def test_bernoulli_statistics(torch):
    ember.manual_seed(1)
    p = ember.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).expand(N, 5)
    m = to_np(ember.bernoulli(p)).mean(0)
    np.testing.assert_allclose(m, [0, 0.1, 0.5, 0.9, 1.0], atol=0.015)
    assert to_np(ember.bernoulli(ember.zeros(N), 0.25)).mean() == pytest.approx(0.25, abs=0.015)
    x = ember.zeros(N, 2, dtype=ember.int64).bernoulli_(ember.tensor([0.2, 0.8]))
    np.testing.assert_allclose(to_np(x).mean(0), [0.2, 0.8], atol=0.015)
    assert set(np.unique(to_np(x)).tolist()) <= {0, 1}
    out = ember.empty(0)
    assert ember.bernoulli(ember.full((3,), 0.5), out=out) is out and out.shape == (3,)


def test_multinomial_statistics(torch):
    ember.manual_seed(2)
    probs = ember.tensor([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 5.0, 0.0]])
    s = to_np(ember.multinomial(probs, N, replacement=True))
    np.testing.assert_allclose(np.bincount(s[0], minlength=4) / N, [0.1, 0.2, 0.0, 0.7],
                               atol=0.015)
    assert (s[1] == 2).all()
    # without replacement: distinct indices, nonzero categories first, first draw ~ p
    w = to_np(ember.multinomial(probs[:1].expand(N, 4), 3))
    assert (np.sort(w, 1) == [0, 1, 3]).all()
    np.testing.assert_allclose(np.bincount(w[:, 0], minlength=4) / N, [0.1, 0.2, 0, 0.7],
                               atol=0.015)
    full = to_np(ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 3))
    assert full[0] == 1 and sorted(full.tolist()) == [0, 1, 2]
    assert ember.multinomial(ember.zeros(0, 3), 2).shape == (0, 2)
    out = ember.empty(0, dtype=ember.int64)
    assert ember.multinomial(ember.ones(4), 2, out=out) is out and out.shape == (2,)


def test_continuous_statistics(torch):
    ember.manual_seed(3)
    e = to_np(ember.empty(N, dtype=ember.float64).exponential_(2.0))
    assert e.min() >= 0 and e.mean() == pytest.approx(0.5, rel=0.05)
    g = to_np(ember.empty(N, dtype=ember.int64).geometric_(0.25))
    assert g.min() >= 1 and g.mean() == pytest.approx(4.0, rel=0.05)
    c = to_np(ember.empty(N, dtype=ember.float64).cauchy_(1.0, 2.0))
    assert np.median(c) == pytest.approx(1.0, abs=0.1)
    assert np.percentile(c, 75) - np.percentile(c, 25) == pytest.approx(4.0, rel=0.1)
    ln = to_np(ember.empty(N, dtype=ember.float64).log_normal_(0.5, 0.25))
    assert np.log(ln).mean() == pytest.approx(0.5, abs=0.01)
    assert np.log(ln).std() == pytest.approx(0.25, rel=0.05)
    rates = ember.tensor([0.0, 1.0, 30.0]).expand(N, 3)
    ps = to_np(ember.poisson(rates))
    np.testing.assert_allclose(ps.mean(0), [0, 1, 30], rtol=0.05, atol=0.01)
    np.testing.assert_allclose(ps.var(0), [0, 1, 30], rtol=0.1, atol=0.01)
    assert (ps == np.round(ps)).all()
    r = to_np(ember.randint_like(ember.zeros(N), 3, 7))
    assert set(np.unique(r).tolist()) == {3, 4, 5, 6}


def test_samplers_write_strided_self(torch):
    base = ember.zeros(4, 6)
    view = base[:, ::2]
    view.exponential_()
    b = to_np(base)
    assert (b[:, ::2] > 0).all() and (b[:, 1::2] == 0).all()


def test_no_gradient_flows(torch):
    p = ember.full((3,), 0.5, requires_grad=True)
    y = ember.bernoulli(p)
    assert y.requires_grad
    y.sum().backward()
    assert (to_np(p.grad) == 0).all()
    assert not ember.multinomial(p, 2).requires_grad


META_CALLS = [
    lambda m: ember.multinomial(m((2, 5)), 3),
    lambda m: ember.poisson(m((2, 3))),
    lambda m: ember.bernoulli(m((2, 3))),
    lambda m: ember.bernoulli(m((2, 3)), 0.5),
    lambda m: m((2, 3)).exponential_(),
    lambda m: m((2, 3)).geometric_(0.5),
    lambda m: m((2, 3)).cauchy_(),
    lambda m: m((2, 3)).log_normal_(),
    lambda m: m((2, 3)).bernoulli_(m((3,))),
    lambda m: ember.randint_like(m((2, 3)), 4),
]


@pytest.mark.parametrize("i", range(len(META_CALLS)))
def test_meta(i):
    cpu = META_CALLS[i](lambda s: ember.full(s, 0.5))
    meta = META_CALLS[i](lambda s: empty_tensor(s, ember.float32, META))
    assert meta.device.type == "meta"
    assert (tuple(meta.shape), meta.dtype) == (tuple(cpu.shape), cpu.dtype)


ERRORS = [
    lambda L: L.randperm(-1),
    lambda L: L.randperm(5, dtype=L.bool),
    lambda L: L.randperm(3, dtype=L.complex64),
    lambda L: L.randperm(2050, dtype=L.float16),
    lambda L: L.randperm(129, dtype=L.int8),
    lambda L: L.bernoulli(L.tensor([1, 0])),
    lambda L: L.bernoulli(L.tensor([0.5, 2.0])),
    lambda L: L.bernoulli(L.tensor([0.5, float("nan")])),
    lambda L: L.bernoulli(L.tensor([0.5, 0.3]), 1.3),
    lambda L: L.bernoulli(L.tensor([0.5, 0.3]), -0.5),
    lambda L: L.bernoulli(L.tensor([0.5, 0.3], dtype=L.complex64)),
    lambda L: L.zeros(3, dtype=L.complex64).bernoulli_(0.5),
    lambda L: L.zeros(2, 3).bernoulli_(L.tensor([0.5, 0.3])),
    lambda L: L.zeros(3).bernoulli_(L.zeros(2, 3)),
    lambda L: L.zeros(3).bernoulli_(L.tensor([True, False, True])),
    lambda L: L.multinomial(L.tensor([0.2, 0.8]), 3),
    lambda L: L.multinomial(L.tensor([0.2, 0.8]), 0, True),
    lambda L: L.multinomial(L.ones(2, 2, 2), 1),
    lambda L: L.multinomial(L.tensor(1.0), 1),
    lambda L: L.multinomial(L.tensor([1, 2]), 1),
    lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1),
    lambda L: L.multinomial(L.tensor([[1.0, 2.0], [0.0, 0.0]]), 1),
    lambda L: L.multinomial(L.tensor([-1.0, 2.0]), 1),
    lambda L: L.multinomial(L.tensor([float("inf"), 2.0]), 1),
    lambda L: L.multinomial(L.tensor([float("nan"), 2.0]), 1),
    lambda L: L.poisson(L.tensor([-1.0, 2.0])),
    lambda L: L.poisson(L.tensor([float("nan")])),
    lambda L: L.poisson(L.tensor([1, 2])),
    lambda L: L.zeros(3).exponential_(0),
    lambda L: L.zeros(3).exponential_(-1.25),
    lambda L: L.zeros(3, dtype=L.int64).exponential_(),
    lambda L: L.zeros(3, dtype=L.complex64).exponential_(),
    lambda L: L.zeros(3).geometric_(0),
    lambda L: L.zeros(3).geometric_(1.5),
    lambda L: L.zeros(3, dtype=L.bool).geometric_(0.5),
    lambda L: L.zeros(3).cauchy_(0, 0),
    lambda L: L.zeros(3, dtype=L.int64).cauchy_(),
    lambda L: L.zeros(3, dtype=L.int16).cauchy_(),
    lambda L: L.zeros(3, dtype=L.complex128).cauchy_(),
    lambda L: L.zeros(3).log_normal_(0, -1),
    lambda L: L.zeros(3, dtype=L.int64).log_normal_(),
    lambda L: L.randint_like(L.zeros(3), 3, 2),
    lambda L: L.randint_like(L.zeros(3), 0),
    lambda L: L.randint_like(L.zeros(3, dtype=L.int8), 200),
    lambda L: L.randint_like(L.zeros(3, dtype=L.complex64), 5),
    lambda L: L.randint_like(L.zeros(3), L.tensor([5, 6, 7])),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(torch, i):
    with pytest.raises(Exception) as te:
        ERRORS[i](torch)
    with pytest.raises(type(te.value)) as ee:
        ERRORS[i](ember)
    assert str(ee.value) == str(te.value)


def test_failed_sampler_leaves_self_untouched(torch):
    x = ember.arange(6.0)
    for bad in (lambda: x.exponential_(-1), lambda: x.geometric_(2), lambda: x.cauchy_(0, -1),
                lambda: x.log_normal_(0, 0), lambda: x.bernoulli_(1.5),
                lambda: x.bernoulli_(ember.full((6,), 2.0))):
        with pytest.raises(RuntimeError):
            bad()
        assert to_np(x).tolist() == list(range(6))

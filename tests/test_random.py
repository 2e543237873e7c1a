"""Random numbers: reproducibility under seeds, generator independence and state round trips,
shapes/dtypes of every sampler compared with PyTorch, rough distribution checks, and PyTorch's
argument errors. (The values themselves are compared with PyTorch's, bit for bit, in
test_random_pytorch_streams.py.)"""
import numpy as np
import pytest

import ember
from helpers import to_np


def _same_error(ember_fn, torch_fn):
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(type(te.value)) as ee:
        ember_fn()
    assert str(ee.value) == str(te.value), (str(ee.value), str(te.value))


SAMPLERS = {
    "rand": lambda L, **g: L.rand(3, 4, **g),
    "randn": lambda L, **g: L.randn(3, 4, **g),
    "randint": lambda L, **g: L.randint(3, 10, (5,), **g),
    "randint_high": lambda L, **g: L.randint(10, (2, 2), **g),
    "normal": lambda L, **g: L.normal(2.0, 3.0, (4,), **g),
    "normal_tensor": lambda L, **g: L.normal(L.zeros(2, 2), L.ones(2), **g),
    "uniform_": lambda L, **g: L.empty(5).uniform_(-2, 2, **g),
    "normal_": lambda L, **g: L.empty(5, dtype=L.float64).normal_(1.0, 0.5, **g),
    "random_": lambda L, **g: L.empty(5, dtype=L.int32).random_(0, 100, **g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_same_values(torch, name):
    ember.manual_seed(123)
    a = SAMPLERS[name](ember)
    b = SAMPLERS[name](ember)
    ember.manual_seed(123)
    c = SAMPLERS[name](ember)
    assert to_np(a).tolist() == to_np(c).tolist()
    assert to_np(a).tolist() != to_np(b).tolist()
    t = SAMPLERS[name](torch)
    assert a.shape == tuple(t.shape) and a.dtype.name == str(t.dtype)[6:]


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_explicit_generator_is_independent(torch, name):
    ember.manual_seed(7)
    expected = to_np(SAMPLERS[name](ember)).tolist()
    ember.manual_seed(7)
    g = ember.Generator().manual_seed(99)
    SAMPLERS[name](ember, generator=g)  # must not advance the default generator
    assert to_np(SAMPLERS[name](ember)).tolist() == expected
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    assert to_np(SAMPLERS[name](ember, generator=g1)).tolist() == \
        to_np(SAMPLERS[name](ember, generator=g2)).tolist()


def test_like_samplers(torch):
    x = ember.ones(2, 3).t()
    ember.manual_seed(0)
    a = ember.rand_like(x)
    ember.manual_seed(0)
    assert ember.rand_like(x).tolist() == a.tolist()
    assert a.stride() == torch.rand_like(torch.ones(2, 3).t()).stride()
    g = ember.Generator().manual_seed(1)
    r = ember.randn_like(x, generator=g, dtype=ember.float64)
    assert r.dtype is ember.float64 and r.shape == (3, 2)


def test_state_round_trip(torch):
    ember.manual_seed(42)
    state = ember.get_rng_state()
    assert state.dtype is ember.uint8 and state.dim() == 1
    a = ember.randn(10).tolist()
    ember.set_rng_state(state)
    assert ember.randn(10).tolist() == a
    g = ember.Generator()
    s = g.get_state()
    x = ember.rand(4, generator=g).tolist()
    g.set_state(s)
    assert ember.rand(4, generator=g).tolist() == x
    # a partially used 32-bit buffer survives the round trip too
    ember.randint(0, 2, (3,), dtype=ember.int32)
    s = ember.get_rng_state()
    b = ember.rand(5).tolist()
    ember.set_rng_state(s)
    assert ember.rand(5).tolist() == b


def test_fork_rng(torch):
    ember.manual_seed(3)
    with ember.random.fork_rng():
        ember.rand(100)
    after = ember.rand(3).tolist()
    ember.manual_seed(3)
    assert ember.rand(3).tolist() == after


def test_seeds(torch):
    g = ember.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed() == 67280421310721
    assert g.device == ember.device("cpu")
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.manual_seed(-5).initial_seed() == torch.Generator().manual_seed(-5).initial_seed()
    assert ember.manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    assert ember.manual_seed("3").initial_seed() == 3
    assert ember.manual_seed(1) is ember.default_generator
    assert ember.initial_seed() == 1
    s = ember.seed()
    assert ember.initial_seed() == s
    _same_error(lambda: ember.manual_seed(2 ** 64), lambda: torch.manual_seed(2 ** 64))
    _same_error(lambda: ember.Generator().manual_seed("a"), lambda: torch.Generator().manual_seed("a"))
    with pytest.raises(RuntimeError):
        ember.Generator("meta")


def test_set_state_errors(torch):
    _same_error(lambda: ember.Generator().set_state(ember.zeros(3)),
                lambda: torch.Generator().set_state(torch.zeros(3)))
    _same_error(lambda: ember.Generator().set_state([1]), lambda: torch.Generator().set_state([1]))
    with pytest.raises(RuntimeError, match="the input RNG state size to be 3"):
        ember.Generator().set_state(ember.zeros(3, dtype=ember.uint8))


def test_distributions(torch):
    g = ember.Generator().manual_seed(0)
    u = to_np(ember.rand(20000, generator=g))
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    n = to_np(ember.randn(20000, dtype=ember.float64, generator=g))
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    r = to_np(ember.randint(-3, 4, (5000,), generator=g))
    assert set(r.tolist()) == set(range(-3, 4))
    nn = to_np(ember.normal(10.0, 2.0, (20000,), generator=g))
    assert abs(nn.mean() - 10) < 0.1 and abs(nn.std() - 2) < 0.1
    f = to_np(ember.empty(1000).random_(0, 10, generator=g))
    assert set(f.tolist()) <= set(float(i) for i in range(10))
    b = to_np(ember.empty(1000, dtype=ember.bool).random_(generator=g))
    assert b.any() and not b.all()
    c = to_np(ember.randn(20000, dtype=ember.complex64, generator=g))
    assert abs(np.var(c) - 1) < 0.05  # each part carries half the variance, as in PyTorch
    big = to_np(ember.empty(1000, dtype=ember.int64).random_(-2 ** 63, None, generator=g))
    assert (big < 0).any() and (big > 2 ** 62).any()


@pytest.mark.parametrize("make", [
    lambda L: L.randint(10, (2,), dtype=L.float32), lambda L: L.randint(0, 2, (3,), dtype=L.bool),
    lambda L: L.rand(2, dtype=L.float64), lambda L: L.randn(2, dtype=L.complex64),
    lambda L: L.rand(2, dtype=L.bfloat16), lambda L: L.normal(0, 1, (2,)),
    lambda L: L.normal(0, 1, size=(2,), dtype=L.float64),
    lambda L: L.normal(L.zeros(2, dtype=L.float64), L.ones(2)),
    lambda L: L.normal(2.0, L.ones(3, dtype=L.float64)), lambda L: L.normal(L.zeros(2, 1), L.ones(3)),
    lambda L: L.normal(L.zeros(3), 2.0), lambda L: L.empty(3, dtype=L.complex64).uniform_(),
    lambda L: L.empty(3, dtype=L.float16).random_(),
])
def test_sampler_dtypes_and_shapes(torch, make):
    e, t = make(ember), make(torch)
    assert e.shape == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]


@pytest.mark.parametrize("call", [
    lambda L: L.randint(5, 5, (2,)), lambda L: L.randint(0, (2,)), lambda L: L.randint(-1, (2,)),
    lambda L: L.randint(0, 300, (2,), dtype=L.uint8), lambda L: L.rand(2, dtype=L.long),
    lambda L: L.randn(2, dtype=L.long), lambda L: L.empty(3).uniform_(1, 0),
    lambda L: L.empty(3, dtype=L.long).uniform_(), lambda L: L.empty(3, dtype=L.bool).uniform_(),
    lambda L: L.empty(3).uniform_(0, float("inf")), lambda L: L.empty(3).normal_(0, -1),
    lambda L: L.normal(0.0, -1.0, (2,)), lambda L: L.normal(L.zeros(2), -1.0),
    lambda L: L.normal(L.zeros(2), L.tensor([-1.0, 1.0])), lambda L: L.normal(L.zeros(2), L.ones(3)),
    lambda L: L.normal(L.zeros(2, dtype=L.long), 1.0), lambda L: L.empty(3).random_(5, 5),
    lambda L: L.empty(3, dtype=L.uint8).random_(0, 300), lambda L: L.empty(3, dtype=L.uint8).random_(-1, 5),
    lambda L: L.empty(3).random_(-5), lambda L: L.empty(3, dtype=L.float16).random_(0, 70000),
    lambda L: L.randint(5, 5, (2,), device="meta"), lambda L: L.randn(2, -1),
    lambda L: L.normal(0.0, -1.0, (2,), device="meta"),
])
def test_errors(torch, call):
    _same_error(lambda: call(ember), lambda: call(torch))


def test_failed_sampler_leaves_tensor_unchanged(torch):
    e = ember.ones(3)
    with pytest.raises(RuntimeError):
        e.uniform_(1, 0)
    with pytest.raises(RuntimeError):
        e.random_(5, 5)
    assert e.tolist() == [1.0, 1.0, 1.0]


def test_random_float_range_warning(torch):
    with pytest.warns(UserWarning, match="to - 1 is out of bounds"):
        ember.empty(3).random_(0, 2 ** 25)


def test_meta_samplers(torch):
    m = ember.empty(2, 3, device="meta")
    for out in (m.uniform_(), m.normal_(), m.random_(), m.random_(0, 5), m.random_(5)):
        assert out is m
    n = ember.normal(ember.zeros(2, 1, device="meta"), ember.ones(3, device="meta"))
    assert n.shape == (2, 3) and n.device.type == "meta"

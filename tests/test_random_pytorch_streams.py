"""ember's CPU random numbers are PyTorch's: after the same seed every sampler gives the same
values bit for bit (all dtypes, sizes below, at and past 16, not multiples of 16, non-contiguous
tensors), leaves the generator in the same state (compared byte for byte), and the state tensors
interchange: one saved by PyTorch continues PyTorch's stream in ember, and the other way round.
Module initialisation (nn.Linear, nn.Conv2d, nn.Embedding, ...) draws PyTorch's weights.
Every case runs twice: with the compiled kernels (``_random_c``) and with the NumPy code they
replace, which stays the reference where no C compiler is found."""
import numpy as np
import pytest

import ember
from ember._inductor.codecache import compiler_features
from ember._inductor.exc import InvalidCxxCompiler
from ember._kernels.cpu import _random_c, generated
from helpers import to_np

SEEDS = [0, 2 ** 32 + 5, 2 ** 63 + 12345]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
SIZES = [1, 5, 16, 17, 40, 1003]


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def kernels(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(_random_c, "module", lambda: None)
    elif generated.enabled():  # where this machine has a compiler, the module builds
        try:
            compiler_features()
        except InvalidCxxCompiler:
            return request.param
        assert _random_c.module() is not None
    return request.param


def _check(torch, fn, seed=0):
    """fn(ember) equals fn(torch) exactly after manual_seed(seed), and so do the states."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e, t = fn(ember), fn(torch)
    assert e.dtype.name == str(t.dtype)[6:] and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(to_np(e), to_np(t))
    np.testing.assert_array_equal(to_np(ember.get_rng_state()), torch.get_rng_state().numpy())


@pytest.mark.parametrize("seed", SEEDS)
def test_seeds_and_initial_state(torch, seed):
    _check(torch, lambda L: L.rand(7), seed)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert ember.initial_seed() == torch.initial_seed()
    np.testing.assert_array_equal(to_np(ember.get_rng_state()), torch.get_rng_state().numpy())
    assert ember.get_rng_state().numel() == 5056


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_rand_randn_uniform_normal(torch, dtype, n):
    _check(torch, lambda L: L.cat([L.rand(n, dtype=getattr(L, dtype)),
                                   L.randn(n, dtype=getattr(L, dtype)),
                                   L.empty(n, dtype=getattr(L, dtype)).uniform_(-2.5, 3.75),
                                   L.empty(n, dtype=getattr(L, dtype)).normal_(1.5, 0.3)]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_non_contiguous_in_iteration_order(torch, dtype):
    def fn(L):
        d = getattr(L, dtype)
        return L.cat([L.empty(7, 9, dtype=d).t().normal_().reshape(-1),
                      L.empty(7, 9, dtype=d).t().uniform_(-1, 2).reshape(-1),
                      L.zeros(8, 10, dtype=d)[:, ::2].normal_(0.5, 2.0).reshape(-1),
                      L.zeros(3, 4, 5, dtype=d).permute(2, 0, 1).exponential_().reshape(-1)])
    _check(torch, fn)


def test_normal_cache_and_complex(torch):
    # an odd count leaves the second Box-Muller sample cached; the next small draw uses it
    _check(torch, lambda L: L.cat([L.randn(3), L.randn(5, dtype=L.float64).float(),
                                   L.empty(2, 3).t().normal_(2.0, 0.5).reshape(-1)]))
    _check(torch, lambda L: L.randn(21, dtype=L.complex64))
    _check(torch, lambda L: L.rand(3, 5, dtype=L.complex128))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"] + FLOATS)
def test_random_and_randint(torch, dtype):
    def fn(L):
        d = getattr(L, dtype)
        parts = [L.empty(30, dtype=d).random_(), L.empty(30, dtype=d).random_(2)]
        if dtype != "bool":
            parts += [L.empty(30, dtype=d).random_(-3 if dtype != "uint8" else 3, 100),
                      L.randint(5, 77, (4, 5), dtype=d).reshape(-1)]
        return L.cat([p.to(L.float64) for p in parts])
    _check(torch, fn)


def test_random_wide_ranges(torch):
    _check(torch, lambda L: L.randint(-2 ** 40, 2 ** 40, (30,)))
    _check(torch, lambda L: L.empty(12, dtype=L.int64).random_(-2 ** 63, None))
    _check(torch, lambda L: L.empty(12, dtype=L.int32).random_(5, None))
    _check(torch, lambda L: L.randint_like(L.zeros(3, 4), 3, 9))


@pytest.mark.parametrize("n", [0, 1, 2, 10, 2000])
def test_randperm(torch, n):
    _check(torch, lambda L: L.randperm(n))
    _check(torch, lambda L: L.randperm(n, dtype=L.float32))


def test_bernoulli_tensor(torch):
    _check(torch, lambda L: L.bernoulli(L.rand(5, 7)))
    _check(torch, lambda L: L.bernoulli(L.rand(5, 7, dtype=L.float64)))
    _check(torch, lambda L: L.empty(4, 6).bernoulli_(L.rand(6)))
    _check(torch, lambda L: L.empty(4, 6, dtype=L.int64).t().bernoulli_(L.rand(6, 4)))


def _bernoulli_float_uses_mt19937(torch):
    """PyTorch builds with MKL draw bernoulli_(float) from MKL's stream on Intel CPUs."""
    torch.manual_seed(0)
    torch.empty(8).bernoulli_(0.5)
    after = torch.get_rng_state()
    torch.manual_seed(0)
    torch.empty(8, dtype=torch.float64).uniform_()
    return torch.equal(after, torch.get_rng_state())


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_bernoulli_float_and_dropout(torch, dtype):
    if not _bernoulli_float_uses_mt19937(torch):
        pytest.skip("this PyTorch draws bernoulli_(float) from MKL's VSL stream")
    _check(torch, lambda L: L.empty(3, 41, dtype=getattr(L, dtype)).bernoulli_(0.3))
    _check(torch, lambda L: L.bernoulli(L.zeros(5, dtype=getattr(L, dtype)), 0.6))
    if dtype == "float32":
        for name in ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout2d"):
            _check(torch, lambda L: getattr(L.nn.functional, name)(L.randn(4, 6, 5, 3), 0.3))
        _check(torch, lambda L: L.native_dropout(L.randn(40, dtype=L.float64), 0.2, True)[0])
        _check(torch, lambda L: L.native_dropout(L.randn(40), 0.2, True)[1])


@pytest.mark.parametrize("dtype", FLOATS)
def test_continuous_samplers(torch, dtype):
    def fn(L):
        d = getattr(L, dtype)
        return L.cat([L.empty(50, dtype=d).exponential_(2.5),
                      L.empty(50, dtype=d).cauchy_(0.5, 2.0),
                      L.empty(51, dtype=d).log_normal_(0.5, 0.7),
                      L.empty(50, dtype=d).geometric_(0.3)]).to(L.float64)
    _check(torch, fn)
    _check(torch, lambda L: L.empty(20, dtype=L.int32).geometric_(0.2))


def test_tensor_normal_overloads(torch):
    _check(torch, lambda L: L.normal(L.rand(40), L.rand(40)))
    _check(torch, lambda L: L.normal(L.rand(40), 0.7))
    _check(torch, lambda L: L.normal(L.rand(5, dtype=L.float64), 0.7))
    _check(torch, lambda L: L.normal(0.3, L.rand(3, 7)))


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("samples", [1, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial(torch, replacement, samples, dtype):
    _check(torch, lambda L: L.multinomial(L.rand(4, 10, dtype=getattr(L, dtype)), samples,
                                          replacement))
    _check(torch, lambda L: L.multinomial(L.rand(10, dtype=getattr(L, dtype)), samples,
                                          replacement))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_poisson_gamma_dirichlet_binomial(torch, dtype):
    _check(torch, lambda L: L.poisson(L.rand(100, dtype=getattr(L, dtype)) * 30))
    _check(torch, lambda L: L._standard_gamma(L.rand(100, dtype=getattr(L, dtype)) * 3))
    _check(torch, lambda L: L._sample_dirichlet(L.rand(10, 4, dtype=getattr(L, dtype)) + 0.1))
    _check(torch, lambda L: L.binomial(L.full((100,), 50.0, dtype=getattr(L, dtype)),
                                       L.rand(100, dtype=getattr(L, dtype))))
    _check(torch, lambda L: L.binomial(L.full((100,), 8.0, dtype=getattr(L, dtype)),
                                       L.rand(100, dtype=getattr(L, dtype))))


def test_states_interchange(torch):
    # PyTorch's state (with a cached normal sample) continues PyTorch's stream in ember
    torch.manual_seed(11)
    torch.randn(3)
    state = torch.get_rng_state()
    ember.set_rng_state(ember.tensor(state.numpy()))
    np.testing.assert_array_equal(to_np(ember.get_rng_state()), state.numpy())
    np.testing.assert_array_equal(to_np(ember.randn(5)), torch.randn(5).numpy())
    np.testing.assert_array_equal(to_np(ember.rand(40)), torch.rand(40).numpy())
    # and ember's, after draws past a twist, continues in PyTorch
    ember.manual_seed(2 ** 40 + 3)
    ember.randn(701, dtype=ember.float64)
    ember.randn(1)
    state = ember.get_rng_state()
    torch.set_rng_state(torch.from_numpy(to_np(state)))
    np.testing.assert_array_equal(torch.get_rng_state().numpy(), to_np(state))
    np.testing.assert_array_equal(to_np(ember.randn(3)), torch.randn(3).numpy())
    np.testing.assert_array_equal(to_np(ember.randperm(50)), torch.randperm(50).numpy())
    with pytest.raises(RuntimeError, match="size 5056 but found the input RNG state size"):
        ember.set_rng_state(ember.zeros(12, dtype=ember.uint8))


def test_generator_objects_and_fork_rng(torch):
    ge, gt = ember.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    np.testing.assert_array_equal(to_np(ember.randn(20, generator=ge)),
                                  torch.randn(20, generator=gt).numpy())
    np.testing.assert_array_equal(to_np(ge.get_state()), gt.get_state().numpy())
    gt2 = torch.Generator().set_state(torch.from_numpy(to_np(ge.get_state())))
    ge2 = ember.Generator().set_state(ember.tensor(gt.get_state().numpy()))
    np.testing.assert_array_equal(to_np(ember.rand(9, generator=ge2)),
                                  torch.rand(9, generator=gt2).numpy())
    assert ge.initial_seed() == gt.initial_seed() == 5
    ember.manual_seed(1)
    torch.manual_seed(1)
    with ember.random.fork_rng():
        ember.rand(3)
    with torch.random.fork_rng():
        torch.rand(3)
    np.testing.assert_array_equal(to_np(ember.rand(4)), torch.rand(4).numpy())


@pytest.mark.parametrize("seed", SEEDS)
def test_module_initialisation(torch, seed):
    def params(L, module):
        return L.cat([p.detach().reshape(-1) for p in module.parameters()])
    _check(torch, lambda L: params(L, L.nn.Linear(37, 19)), seed)
    _check(torch, lambda L: params(L, L.nn.Conv2d(3, 8, 3)), seed)
    _check(torch, lambda L: params(L, L.nn.Embedding(50, 7)), seed)
    _check(torch, lambda L: params(L, L.nn.LSTM(5, 7)), seed)


def test_init_functions(torch):
    for fn in (lambda L: L.nn.init.trunc_normal_(L.empty(30, 30)),
               lambda L: L.nn.init.trunc_normal_(L.empty(300), 0.0, 1.0, -0.5, 0.5),
               lambda L: L.nn.init.trunc_normal_(L.empty(30, 30, dtype=L.float16)),
               lambda L: L.nn.init.xavier_normal_(L.empty(30, 20)),
               lambda L: L.nn.init.xavier_uniform_(L.empty(30, 20), gain=2.0),
               lambda L: L.nn.init.kaiming_normal_(L.empty(30, 20)),
               lambda L: L.nn.init.kaiming_uniform_(L.empty(30, 20), a=0.1, mode="fan_out"),
               lambda L: L.nn.init.sparse_(L.empty(10, 4), 0.3),
               lambda L: L.randn_like(L.zeros(3, 40)),
               lambda L: L.rand_like(L.zeros(3, 40, dtype=L.float64))):
        _check(torch, fn)


@pytest.mark.parametrize("dtype", FLOATS)
def test_large_draws(torch, dtype):
    # a million values: the rare roundings (fused multiply-adds, float midpoints of a double
    # cast to half) show; the NumPy path draws fewer to stay quick
    def fn(L, n):
        d = getattr(L, dtype)
        return L.cat([L.randn(n, dtype=d), L.empty(n + 5, dtype=d).normal_(0.3, 2.5),
                      L.empty(n, dtype=d).uniform_(-3.3, 7.1),
                      L.empty(n // 1000, 1000, dtype=d).t().normal_(0.5, 3.0).reshape(-1),
                      L.empty(n // 8, dtype=d).cauchy_(0.5, 2.0),
                      L.empty(n // 8, dtype=d).log_normal_(0.5, 0.7)]).to(L.float64)

    n = 1_000_000 if _random_c.module() is not None else 50_000
    _check(torch, lambda L: fn(L, n))
    _check(torch, lambda L: L.randperm(n))

"""Random numbers of CUDA tensors drawn on the device: Philox4x32-10 (``_kernels/cuda/philox.py``,
``csrc/random.cu``), a generator's (seed, offset), and the ops that use them (``uniform_``,
``normal_``, ``random_``, ``bernoulli_``, ``native_dropout`` and the factories over them). On the
simulated device the numbers are philox.py's; on a GPU, random.cu's (the same by design:
``benchmarks/gpu_random_check.py`` compares them there)."""
import numpy as np
import pytest

import ember
from ember._kernels.cuda import arrays, philox
from helpers import real_gpu

pytestmark = pytest.mark.usefixtures("cuda_device")


def test_philox_known_answers():
    """Random123's known-answer vectors for philox4x32_10 (the generator cuRAND implements)."""
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6,
                                                     0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, expect in cases:
        got = philox.philox4x32(np.array(counter, np.uint32), key)
        assert tuple(int(x) for x in got) == expect


def test_device_ops_draw_the_generators_philox_stream():
    ember.cuda.init()
    ember.cuda.manual_seed(11)
    gen = ember.cuda.default_generators[0]
    assert gen.philox_next() == (11, 0)  # one offset per op
    got = {
        "rand": ember.rand(7, device="cuda"),
        "rand64": ember.rand(5, device="cuda", dtype=ember.float64),
        "uniform": ember.empty(6, device="cuda").uniform_(-2.0, 3.0),
        "randn": ember.randn(9, device="cuda"),
        "randn64": ember.randn(3, device="cuda", dtype=ember.float64),
        "normal": ember.empty(4, device="cuda").normal_(1.5, 0.25),
        "randint": ember.randint(-4, 9, (8,), device="cuda"),
        "wide": ember.empty(3, dtype=ember.int64, device="cuda").random_(-2 ** 40, 2 ** 40),
    }
    expect = {
        "rand": philox.uniform(11, 1, 7, np.float32),
        "rand64": philox.uniform(11, 2, 5, np.float64),
        "uniform": philox.uniform(11, 3, 6, np.float32, -2.0, 3.0),
        "randn": philox.normal(11, 4, 9, np.float32),
        "randn64": philox.normal(11, 5, 3, np.float64),
        "normal": philox.normal(11, 6, 4, np.float32, 1.5, 0.25),
        "randint": philox.integers(11, 7, 8, -4, 13),
        "wide": philox.integers(11, 8, 3, -2 ** 40, 2 ** 41),
    }
    assert gen._offset == 9
    for name, t in got.items():
        values = t.cpu().numpy()
        if real_gpu() and name.startswith(("randn", "normal")):  # libm vs CUDA's log/sincos
            assert np.allclose(values, expect[name], rtol=1e-6, atol=1e-7), name
        else:
            assert np.array_equal(values, expect[name]), name
    assert "uniform_" not in arrays.stats["host"] and "normal_" not in arrays.stats["host"]


def test_distributions():
    ember.cuda.manual_seed(0)
    u = ember.empty(200_000, device="cuda").uniform_(-1.0, 3.0).cpu().numpy()
    assert u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.02 and abs(u.var() - 16 / 12) < 0.02
    z = ember.randn(200_000, device="cuda", dtype=ember.float64).cpu().numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.005  # the shape, not only two moments
    k = ember.randint(3, 13, (100_000,), device="cuda").cpu().numpy()
    counts = np.bincount(k - 3, minlength=10)
    assert k.min() == 3 and k.max() == 12 and counts.min() > 9_500 and counts.max() < 10_500
    b = ember.empty(100_000, device="cuda", dtype=ember.float16).bernoulli_(0.3)
    assert b.dtype == ember.float16 and abs(float(b.float().mean()) - 0.3) < 0.01
    half = ember.rand(1000, device="cuda", dtype=ember.bfloat16)
    assert half.dtype == ember.bfloat16 and 0 <= float(half.min()) and float(half.max()) <= 1


def test_dropout_on_the_device():
    ember.cuda.manual_seed(5)
    x = ember.randn(50_000, device="cuda", requires_grad=True)
    xs = x.detach().cpu().numpy()
    y = ember.nn.functional.dropout(x, 0.25)
    assert np.array_equal(x.detach().cpu().numpy(), xs)  # the input is left alone
    kept = (y != 0).cpu().numpy()
    assert abs(kept.mean() - 0.75) < 0.01
    ys = y.detach().cpu().numpy()
    assert np.allclose(ys[kept], xs[kept] / 0.75, rtol=1e-6)
    y.sum().backward()
    assert np.allclose(x.grad.cpu().numpy(), kept / 0.75, rtol=1e-6)
    # the device's generator decides: the same seed, the same mask; the CPU's is left alone
    cpu_state = ember.get_rng_state()
    ember.cuda.manual_seed(5)
    ember.randn(50_000, device="cuda")
    again = ember.nn.functional.dropout(x.detach(), 0.25)
    assert np.array_equal((again != 0).cpu().numpy(), kept)
    assert ember.equal(ember.get_rng_state(), cpu_state)
    ones = ember.ones(64, device="cuda")
    out, mask = ember.ops.aten.native_dropout(ones, 0.5, True)
    assert ones.tolist() == [1.0] * 64
    assert set(out.tolist()) <= {0.0, 2.0} and ember.equal(out, mask.float() * 2.0)
    p = ember.full((64,), 0.5, device="cuda", dtype=ember.float64)
    drawn = ember.empty(64, device="cuda", dtype=ember.float64).bernoulli_(0.5)
    assert set(drawn.tolist()) <= {0.0, 1.0} and p.tolist() == [0.5] * 64
    h = ember.randn(64, device="cuda", dtype=ember.float16)
    h_before = h.clone()
    out, mask = ember.ops.aten.native_dropout(h, 0.5, True)
    assert ember.equal(h, h_before)
    assert out.dtype == ember.float16 and mask.dtype == ember.bool
    expect = (h.float() * mask * 2.0).half()
    assert ember.equal(out, expect)
    assert ember.equal(ember.nn.functional.dropout(h, 0.0), h)
    assert ember.nn.functional.dropout(h, 1.0).abs().sum().item() == 0
    assert ember.equal(ember.nn.functional.dropout(h, 0.5, training=False), h)


def test_generator_state_and_arguments():
    g = ember.Generator(device="cuda").manual_seed(9)
    a = ember.rand(4, device="cuda", generator=g)
    state = g.get_state()
    b = ember.rand(4, device="cuda", generator=g)
    assert not ember.equal(a, b)  # the offset moved on
    g.set_state(state)
    assert ember.equal(ember.rand(4, device="cuda", generator=g), b)
    g.manual_seed(9)
    assert ember.equal(ember.rand(4, device="cuda", generator=g), a)
    default_offset = ember.cuda.default_generators[0]._offset
    ember.rand(4, device="cuda", generator=g)
    assert ember.cuda.default_generators[0]._offset == default_offset  # untouched
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        ember.empty(3, device="cuda").uniform_(generator=ember.Generator())
    with pytest.raises(RuntimeError, match="from"):
        ember.empty(3, device="cuda").uniform_(2.0, 1.0)  # the CPU kernel's check
    with ember.random.fork_rng(devices=[0]):
        inside = ember.rand(3, device="cuda")
    assert ember.equal(ember.rand(3, device="cuda"), inside)


def test_complex_and_captured_random_ops_use_the_cpu_kernels():
    z = ember.empty(3, device="cuda", dtype=ember.complex64).normal_()
    assert z.dtype == ember.complex64 and arrays.stats["host"]["normal_"] == \
        "complex random values"
    if real_gpu():
        return  # (capture of the fallback needs the simulated device)
    g = ember.cuda.CUDAGraph()
    x = ember.zeros(4, device="cuda")
    with ember.cuda.graph(g):
        x.uniform_()
    g.replay()
    first = x.clone()
    g.replay()
    assert not ember.equal(first, x)  # each replay draws anew


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_replays_the_device_dropout_masks(reentrant):
    """Dropout draws from the device's generator, so checkpointing stashes and restores that
    generator's state for the recomputation (PyTorch's get_device_states / set_device_states)."""
    ember.cuda.manual_seed(3)
    lin = ember.nn.Linear(8, 8).cuda()

    def f(x):
        return ember.nn.functional.dropout(lin(x), 0.5)
    x = ember.randn(16, 8, device="cuda", requires_grad=True)
    ember.cuda.manual_seed(4)
    ref = f(x)
    ref.sum().backward()
    expect, x.grad = x.grad.clone(), None
    ember.cuda.manual_seed(4)
    out = ember.utils.checkpoint.checkpoint(f, x, use_reentrant=reentrant)
    assert ember.equal(out, ref)
    out.sum().backward()
    assert ember.allclose(x.grad, expect)


def test_random_cu_computes_philox_py():
    """csrc/random.cu built for the host (the same source a GPU compiles) gives philox.py's
    numbers: uniform and integers bit for bit, normals within a float32 ulp (its libm calls)."""
    from ember._kernels.cuda import random as cuda_random
    run = cuda_random.host_module().run
    seed, offset = (7 << 32) + 5, (3 << 32) + 11
    for n in (1, 7, 4099):
        for kernel, dtype in ((0, np.float32), (1, np.float64)):
            out = np.empty(n, dtype)
            run(kernel, out.ctypes.data, n, seed, offset, 0, -2.0, 5.0)
            assert np.array_equal(out, philox.uniform(seed, offset, n, dtype, -2.0, 3.0))
        for kernel, dtype in ((2, np.float32), (3, np.float64)):
            out = np.empty(n, dtype)
            run(kernel, out.ctypes.data, n, seed, offset, 0, 0.5, 2.0)
            assert np.allclose(out, philox.normal(seed, offset, n, dtype, 0.5, 2.0), rtol=2e-7,
                               atol=1e-7)
        for low, count in ((-3, 10), (-(1 << 40), 1 << 41), (-(1 << 63), 1 << 64)):
            out = np.empty(n, np.int64)
            run(4, out.ctypes.data, n, seed, offset, 0, low, count % (1 << 64), count >= 1 << 32)
            assert np.array_equal(out, philox.integers(seed, offset, n, low, count))


def test_random_cu_reads_a_graphs_state_words():
    """A captured kernel takes the seed from the graph's state words and adds its own offset to
    theirs (the host build of csrc/random.cu, as test_random_cu_computes_philox_py)."""
    from ember._kernels.cuda import random as cuda_random
    mod = cuda_random.host_module()
    state = np.zeros(2, np.uint64)
    seed, base = (9 << 32) + 1, (1 << 64) - 2  # the sum wraps
    mod.set_state(state.ctypes.data, seed, base)
    assert state.tolist() == [seed, base]
    for kernel, dtype in ((0, np.float32), (1, np.float64)):
        out = np.empty(37, dtype)
        mod.run(kernel, out.ctypes.data, 37, 123, 3, state.ctypes.data, 0.0, 1.0)
        assert np.array_equal(out, philox.uniform(seed, 1, 37, dtype, 0.0, 1.0))

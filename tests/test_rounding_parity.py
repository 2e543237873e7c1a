"""Where ember must round as ATen rounds, bit for bit, compared with PyTorch on many values:
lerp's fused multiply-add (ATen's vectorised kernel: one rounding, from the nearer end), a
double becoming float16 through float (``c10::Half`` is built from a float), and the overflow
check of fills (none for a one-element Half/BFloat16 fill, as ATen's fast path), and the batch
norm's forward (statistics summed in double in ATen's order, one fused multiply-add per
element)."""
import numpy as np
import pytest

import ember


def _same_bits(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
    assert same.all(), (np.nonzero(~same)[0][:5], got[~same][:5], want[~same][:5])


def _inputs(n=20000):
    rs = np.random.RandomState(0)
    a = rs.randn(n)
    b = rs.randn(n) * rs.choice([1, 1e-3, 1e3], n)
    return a, b, rs.rand(n) * 1.4 - 0.2


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("weight", [0.3, 0.7, 0.95, -0.2, 1.5, 0.5, 0.0, 1.0, "tensor", "0-dim"])
def test_lerp_rounds_as_atens_fused_multiply_add(torch, dtype, weight):
    a, b, w = _inputs()
    td, ed = getattr(torch, dtype), getattr(ember, dtype)
    args = {}
    for lib, d, name in ((torch, td, "torch"), (ember, ed, "ember")):
        if weight == "tensor":
            wt = lib.from_numpy(w).to(d)
        elif weight == "0-dim":  # another dtype's 0-dim weight is read in the inputs' dtype
            wt = lib.tensor(0.3, dtype=lib.float64)
        else:
            wt = weight
        args[name] = (lib.from_numpy(a).to(d), lib.from_numpy(b).to(d), wt)
    want = torch.lerp(*args["torch"])
    got = ember.lerp(*args["ember"])
    _same_bits(got.double().numpy(), want.double().numpy())
    inplace = args["ember"][0].clone().lerp_(*args["ember"][1:])
    _same_bits(inplace.double().numpy(), want.double().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", [0.3, 0.7, -0.2])
def test_lerp_of_large_tensors(torch, dtype, weight):
    """Above 32768 elements the kernel is generated C (cpu/generated.py), whose compiler makes
    the same fused multiply-adds."""
    a, b, _ = _inputs(100000)
    want = torch.lerp(torch.from_numpy(a).to(getattr(torch, dtype)),
                      torch.from_numpy(b).to(getattr(torch, dtype)), weight)
    ea = ember.from_numpy(a).to(getattr(ember, dtype))
    eb = ember.from_numpy(b).to(getattr(ember, dtype))
    _same_bits(ember.lerp(ea, eb, weight).numpy(), want.numpy())
    _same_bits(ea.lerp_(eb, weight).numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_lerp_at_special_values(torch, dtype):
    v = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-40, 3e38, 0.3, 0.7]
    grid = np.array(np.meshgrid(v, v, v)).reshape(3, -1)
    got = ember.lerp(*(ember.from_numpy(x).to(getattr(ember, dtype)) for x in grid))
    want = torch.lerp(*(torch.from_numpy(x).to(getattr(torch, dtype)) for x in grid))
    _same_bits(got.double().numpy(), want.double().numpy())


def test_double_to_half_rounds_through_float(torch):
    rs = np.random.RandomState(1)
    x = rs.randn(200000) * rs.choice([1, 1e-3, 1e3, 1e-6], 200000)
    # about one value in 10**4 lands on a float16 tie once it is a float: there NumPy's direct
    # cast and c10's disagree
    direct = x.astype(np.float16).astype(np.float64)
    want = torch.from_numpy(x).half().double().numpy()
    assert (direct != want).sum() > 5
    _same_bits(ember.from_numpy(x).half().double().numpy(), want)
    _same_bits(ember.tensor(x, dtype=ember.float16).double().numpy(), want)
    _same_bits(ember.tensor(list(x[:20000]), dtype=ember.float16).double().numpy(), want[:20000])
    for v in x[direct != want][:20]:
        v = float(v)
        for make in (lambda L: L.full((2,), v, dtype=L.float16),
                     lambda L: L.scalar_tensor(v, dtype=L.float16),
                     lambda L: L.zeros(3, dtype=L.float16).fill_(v),
                     lambda L: L.zeros(3, dtype=L.float16) + v,
                     lambda L: L.tensor(v, dtype=L.float16)):
            _same_bits(make(ember).double().numpy(), make(torch).double().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32"])
@pytest.mark.parametrize("shape", [(), (1,), (2,), (2, 3)])
@pytest.mark.parametrize("value", [7e4, 1e39, float("inf"), 3e9])
def test_fill_overflow_checks(torch, dtype, shape, value):
    def outcome(lib):
        d = getattr(lib, dtype)
        results = []
        for make in (lambda: lib.full(shape, value, dtype=d),
                     lambda: lib.zeros(shape, dtype=d).fill_(value),
                     lambda: lib.scalar_tensor(value, dtype=d),
                     lambda: lib.zeros(shape, dtype=d).add(1, alpha=value)):
            try:
                results.append(make().double().flatten().tolist())
            except RuntimeError as e:
                results.append(str(e))
        return results
    assert outcome(ember) == outcome(torch)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "bfloat16"])
@pytest.mark.parametrize("value", [1e39, 7e4, 3e9, -1.0, 300, float("inf"), -300])
def test_scalar_bounds_and_fill_values_are_checked_in_the_computation_dtype(torch, dtype, value):
    """clamp's bounds are checked in its computation dtype (an int tensor clamped by a float is
    computed in float), index_fill's value in the tensor's."""
    def outcome(lib):
        d = getattr(lib, dtype)
        results = []
        for make in (lambda: lib.zeros(3, dtype=d).clamp(min=value),
                     lambda: lib.zeros(3, dtype=d).clamp(-abs(value), value),
                     lambda: lib.zeros(3, dtype=d).index_fill(0, lib.tensor([0]), value)):
            try:
                r = make()
                results.append((str(r.dtype).split(".")[1], r.double().tolist()))
            except RuntimeError as e:
                results.append(str(e))
        return results
    assert outcome(ember) == outcome(torch)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [37, 1000, 100000])
@pytest.mark.parametrize("op", ["add", "add_", "sub", "sub_", "addcmul", "addcmul_", "addcdiv",
                                "addcdiv_", "foreach_add_"])
def test_alpha_and_value_forms_round_as_aten(torch, dtype, n, op):
    """An optimizer's updates, bit for bit: add/sub with alpha are one fused multiply-add
    (fma(alpha, other, self)), addcmul is fma(value * t1, t2, self), addcdiv is
    self + (value * t1) / t2 -- in every size class (NumPy below 32768 elements, generated C
    above)."""
    rs = np.random.RandomState(n)
    arrays = [rs.randn(n).astype(dtype), rs.randn(n).astype(dtype),
              (rs.rand(n) + 0.5).astype(dtype)]

    def run(lib):
        a, b, c = (lib.from_numpy(x.copy()) for x in arrays)
        if op == "foreach_add_":
            lib._foreach_add_([a], [b], alpha=0.3)
            return a
        if op.startswith(("add_", "sub")) or op in ("add",):
            r = getattr(a, op)(b, alpha=0.7 if op.startswith("sub") else 0.3)
        else:
            r = getattr(a, op)(b, c, value=-0.3 if "div" in op else 0.3)
        return a if op.endswith("_") else r
    _same_bits(run(ember).numpy(), run(torch).numpy())


def _batch_norm_module():
    from ember._kernels.cpu import batch_norm, generated
    return generated.enabled() and batch_norm._BUILT.get() is not None


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_forward_is_atens_bit_for_bit(torch, dtype, threads):
    """Output, running mean and running variance, training and eval, on random shapes of 2-4
    dims (2-d inputs take ATen's channels-last loop, whose order follows the thread count).
    Needs the C loops (``cpu/batch_norm.py``): NumPy's sums take another order."""
    if not _batch_norm_module():
        pytest.skip("no C compiler or EMBER_EAGER_CODEGEN=0: the batch norm is NumPy's")
    rng = np.random.default_rng(1)
    torch_threads = torch.get_num_threads()
    ember_threads = ember.get_num_threads()
    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    try:
        for _ in range(25):
            shape = tuple(int(v) for v in rng.integers(1, 9, int(rng.integers(2, 5))))
            shape = (shape[0] + 1,) + shape[1:]
            c = shape[1]
            x = (rng.standard_normal(shape) * 3 + rng.standard_normal()).astype(dtype)
            w, b, m, v = (rng.standard_normal(c).astype(dtype) for _ in range(4))
            v = np.abs(v)
            momentum = float(rng.choice([0.1, 0.01, 0.3]))
            for training in (True, False):
                out = []
                for lib in (torch, ember):
                    rm, rv = lib.tensor(m), lib.tensor(v)
                    y = lib.nn.functional.batch_norm(lib.tensor(x), rm, rv, lib.tensor(w),
                                                     lib.tensor(b), training=training,
                                                     momentum=momentum)
                    out.append([t.numpy().ravel() for t in (y, rm, rv)])
                for got, want in zip(out[1], out[0]):
                    _same_bits(got, want)
    finally:
        torch.set_num_threads(torch_threads)
        ember.set_num_threads(ember_threads)


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (6, 4), (2, 3, 7)])
def test_batch_norm_numpy_fallback_and_special_values(torch, monkeypatch, shape):
    """Without the C loops NumPy computes the same values to rounding; a NaN or an infinity in
    a channel makes that channel's statistics and outputs NaN in both, as in PyTorch."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    x[(1, 1) + (0,) * (len(shape) - 2)] = np.nan
    x[(0, 2) + (1,) * (len(shape) - 2)] = np.inf
    c = shape[1]
    results = []
    for codegen in ("1", "0"):
        monkeypatch.setenv("EMBER_EAGER_CODEGEN", codegen)
        rm, rv = ember.zeros(c), ember.ones(c)
        y = ember.nn.functional.batch_norm(ember.tensor(x), rm, rv, ember.ones(c),
                                           ember.zeros(c), training=True)
        results.append([t.numpy() for t in (y, rm, rv)])
    trm, trv = torch.zeros(c), torch.ones(c)
    want = [t.numpy() for t in (torch.nn.functional.batch_norm(
        torch.tensor(x), trm, trv, torch.ones(c), torch.zeros(c), training=True), trm, trv)]
    for got in results:
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_backward_with_and_without_the_c_loops(torch, monkeypatch, training, affine,
                                                          dtype):
    """The input, weight and bias gradients against PyTorch's, from the C loops and from NumPy
    (ATen sums in float vectors whose lanes follow the CPU: equal to rounding)."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 4, 5, 6)) * 2 + 1).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    w, b = rng.standard_normal(4).astype(dtype), rng.standard_normal(4).astype(dtype)
    rm, rv = rng.standard_normal(4).astype(dtype), (rng.random(4) + 0.5).astype(dtype)

    def grads(lib):
        xt = lib.tensor(x, requires_grad=True)
        wt, bt = (lib.tensor(a, requires_grad=True) for a in (w, b)) if affine else (None, None)
        y = lib.nn.functional.batch_norm(xt, lib.tensor(rm), lib.tensor(rv), wt, bt,
                                         training=training)
        y.backward(lib.tensor(g))
        return [t.grad.numpy() for t in (xt, wt, bt) if t is not None]
    want = grads(torch)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for codegen in ("1", "0"):
        monkeypatch.setenv("EMBER_EAGER_CODEGEN", codegen)
        for got, ref in zip(grads(ember), want):
            np.testing.assert_allclose(got, ref, **tol)


@pytest.mark.parametrize("codegen", ["1", "0"])
@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "silu"])
def test_mobilenet_activations_round_as_aten(torch, monkeypatch, codegen, name):
    """hardswish and hardsigmoid (values and gradients) in ATen's order of operations are its
    bits in both the generated C and NumPy; silu's value too where C computes it (its exp is
    ATen's there: NumPy's is another)."""
    monkeypatch.setenv("EMBER_EAGER_CODEGEN", codegen)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(40000) * 4).astype(np.float32)
    x[:9] = [np.nan, np.inf, -np.inf, -3, 3, 0, -0.0, 1e-30, -1e-30]
    g = rng.standard_normal(x.size).astype(np.float32)
    out = []
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        y = getattr(lib.nn.functional, name)(xt)
        y.backward(lib.tensor(g))
        out.append((y.detach().numpy(), xt.grad.numpy()))
    if name == "silu" and codegen == "0":
        for got, want in zip(out[1], out[0]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        return
    _same_bits(out[1][0], out[0][0])
    if name != "silu":  # (silu's gradient: one ulp apart at a fifth of the values)
        _same_bits(out[1][1], out[0][1])

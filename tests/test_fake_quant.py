"""Fake quantization against PyTorch: the fake_quantize ops' values, masks and gradients bit for
bit (per tensor and per channel, every floating dtype, ranges, axes, ties, NaN and infinities),
the learnable ops' gradients for scale and zero point, the fused moving-average observer, their
errors; then eager quantization-aware training (fuse_modules_qat, prepare_qat, the QAT modules,
the fake-quantize modules and observers) trained beside PyTorch from the same weights."""

import numpy as np
import pytest

import ember
from helpers import to_np

pytestmark = [pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated"),
              pytest.mark.filterwarnings("ignore:Please use quant_min and quant_max")]

# ties after the scale (x * 10 lands on .5), the range's ends and beyond, NaN, infinities, zeros
SPECIAL = [float("nan"), float("inf"), float("-inf"), 1e10, -1e10, 0.25, 0.35, 0.45, -0.05,
           0.15, 12.75, -12.85, 25.5, -25.5, 0.0, -0.0, 3.0000002, 1.2345678, 7e-3, -6.5,
           100.0, 12.7, -12.8, 12.8, 0.05]
RANGES = [(-128, 127), (0, 255), (0, 15), (-8, 7), (-2 ** 31, 2 ** 31 - 1)]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _values(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([np.array(SPECIAL, np.float32),
                           (rng.standard_normal(n) * 8).astype(np.float32)])


def _pair(torch, a, dtype="float32", requires_grad=False):
    e = ember.tensor(np.asarray(a)).to(getattr(ember, dtype))
    t = torch.tensor(np.asarray(a)).to(getattr(torch, dtype))
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


def _same(e, t):
    """Identical values, signs of zero and NaN positions, dtype and shape."""
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    x, y = to_np(e), to_np(t.detach())
    assert np.array_equal(np.isnan(x), np.isnan(y)), (x, y)
    ok = ~np.isnan(y)
    assert np.array_equal(x[ok], y[ok]), (x[ok], y[ok], np.nonzero(x[ok] != y[ok]))
    assert np.array_equal(np.signbit(x[ok]), np.signbit(y[ok]))


def _same_sums(e, t):
    """The learnable ops' scale and zero-point gradients: sums of per-element terms that are
    bit-exact, added by ember's sum, whose order is not ATen's vectorized cascade (which depends
    on the CPU's vector width): equal to float32 rounding."""
    assert e.dtype.name == str(t.dtype).split(".")[-1] and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(to_np(e), to_np(t.detach()), rtol=1e-5, atol=1e-5)


def _raises_same(efn, tfn):
    with pytest.raises(Exception) as te:
        tfn()
    with pytest.raises(type(te.value)) as ee:
        efn()
    # (a message naming a class names ember's module where PyTorch's names torch's)
    assert str(ee.value).replace("ember.", "torch.") == str(te.value)


# -- per tensor -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("qrange", RANGES)
def test_per_tensor_values_mask_grad(torch, dtype, qrange):
    qmin, qmax = qrange
    zp = (qmin + qmax) // 2 if qmin < 0 else 3
    for scale in (0.1, 0.0173, 1e-3):
        e, t = _pair(torch, _values(), dtype, requires_grad=True)
        eo, em = ember.ops.aten.fake_quantize_per_tensor_affine_cachemask(e, scale, zp, qmin, qmax)
        to, tm = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t, scale, zp, qmin, qmax)
        _same(eo, to)
        _same(em, tm)
        ey = ember.fake_quantize_per_tensor_affine(e, scale, zp, qmin, qmax)
        ty = torch.fake_quantize_per_tensor_affine(t, scale, zp, qmin, qmax)
        _same(ey, ty)
        g = np.linspace(-1, 1, ey.numel()).astype(np.float32)
        eg, tg = _pair(torch, g, dtype)
        ey.backward(eg)
        ty.backward(tg)
        _same(e.grad, t.grad)
        assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__


def test_per_tensor_tensor_qparams_and_layouts(torch):
    a = _values().reshape(5, 17)
    e, t = _pair(torch, a)
    for zp in ([2.7], [-3.2], [5]):  # (the kernel truncates a float zero point)
        es, ts = _pair(torch, [0.05])
        ez, tz = _pair(torch, zp)
        _same(ember.fake_quantize_per_tensor_affine(e, es, ez, -10, 10),
              torch.fake_quantize_per_tensor_affine(t, ts, tz, -10, 10))
    for off in (0, 1):  # fake quant off: the input and an all-True mask
        eo, em = ember._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
            e, ember.tensor([0.1]), ember.tensor([0]), ember.tensor([off]), 0, 255)
        to, tm = torch._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
            t, torch.tensor([0.1]), torch.tensor([0]), torch.tensor([off]), 0, 255)
        _same(eo, to)
        _same(em, tm)
    # a transposed input keeps its strides (empty_like's preserve_format), a 0-d one its shape
    eo, em = ember.ops.aten.fake_quantize_per_tensor_affine_cachemask(e.t(), 0.1, 0, -128, 127)
    to, tm = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t.t(), 0.1, 0, -128, 127)
    _same(eo, to)
    assert eo.stride() == to.stride() and em.stride() == tm.stride()
    _same(ember.fake_quantize_per_tensor_affine(ember.tensor(0.35), 0.1, 0, 0, 255),
          torch.fake_quantize_per_tensor_affine(torch.tensor(0.35), 0.1, 0, 0, 255))
    # the out= variants PyTorch's codegen makes (out0/out1 for the pairs)
    outs = {}
    for lib, x in ((ember, e), (torch, t)):
        o, m = lib.empty_like(x), lib.empty_like(x, dtype=lib.bool)
        got = lib.ops.aten.fake_quantize_per_tensor_affine_cachemask.out(x, 0.1, 3, 0, 255,
                                                                         out0=o, out1=m)
        assert got[0] is o and got[1] is m
        outs[lib] = (o, m)
    _same(outs[ember][0], outs[torch][0])
    _same(outs[ember][1], outs[torch][1])


# -- per channel ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("zp_dtype", ["int32", "float32", "float16"])
def test_per_channel_values_mask_grad(torch, dtype, zp_dtype):
    a = _values(n=75).reshape(4, 25)
    rng = np.random.default_rng(1)
    for axis, shape in ((0, (4, 25)), (1, (4, 25)), (1, (2, 2, 5, 5)), (3, (2, 2, 5, 5))):
        x = a.reshape(shape)
        c = shape[axis]
        scales = np.resize(np.array([0.1, 0.0173, 1e-3, 0.5, 0.07], np.float32), c)
        for qmin, qmax in ((-128, 127), (0, 255), (-8, 7)):
            zps = rng.integers(qmin, qmax + 1, c)
            if zp_dtype != "int32":
                zps = zps + rng.uniform(-0.5, 0.5, c)
            e, t = _pair(torch, x, dtype, requires_grad=True)
            es, ts = _pair(torch, scales)
            ez, tz = _pair(torch, zps, zp_dtype)
            eo, em = ember.ops.aten.fake_quantize_per_channel_affine_cachemask(e, es, ez, axis, qmin, qmax)
            to, tm = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(t, ts, tz, axis, qmin, qmax)
            _same(eo, to)
            _same(em, tm)
            ey = ember.fake_quantize_per_channel_affine(e, es, ez, axis, qmin, qmax)
            ty = torch.fake_quantize_per_channel_affine(t, ts, tz, axis, qmin, qmax)
            ey.sum().backward()
            ty.sum().backward()
            _same(e.grad, t.grad)


def _near_ties(rng, scale, zero_point, n):
    """Inputs whose x / scale + zero_point lies on a rounding tie or one float away: where a
    fused multiply-add and a rounded product round differently."""
    k = rng.integers(-140, 140, n)
    base = ((k + 0.5 - zero_point) * np.float64(scale)).astype(np.float32)
    step = rng.integers(-1, 2, n)
    away = np.nextafter(base, np.where(step > 0, np.float32(np.inf), np.float32(-np.inf)))
    return np.where(step == 0, base, away).astype(np.float32)


@pytest.mark.parametrize("zp_dtype", ["int32", "float32", "float16"])
def test_near_ties(torch, zp_dtype):
    rng = np.random.default_rng(4)
    for scale, zp in ((0.0173, 3.0), (0.1, -3.0), (0.0123, 1.2), (0.031, -2.7)):
        x = _near_ties(rng, scale, zp, 3000).reshape(3000, 1)
        for dtype in FLOATS:
            e, t = _pair(torch, x, dtype)
            es, ts = _pair(torch, np.full(3000, scale, np.float32))
            ez, tz = _pair(torch, np.full(3000, round(zp) if zp_dtype == "int32" else zp),
                           zp_dtype)
            _same(ember.fake_quantize_per_channel_affine(e, es, ez, 0, -4, 4),
                  torch.fake_quantize_per_channel_affine(t, ts, tz, 0, -4, 4))
            _same(ember.fake_quantize_per_tensor_affine(e, scale, round(zp), -4, 4),
                  torch.fake_quantize_per_tensor_affine(t, scale, round(zp), -4, 4))
        # the learnable backwards, one element per channel: every gradient is one term
        g = rng.standard_normal(x.shape).astype(np.float32)
        es, ts = _pair(torch, np.full(3000, scale, np.float32))
        ez, tz = _pair(torch, np.full(3000, zp, np.float32))
        got = ember.ops.aten._fake_quantize_learnable_per_channel_affine_backward(
            ember.tensor(g), ember.tensor(x), es, ez, 0, -4, 4, 1.0)
        want = torch.ops.aten._fake_quantize_learnable_per_channel_affine_backward(
            torch.tensor(g), torch.tensor(x), ts, tz, 0, -4, 4, 1.0)
        for a, b in zip(got, want):
            _same(a, b)
        got = ember.ops.aten._fake_quantize_learnable_per_tensor_affine_backward(
            ember.tensor(g), ember.tensor(x), ember.tensor([scale]), ember.tensor([zp]), -4, 4)
        want = torch.ops.aten._fake_quantize_learnable_per_tensor_affine_backward(
            torch.tensor(g), torch.tensor(x), torch.tensor([scale]), torch.tensor([zp]), -4, 4)
        _same(got[0], want[0])


# -- learnable ------------------------------------------------------------------------------------

@pytest.mark.parametrize("qrange", [(0, 255), (-128, 127), (-8, 7), (1, 9)])
@pytest.mark.parametrize("grad_factor", [1.0, 0.3])
def test_learnable_per_tensor(torch, qrange, grad_factor):
    qmin, qmax = qrange
    a = _values().reshape(5, 17)
    for scale, zp in ((0.1, 3.5), (0.0173, 4.49), (0.05, -2.5), (0.2, 0.0)):
        e, t = _pair(torch, a, requires_grad=True)
        es, ts = _pair(torch, [scale], requires_grad=True)
        ez, tz = _pair(torch, [zp], requires_grad=True)
        ey = ember._fake_quantize_learnable_per_tensor_affine(e, es, ez, qmin, qmax, grad_factor)
        ty = torch._fake_quantize_learnable_per_tensor_affine(t, ts, tz, qmin, qmax, grad_factor)
        _same(ey, ty)
        g = np.linspace(-1, 1, ey.numel()).astype(np.float32).reshape(5, 17)
        if qmin > 0:  # (the backward refuses a range without 0, as PyTorch's)
            _raises_same(lambda: ey.backward(ember.tensor(g)),
                         lambda: ty.backward(torch.tensor(g)))
            continue
        ey.backward(ember.tensor(g))
        ty.backward(torch.tensor(g))
        _same(e.grad, t.grad)
        _same_sums(es.grad, ts.grad)
        _same_sums(ez.grad, tz.grad)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_learnable_per_channel(torch, axis):
    x = _values(n=95).reshape(2, 3, 20)
    rng = np.random.default_rng(2)
    c = x.shape[axis]
    scales = rng.uniform(0.01, 0.2, c).astype(np.float32)
    zps = rng.uniform(-20, 20, c).astype(np.float32)
    zps[0] = 2.5  # (round half to even)
    for qmin, qmax, gf in ((-128, 127, 1.0), (0, 255, 0.5), (-8, 7, 1.0)):
        e, t = _pair(torch, x, requires_grad=True)
        es, ts = _pair(torch, scales, requires_grad=True)
        ez, tz = _pair(torch, zps, requires_grad=True)
        ey = ember._fake_quantize_learnable_per_channel_affine(e, es, ez, axis, qmin, qmax, gf)
        ty = torch._fake_quantize_learnable_per_channel_affine(t, ts, tz, axis, qmin, qmax, gf)
        _same(ey, ty)
        g = rng.standard_normal(x.shape).astype(np.float32)
        ey.backward(ember.tensor(g))
        ty.backward(torch.tensor(g))
        _same(e.grad, t.grad)
        _same_sums(es.grad, ts.grad)
        _same_sums(ez.grad, tz.grad)


# -- the fused observer ---------------------------------------------------------------------------

@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("per_row", [False, True])
def test_fused_moving_avg_obs_fake_quant(torch, symmetric, per_row):
    rng = np.random.default_rng(3)
    n = 4 if per_row else 1
    qmin, qmax = (-128, 127) if symmetric else (0, 255)
    state = {}
    for lib in (ember, torch):
        inf = float("inf")
        state[lib] = [lib.tensor([inf] * n), lib.tensor([-inf] * n),
                      lib.ones(n), lib.zeros(n, dtype=lib.int32)]
    for step in range(4):
        x = (rng.standard_normal((4, 9)) * (step + 1) + step).astype(np.float32)
        if step == 2:
            x[0, 0] = 0.35  # (a tie)
        obs, fq = (1, 1) if step != 3 else (0, 1)
        outs = []
        for lib in (ember, torch):
            xt = lib.tensor(x, requires_grad=True)
            y = lib.fused_moving_avg_obs_fake_quant(
                xt, lib.tensor([obs]), lib.tensor([fq]), *state[lib], 0.01, qmin, qmax, 0,
                per_row, symmetric)
            y.sum().backward()
            outs.append((y, xt.grad))
        for a, b in zip(outs[0], outs[1]):
            _same(a, b)
        for a, b in zip(state[ember], state[torch]):
            _same(a, b)
    y = ember.fused_moving_avg_obs_fake_quant(ember.tensor(x), ember.tensor([1]),
                                              ember.tensor([0]), *state[ember], 0.01, qmin,
                                              qmax, 0, per_row, symmetric)
    _same(y, torch.tensor(x))


# -- errors ---------------------------------------------------------------------------------------

def test_errors(torch):
    e, t = _pair(torch, _values().reshape(5, 17))
    cases = [
        ("fake_quantize_per_tensor_affine", lambda L, x: (x, 0.1, 0, 5, 3)),
        ("fake_quantize_per_tensor_affine", lambda L, x: (x, 0.1, 9, 0, 3)),
        ("fake_quantize_per_tensor_affine", lambda L, x: (x.long(), 0.1, 0, 0, 3)),
        ("fake_quantize_per_tensor_affine", lambda L, x: (x, L.ones(2), L.zeros(1), 0, 3)),
        ("fake_quantize_per_tensor_affine_cachemask", lambda L, x: (x.int(), 0.1, 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5, dtype=L.float64), L.zeros(5, dtype=L.int32), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5), L.zeros(5, dtype=L.int64), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5, 1), L.zeros(5, dtype=L.int32), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5), L.zeros(5, 1, dtype=L.int32), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5), L.zeros(4, dtype=L.int32), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(4), L.zeros(4, dtype=L.int32), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5), L.zeros(5, dtype=L.int32), 7, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(17), L.zeros(17, dtype=L.int32), -1, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5), L.full((5,), 9, dtype=L.int32), 0, 0, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x, L.ones(5), L.zeros(5, dtype=L.int32), 0, 4, 3)),
        ("fake_quantize_per_channel_affine",
         lambda L, x: (x.long(), L.ones(5), L.zeros(5, dtype=L.int32), 0, 0, 3)),
        ("_fake_quantize_learnable_per_tensor_affine",
         lambda L, x: (x, L.ones(0), L.zeros(1), 0, 3)),
        ("fake_quantize_per_tensor_affine_cachemask_backward",
         lambda L, x: (x, L.ones(5, 17))),
        ("fake_quantize_per_tensor_affine_cachemask_backward",
         lambda L, x: (x, L.ones(3, dtype=L.bool))),
        ("fused_moving_avg_obs_fake_quant",
         lambda L, x: (x, L.ones(1), L.ones(1), L.zeros(5), L.zeros(5), L.ones(5),
                       L.zeros(5, dtype=L.int32), 0.01, 0, 255, 1, True, False)),
    ]
    for name, args in cases:
        _raises_same(lambda: getattr(ember.ops.aten, name)(*args(ember, e)),
                     lambda: getattr(torch.ops.aten, name)(*args(torch, t)))
    # the learnable backward: a range without 0, a double scale
    for qmin, qmax, sdt in ((1, 9, "float32"), (0, 9, "float64")):
        grads = {}
        for lib, x in ((ember, e), (torch, t)):
            s = lib.tensor([0.1], dtype=getattr(lib, sdt), requires_grad=True)
            y = lib._fake_quantize_learnable_per_tensor_affine(
                x, s, lib.tensor([1.0], requires_grad=True), qmin, qmax)
            with pytest.raises(RuntimeError) as err:
                y.sum().backward()
            grads[lib] = str(err.value)
        assert grads[ember] == grads[torch]


def test_meta(torch):
    x = ember.empty(3, 4, device="meta").t()
    y, mask = ember.ops.aten.fake_quantize_per_tensor_affine_cachemask(x, 0.1, 0, 0, 255)
    assert y.device.type == "meta" and y.stride() == x.stride() and mask.dtype == ember.bool
    y = ember.fake_quantize_per_channel_affine(
        x, ember.ones(4, device="meta"), ember.zeros(4, dtype=ember.int32, device="meta"), 0, 0,
        255)
    assert tuple(y.shape) == (4, 3)
    x = ember.empty(3, 4, device="meta", requires_grad=True)
    s = ember.ones(3, device="meta", requires_grad=True)
    z = ember.zeros(3, device="meta", requires_grad=True)
    ember._fake_quantize_learnable_per_channel_affine(x, s, z, 0, 0, 255).sum().backward()
    assert x.grad.shape == x.shape and s.grad.shape == s.shape and z.grad.shape == z.shape
    with pytest.raises(RuntimeError, match="`quant_min` should be less than"):
        ember.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 3)


# -- eager quantization-aware training ------------------------------------------------------------

def _net(lib):
    nn, q = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = q.QuantStub()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.fc1 = nn.Linear(4 * 6 * 6, 16)
            self.relu2 = nn.ReLU()
            self.fc2 = nn.Linear(16, 5)
            self.sigmoid = nn.Sigmoid()
            self.dequant = q.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.bn(self.conv(self.quant(x))))
            x = self.relu2(self.fc1(x.flatten(1)))
            return self.dequant(self.sigmoid(self.fc2(x)))
    return Net()


def _state(m):
    return {k: to_np(v) for k, v in m.state_dict().items()}


@pytest.mark.parametrize("backend, version", [("x86", 1), ("qnnpack", 1), ("fbgemm", 0),
                                              ("qnnpack", 0)])
def test_qat_training_beside_pytorch(torch, backend, version):
    """fuse_modules_qat + prepare_qat on a small CNN, trained 3 SGD steps from the same
    weights: the same modules, losses, parameters, batch-norm statistics and fake-quantizer
    states (scales to float rounding, zero points exactly)."""
    rng = np.random.default_rng(5)
    models = {lib: _net(lib) for lib in (ember, torch)}
    start = {k: v.detach().numpy().copy() for k, v in models[torch].state_dict().items()}
    models[ember].load_state_dict({k: ember.tensor(v) for k, v in start.items()})
    for lib, m in models.items():
        q = lib.ao.quantization
        m.train()
        m.qconfig = q.get_default_qat_qconfig(backend, version)
        q.fuse_modules_qat(m, [["conv", "bn", "relu"], ["fc1", "relu2"]], inplace=True)
        q.prepare_qat(m, inplace=True)
    names = {lib: [(n, type(c).__name__) for n, c in m.named_modules()]
             for lib, m in models.items()}
    assert names[ember] == names[torch]
    opts = {lib: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
            for lib, m in models.items()}
    for step in range(3):
        x = rng.standard_normal((8, 3, 6, 6)).astype(np.float32)
        y = rng.integers(0, 5, 8)
        losses = {}
        for lib, m in models.items():
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y))
            opts[lib].zero_grad()
            loss.backward()
            opts[lib].step()
            losses[lib] = loss.item()
        assert abs(losses[ember] - losses[torch]) <= 1e-5 * abs(losses[torch]), losses
    ours, theirs = _state(models[ember]), _state(models[torch])
    assert sorted(ours) == sorted(theirs)
    for k, want in theirs.items():
        got = ours[k]
        assert got.dtype == want.dtype and got.shape == want.shape, k
        if k.endswith("zero_point") or k.endswith("_enabled"):
            assert np.array_equal(got, want), (k, got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=k)
    # eval: observers and fake quantizers frozen, the batch norm folded
    for lib, m in models.items():
        m.apply(lib.ao.quantization.disable_observer)
        m.apply(lib.ao.nn.intrinsic.qat.freeze_bn_stats)
        m.eval()
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(to_np(models[ember](ember.tensor(x)).detach()),
                               models[torch](torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_fake_quantize_modules_and_observers(torch):
    rng = np.random.default_rng(6)
    names = ["default_fake_quant", "default_weight_fake_quant",
             "default_per_channel_weight_fake_quant", "default_fused_act_fake_quant",
             "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
             "default_fixed_qparams_range_neg1to1_fake_quant",
             "fused_per_channel_wt_fake_quant_range_neg_127_to_127"]
    for name in names:
        mods = {lib: getattr(lib.ao.quantization, name)() for lib in (ember, torch)}
        for step in range(3):
            x = (rng.standard_normal((4, 6)) * (step + 1)).astype(np.float32)
            if step == 2:
                for m in mods.values():
                    m.disable_observer()
            outs = {lib: m(lib.tensor(x)) for lib, m in mods.items()}
            _same(outs[ember], outs[torch])
            for k, v in _state(mods[torch]).items():
                got = _state(mods[ember])[k]
                assert got.dtype == v.dtype and np.array_equal(got, v, equal_nan=True), \
                    (name, k, got, v)
        assert repr(mods[ember]).replace("ember.", "torch.") == repr(mods[torch]), name
    observers = ["MinMaxObserver", "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
                 "MovingAveragePerChannelMinMaxObserver"]
    for name in observers:
        for kwargs in ({}, {"qscheme": "symmetric", "dtype": "qint8"},
                       {"quant_min": 0, "quant_max": 15}):
            obs = {}
            for lib in (ember, torch):
                kw = dict(kwargs)
                if "qscheme" in kw:
                    kw["qscheme"] = getattr(lib, ("per_channel_symmetric" if "PerChannel" in name
                                                  else "per_tensor_symmetric"))
                    kw["dtype"] = lib.qint8
                obs[lib] = getattr(lib.ao.quantization, name)(**kw)
            for step in range(3):
                x = (rng.standard_normal((3, 5)) + step).astype(np.float32)
                for lib, o in obs.items():
                    o(lib.tensor(x))
            got = [to_np(t) for t in obs[ember].calculate_qparams()]
            want = [to_np(t) for t in obs[torch].calculate_qparams()]
            for a, b in zip(got, want):
                assert a.dtype == b.dtype and np.array_equal(a, b), (name, kwargs, a, b)


def test_fuse_modules_eval_and_errors(torch):
    rng = np.random.default_rng(7)
    models = {}
    for lib in (ember, torch):
        models[lib] = _net(lib)
    start = {k: v.detach().numpy().copy() for k, v in models[torch].state_dict().items()}
    start["bn.running_mean"] = rng.standard_normal(4).astype(np.float32)
    start["bn.running_var"] = rng.uniform(0.5, 2, 4).astype(np.float32)
    for lib, m in models.items():
        m.load_state_dict({k: lib.tensor(v) for k, v in start.items()})
        m.eval()
    fused = {lib: lib.ao.quantization.fuse_modules(m, [["conv", "bn", "relu"], ["fc1", "relu2"]])
             for lib, m in models.items()}
    assert [type(c).__name__ for c in fused[ember].children()] == \
        [type(c).__name__ for c in fused[torch].children()]
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(to_np(fused[ember](ember.tensor(x)).detach()),
                               fused[torch](torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # errors: mixed modes, unknown runs, prepare_qat of an eval model, bad qconfig/backends
    for lib, m in models.items():
        m.bn.train()

    def attempts(lib):
        q, m = lib.ao.quantization, models[lib]
        return [lambda: q.fuse_modules(m, ["conv", "bn"]),
                lambda: q.fuse_modules(m, ["conv", "fc2"]),
                lambda: q.prepare_qat(lib.nn.Linear(2, 2).eval()),
                lambda: q.get_default_qat_qconfig("tpu"),
                lambda: q.get_default_qat_qconfig("x86", 2),
                lambda: q.QConfig(activation=q.default_fake_quant(), weight=q.default_fake_quant),
                lambda: q.FakeQuantize(quant_min=0, quant_max=300),
                lambda: q.MovingAverageMinMaxObserver(qscheme=lib.per_channel_affine),
                lambda: lib.ao.nn.intrinsic.ConvBnReLU2d(lib.nn.Conv2d(1, 1, 1), lib.nn.ReLU(),
                                                         lib.nn.ReLU()),
                lambda: lib.ao.nn.qat.Linear(2, 2)]
    for efn, tfn in zip(attempts(ember), attempts(torch)):
        _raises_same(efn, tfn)


def test_legacy_paths(torch):
    import importlib
    for name in ["quantization", "quantization.fake_quantize", "quantization.observer",
                 "quantization.qconfig", "quantization.quantize", "quantization.fuse_modules",
                 "quantization.stubs", "nn.qat", "nn.intrinsic", "nn.intrinsic.qat",
                 "nn.quantized", "nn.quantized.dynamic"]:
        mine = importlib.import_module("ember." + name)
        assert mine is not None
    assert ember.quantization.prepare_qat is ember.ao.quantization.prepare_qat
    assert ember.quantization.FakeQuantize is ember.ao.quantization.FakeQuantize
    assert ember.nn.qat.Linear is ember.ao.nn.qat.Linear
    assert ember.nn.intrinsic.ConvBnReLU2d is ember.ao.nn.intrinsic.ConvBnReLU2d
    assert ember.nn.intrinsic.qat.ConvBnReLU2d is ember.ao.nn.intrinsic.qat.ConvBnReLU2d
    assert ember.nn.quantized.dynamic.Linear is ember.ao.nn.quantized.dynamic.Linear
    assert set(torch.nn.qat.__all__) - {"Embedding", "EmbeddingBag"} <= set(dir(ember.nn.qat))

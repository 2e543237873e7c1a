"""Quantized tensors against PyTorch: the integers of quantize_per_tensor/per_channel bit for
bit (ties, NaN, infinities, every dtype), dequantized values, qparams, views and the quantizer
each keeps, copies, printing, errors, and torch.save/torch.load both ways."""
import io
import pickle
import re
import warnings

import numpy as np
import pytest

import ember

pytestmark = [pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor"),
              pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated"),
              pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")]

QDTYPES = ["quint8", "qint8", "qint32"]
# ties at .5 after the scale, values near the range's ends, NaN and the infinities, more than
# eight of them (FBGEMM's vector loop and its masked remainder)
VALUES = [float("nan"), float("inf"), float("-inf"), 1e10, -1e10, 0.25, 0.35, 0.45, -0.05,
          0.15, 12.75, -12.85, 25.5, -25.5, 0.0, -0.0, 3.0000002, 1.2345678, 7e-3, -6.5, 100.0]


def _pair(torch, values, shape=None):
    a = np.array(values, np.float32)
    if shape is not None:
        a = a.reshape(shape)
    return ember.tensor(a), torch.tensor(a)


def _same_q(e, t, torch):
    """Same integers, dtype, sizes, strides and quantizer."""
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert np.array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    assert e.qscheme().name == str(t.qscheme()).split(".")[1]
    if t.qscheme() == torch.per_tensor_affine:
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    else:
        assert e.q_per_channel_axis() == t.q_per_channel_axis()
        assert np.array_equal(e.q_per_channel_scales().numpy(), t.q_per_channel_scales().numpy())
        assert np.array_equal(e.q_per_channel_zero_points().numpy(),
                              t.q_per_channel_zero_points().numpy())
    try:
        d_t = t.dequantize().numpy()
    except RuntimeError as exc:  # (a per-channel select leaves PyTorch an axis of -1)
        with pytest.raises(RuntimeError, match=re.escape(str(exc))):
            e.dequantize()
        return
    d_e = e.dequantize().numpy()
    assert d_e.dtype == d_t.dtype and np.array_equal(d_e, d_t, equal_nan=True)


def _same_tq(a, b):
    """Two PyTorch quantized tensors alike (integers, geometry, quantizer)."""
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    assert a.qscheme() == b.qscheme() and a.int_repr().equal(b.int_repr())
    if str(a.qscheme()) == "torch.per_tensor_affine":
        assert (a.q_scale(), a.q_zero_point()) == (b.q_scale(), b.q_zero_point())
    else:
        assert a.q_per_channel_axis() == b.q_per_channel_axis()
        assert a.q_per_channel_scales().equal(b.q_per_channel_scales())
        assert a.q_per_channel_zero_points().equal(b.q_per_channel_zero_points())


@pytest.mark.parametrize("dtype", QDTYPES)
@pytest.mark.parametrize("scale,zero_point", [(0.1, 10), (0.1, -5), (0.05, 0), (1e-3, 3),
                                              (3.7, 1), (-0.1, 1), (0.0, 1), (1e-40, 1),
                                              (float("inf"), 1)])
def test_quantize_per_tensor_bit_exact(torch, dtype, scale, zero_point):
    if dtype == "quint8" and zero_point < 0:
        return
    e, t = _pair(torch, VALUES)
    _same_q(ember.quantize_per_tensor(e, scale, zero_point, getattr(ember, dtype)),
            torch.quantize_per_tensor(t, scale, zero_point, getattr(torch, dtype)), torch)
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((5, 37)) * 4).astype(np.float32)
    _same_q(ember.quantize_per_tensor(ember.tensor(a), scale, zero_point, getattr(ember, dtype)),
            torch.quantize_per_tensor(torch.tensor(a), scale, zero_point, getattr(torch, dtype)),
            torch)


@pytest.mark.parametrize("dtype", QDTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_per_channel_bit_exact(torch, dtype, axis):
    e, t = _pair(torch, VALUES, (3, 7))
    n = e.shape[axis]
    scales = np.array([0.1, 0.05, 0.3, 1e-3, 2.5, 0.7, 0.2][:n])
    zps = np.array([1, -5, 0, 3, 7, -1, 2][:n]) if dtype != "quint8" else np.arange(n) * 9
    _same_q(ember.quantize_per_channel(e, ember.tensor(scales), ember.tensor(zps), axis,
                                       getattr(ember, dtype)),
            torch.quantize_per_channel(t, torch.tensor(scales), torch.tensor(zps), axis,
                                       getattr(torch, dtype)), torch)
    # float32 scales and int32 zero points are kept as float64 and int64, as ATen keeps them
    _same_q(ember.quantize_per_channel(e, ember.tensor(scales).float(), ember.tensor(zps).int(),
                                       axis, getattr(ember, dtype)),
            torch.quantize_per_channel(t, torch.tensor(scales).float(), torch.tensor(zps).int(),
                                       axis, getattr(torch, dtype)), torch)


def test_channels_last_and_qparam_overloads(torch):
    a = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    e = ember.tensor(a).contiguous(memory_format=ember.channels_last)
    t = torch.tensor(a).contiguous(memory_format=torch.channels_last)
    _same_q(ember.quantize_per_tensor(e, 0.02, 3, ember.qint8),
            torch.quantize_per_tensor(t, 0.02, 3, torch.qint8), torch)
    _same_q(ember.quantize_per_tensor(e, ember.tensor(0.02), ember.tensor(3), ember.quint8),
            torch.quantize_per_tensor(t, torch.tensor(0.02), torch.tensor(3), torch.quint8), torch)
    es = ember.quantize_per_tensor([e, e[0]], ember.tensor([0.1, 0.2]), ember.tensor([1, 2]),
                                   ember.quint8)
    ts = torch.quantize_per_tensor([t, t[0]], torch.tensor([0.1, 0.2]), torch.tensor([1, 2]),
                                   torch.quint8)
    for x, y in zip(es, ts):
        _same_q(x, y, torch)
    for x, y in zip(ember.dequantize(es), torch.dequantize(ts)):
        assert np.array_equal(x.numpy(), y.numpy())
    plain = ember.tensor([1.5, 2.0])
    assert ember.dequantize(plain).dtype is ember.float32


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic(torch, dtype, reduce_range):
    for values in ([0.3, -1.7, 2.25, 0.0, 5.5, -0.01], [1e-7, 2e-7], [0.0, 0.0], [-3.0, -1.0]):
        e, t = _pair(torch, values)
        _same_q(ember.quantize_per_tensor_dynamic(e, getattr(ember, dtype), reduce_range),
                torch.quantize_per_tensor_dynamic(t, getattr(torch, dtype), reduce_range), torch)


def test_make_quantized_tensor_from_integers(torch):
    for np_dt in (np.uint8, np.int8, np.int32):
        a = np.array([[1, 2, 3], [4, 5, 100]], np_dt)
        _same_q(ember._make_per_tensor_quantized_tensor(ember.tensor(a), 0.5, 3),
                torch._make_per_tensor_quantized_tensor(torch.tensor(a), 0.5, 3), torch)
        _same_q(ember._make_per_channel_quantized_tensor(
                    ember.tensor(a), ember.tensor([0.5, 0.25]), ember.tensor([1, 0]), 0),
                torch._make_per_channel_quantized_tensor(
                    torch.tensor(a), torch.tensor([0.5, 0.25]), torch.tensor([1, 0]), 0), torch)
    _same_q(ember._empty_affine_quantized([2, 0], scale=0.5, zero_point=1, dtype=ember.qint8),
            torch._empty_affine_quantized([2, 0], scale=0.5, zero_point=1, dtype=torch.qint8),
            torch)


VIEWS = ["q[0]", "q[:, 1]", "q[0:1]", "q[1:, ::2]", "q[..., None]", "q.view(6)", "q.reshape(3, 2)",
         "q.flatten()", "q.unsqueeze(0)", "q.unsqueeze(2)", "q.unsqueeze(0).squeeze(0)",
         "q.unsqueeze(0).squeeze()", "q.detach()", "q.narrow(1, 0, 2)", "q.select(1, -1)",
         "q.permute(1, 0)", "q.t()", "q.transpose(0, 1)", "q.expand(2, 2, 3)",
         "q.t().contiguous()", "q.clone()", "q.t().clone()", "q[ix]", "q.unbind(0)[1]",
         "q.unfold(1, 2, 1)", "q.diagonal()", "q.movedim(0, 1)", "q.mT", "q.split(1)[1]",
         "q.chunk(2, 1)[1]", "q.view_as(q)", "q.t().reshape(6)", "torch.empty_like(q).shape",
         "q[1, 2]"]


@pytest.mark.parametrize("per_channel", [False, True])
def test_views_keep_or_adjust_the_quantizer(torch, per_channel):
    e, t = _pair(torch, [[0.3, -1.2, 2.5], [0.7, 1.1, -0.4]])
    if per_channel:
        eq = ember.quantize_per_channel(e, ember.tensor([0.1, 0.2]), ember.tensor([1, 2]), 0,
                                        ember.qint8)
        tq = torch.quantize_per_channel(t, torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 0,
                                        torch.qint8)
    else:
        eq = ember.quantize_per_tensor(e, 0.1, 10, ember.quint8)
        tq = torch.quantize_per_tensor(t, 0.1, 10, torch.quint8)
    for expr in VIEWS:
        try:
            want = eval(expr, {"q": tq, "ix": torch.tensor([1, 0]), "torch": torch})
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=str(exc).split(" INTERNAL")[0][:40]
                               .replace("(", r"\(").replace(")", r"\)")):
                eval(expr, {"q": eq, "ix": ember.tensor([1, 0]), "torch": ember})
            continue
        got = eval(expr, {"q": eq, "ix": ember.tensor([1, 0]), "torch": ember})
        if isinstance(want, torch.Size):
            assert tuple(got) == tuple(want)
        else:
            _same_q(got, want, torch)


def test_views_share_storage(torch):
    q = ember.quantize_per_tensor(ember.tensor([0.5, 1.5, 2.5]), 0.5, 0, ember.quint8)
    v = q[1:]
    assert v._base is q and v.untyped_storage().data_ptr() == q.untyped_storage().data_ptr()
    c = q.clone()
    assert c.untyped_storage().data_ptr() != q.untyped_storage().data_ptr()


def test_copy_and_equal(torch):
    e, t = _pair(torch, [[0.3, -1.2, 2.5], [0.7, 1.1, -0.4]])
    eq = ember.quantize_per_tensor(e, 0.1, 10, ember.quint8)
    tq = torch.quantize_per_tensor(t, 0.1, 10, torch.quint8)
    eq2 = ember.quantize_per_tensor(e * 2, 0.2, 3, ember.quint8)
    tq2 = torch.quantize_per_tensor(t * 2, 0.2, 3, torch.quint8)
    _same_q(eq.clone().copy_(eq2), tq.clone().copy_(tq2), torch)  # takes src's quantizer
    _same_q(eq.clone().copy_(e * 3), tq.clone().copy_(t * 3), torch)  # quantizes with self's
    assert ember.equal(eq, eq.clone()) and torch.equal(tq, tq.clone())
    assert not ember.equal(eq, eq2) and not torch.equal(tq, tq2)
    assert not ember.equal(eq, e) and not torch.equal(tq, t)
    assert not ember.equal(eq, eq[:1]) and not torch.equal(tq, tq[:1])
    eqi8 = ember.quantize_per_tensor(e, 0.1, 10, ember.qint8)
    tqi8 = torch.quantize_per_tensor(t, 0.1, 10, torch.qint8)
    assert ember.equal(eq, eqi8) == torch.equal(tq, tqi8)
    ep = ember.quantize_per_channel(e, ember.tensor([0.1, 0.2]), ember.tensor([1, 2]), 0,
                                    ember.qint8)
    cases = [(lambda q, x, p, qi: q.copy_(qi)), (lambda q, x, p, qi: x.clone().copy_(q)),
             (lambda q, x, p, qi: q.copy_(p)), (lambda q, x, p, qi: q.copy_(x.double())),
             (lambda q, x, p, qi: q.copy_(x[:1])),
             (lambda q, x, p, qi: q.copy_(x.t().contiguous().t()))]
    tp = torch.quantize_per_channel(t, torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 0,
                                    torch.qint8)
    for case in cases:
        with pytest.raises(RuntimeError) as want:
            case(tq.clone(), t, tp, tqi8)
        with pytest.raises(RuntimeError) as got:
            case(eq.clone(), e, ep, eqi8)
        assert str(got.value) == str(want.value)


def _torch_names(text):
    return text.replace("ember.", "torch.")


@pytest.mark.parametrize("expr", [
    "torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)",
    "torch.quantize_per_tensor(x[0, 0], 0.1, 10, torch.quint8)",
    "torch.quantize_per_tensor(x[:0], 0.1, 10, torch.qint8)",
    "torch.quantize_per_tensor(x * 100, 0.5, 0, torch.qint32)",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 0, torch.qint8)",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, 2, 3]), 1, "
    "torch.qint8)[:, 1]",
    "torch.quantize_per_tensor(torch.linspace(-3, 3, 1000).reshape(10, 100), 0.05, 3, torch.qint8)",
])
def test_repr(torch, expr):
    a = np.array([[0.3, -1.2, 2.5], [0.7, 1.1, -0.4]], np.float32)
    want = repr(eval(expr, {"torch": torch, "x": torch.tensor(a)}))
    got = repr(eval(expr, {"torch": ember, "x": ember.tensor(a)}))
    assert _torch_names(got) == want


@pytest.mark.parametrize("expr", [
    "torch.quantize_per_tensor(x.double(), 0.1, 1, torch.quint8)",
    "torch.quantize_per_tensor(x.long(), 0.1, 1, torch.quint8)",
    "torch.quantize_per_tensor(x, 0.1, 1, torch.float)",
    "torch.quantize_per_tensor(x, 0.1, 1000, torch.quint8)",
    "torch.quantize_per_tensor(x, 0.1, -1, torch.quint8)",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, 2, 3]), 0, "
    "torch.qint8)",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2]), torch.tensor([1, 200]), 0, "
    "torch.qint8)",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2]), torch.tensor([1]), 0, torch.qint8)",
    "torch.quantize_per_channel(x, torch.tensor([1, 2]), torch.tensor([1, 2]), 0, torch.qint8)",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 2, torch.qint8)",
    "torch._make_per_tensor_quantized_tensor(x, 0.5, 3)",
    "torch.quantize_per_tensor(x, 0.1, 1, torch.quint8).q_per_channel_scales()",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 0, "
    "torch.qint8).q_scale()",
    "torch.quantize_per_channel(x, torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 0, "
    "torch.qint8).t()",
])
def test_errors(torch, expr):
    a = np.array([[0.3, -1.2, 2.5], [0.7, 1.1, -0.4]], np.float32)
    with pytest.raises(RuntimeError) as want:
        eval(expr, {"torch": torch, "x": torch.tensor(a)})
    with pytest.raises(RuntimeError) as got:
        eval(expr, {"torch": ember, "x": ember.tensor(a)})
    assert str(got.value) == str(want.value)


def test_unsupported_ops_raise_pytorch_error():
    q = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.5, 1, ember.quint8)
    for fn, name in ((lambda: q + q, "aten::add.Tensor"), (lambda: q.sin(), "aten::sin"),
                     (lambda: q.sum(), "aten::sum")):
        with pytest.raises(NotImplementedError, match=f"Could not run '{name}' with arguments "
                                                      "from the 'QuantizedCPU' backend"):
            fn()


def test_tensor_properties(torch):
    q = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.5, 1, ember.quint8)
    assert q.is_quantized and not ember.tensor([1.0]).is_quantized
    assert q.layout is ember.strided and q.element_size() == 1
    assert q.qscheme() is ember.per_tensor_affine
    assert repr(ember.per_channel_affine) == "ember.per_channel_affine"
    assert isinstance(ember.per_tensor_symmetric, ember.qscheme)
    assert str(ember._C._dispatch_keys(q)) == str(torch._C._dispatch_keys(
        torch.quantize_per_tensor(torch.tensor([1.0]), 0.5, 1, torch.quint8)))


def test_deprecation_warning_once():
    from ember._kernels.quantized import affine
    affine._warned.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.quantize_per_tensor(ember.tensor([1.0]), 0.5, 1, ember.quint8)
        ember.quantize_per_tensor(ember.tensor([1.0]), 0.5, 1, ember.quint8)
    assert len(w) == 1 and str(w[0].message).startswith("torch.quantize_per_tensor, torch.")


def _saved(lib, t):
    buf = io.BytesIO()
    lib.save(t, buf)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("weights_only", [True, False])
def test_save_load_both_ways(torch, weights_only):
    a = np.array([[0.3, -1.2, 2.5], [0.7, 1.1, -0.4]], np.float32)
    e, t = ember.tensor(a), torch.tensor(a)
    pairs = [(ember.quantize_per_tensor(e, 0.1, 10, ember.quint8),
              torch.quantize_per_tensor(t, 0.1, 10, torch.quint8)),
             (ember.quantize_per_tensor(e, 0.1, 10, ember.qint32).t(),
              torch.quantize_per_tensor(t, 0.1, 10, torch.qint32).t()),
             (ember.quantize_per_channel(e, ember.tensor([0.1, 0.2, 0.3]),
                                         ember.tensor([1, 2, 3]), 1, ember.qint8),
              torch.quantize_per_channel(t, torch.tensor([0.1, 0.2, 0.3]),
                                         torch.tensor([1, 2, 3]), 1, torch.qint8))]
    for eq, tq in pairs:
        _same_tq(torch.load(_saved(ember, eq), weights_only=weights_only), tq)
        _same_q(ember.load(_saved(torch, tq), weights_only=weights_only), tq, torch)
        # a state dict of a quantized tensor and one of its views keeps one storage
        sd = ember.load(_saved(torch, {"a": tq, "b": tq[1:]}), weights_only=weights_only)
        assert sd["b"].untyped_storage().data_ptr() == sd["a"].untyped_storage().data_ptr()
        _same_q(sd["b"], tq[1:], torch)


def test_pickle_round_trip(torch):
    q = ember.quantize_per_channel(ember.tensor([[0.3, -1.2], [0.7, 1.1]]),
                                   ember.tensor([0.1, 0.2]), ember.tensor([1, 2]), 0, ember.qint8)
    for r in (pickle.loads(pickle.dumps(q)), __import__("copy").deepcopy(q)):
        assert ember.equal(r, q) and r.qscheme() is ember.per_channel_affine


# -- dynamic quantization of Linear (FBGEMM's arithmetic) -----------------------------------------

def _float_models(torch, rng, k, n, bias=True):
    w = (rng.standard_normal((n, k)) * 0.3).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    models = []
    for lib in (ember, torch):
        lin = lib.nn.Linear(k, n, bias=bias)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
            if bias:
                lin.bias.copy_(lib.tensor(b))
        models.append(lib.nn.Sequential(lin, lib.nn.ReLU(), lib.nn.Linear(n, 3)))
    with torch.no_grad():
        models[1][2].weight.copy_(torch.tensor(models[0][2].weight.detach().numpy()))
        models[1][2].bias.copy_(torch.tensor(models[0][2].bias.detach().numpy()))
    return models


@pytest.mark.parametrize("engine", ["fbgemm", "x86"])
def test_quantize_dynamic_linear_matches_pytorch(torch, engine):
    saved = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine
    try:
        rng = np.random.default_rng(3)
        for trial in range(12):
            k, n = (int(v) for v in rng.integers(1, 40, 2))
            mine, theirs = _float_models(torch, rng, k, n, bias=trial % 3 != 0)
            qe = ember.ao.quantization.quantize_dynamic(mine, {ember.nn.Linear},
                                                        dtype=ember.qint8)
            qt = torch.ao.quantization.quantize_dynamic(theirs, {torch.nn.Linear},
                                                        dtype=torch.qint8)
            shape = (int(rng.integers(1, 9)), k) if trial % 2 else (2, int(rng.integers(1, 5)), k)
            x = (rng.standard_normal(shape) * rng.uniform(0.05, 8)).astype(np.float32)
            got, want = qe(ember.tensor(x)).numpy(), qt(torch.tensor(x)).detach().numpy()
            assert np.array_equal(got, want), (trial, np.abs(got - want).max())
            _same_q(qe[0].weight(), qt[0].weight(), torch)
    finally:
        torch.backends.quantized.engine = saved
    assert isinstance(qe[0], ember.ao.nn.quantized.dynamic.Linear)
    assert _torch_names(repr(qe)) == repr(qt)


def test_dynamic_linear_state_dict_both_ways(torch):
    rng = np.random.default_rng(4)
    mine, theirs = _float_models(torch, rng, 6, 4)
    qe = ember.ao.quantization.quantize_dynamic(mine, {ember.nn.Linear}, dtype=ember.qint8)
    qt = torch.ao.quantization.quantize_dynamic(theirs, {torch.nn.Linear}, dtype=torch.qint8)
    assert list(qe.state_dict()) == list(qt.state_dict())
    fresh_e = ember.ao.quantization.quantize_dynamic(
        ember.nn.Sequential(ember.nn.Linear(6, 4), ember.nn.ReLU(), ember.nn.Linear(4, 3)))
    fresh_e.load_state_dict(ember.load(_saved(torch, qt.state_dict()), weights_only=True))
    fresh_t = torch.ao.quantization.quantize_dynamic(
        torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)))
    fresh_t.load_state_dict(torch.load(_saved(ember, qe.state_dict()), weights_only=True))
    x = rng.standard_normal((5, 6)).astype(np.float32)
    want = qt(torch.tensor(x)).detach().numpy()
    assert np.array_equal(fresh_e(ember.tensor(x)).numpy(), want)
    assert np.array_equal(fresh_t(torch.tensor(x)).detach().numpy(), want)


def test_min_max_observer_qparams(torch):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(50) * 3 + 1).astype(np.float32)
    for kwargs in ({}, {"dtype": "qint8", "qscheme": "per_tensor_symmetric"},
                   {"reduce_range": True}, {"quant_min": 0, "quant_max": 15}):
        def make(lib):
            kw = {k: getattr(lib, v) if isinstance(v, str) else v for k, v in kwargs.items()}
            obs = lib.ao.quantization.MinMaxObserver(**kw)
            obs(lib.tensor(a))
            obs(lib.tensor(a * 2 - 1))
            return obs.calculate_qparams()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (es, ez), (ts, tz) = make(ember), make(torch)
        assert np.array_equal(es.numpy(), ts.numpy()) and np.array_equal(ez.numpy(), tz.numpy())


def test_quantize_dynamic_is_deprecated_as_in_pytorch(torch):
    for lib in (torch, ember):
        with pytest.warns(DeprecationWarning, match="torch.ao.quantization is deprecated"):
            lib.ao.quantization.quantize_dynamic(lib.nn.Linear(2, 2))


def test_fused_multiply_add_rounds_once():
    """FBGEMM's FMA, emulated: a sum that double rounding puts exactly on a float32 midpoint
    (64 + 2**-17 + 2**-18 - 2**-64 here) still rounds the way its exact value lies."""
    from ember._kernels.cpu._util import fma_float32
    from ember.ao.nn.quantized.dynamic.modules.linear import _fma_float32
    a, b = np.float32(2.0 ** -18 * (1 + 2.0 ** -23)), np.float32(1 - 2.0 ** -23)
    c = np.float32(64 * (1 + 2.0 ** -23))
    assert np.float32(float(a) * float(b) + float(c)) != c  # (double rounding goes up)
    assert fma_float32(np.array([a]), b, np.array([c]))[0] == c
    assert _fma_float32(ember.tensor([a]), float(b), ember.tensor([c])).numpy()[0] == c

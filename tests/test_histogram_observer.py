"""HistogramObserver and the post-training qconfigs against PyTorch. The observer runs the same
seeded batch sequences in both (narrowing and widening ranges, constants, infinities, every
dtype/qscheme/reduce_range combination, custom ranges, bins and upsample rates, float64 input):
min_val, max_val, the histogram and calculate_qparams' scale and zero point agree bit for bit,
as do its errors, warnings, repr and state dict. The L2 search sums 2048 float32 terms per step
(ember's sum order is not ATen's vectorized one), so those sums may differ in the last ulp; the
search compares them only with each other and no case here lands on such a tie. Then
get_default_qconfig and the other default qconfigs against PyTorch's (class and with_args
arguments), and QConfigMapping's API and default mappings."""

import re
import warnings
from collections import OrderedDict

import pytest

import ember
from helpers import to_np

pytestmark = [pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated"),
              pytest.mark.filterwarnings("ignore:Please use quant_min and quant_max")]


def _batches(torch, kind):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    if kind == "narrowing":
        return [randn(1000) * s for s in (4, 2, 1)]
    if kind == "widening":
        return [randn(1000) * s for s in (1, 2, 4)]
    if kind == "shifting":
        return [randn(500) * s + o for s, o in ((1, 0), (1, 5), (3, -4), (0.1, 2), (10, 0))]
    if kind == "constant_then_random":
        return [torch.full((10,), 3.0), randn(100)]
    if kind == "constant":
        return [torch.full((10,), 3.0), torch.full((7,), 3.0)]
    if kind == "same_range":
        x = randn(400)
        return [x, x.flip(0), x * 0.5]
    if kind == "infinities":
        x = randn(300)
        x[3], x[7] = float("inf"), float("-inf")
        return [x, randn(100) * 2]
    if kind == "all_infinite_first":
        return [torch.tensor([float("inf"), float("-inf")]), randn(100)]
    if kind == "activations":
        return [randn(8, 3, 8, 8).relu() for _ in range(3)]
    if kind == "relu_shifting":
        # many zeros: the rebinned first bin sums thousands of float32 weights
        return [(randn(n) * s + o).relu() for n, s, o in
                ((1109, 3.4, 0.05), (1225, 3.7, 4.1), (2954, 4.8, 5.0), (2120, 8.5, -3.4),
                 (1299, 7.7, 5.1))]
    if kind == "empty":
        return [torch.tensor([]), randn(50), torch.tensor([])]
    raise AssertionError(kind)


def _kwargs(torch, mod, kw):
    return {k: getattr(mod, v.split(".")[-1]) if isinstance(v, str) and "." in v else v
            for k, v in kw.items()}


CASES = [
    ("narrowing", {}),
    ("widening", {}),
    ("shifting", {}),
    ("constant_then_random", {}),
    ("constant", {}),
    ("same_range", {}),
    ("infinities", {}),
    ("all_infinite_first", {}),
    ("activations", {}),
    ("relu_shifting", {}),
    ("empty", {}),
    ("widening", {"reduce_range": True}),
    ("widening", {"qscheme": "x.per_tensor_symmetric"}),
    ("shifting", {"qscheme": "x.per_tensor_symmetric", "dtype": "x.qint8"}),
    ("shifting", {"dtype": "x.qint8"}),
    ("narrowing", {"dtype": "x.qint8", "reduce_range": True}),
    ("activations", {"quant_min": 0, "quant_max": 127}),
    ("shifting", {"dtype": "x.qint8", "eps": 2 ** -12}),
    ("widening", {"bins": 256}),
    ("shifting", {"bins": 16, "upsample_rate": 4}),
    ("shifting", {"bins": 64, "upsample_rate": 1}),
]


def _run(torch, kind, kw, dtype=None):
    upsample = kw.pop("upsample_rate", None)
    t_obs = torch.ao.quantization.HistogramObserver(**_kwargs(torch, torch, kw))
    e_obs = ember.ao.quantization.HistogramObserver(**_kwargs(torch, ember, kw))
    if upsample is not None:
        t_obs.upsample_rate = e_obs.upsample_rate = upsample
    for b in _batches(torch, kind):
        if dtype is not None:
            b = b.to(getattr(torch, dtype))
        with warnings.catch_warnings(record=True) as tw:
            warnings.simplefilter("always")
            t_obs(b)
        with warnings.catch_warnings(record=True) as ew:
            warnings.simplefilter("always")
            x = ember.tensor(b.numpy())
            assert e_obs(x) is x
        assert [str(w.message) for w in ew] == [str(w.message) for w in tw]
    return t_obs, e_obs


def _same(e, t):
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    assert to_np(e).tobytes() == t.detach().numpy().tobytes(), (e, t)


@pytest.mark.parametrize("kind,kw", CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_histogram_observer_matches_pytorch(torch, kind, kw):
    t_obs, e_obs = _run(torch, kind, dict(kw))
    for name in ("min_val", "max_val", "histogram", "eps"):
        _same(getattr(e_obs, name), getattr(t_obs, name))
    assert (e_obs.quant_min, e_obs.quant_max, e_obs.dst_nbins) == \
        (t_obs.quant_min, t_obs.quant_max, t_obs.dst_nbins)
    t_scale, t_zp = t_obs.calculate_qparams()
    e_scale, e_zp = e_obs.calculate_qparams()
    _same(e_scale, t_scale)
    _same(e_zp, t_zp)
    t_min, t_max = t_obs._non_linear_param_search()
    e_min, e_max = e_obs._non_linear_param_search()
    _same(e_min, t_min)
    _same(e_max, t_max)


def test_histogram_observer_float64_input(torch):
    # the buffers stay float32; histc bins the float64 values against float32 bounds
    t_obs, e_obs = _run(torch, "shifting", {"bins": 32}, dtype="float64")
    for name in ("min_val", "max_val", "histogram"):
        _same(getattr(e_obs, name), getattr(t_obs, name))
    for e, t in zip(e_obs.calculate_qparams(), t_obs.calculate_qparams()):
        _same(e, t)


def test_histogram_observer_quantization_error(torch):
    t_obs, e_obs = _run(torch, "shifting", {"bins": 128})
    for start, end in ((0, 127), (3, 100), (60, 60), (10, 11)):
        t = t_obs._compute_quantization_error(start, end)
        e = e_obs._compute_quantization_error(start, end)
        # a float32 sum of 128 terms (see the module docstring)
        assert e == pytest.approx(t, rel=1e-6)


def test_histogram_observer_nan(torch):
    # NaN makes the first batch's range NaN and histc refuses it, in both
    def raised(mod, x):
        with pytest.raises(RuntimeError) as info:
            mod.ao.quantization.HistogramObserver()(x)
        return str(info.value)
    values = [1.0, float("nan"), 2.0]
    # (ATen's aminmax gives NaN with its sign bit set, which its message prints as -nan)
    assert raised(ember, ember.tensor(values)) == raised(torch, torch.tensor(values)).replace(
        "-nan", "nan")
    # after a first batch, NaN min/max make the histc range NaN as well
    t_obs = torch.ao.quantization.HistogramObserver()
    e_obs = ember.ao.quantization.HistogramObserver()
    t_obs(torch.tensor([1.0, 2.0]))
    e_obs(ember.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError) as t_info:
        t_obs(torch.tensor(values))
    with pytest.raises(RuntimeError) as e_info:
        e_obs(ember.tensor(values))
    assert str(e_info.value) == str(t_info.value).replace("-nan", "nan")


def _outcome(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
        except Exception as exc:  # noqa: BLE001 (the type and message are what is compared)
            return ("raised", type(exc).__name__, str(exc))
    return ("returned", r, [str(x.message) for x in w])


def _both(torch, make):
    """The same exception (type and message, verbatim), or the same result (its text, with
    ember's module name for torch's) and the same warnings."""
    t, e = _outcome(lambda: make(torch)), _outcome(lambda: make(ember))
    if t[0] == "returned":
        t = (t[0], re.sub(r"\btorch\b", "ember", str(t[1])), t[2])
        e = (e[0], str(e[1]), e[2])
    assert e == t
    return e


@pytest.mark.parametrize("make", [
    lambda m: m.ao.quantization.HistogramObserver(qscheme=m.per_channel_affine),
    lambda m: m.ao.quantization.HistogramObserver(is_dynamic=True),
    lambda m: m.ao.quantization.HistogramObserver(qscheme=m.per_tensor_symmetric,
                                                  reduce_range=True),
    lambda m: m.ao.quantization.HistogramObserver(dtype=m.qint8, quant_min=0, quant_max=300),
    lambda m: m.ao.quantization.HistogramObserver(quant_min=1, quant_max=10),
    lambda m: m.ao.quantization.HistogramObserver().calculate_qparams(),
    lambda m: m.ao.quantization.HistogramObserver(bins=8),
])
def test_histogram_observer_errors_and_warnings(torch, make):
    _both(torch, make)


def test_histogram_observer_bins_mismatch_and_repr(torch):
    def make(m):
        obs = m.ao.quantization.HistogramObserver(bins=8)
        obs(m.arange(10.0))
        text = repr(obs)
        obs.bins = 4
        return text, obs.calculate_qparams()
    _both(torch, make)


def test_histogram_observer_state_dict(torch):
    t_obs, e_obs = _run(torch, "widening", {"bins": 64})
    t_sd, e_sd = t_obs.state_dict(), e_obs.state_dict()
    assert list(e_sd) == list(t_sd) == ["eps", "histogram", "min_val", "max_val"]
    fresh = ember.ao.quantization.HistogramObserver(bins=64)
    fresh.load_state_dict(e_sd)
    for name in ("min_val", "max_val", "histogram"):
        _same(getattr(fresh, name), getattr(t_obs, name))
    for e, t in zip(fresh.calculate_qparams(), t_obs.calculate_qparams()):
        _same(e, t)
    # a version-2 state dict saved an unobserved min/max empty
    old = OrderedDict((k, ember.tensor(v.numpy())) for k, v in t_sd.items())
    old["min_val"], old["max_val"] = ember.tensor([]), ember.tensor([])
    old._metadata = {"": {"version": 2}}
    fresh = ember.ao.quantization.HistogramObserver(bins=64)
    fresh.load_state_dict(old)
    assert fresh.min_val.shape == () and float(fresh.min_val) == float("inf")
    assert float(fresh.max_val) == float("-inf")


def test_histogram_fake_quant(torch):
    t_fq = torch.ao.quantization.default_histogram_fake_quant()
    e_fq = ember.ao.quantization.default_histogram_fake_quant()
    for b in _batches(torch, "shifting"):
        _same(e_fq(ember.tensor(b.numpy())), t_fq(b))
    _same(e_fq.scale, t_fq.scale)
    _same(e_fq.zero_point, t_fq.zero_point)
    assert re.sub(r"\btorch\b", "ember", repr(t_fq)) == repr(e_fq)


def test_other_observers(torch):
    def recording(m):
        obs = m.ao.quantization.RecordingObserver()
        x = m.ones(2)
        assert obs(x) is x
        obs(m.zeros(1))
        return repr(obs), obs.get_tensor_value(), obs.dtype
    _both(torch, recording)
    _both(torch, lambda m: m.ao.quantization.RecordingObserver().calculate_qparams())
    _both(torch, lambda m: (repr(m.ao.quantization.ReuseInputObserver()),
                            m.ao.quantization.ReuseInputObserver().dtype))
    _both(torch, lambda m: m.ao.quantization.ReuseInputObserver().calculate_qparams())
    _both(torch, lambda m: m.ao.quantization.PlaceholderObserver(compute_dtype=m.quint8))

    # with_callable_args: computed for each observer made, overridable by the call
    def callable_args(m):
        calls = []
        make = m.ao.quantization.MinMaxObserver.with_callable_args(
            eps=lambda: calls.append(1) or 2 ** -10).with_args(quant_min=0, quant_max=127)
        return repr(make)[-len("{'eps': <function"):], float(make().eps), \
            float(make(eps=0.5).eps), len(calls)
    _both(torch, callable_args)


def _describe(x, mod):
    """A qconfig entry as class name and with_args keywords (observers of fake quantizers
    described likewise), with the library's name taken out."""
    name = mod.__name__
    if x is None:
        return None
    if hasattr(x, "p"):
        kw = {k: _describe(v, mod) if callable(v) else str(v).replace(name + ".", "")
              for k, v in x.p.keywords.items()}
        return (_describe(x.p.func, mod), tuple(sorted(kw.items())), tuple(x.callable_args))
    if isinstance(x, type):
        return (x.__module__.replace(name, ""), x.__qualname__)
    return repr(x).replace(name, "")


def _same_qconfig(e, t, torch):
    assert type(e).__name__ == type(t).__name__ == "QConfig"
    assert _describe(e.activation, ember) == _describe(t.activation, torch)
    assert _describe(e.weight, ember) == _describe(t.weight, torch)


QCONFIGS = ["default_qconfig", "default_debug_qconfig", "default_per_channel_qconfig",
            "default_dynamic_qconfig", "float16_dynamic_qconfig", "float16_static_qconfig",
            "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig",
            "float_qparams_weight_only_qconfig_4bit", "default_quint8_weight_qconfig",
            "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_weight_only_qconfig",
            "default_activation_only_qconfig", "default_qat_qconfig_v2",
            "default_reuse_input_qconfig", "default_symmetric_qnnpack_qconfig",
            "default_per_channel_symmetric_qnnpack_qconfig",
            "default_symmetric_qnnpack_qat_qconfig",
            "default_per_channel_symmetric_qnnpack_qat_qconfig", "default_embedding_qat_qconfig",
            "default_embedding_qat_qconfig_4bit"]


@pytest.mark.parametrize("name", QCONFIGS)
def test_default_qconfigs(torch, name):
    t = getattr(torch.ao.quantization.qconfig, name)
    e = getattr(ember.ao.quantization.qconfig, name)
    _same_qconfig(e, t, torch)
    # and each builds observers configured as PyTorch's
    for part in ("activation", "weight"):
        t_obs, e_obs = getattr(t, part)(), getattr(e, part)()
        assert re.sub(r"\btorch\b", "ember", repr(t_obs)) == repr(e_obs)


@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_get_default_qconfig(torch, backend):
    t = torch.ao.quantization.get_default_qconfig(backend)
    e = ember.ao.quantization.get_default_qconfig(backend)
    _same_qconfig(e, t, torch)
    assert re.sub(r"\btorch\b", "ember", repr(t)) == repr(e)
    assert ember.ao.quantization.qconfig_equals(e, ember.ao.quantization.get_default_qconfig(
        backend))
    t_obs, e_obs = t.activation(), e.activation()
    assert (e_obs.quant_min, e_obs.quant_max, e_obs.reduce_range, e_obs.bins) == \
        (t_obs.quant_min, t_obs.quant_max, t_obs.reduce_range, t_obs.bins)
    for version in (0, 1):
        _same_qconfig(ember.ao.quantization.get_default_qat_qconfig(backend, version),
                      torch.ao.quantization.get_default_qat_qconfig(backend, version), torch)


@pytest.mark.parametrize("args", [("foo",), ("x86", 1), ("qnnpack", None)])
def test_get_default_qconfig_errors(torch, args):
    _both(torch, lambda m: m.ao.quantization.get_default_qconfig(*args))


def test_onednn_vnni_warning(torch):
    assert ember.cpu._is_vnni_supported() == torch.cpu._is_vnni_supported()
    _both(torch, lambda m: m.ao.quantization.get_default_qconfig("onednn") is not None)


def _mapping_entries(mapping, mod):
    def key(k):
        if isinstance(k, str):
            return k
        if isinstance(k, tuple):
            return tuple(key(x) for x in k)
        return getattr(k, "__name__", repr(k))
    d = mapping.to_dict()
    return {"": _describe(d[""], mod) if d[""] is None else
            (_describe(d[""].activation, mod), _describe(d[""].weight, mod)),
            **{style: [(key(e[:-1]) if len(e) > 2 else key(e[0]),
                        None if e[-1] is None else
                        (_describe(e[-1].activation, mod), _describe(e[-1].weight, mod)))
                       for e in d[style]]
               for style in d if style}}


@pytest.mark.parametrize("qat", [False, True])
@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_default_qconfig_mappings(torch, qat, backend):
    fn = "get_default_qat_qconfig_mapping" if qat else "get_default_qconfig_mapping"
    t = getattr(torch.ao.quantization, fn)(backend)
    e = getattr(ember.ao.quantization, fn)(backend)
    assert _mapping_entries(e, ember) == _mapping_entries(t, torch)
    # the fixed-range ops of one observer share one qconfig object
    ot = e.object_type_qconfigs
    assert ot[ember.sigmoid] is ot["sigmoid"] is ot[ember.nn.Sigmoid]
    assert ot[ember.tanh] is ot[ember.nn.Tanh]


def test_symmetric_qnnpack_mappings(torch):
    from ember.ao.quantization import qconfig_mapping as em
    from torch.ao.quantization import qconfig_mapping as tm
    for name in ("_get_symmetric_qnnpack_qconfig_mapping",
                 "_get_symmetric_qnnpack_qat_qconfig_mapping"):
        assert _mapping_entries(getattr(em, name)(), ember) == \
            _mapping_entries(getattr(tm, name)(), torch)


def test_qconfig_mapping_api(torch):
    def build(m):
        q = m.ao.quantization
        qm = (q.QConfigMapping()
              .set_global(q.default_qconfig)
              .set_object_type(m.nn.Linear, q.default_per_channel_qconfig)
              .set_object_type("reshape", None)
              .set_module_name_regex("foo.*bar", q.default_dynamic_qconfig)
              .set_module_name_regex("foo.*", None)
              .set_module_name("sub.conv", q.default_qat_qconfig)
              .set_module_name_object_type_order("sub", m.nn.ReLU, 0,
                                                 q.default_qconfig))
        # setting a key again keeps its place
        qm.set_module_name_regex("foo.*bar", q.default_qconfig)
        return qm
    t, e = build(torch), build(ember)
    assert _mapping_entries(e, ember) == _mapping_entries(t, torch)
    assert list(e.module_name_regex_qconfigs) == ["foo.*bar", "foo.*"]
    assert re.sub(r"\btorch\b", "ember", repr(t)) == repr(e)
    assert repr(ember.ao.quantization.QConfigMapping()) == \
        repr(torch.ao.quantization.QConfigMapping())
    again = ember.ao.quantization.QConfigMapping.from_dict(e.to_dict())
    assert _mapping_entries(again, ember) == _mapping_entries(e, ember)
    assert again.to_dict() == e.to_dict()
    # the deprecated dict getters
    for getter in ("get_default_qconfig_dict", "get_default_qat_qconfig_dict"):
        _both(torch, lambda m: sorted(getattr(m.ao.quantization, getter)("qnnpack")))


def test_legacy_paths():
    import ember.quantization as legacy
    assert legacy.HistogramObserver is ember.ao.quantization.HistogramObserver
    assert legacy.get_default_qconfig is ember.ao.quantization.get_default_qconfig
    assert legacy.observer.default_histogram_observer is \
        ember.ao.quantization.observer.default_histogram_observer
    assert legacy.qconfig.default_symmetric_qnnpack_qconfig is \
        ember.ao.quantization.qconfig.default_symmetric_qnnpack_qconfig


def test_kernels_the_observer_needs(torch):
    """CPU kernels the search and the rebinning use, as ATen computes them: cumsum (and the
    other scans) carrying float32 in double, linspace's float32 values with one rounding each
    (a fused multiply-add), bincount adding float32 weights in float32, one at a time."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5000, generator=g)
    for name, arg in (("cumsum", x), ("cumprod", 1 + x / 100), ("logcumsumexp", x)):
        _same(getattr(ember, name)(ember.tensor(arg.numpy()), 0), getattr(torch, name)(arg, 0))
    _same(ember.cumsum(ember.tensor(x.numpy()).to(ember.complex64), 0),
          torch.cumsum(x.to(torch.complex64), 0))
    for steps in (1, 2, 7, 40, 2049, 32769):
        for _ in range(3):
            a, b = (torch.randn(2, generator=g) * 10).tolist()
            _same(ember.linspace(a, b, steps), torch.linspace(a, b, steps))
            _same(ember.linspace(ember.tensor(a), ember.tensor(b), steps),
                  torch.linspace(torch.tensor(a), torch.tensor(b), steps))
    for a, b in ((0.0, float("inf")), (float("-inf"), 1.0), (1.0, 1.0), (3, -2)):
        np_e, np_t = ember.linspace(a, b, 5), torch.linspace(a, b, 5)
        assert str(np_e) == str(np_t)
    idx = torch.randint(0, 3, (20000,), generator=g)
    for dtype in ("float32", "float64"):
        w = (torch.randn(20000, generator=g) * 100).to(getattr(torch, dtype))
        _same(ember.bincount(ember.tensor(idx.numpy()), ember.tensor(w.numpy()), minlength=5),
              torch.bincount(idx, w, minlength=5))
    _same(ember.bincount(ember.tensor([], dtype=ember.int64), ember.tensor([]), minlength=3),
          torch.bincount(torch.tensor([], dtype=torch.int64), torch.tensor([]), minlength=3))

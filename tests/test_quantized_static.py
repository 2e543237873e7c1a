"""Static quantization against PyTorch (x86 engine, FBGEMM): the ``quantized::linear`` /
``linear_relu`` ops on the same quantized inputs bit for bit (per-tensor and per-channel
weights, with and without bias and zero points, ties in the requantization, saturation), their
prepacked weights' ``unpack()``, schemas and errors; the modules (``Quantize``, ``DeQuantize``,
``Linear``, ``LinearReLU``: repr, state dicts loaded across the libraries); and eager models
through prepare -> calibrate -> convert and prepare_qat -> train -> convert, whose quantized
outputs match PyTorch's integer for integer."""

import collections

import numpy as np
import pytest

import ember

pytestmark = [pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions"),
              pytest.mark.filterwarnings("ignore:Please use quant_min and quant_max")]


def _qtensor(lib, ints, scale, zero_point, axis=None):
    """``ints`` as a quantized tensor of ``lib`` (per channel when ``scale`` is an array)."""
    ints = lib.tensor(np.ascontiguousarray(ints))
    if axis is None:
        return lib._make_per_tensor_quantized_tensor(ints, scale, zero_point)
    return lib._make_per_channel_quantized_tensor(ints, lib.tensor(np.asarray(scale, np.float64)),
                                                  lib.tensor(np.asarray(zero_point, np.int64)),
                                                  axis)


def _assert_same_q(e, t):
    """The same integers, shape, dtype and quantization parameters."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    assert str(e.qscheme()).split(".")[-1] == str(t.qscheme()).split(".")[-1]
    if "per_channel" in str(t.qscheme()):
        np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                      t.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(e.q_per_channel_zero_points().numpy(),
                                      t.q_per_channel_zero_points().numpy())
        assert e.q_per_channel_axis() == t.q_per_channel_axis()
    else:
        assert e.q_scale() == t.q_scale() and e.q_zero_point() == t.q_zero_point()


def _case(seed):
    """Random operands of one op call; every third case has power-of-two scales and a bias of
    eighths, so that many requantized values are ties."""
    rng = np.random.default_rng(seed)
    m, k, n = int(rng.integers(1, 7)), int(rng.integers(1, 70)), int(rng.integers(1, 40))
    ties = seed % 3 == 0
    per_channel = seed % 4 == 1
    c = dict(
        x=rng.integers(0, 256, (m, k)).astype(np.uint8),
        x_scale=0.5 if ties else float(rng.uniform(1e-3, 0.1)),
        x_zp=int(rng.integers(0, 256)) if seed % 2 else 0,
        w=rng.integers(-128, 128, (n, k)).astype(np.int8),
        w_scale=(rng.uniform(1e-3, 0.05, n) if per_channel
                 else 0.25 if ties else float(rng.uniform(1e-3, 0.05))),
        w_zp=(rng.integers(-20, 20, n) if per_channel and seed % 8 == 1 else np.zeros(n, np.int64))
        if per_channel else (int(rng.integers(-10, 10)) if seed % 7 == 3 else 0),
        axis=0 if per_channel else None,
        bias=None if seed % 5 == 0 else
        (rng.integers(-64, 64, n) * 0.125 if ties else rng.normal(0, 3, n)).astype(np.float32),
        y_scale=0.25 * 2 ** int(rng.integers(0, 8)) if ties else float(rng.uniform(0.01, 2)),
        y_zp=int(rng.integers(0, 256)))
    return c


def _run_linear(lib, c, relu, shape=None):
    x = c["x"] if shape is None else c["x"].reshape(*shape, c["x"].shape[-1])
    qx = _qtensor(lib, x, c["x_scale"], c["x_zp"])
    qw = _qtensor(lib, c["w"], c["w_scale"], c["w_zp"], c["axis"])
    bias = None if c["bias"] is None else lib.tensor(c["bias"])
    packed = lib.ops.quantized.linear_prepack(qw, bias)
    op = lib.ops.quantized.linear_relu if relu else lib.ops.quantized.linear
    return op(qx, packed, c["y_scale"], c["y_zp"])


@pytest.mark.parametrize("relu", [False, True])
def test_linear_ops_bit_exact(torch, relu):
    for seed in range(60):
        c = _case(seed)
        _assert_same_q(_run_linear(ember, c, relu), _run_linear(torch, c, relu))


def test_linear_batch_dims_saturation_and_empty(torch):
    """Leading batch dims, a long reduction, outputs far outside the uint8 range (tiny and huge
    output scales, a huge bias), and no rows."""
    rng = np.random.default_rng(7)
    for shape, k, n, y_scale, bias_scale in [((2, 3), 1500, 20, 1e-6, 1e9), ((0,), 5, 3, 0.1, 1),
                                             ((2, 1, 2), 17, 9, 1e30, 1)]:
        c = dict(x=rng.integers(0, 256, (int(np.prod(shape)), k)).astype(np.uint8), x_scale=0.02,
                 x_zp=7, w=rng.integers(-128, 128, (n, k)).astype(np.int8), w_scale=0.003, w_zp=1,
                 axis=None, bias=(rng.normal(0, 3, n) * bias_scale).astype(np.float32),
                 y_scale=y_scale, y_zp=100)
        for relu in (False, True):
            _assert_same_q(_run_linear(ember, c, relu, shape), _run_linear(torch, c, relu, shape))


def test_prepack_unpack_and_schemas(torch):
    for seed in (1, 2, 5, 9):  # per channel, per tensor, with and without bias
        c = _case(seed)
        got, want = [lib.ops.quantized.linear_unpack(lib.ops.quantized.linear_prepack(
            _qtensor(lib, c["w"], c["w_scale"], c["w_zp"], c["axis"]),
            None if c["bias"] is None else lib.tensor(c["bias"]))) for lib in (ember, torch)]
        _assert_same_q(got[0], want[0])  # (the scales rounded to float, as FBGEMM keeps them)
        assert (got[1] is None) == (want[1] is None)
        if want[1] is not None:
            np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
        packed = ember.ops.quantized.linear_prepack(got[0], got[1])
        _assert_same_q(packed.unpack()[0], want[0])
        assert (packed.bias() is None) == (want[1] is None)
    for name in ("linear", "linear_relu", "linear_prepack", "linear_unpack"):
        assert str(getattr(ember.ops.quantized, name).default._schema) == \
            str(getattr(torch.ops.quantized, name).default._schema)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type is compared)
        return type(e).__name__, str(e).split("\n")[0]
    return None


def test_errors(torch):
    results = {}
    for lib in (ember, torch):
        q = lib.ops.quantized
        w = _qtensor(lib, np.ones((4, 3), np.int8), 0.1, 0)
        packed = q.linear_prepack(w, lib.zeros(4))
        x = _qtensor(lib, np.ones((2, 3), np.uint8), 0.1, 0)
        cases = [
            lambda: q.linear(_qtensor(lib, np.ones(3, np.uint8), 0.1, 0), packed, 0.1, 0),
            lambda: q.linear(_qtensor(lib, np.ones((2, 3), np.int8), 0.1, 0), packed, 0.1, 0),
            lambda: q.linear(_qtensor(lib, np.ones((2, 5), np.uint8), 0.1, 0), packed, 0.1, 0),
            lambda: q.linear_relu(_qtensor(lib, np.ones((2, 5), np.uint8), 0.1, 0), packed, 1., 0),
            lambda: q.linear(lib.ones(2, 3), packed, 0.1, 0),
            lambda: q.linear_prepack(lib.ones(4, 3)),
            lambda: q.linear_prepack(_qtensor(lib, np.ones((4, 3), np.uint8), 0.1, 0)),
            lambda: q.linear_prepack(_qtensor(lib, np.ones(4, np.int8), 0.1, 0)),
            lambda: q.linear_prepack(w, lib.zeros(5)),
            lambda: q.linear_prepack(w, lib.zeros(4, 1)),
            lambda: lib.ao.nn.quantized.Linear(3, 4, dtype=lib.quint8),
            lambda: lib.ao.nn.quantized.Linear.from_float(lib.nn.Conv2d(1, 1, 1)),
            lambda: lib.ao.nn.quantized.Linear.from_float(lib.nn.Linear(1, 1)),
            lambda: lib.ao.nn.quantized.Quantize.from_float(lib.nn.Linear(1, 1)),
        ]
        assert _error(lambda: q.linear(x, packed, 0.1, 0)) is None
        results[lib] = [_error(fn) for fn in cases]
    got = [(t, m.replace("ember", "torch")) if m else (t, m) for t, m in
           (r or (None, None) for r in results[ember])]
    want = [r or (None, None) for r in results[torch]]
    for i, (g, w) in enumerate(zip(got, want)):
        if w[1] and w[1].startswith("Could not run"):  # (PyTorch's longer hint follows)
            assert g[0] == w[0] and w[1].startswith(g[1].split(" This could")[0]), (i, g, w)
        else:
            assert g == w, (i, g, w)


def test_modules_repr_state_dict(torch):
    rng = np.random.default_rng(3)
    mods = {}
    for lib in (ember, torch):
        nnq, nniq = lib.ao.nn.quantized, lib.ao.nn.intrinsic.quantized
        mods[lib] = [nnq.Linear(3, 2), nnq.Linear(5, 4, bias_=False), nniq.LinearReLU(3, 2),
                     nnq.Quantize(0.1, 3, lib.quint8), nnq.DeQuantize()]
    for e, t in zip(mods[ember], mods[torch]):
        assert repr(e) == repr(t).replace("torch.", "ember.")
    # a state dict of PyTorch's modules loads into ember's, and then both compute the same
    w = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    bias = rng.normal(size=4).astype(np.float32)
    lin = {lib: lib.ao.nn.quantized.Linear(5, 4) for lib in (ember, torch)}
    lin[torch].set_weight_bias(_qtensor(torch, w, 0.02, 0), torch.tensor(bias))
    lin[torch].scale, lin[torch].zero_point = 0.05, 60
    sd = lin[torch].state_dict()
    assert list(sd) == ["scale", "zero_point", "_packed_params.dtype",
                        "_packed_params._packed_params"]
    wt, bt = sd["_packed_params._packed_params"]
    mine = collections.OrderedDict([
        ("scale", ember.tensor(sd["scale"].numpy())),
        ("zero_point", ember.tensor(sd["zero_point"].numpy())),
        ("_packed_params.dtype", ember.qint8),
        ("_packed_params._packed_params", (
            _qtensor(ember, wt.int_repr().numpy(), wt.q_scale(), wt.q_zero_point()),
            ember.tensor(bt.numpy())))])
    mine._metadata = sd._metadata  # (the versions: a version-3 Linear)
    lin[ember].load_state_dict(mine)
    lin[torch].load_state_dict(sd)
    assert list(lin[ember].state_dict()) == list(sd)
    assert repr(lin[ember]) == repr(lin[torch]).replace("torch.", "ember.")
    x = rng.integers(0, 256, (3, 5)).astype(np.uint8)
    _assert_same_q(lin[ember](_qtensor(ember, x, 0.1, 10)), lin[torch](_qtensor(torch, x, 0.1, 10)))
    esd = lin[ember].state_dict()
    _assert_same_q(esd["_packed_params._packed_params"][0], wt)
    assert esd["scale"].item() == sd["scale"].item()
    assert esd["zero_point"].item() == sd["zero_point"].item()


class _MLP:
    """QuantStub, Linear+ReLU (fused), Linear, ReLU, Linear, DeQuantStub in ``lib``."""

    @staticmethod
    def make(lib):
        q = lib.ao.quantization

        class MLP(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = q.QuantStub()
                self.fc1 = lib.nn.Linear(6, 8)
                self.relu1 = lib.nn.ReLU()
                self.fc2 = lib.nn.Linear(8, 7)
                self.fc3 = lib.nn.Linear(7, 3, bias=False)
                self.dequant = q.DeQuantStub()

            def forward(self, x):
                x = self.quant(x)
                x = self.relu1(self.fc1(x))
                return self.dequant(self.fc3(self.fc2(x)))
        return MLP()


def _same_start(models, torch, exact=False):
    """ember's model takes PyTorch's parameters. ``exact``: first make them sixteenths (and the
    inputs will be eighths), so that every float sum of the model is exact and both libraries'
    observers see the same values whatever order their matrix products add in."""
    if exact:
        rng = np.random.default_rng(0)
        with torch.no_grad():
            for p in models[torch].parameters():
                p.copy_(torch.tensor(rng.integers(-8, 9, tuple(p.shape)) / 16.0))
    start = {k: v.detach().numpy().copy() for k, v in models[torch].state_dict().items()}
    models[ember].load_state_dict({k: ember.tensor(v) for k, v in start.items()})


def _eighths(rng, shape):
    return (rng.integers(-40, 41, shape) / 8.0).astype(np.float32)


def _quantized_linears(name, mod):
    return mod._get_name() in ("QuantizedLinear", "QuantizedLinearReLU", "Quantize")


def _assert_converted_same(models, torch, x, watch=_quantized_linears, expect=()):
    """Two converted models alike: module types and reprs, the float output of ``x``, the
    quantized outputs of the modules ``watch(name, module)`` picks (``expect`` among them)
    integer for integer, and the state dicts."""
    names = {lib: [(n, type(c).__name__) for n, c in m.named_modules()]
             for lib, m in models.items()}
    assert names[ember] == names[torch]
    assert repr(models[ember]) == repr(models[torch]).replace("torch.", "ember.")
    outs = {}
    for lib, m in models.items():
        quantized = {}
        for name, mod in m.named_modules():
            if name and watch(name, mod):
                mod.register_forward_hook(lambda mod, i, o, name=name: quantized.update({name: o}))
        outs[lib] = (m(lib.tensor(x)), quantized)
    np.testing.assert_array_equal(outs[ember][0].numpy(), outs[torch][0].numpy())
    assert sorted(outs[ember][1]) == sorted(outs[torch][1]) and outs[torch][1]
    assert set(expect) <= set(outs[torch][1])
    for name, t in outs[torch][1].items():
        if t.is_quantized:
            _assert_same_q(outs[ember][1][name], t)
            assert outs[ember][1][name].stride() == t.stride()
    sd = {lib: m.state_dict() for lib, m in models.items()}
    assert list(sd[ember]) == list(sd[torch])
    for k, want in sd[torch].items():
        got = sd[ember][k]
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        for g, w in pairs:
            if w is None or not hasattr(w, "is_quantized"):
                assert str(g).replace("ember", "torch") == str(w), k
            elif w.is_quantized:
                _assert_same_q(g, w)
            else:
                np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy(), err_msg=k)


@pytest.mark.parametrize("per_channel", [False, True])
def test_static_mlp_prepare_calibrate_convert(torch, per_channel):
    rng = np.random.default_rng(11)
    models = {lib: _MLP.make(lib) for lib in (ember, torch)}
    _same_start(models, torch, exact=True)
    calib = [_eighths(rng, (16, 6)) * (i + 1) for i in range(3)]
    seen = {lib: [] for lib in models}
    for lib, m in models.items():
        q = lib.ao.quantization
        m.eval()
        # (a user's forward hook stays on the swapped module; the observer's does not)
        m.fc2.register_forward_hook(lambda mod, i, o, lib=lib: seen[lib].append(mod._get_name()))
        m.qconfig = q.default_per_channel_qconfig if per_channel else q.default_qconfig
        q.fuse_modules(m, [["fc1", "relu1"]], inplace=True)
        q.prepare(m, inplace=True)
        for x in calib:
            m(lib.tensor(x))
        q.convert(m, inplace=True)
    for lib in models:
        del seen[lib][:]
    _assert_converted_same(models, torch, rng.standard_normal((5, 6)).astype(np.float32) * 2)
    assert seen[ember] == seen[torch] == ["QuantizedLinear"]
    assert not hasattr(models[ember].fc2, "activation_post_process")
    assert not hasattr(models[ember].fc2, "qconfig")


def test_quantize_function(torch):
    """``torch.ao.quantization.quantize``: prepare, the calibration function, convert."""
    rng = np.random.default_rng(12)
    models = {lib: _MLP.make(lib) for lib in (ember, torch)}
    _same_start(models, torch, exact=True)
    calib = _eighths(rng, (32, 6))
    out = {}
    for lib, m in models.items():
        m.qconfig = lib.ao.quantization.default_qconfig
        out[lib] = lib.ao.quantization.quantize(m, lambda model, x: model(x), [lib.tensor(calib)])
        assert out[lib].fc2._get_name() == "QuantizedLinear"
        assert type(m.fc2).__name__ == "Linear"  # (not in place)
    _assert_converted_same(out, torch, calib[:4])


def test_qat_mlp_train_convert(torch):
    """prepare_qat, two SGD steps, convert. Training's float sums round differently in the two
    libraries (losses agree to ~1e-7), which can move a fake quantizer's scale by an ulp; so
    after checking the trained states agree to that precision, ember's model takes PyTorch's
    trained state and both convert: the quantized models then agree integer for integer."""
    rng = np.random.default_rng(13)
    models = {lib: _MLP.make(lib) for lib in (ember, torch)}
    _same_start(models, torch)
    for lib, m in models.items():
        q = lib.ao.quantization
        m.train()
        m.qconfig = q.get_default_qat_qconfig("x86")
        q.fuse_modules_qat(m, [["fc1", "relu1"]], inplace=True)
        q.prepare_qat(m, inplace=True)
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        step_rng = np.random.default_rng(14)
        for _ in range(2):
            x = step_rng.standard_normal((16, 6)).astype(np.float32)
            y = step_rng.integers(0, 3, 16)
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
    trained = {k: v.detach().numpy().copy() for k, v in models[torch].state_dict().items()}
    ours = models[ember].state_dict()
    assert sorted(ours) == sorted(trained)
    for k, v in trained.items():
        np.testing.assert_allclose(ours[k].detach().numpy(), v, rtol=1e-5, atol=1e-6, err_msg=k)
    models[ember].load_state_dict({k: ember.tensor(v) for k, v in trained.items()})
    for lib, m in models.items():
        m.eval()
        lib.ao.quantization.convert(m, inplace=True)
    assert models[ember].fc1._get_name() == "QuantizedLinearReLU"
    _assert_converted_same(models, torch, rng.standard_normal((5, 6)).astype(np.float32))


def test_from_reference(torch):
    """``from_reference`` takes a reference module's quantized weight and bias (PyTorch's
    reference Linear here; ember has no reference modules, so a stand-in with its interface)."""
    rng = np.random.default_rng(15)
    w = rng.integers(-128, 128, (4, 3)).astype(np.int8)
    bias = rng.normal(size=4).astype(np.float32)

    class RefLinear:
        in_features, out_features = 3, 4

        def __init__(self, lib):
            self.bias = lib.tensor(bias)
            self._w = _qtensor(lib, w, 0.03, 0)

        def get_quantized_weight(self):
            return self._w

    made = {}
    for lib in (ember, torch):
        made[lib] = [lib.ao.nn.quantized.Linear.from_reference(RefLinear(lib), 0.2, 9),
                     lib.ao.nn.intrinsic.quantized.LinearReLU.from_reference(
                         [RefLinear(lib)], 0.2, 9)]
    x = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    for e, t in zip(made[ember], made[torch]):
        assert repr(e) == repr(t).replace("torch.", "ember.")
        _assert_same_q(e(_qtensor(ember, x, 0.1, 3)), t(_qtensor(torch, x, 0.1, 3)))


def test_quantized_relu(torch):
    """``relu``/``relu_`` of quantized tensors (what an unfused ReLU after a quantized Linear
    runs): the integers raised to the zero point, the parameters kept; per channel refused."""
    rng = np.random.default_rng(16)
    for dtype, lo, hi in (("uint8", 0, 256), ("int8", -128, 128), ("int32", -1000, 1000)):
        ints = rng.integers(lo, hi, (3, 4)).astype(dtype)
        zp = int(rng.integers(lo, min(hi, 200)))
        got, want = [_qtensor(lib, ints, 0.1, zp) for lib in (ember, torch)]
        _assert_same_q(ember.relu(got), torch.relu(want))
        _assert_same_q(ember.relu(got.t()), torch.relu(want.t()))
        got_t, want_t = got.t(), want.t()
        ember.relu_(got_t)
        torch.relu_(want_t)
        _assert_same_q(got, want)
    pc = {lib: _qtensor(lib, np.ones((2, 3), np.uint8), [0.1, 0.2], [3, 4], 0)
          for lib in (ember, torch)}
    assert _error(lambda: ember.relu(pc[ember])) == _error(lambda: torch.relu(pc[torch]))

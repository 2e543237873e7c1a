"""Quantized transposed convolutions against PyTorch (x86): the ``quantized::conv_transpose
{1,2,3}d_prepack`` / ``conv_transpose{1,2,3}d`` / ``_unpack`` ops on the same quantized inputs
integer for integer (FBGEMM's path: weights with zero points or output padding; oneDNN's:
symmetric weights without output padding), strides, groups, dilations, paddings, bias; the
unpacked weights' layouts and scales; the errors; and ``nnq.ConvTranspose1d/2d/3d`` through
prepare -> calibrate -> convert (repr, state dicts across the libraries, per-channel qconfigs
refused).

PyTorch 2.13's oneDNN path differs from the transposed convolution's arithmetic (and from its
own FBGEMM path and float reference) when a group's input and output channel counts differ
and there is one group; ember computes the transposed convolution, so the oneDNN cases here keep
those counts equal."""

import numpy as np
import pytest

import ember
import test_quantized_static
from test_quantized_static import _error

pytestmark = test_quantized_static.pytestmark


def _op_case(seed):
    rng = np.random.default_rng(seed)
    n = 1 + seed % 3
    onednn = seed % 2 == 0
    g = int(rng.choice([1, 2]))
    ic_g = int(rng.integers(1, 4))
    oc_g = ic_g if onednn else int(rng.integers(1, 4))
    stride = [int(rng.integers(1, 3)) for _ in range(n)]
    dilation = [int(rng.integers(1, 3)) for _ in range(n)]
    kernel = [int(rng.integers(1, 4)) for _ in range(n)]
    size = [int(rng.integers(2, 6)) for _ in range(n)]
    # (the output must keep at least one element per dim)
    padding = [int(rng.integers(0, 2)) if (i - 1) * s + d * (k - 1) + 1 > 2 else 0
               for i, k, s, d in zip(size, kernel, stride, dilation)]
    output_padding = [0] * n if onednn or seed % 4 == 1 else \
        [int(rng.integers(0, max(s, d))) for s, d in zip(stride, dilation)]
    return dict(n=n, groups=g, stride=stride, dilation=dilation, padding=padding,
                output_padding=output_padding,
                w=rng.integers(-128, 128, (ic_g * g, oc_g, *kernel)).astype(np.int8),
                w_zp=0 if onednn else 2,
                x=rng.integers(0, 256, (2, ic_g * g, *size)).astype(np.uint8),
                bias=rng.standard_normal(oc_g * g).astype(np.float32) if seed % 3 else None,
                scale=0.5 if seed % 5 == 0 else 0.05, zero_point=int(rng.integers(0, 256)))


def _run(lib, c):
    q = lib.ops.quantized
    n = c["n"]
    w = lib._make_per_tensor_quantized_tensor(lib.tensor(c["w"]), 0.01, c["w_zp"])
    x = lib._make_per_tensor_quantized_tensor(lib.tensor(c["x"]), 0.02, 100)
    bias = None if c["bias"] is None else lib.tensor(c["bias"])
    packed = getattr(q, f"conv_transpose{n}d_prepack")(w, bias, c["stride"], c["padding"],
                                                        c["output_padding"], c["dilation"],
                                                        c["groups"])
    y = getattr(q, f"conv_transpose{n}d")(x, packed, c["scale"], c["zero_point"])
    weight, b = getattr(q, f"conv_transpose{n}d_unpack")(packed)
    accessors = []
    if n > 1:
        accessors = [getattr(q, f"conv{n}d_{a}")(packed) for a in
                     ("stride", "padding", "output_padding", "dilation", "groups", "transpose")]
    return (y.int_repr().numpy(), tuple(y.shape), tuple(y.stride()), y.q_scale(),
            y.q_zero_point(), weight.int_repr().numpy(), tuple(weight.stride()),
            weight.q_scale(), None if b is None else b.numpy(), accessors)


def test_ops_bit_exact(torch):
    for seed in range(30):
        c = _op_case(seed)
        e, t = _run(ember, c), _run(torch, c)
        np.testing.assert_array_equal(e[0], t[0], err_msg=str(seed))
        np.testing.assert_array_equal(e[5], t[5])
        if e[8] is not None or t[8] is not None:
            np.testing.assert_array_equal(e[8], t[8])
        assert e[1:5] == t[1:5] and e[6:8] == t[6:8] and e[9] == t[9], seed


def test_errors(torch):
    results = {}
    for lib in (ember, torch):
        q = lib.ops.quantized
        w = lib._make_per_tensor_quantized_tensor(lib.ones(2, 3, 1, 1, dtype=lib.int8), 0.1, 0)
        wz = lib._make_per_tensor_quantized_tensor(lib.ones(2, 3, 1, 1, dtype=lib.int8), 0.1, 1)
        wpc = lib.quantize_per_channel(lib.ones(2, 3, 1, 1), lib.tensor([0.1, 0.2],
                                       dtype=lib.double), lib.tensor([0, 0]), 0, lib.qint8)
        x = lib.quantize_per_tensor(lib.rand(1, 2, 2, 2), 0.02, 10, lib.quint8)
        x3 = lib.quantize_per_tensor(lib.rand(1, 3, 2, 2), 0.02, 10, lib.quint8)
        xs = lib.quantize_per_tensor(lib.rand(1, 2, 2, 2), 0.02, 10, lib.qint8)
        prepack = q.conv_transpose2d_prepack
        cases = [lambda: prepack(wpc, None, [1, 1], [0, 0], [0, 0], [1, 1], 1),
                 lambda: prepack(w, None, [1], [0, 0], [0, 0], [1, 1], 1),
                 lambda: prepack(w, None, [1, 1], [0, 0], [0, 0], [1], 1),
                 lambda: prepack(w[0], None, [1, 1], [0, 0], [0, 0], [1, 1], 1),
                 lambda: prepack(w, lib.zeros(2), [1, 1], [0, 0], [0, 0], [1, 1], 1)]
        for weight in (w, wz):
            packed = prepack(weight, None, [1, 1], [1, 1], [0, 0], [1, 1], 1)
            big = prepack(weight, None, [1, 1], [0, 0], [0, 0], [1, 1], 1)
            cases += [lambda p=packed: q.conv_transpose2d(x, p, 0.1, 0),
                      lambda p=big: q.conv_transpose2d(x3, p, 0.1, 0),
                      lambda p=big: q.conv_transpose2d(xs, p, 0.1, 0),
                      lambda p=big: q.conv_transpose2d(x[0], p, 0.1, 0)]
        cases.append(lambda: lib.ao.nn.quantized.ConvTranspose2d(2, 2, 1,
                                                                  padding_mode="reflect"))
        cases.append(lambda: lib.ao.nn.quantized.ConvTranspose2d(2, 2, 1)(x[0]))
        results[lib] = [_error(fn) for fn in cases]
    for i, (e, t) in enumerate(zip(results[ember], results[torch])):
        assert e is not None and e == t, (i, e, t)


def _model(lib, n, cin, cout, output_padding, groups, qconfig):
    tq = lib.ao.quantization
    conv = getattr(lib.nn, f"ConvTranspose{n}d")(cin, cout, 3, stride=2, padding=1,
                                                 output_padding=output_padding, groups=groups)
    m = lib.nn.Sequential(tq.QuantStub(), conv, tq.DeQuantStub()).eval()
    m.qconfig = tq.default_qconfig if qconfig == "default" else tq.get_default_qconfig(qconfig)
    return m


@pytest.mark.parametrize("qconfig", ["default", "qnnpack"])
def test_modules_convert(torch, qconfig):
    rng = np.random.default_rng(7)
    for n, cin, cout, output_padding, groups in ((1, 4, 4, 0, 1), (2, 4, 6, 1, 2),
                                                 (2, 4, 4, 0, 2), (3, 2, 2, 1, 1)):
        models = {lib: _model(lib, n, cin, cout, output_padding, groups, qconfig)
                  for lib in (ember, torch)}
        # (weights and bias on coarse grids: the float calibration sums are exact in any order)
        state = {k: np.round(v.detach().numpy() * 64) / 64
                 for k, v in models[torch].state_dict().items()}
        for lib, m in models.items():
            m.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        x = rng.integers(-16, 17, (2, cin, *[4] * n)).astype(np.float32) / 8
        out = {}
        for lib, m in models.items():
            tq = lib.ao.quantization
            tq.prepare(m, inplace=True)
            m(lib.tensor(x))
            tq.convert(m, inplace=True)
            y = m[1](m[0](lib.tensor(x)))
            out[lib] = (repr(m).replace("torch.", "ember."), y.int_repr().numpy(),
                        tuple(y.stride()), y.q_scale(), y.q_zero_point(),
                        {k: v for k, v in m[1].state_dict().items()})
        e, t = out[ember], out[torch]
        assert e[0] == t[0] and e[2:5] == t[2:5]
        np.testing.assert_array_equal(e[1], t[1])
        assert sorted(e[5]) == sorted(t[5])
        np.testing.assert_array_equal(e[5]["weight"].int_repr().numpy(),
                                      t[5]["weight"].int_repr().numpy())
        # PyTorch's state dict loads into ember's module and computes the same
        fresh = type(models[ember][1])(cin, cout, 3, stride=2, padding=1,
                                       output_padding=output_padding, groups=groups)
        fresh.load_state_dict({
            "weight": ember._make_per_tensor_quantized_tensor(
                ember.tensor(t[5]["weight"].int_repr().numpy()), t[5]["weight"].q_scale(),
                t[5]["weight"].q_zero_point()),
            "bias": ember.tensor(t[5]["bias"].detach().numpy()),
            "scale": ember.tensor(float(t[5]["scale"])),
            "zero_point": ember.tensor(int(t[5]["zero_point"]))})
        xq = models[ember][0](ember.tensor(x))
        np.testing.assert_array_equal(fresh(xq).int_repr().numpy(), t[1])


def test_per_channel_qconfig_refused(torch):
    for lib in (ember, torch):
        m = _model(lib, 2, 2, 2, 0, 1, "x86")
        with pytest.raises(AssertionError, match="Per channel weight observer is not supported "
                                                 "yet for ConvTranspose"):
            lib.ao.quantization.prepare(m, inplace=True)

"""``torch.ao.nn.quantized.functional`` (and ``torch.nn.quantized.functional``) against PyTorch
(x86): the activations (leaky_relu with and without requantization and in place, hardtanh,
clamp, hardswish, elu, celu, threshold, hardsigmoid) on the same quantized inputs integer for
integer, through ATen's vector bodies and scalar tails (lengths below, at and past the vector
width, ties from power-of-two scales, strided and channels-last inputs, all three dtypes, and
loops split between threads);
interpolate/upsample (nearest, nearest-exact, bilinear with and without aligned corners, 2-d
and 3-d, NCHW and ATen's NHWC kernel); the convolutions, linear and the pools; their
parameters, layouts and errors; and the same under AVX2 forced in a subprocess."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import test_quantized_static
from test_quantized_static import _error, _qtensor

pytestmark = test_quantized_static.pytestmark + [
    pytest.mark.filterwarnings("ignore:nn.quantized.functional.upsample")]

_RANGES = {"quint8": (0, 256, np.uint8), "qint8": (-128, 128, np.int8),
           "qint32": (-3000, 3000, np.int32)}


def _assert_same(e, t):
    """The same integers, shape, strides, dtype and quantization parameters."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape) and tuple(e.stride()) == tuple(t.stride())
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    assert e.q_scale() == t.q_scale() and e.q_zero_point() == t.q_zero_point()


def _compare(es, ts):
    assert len(es) == len(ts)
    for i, (e, t) in enumerate(zip(es, ts)):
        try:
            _assert_same(e, t)
        except AssertionError as err:
            raise AssertionError(f"output {i}: {err}") from None


def _case(seed):
    """Random integers and parameters; every third case has power-of-two scales (ties)."""
    rng = np.random.default_rng(seed)
    dtype = ("quint8", "qint8", "qint32")[seed % 3]
    lo, hi, np_dtype = _RANGES[dtype]
    shape = [(40,), (72,), (3, 100), (2, 3, 5, 9), (1, 17, 4, 4), (2, 64, 3)][seed % 6]
    tie = seed % 3 == 0
    zp_range = (lo, hi) if dtype != "qint32" else (-50, 50)
    return dict(ints=rng.integers(lo, hi, shape).astype(np_dtype),
                scale=0.5 if tie else float(rng.uniform(0.005, 0.3)),
                zero_point=int(rng.integers(*zp_range)),
                out_scale=0.25 if tie else float(rng.uniform(0.005, 0.3)),
                out_zero_point=int(rng.integers(*zp_range)),
                layout=seed % 4, slope=float(rng.choice([0.01, 0.25, 0.3])),
                bounds=sorted(rng.choice([-1.0, -0.5, -0.3, 0.25, 0.6, 1.5], 2, replace=False)))


def _input(lib, c):
    """The case's quantized tensor: contiguous, transposed, channels-last or a strided
    slice."""
    x = _qtensor(lib, c["ints"], c["scale"], c["zero_point"])
    if c["layout"] == 1 and x.dim() > 1:
        return x.transpose(0, -1)
    if c["layout"] == 2 and x.dim() == 4:
        return x.contiguous(memory_format=lib.channels_last)
    return x[..., ::2] if c["layout"] == 3 else x


def _activations(lib, c):
    qF = lib.ao.nn.quantized.functional
    x = _input(lib, c)
    s, z = c["out_scale"], c["out_zero_point"]
    lo, hi = (float(b) for b in c["bounds"])
    out = [qF.leaky_relu(x, c["slope"]), qF.leaky_relu(x, c["slope"], scale=s, zero_point=z),
           qF.hardtanh(x, lo, hi), qF.clamp(x, lo, hi), lib.clamp(x, min=lo),
           lib.clamp(x, max=hi), qF.hardswish(x, s, z), qF.elu(x, s, z, 0.7),
           qF.celu(x, s, z, 1.3), qF.threshold(x, lo, hi), lib.nn.functional.threshold(x, lo, hi),
           qF.hardsigmoid(x), lib.ops.quantized.elu(x, s, z, 1.5, 0.5, 2.0)]
    for fn in (lambda t: qF.leaky_relu(t, c["slope"], inplace=True),
               lambda t: qF.hardtanh(t, lo, hi, inplace=True),
               lambda t: qF.hardsigmoid(t, inplace=True)):
        y = x.clone()
        assert fn(y) is y
        out.append(y)
    return out


def test_activations_bit_exact(torch):
    for seed in range(36):
        c = _case(seed)
        _compare(_activations(ember, c), _activations(torch, c))


def test_activations_across_threads(torch):
    """From 32768 elements on ATen splits the loop between threads, each chunk with its own
    scalar tail (two threads here in both libraries)."""
    threads = {lib: lib.get_num_threads() for lib in (ember, torch)}
    rng = np.random.default_rng(5)
    try:
        for lib in threads:
            lib.set_num_threads(2)
        for shape, layout in (((65537,), 0), ((3, 5, 61, 47), 2)):
            c = dict(ints=rng.integers(-128, 128, shape).astype(np.int8), scale=0.5,
                     zero_point=3, out_scale=0.25, out_zero_point=1, layout=layout,
                     slope=0.25, bounds=[-0.5, 0.25])
            _compare(_activations(ember, c), _activations(torch, c))
    finally:
        for lib, n in threads.items():
            lib.set_num_threads(n)


def test_legacy_path(torch):
    import ember.nn.quantized.functional as legacy
    assert legacy.hardswish is ember.ao.nn.quantized.functional.hardswish
    assert sorted(ember.ao.nn.quantized.functional.__all__) == \
        sorted(torch.ao.nn.quantized.functional.__all__)


def _resample_case(seed):
    rng = np.random.default_rng(100 + seed)
    dtype = ("quint8", "qint8", "qint32")[seed % 3]
    lo, hi, np_dtype = _RANGES[dtype]
    three = seed % 5 == 0
    c = int(rng.choice([1, 3, 8, 9, 17]))
    spatial = [int(rng.integers(1, 7)) for _ in range(3 if three else 2)]
    if seed % 7 == 0:
        spatial = [1] * len(spatial)  # (an ambiguous layout: ATen's NHWC kernels)
    mode = "nearest" if three else ("nearest", "bilinear", "nearest-exact")[seed % 3]
    if seed % 4 < 2:
        size = dict(size=tuple(int(rng.integers(1, 12)) for _ in spatial))
    else:
        size = dict(scale_factor=float(rng.choice([1.5, 2.0, 1.7, 3.0])))
    return dict(ints=rng.integers(lo, hi, (int(rng.integers(1, 3)), c, *spatial)).astype(np_dtype),
                zero_point=int(rng.integers(lo, hi)) if dtype != "qint32" else 7,
                channels_last=seed % 3 == 1, mode=mode, size=size,
                align_corners=bool(seed % 2) if mode == "bilinear" else None)


def _resampled(lib, c):
    qF = lib.ao.nn.quantized.functional
    x = _qtensor(lib, c["ints"], 0.1, c["zero_point"])
    if c["channels_last"]:
        x = x.contiguous(memory_format=lib.channels_last if x.dim() == 4 else
                         lib.channels_last_3d)
    out = [qF.interpolate(x, mode=c["mode"], align_corners=c["align_corners"], **c["size"])]
    if x.dim() == 4:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out += [qF.upsample_bilinear(x, **c["size"]), qF.upsample_nearest(x, **c["size"]),
                    qF.upsample(x, mode=c["mode"], align_corners=c["align_corners"],
                                **c["size"])]
        assert [str(w.message).split(" ")[0] for w in caught] == \
            ["nn.quantized.functional.upsample_bilinear",
             "nn.quantized.functional.upsample_nearest", "nn.quantized.functional.upsample"]
    return out


def test_interpolate_bit_exact(torch):
    for seed in range(60):
        c = _resample_case(seed)
        _compare(_resampled(ember, c), _resampled(torch, c))


def _layers(lib, seed):
    """The convolutions, linear and the pools through the functional forms."""
    rng = np.random.default_rng(200 + seed)
    qF = lib.ao.nn.quantized.functional
    out = []
    for n in (1, 2, 3):
        x = _qtensor(lib, rng.integers(0, 256, (2, 4) + (5,) * n).astype(np.uint8), 0.05, 100)
        w = _qtensor(lib, rng.integers(-128, 128, (6, 2) + (3,) * n).astype(np.int8), 0.01, 0)
        bias = lib.tensor(rng.standard_normal(6).astype(np.float32))
        conv = getattr(qF, f"conv{n}d")
        out += [conv(x, w, bias, stride=1 + seed % 2, padding=seed % 2, groups=2, scale=0.3,
                     zero_point=120),
                conv(x, w, None, dilation=1 + seed % 2, groups=2)]
    x = _qtensor(lib, rng.integers(0, 256, (3, 7)).astype(np.uint8), 0.05, 100)
    w = _qtensor(lib, rng.integers(-128, 128, (5, 7)).astype(np.int8), 0.02, 3)
    bias = lib.tensor(rng.standard_normal(5).astype(np.float32))
    out += [qF.linear(x, w, bias), qF.linear(x, w, None, scale=0.2, zero_point=50)]
    x4 = _qtensor(lib, rng.integers(0, 256, (2, 8, 6, 6)).astype(np.uint8), 0.05, 100)
    x5 = _qtensor(lib, rng.integers(0, 256, (1, 8, 4, 4, 4)).astype(np.uint8), 0.05, 100)
    out += [qF.max_pool1d(x4[0], 2), qF.max_pool2d(x4, 3, 2, 1), qF.avg_pool2d(x4, 3, 2, 1),
            qF.avg_pool3d(x5, 2), qF.adaptive_avg_pool2d(x4, (4, 3)),
            qF.adaptive_avg_pool3d(x5, 3)]
    return out


def test_layers_bit_exact(torch):
    for seed in range(4):
        _compare(_layers(ember, seed), _layers(torch, seed))


def test_errors(torch):
    results = {}
    for lib in (ember, torch):
        qF = lib.ao.nn.quantized.functional
        x = _qtensor(lib, np.arange(24).reshape(1, 2, 3, 4).astype(np.uint8), 0.1, 3)
        pc = _qtensor(lib, np.ones((2, 3), np.uint8), [0.1, 0.2], [0, 1], 0)
        w = _qtensor(lib, np.ones((2, 2, 1, 1), np.int8), 0.1, 0)
        f = lib.ones(1, 2, 3, 4)
        cases = [
            lambda: qF.hardswish(f, 0.1, 0), lambda: qF.elu(f, 0.1, 0),
            lambda: qF.celu(f, 0.1, 0), lambda: qF.hardtanh(f), lambda: qF.hardsigmoid(f),
            lambda: qF.clamp(f, 0, 1), lambda: qF.threshold(f, 0, 1),
            lambda: qF.threshold(x, None, 1), lambda: qF.threshold(x, 0, None),
            lambda: qF.interpolate(f, scale_factor=2), lambda: qF.avg_pool2d(f, 2),
            lambda: qF.avg_pool3d(f, 2), lambda: qF.adaptive_avg_pool2d(f, 2),
            lambda: qF.adaptive_avg_pool3d(f, 2),
            lambda: qF.max_pool2d(x, 2, return_indices=True),
            lambda: qF.max_pool1d(x[0], 2, return_indices=True),
            lambda: qF.leaky_relu(x, 0.1, inplace=True, scale=0.1, zero_point=0),
            lambda: qF.leaky_relu(pc), lambda: qF.hardswish(pc, 0.1, 0),
            lambda: qF.hardtanh(pc), lambda: qF.elu(pc, 0.1, 0), lambda: qF.hardsigmoid(pc),
            lambda: qF.threshold(pc, 0, 0), lambda: qF.clamp(pc, 0, 1),
            lambda: qF.interpolate(pc.reshape(1, 1, 2, 3), scale_factor=2),
            lambda: lib.ops.aten.leaky_relu.out(x, 0.1, out=lib._empty_affine_quantized(
                [1, 2, 3, 4], scale=0.1, zero_point=0, dtype=lib.qint8)),
            lambda: lib.ops.aten.leaky_relu.out(x, 0.1, out=f),
            lambda: qF.conv2d(x, w, None, padding_mode="reflect"),
            lambda: qF.conv2d(w, w, None), lambda: qF.conv2d(x, x, None),
            lambda: qF.conv2d(x[0], w, None), lambda: qF.conv1d(x, w, None),
            lambda: qF.conv3d(x, w, None),
            lambda: qF.interpolate(x, size=(0, 2)),
            lambda: lib.ops.quantized.hardswish(f, 0.1, 0),
        ]
        results[lib] = [_error(fn) for fn in cases]
    for i, (e, t) in enumerate(zip(results[ember], results[torch])):
        assert e is not None and t is not None, i
        # (the dispatcher's message lists the backends after the first sentence)
        assert e[0] == t[0] and e[1].split(". ")[0] == t[1].split(". ")[0], (i, e, t)


_SCRIPT = """
import sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {tests!r})
import torch, ember
import test_quantized_functional as t
assert torch.backends.cpu.get_cpu_capability() == ember.backends.cpu.get_cpu_capability()
for seed in range(18):
    c = t._case(seed)
    t._compare(t._activations(ember, c), t._activations(torch, c))
for seed in range(1, 60, 3):  # (the channels-last ones: ATen's NHWC kernel)
    c = t._resample_case(seed)
    t._compare(t._resampled(ember, c), t._resampled(torch, c))
print("ok")
"""


def test_avx2():
    """Forced to AVX2, PyTorch and ember still agree."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY="avx2",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(ember.__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _SCRIPT.format(tests=os.path.dirname(__file__))],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr[-3000:]

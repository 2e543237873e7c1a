"""Average pooling and means of quantized tensors against PyTorch (x86): ``avg_pool2d``/``3d``,
``adaptive_avg_pool2d``/``3d`` (functional and modules) and ``mean`` on
the same quantized inputs integer for integer, through both of ATen's kernels (NCHW loops, and
the NHWC kernel of channels-last inputs, whose vector body and scalar tail round differently:
channel counts below, at and past the vector widths), under the CPU capabilities PyTorch picks
(AVX-512 or AVX2 here, and AVX2 forced in a subprocess); their layouts, errors, and
a CNN with average pools through prepare -> calibrate -> convert."""

import os
import subprocess
import sys

import numpy as np

import ember
import test_quantized_static
from test_quantized_static import (_assert_converted_same, _assert_same_q, _eighths, _error,
                                   _qtensor, _same_start)

pytestmark = test_quantized_static.pytestmark  # (its warning filters)

_RANGES = {"quint8": (0, 256, np.uint8), "qint8": (-128, 128, np.int8),
           "qint32": (-3000, 3000, np.int32)}


def _case(seed):
    """Random integers and pooling parameters; every fourth case has power-of-two scales so
    that many averages are ties."""
    rng = np.random.default_rng(seed)
    dtype = ("quint8", "qint8", "qint32")[seed % 3]
    lo, hi, np_dtype = _RANGES[dtype]
    c = int(rng.choice([1, 3, 8, 9, 16, 17, 24, 40]))
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    kh, kw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
    return dict(
        ints=rng.integers(lo, hi, (int(rng.integers(1, 3)), c, h, w)).astype(np_dtype),
        scale=0.5 if seed % 4 == 0 else float(rng.uniform(0.01, 1)),
        zero_point=int(rng.integers(lo, hi)) if dtype != "qint32" else int(rng.integers(-50, 50)),
        layout=seed % 4, kernel=(kh, kw), stride=(int(rng.integers(1, 4)), int(rng.integers(1, 4))),
        padding=(int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))),
        ceil_mode=bool(rng.integers(2)), count_include_pad=bool(rng.integers(2)),
        divisor_override=None if rng.integers(3) else int(rng.integers(1, 30)),
        output_size=(int(rng.integers(1, h + 3)), int(rng.integers(1, w + 3))))


def _input(lib, c):
    """The case's quantized tensor: contiguous, channels-last (ATen's NHWC kernels),
    transposed, or a strided slice."""
    x = _qtensor(lib, c["ints"], c["scale"], c["zero_point"])
    if c["layout"] == 1:
        return x.contiguous(memory_format=lib.channels_last)
    if c["layout"] == 2:
        return x.transpose(2, 3)
    return x[:, :, ::2] if c["layout"] == 3 else x


def _pools(lib, c):
    x = _input(lib, c)
    F = lib.nn.functional
    out = [F.adaptive_avg_pool2d(x, c["output_size"]),
           lib.nn.AdaptiveAvgPool2d(c["output_size"])(x[0])]
    (kh, kw), (h, w) = c["kernel"], x.shape[-2:]
    if kh <= h and kw <= w:
        args = (c["kernel"], c["stride"], c["padding"], c["ceil_mode"], c["count_include_pad"],
                c["divisor_override"])
        out += [F.avg_pool2d(x, *args), lib.nn.AvgPool2d(*args)(x[0])]
    return out


def _compare(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_same_q(g, w)
        assert g.stride() == w.stride()


def test_avg_pools_bit_exact(torch):
    for seed in range(64):
        c = _case(seed)
        _compare(_pools(ember, c), _pools(torch, c))


def test_avg_pool_ties_in_vector_body_and_tail(torch):
    """Windows whose averages are halves, over channels-last inputs with channels in the
    vector bodies and the tails: ATen's vector body rounds ``acc * multiplier`` before adding
    the zero point, its tail after adding it, and adaptive pooling's body fuses the two."""
    rng = np.random.default_rng(5)
    for c, zp in ((40, 17), (24, 200), (9, 3)):
        ints = rng.integers(0, 256, (2, c, 6, 6)).astype(np.uint8)
        out = {}
        for lib in (ember, torch):
            x = _qtensor(lib, ints, 0.25, zp).contiguous(memory_format=lib.channels_last)
            F = lib.nn.functional
            out[lib] = [F.avg_pool2d(x, (1, 2)), F.avg_pool2d(x, 2, 1, 1),
                        F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
                        F.adaptive_avg_pool2d(x, (6, 4)), F.adaptive_avg_pool2d(x, (5, 5))]
        _compare(out[ember], out[torch])


def _case3d(seed):
    rng = np.random.default_rng(100 + seed)
    dtype = ("quint8", "qint8")[seed % 2]
    lo, hi, np_dtype = _RANGES[dtype]
    c = int(rng.choice([1, 2, 7, 9, 16, 17, 33]))
    size = [int(rng.integers(1, 6)) for _ in range(3)]
    kernel = [int(rng.integers(1, s + 1)) for s in size]
    return dict(
        ints=rng.integers(lo, hi, (int(rng.integers(1, 3)), c, *size)).astype(np_dtype),
        scale=0.5 if seed % 4 == 0 else float(rng.uniform(0.01, 1)),
        zero_point=int(rng.integers(lo, hi)), layout=seed % 3, kernel=kernel,
        stride=[int(rng.integers(1, 3)) for _ in range(3)],
        padding=[int(rng.integers(0, k // 2 + 1)) for k in kernel],
        ceil_mode=bool(rng.integers(2)), count_include_pad=bool(rng.integers(2)),
        divisor_override=None if rng.integers(3) else int(rng.integers(1, 30)),
        output_size=tuple(int(rng.integers(1, s + 2)) for s in size))


def _pools3d(lib, c):
    """(avg_pool3d makes every input channels-last first; unbatched adaptive pooling of fewer
    than 8 channels: ATen's NHWC vector body misreads an unbatched channels-last-contiguous
    input, whose channels are not adjacent)"""
    x = _qtensor(lib, c["ints"], c["scale"], c["zero_point"])
    if c["layout"] == 1:
        x = x.contiguous(memory_format=lib.channels_last_3d)
    elif c["layout"] == 2:
        x = x.transpose(3, 4)
    args = (c["kernel"], c["stride"], c["padding"], c["ceil_mode"], c["count_include_pad"],
            c["divisor_override"])
    out = [lib.nn.AdaptiveAvgPool3d(c["output_size"])(x)]
    if all(k <= i for k, i in zip(c["kernel"], x.shape[2:])):
        out.append(lib.nn.functional.avg_pool3d(x, *args))
    if x.shape[1] < 8:
        out.append(lib.nn.AdaptiveAvgPool3d(c["output_size"])(x[0]))
    # global pooling is the mean (exact float sums on power-of-two scales for the dequantizing
    # mean of a non-contiguous input)
    if c["layout"] == 0 or c["scale"] == 0.5:
        out.append(lib.nn.functional.adaptive_avg_pool3d(x, 1))
    return out


def test_avg_pools_3d_bit_exact(torch):
    for seed in range(40):
        c = _case3d(seed)
        _compare(_pools3d(ember, c), _pools3d(torch, c))


def _means(lib, c):
    x = _qtensor(lib, c["ints"], c["scale"], c["zero_point"])
    out = [lib.mean(x, (2, 3)), x.mean((-1, -2), keepdim=True), x.mean(-1), x.mean(),
           lib.mean(x, (2, 3), dtype=x.dtype)]
    # the other reductions dequantize, take the float mean and quantize again (here on
    # power-of-two scales, whose float sums are exact in any order)
    if c["scale"] == 0.5:
        out += [x.mean(1), x.mean((0, 2)),
                x.contiguous(memory_format=lib.channels_last).mean((2, 3), keepdim=True)]
    return out


def test_mean_bit_exact(torch):
    for seed in range(24):
        c = _case(seed)
        _compare(_means(ember, c), _means(torch, c))


_SCRIPT = """
import sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {tests!r})
import numpy as np, torch, ember
import test_quantized_pool as t
assert torch.backends.cpu.get_cpu_capability() == ember.backends.cpu.get_cpu_capability()
for seed in range(1, 48, 2):  # (channels-last among them)
    c = t._case(seed)
    t._compare(t._pools(ember, c), t._pools(torch, c))
for seed in range(12):
    c = t._case3d(seed)
    t._compare(t._pools3d(ember, c), t._pools3d(torch, c))
print("ok")
"""


def test_avx2():
    """ATen's vector bodies are as wide as the CPU capability's vectors: forced to AVX2,
    PyTorch and ember still agree (without AVX there is no vector body: every channel takes
    the tail, as those below a vector's width do above)."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY="avx2",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(ember.__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _SCRIPT.format(tests=os.path.dirname(__file__))],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr[-3000:]


def test_errors_and_empty_outputs(torch):
    results = {}
    for lib in (ember, torch):
        x = _qtensor(lib, (np.arange(150).reshape(2, 3, 5, 5) * 7 % 256).astype(np.uint8), 0.1, 3)
        pc = _qtensor(lib, np.ones((2, 3, 4, 4), np.uint8), [0.1, 0.2, 0.3], [0, 0, 0], 1)
        F = lib.nn.functional
        cases = [
            lambda: F.avg_pool2d(x, (2, 2, 2)), lambda: F.avg_pool2d(x, 2, stride=(1, 1, 1)),
            lambda: F.avg_pool2d(x, 2, padding=(1, 1, 1)), lambda: F.avg_pool2d(x, 2, padding=2),
            lambda: F.avg_pool2d(x, 2, padding=-1), lambda: F.avg_pool2d(x, 2, stride=0),
            lambda: F.avg_pool2d(x, 2, divisor_override=0), lambda: F.avg_pool2d(x[0, 0], 2),
            lambda: F.avg_pool2d(x, 12, 1), lambda: F.avg_pool2d(pc, 2),
            lambda: F.adaptive_avg_pool2d(x, (-1, 3)), lambda: F.adaptive_avg_pool2d(x[0, 0], 2),
            lambda: F.adaptive_avg_pool2d(x[:, :, :0], (2, 3)),
            lambda: F.adaptive_avg_pool2d(x.reshape(1, 2, 3, 5, 5), (2, 3)),
            lambda: F.adaptive_avg_pool2d(x, (2, 3, 4)), lambda: F.adaptive_avg_pool2d(pc, 2),
            lambda: lib.mean(x, (2, 3), dtype=lib.float), lambda: lib.mean(x, (4,)),
            lambda: lib.mean(x, (2, 3), dtype=lib.qint8), lambda: lib.mean(pc, (2, 3)),
            lambda: lib.mean(x, (3, 3)),
            lambda: F.avg_pool3d(x, 2), lambda: F.avg_pool3d(x[None], (2, 2)),
            lambda: F.avg_pool3d(x[None], 2, padding=(0, 0)), lambda: F.avg_pool3d(x[0, 0], 2),
            lambda: F.adaptive_avg_pool3d(x[None], (-1, 2, 3)),
            lambda: F.adaptive_avg_pool3d(x[None, :, :, :0], 2),
            lambda: F.adaptive_avg_pool3d(x[0, 0], 2), lambda: F.avg_pool3d(pc[None], 2),
        ]
        results[lib] = [_error(fn) for fn in cases]
        # empty outputs (a window larger than the input; no output size; no batch) are no error
        results[lib].append([tuple(r.shape) for r in (
            F.avg_pool2d(x, 7), F.adaptive_avg_pool2d(x, (0, 3)), F.adaptive_avg_pool2d(x[:0], 2),
            lib.mean(x[:0], (2, 3)))])
        results[lib].append(F.avg_pool2d(x, 2, divisor_override=-3).int_repr().tolist())
    for i, (g, w) in enumerate(zip(results[ember], results[torch])):
        if isinstance(g, tuple):
            g = (g[0], g[1].replace("ember", "torch"))
        assert g == w, (i, g, w)


def _model(lib):
    q = lib.ao.quantization

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = q.QuantStub()
            self.conv1 = lib.nn.Conv2d(2, 24, 3, padding=1)
            self.relu1 = lib.nn.ReLU()
            self.pool = lib.nn.AvgPool2d(2, 2, padding=1, count_include_pad=False)
            self.conv2 = lib.nn.Conv2d(24, 20, 2)
            self.gap = lib.nn.AdaptiveAvgPool2d((2, 1))
            self.fc = lib.nn.Linear(40, 3)
            self.dequant = q.DeQuantStub()

        def forward(self, x):
            x = self.conv2(self.pool(self.relu1(self.conv1(self.quant(x)))))
            y = self.fc(self.gap(x).flatten(1))
            return self.dequant(y) + self.dequant(x.mean((2, 3)))[:, :3]
    return Net()


def test_converted_cnn_with_average_pools(torch):
    """Channels-last activations (the quantized convolutions' outputs) through the NHWC
    kernels: the model's outputs (a mean among them) and every quantized activation integer
    for integer."""
    rng = np.random.default_rng(8)
    models = {lib: _model(lib) for lib in (ember, torch)}
    _same_start(models, torch, exact=True)
    calib = _eighths(rng, (4, 2, 8, 8))  # (the pools divide by powers of two: exact sums)
    for lib, m in models.items():
        q = lib.ao.quantization
        m.eval()
        m.qconfig = q.default_qconfig
        q.fuse_modules(m, [["conv1", "relu1"]], inplace=True)
        q.prepare(m, inplace=True)
        m(lib.tensor(calib))
        q.convert(m, inplace=True)
    _assert_converted_same(models, torch, rng.standard_normal((3, 2, 8, 8)).astype(np.float32),
                           lambda name, mod: name in ("pool", "conv2", "gap"),
                           {"pool", "conv2", "gap"})

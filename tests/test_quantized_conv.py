"""Static quantized convolutions against PyTorch (x86 engine: oneDNN for weights without zero
points, FBGEMM otherwise): ``quantized::conv{1,2,3}d`` / ``conv{1,2,3}d_relu`` on the same
quantized inputs bit for bit (groups, stride, padding, dilation, per-tensor and per-channel
weights, ties in the requantization, more than 100 groups), the packed weights' ``unpack()``
and accessors, schemas and errors; quantized ``max_pool1d``/``2d``; the modules (``Conv1d``,
``Conv2d``, ``Conv3d``, ``ConvReLU1d``/``2d``/``3d``: repr, state dicts loaded across the
libraries); and small CNNs (1-d, 2-d, 3-d) through fuse -> prepare -> calibrate -> convert and
prepare_qat -> train -> convert, whose quantized outputs match PyTorch's integer for integer."""

import numpy as np
import pytest

import ember
import test_quantized_static
from test_quantized_static import _assert_converted_same as _assert_converted_same_as
from test_quantized_static import _assert_same_q, _eighths, _error, _qtensor, _same_start

pytestmark = test_quantized_static.pytestmark  # (its warning filters)


def _case(seed, n=2):
    """Random operands and geometry of one ``n``-d conv call; every third case has
    power-of-two scales and a bias of eighths (many requantized values are ties), some weights
    have zero points (FBGEMM's path), the others none (oneDNN's)."""
    rng = np.random.default_rng(seed)
    g = int(rng.choice([1, 2, 3]))
    cg, ocg = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kernel = [int(rng.integers(1, 4)) for _ in range(n)]
    stride = [int(rng.integers(1, 3)) for _ in range(n)]
    padding = [int(rng.integers(0, 3)) for _ in range(n)]
    dilation = [int(rng.integers(1, 3)) for _ in range(n)]
    size = [int(rng.integers(k * d, 9 if n < 3 else 7)) for k, d in zip(kernel, dilation)]
    oc = g * ocg
    ties, per_channel = seed % 3 == 0, seed % 4 == 1
    if per_channel:
        w_scale = rng.uniform(1e-3, 0.05, oc)
        w_zp = rng.integers(-20, 20, oc) if seed % 8 == 1 else np.zeros(oc, np.int64)
    else:
        w_scale = 0.25 if ties else float(rng.uniform(1e-3, 0.05))
        w_zp = int(rng.integers(-10, 10)) if seed % 5 == 3 else 0
    return dict(
        x=rng.integers(0, 256, (int(rng.integers(1, 3)), g * cg, *size)).astype(np.uint8),
        x_scale=0.5 if ties else float(rng.uniform(1e-3, 0.1)),
        x_zp=int(rng.integers(0, 256)) if seed % 2 else 0,
        w=rng.integers(-128, 128, (oc, cg, *kernel)).astype(np.int8), w_scale=w_scale,
        w_zp=w_zp, axis=0 if per_channel else None,
        bias=None if seed % 5 == 0 else
        (rng.integers(-64, 64, oc) * 0.125 if ties else rng.normal(0, 3, oc)).astype(np.float32),
        stride=stride, padding=padding, dilation=dilation, groups=g,
        y_scale=0.25 * 2 ** int(rng.integers(0, 8)) if ties else float(rng.uniform(0.01, 2)),
        y_zp=int(rng.integers(0, 256)))


def _prepack(lib, c):
    n = c["w"].ndim - 2
    return getattr(lib.ops.quantized, f"conv{n}d_prepack")(
        _qtensor(lib, c["w"], c["w_scale"], c["w_zp"], c["axis"]),
        None if c["bias"] is None else lib.tensor(c["bias"]), c["stride"], c["padding"],
        c["dilation"], c["groups"])


def _run_conv(lib, c, relu):
    # (a fresh packed weight per op: PyTorch's oneDNN weight caches its first call's primitive,
    # ReLU or not, and reuses it for the other op)
    op = getattr(lib.ops.quantized, f"conv{c['w'].ndim - 2}d{'_relu' if relu else ''}")
    return op(_qtensor(lib, c["x"], c["x_scale"], c["x_zp"]), _prepack(lib, c), c["y_scale"],
              c["y_zp"])


@pytest.mark.parametrize("n,relu", [(2, False), (2, True), (1, False), (1, True), (3, False),
                                    (3, True)])
def test_conv_ops_bit_exact(torch, n, relu):
    for seed in range(48 if n == 2 else 24):
        c = _case(seed, n)
        got, want = _run_conv(ember, c, relu), _run_conv(torch, c, relu)
        _assert_same_q(got, want)
        assert got.stride() == want.stride()  # (channels-last)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_prepack_unpack_accessors_and_schemas(torch, n):
    """A 1-d weight packs as a 2-d one of height one (its accessors are ``conv2d_*``, its
    unpacking ``conv1d_unpack`` drops the height again)."""
    packed_n = 2 if n == 1 else n
    for seed in (1, 2, 3, 5, 9, 13):  # oneDNN and FBGEMM, per tensor and per channel
        c = _case(seed, n)
        got, want = _prepack(ember, c), _prepack(torch, c)
        (gw, gb), (ww, wb) = got.unpack(), want.unpack()
        _assert_same_q(gw, ww)  # (FBGEMM's scales rounded to float, oneDNN's not)
        assert gw.stride() == ww.stride()
        assert (gb is None) == (wb is None)
        if wb is not None:
            np.testing.assert_array_equal(gb.numpy(), wb.numpy())
        for name in ("stride", "padding", "output_padding", "dilation", "groups"):
            assert getattr(got, name)() == getattr(want, name)()
            assert getattr(ember.ops.quantized, f"conv{packed_n}d_{name}")(got) == \
                getattr(torch.ops.quantized, f"conv{packed_n}d_{name}")(want)
        assert got.transpose() == want.transpose()
        assert getattr(ember.ops.quantized, f"conv{packed_n}d_transpose")(got) == \
            getattr(torch.ops.quantized, f"conv{packed_n}d_transpose")(want)
        unpacked = getattr(ember.ops.quantized, f"conv{n}d_unpack")(got)
        want_unpacked = getattr(torch.ops.quantized, f"conv{n}d_unpack")(want)
        _assert_same_q(unpacked[0], want_unpacked[0])
        assert unpacked[0].stride() == want_unpacked[0].stride()
    names = [f"conv{n}d_prepack", f"conv{n}d_unpack"]
    if n > 1:
        names += [f"conv{n}d_{name}" for name in ("stride", "padding", "output_padding",
                                                  "dilation", "groups", "transpose")]
    ops = [(name, "default") for name in names] + [
        (f"conv{n}d{relu}", "default" if n == 1 else "new") for relu in ("", "_relu")]
    for name, overload in ops:
        assert str(getattr(getattr(ember.ops.quantized, name), overload)._schema) == \
            str(getattr(getattr(torch.ops.quantized, name), overload)._schema)


def test_conv1d_arguments_and_many_groups(torch):
    """``conv1d_prepack`` takes one-element geometry as the width's (two elements as given);
    more than 100 groups take FBGEMM's path even with symmetric weights."""
    rng = np.random.default_rng(6)
    for lib_args in (([2], [1], [1]), ([1, 2], [0, 1], [1, 1])):
        got, want = (lib.ops.quantized.conv1d_prepack(
            _qtensor(lib, np.ones((4, 2, 3), np.int8), 0.1, 0), None, *lib_args, 1)
            for lib in (ember, torch))
        assert (got.stride(), got.padding(), got.dilation()) == \
            (want.stride(), want.padding(), want.dilation())
    c = dict(x=rng.integers(0, 256, (1, 101, 3, 3)).astype(np.uint8), x_scale=0.05, x_zp=3,
             w=rng.integers(-128, 128, (101, 1, 2, 2)).astype(np.int8), w_scale=0.01, w_zp=0,
             axis=None, bias=rng.normal(size=101).astype(np.float32), stride=[1, 1],
             padding=[1, 1], dilation=[1, 1], groups=101, y_scale=0.3, y_zp=100)
    got, want = _run_conv(ember, c, False), _run_conv(torch, c, False)
    _assert_same_q(got, want)
    assert _prepack(ember, c).unpack()[0].stride() == _prepack(torch, c).unpack()[0].stride()


def _same_errors(results, torch):
    got, want = results[ember], results[torch]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g = (g[0], g[1].replace("ember", "torch")) if g else g
        if w and w[1].startswith("Could not run"):  # (PyTorch's longer hint follows)
            # (PyTorch's max_pool2d with indices reaches its out= overload first)
            want = w[1].replace("_with_indices.out'", "_with_indices'")
            assert g[0] == w[0] and want.startswith(g[1].split(" This could")[0]), (i, g, w)
        else:
            assert g == w, (i, g, w)


def test_errors(torch):
    results = {}
    for lib in (ember, torch):
        q = lib.ops.quantized
        w = _qtensor(lib, np.ones((4, 2, 3, 3), np.int8), 0.1, 0)
        w_affine = _qtensor(lib, np.ones((4, 2, 3, 3), np.int8), 0.1, 2)
        packed = q.conv2d_prepack(w, lib.zeros(4), [1, 1], [0, 0], [1, 1], 1)
        x = _qtensor(lib, np.ones((1, 2, 5, 5), np.uint8), 0.1, 0)
        F = lib.nn.functional
        cases = []
        for weight in (w, w_affine):  # (oneDNN's and FBGEMM's messages)
            p = q.conv2d_prepack(weight, lib.zeros(4), [1, 1], [0, 0], [1, 1], 1)
            for op in (q.conv2d, q.conv2d_relu):
                cases += [
                    lambda op=op, p=p: op(_qtensor(lib, np.ones((1, 3, 5, 5), np.uint8), 0.1, 0),
                                          p, 0.1, 0),
                    lambda op=op, p=p: op(_qtensor(lib, np.ones((2, 5, 5), np.uint8), 0.1, 0), p,
                                          0.1, 0),
                    lambda op=op, p=p: op(_qtensor(lib, np.ones((1, 2, 5, 5), np.int8), 0.1, 0),
                                          p, 0.1, 0),
                    lambda op=op, p=p: op(x[:, :, :1], p, 0.1, 0),
                    lambda op=op, p=p: op(x[:, :, :2], p, 0.1, 0).shape,
                ]
        cases += [
            lambda: q.conv2d(x.float(), packed, 0.1, 0),
            lambda: q.conv2d_prepack(lib.ones(4, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], 1),
            lambda: q.conv2d_prepack(w, lib.zeros(5), [1, 1], [0, 0], [1, 1], 1),
            lambda: q.conv2d_prepack(w[:, :, 0], None, [1], [0], [1], 1),
            lambda: q.conv2d_prepack(w, None, [1], [0, 0], [1, 1], 1),
            lambda: q.conv2d_prepack(w, None, [1, 1], [0], [1, 1], 1),
            lambda: q.conv2d_prepack(w, None, [1, 1], [0, 0], [1], 1),
            lambda: q.conv2d_prepack(w_affine, None, [1, 1], [0, 0], [1, 1], 3),
            lambda: lib.ao.nn.quantized.Conv2d(3, 4, 3, groups=2),
            lambda: lib.ao.nn.quantized.Conv2d(4, 3, 3, groups=2),
            lambda: lib.ao.nn.quantized.Conv2d(4, 4, 3, padding_mode="circular"),
            lambda: lib.ao.nn.quantized.Conv2d(2, 4, 3)(x[0]),
            lambda: lib.ao.nn.quantized.Conv2d.from_float(lib.nn.Linear(1, 1)),
            lambda: lib.ao.nn.quantized.Conv2d.from_float(lib.nn.Conv2d(1, 1, 1)),
            lambda: F.max_pool2d(x, 9),
            lambda: F.max_pool2d(x, 3, padding=2),
            lambda: F.max_pool2d(x[0, 0, 0], 2),
            lambda: F.max_pool2d(x, 2, return_indices=True),
            lambda: F.max_pool2d(_qtensor(lib, np.ones((1, 2, 4, 4), np.uint8), [0.1, 0.2],
                                          [0, 0], 1), 2),
        ]
        assert _error(lambda: q.conv2d(x, packed, 0.1, 0)) is None
        # (oneDNN's output of a window one row too tall is empty, not an error)
        assert tuple(q.conv2d(x[:, :, :2], packed, 0.1, 0).shape) == (1, 4, 0, 3)
        results[lib] = [_error(fn) for fn in cases]
    _same_errors(results, torch)


def test_errors_1d_3d(torch):
    """The 3-d ops' messages are the 2-d ones' with their rank; the 1-d ops run the 2-d ones,
    whose messages they give."""
    results = {}
    for lib in (ember, torch):
        q, nnq = lib.ops.quantized, lib.ao.nn.quantized
        cases = []
        for zp in (0, 2):  # (oneDNN's and FBGEMM's messages)
            w3 = _qtensor(lib, np.ones((4, 2, 3, 3, 3), np.int8), 0.1, zp)
            w1 = _qtensor(lib, np.ones((4, 2, 3), np.int8), 0.1, zp)
            p3 = q.conv3d_prepack(w3, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
            p1 = q.conv1d_prepack(w1, None, [1], [0], [1], 1)
            x3 = _qtensor(lib, np.ones((1, 2, 5, 5, 5), np.uint8), 0.1, 0)
            x1 = _qtensor(lib, np.ones((2, 2, 7), np.uint8), 0.1, 0)
            for op3, op1 in ((q.conv3d, q.conv1d), (q.conv3d_relu, q.conv1d_relu)):
                cases += [
                    lambda op=op3, p=p3: op(_qtensor(lib, np.ones((1, 3, 5, 5, 5), np.uint8),
                                                     0.1, 0), p, 0.1, 0),
                    lambda op=op3, p=p3, x=x3: op(x[0], p, 0.1, 0),
                    lambda op=op3, p=p3: op(_qtensor(lib, np.ones((1, 2, 5, 5, 5), np.int8),
                                                     0.1, 0), p, 0.1, 0),
                    lambda op=op3, p=p3, x=x3: op(x[:, :, :1], p, 0.1, 0),
                    lambda op=op3, p=p3, x=x3: op(x[:, :, :2], p, 0.1, 0).shape,
                    lambda op=op1, p=p1, x=x1: op(x[0], p, 0.1, 0),
                    lambda op=op1, p=p1: op(_qtensor(lib, np.ones((2, 3, 7), np.uint8), 0.1, 0),
                                            p, 0.1, 0),
                    lambda op=op1, p=p1, x=x1: op(x[..., :1], p, 0.1, 0).shape,
                ]
        w3 = _qtensor(lib, np.ones((4, 2, 3, 3, 3), np.int8), 0.1, 2)
        w1 = _qtensor(lib, np.ones((4, 2, 3), np.int8), 0.1, 0)
        cases += [
            lambda: q.conv3d_prepack(w3[:, :, 0], None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1),
            lambda: q.conv3d_prepack(w3, None, [1, 1], [0, 0, 0], [1, 1, 1], 1),
            lambda: q.conv3d_prepack(w3, None, [1, 1, 1], [0, 0], [1, 1, 1], 1),
            lambda: q.conv3d_prepack(w3, None, [1, 1, 1], [0, 0, 0], [1, 1], 1),
            lambda: q.conv3d_prepack(w3, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 3),
            lambda: q.conv3d_prepack(w3, lib.zeros(5), [1, 1, 1], [0, 0, 0], [1, 1, 1], 1),
            lambda: q.conv1d_prepack(w1, None, [], [0], [1], 1),
            lambda: q.conv1d_prepack(w1[0], None, [1], [0], [1], 1),
            lambda: q.conv1d_prepack(w3, None, [1], [0], [1], 1),
            lambda: nnq.Conv1d(2, 4, 3, padding_mode="circular"),
            lambda: nnq.Conv3d(2, 4, 3, padding_mode="reflect"),
            lambda: lib.ao.nn.intrinsic.quantized.ConvReLU3d(2, 4, 3, padding_mode="reflect"),
            lambda: nnq.Conv1d(2, 4, 3)(_qtensor(lib, np.ones((1, 2, 5, 5, 5), np.uint8), 0.1,
                                                 0)),
            lambda: nnq.Conv3d(2, 4, 3)(_qtensor(lib, np.ones((2, 2, 7), np.uint8), 0.1, 0)),
            lambda: nnq.Conv1d.from_float(lib.nn.Conv2d(1, 1, 1)),
            lambda: nnq.Conv3d.from_float(lib.nn.Conv3d(1, 1, 1)),
        ]
        results[lib] = [_error(fn) for fn in cases]
    _same_errors(results, torch)


def test_quantized_max_pool2d(torch):
    rng = np.random.default_rng(4)
    ints = rng.integers(0, 256, (2, 3, 9, 8)).astype(np.uint8)
    for kernel, stride, padding, dilation, ceil_mode in [(2, None, 0, 1, False),
                                                         (3, 2, 1, 1, True),
                                                         ((3, 2), (1, 2), (1, 0), (2, 1), False)]:
        for channels_last in (False, True):
            out = []
            for lib in (ember, torch):
                x = _qtensor(lib, ints, 0.05, 17)
                if channels_last:
                    x = x.contiguous(memory_format=lib.channels_last)
                pool = lib.nn.MaxPool2d(kernel, stride, padding, dilation, ceil_mode=ceil_mode)
                out.append((pool(x), lib.nn.functional.max_pool2d(x[0], kernel, stride,
                                                                   padding, dilation)))
            for got, want in zip(*out):
                _assert_same_q(got, want)
                assert got.stride() == want.stride()


def test_quantized_max_pool1d(torch):
    """``max_pool1d`` of a quantized input: the 2-d kernel on a height of one, after ATen's 1-d
    checks (their messages, and the 2-d op's beyond them)."""
    rng = np.random.default_rng(4)
    ints = rng.integers(0, 256, (2, 3, 11)).astype(np.uint8)
    results = {}
    for lib in (ember, torch):
        x = _qtensor(lib, ints, 0.05, 17)
        F, q = lib.nn.functional, lib.ops.aten.quantized_max_pool1d
        out = [lib.nn.MaxPool1d(2)(x), lib.nn.MaxPool1d(3, 2, 1, ceil_mode=True)(x),
               F.max_pool1d(x[0], 3, 1, 1, 2), F.max_pool1d(x.transpose(1, 2), 2),
               q(x, [3], [2], [1], [1], True)]
        results[lib] = out, [_error(fn) for fn in (
            lambda: q(x, [2, 2]), lambda: q(x, [2], [1, 1]), lambda: q(x, [2], [1], [0, 0]),
            lambda: q(x, [2], [1], [0], [1, 1]), lambda: q(x[0, 0], [3]),
            lambda: q(x, [0]), lambda: q(x, [2], [0]), lambda: q(x, [3], [1], [2]),
            lambda: q(x, [3], [1], [-1]), lambda: q(x, [2], [1], [0], [0]), lambda: q(x, [12]),
            lambda: F.max_pool1d(x[0, 0], 3), lambda: F.max_pool1d(x[:, :0], 3),
            lambda: F.max_pool1d(x, 3, return_indices=True))]
    for got, want in zip(results[ember][0], results[torch][0]):
        _assert_same_q(got, want)
        assert got.stride() == want.stride()
    _same_errors({lib: results[lib][1] for lib in results}, torch)


def test_modules_repr_state_dict(torch):
    rng = np.random.default_rng(3)
    mods = {}
    for lib in (ember, torch):
        nnq, nniq = lib.ao.nn.quantized, lib.ao.nn.intrinsic.quantized
        mods[lib] = [nnq.Conv2d(4, 4, 3, groups=2), nnq.Conv2d(3, 5, (1, 2), bias=False),
                     nniq.ConvReLU2d(3, 4, (3, 2), stride=2, padding=1, dilation=2, bias=False),
                     nnq.Conv2d(2, 2, 3, padding=1, padding_mode="reflect")]
    for e, t in zip(mods[ember], mods[torch]):
        assert repr(e) == repr(t).replace("torch.", "ember.")
        assert list(e.state_dict()) == list(t.state_dict())
    # PyTorch's state dict loads into ember's module, and both then compute the same
    w = rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
    bias = rng.normal(size=6).astype(np.float32)
    conv = {lib: lib.ao.nn.intrinsic.quantized.ConvReLU2d(4, 6, 3, stride=2, padding=1, groups=2)
            for lib in (ember, torch)}
    conv[torch].set_weight_bias(_qtensor(torch, w, 0.02, 0), torch.tensor(bias))
    conv[torch].scale, conv[torch].zero_point = 0.05, 60
    sd = conv[torch].state_dict()
    assert list(sd) == ["weight", "bias", "scale", "zero_point"]
    conv[ember].load_state_dict({
        "weight": _qtensor(ember, sd["weight"].int_repr().numpy(), sd["weight"].q_scale(),
                           sd["weight"].q_zero_point()),
        "bias": ember.tensor(sd["bias"].numpy()), "scale": ember.tensor(sd["scale"].numpy()),
        "zero_point": ember.tensor(sd["zero_point"].numpy())})
    conv[torch].load_state_dict(sd)  # (the scale now a float32's, in both)
    assert repr(conv[ember]) == repr(conv[torch]).replace("torch.", "ember.")
    x = rng.integers(0, 256, (2, 4, 7, 6)).astype(np.uint8)
    _assert_same_q(conv[ember](_qtensor(ember, x, 0.1, 10)), conv[torch](_qtensor(torch, x, 0.1, 10)))
    esd = conv[ember].state_dict()
    _assert_same_q(esd["weight"], sd["weight"])
    assert esd["scale"].item() == sd["scale"].item()
    assert esd["zero_point"].item() == sd["zero_point"].item()
    # a reflect-padded convolution pads its quantized input first, as PyTorch's does
    for lib in (ember, torch):
        mods[lib][3].set_weight_bias(_qtensor(lib, w[:2], 0.02, 0), None)
    # (ember's quantized reflection padding is PyTorch's? compared here on the same integers)
    _assert_same_q(mods[ember][3](_qtensor(ember, x[:, :2], 0.1, 10)),
                   mods[torch][3](_qtensor(torch, x[:, :2], 0.1, 10)))


@pytest.mark.parametrize("make", [
    lambda lib: lib.ao.nn.quantized.Conv1d(4, 6, 3, stride=2, padding=1, groups=2),
    lambda lib: lib.ao.nn.quantized.Conv1d(2, 4, 3, padding=2, padding_mode="reflect",
                                           bias=False),
    lambda lib: lib.ao.nn.intrinsic.quantized.ConvReLU1d(3, 4, 2, dilation=2),
    lambda lib: lib.ao.nn.quantized.Conv3d(4, 4, (1, 2, 3), padding=(0, 1, 1), groups=4),
    lambda lib: lib.ao.nn.intrinsic.quantized.ConvReLU3d(2, 3, 2, stride=(1, 2, 1),
                                                         bias=False)])
def test_modules_1d_3d(torch, make):
    """repr, state dict keys, PyTorch's state dict loaded into ember's module, then the same
    integers out (a reflect-padded 1-d one pads its quantized input first)."""
    rng = np.random.default_rng(7)
    mods = {lib: make(lib) for lib in (ember, torch)}
    e, t = mods[ember], mods[torch]
    assert repr(e) == repr(t).replace("torch.", "ember.")
    w = rng.integers(-128, 128, tuple(t.weight().shape)).astype(np.int8)
    bias = None if t.bias() is None else torch.tensor(rng.normal(size=t.out_channels),
                                                      dtype=torch.float)
    t.set_weight_bias(_qtensor(torch, w, 0.02, 0), bias)
    t.scale, t.zero_point = 0.05, 60
    sd = t.state_dict()
    assert list(e.state_dict()) == list(sd) == ["weight", "bias", "scale", "zero_point"]
    e.load_state_dict({
        "weight": _qtensor(ember, sd["weight"].int_repr().numpy(), sd["weight"].q_scale(),
                           sd["weight"].q_zero_point()),
        "bias": None if sd["bias"] is None else ember.tensor(sd["bias"].numpy()),
        "scale": ember.tensor(sd["scale"].numpy()),
        "zero_point": ember.tensor(sd["zero_point"].numpy())})
    t.load_state_dict(sd)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    x = rng.integers(0, 256, (2, t.in_channels) + (6,) * len(t.kernel_size)).astype(np.uint8)
    got, want = e(_qtensor(ember, x, 0.1, 10)), t(_qtensor(torch, x, 0.1, 10))
    _assert_same_q(got, want)
    assert got.stride() == want.stride()
    _assert_same_q(e.state_dict()["weight"], sd["weight"])


class _CNN:
    """QuantStub, Conv+ReLU (fused), a pool (MaxPool2d; AvgPool1d in 1-d, none in 3-d),
    Conv+BatchNorm(+ReLU), flatten, Linear, DeQuantStub in ``lib``, ``n``-d."""

    @staticmethod
    def make(lib, n=2):
        q = lib.ao.quantization
        conv, bn = getattr(lib.nn, f"Conv{n}d"), getattr(lib.nn, f"BatchNorm{n}d")

        class CNN(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = q.QuantStub()
                self.conv1 = conv(2, 4, 3, padding=1)
                self.relu1 = lib.nn.ReLU()
                self.pool = {1: lib.nn.AvgPool1d(2), 2: lib.nn.MaxPool2d(2),
                             3: lib.nn.Identity()}[n]
                self.conv2 = conv(4, 6, 3, stride=2, groups=2)
                self.bn2 = bn(6)
                self.relu2 = lib.nn.ReLU()
                self.conv3 = conv(6, 4, 1, bias=False)
                self.bn3 = bn(4)
                self.fc = lib.nn.Linear(4 * 1 * 1, 3)
                self.dequant = q.DeQuantStub()

            def forward(self, x):
                x = self.pool(self.relu1(self.conv1(self.quant(x))))
                x = self.bn3(self.conv3(self.relu2(self.bn2(self.conv2(x)))))
                return self.dequant(self.fc(x.flatten(1)))
        return CNN()


def _input_shape(batch, n):
    """(the convolutions bring it down to one element per channel)"""
    return (batch, 2) + (8 if n < 3 else 4,) * n


_FUSE = [["conv1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3"]]


def _assert_converted_same(models, torch, x):
    """(every child's output but the dequantized one)"""
    _assert_converted_same_as(models, torch, x, lambda name, mod: "." not in name and
                              name != "dequant", {"conv1", "conv2", "conv3", "pool", "fc"})


@pytest.mark.parametrize("n,per_channel", [(2, False), (2, True), (1, False), (3, True)])
def test_static_cnn_fuse_prepare_calibrate_convert(torch, n, per_channel):
    """Per-tensor weights: oneDNN's path; per-channel (``default_per_channel_qconfig``'s
    symmetric weights): oneDNN's too. The batch norms fold in at fusion. The folded weights'
    float convolutions of 1-d and 3-d inputs add in another order than PyTorch's, so there the
    observers' ranges are compared closely and ember's then takes PyTorch's before convert."""
    rng = np.random.default_rng(21)
    models = {lib: _CNN.make(lib, n) for lib in (ember, torch)}
    _same_start(models, torch, exact=True)
    calib = [_eighths(rng, _input_shape(4, n)) * (i + 1) for i in range(2)]
    for lib, m in models.items():
        q = lib.ao.quantization
        m.eval()
        m.qconfig = q.default_per_channel_qconfig if per_channel else q.default_qconfig
        q.fuse_modules(m, _FUSE, inplace=True)
        q.prepare(m, inplace=True)
        for x in calib:
            m(lib.tensor(x))
    observed = {k: v.numpy().copy() for k, v in models[torch].state_dict().items()}
    ours = models[ember].state_dict()
    for k, v in observed.items():
        np.testing.assert_allclose(ours[k].numpy(), v, rtol=1e-6, atol=1e-7, err_msg=k)
    if n != 2:
        models[ember].load_state_dict({k: ember.tensor(v) for k, v in observed.items()})
    for lib, m in models.items():
        lib.ao.quantization.convert(m, inplace=True)
    assert models[ember].conv1._get_name() == f"QuantizedConvReLU{n}d"
    _assert_converted_same(models, torch,
                           rng.standard_normal(_input_shape(3, n)).astype(np.float32))


def test_static_cnn_affine_weights(torch):
    """Weights with zero points (an affine weight observer): FBGEMM's path."""
    rng = np.random.default_rng(22)
    models = {lib: _CNN.make(lib) for lib in (ember, torch)}
    _same_start(models, torch, exact=True)
    for lib, m in models.items():  # (lopsided weights: the observers give zero points)
        with lib.no_grad():
            for conv in (m.conv1, m.conv2, m.conv3):
                conv.weight.add_(0.3125)
    calib = _eighths(rng, (4, 2, 8, 8))
    for lib, m in models.items():
        q = lib.ao.quantization
        m.eval()
        m.qconfig = q.QConfig(
            activation=q.default_observer,
            weight=q.MinMaxObserver.with_args(dtype=lib.qint8, qscheme=lib.per_tensor_affine))
        q.fuse_modules(m, _FUSE, inplace=True)
        q.prepare(m, inplace=True)
        m(lib.tensor(calib))
        q.convert(m, inplace=True)
    assert all(models[torch].get_submodule(name).weight().q_zero_point() != 0
               for name in ("conv1", "conv2", "conv3"))
    _assert_converted_same(models, torch, rng.standard_normal((3, 2, 8, 8)).astype(np.float32))


@pytest.mark.parametrize("n", [2, 3])
def test_qat_cnn_train_convert(torch, n):
    """prepare_qat (ConvReLU, ConvBnReLU, ConvBn), two SGD steps, convert (the batch norms
    fold into the weights). Training's float sums round differently in the two libraries, so
    after checking the trained states agree closely, ember's model takes PyTorch's trained
    state and both convert: then they agree integer for integer."""
    rng = np.random.default_rng(23)
    models = {lib: _CNN.make(lib, n) for lib in (ember, torch)}
    _same_start(models, torch)
    for lib, m in models.items():
        q = lib.ao.quantization
        m.train()
        m.qconfig = q.get_default_qat_qconfig("x86")
        q.fuse_modules_qat(m, _FUSE, inplace=True)
        q.prepare_qat(m, inplace=True)
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        step_rng = np.random.default_rng(24)
        for _ in range(2):
            x = step_rng.standard_normal(_input_shape(8, n)).astype(np.float32)
            y = step_rng.integers(0, 3, 8)
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
    trained = {k: v.detach().numpy().copy() for k, v in models[torch].state_dict().items()}
    ours = models[ember].state_dict()
    assert sorted(ours) == sorted(trained)
    for k, v in trained.items():
        np.testing.assert_allclose(ours[k].detach().numpy(), v, rtol=1e-4, atol=1e-5, err_msg=k)
    models[ember].load_state_dict({k: ember.tensor(v) for k, v in trained.items()})
    for lib, m in models.items():
        m.eval()
        lib.ao.quantization.convert(m, inplace=True)
    assert [models[ember].conv1._get_name(), models[ember].conv2._get_name(),
            models[ember].conv3._get_name()] == [f"QuantizedConvReLU{n}d",
                                                 f"QuantizedConvReLU{n}d", f"QuantizedConv{n}d"]
    _assert_converted_same(models, torch,
                           rng.standard_normal(_input_shape(3, n)).astype(np.float32))


def test_from_reference(torch):
    rng = np.random.default_rng(25)
    w = rng.integers(-128, 128, (4, 3, 2, 2)).astype(np.int8)
    bias = rng.normal(size=4).astype(np.float32)

    class RefConv:
        in_channels, out_channels, kernel_size = 3, 4, (2, 2)
        stride, padding, dilation, groups, padding_mode = (1, 1), (1, 1), (1, 1), 1, "zeros"

        def __init__(self, lib):
            self.bias = lib.tensor(bias)
            self.weight = lib.zeros(1)
            self._w = _qtensor(lib, w, 0.03, 0)

        def get_quantized_weight(self):
            return self._w

    made = {lib: [lib.ao.nn.quantized.Conv2d.from_reference(RefConv(lib), 0.2, 9),
                  lib.ao.nn.intrinsic.quantized.ConvReLU2d.from_reference([RefConv(lib)], 0.2, 9)]
            for lib in (ember, torch)}
    x = rng.integers(0, 256, (1, 3, 4, 4)).astype(np.uint8)
    for e, t in zip(made[ember], made[torch]):
        assert repr(e) == repr(t).replace("torch.", "ember.")
        _assert_same_q(e(_qtensor(ember, x, 0.1, 3)), t(_qtensor(torch, x, 0.1, 3)))

"""OpInfo entries of the convolution, pooling and resampling ops (ember/_kernels/cpu/conv.py,
pool.py, resample.py and their composites). Backward ops are reached through autograd: their
values are checked against PyTorch's gradients by tests/test_nn_functional_conv.py."""
from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, tensor

_F = ("float32", "float64")
_FH = ("float32", "float64", "float16", "bfloat16")


def _add(name, samples, dtypes=_F, out=None, rtol=1e-5, atol=1e-5):
    OPS.append(OpInfo(name, samples, dtypes, None, out, rtol, atol))


def _gen(cases):
    """Samples from (args builder(dtype), desc) pairs, for every dtype of the op."""
    def gen(op):
        for dt in op.dtypes:
            for build, desc in cases:
                yield Sample(build(dt), desc=f"{dt} {desc}")
    return gen


# ---- convolution --------------------------------------------------------------------------------

_CONV = [
    (lambda d: (tensor((2, 3, 6, 5), d), tensor((4, 3, 3, 2), d), tensor((4,), d), [1], [0], [1],
                False, [0], 1), "2d basic"),
    (lambda d: (tensor((2, 4, 7, 6), d, "transposed"), tensor((6, 2, 3, 3), d), None, [2, 1],
                [1, 2], [2, 1], False, [0], 2), "2d groups stride dilation transposed layout"),
    (lambda d: (tensor((2, 4, 9), d, "sliced"), tensor((4, 1, 3), d), tensor((4,), d), [2], [1],
                [1], False, [0], 4), "1d depthwise sliced"),
    (lambda d: (tensor((1, 2, 4, 5, 4), d), tensor((3, 2, 2, 3, 2), d), None, [1, 2, 1],
                [1, 0, 1], [1], False, [0], 1), "3d"),
    (lambda d: (tensor((2, 4, 3, 4), d), tensor((4, 3, 3, 3), d), tensor((6,), d), [2, 2],
                [1, 1], [1, 1], True, [1, 0], 2), "transposed 2d groups output_padding"),
    (lambda d: (tensor((2, 3, 5), d), tensor((3, 2, 3), d), None, [3], [1], [2], True, [2], 1),
     "transposed 1d"),
    (lambda d: (tensor((0, 3, 5, 5), d), tensor((4, 3, 3, 3), d), None, [1], [0], [1], False,
                [0], 1), "empty batch"),
    (lambda d: (tensor((2, 3, 5, 5), d, "expanded"), tensor((4, 3, 1, 1), d), None, [1], [0],
                [1], False, [0], 1), "1x1 expanded"),
    # errors
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((4, 2, 3, 3), d), None, [1], [0], [1], False,
                [0], 1), "channel mismatch"),
    (lambda d: (tensor((2, 3, 2, 2), d), tensor((4, 3, 3, 3), d), None, [1], [0], [1], False,
                [0], 1), "kernel too large"),
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((4, 3, 3, 3), d), None, [0], [0], [1], False,
                [0], 1), "zero stride"),
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((4, 3, 3, 3), d), None, [1], [-1], [1], False,
                [0], 1), "negative padding"),
    (lambda d: (tensor((3, 5, 5), d), tensor((4, 3, 3, 3), d), None, [1], [0], [1], False, [0],
                1), "unbatched"),
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((4, 3, 3, 3), d), tensor((3,), d), [1], [0],
                [1], False, [0], 1), "bias size"),
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((4, 3, 3, 3), d), None, [1, 1, 1], [0], [1],
                False, [0], 1), "stride length"),
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((3, 2, 3, 3), d), None, [1], [1], [1], True,
                [1], 1), "output_padding too large"),
    (lambda d: (tensor((2, 3, 5, 5), d), tensor((4, 3, 3, 3), "float64" if d != "float64" else
                                                "float32"), None, [1], [0], [1], False, [0], 1),
     "dtype mismatch"),
]
_add("convolution.default", _gen(_CONV), _F + ("int64",), "convolution.out", rtol=1e-4)
_add("convolution.default", _gen(_CONV[:2]), ("float16", "bfloat16"), rtol=2e-2, atol=1.0)
# _convolution: convolution's arguments and four backend flags, which change nothing on the CPU
_add("_convolution.default",
     _gen([(lambda d, build=build: build(d) + (False, True, True, True), desc)
           for build, desc in _CONV]), _F, "_convolution.out", rtol=1e-4)


def _conv_front(k, transposed=False):
    sp = (6, 5, 4)[:k]
    ks = (3, 2, 2)[:k]

    def w(d, o, i):
        return tensor((i, o) + ks if transposed else (o, i) + ks, d)
    cases = [
        (lambda d: (tensor((2, 4) + sp, d), w(d, 3, 4)), "defaults"),
        (lambda d: (tensor((4,) + sp, d), w(d, 3, 4), tensor((3,), d)), "unbatched"),
        (lambda d: (tensor((2, 4) + sp, d, "transposed"), w(d, 4, 2), tensor((4,), d), [2],
                    [1], *(([1], 2, [1]) if transposed else ([1], 2))), "groups stride"),
        (lambda d: (tensor(sp, d), w(d, 3, 4)), "bad rank"),
    ]
    return _gen(cases)


for _k in (1, 2, 3):
    _add(f"conv{_k}d.default", _conv_front(_k), rtol=1e-4)
    _add(f"conv_transpose{_k}d." + ("default" if _k == 1 else "input"),
         _conv_front(_k, True), rtol=1e-4)


def _conv_padding(k):
    sp = (7, 6, 5)[:k]
    cases = [
        (lambda d: (tensor((2, 3) + sp, d), tensor((4, 3) + (3, 2, 2)[:k], d), None, [1],
                    "same", [1], 1), "same even kernel"),
        (lambda d: (tensor((2, 4) + sp, d), tensor((4, 2) + (3,) * k, d), tensor((4,), d), [1],
                    "same", [2], 2), "same dilated groups"),
        (lambda d: (tensor((2, 3) + sp, d), tensor((4, 3) + (2,) * k, d), None, [1], "valid",
                    [1], 1), "valid"),
        (lambda d: (tensor((3,) + sp, d), tensor((4, 3) + (2,) * k, d), None, [1], "same", [1],
                    1), "unbatched same"),
        (lambda d: (tensor((2, 3) + sp, d), tensor((4, 3) + (2,) * k, d), None, [2], "same",
                    [1], 1), "strided same"),
        (lambda d: (tensor((2, 3) + sp, d), tensor((4, 3) + (2,) * k, d), None, [1], "full",
                    [1], 1), "bad string"),
    ]
    return _gen(cases)


for _k in (1, 2, 3):
    _add(f"conv{_k}d.padding", _conv_padding(_k), rtol=1e-4)

_IM2COL = [
    (lambda d: (tensor((2, 3, 6, 5), d), [2, 3], [1, 2], [1, 0], [2, 1]), "4d"),
    (lambda d: (tensor((3, 5, 5), d, "transposed"), [3, 3], [1, 1], [1, 1], [1, 1]),
     "3d transposed"),
    (lambda d: (tensor((2, 3, 2, 2), d), [3, 3], [1, 1], [0, 0], [1, 1]), "too small"),
    (lambda d: (tensor((2, 3, 4, 4), d), [0, 3], [1, 1], [0, 0], [1, 1]), "zero kernel"),
]
_add("im2col.default", _gen(_IM2COL), _FH + ("int64",), "im2col.out")
_COL2IM = [
    (lambda d: (tensor((2, 18, 12), d), [6, 5], [2, 3], [1, 2], [1, 0], [2, 1]), "3d"),
    (lambda d: (tensor((9, 6), d, "transposed"), [4, 5], [3, 3], [1, 1], [0, 1], [1, 2]), "2d"),
    (lambda d: (tensor((2, 10, 12), d), [6, 5], [2, 3], [1, 2], [1, 0], [2, 1]), "indivisible"),
    (lambda d: (tensor((2, 18, 11), d), [6, 5], [2, 3], [1, 2], [1, 0], [2, 1]),
     "block count"),
]
_add("col2im.default", _gen(_COL2IM), _F + ("int64",), "col2im.out")

# ---- pooling --------------------------------------------------------------------------------------

_ALLF = _FH + ("int64",)


def _pool_cases(k, with_dilation):
    sp = (7, 6, 5)[:k]
    extra = ([1],) if with_dilation else ()
    return [
        (lambda d: (tensor((2, 3) + sp, d), [2]), "kernel only"),
        (lambda d: (tensor((3,) + sp, d, "transposed"), [3], [2], [1]) + extra + (True,),
         "unbatched ceil_mode"),
        (lambda d: (tensor((2, 3) + sp, d, "sliced"), [3] * k, [1] * k, [1] * k) +
         (([2] * k,) if with_dilation else ()), "padding dilation"),
        (lambda d: (tensor((0, 3) + sp, d), [2]), "empty batch"),
        (lambda d: (tensor((2, 3) + (1,) * k, d), [2]), "output too small"),
        (lambda d: (tensor((2, 3) + sp, d), [3], [1], [2]), "pad too large"),
        (lambda d: (tensor((2, 3) + sp, d), [2, 2, 2, 2]), "bad kernel_size"),
        (lambda d: (tensor(sp[-2:] if k > 1 else (4,), d), [2]), "bad rank"),
    ]


for _k in (2, 3):
    _add(f"max_pool{_k}d_with_indices.default", _gen(_pool_cases(_k, True)),
         _ALLF + ("int32", "uint8", "bool"))
    _add(f"max_pool{_k}d.default", _gen(_pool_cases(_k, True)[:4]), _FH)
    _add(f"avg_pool{_k}d.default", _gen(_pool_cases(_k, False) + [
        (lambda d: (tensor((2, 3, 6, 5, 4)[:_k + 2], d), [3], [2], [1], True, False),
         "ceil exclude pad"),
        (lambda d: (tensor((2, 3, 6, 5, 4)[:_k + 2], d), [3], [2], [1], False, True, 5),
         "divisor_override"),
        (lambda d: (tensor((2, 3, 6, 5, 4)[:_k + 2], d), [3], [2], [1], False, True, 0),
         "zero divisor"),
    ]), _ALLF + ("int32",), f"avg_pool{_k}d.out", rtol=1e-4)
_add("max_pool1d.default", _gen([c for c in _pool_cases(1, True) if "rank" not in c[1]]), _FH)
_add("max_pool1d_with_indices.default", _gen(_pool_cases(1, True)[:4]), _FH)
_add("avg_pool1d.default", _gen(_pool_cases(1, False)[:6]), _F, rtol=1e-4)


def _adaptive_cases(k):
    sp = (7, 6, 5)[:k]
    return [
        (lambda d: (tensor((2, 3) + sp, d), [3, 4, 2][:k]), "downsample"),
        (lambda d: (tensor((3,) + sp, d, "transposed"), [9, 1, 5][:k]), "unbatched upsample"),
        (lambda d: (tensor((0, 3) + sp, d), [2] * k), "empty batch"),
        (lambda d: (tensor((2, 0) + sp, d), [2] * k), "empty channels"),
        (lambda d: (tensor((2, 3) + sp, d), [2] * (k + 1)), "bad output_size"),
        (lambda d: (tensor(sp, d) if k > 1 else tensor((4,), d), [2] * k), "bad rank"),
    ]


_add("_adaptive_avg_pool2d.default", _gen(_adaptive_cases(2)), _ALLF, "_adaptive_avg_pool2d.out",
     rtol=1e-4)
_add("_adaptive_avg_pool3d.default", _gen(_adaptive_cases(3)), _ALLF, "_adaptive_avg_pool3d.out",
     rtol=1e-4)
_add("adaptive_avg_pool2d.default", _gen(_adaptive_cases(2)[:2]), _F, rtol=1e-4)
_add("adaptive_avg_pool3d.default", _gen(_adaptive_cases(3)[:2]), _F, rtol=1e-4)
_add("adaptive_avg_pool1d.default", _gen(_adaptive_cases(1)[:2]), _F, rtol=1e-4)
_add("adaptive_max_pool2d.default", _gen(_adaptive_cases(2)), _ALLF)
_add("adaptive_max_pool3d.default", _gen(_adaptive_cases(3)), _ALLF)
_add("adaptive_max_pool1d.default", _gen(_adaptive_cases(1)[:2]), _F)


def _unpool_samples(k):
    import numpy as np
    from opinfo import T

    def gen(op):
        for dt in op.dtypes:
            n = 4 ** k
            idx = np.arange(0, n, 4 if k == 2 else 8).reshape((1, 1) + (2,) * k)
            shape = (1, 1) + (2,) * k
            size = [4] * k
            extra = ([2] * k, [0] * k) if k == 3 else ()
            yield Sample((tensor(shape, dt), T(idx, "int64"), size) + extra, desc=dt)
            yield Sample((tensor(shape, dt), T(idx, "int64"), [4] * (k + 1)) + extra,
                         desc=f"{dt} bad output_size")
            yield Sample((tensor(shape, dt), T(idx[..., :1], "int64"), size) + extra,
                         desc=f"{dt} index shape")
            yield Sample((tensor(shape, dt), T(idx, "int32"), size) + extra,
                         desc=f"{dt} int32 indices")
    return gen


_add("max_unpool2d.default", _unpool_samples(2), _FH + ("int64",), "max_unpool2d.out")
_add("max_unpool3d.default", _unpool_samples(3), _F, "max_unpool3d.out")

# ---- upsampling -----------------------------------------------------------------------------------

_UP = {  # op -> (spatial dims, takes align_corners, dtypes)
    "upsample_nearest1d": (1, False, _FH + ("uint8",)),
    "upsample_nearest2d": (2, False, _FH + ("uint8",)),
    "upsample_nearest3d": (3, False, _FH),
    "_upsample_nearest_exact1d": (1, False, _FH),
    "_upsample_nearest_exact2d": (2, False, _FH + ("uint8",)),
    "_upsample_nearest_exact3d": (3, False, _FH),
    "upsample_linear1d": (1, True, _FH),
    "upsample_bilinear2d": (2, True, _FH),
    "upsample_bicubic2d": (2, True, _F),
    "upsample_trilinear3d": (3, True, _FH),
}


def _up_samples(name, k, aligned):
    sp = (5, 4, 3)[:k]

    def gen(op):
        for dt in op.dtypes:
            for out, scales, desc in [((9, 7, 5)[:k], None, "up"), ((3, 2, 2)[:k], None, "down"),
                                      ((8, 7, 5)[:k], [1.7] * k, "scales"),
                                      ((0,) * k, None, "empty output")]:
                for align in ((False, True) if aligned else (None,)):
                    args = (tensor((2, 3) + sp, dt, "transposed" if desc == "up" else
                                   "contiguous"), list(out))
                    args += (align,) if aligned else ()
                    yield Sample(args + tuple(scales or [None] * k), desc=f"{dt} {desc} {align}")
            yield Sample((tensor((2, 3) + sp, dt), [4] * (k + 1)) + ((False,) if aligned else ()),
                         desc=f"{dt} bad output_size")
            yield Sample((tensor((0, 3) + sp, dt), [4] * k) + ((False,) if aligned else ()),
                         desc=f"{dt} empty batch")
        yield Sample((tensor((2, 3) + sp, "int64"), [4] * k) + ((False,) if aligned else ()),
                     desc="int64")
    return gen


def _up_vec_samples(name, k, aligned):
    sp = (5, 4, 3)[:k]

    def gen(op):
        for dt in op.dtypes:
            al = (True,) if aligned else ()
            yield Sample((tensor((2, 3) + sp, dt), [7] * k) + al + (None,), desc=f"{dt} size")
            yield Sample((tensor((2, 3) + sp, dt), None) + al + ([1.5, 2.0, 0.7][:k],),
                         desc=f"{dt} scale_factors")
            yield Sample((tensor((2, 3) + sp, dt), [7] * k) + al + ([2.0] * k,),
                         desc=f"{dt} both")
    return gen


for _n, (_k, _al, _dts) in _UP.items():
    _add(f"{_n}.default", _up_samples(_n, _k, _al), _dts, f"{_n}.out", rtol=1e-4, atol=1e-4)
    _add(f"{_n}.vec", _up_vec_samples(_n, _k, _al), _F, rtol=1e-4, atol=1e-4)

# ---- padding, pixel shuffle -------------------------------------------------------------------


def _constant_pad_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3, 4), dt), [1, 2]), desc=f"{dt} last dim")
        yield Sample((tensor((2, 3, 4), dt, "transposed"), [1, 0, -1, 2], 2), desc=f"{dt} mixed")
        yield Sample((tensor((2, 3, 4), dt), [0, 0, 0, 0, 1, 1]), desc=f"{dt} all dims")
        yield Sample((tensor((), dt), []), desc=f"{dt} 0-dim")
        yield Sample((tensor((2, 3), dt), [1, 2, 3]), desc=f"{dt} odd length")
        yield Sample((tensor((2, 3), dt), [1] * 6), desc=f"{dt} too long")
        yield Sample((tensor((2, 3), dt), [-2, -2]), desc=f"{dt} negative size")


_add("constant_pad_nd.default", _constant_pad_samples, _FH + ("int64", "uint8", "bool"),
     "constant_pad_nd.out")


def _pad_samples(mode, k):
    sp = (4, 5, 3)[:k]

    def gen(op):
        for dt in op.dtypes:
            yield Sample((tensor((2, 3) + sp, dt), [1, 2] * k), desc=f"{dt} batched")
            yield Sample((tensor((3,) + sp, dt, "transposed"), [2, 0] * k), desc=f"{dt} unbatched")
            yield Sample((tensor((2, 3) + sp, dt), [-1, 2] * k), desc=f"{dt} negative")
            yield Sample((tensor((0, 3) + sp, dt), [1, 1] * k), desc=f"{dt} empty batch")
            yield Sample((tensor((2, 3) + sp, dt), [1] * (2 * k + 1)), desc=f"{dt} bad length")
            yield Sample((tensor((2, 3) + sp, dt), [5, 5] * k), desc=f"{dt} too large")
            yield Sample((tensor((2, 0) + sp, dt), [1, 1] * k), desc=f"{dt} empty channels")
    return gen


for _m in ("reflection", "replication"):
    for _k in (1, 2, 3):
        _add(f"{_m}_pad{_k}d.default", _pad_samples(_m, _k), _FH + ("int64", "bool"),
             f"{_m}_pad{_k}d.out")


def _pad_front_samples(op):
    for dt in op.dtypes:
        for mode in ("constant", "reflect", "replicate", "circular"):
            yield Sample((tensor((2, 3, 4, 5), dt), [1, 2, 2, 1], mode), desc=f"{dt} {mode}")
            yield Sample((tensor((2, 3, 5), dt), [2, 1], mode), desc=f"{dt} {mode} 1d")
        yield Sample((tensor((2, 3), dt), [1, 1], "constant", 2.5), desc=f"{dt} value")
        yield Sample((tensor((2, 3, 4), dt), [1, 1], "reflect", 2.5), desc=f"{dt} value error")
        yield Sample((tensor((2, 3, 4), dt), [1, 1], "wrap"), desc=f"{dt} bad mode")


_add("pad.default", _pad_front_samples)


def _circular_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3, 4, 5), dt), [1, 2, 2, 1]), desc=f"{dt} 2d")
        yield Sample((tensor((2, 3, 5), dt, "sliced"), [-1, 3]), desc=f"{dt} crop and wrap")
        yield Sample((tensor((2, 3, 4, 5, 3), dt), [1, 0, 0, 1, 2, 2]), desc=f"{dt} 3d")
        yield Sample((tensor((2, 3, 4, 5), dt), [1, 1]), desc=f"{dt} bad length")
        yield Sample((tensor((2, 3, 4), dt), [5, 0]), desc=f"{dt} wraps twice")


_add("_pad_circular.default", _circular_samples, _FH + ("int64",))


def _shuffle_samples(shuffle):
    def gen(op):
        for dt in op.dtypes:
            if shuffle:
                yield Sample((tensor((2, 8, 3, 2), dt), 2), desc=f"{dt} 4d")
                yield Sample((tensor((3, 2, 9, 2, 3), dt, "transposed"), 3), desc=f"{dt} 5d")
                yield Sample((tensor((2, 6, 3, 2), dt), 2), desc=f"{dt} indivisible")
            else:
                yield Sample((tensor((2, 2, 4, 6), dt), 2), desc=f"{dt} 4d")
                yield Sample((tensor((3, 1, 6, 3), dt, "transposed"), 3), desc=f"{dt} transposed")
                yield Sample((tensor((2, 2, 5, 6), dt), 2), desc=f"{dt} indivisible")
            yield Sample((tensor((4, 4), dt), 2), desc=f"{dt} 2d")
            yield Sample((tensor((2, 8, 4, 4), dt), 0), desc=f"{dt} zero factor")
    return gen


_add("pixel_shuffle.default", _shuffle_samples(True), _FH + ("int64", "bool"),
     "pixel_shuffle.out")
_add("pixel_unshuffle.default", _shuffle_samples(False), _FH + ("int64", "bool"),
     "pixel_unshuffle.out")

# ---- backward ops: checked through autograd ---------------------------------------------------

_BACKWARD = """convolution_backward.default max_pool2d_with_indices_backward.default
    max_pool3d_with_indices_backward.default avg_pool2d_backward.default
    avg_pool3d_backward.default _adaptive_avg_pool2d_backward.default
    _adaptive_avg_pool3d_backward.default _adaptive_avg_pool2d_backward.out
    _adaptive_avg_pool3d_backward.out adaptive_max_pool2d_backward.default
    adaptive_max_pool3d_backward.default reflection_pad1d_backward.default
    reflection_pad2d_backward.default reflection_pad3d_backward.default
    replication_pad1d_backward.default replication_pad2d_backward.default
    replication_pad3d_backward.default""".split()
_BACKWARD += [f"{n}_backward.default" for n in _UP]
for _b in _BACKWARD:
    NOT_IN_TABLE[_b] = ("backward op: checked against PyTorch's gradients by "
                        "tests/test_nn_functional_conv.py")

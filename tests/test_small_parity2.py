"""Small mismatches with PyTorch, each checked beside PyTorch: addmv's out= resizing (and its
warning), addr's dtype dispatch and scalar checks (complex32 among the refused dtypes), the range
factories on the barebones unsigned types, and the order of the 1-d and 2-d pools' argument
checks (forward and backward; the 3-d ones are tests/test_small_parity.py's)."""
import warnings

import pytest

import ember


def _outcome(lib, make):
    """("ok", dtype, shape, values, strides) of ``make(lib)``, or (exception type name, message);
    and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = make(lib)
        except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
            res = (type(e).__name__, str(e))
        else:
            r = r[0] if isinstance(r, tuple) else r
            values = r.tolist() if r.device.type == "cpu" and not r.is_complex() else None
            res = ("ok", str(r.dtype).split(".")[1], tuple(r.shape), values, r.stride())
    # (PyTorch's C++ warnings end with where they were raised: "(Triggered internally at ...)")
    return res, [str(w.message).split(" (Triggered internally")[0] for w in caught]


def _same(torch, make):
    assert _outcome(ember, make) == _outcome(torch, make)


# ---------------------------------------------------------------------------------------------
# addmv's out=: an empty out is resized silently, one of another shape with PyTorch's warning

def _addmv(L, out, n=3, **kw):
    return L.addmv(L.ones(2), L.ones(2, n), L.ones(n), out=out, **kw)


_ADDMV = {
    "empty out": lambda L: _addmv(L, L.empty(0)),
    "empty out, beta 0": lambda L: _addmv(L, L.empty(0), beta=0),
    "empty out, empty product": lambda L: _addmv(L, L.empty(0), n=0, beta=2),
    "empty 2-d out": lambda L: _addmv(L, L.empty(0, 3)),
    "out of another size": lambda L: _addmv(L, L.empty(5)),
    "2-d out": lambda L: _addmv(L, L.empty(2, 1)),
    "strided out": lambda L: _addmv(L, L.empty(4)[::2]),
    "empty out of another dtype": lambda L: _addmv(L, L.empty(0, dtype=L.float64)),
    "empty out, bad shapes": lambda L: L.addmv(L.ones(2), L.ones(2, 3), L.ones(4),
                                               out=L.empty(0)),
    "empty out, half": lambda L: L.addmv(L.ones(2, dtype=L.half), L.ones(2, 3, dtype=L.half),
                                         L.ones(3, dtype=L.half), out=L.empty(0, dtype=L.half)),
    "mv, empty out": lambda L: L.mv(L.ones(2, 3), L.ones(3), out=L.empty(0)),
    "mv, out of another size": lambda L: L.mv(L.ones(2, 3), L.ones(3), out=L.empty(3)),
}


@pytest.mark.parametrize("case", list(_ADDMV))
def test_addmv_out_resize(torch, case):
    _same(torch, _ADDMV[case])


# ---------------------------------------------------------------------------------------------
# addr: ATen's CPU kernel promotes the three tensors, checks beta and alpha against that dtype,
# and dispatches on it ("addr_cpu": no complex32, float8 or barebones unsigned kernel)

def _addr(L, dtype="float32", rows=2, **kw):
    d = getattr(L, dtype)
    return L.addr(L.ones(2, 3, dtype=d), L.ones(rows, dtype=d), L.ones(3, dtype=d), **kw)


_ADDR = {
    "complex32": lambda L: _addr(L, "complex32"),
    "complex32, beta 0": lambda L: _addr(L, "complex32", beta=0),
    "complex32, out=": lambda L: _addr(L, "complex32", out=L.empty(0, dtype=L.complex32)),
    "complex32 in place": lambda L: L.ones(2, 3, dtype=L.complex32).addr_(
        L.ones(2, dtype=L.complex32), L.ones(3, dtype=L.complex32)),
    "complex32 self, float vectors": lambda L: L.addr(L.ones(2, 3, dtype=L.complex32),
                                                      L.ones(2), L.ones(3)),
    "complex32, bad vector": lambda L: _addr(L, "complex32", rows=3),
    "complex32 on meta": lambda L: L.addr(*(L.ones(*s, dtype=L.complex32, device="meta")
                                            for s in ((2, 3), (2,), (3,)))),
    "uint16": lambda L: _addr(L, "uint16"),
    "float8": lambda L: _addr(L, "float8_e5m2"),
    "half": lambda L: _addr(L, "float16", beta=2, alpha=0.5),
    "bool, integer alpha": lambda L: L.addr(L.zeros(2, 3, dtype=L.bool),
                                            L.tensor([True, False]), L.ones(3, dtype=L.bool),
                                            alpha=2),
    "bool, beta False": lambda L: L.addr(L.ones(2, 3, dtype=L.bool), L.tensor([True, False]),
                                         L.ones(3, dtype=L.bool), beta=False),
    "bool, alpha 0": lambda L: L.addr(L.ones(2, 3, dtype=L.bool), L.tensor([True, False]),
                                      L.ones(3, dtype=L.bool), alpha=0),
    "bool, float beta": lambda L: L.addr(L.ones(2, 3, dtype=L.bool), L.tensor([True, False]),
                                         L.ones(3, dtype=L.bool), beta=1.5),
    "int, float beta": lambda L: _addr(L, "int64", beta=0.5),
    "int, scaled": lambda L: _addr(L, "int32", beta=2, alpha=3),
    "float, bool beta": lambda L: _addr(L, beta=True),
    "self not expandable": lambda L: _addr(L, rows=3),
}


@pytest.mark.parametrize("case", list(_ADDR))
def test_addr_dtypes_and_scalars(torch, case):
    _same(torch, _ADDR[case])


# ---------------------------------------------------------------------------------------------
# The range factories' CPU kernels have no barebones unsigned loop; one value or none needs none

_RANGES = {
    "arange uint16": lambda L: L.arange(5, dtype=L.uint16),
    "arange uint32 start": lambda L: L.arange(1, 5, dtype=L.uint32),
    "arange uint64 step": lambda L: L.arange(0, 5, 2, dtype=L.uint64),
    "arange uint16 out=": lambda L: L.arange(5, out=L.empty(0, dtype=L.uint16)),
    "arange uint16 zero step": lambda L: L.arange(0, 5, 0, dtype=L.uint16),
    "arange uint16 empty": lambda L: L.arange(0, dtype=L.uint16),
    "arange uint16 backwards": lambda L: L.arange(5, 1, dtype=L.uint16),
    "linspace uint16": lambda L: L.linspace(0, 3, 4, dtype=L.uint16),
    "linspace uint16 one step": lambda L: L.linspace(0, 3, 1, dtype=L.uint16),
    "linspace uint16 no steps": lambda L: L.linspace(0, 3, 0, dtype=L.uint16),
    "linspace bool one step": lambda L: L.linspace(0, 3, 1, dtype=L.bool),
    "logspace uint64": lambda L: L.logspace(0, 3, 4, dtype=L.uint64),
    "logspace bool one step": lambda L: L.logspace(0, 1, 1, dtype=L.bool),
}


@pytest.mark.parametrize("case", list(_RANGES))
def test_range_factories_on_barebones_unsigned(torch, case):
    _same(torch, _RANGES[case])


def test_arange_uint16_on_meta(torch):
    for lib in (ember, torch):
        r = lib.arange(5, dtype=lib.uint16, device="meta")
        assert tuple(r.shape) == (5,) and r.dtype == lib.uint16


# ---------------------------------------------------------------------------------------------
# The 1-d and 2-d pools check in ATen's order. max_pool2d: the input's dims; avg_pool2d: the
# divisor, then input.size(-3); then each dim's pooling_output_shape checks (H, then W: stride
# zero, pad sign, pad against half the effective kernel), then pool2d_shape_check (kernel,
# stride, dilation signs, 3-d or 4-d input with non-empty non-batch dims, pad against half the
# kernel, output size). avg_pool1d checks the input's dims before its arguments' lengths;
# max_pool1d (its own kernel) its dims and sizes, then its arguments in its own words.

def _ones(lib, *shape, dtype="float32"):
    return lib.ones(*shape, dtype=getattr(lib, dtype))


_POOLS = {
    "avg1d negative kernel, padded": lambda F, L: F.avg_pool1d(_ones(L, 1, 1, 4), -1, padding=1),
    "avg1d negative kernel and pad": lambda F, L: F.avg_pool1d(_ones(L, 1, 1, 4), -1,
                                                               padding=-1),
    "avg1d negative stride": lambda F, L: F.avg_pool1d(_ones(L, 1, 1, 4), 2, stride=-1),
    "avg1d negative stride, small input": lambda F, L: F.avg_pool1d(_ones(L, 1, 1, 2), 3,
                                                                    stride=-1),
    "avg1d big pad": lambda F, L: F.avg_pool1d(_ones(L, 1, 1, 4), 2, padding=2),
    "avg1d 1-d input": lambda F, L: F.avg_pool1d(_ones(L, 2), 3),
    "avg1d 1-d input, two kernel sizes": lambda F, L: F.avg_pool1d(_ones(L, 2), (3, 3)),
    "avg1d empty channels": lambda F, L: F.avg_pool1d(_ones(L, 1, 0, 4), 2),
    "avg1d empty 2-d": lambda F, L: F.avg_pool1d(_ones(L, 0, 4), 2),
    "avg1d empty batch": lambda F, L: F.avg_pool1d(_ones(L, 0, 1, 4), 2),
    "avg1d fits": lambda F, L: F.avg_pool1d(_ones(L, 1, 1, 3), 3, 1, 1, ceil_mode=True),
    "lp1d smaller than kernel": lambda F, L: F.lp_pool1d(_ones(L, 1, 1, 2), 2, 3),
    "max1d smaller than kernel": lambda F, L: F.max_pool1d(_ones(L, 1, 1, 2), 3),
    "max1d big pad": lambda F, L: F.max_pool1d(_ones(L, 1, 1, 4), 2, padding=2),
    "max1d zero dilation, big pad": lambda F, L: F.max_pool1d(_ones(L, 1, 1, 4), 2, dilation=0,
                                                              padding=3),
    "max1d pad over half the kernel, dilated": lambda F, L: F.max_pool1d(
        _ones(L, 1, 1, 9), 2, padding=2, dilation=3),
    "max1d dilated past the input": lambda F, L: F.max_pool1d(_ones(L, 1, 1, 4), 2, dilation=4),
    "max1d 1-d input, negative kernel": lambda F, L: F.max_pool1d(_ones(L, 2), -1),
    "max1d empty 2-d": lambda F, L: F.max_pool1d(_ones(L, 0, 4), 2),
    "max1d empty batch": lambda F, L: F.max_pool1d(_ones(L, 0, 1, 4), 2),
    "max1d negative kernel, zero stride": lambda F, L: F.max_pool1d(_ones(L, 1, 1, 4), -1,
                                                                    stride=0),
    "max1d fits, dilated": lambda F, L: F.max_pool1d(_ones(L, 1, 1, 9), 2, padding=1,
                                                     dilation=3, ceil_mode=True),
    "avg2d negative kernel, padded": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 4, 4), -1,
                                                               padding=1),
    "avg2d negative kernel and pad": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 4, 4), -1,
                                                               padding=-1),
    "avg2d negative kernel in H, padded": lambda F, L: F.avg_pool2d(
        _ones(L, 1, 1, 4, 4), (-1, 2), padding=(1, 0)),
    "avg2d negative stride": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 4, 4), 2, stride=-1),
    "avg2d negative stride, small input": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 2, 2), 3,
                                                                    stride=-1),
    "avg2d H pad before W stride": lambda F, L: F.avg_pool2d(
        _ones(L, 1, 1, 4, 4), 2, stride=(1, 0), padding=(-1, 0)),
    "avg2d H stride before W pad": lambda F, L: F.avg_pool2d(
        _ones(L, 1, 1, 4, 4), 2, stride=(0, 1), padding=(0, -1)),
    "avg2d big pad": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 4, 4), 2, padding=2),
    "avg2d 2-d input, zero divisor": lambda F, L: F.avg_pool2d(_ones(L, 2, 2), 3,
                                                               divisor_override=0),
    "avg2d 2-d input": lambda F, L: F.avg_pool2d(_ones(L, 2, 2), 3),
    "avg2d 5-d input": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 1, 4, 4), 2),
    "avg2d empty channels": lambda F, L: F.avg_pool2d(_ones(L, 1, 0, 4, 4), 2),
    "avg2d empty 3-d": lambda F, L: F.avg_pool2d(_ones(L, 0, 4, 4), 2),
    "avg2d empty batch": lambda F, L: F.avg_pool2d(_ones(L, 0, 1, 4, 4), 2),
    "avg2d zero divisor, small input": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 2, 2), 3,
                                                                 divisor_override=0),
    "avg2d zero divisor, zero stride": lambda F, L: F.avg_pool2d(_ones(L, 1, 1, 4, 4), 2,
                                                                 stride=0, divisor_override=0),
    "max2d negative kernel, padded": lambda F, L: F.max_pool2d(_ones(L, 1, 1, 4, 4), -1,
                                                               padding=1),
    "max2d negative stride": lambda F, L: F.max_pool2d(_ones(L, 1, 1, 4, 4), 2, stride=-1),
    "max2d zero dilation, big pad": lambda F, L: F.max_pool2d(_ones(L, 1, 1, 4, 4), 2,
                                                              dilation=0, padding=3),
    "max2d pad over half the kernel, dilated": lambda F, L: F.max_pool2d(
        _ones(L, 1, 1, 9, 9), 2, padding=2, dilation=3),
    "max2d pad over half the kernel in W, dilated": lambda F, L: F.max_pool2d(
        _ones(L, 1, 1, 9, 9), 2, padding=(0, 2), dilation=3),
    "max2d 2-d input, negative kernel": lambda F, L: F.max_pool2d(_ones(L, 2, 2), -1),
    "max2d empty 3-d": lambda F, L: F.max_pool2d(_ones(L, 0, 4, 4), 2),
    "max2d empty channels, negative kernel": lambda F, L: F.max_pool2d(_ones(L, 1, 0, 4, 4), -1),
    "max2d empty batch": lambda F, L: F.max_pool2d(_ones(L, 0, 1, 4, 4), 2),
    "max2d fits, dilated": lambda F, L: F.max_pool2d(_ones(L, 1, 1, 9, 9), 2, padding=1,
                                                     dilation=3, ceil_mode=True),
}


def _max2d_backward(L, grad, indices, kernel=(2, 2), input_shape=(1, 1, 2, 2)):
    return L.ops.aten.max_pool2d_with_indices_backward(
        _ones(L, *grad), _ones(L, *input_shape), list(kernel), [2, 2], [0, 0], [1, 1], False,
        L.zeros(*indices, dtype=L.long))


_POOL_BACKWARD = {
    "max2d grad of another height": lambda F, L: _max2d_backward(L, (1, 1, 2, 1), (1, 1, 1, 1)),
    "max2d indices of another height": lambda F, L: _max2d_backward(L, (1, 1, 1, 1),
                                                                    (1, 1, 2, 1)),
    "max2d 5-d indices": lambda F, L: _max2d_backward(L, (1, 1, 1, 1), (1, 1, 1, 1, 1)),
    "max2d grad of another batch": lambda F, L: _max2d_backward(L, (2, 1, 1, 1), (1, 1, 1, 1)),
    "max2d 3-d input, indices of other planes": lambda F, L: _max2d_backward(
        L, (1, 1, 1), (2, 1, 1), input_shape=(1, 2, 2)),
    "max2d empty input": lambda F, L: _max2d_backward(L, (1, 1, 1, 1), (1, 1, 1, 1),
                                                      input_shape=(1, 0, 2, 2)),
    "max2d negative kernel, bad grad": lambda F, L: _max2d_backward(L, (1, 1, 2, 1), (1, 1, 1, 1),
                                                                    kernel=(-1, 2)),
    "avg2d grad of another height": lambda F, L: L.ops.aten.avg_pool2d_backward(
        _ones(L, 1, 1, 2, 1), _ones(L, 1, 1, 2, 2), [2, 2], [2, 2], [0, 0], False, True, None),
    "max3d indices of another height": lambda F, L: L.ops.aten.max_pool3d_with_indices_backward(
        _ones(L, 1, 1, 1, 1, 1), _ones(L, 1, 1, 2, 2, 2), [2, 2, 2], [2, 2, 2], [0, 0, 0],
        [1, 1, 1], False, L.zeros(1, 1, 1, 2, 1, dtype=L.long)),
    "avg3d grad of other planes": lambda F, L: L.ops.aten.avg_pool3d_backward(
        _ones(L, 1, 2, 1, 1, 1), _ones(L, 1, 1, 2, 2, 2), [2, 2, 2], [2, 2, 2], [0, 0, 0], False,
        True, None),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("case", list(_POOLS) + list(_POOL_BACKWARD))
def test_pool1d_pool2d_checks_in_atens_order(torch, case, device):
    """The Meta kernels share the rule, so they answer as the CPU ones (PyTorch's CPU here)."""
    make = _POOLS.get(case) or _POOL_BACKWARD[case]

    def run(lib):
        if device == "meta" and lib is ember:
            with ember.device("meta"):
                return make(lib.nn.functional, lib)
        return make(lib.nn.functional, lib)

    want, _ = _outcome(torch, run)
    got, _ = _outcome(ember, run)
    if device == "meta" and want[0] == "ok":
        want, got = want[:3], got[:3]  # (no values on the meta device)
    assert got == want


# ---------------------------------------------------------------------------------------------
# addbmm on 16- and 8-bit floats: ATen adds one batch's product at a time into the result, which
# is rounded to its dtype each time (a single rounding of the whole sum differs by whole steps)

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("beta", [0.5, 0])
def test_addbmm_rounds_per_batch(torch, dtype, beta):
    g = torch.Generator().manual_seed(1)
    s, b1, b2 = (torch.randn(*shape, generator=g) * 3 for shape in ((3, 5), (4, 3, 6), (4, 6, 5)))

    def make(L):
        dt = getattr(L, dtype)
        args = [L.tensor(x.numpy()).to(dt) for x in (s, b1, b2)]
        return L.addbmm(*args, beta=beta, alpha=1.5).float()
    _same(torch, make)


# ---------------------------------------------------------------------------------------------
# complex -> bool is c10's ``real || imag``: a purely imaginary value is True

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_to_bool_reads_both_parts(torch, dtype):
    def make(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the discarded-imaginary warning, once in PyTorch)
            return L.tensor([0.5 + 0j, 0.5j, 0j, -0j], dtype=getattr(L, dtype)).to(L.bool)
    assert _outcome(ember, make)[0] == _outcome(torch, make)[0]

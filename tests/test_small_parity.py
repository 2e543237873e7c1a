"""Small mismatches with PyTorch found by sweeps, each checked beside PyTorch: the layout of
dropout's results, the index dtypes embedding_bag takes, empty complex32 matrix products, and
the order of the 3-d pools' argument checks."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF


def _pair(torch, make):
    """``make(lib)`` for ember and PyTorch (the same values: both from NumPy)."""
    return make(ember), make(torch)


def _raises_same(torch, call):
    """``call(lib)`` raises the same exception type and message in ember and PyTorch."""
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(Exception) as got:
        call(ember)
    assert type(got.value).__name__ == type(want.value).__name__, (got.value, want.value)
    assert str(got.value) == str(want.value)


# ---------------------------------------------------------------------------------------------
# native_dropout and F.dropout keep the input's layout (ATen's mask is empty_like(input))

_BASE = np.random.RandomState(0).randn(2 * 3 * 4 * 5).astype(np.float32)

_LAYOUTS = {
    "transposed": lambda t: t[:24].reshape(4, 6).t(),
    "channels_last": lambda t: t.reshape(2, 3, 4, 5).permute(0, 2, 3, 1),
    "non_dense": lambda t: t[:24].reshape(4, 6)[:, ::2],
    "non_dense_transposed": lambda t: t[:24].reshape(4, 6)[:, ::2].t(),
    "expanded": lambda t: t[:3].reshape(3, 1).expand(3, 4),
    "size_one_dims": lambda t: t[:6].reshape(1, 6, 1).transpose(0, 1),
    "negative_free_slice": lambda t: t.reshape(2, 3, 4, 5)[:, 1:, ::2].transpose(1, 3),
    "contiguous": lambda t: t[:24].reshape(4, 6),
    "scalar": lambda t: t[0],
    "empty_transposed": lambda t: t[:0].reshape(0, 3).t(),
}


def _layout(lib, name, dtype="float32", device="cpu"):
    base = lib.tensor(_BASE, device=device).to(getattr(lib, dtype))
    return _LAYOUTS[name](base)


@pytest.mark.parametrize("name", list(_LAYOUTS))
@pytest.mark.parametrize("p,train", [(0.3, True), (0.0, True), (1.0, True), (0.3, False),
                                     (0.5, None)])
def test_native_dropout_keeps_the_input_layout(torch, name, p, train):
    x, tx = _layout(ember, name), _layout(torch, name)
    ember.manual_seed(7)
    torch.manual_seed(7)
    out, mask = ember.native_dropout(x, p, train)
    tout, tmask = torch.native_dropout(tx, p, train)
    assert out.stride() == tout.stride() and out.shape == tout.shape
    assert mask.stride() == tmask.stride()
    if tx.numel():  # (PyTorch's CPU mask of an empty input has the input's dtype, its Meta's bool)
        assert mask.dtype == ember.bool and tmask.dtype == torch.bool
        np.testing.assert_array_equal(mask.numpy(), tmask.numpy())
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    # the Meta kernel lays its results out as the CPU one does
    m_out, m_mask = ember.native_dropout(x.to("meta"), p, train)
    assert (m_out.stride(), m_mask.stride()) == (out.stride(), tmask.stride())


@pytest.mark.parametrize("name", list(_LAYOUTS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_dropout_keeps_the_input_layout(torch, name, dtype):
    x, tx = _layout(ember, name, dtype), _layout(torch, name, dtype)
    ember.manual_seed(3)
    torch.manual_seed(3)
    y, ty = EF.dropout(x, 0.4, True), torch.nn.functional.dropout(tx, 0.4, True)
    assert y.stride() == ty.stride()
    np.testing.assert_array_equal(y.float().numpy(), ty.float().numpy())
    out, mask = ember.native_dropout(x, 0.4, True)
    tout, tmask = torch.native_dropout(tx, 0.4, True)
    assert (out.stride(), mask.stride()) == (tout.stride(), tmask.stride())
    assert out.dtype == x.dtype


def test_device_dropout_keeps_the_input_layout(cuda_device, torch):
    """ATen's dropout_cuda makes its mask and output both empty_like(input) (the CPU kernel's
    output follows TensorIterator instead): PyTorch's CPU mask is that layout (its CUDA is not
    installed here)."""
    for name in _LAYOUTS:
        for dtype in ("float32", "float16"):
            x = _layout(ember, name, dtype, "cuda")
            tmask = torch.native_dropout(_layout(torch, name, dtype), 0.4, True)[1]
            out, mask = ember.native_dropout(x, 0.4, True)
            assert (out.stride(), mask.stride()) == (tmask.stride(), tmask.stride()), name
            if x.numel():
                kept = mask.cpu().numpy()
                want = (x.float().cpu().numpy() * kept / 0.6).astype(out.cpu().numpy().dtype)
                np.testing.assert_allclose(out.float().cpu().numpy(), want.astype(np.float32),
                                           rtol=1e-3)
            assert EF.dropout(x, 0.4, True).stride() == tmask.stride(), name


# ---------------------------------------------------------------------------------------------
# embedding_bag promotes indices and offsets to one dtype before its checks (ATen's
# promoteIndicesAndOffsets): bool/uint8/int8/int16 indices with int32/int64 offsets are taken

_INDEX_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float16",
                 "uint16", "complex64"]
_OFFSET_DTYPES = ["bool", "uint8", "int16", "int32", "int64", "float32"]
_WEIGHT = np.random.RandomState(1).randn(10, 3).astype(np.float32)


def _bag_args(lib, index_dtype, offset_dtype):
    indices = lib.tensor([1, 0, 1, 1, 0, 1]).to(getattr(lib, index_dtype))
    offsets = lib.tensor([0, 2, 5]).to(getattr(lib, offset_dtype))
    return indices, offsets


def _same_results(got, want):
    for g, w in zip(got, want):
        assert g.dtype.is_floating_point == w.dtype.is_floating_point
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("index_dtype", _INDEX_DTYPES)
@pytest.mark.parametrize("offset_dtype", _OFFSET_DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_index_dtypes(torch, index_dtype, offset_dtype, mode):
    def run(lib):
        indices, offsets = _bag_args(lib, index_dtype, offset_dtype)
        weight = lib.tensor(_WEIGHT, requires_grad=True)
        out = lib.nn.functional.embedding_bag(indices, weight, offsets, mode=mode)
        out.sum().backward()
        return out, weight.grad

    try:
        want = run(torch)
    except Exception:  # noqa: BLE001  (PyTorch refuses: ember must refuse alike)
        _raises_same(torch, run)
        return
    _same_results(run(ember), want)


@pytest.mark.parametrize("index_dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("offset_dtype", ["int32", "int64"])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_aten_embedding_bag_results_have_the_promoted_index_dtype(torch, index_dtype,
                                                                  offset_dtype, mode):
    """All four results of the op (offset2bag, bag_size, max_indices in the common dtype)."""
    def run(lib):
        indices, offsets = _bag_args(lib, index_dtype, offset_dtype)
        return lib.embedding_bag(lib.tensor(_WEIGHT), indices, offsets, False, mode)
    _same_results(run(ember), run(torch))


@pytest.mark.parametrize("index_dtype", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                         "float32", "complex64"])
def test_embedding_bag_2d_input_index_dtypes(torch, index_dtype):
    """A 2-D input's offsets are an arange of its dtype: arange refuses bool and complex, the
    promoted small integers fail the check. (uint16/32/64 are not here: ember's arange takes
    them where PyTorch's CPU arange does not.)"""
    def run(lib):
        indices = lib.tensor([[1, 0], [1, 1]]).to(getattr(lib, index_dtype))
        return (lib.nn.functional.embedding_bag(indices, lib.tensor(_WEIGHT)),)
    try:
        want = run(torch)
    except Exception:  # noqa: BLE001  (PyTorch refuses: ember must refuse alike)
        _raises_same(torch, run)
        return
    _same_results(run(ember), want)


# ---------------------------------------------------------------------------------------------
# ComplexHalf products with nothing to multiply (an empty result or an empty summed dim) return
# before ATen's dtype dispatch: zeros, or self scaled by beta; the others name the CPU kernel
# that has no ComplexHalf version

def _chalf(lib, *shape, fill=True):
    n = int(np.prod(shape))
    if not fill:
        return lib.zeros(*shape, dtype=lib.chalf)
    values = (np.arange(n, dtype=np.float32).reshape(shape) * (0.3 + 0.7j) + 0.1j)
    return lib.tensor(values.astype(np.complex64)).to(lib.chalf)


def _z(lib, *shape):
    return _chalf(lib, *shape, fill=False)


# Not here, known differences of other causes: addmv with nothing to multiply and a smaller
# self (ATen's mul_out resizes the result to self's shape, any dtype), ComplexHalf addr (ATen
# has no kernel, ember computes it), and Meta products of non-empty ComplexHalf operands (ATen's
# Meta kernels do not refuse the dtype; ember's apply the CPU checks).
_CHALF_PRODUCTS = {
    "mm 0x3 @ 3x4": lambda L: L.mm(_z(L, 0, 3), _z(L, 3, 4)),
    "mm 2x0 @ 0x4": lambda L: L.mm(_z(L, 2, 0), _z(L, 0, 4)),
    "mm 2x3 @ 3x0": lambda L: L.mm(_z(L, 2, 3), _z(L, 3, 0)),
    "mm 2x3 @ 3x4": lambda L: L.mm(_z(L, 2, 3), _z(L, 3, 4)),
    "mm transposed": lambda L: L.mm(_z(L, 0, 2).t(), _z(L, 0, 4)),
    "mm mixed dtypes": lambda L: L.mm(_z(L, 2, 0), L.zeros(0, 4, dtype=L.cfloat)),
    "mm out": lambda L: L.mm(_z(L, 2, 0), _z(L, 0, 4), out=_chalf(L, 2, 4)),
    "matmul 2x0 @ 0x4": lambda L: L.matmul(_z(L, 2, 0), _z(L, 0, 4)),
    "matmul 0x3 @ 3x4": lambda L: L.matmul(_z(L, 0, 3), _z(L, 3, 4)),
    "matmul 2x3 @ 3x4": lambda L: L.matmul(_z(L, 2, 3), _z(L, 3, 4)),
    "matmul vectors": lambda L: L.matmul(_z(L, 0), _z(L, 0)),
    "matmul 2x0 @ 0": lambda L: L.matmul(_z(L, 2, 0), _z(L, 0)),
    "matmul 2x3 @ 3": lambda L: L.matmul(_z(L, 2, 3), _z(L, 3)),
    "matmul 2x2x0 @ 0x4": lambda L: L.matmul(_z(L, 2, 2, 0), _z(L, 0, 4)),
    "matmul 2x2x3 @ 3x4": lambda L: L.matmul(_z(L, 2, 2, 3), _z(L, 3, 4)),
    "matmul 0x2x3 @ 0x3x4": lambda L: L.matmul(_z(L, 0, 2, 3), _z(L, 0, 3, 4)),
    "matmul 2x2x0 @ 2x0x4": lambda L: L.matmul(_z(L, 2, 2, 0), _z(L, 2, 0, 4)),
    "bmm k=0": lambda L: L.bmm(_z(L, 2, 3, 0), _z(L, 2, 0, 4)),
    "bmm no batches": lambda L: L.bmm(_z(L, 0, 3, 2), _z(L, 0, 2, 4)),
    "bmm n=0": lambda L: L.bmm(_z(L, 2, 0, 3), _z(L, 2, 3, 4)),
    "bmm p=0": lambda L: L.bmm(_z(L, 2, 3, 3), _z(L, 2, 3, 0)),
    "bmm": lambda L: L.bmm(_z(L, 2, 3, 2), _z(L, 2, 2, 4)),
    "mv 2x0": lambda L: L.mv(_z(L, 2, 0), _z(L, 0)),
    "mv 0x3": lambda L: L.mv(_z(L, 0, 3), _z(L, 3)),
    "mv": lambda L: L.mv(_z(L, 2, 3), _z(L, 3)),
    "dot empty": lambda L: L.dot(_z(L, 0), _z(L, 0)),
    "vdot empty": lambda L: L.vdot(_z(L, 0), _z(L, 0)),
    "addmm k=0 beta=2": lambda L: L.addmm(_chalf(L, 2, 4), _z(L, 2, 0), _z(L, 0, 4), beta=2,
                                          alpha=3),
    "addmm k=0": lambda L: L.addmm(_chalf(L, 2, 4), _z(L, 2, 0), _z(L, 0, 4)),
    "addmm k=0 beta=0 ignores nan": lambda L: L.addmm(_chalf(L, 2, 4) * float("nan"),
                                                      _z(L, 2, 0), _z(L, 0, 4), beta=0),
    "addmm k=0 broadcast complex beta": lambda L: L.addmm(_chalf(L, 4), _z(L, 2, 0),
                                                          _z(L, 0, 4), beta=1.5 + 0.5j),
    "addmm n=0": lambda L: L.addmm(_chalf(L, 0, 4), _z(L, 0, 3), _z(L, 3, 4)),
    "addmm": lambda L: L.addmm(_chalf(L, 2, 4), _z(L, 2, 3), _z(L, 3, 4)),
    "addmm_ k=0": lambda L: _chalf(L, 2, 4).addmm_(_z(L, 2, 0), _z(L, 0, 4), beta=2),
    "baddbmm k=0": lambda L: L.baddbmm(_chalf(L, 2, 3, 4), _z(L, 2, 3, 0), _z(L, 2, 0, 4),
                                       beta=2, alpha=3),
    "baddbmm k=0 broadcast": lambda L: L.baddbmm(_chalf(L, 4), _z(L, 2, 3, 0), _z(L, 2, 0, 4),
                                                 beta=0.5),
    "baddbmm no batches": lambda L: L.baddbmm(_z(L, 0, 3, 4), _z(L, 0, 3, 2), _z(L, 0, 2, 4)),
    "baddbmm": lambda L: L.baddbmm(_chalf(L, 2, 3, 4), _z(L, 2, 3, 2), _z(L, 2, 2, 4)),
    "baddbmm_ k=0": lambda L: _chalf(L, 2, 3, 4).baddbmm_(_z(L, 2, 3, 0), _z(L, 2, 0, 4),
                                                          beta=2),
    "addbmm k=0": lambda L: L.addbmm(_chalf(L, 3, 4), _z(L, 2, 3, 0), _z(L, 2, 0, 4), beta=2,
                                     alpha=3),
    "addbmm no batches": lambda L: L.addbmm(_chalf(L, 3, 4), _z(L, 0, 3, 2), _z(L, 0, 2, 4),
                                            beta=2),
    "addbmm no batches beta=0": lambda L: L.addbmm(_chalf(L, 3, 4), _z(L, 0, 3, 2),
                                                   _z(L, 0, 2, 4), beta=0),
    "addbmm": lambda L: L.addbmm(_chalf(L, 3, 4), _z(L, 2, 3, 2), _z(L, 2, 2, 4)),
    "addmv k=0": lambda L: L.addmv(_chalf(L, 2), _z(L, 2, 0), _z(L, 0), beta=2),
    "addmv n=0": lambda L: L.addmv(_z(L, 0), _z(L, 0, 3), _z(L, 3)),
    "addmv": lambda L: L.addmv(_chalf(L, 2), _z(L, 2, 3), _z(L, 3)),
    "addmv_ k=0": lambda L: _chalf(L, 2).addmv_(_z(L, 2, 0), _z(L, 0), beta=2),
    "linear k=0": lambda L: L.nn.functional.linear(_z(L, 2, 0), _z(L, 4, 0), _chalf(L, 4)),
    "linear k=0 no bias": lambda L: L.nn.functional.linear(_z(L, 2, 0), _z(L, 4, 0)),
    "tensordot k=0": lambda L: L.tensordot(_z(L, 2, 0), _z(L, 0, 3), dims=1),
    "einsum k=0": lambda L: L.einsum("ij,jk->ik", _z(L, 2, 0), _z(L, 0, 3)),
    "matmul 2x0 @ 0x4 meta": lambda L: L.matmul(_z(L, 2, 0).to("meta"), _z(L, 0, 4).to("meta")),
}


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("case", list(_CHALF_PRODUCTS))
def test_complex_half_products(torch, case):
    make = _CHALF_PRODUCTS[case]
    try:
        want = make(torch)
    except Exception:  # noqa: BLE001  (PyTorch refuses: ember must refuse alike)
        _raises_same(torch, make)
        return
    got = make(ember)
    assert str(got.dtype) == "ember.complex32" and tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride()
    if want.device.type == "cpu":
        np.testing.assert_array_equal(got.to(ember.complex64).numpy(),
                                      want.to(torch.complex64).numpy())


def test_matmul_folds_an_empty_batch_into_rows(torch):
    """ATen's matmul folds a 3-d+ self into (rows, k) with the row count spelled out: -1 would
    be ambiguous for an empty self (k == 0)."""
    for dtype in ("float32", "complex64"):
        e, t = (lib.matmul(lib.zeros(2, 3, 0, dtype=getattr(lib, dtype)),
                           lib.ones(0, 4, dtype=getattr(lib, dtype))) for lib in (ember, torch))
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        assert not e.any().item()
        e, t = (lib.matmul(lib.zeros(2, 3, 0), lib.ones(0)) for lib in (ember, torch))
        assert tuple(e.shape) == tuple(t.shape) == (2, 3)


# ---------------------------------------------------------------------------------------------
# The 3-d pools check in ATen's order: input dims, (avg) divisor, each dim's
# pooling_output_shape checks, then pool3d_shape_check (signs, empty dims, (avg) input smaller
# than the kernel, pad against half the kernel, output size)

def _ones(lib, *shape, dtype="float32"):
    return lib.ones(*shape, dtype=getattr(lib, dtype))


_POOL3D = {
    "avg smaller than kernel": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2), 3),
    "avg smaller in T": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 5, 5), 3),
    "avg smaller in W": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 5, 5, 2), 3),
    "avg smaller, padded": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2), 3, 1, 1),
    "avg smaller, ceil_mode": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2), 3,
                                                        ceil_mode=True),
    "avg smaller, 4-d": lambda F, L: F.avg_pool3d(_ones(L, 1, 2, 2, 2), 3),
    "avg smaller, int": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2, dtype="int32"), 3),
    "avg smaller, half": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2, dtype="float16"), 3),
    "avg negative kernel": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), -1),
    "avg negative kernel, int": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4, dtype="int32"),
                                                          -1),
    "avg negative kernel, padded": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), -1,
                                                             padding=1),
    "avg negative kernel and pad": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), -1,
                                                             padding=-1),
    "avg negative kernel, zero stride": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), -1,
                                                                  stride=0),
    "avg negative kernel, negative stride": lambda F, L: F.avg_pool3d(
        _ones(L, 1, 1, 4, 4, 4), -1, stride=-1),
    "avg negative kernel in H": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), (2, -1, 2)),
    "avg negative kernel in H, padded": lambda F, L: F.avg_pool3d(
        _ones(L, 1, 1, 4, 4, 4), (2, -1, 2), padding=(0, 1, 0)),
    "avg zero kernel": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 0),
    "avg zero kernel, padded": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 0, padding=1),
    "avg negative stride": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, stride=-1),
    "avg negative stride, big pad": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2,
                                                              stride=-1, padding=2),
    "avg negative stride, small input": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2), 3,
                                                                  stride=-1),
    "avg zero stride": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, stride=0),
    "avg per dim: H stride before W pad": lambda F, L: F.avg_pool3d(
        _ones(L, 1, 1, 4, 4, 4), 2, stride=(1, 0, 1), padding=(0, 0, -1)),
    "avg per dim: H pad before W stride": lambda F, L: F.avg_pool3d(
        _ones(L, 1, 1, 4, 4, 4), 2, stride=(1, 1, 0), padding=(0, -1, 0)),
    "avg big pad": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, padding=2),
    "avg big pad, small input": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 1, 1, 1), 2, padding=2),
    "avg negative pad": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, padding=-1),
    "avg 3-d input": lambda F, L: F.avg_pool3d(_ones(L, 2, 2, 2), 3),
    "avg 3-d input, negative kernel": lambda F, L: F.avg_pool3d(_ones(L, 2, 2, 2), -1),
    "avg 3-d input, zero divisor": lambda F, L: F.avg_pool3d(_ones(L, 2, 2, 2), 3,
                                                             divisor_override=0),
    "avg empty spatial dim": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 0, 4, 4), 2),
    "avg empty channels": lambda F, L: F.avg_pool3d(_ones(L, 1, 0, 4, 4, 4), 2),
    "avg empty 4-d": lambda F, L: F.avg_pool3d(_ones(L, 0, 4, 4, 4), 2),
    "avg empty batch": lambda F, L: F.avg_pool3d(_ones(L, 0, 1, 4, 4, 4), 2),
    "avg zero divisor": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, divisor_override=0),
    "avg zero divisor, small input": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 2, 2, 2), 3,
                                                               divisor_override=0),
    "avg zero divisor, zero stride": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 4, 4, 4), 2,
                                                               stride=0, divisor_override=0),
    "avg zero divisor, empty dim": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 0, 4, 4), 2,
                                                             divisor_override=0),
    "avg fits": lambda F, L: F.avg_pool3d(_ones(L, 1, 1, 3, 3, 3), 3, 1, 1, ceil_mode=True),
    "avg backward, smaller than kernel": lambda F, L: L.ops.aten.avg_pool3d_backward(
        _ones(L, 1, 1, 1, 1, 1), _ones(L, 1, 1, 2, 2, 2), [3, 3, 3], [3, 3, 3], [0, 0, 0],
        False, True, None),
    "avg backward, empty dim": lambda F, L: L.ops.aten.avg_pool3d_backward(
        _ones(L, 1, 1, 1, 1, 1), _ones(L, 1, 1, 0, 2, 2), [2, 2, 2], [2, 2, 2], [0, 0, 0], False,
        True, None),
    "max backward, empty dim": lambda F, L: L.ops.aten.max_pool3d_with_indices_backward(
        _ones(L, 1, 1, 1, 1, 1), _ones(L, 1, 1, 0, 2, 2), [2, 2, 2], [2, 2, 2], [0, 0, 0],
        [1, 1, 1], False, L.zeros(1, 1, 1, 1, 1, dtype=L.long)),
    "max backward, negative kernel": lambda F, L: L.ops.aten.max_pool3d_with_indices_backward(
        _ones(L, 1, 1, 1, 1, 1), _ones(L, 1, 1, 2, 2, 2), [-1, 2, 2], [2, 2, 2], [0, 0, 0],
        [1, 1, 1], False, L.zeros(1, 1, 1, 1, 1, dtype=L.long)),
    "lp smaller than kernel": lambda F, L: F.lp_pool3d(_ones(L, 1, 1, 2, 2, 2), 2, 3),
    "lp negative kernel": lambda F, L: F.lp_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, -1),
    "max smaller than kernel": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 2, 2, 2), 3),
    "max smaller, int": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 2, 2, 2, dtype="int32"), 3),
    "max negative kernel": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), -1),
    "max negative kernel, padded": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), -1,
                                                             padding=1),
    "max negative kernel and pad": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), -1,
                                                             padding=-1),
    "max negative kernel, zero dilation": lambda F, L: F.max_pool3d(
        _ones(L, 1, 1, 4, 4, 4), -1, dilation=0),
    "max negative kernel, zero stride": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), -1,
                                                                  stride=0),
    "max zero kernel": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 0),
    "max negative stride": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, stride=-1),
    "max zero stride": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, stride=0),
    "max big pad": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, padding=2),
    "max negative pad": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, padding=-1),
    "max zero dilation": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, dilation=0),
    "max negative dilation": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2, dilation=-1),
    "max zero dilation, big pad": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2,
                                                            dilation=0, padding=3),
    "max pad over half the kernel, dilated": lambda F, L: F.max_pool3d(
        _ones(L, 1, 1, 9, 9, 9), 2, padding=2, dilation=3),
    "max pad over half the kernel in W, dilated": lambda F, L: F.max_pool3d(
        _ones(L, 1, 1, 9, 9, 9), 2, padding=(0, 0, 2), dilation=3),
    "max dilated past the input": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 4, 4, 4), 2,
                                                            dilation=4),
    "max 3-d input": lambda F, L: F.max_pool3d(_ones(L, 2, 2, 2), 3),
    "max 3-d input, negative kernel": lambda F, L: F.max_pool3d(_ones(L, 2, 2, 2), -1),
    "max empty spatial dim": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 0, 4, 4), 2),
    "max empty 4-d": lambda F, L: F.max_pool3d(_ones(L, 0, 4, 4, 4), 2),
    "max empty batch": lambda F, L: F.max_pool3d(_ones(L, 0, 1, 4, 4, 4), 2),
    "max fits, dilated": lambda F, L: F.max_pool3d(_ones(L, 1, 1, 9, 9, 9), 2, padding=1,
                                                   dilation=3, ceil_mode=True),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("case", list(_POOL3D))
def test_pool3d_checks_in_atens_order(torch, case, device):
    """The Meta kernels share the rule, so they answer as the CPU ones (PyTorch's CPU here)."""
    make = _POOL3D[case]

    def run(lib):
        if device == "meta" and lib is ember:
            with ember.device("meta"):
                return make(lib.nn.functional, lib)
        return make(lib.nn.functional, lib)

    try:
        want = run(torch)
    except Exception:  # noqa: BLE001  (PyTorch refuses: ember must refuse alike)
        with pytest.raises(Exception) as want_info:
            run(torch)
        with pytest.raises(Exception) as got_info:
            run(ember)
        assert type(got_info.value).__name__ == type(want_info.value).__name__
        assert str(got_info.value) == str(want_info.value)
        return
    got = run(ember)
    assert tuple(got.shape) == tuple(want.shape)


# ---------------------------------------------------------------------------------------------
# explain's graph_break_count is PyTorch's graph_count - 1 (-1 with no graph), not the number
# of breaks made: a break before any op, or one leaving nothing after it, makes no graph

def _explain_programs(lib):
    def no_break(x):
        return x.sin().cos()

    def one_break(x):
        x = x.sin()
        print("break")
        return x.cos()

    def two_breaks(x):
        x = x.sin()
        print("first")
        x = x.cos()
        print("second")
        return x.exp()

    def only_a_break(x):
        print("break")
        return x

    def break_before_the_ops(x):
        print("break")
        return x.sin()

    def break_after_the_ops(x):
        y = x.sin()
        print("break")
        return y

    def no_ops(x):
        return x

    def explicit_break_first(x):
        lib._dynamo.graph_break()
        return x + 1

    def two_breaks_before_the_ops(x):
        print("first")
        print("second")
        return x + 1
    return [no_break, one_break, two_breaks, only_a_break, break_before_the_ops,
            break_after_the_ops, no_ops, explicit_break_first, two_breaks_before_the_ops]


@pytest.mark.parametrize("index", range(9))
def test_explain_counts_graph_breaks_as_pytorch(torch, index, capsys):
    counts = []
    for lib in (ember, torch):
        lib._dynamo.reset()
        e = lib._dynamo.explain(_explain_programs(lib)[index])(lib.ones(3))
        lib._dynamo.reset()
        counts.append((e.graph_count, e.graph_break_count))
    assert counts[0] == counts[1]
    assert counts[0][1] == counts[0][0] - 1

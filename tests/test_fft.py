"""ember.fft beyond the OpInfo table (tests/opinfo_fft.py): the module's surface, fftfreq and
rfftfreq (factories), gradients of the transforms against PyTorch's (float64) and gradcheck,
round trips, and printing of complex results."""
import numpy as np
import pytest

import ember
from helpers import assert_same, to_np, to_torch

_rng = np.random.default_rng(5)

FUNCS = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
         "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
         "rfftfreq", "fftshift", "ifftshift"]


def test_module_surface(torch):
    assert sorted(ember.fft.__all__) == sorted(FUNCS)
    assert set(FUNCS) <= set(dir(torch.fft))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_freq(torch, name):
    e_fn, t_fn = getattr(ember.fft, name), getattr(torch.fft, name)
    for n in (0, 1, 4, 5, 8):
        for d in (1.0, 0.5, 3):
            assert_same(e_fn(n, d), t_fn(n, d))
    for dt in ("float64", "float16", "bfloat16"):
        assert_same(e_fn(6, dtype=getattr(ember, dt)), t_fn(6, dtype=getattr(torch, dt)),
                    rtol=1e-2)
    assert e_fn(4, device="meta").device.type == "meta"
    assert e_fn(4, requires_grad=True).requires_grad
    out, t_out = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
    assert e_fn(5, 2.0, out=out) is out
    assert_same(out, t_fn(5, 2.0, out=t_out))
    for n in (-1, -3):  # rfftfreq: C++'s n / 2 + 1 leaves one bin for n = -1
        try:
            t = t_fn(n)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                e_fn(n)
        else:
            assert_same(e_fn(n), t)
    for bad in (
                lambda L: getattr(L.fft, name)(4, dtype=L.int64),
                lambda L: getattr(L.fft, name)(4, dtype=L.complex64),
                lambda L: getattr(L.fft, name)(4, out=L.zeros(3, dtype=L.int32))):
        with pytest.raises(Exception) as te:
            bad(torch)
        with pytest.raises(type(te.value)):
            bad(ember)


def test_ihfftn_one_dim_out(torch):
    # torch's out= path is broken for this case (its result is left unwritten), so compare the
    # functional result and check out= against it
    x = ember.tensor(_rng.standard_normal((3, 6)))
    r = ember.fft.ihfftn(x, dim=[1])
    assert_same(r, torch.fft.ihfftn(to_torch(torch, x), dim=[1]).resolve_conj(), rtol=1e-9)
    out = ember.empty(0, dtype=ember.complex128)
    ember.fft.ihfftn(x, dim=[1], out=out)
    np.testing.assert_allclose(to_np(out), to_np(r))


def test_round_trips():
    x = ember.tensor(_rng.standard_normal((4, 7)))
    np.testing.assert_allclose(to_np(ember.fft.irfft(ember.fft.rfft(x), n=7)), to_np(x), atol=1e-12)
    np.testing.assert_allclose(to_np(ember.fft.ifftn(ember.fft.fftn(x)).real), to_np(x),
                               atol=1e-12)
    np.testing.assert_allclose(to_np(ember.fft.ifftshift(ember.fft.fftshift(x))), to_np(x))
    np.testing.assert_allclose(to_np(ember.fft.hfft(ember.fft.ihfft(x), n=7)), to_np(x),
                               atol=1e-12)


def test_complex_results_print_and_compute(torch):
    e = ember.fft.fft(ember.tensor([1.0, 2.0, 3.0, 4.0]))
    t = torch.fft.fft(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert str(e) == str(t)
    assert_same(e * 2 + e.conj(), t * 2 + t.conj())
    assert_same(e.abs(), t.abs())
    assert_same(ember.view_as_real(e), torch.view_as_real(t))


# -- gradients -----------------------------------------------------------------------------------

def _real_input(shape):
    return _rng.standard_normal(shape)


def _complex_input(shape):
    return _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)


GRAD_CASES = [  # (name, input maker, kwargs)
    ("fft", _real_input, {}), ("fft", _complex_input, {"n": 5, "norm": "ortho"}),
    ("ifft", _complex_input, {"dim": 0}), ("ifft", _real_input, {"norm": "forward"}),
    ("rfft", _real_input, {}), ("rfft", _real_input, {"n": 8, "norm": "ortho"}),
    ("irfft", _complex_input, {}), ("irfft", _complex_input, {"n": 7, "norm": "forward"}),
    ("hfft", _complex_input, {}), ("ihfft", _real_input, {"norm": "ortho"}),
    ("fft2", _complex_input, {}), ("rfft2", _real_input, {"s": (3, 5)}),
    ("irfft2", _complex_input, {}), ("fftn", _real_input, {"dim": (0, 1)}),
    ("rfftn", _real_input, {"norm": "forward"}), ("irfftn", _complex_input, {"s": (4, 9)}),
    ("hfftn", _complex_input, {}), ("ihfftn", _real_input, {}),
    ("fftshift", _real_input, {}), ("ifftshift", _complex_input, {"dim": 1}),
]


def _loss(L, y):
    """A real loss touching the real and imaginary parts with different weights."""
    if y.is_complex():
        r = L.view_as_real(y.resolve_conj())
        w = L.arange(r.numel(), dtype=r.dtype).reshape(r.shape) / 7
        return (r * w).sum()
    w = L.arange(y.numel(), dtype=y.dtype).reshape(y.shape) / 7
    return (y * w).sum()


@pytest.mark.parametrize("name,make,kw", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                          enumerate(GRAD_CASES)])
def test_grad_matches_torch(torch, name, make, kw):
    a = make((4, 6))
    x = ember.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    _loss(ember, getattr(ember.fft, name)(x, **kw)).backward()
    _loss(torch, getattr(torch.fft, name)(tx, **kw)).backward()
    assert_same(x.grad, tx.grad, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fn", [
    lambda x: ember.view_as_real(ember.fft.rfft(x, norm="ortho")),
    lambda x: ember.fft.irfft(ember.fft.rfft(x) * 2, n=5),
    lambda x: ember.view_as_real(ember.fft.fftn(x, s=(3, 4))),
    lambda x: ember.fft.hfft(ember.fft.ihfft(x)),
])
def test_gradcheck(fn):
    x = ember.tensor(_rng.standard_normal((3, 5)), requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x,))

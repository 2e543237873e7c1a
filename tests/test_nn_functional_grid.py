"""ember.nn.functional.grid_sample / affine_grid / interpolate(antialias=True) against PyTorch:
values (float32 and float64) and gradients w.r.t. input, grid and theta (through the fused
grid_sampler_{2,3}d_backward and _upsample_*2d_aa_backward ops) for every mode, padding mode and
align_corners, gradcheck on a few, and the Python-level argument errors and warnings."""
import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from helpers import to_np

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((2, 3, 5, 7))
_X5 = _rng.standard_normal((2, 2, 4, 5, 3))
_G = _rng.uniform(-1.3, 1.3, (2, 4, 6, 2))
_G5 = _rng.uniform(-1.3, 1.3, (2, 3, 2, 4, 3))
_G[0, 0, :4] = [[-1, -1], [1, 1], [0, 0.5], [-1, 1]]  # corners and exact pixel positions
_THETA = np.array([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.2, 0.4, 0.0], [-0.5, 0.8, 0.3]]])
_THETA5 = _rng.standard_normal((2, 3, 4)) * 0.5 + np.eye(3, 4)

CASES = {}
for _mode, _pad, _ac in itertools.product(("bilinear", "nearest", "bicubic"),
                                          ("zeros", "border", "reflection"), (False, True)):
    CASES[f"grid_sample 2d {_mode} {_pad} {_ac}"] = (
        lambda F, x, g, m=_mode, p=_pad, a=_ac: F.grid_sample(x, g, m, p, a), (_X, _G))
    if _mode != "bicubic":
        CASES[f"grid_sample 3d {_mode} {_pad} {_ac}"] = (
            lambda F, x, g, m=_mode, p=_pad, a=_ac: F.grid_sample(x, g, m, p, a), (_X5, _G5))
for _ac in (False, True):
    CASES[f"affine_grid 2d {_ac}"] = (
        lambda F, t, a=_ac: F.affine_grid(t, [2, 3, 4, 6], align_corners=a), (_THETA,))
    CASES[f"affine_grid 3d {_ac}"] = (
        lambda F, t, a=_ac: F.affine_grid(t, [2, 1, 3, 4, 2], align_corners=a), (_THETA5,))
    CASES[f"spatial transformer {_ac}"] = (
        lambda F, x, t, a=_ac: F.grid_sample(x, F.affine_grid(t, [2, 3, 6, 4], align_corners=a),
                                             "bilinear", "border", a), (_X, _THETA))
for _mode, _ac in [("bilinear", False), ("bilinear", True), ("bicubic", False),
                   ("bicubic", True)]:
    CASES[f"antialias {_mode} {_ac} size"] = (
        lambda F, x, m=_mode, a=_ac: F.interpolate(x, size=(3, 4), mode=m, align_corners=a,
                                                   antialias=True), (_X,))
    CASES[f"antialias {_mode} {_ac} scale"] = (
        lambda F, x, m=_mode, a=_ac: F.interpolate(x, scale_factor=(0.6, 1.5), mode=m,
                                                   align_corners=a, antialias=True), (_X,))
CASES["antialias lanczos"] = (lambda F, x: F.interpolate(x, size=(2, 5), mode="lanczos",
                                                         antialias=True), (_X,))


def _run(lib, F, fn, arrays, dtype):
    ts = [lib.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ts, fn(F, *ts)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients(torch, name, dtype):
    fn, arrays = CASES[name]
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-7, atol=1e-9)
    ts, tout = _run(torch, torch.nn.functional, fn, arrays, getattr(torch, dtype))
    es, eout = _run(ember, EF, fn, arrays, getattr(ember, dtype))
    assert eout.dtype.name == dtype and tuple(eout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(to_np(eout), to_np(tout), **tol)
    g = _rng.standard_normal(tuple(tout.shape))
    tg = torch.autograd.grad(tout, ts, torch.tensor(g, dtype=tout.dtype))
    eg = ember.autograd.grad(eout, es, ember.tensor(g, dtype=eout.dtype))
    for a, b in zip(eg, tg):
        assert a.dtype.name == dtype
        np.testing.assert_allclose(to_np(a), to_np(b), **tol)


@pytest.mark.parametrize("mask", [(True, True), (False, True), (True, False)])
def test_backward_output_mask(torch, mask):
    """Only the requested gradients are formed; the grid gradient always is (as ATen)."""
    args = [_rng.standard_normal((2, 3, 4, 6)), _X, _G]
    t = torch.ops.aten.grid_sampler_2d_backward(*[torch.tensor(a) for a in args], 0, 1, False,
                                                list(mask))
    e = ember.ops.aten.grid_sampler_2d_backward(*[ember.tensor(a) for a in args], 0, 1, False,
                                                list(mask))
    for a, b in zip(e, t):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-10, atol=1e-12)


def test_only_grid_requires_grad(torch):
    res = []
    for lib, F in ((ember, EF), (torch, torch.nn.functional)):
        g = lib.tensor(_G, requires_grad=True)
        y = F.grid_sample(lib.tensor(_X), g, align_corners=True)
        res.append(to_np(lib.autograd.grad(y.pow(2).sum(), [g])[0]))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10, atol=1e-12)


def test_non_finite_grid(torch):
    """NaN and infinite positions follow ATen: NaN weights with zeros padding, clipped to the
    border (2-D) or sent outside (3-D) otherwise."""
    g = _G.copy()
    g[0, 0, 0] = [np.nan, 0.2]
    g[1, 1, 1] = [np.inf, -np.inf]
    g5 = _G5.copy()
    g5[0, 0, 0, 0] = [np.nan, 0.1, np.inf]
    for x, grid in ((_X, g), (_X5, g5)):
        for pad in ("zeros", "border", "reflection"):
            e = EF.grid_sample(ember.tensor(x), ember.tensor(grid), "bilinear", pad, False)
            t = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), "bilinear",
                                                pad, False)
            np.testing.assert_allclose(to_np(e), to_np(t), rtol=1e-10, atol=1e-12)


def test_half_precision(torch):
    """float16 follows ATen bit for bit up to accumulation order; bfloat16 within its
    precision."""
    for dt, tol in (("float16", 2e-2), ("bfloat16", 0.15)):
        e = EF.grid_sample(ember.tensor(_X, dtype=getattr(ember, dt)),
                           ember.tensor(_G, dtype=getattr(ember, dt)), align_corners=False)
        t = torch.nn.functional.grid_sample(torch.tensor(_X, dtype=getattr(torch, dt)),
                                            torch.tensor(_G, dtype=getattr(torch, dt)),
                                            align_corners=False)
        assert e.dtype.name == dt
        np.testing.assert_allclose(to_np(e).astype(np.float64), to_np(t).astype(np.float64),
                                   rtol=tol, atol=tol)


def test_antialias_uint8(torch):
    """uint8 images: ATen's fixed-point width-then-height passes, exactly."""
    x = _rng.integers(0, 256, (2, 3, 17, 13)).astype(np.uint8)
    for mode in ("bilinear", "bicubic"):
        for size in ((5, 7), (30, 6)):
            e = EF.interpolate(ember.tensor(x), size=size, mode=mode, antialias=True)
            t = torch.nn.functional.interpolate(torch.tensor(x), size=size, mode=mode,
                                                antialias=True)
            assert e.dtype is ember.uint8
            np.testing.assert_array_equal(to_np(e), to_np(t))


def test_gradcheck():
    x = ember.tensor(_rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    g = ember.tensor(_rng.uniform(-0.9, 0.9, (1, 3, 2, 2)), requires_grad=True)
    for mode in ("bilinear", "bicubic"):
        assert ember.autograd.gradcheck(
            lambda x, g, m=mode: EF.grid_sample(x, g, m, "reflection", False), (x, g))
    g5 = ember.tensor(_rng.uniform(-0.9, 0.9, (1, 2, 2, 2, 3)), requires_grad=True)
    x5 = ember.tensor(_rng.standard_normal((1, 2, 3, 4, 3)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, g: EF.grid_sample(x, g, align_corners=True),
                                    (x5, g5))
    th = ember.tensor(_THETA, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: EF.affine_grid(t, [2, 1, 3, 4], False), (th,))
    assert ember.autograd.gradcheck(
        lambda x: EF.interpolate(x, size=(3, 2), mode="bicubic", antialias=True), (x,))


def test_align_corners_warnings(torch):
    for lib, F in ((ember, EF), (torch, torch.nn.functional)):
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            F.grid_sample(lib.tensor(_X), lib.tensor(_G))
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            F.affine_grid(lib.tensor(_THETA), [2, 3, 4, 6])
        with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
            F.affine_grid(lib.tensor(_THETA), [2, 3, 1, 6], align_corners=True)


ERRORS = [
    lambda lib, F, x, g, t: F.grid_sample(x, g, mode="area", align_corners=False),
    lambda lib, F, x, g, t: F.grid_sample(x, g, padding_mode="wrap", align_corners=False),
    lambda lib, F, x, g, t: F.grid_sample(x, g[:1], align_corners=False),
    lambda lib, F, x, g, t: F.grid_sample(x[:, :, None], g[:, None], align_corners=False),
    lambda lib, F, x, g, t: F.grid_sample(x[:, :, None], g[:, None].expand(2, 2, 4, 6, 2)
                                          .repeat(1, 1, 1, 1, 2)[..., :3], "bicubic",
                                          align_corners=False),
    lambda lib, F, x, g, t: F.grid_sample(x, g.double(), align_corners=False),
    lambda lib, F, x, g, t: F.grid_sample(x.long(), g.long(), align_corners=False),
    lambda lib, F, x, g, t: F.affine_grid(t.long(), [2, 3, 4, 6], align_corners=False),
    lambda lib, F, x, g, t: F.affine_grid(t, [2, 3, 4, 6, 5], align_corners=False),
    lambda lib, F, x, g, t: F.affine_grid(t, [2, 3, 4], align_corners=False),
    lambda lib, F, x, g, t: F.affine_grid(t, [2, 3, 0, 6], align_corners=False),
    lambda lib, F, x, g, t: F.interpolate(x[0], size=3, mode="linear", antialias=True),
    lambda lib, F, x, g, t: F.interpolate(x, size=(3, 3), mode="nearest", antialias=True),
    lambda lib, F, x, g, t: F.interpolate(x, size=(3, 3), mode="lanczos"),
    lambda lib, F, x, g, t: F.interpolate(x, size=(3, 3), mode="lanczos", align_corners=True,
                                          antialias=True),
    lambda lib, F, x, g, t: F.interpolate(x.half(), size=(3, 3), mode="bilinear",
                                          antialias=True),
    lambda lib, F, x, g, t: lib.ops.aten._upsample_bicubic2d_aa_backward(
        x[:, :, :3], [3, 3], [2, 3, 5, 7], False),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(torch, i):
    args = (_X.astype(np.float32), _G.astype(np.float32), _THETA.astype(np.float32))
    with pytest.raises(Exception) as t_exc:
        ERRORS[i](torch, torch.nn.functional, *[torch.tensor(a) for a in args])
    with pytest.raises(Exception) as e_exc:
        ERRORS[i](ember, EF, *[ember.tensor(a) for a in args])
    assert e_exc.type is t_exc.type, (e_exc.value, t_exc.value)
    # the same first line, with PyTorch's module name in printed dtypes/sizes replaced
    assert str(e_exc.value).splitlines()[0] == \
        str(t_exc.value).splitlines()[0].replace("torch.", "ember.")

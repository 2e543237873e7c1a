"""Pointwise behaviour the OpInfo table cannot express: ops answering a Python bool (equal,
allclose, is_conj), the complex views' aliasing (view_as_real/complex, real/imag and their
setters), the shift operators, and error messages compared with PyTorch's."""
import math

import numpy as np
import pytest

import ember
from helpers import assert_same, from_np, to_np, to_torch


def _pair(torch, a, dtype="float32"):
    return from_np(np.asarray(a).astype(getattr(ember, dtype)._np)), \
        torch.tensor(np.asarray(a)).to(getattr(torch, dtype))


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5]), ([1.0, 2.0], [1.0, 2.0, 3.0]),
    ([math.nan], [math.nan]), ([[1.0, 2.0]], [1.0, 2.0])])
def test_equal(torch, a, b):
    (ea, ta), (eb, tb) = _pair(torch, a), _pair(torch, b)
    assert ember.equal(ea, eb) is torch.equal(ta, tb)
    assert ea.equal(eb) is ta.equal(tb)


def test_equal_promotes_dtypes(torch):
    (ea, ta), (eb, tb) = _pair(torch, [1, 2], "int64"), _pair(torch, [1, 2], "float32")
    assert ember.equal(ea, eb) is torch.equal(ta, tb) is True


@pytest.mark.parametrize("kw", [{}, {"rtol": 0.1}, {"atol": 0.5}, {"equal_nan": True}])
def test_allclose(torch, kw):
    (ea, ta), (eb, tb) = _pair(torch, [1.0, math.nan, 3.0]), _pair(torch, [1.05, math.nan, 3.0])
    assert ember.allclose(ea, eb, **kw) is torch.allclose(ta, tb, **kw)
    assert ea.allclose(eb, **kw) is ta.allclose(tb, **kw)


def test_allclose_errors_like_pytorch(torch):
    (ea, ta), (eb, tb) = _pair(torch, [1.0], "float32"), _pair(torch, [1.0], "float64")
    with pytest.raises(RuntimeError) as t_err:
        torch.allclose(ta, tb)
    with pytest.raises(RuntimeError) as e_err:
        ember.allclose(ea, eb)
    assert str(e_err.value) == str(t_err.value)


def test_view_as_real_is_a_view_with_pytorch_geometry(torch):
    z = np.array([[1 + 2j, 3 - 1j], [0.5j, -2]], dtype=np.complex64)
    e, t = from_np(z), torch.from_numpy(z.copy())
    for fe, ft in [(lambda x: x, lambda x: x), (lambda x: x.t(), lambda x: x.t()),
                   (lambda x: x[1:], lambda x: x[1:])]:
        er, tr = ember.view_as_real(fe(e)), torch.view_as_real(ft(t))
        assert_same(er, tr, check_stride=True)
        assert er.storage_offset() == tr.storage_offset()
        assert er._base is e
    r = ember.view_as_real(e)
    r[0, 0, 1] = 7.0  # writes through to the complex tensor
    assert to_np(e)[0, 0] == 1 + 7j


def test_view_as_complex_roundtrip(torch):
    a = np.arange(12, dtype=np.float64).reshape(3, 2, 2)
    e, t = from_np(a), torch.from_numpy(a.copy())
    ec, tc = ember.view_as_complex(e[1:]), torch.view_as_complex(t[1:])
    assert_same(ec, tc, check_stride=True)
    assert ec.storage_offset() == tc.storage_offset()
    ec[0, 0] = 5 - 5j
    assert to_np(e)[1, 0].tolist() == [5.0, -5.0]


def test_view_as_complex_half_is_complex32(torch):
    e = ember.view_as_complex(ember.tensor([[1.0, 2.0], [-3.0, 0.5]], dtype=ember.float16))
    t = torch.view_as_complex(torch.tensor([[1.0, 2.0], [-3.0, 0.5]], dtype=torch.float16))
    assert e.dtype is ember.complex32 and t.dtype == torch.complex32
    assert e.tolist() == t.tolist()


def test_real_imag_properties_are_views_and_assignable(torch):
    z = np.array([1 + 2j, -3 + 0.5j], dtype=np.complex128)
    e, t = from_np(z), torch.from_numpy(z.copy())
    assert_same(e.real, t.real, check_stride=True)
    assert_same(e.imag, t.imag, check_stride=True)
    assert_same(ember.real(e), torch.real(t))
    v = e._version
    e.imag = ember.tensor([9.0, 8.0], dtype=ember.float64)
    t.imag = torch.tensor([9.0, 8.0], dtype=torch.float64)
    assert_same(e, t)
    assert e._version > v
    x = ember.ones(3)
    assert x.real is x  # a real tensor is its own real part, as in PyTorch
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        x.imag


def test_conj_is_a_lazy_view():
    """conj() of a complex tensor is a view with the conjugate bit (tests/test_conj_bit.py has
    the rest); resolve_conj of a tensor without it is the tensor itself."""
    z = ember.tensor([1 + 2j, 3 - 4j])
    c = ember.conj(z)
    assert to_np(c).tolist() == [1 - 2j, 3 + 4j]
    assert c.is_conj() and not ember.is_conj(z) and c._base is z
    assert ember.resolve_conj(z) is z and not ember.resolve_conj(c).is_conj()
    r = ember.ones(2)
    assert ember.conj(r) is r and ember.conj_physical(r) is r
    z.conj_physical_()
    assert to_np(z).tolist() == [1 - 2j, 3 + 4j]


def test_shift_operators(torch):
    a = np.array([1, -2, 3, 100], dtype=np.int64)
    e, t = from_np(a), torch.from_numpy(a.copy())
    s = np.array([1, 2, 64, -1], dtype=np.int64)
    es, ts = from_np(s), torch.from_numpy(s.copy())
    assert_same(e << 2, t << 2)
    assert_same(e >> 1, t >> 1)
    assert_same(e << es, t << ts)
    assert_same(e >> es, t >> ts)
    assert_same(3 << es.abs() % 8, 3 << ts.abs() % 8)
    assert_same(256 >> es.abs() % 8, 256 >> ts.abs() % 8)
    e <<= 1
    t <<= 1
    assert_same(e, t)
    e >>= es.abs() % 3
    t >>= ts.abs() % 3
    assert_same(e, t)
    with pytest.raises(NotImplementedError):
        ember.ones(2) << 1
    with pytest.raises(NotImplementedError):
        torch.ones(2) << 1


@pytest.mark.parametrize("call", [
    lambda m, x: m.clamp(x),
    lambda m, x: m.clamp(x.to(m.complex64), 0, 1),
    lambda m, x: m.lerp(x, x.double(), 0.5),
    lambda m, x: m.addcdiv(x, x.long(), x.long()),
    lambda m, x: m.polar(x, x.double()),
    lambda m, x: m.view_as_real(x),
    lambda m, x: m.view_as_complex(x),
    lambda m, x: m.isclose(x, x, rtol=-1.0),
    lambda m, x: m.sign(x.to(m.complex64)),
    lambda m, x: m.polygamma(-1, x),
    lambda m, x: x.float_power_(2),
])
def test_error_messages_match_pytorch(torch, call):
    a = np.array([0.25, 0.5, 0.75], dtype=np.float32)
    with pytest.raises(Exception) as t_err:
        call(torch, torch.from_numpy(a.copy()))
    with pytest.raises(Exception) as e_err:
        call(ember, from_np(a))
    assert type(e_err.value) is type(t_err.value)
    assert str(e_err.value) == str(t_err.value).split("\n")[0]


def test_wrapped_numbers_promote_like_pytorch(torch):
    x = ember.tensor([1, 2, 3])
    tx = to_torch(torch, x)
    assert_same(ember.clamp(x, 0.5, 2.5), torch.clamp(tx, 0.5, 2.5))
    assert_same(ember.clamp_min(x, 1.5), torch.clamp_min(tx, 1.5))
    assert_same(ember.float_power(x, 2), torch.float_power(tx, 2))
    assert_same(ember.float_power(x, 2j), torch.float_power(tx, 2j))
    assert_same(ember.xlogy(2, x), torch.xlogy(2, tx))
    assert_same(ember.copysign(x, -1), torch.copysign(tx, -1))
    assert_same(ember.fmod(x, 2), torch.fmod(tx, 2))
    assert_same(ember.square(x), torch.square(tx))


def test_meta_kernels_need_no_data():
    m = ember.empty((2, 3), device="meta")
    assert ember.erfinv(m).device.type == "meta"
    assert ember.clamp(m, 0, 1).shape == (2, 3)
    assert ember.polar(m, m).dtype is ember.complex64
    assert ember.view_as_real(ember.empty(4, dtype=ember.complex64, device="meta")).shape == (4, 2)
    assert ember.isclose(m, m).dtype is ember.bool


def test_complex_logaddexp_ties_keep_pytorchs_branch(torch):
    import numpy as np
    import ember
    from helpers import from_np
    for a, b in [(1 + 3j, 1 - 3j), (-2 + 2.5j, -2 - 2.9j)]:
        e = ember.logaddexp(from_np(np.array([a], np.complex64)), from_np(np.array([b], np.complex64)))
        t = torch.logaddexp(torch.tensor([a], dtype=torch.complex64),
                            torch.tensor([b], dtype=torch.complex64))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_float_scalar_ops_round_as_aten(torch, dtype):
    # ATen's CPU mul/div take a scalar second operand at float precision (not rounded to the
    # tensor's dtype first); add/sub with alpha round alpha to the dtype and compute a + alpha*b
    # in float, rounding once
    rs = np.random.RandomState(0)
    a, b = rs.randn(4096).astype(np.float32), rs.randn(4096).astype(np.float32)
    mine = [ember.tensor(v).to(getattr(ember, dtype)) for v in (a, b)]
    theirs = [torch.tensor(v).to(getattr(torch, dtype)) for v in (a, b)]
    cases = [lambda x, y, lib: x * 0.7, lambda x, y, lib: x / 0.7, lambda x, y, lib: x / 3,
             lambda x, y, lib: x * lib.tensor(1e-3), lambda x, y, lib: x.div(lib.tensor(3.3)),
             lambda x, y, lib: x.mul_(0.7), lambda x, y, lib: x + 0.7, lambda x, y, lib: 0.7 - x,
             # the aten overloads: only mul_.Scalar rounds the number to the dtype first
             lambda x, y, lib: lib.ops.aten.mul_.Scalar(x, 0.7),
             lambda x, y, lib: lib.ops.aten.mul.Scalar(x, 0.7),
             lambda x, y, lib: lib.ops.aten.div_.Scalar(x, 0.7),
             lambda x, y, lib: lib.blackman_window(31, dtype=x.dtype)]
    for i, case in enumerate(cases):
        e = case(mine[0].clone(), mine[1], ember).float().numpy()
        t = case(theirs[0].clone(), theirs[1], torch).float().numpy()
        np.testing.assert_array_equal(e, t, err_msg=f"case {i}")
    # with alpha: a handful of elements may differ by one unit in the last place (ATen fuses
    # the multiply-add in its vector loop)
    e = mine[0].add(mine[1], alpha=0.3).float().numpy()
    t = theirs[0].add(theirs[1], alpha=0.3).float().numpy()
    assert (e != t).sum() <= 8
    np.testing.assert_allclose(e, t, rtol=1e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_float_pow_by_small_integers_rounds_as_aten(torch, dtype):
    # ATen's CPU pow of a bfloat16 tensor by the number 3 or -2 is x * x * x or 1 / (x * x)
    # on bfloat16 vectors, rounding after each operation; a tensor exponent, other numbers
    # and float16 compute in float and round once
    x = np.random.RandomState(0).uniform(-5, 5, 4000).astype(np.float32)
    mine, theirs = (lib.tensor(x).to(getattr(lib, dtype)) for lib in (ember, torch))
    cases = [lambda t, lib: t.pow(3), lambda t, lib: t ** -2, lambda t, lib: lib.pow(t, 3.0),
             lambda t, lib: t.clone().pow_(3), lambda t, lib: t.pow(2), lambda t, lib: t.pow(-1),
             lambda t, lib: t.pow(lib.tensor(3.0)), lambda t, lib: t.pow(1.5)]
    for i, case in enumerate(cases):
        np.testing.assert_array_equal(case(mine, ember).float().numpy(),
                                      case(theirs, torch).float().numpy(), err_msg=f"case {i}")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_pow_of_zero_base(torch, dtype):
    """PyTorch's complex pow is exp(b log a): at a zero base inf+nanj where the exponent's real
    part is negative, 0 where it is positive (NumPy's power gives nan+nanj there)."""
    exps = [complex(r, i) for r in (-1.5, 0.0, 0.5, 2.0) for i in (-0.7, 0.0, 0.5)]
    base = [0j, 1 + 1j, -2 + 0.5j] * len(exps)
    e = [x for x in exps for _ in range(3)]
    mine = ember.pow(ember.tensor(base, dtype=getattr(ember, dtype)),
                     ember.tensor(e, dtype=getattr(ember, dtype)))
    theirs = torch.pow(torch.tensor(base, dtype=getattr(torch, dtype)),
                       torch.tensor(e, dtype=getattr(torch, dtype)))
    np.testing.assert_allclose(to_np(mine), theirs.numpy(), rtol=1e-5, equal_nan=True)

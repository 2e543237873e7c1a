"""out= tensors of the wrong dtype, against PyTorch: the structured kernels outside
TensorIterator (products, softmax, tril/triu, sort/topk, upsampling ...) refuse an out whose
dtype is not the result's with PyTorch's message, and write nothing; reductions that take their
dtype from out still accept it. The out= overloads the op table has no out= samples for (random
ops, factories, some linalg and backward forms) are swept here over out dtypes; the table's are
swept in tests/test_out_sweep.py."""
import pytest

import ember
from helpers import assert_same


def _calls(L):
    s, b, v, a = L.ones(3, 3), L.ones(2, 3, 3), L.ones(3), L.ones(2, 3)
    i64 = L.int64
    return {
        "mm": lambda o: L.mm(s, s, out=o(3, 3)), "bmm": lambda o: L.bmm(b, b, out=o(2, 3, 3)),
        "addmm": lambda o: L.addmm(s, s, s, out=o(3, 3)),
        "baddbmm": lambda o: L.baddbmm(b, b, b, out=o(2, 3, 3)),
        "addmv": lambda o: L.addmv(v, s, v, out=o(3)),
        "_softmax": lambda o: L.ops.aten._softmax.out(a, 1, False, out=o(2, 3)),
        "_log_softmax": lambda o: L.ops.aten._log_softmax.out(a, 1, False, out=o(2, 3)),
        "tril": lambda o: L.tril(a, out=o(2, 3)), "triu": lambda o: L.triu(a, out=o(2, 3)),
        "norm": lambda o: L.norm(a, 2, 1, out=o(2)), "diag": lambda o: L.diag(s, out=o(3)),
        "sort": lambda o: L.sort(a, 1, out=(o(2, 3), L.empty(2, 3, dtype=i64))),
        "topk": lambda o: L.topk(a, 2, out=(o(2, 2), L.empty(2, 2, dtype=i64))),
        "upsample_nearest2d": lambda o: L._C._nn.upsample_nearest2d(
            L.ones(1, 1, 2, 2), [4, 4], out=o(1, 1, 4, 4)),
        # reductions whose dtype comes from out
        "sum": lambda o: L.sum(a, 1, out=o(2)), "cumsum": lambda o: L.cumsum(a, 1, out=o(2, 3)),
    }


@pytest.mark.parametrize("name", list(_calls(ember)))
def test_out_of_another_dtype_as_pytorch(torch, name):
    outcomes = []
    for L in (ember, torch):
        outs = []

        def o(*shape):
            t = L.full(shape, 7.0, dtype=L.float64)
            outs.append(t)
            return t
        try:
            _calls(L)[name](o)
            outcomes.append("ok")
        except RuntimeError as e:
            outcomes.append(str(e))
            assert all((t.numpy() == 7.0).all() for t in outs), "out written before the error"
    assert outcomes[0] == outcomes[1]


# out= overloads outside the op table's out= entries (random ops, factories' relatives, linalg
# and loss forms the table lists without out=): each out position in turn of each other dtype
_DTYPES = ("float64", "float16", "int64", "bool", "complex64")


def _more_calls(L):
    a, m = L.rand(2, 3), L.rand(3, 3) + 3 * L.eye(3)
    p = L.rand(2, 3)
    spd = m @ m.mT
    aa = L.ops.aten
    return {  # name -> (call taking the outs, the outs' fresh dtypes and shapes)
        "bernoulli.float_out": (lambda o: aa.bernoulli.float_out(a, 0.5, out=o[0]),
                                [("float32", (2, 3))]),
        "bernoulli.Tensor_out": (lambda o: aa.bernoulli.Tensor_out(a, p, out=o[0]),
                                 [("float32", (2, 3))]),
        "poisson.out": (lambda o: aa.poisson.out(a, out=o[0]), [("float32", (2, 3))]),
        "randint_like.out": (lambda o: aa.randint_like.out(a, 5, out=o[0]),
                             [("float32", (2, 3))]),
        "randint_like.low_dtype_out": (lambda o: aa.randint_like.low_dtype_out(a, 1, 5, out=o[0]),
                                       [("float32", (2, 3))]),
        "multinomial.out": (lambda o: aa.multinomial.out(p, 2, out=o[0]), [("int64", (2, 2))]),
        "binary_cross_entropy.out": (lambda o: aa.binary_cross_entropy.out(p, a, None, 1,
                                                                           out=o[0]),
                                     [("float32", ())]),
        "_softmax_backward_data.out": (
            lambda o: aa._softmax_backward_data.out(a, p, 1, L.float32, grad_input=o[0]),
            [("float32", (2, 3))]),
        "linalg_lu_factor.out": (lambda o: aa.linalg_lu_factor.out(m, LU=o[0], pivots=o[1]),
                                 [("float32", (3, 3)), ("int32", (3,))]),
        "linalg_tensorinv.out": (lambda o: aa.linalg_tensorinv.out(m, 1, out=o[0]),
                                 [("float32", (3, 3))]),
        "linalg_tensorsolve.out": (lambda o: aa.linalg_tensorsolve.out(m, a[0], None, out=o[0]),
                                   [("float32", (3,))]),
        "nuclear_norm.out": (lambda o: aa.nuclear_norm.out(m, False, out=o[0]),
                             [("float32", ())]),
        "frobenius_norm.out": (lambda o: aa.frobenius_norm.out(m, [0, 1], False, out=o[0]),
                               [("float32", ())]),
        "triangular_solve.X": (lambda o: aa.triangular_solve.X(a.mT, m, X=o[0], M=o[1]),
                               [("float32", (3, 2)), ("float32", (3, 3))]),
        "geqrf.a": (lambda o: aa.geqrf.a(m, a=o[0], tau=o[1]),
                    [("float32", (3, 3)), ("float32", (3,))]),
        "qr.Q": (lambda o: aa.qr.Q(m, True, Q=o[0], R=o[1]),
                 [("float32", (3, 3)), ("float32", (3, 3))]),
        "linalg_ldl_factor.out": (lambda o: aa.linalg_ldl_factor.out(spd, LD=o[0], pivots=o[1]),
                                  [("float32", (3, 3)), ("int32", (3,))]),
        "linalg_ldl_solve.out": (lambda o: aa.linalg_ldl_solve.out(
            *L.linalg.ldl_factor(spd), a.mT, out=o[0]), [("float32", (3, 2))]),
        "lu_unpack.out": (lambda o: aa.lu_unpack.out(*L.linalg.lu_factor(m), P=o[0], L=o[1],
                                                     U=o[2]),
                          [("float32", (3, 3))] * 3),
        "lu_solve.out": (lambda o: aa.lu_solve.out(a.mT, *L.linalg.lu_factor(m), out=o[0]),
                         [("float32", (3, 2))]),
        "orgqr.out": (lambda o: aa.orgqr.out(*L.geqrf(m), out=o[0]), [("float32", (3, 3))]),
        "_log_softmax_backward_data.out": (
            lambda o: aa._log_softmax_backward_data.out(a, p, 1, L.float32, out=o[0]),
            [("float32", (2, 3))]),
        # factories: the result is made in out's dtype
        "linspace.out": (lambda o: aa.linspace.out(0, 1, 4, out=o[0]), [("float32", (4,))]),
        "arange.out": (lambda o: aa.arange.out(4, out=o[0]), [("float32", (4,))]),
        "eye.out": (lambda o: aa.eye.out(3, out=o[0]), [("float32", (3, 3))]),
        "fft_fftfreq.out": (lambda o: aa.fft_fftfreq.out(4, out=o[0]), [("float32", (4,))]),
        "randperm.out": (lambda o: aa.randperm.out(4, out=o[0]), [("int64", (4,))]),
        "rand.out": (lambda o: aa.rand.out([3], out=o[0]), [("float32", (3,))]),
        "randint.out": (lambda o: aa.randint.out(5, [3], out=o[0]), [("int64", (3,))]),
    }


def _sweep_cases():
    for name, (_, fresh) in _more_calls(ember).items():
        for i, (dt, _) in enumerate(fresh):
            for other in _DTYPES:
                if other != dt:
                    yield name, i, other


@pytest.mark.parametrize("name,pos,dtype", list(_sweep_cases()))
def test_more_outs_of_another_dtype_as_pytorch(torch, name, pos, dtype):
    outcomes, outs_of = [], []
    for L in (ember, torch):
        L.manual_seed(0)
        call, fresh = _more_calls(L)[name]
        outs = [L.full(shape, 7, dtype=getattr(L, dtype if i == pos else dt))
                for i, (dt, shape) in enumerate(fresh)]
        before = [t.clone() for t in outs]
        L.manual_seed(1)
        try:
            call(outs)
            outcomes.append("ok")
        except (RuntimeError, NotImplementedError) as e:
            outcomes.append(f"{type(e).__name__}: {e}")
            assert all(L.equal(t, b) for t, b in zip(outs, before)), \
                "out written before the error"
        outs_of.append(outs)
    assert outcomes[0] == outcomes[1]
    if outcomes[0] == "ok":
        for e, t in zip(*outs_of):
            assert_same(e, t, rtol=1e-3, atol=1e-3)

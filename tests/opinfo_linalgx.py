"""OpInfo entries of issue 18's linear-algebra additions (LU, triangular and Cholesky solves,
Householder products, matrix_exp, cond, vander, vecdot, linalg.matmul): values, strided layouts, batches, out=
and errors against torch.ops.aten, plus the Meta kernels. Gradients, the Python-level functions
and the ops listed in NOT_IN_TABLE below are covered by tests/test_linalg_extras.py."""
import numpy as np
import scipy.linalg

from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, T, tensor

_F = ("float32", "float64")
_LAYOUTS = ("contiguous", "transposed", "sliced")
_rng = np.random.default_rng(1818)


def _add(name, samples, out=None, rtol=1e-4, atol=1e-5):
    OPS.append(OpInfo(name, samples, _F, None, out, rtol=rtol, atol=atol))


def _well(shape):
    return _rng.uniform(-1, 1, shape) + shape[-1] * np.eye(shape[-1])


def _tri(shape, upper):
    a = _well(shape)
    return np.triu(a) if upper else np.tril(a)


def _lu(a):
    """getrf's (LU, 1-based int32 pivots) of every matrix of a."""
    lus, pivs = [], []
    for m in a.reshape((-1,) + a.shape[-2:]):
        lu, piv = scipy.linalg.lu_factor(m)
        lus.append(lu)
        pivs.append(piv + 1)
    return (np.stack(lus).reshape(a.shape),
            np.stack(pivs).reshape(a.shape[:-2] + (min(a.shape[-2:]),)))


def solve_triangular_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            for upper in (True, False):
                yield Sample((T(_tri((3, 3), upper), dt, lay), tensor((3, 2), dt, lay)),
                             {"upper": upper}, desc=f"{dt} {lay} {upper}")
        yield Sample((T(_tri((2, 1, 3, 3), True), dt), tensor((4, 2, 3), dt)),
                     {"upper": True, "left": False, "unitriangular": True}, desc=f"{dt} batch")
    yield Sample((T(_tri((3, 3), True), "float64"), tensor((4, 2), "float64")), {"upper": True},
                 desc="shape error")
    yield Sample((tensor((3,), "float64"), tensor((3, 2), "float64")), {"upper": True},
                 desc="1-d error")


def lu_factor_samples(op):
    for dt in op.dtypes:
        for shape in ((3, 3), (2, 4, 3), (3, 5), (0, 2, 2)):
            yield Sample((tensor(shape, dt),), desc=f"{dt} {shape}")
    yield Sample((tensor((3,), "float64"),), desc="1-d error")
    yield Sample((tensor((3, 3), "int64"),), desc="int error")
    yield Sample((tensor((3, 3), "float64"),), {"pivot": False}, desc="no pivoting")


def lu_solve_samples(op):
    for dt in op.dtypes:
        a = _well((2, 3, 3))
        lu, piv = _lu(a)
        for left in (True, False):
            for adj in (False, True):
                b = (3, 2) if left else (2, 2, 3)
                yield Sample((T(lu, dt), T(piv, "int32"), tensor(b, dt)),
                             {"left": left, "adjoint": adj}, desc=f"{dt} {left} {adj}")
    lu, piv = _lu(_well((3, 3)))
    yield Sample((T(lu, "float64"), T(piv, "int64"), tensor((3, 2), "float64")),
                 desc="pivots dtype error")
    yield Sample((T(lu, "float64"), T(piv, "int32"), tensor((4, 2), "float64")),
                 desc="shape error")


def cholesky_solve_samples(op):
    for dt in op.dtypes:
        for upper in (False, True):
            u = T(_tri((3, 3), upper), dt, "transposed")
            if op.name.startswith("cholesky_inverse"):
                yield Sample((u, upper), desc=f"{dt} {upper}")
                yield Sample((T(_tri((2, 3, 3), upper), dt), upper), desc=f"{dt} batch")
            else:
                yield Sample((tensor((2, 3, 2), dt), u, upper), desc=f"{dt} {upper}")
    if op.name.startswith("cholesky_inverse"):
        yield Sample((tensor((2, 3), "float64"),), desc="not square")
    else:
        yield Sample((tensor((4, 2), "float64"), T(_tri((3, 3), False), "float64")),
                     desc="shape error")
        yield Sample((tensor((3, 2), "float32"), T(_tri((3, 3), False), "float64")),
                     desc="dtype error")


def matrix_exp_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 3), dt, lay, low=-1, high=1),), desc=f"{dt} {lay}")
        yield Sample((tensor((2, 4, 4), dt, low=-1, high=1),), desc=f"{dt} batch")
    yield Sample((tensor((2, 3), "float64"),), desc="not square")
    yield Sample((tensor((3, 3), "int64"),), desc="int error")


def householder_samples(op):
    ormqr = op.name.startswith("ormqr")
    for dt in op.dtypes:
        for shape in ((4, 3), (2, 3, 3)):
            h, tau = np.linalg.qr(_rng.uniform(-1, 1, shape), mode="raw")
            v = T(np.swapaxes(h, -1, -2), dt, "transposed")
            if ormqr:
                c = tensor(shape[:-2] + (shape[-2], 2), dt)
                for tr in (False, True):
                    yield Sample((v, T(tau, dt), c, True, tr), desc=f"{dt} {shape} {tr}")
            else:
                yield Sample((v, T(tau, dt)), desc=f"{dt} {shape}")
    bad = (tensor((2, 3), "float64"), tensor((2,), "float64"))
    yield Sample(bad + ((tensor((2, 2), "float64"),) if ormqr else ()), desc="shape error")


def cond_samples(op):
    strs = op.name.startswith("linalg_cond.p_str")
    # orders through the inverse (1, inf, 'fro') are left to tests/test_linalg_extras.py:
    # PyTorch's own backward fails for them (it fills the saved inverse in place)
    ords = ("nuc",) if strs else (None, 2, -2)
    for dt in op.dtypes:
        for o in ords:
            yield Sample((T(_well((3, 3)), dt, "transposed"), o), desc=f"{dt} {o}")
            yield Sample((T(_well((2, 3, 3)), dt), o), desc=f"{dt} {o} batch")
    yield Sample((tensor((2, 3), "float64"), "abc" if strs else 1), desc="not square")


def vander_samples(op):
    for dt in op.dtypes + ("int64",):
        yield Sample((tensor((2, 4), dt, "sliced", low=-2, high=2),), desc=dt)
        yield Sample((tensor((3,), dt, low=-2, high=2),), {"N": 5}, desc=f"{dt} N")
    yield Sample((tensor((3,), "float64"),), {"N": 1}, desc="N error")


def vecdot_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3), dt, "transposed"), tensor((3,), dt)), desc=dt)
        yield Sample((tensor((3, 1), dt), tensor((3, 4), dt)), {"dim": 0}, desc=f"{dt} dim 0")
    yield Sample((tensor((3,), "float32"), tensor((3,), "float64")), desc="dtype error")


def matmul_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3), dt, "transposed"), tensor((3, 4), dt)), desc=f"{dt} 2d")
        yield Sample((tensor((2, 2, 3), dt), tensor((3,), dt, "sliced")), desc=f"{dt} batch @ vec")
    yield Sample((tensor((2, 3), "float32"), tensor((4, 2), "float32")), desc="size error")


_add("linalg_solve_triangular.default", solve_triangular_samples, "linalg_solve_triangular.out")
_add("linalg_lu_factor_ex.default", lu_factor_samples, "linalg_lu_factor_ex.out")
_add("linalg_lu.default", lu_factor_samples, "linalg_lu.out")
_add("linalg_lu_solve.default", lu_solve_samples, "linalg_lu_solve.out")
_add("cholesky_solve.default", cholesky_solve_samples, "cholesky_solve.out")
_add("cholesky_inverse.default", cholesky_solve_samples, "cholesky_inverse.out")
_add("linalg_matrix_exp.default", matrix_exp_samples, "linalg_matrix_exp.out")
_add("linalg_householder_product.default", householder_samples,
     "linalg_householder_product.out")
_add("ormqr.default", householder_samples, "ormqr.out")
_add("linalg_cond.default", cond_samples, "linalg_cond.out", rtol=1e-3, atol=1e-4)
_add("linalg_cond.p_str", cond_samples, "linalg_cond.p_str_out", rtol=1e-3, atol=1e-4)
_add("linalg_vander.default", vander_samples)
_add("linalg_vecdot.default", vecdot_samples, "linalg_vecdot.out")
_add("linalg_matmul.default", matmul_samples, "linalg_matmul.out")

_ELSEWHERE = "checked against PyTorch (values, batches, errors, gradients) by tests/test_linalg_extras.py"
NOT_IN_TABLE.update({name: _ELSEWHERE for name in """
    linalg_lu_factor.default linalg_lu_factor.out lu_unpack.default lu_unpack.out
    _lu_with_info.default lu_solve.default lu_solve.out triangular_solve.default
    triangular_solve.X qr.default qr.Q geqrf.default geqrf.a orgqr.default orgqr.out
    linalg_ldl_factor_ex.default linalg_ldl_factor_ex.out linalg_ldl_factor.default
    linalg_ldl_factor.out linalg_ldl_solve.default linalg_ldl_solve.out matrix_exp.default
    pinverse.default linalg_diagonal.default linalg_tensorinv.default linalg_tensorinv.out
    linalg_tensorsolve.default linalg_tensorsolve.out""".split()})
NOT_IN_TABLE.update({name: "checked against torch.stft / torch.istft (values, round trip, "
                           "gradients, errors) by tests/test_stft.py"
                     for name in ("stft.default", "stft.center", "istft.default")})

"""OpInfo entries of the linear-algebra ops: BLAS-style products, einsum and friends, and the
``linalg_*`` ops behind ``ember.linalg`` (well-conditioned, symmetric positive-definite and
singular matrices, batches, strided layouts, dtype and shape errors)."""
import numpy as np

from opinfo import DT, NOT_IN_TABLE, OPS, OpInfo, Sample, T, tensor

_F = ("float32", "float64")
_P = ("float32", "float64", "int64")
_LAYOUTS = ("contiguous", "transposed", "sliced")
_rng = np.random.default_rng(3)


def _add(name, samples, dtypes=_F, inplace=None, out=None, rtol=1e-4, atol=1e-5, **kw):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, rtol=rtol, atol=atol, **kw))


def well(shape, dt, layout="contiguous"):
    """Matrices far from singular: random entries plus n on the diagonal."""
    n = shape[-1]
    a = np.round(_rng.uniform(-1, 1, shape) * 8) / 8 + n * np.eye(n)
    return T(a, dt, layout)


def spd(shape, dt, layout="contiguous"):
    a = _rng.uniform(-1, 1, shape)
    return T(a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1]), dt, layout)


def singular(n, dt):
    a = np.ones((n, n))
    return T(a, dt)


# -- products ------------------------------------------------------------------------------------

def baddbmm_samples(op):
    add = op.name.startswith("addbmm")
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            s = (3, 5) if add else (2, 3, 5)
            yield Sample((tensor(s, dt, lay), tensor((2, 3, 4), dt, lay),
                          tensor((2, 4, 5), dt)), desc=f"{dt} {lay}")
        yield Sample((tensor((5,), dt, "expanded"), tensor((2, 3, 4), dt), tensor((2, 4, 5), dt)),
                     {"beta": 2, "alpha": 3}, desc=f"{dt} broadcast self, beta/alpha")
        yield Sample((tensor((5,), dt, "expanded"), tensor((0, 3, 4), dt), tensor((0, 4, 5), dt)),
                     desc=f"{dt} empty batch")
    f = "float32"
    yield Sample((tensor((3, 5), f), tensor((2, 3, 4), f), tensor((2, 4, 5), f)), {"beta": 0},
                 desc="beta 0")
    yield Sample((tensor((3, 5), f), tensor((2, 3, 4), f), tensor((2, 3, 5), f)), desc="shape")
    yield Sample((tensor((3, 5), f), tensor((2, 3, 4), f), tensor((2, 4, 5), "float64")),
                 desc="dtype")


def addmv_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3,), dt, lay), tensor((3, 4), dt, lay), tensor((4,), dt)),
                         desc=f"{dt} {lay}")
        yield Sample((tensor((), dt), tensor((3, 4), dt), tensor((4,), dt)),
                     {"beta": 2, "alpha": 3}, desc=f"{dt} 0-dim self")
    f = "float32"
    yield Sample((tensor((3,), f), tensor((3, 4), f), tensor((3,), f)), desc="shape error")
    yield Sample((tensor((3,), f), tensor((3, 4), f), tensor((4,), "float64")), desc="dtype")


def vdot_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((4,), dt), tensor((4,), dt, "sliced")), desc=dt)
        yield Sample((tensor((0,), dt), tensor((0,), dt)), desc=f"{dt} empty")
    yield Sample((tensor((4,), "float32"), tensor((3,), "float32")), desc="size error")
    yield Sample((tensor((2, 2), "float32"), tensor((4,), "float32")), desc="2-d error")
    yield Sample((tensor((4,), "float32"), tensor((4,), "float64")), desc="dtype error")


def inner_outer_samples(op):
    outer = op.name.split(".")[0] in ("outer", "ger")
    for dt in op.dtypes:
        if outer:
            yield Sample((tensor((3,), dt, "sliced"), tensor((4,), dt)), desc=dt)
            continue
        for sa, sb in (((3,), (3,)), ((2, 3), (4, 3)), ((2, 3), ()), ((2, 2, 3), (3,))):
            yield Sample((tensor(sa, dt, "sliced"), tensor(sb, dt)), desc=f"{dt} {sa} {sb}")
    yield Sample((tensor((2, 3), "float32"), tensor((4,), "float32")), desc="shape error")


def tensordot_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 3, 4), dt, "transposed"), tensor((4, 3, 5), dt), [1, 2], [1, 0]),
                     desc=dt)
        yield Sample((tensor((2, 3), dt), tensor((4, 5), dt), [], []), desc=f"{dt} outer")
    yield Sample((tensor((2, 3), "float32"), tensor((4, 5), "float32"), [1], [0]), desc="size")
    yield Sample((tensor((2, 3), "float32"), tensor((3, 5), "float32"), [1], [0, 1]), desc="len")


def kron_samples(op):
    for dt in op.dtypes:
        for sa, sb in (((2, 3), (2, 2)), ((3,), (2, 2)), ((), (3,)), ((2, 1, 2), (2,))):
            yield Sample((tensor(sa, dt, "sliced"), tensor(sb, dt)), desc=f"{dt} {sa} {sb}")


def multi_dot_samples(op):
    for dt in op.dtypes:
        for shapes in (((2, 3), (3, 4)), ((5,), (5, 2), (2, 6), (6,)), ((2, 9), (9, 1), (1, 7)),
                       ((3,), (3, 4), (4, 4), (4, 2))):
            if op.name.startswith("chain_matmul") and any(len(s) != 2 for s in shapes):
                continue
            yield Sample(([tensor(s, dt) for s in shapes],), desc=f"{dt} {shapes}")
    yield Sample(([tensor((2, 3), "float32"), tensor((4, 2), "float32")],), desc="shape error")
    yield Sample(([tensor((2, 3), "float32"), tensor((3, 2), "float64")],), desc="dtype error")
    yield Sample(([tensor((2, 3, 3), "float32"), tensor((3, 2), "float32")],), desc="3-d error")


def einsum_samples(op):
    cases = [("ij,jk->ik", ((2, 3), (3, 4))), ("ij,jk", ((2, 3), (3, 4))),
             ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))), ("ii->i", ((3, 3),)), ("ii", ((3, 3),)),
             ("ij->", ((2, 3),)), ("ij->ji", ((2, 3),)), ("i,j->ij", ((3,), (4,))),
             ("...ij,...jk->...ik", ((5, 2, 3), (3, 4))), ("ab,bc,cd,de->ae",
                                                          ((2, 3), (3, 8), (8, 2), (2, 5))),
             ("i,i,i->", ((4,), (4,), (4,))), ("bn,anm,bm->ba", ((2, 3), (4, 3, 5), (2, 5))),
             ("iij->j", ((3, 3, 2),)), ("ij,ij->i", ((1, 3), (4, 3))), ("a...,...b", ((2, 3), (3, 4)))]
    for dt in op.dtypes:
        for eq, shapes in cases:
            yield Sample((eq, [tensor(s, dt, "transposed") for s in shapes]), desc=f"{dt} {eq}")
    yield Sample(("ij,jk->ik", [tensor((2, 3), "float32"), tensor((4, 4), "float32")]),
                 desc="size error")
    yield Sample(("ij,jk->ik", [tensor((2, 3), "float32")]), desc="too few operands")
    yield Sample(("ijk->i", [tensor((2, 3), "float32")]), desc="ndim error")


# -- decompositions ------------------------------------------------------------------------------

def square_samples(op, kind=well, extra=None, errors=True, batch=True, layouts=_LAYOUTS):
    extra = extra or {}
    for dt in op.dtypes:
        for lay in layouts:
            yield Sample((kind((3, 3), dt, lay),), dict(extra), desc=f"{dt} {lay}")
        if batch:
            yield Sample((kind((2, 4, 4), dt),), dict(extra), desc=f"{dt} batch")
            yield Sample((kind((0, 2, 2), dt),), dict(extra), desc=f"{dt} empty batch")
    if errors:
        yield Sample((tensor((2, 3), "float64"),), dict(extra), desc="not square")
        yield Sample((tensor((3,), "float64"),), dict(extra), desc="1-d")
        yield Sample((well((3, 3), "int64"),), dict(extra), desc="int")


def singular_samples(op):
    yield from square_samples(op)
    yield Sample((singular(3, "float64"),), desc="singular", data_dependent=True)


def cholesky_samples(op):
    for upper in (False, True):
        yield from square_samples(op, spd, {"upper": upper})
    if op.name.startswith("linalg_cholesky_ex"):
        return  # a failed factorization's L holds LAPACK's partial values
    yield Sample((T(-np.eye(3), "float64"),), desc="not positive-definite", data_dependent=True)


def cholesky_legacy_samples(op):
    for dt in op.dtypes:
        for upper in (False, True):
            yield Sample((spd((3, 3), dt, "transposed"), upper), desc=f"{dt} {upper}")
            yield Sample((spd((2, 4, 4), dt), upper), desc=f"{dt} batch {upper}")


def solve_samples(op, layouts=_LAYOUTS):
    for dt in op.dtypes:
        for lay in layouts:
            yield Sample((well((3, 3), dt, lay), tensor((3, 2), dt, lay)), desc=f"{dt} {lay}")
        yield Sample((well((3, 3), dt), tensor((3,), dt)), desc=f"{dt} vector")
        yield Sample((well((2, 3, 3), dt), tensor((3, 2), dt)), desc=f"{dt} broadcast B")
        yield Sample((well((3, 3), dt), tensor((4, 3, 2), dt)), desc=f"{dt} broadcast A")
        yield Sample((well((3, 3), dt), tensor((2, 3), dt)), {"left": False}, desc=f"{dt} right")
    yield Sample((well((3, 3), "float64"), tensor((4, 2), "float64")), desc="shape error")
    yield Sample((well((3, 3), "float64"), tensor((3, 2), "float32")), desc="dtype error")
    if op.name.startswith("linalg_solve.") or op.name == "linalg_solve.default":
        yield Sample((singular(3, "float64"), tensor((3,), "float64")), desc="singular",
                     data_dependent=True)


def svd_samples(op):
    name = op.name
    for dt in op.dtypes:
        for shape in ((4, 3), (3, 4), (2, 3, 3)):
            x = tensor(shape, dt, "transposed")
            if name == "_linalg_svd.default":
                for full in (False, True):
                    for uv in (True, False):
                        yield Sample((x, full, uv), desc=f"{dt} {shape} {full} {uv}")
            elif name == "linalg_svd.default":
                for full in (False, True):
                    yield Sample((x, full), desc=f"{dt} {shape} {full}")
            elif name == "svd.default":
                for some in (True, False):
                    for uv in (True, False):
                        yield Sample((x, some, uv), desc=f"{dt} {shape} {some} {uv}")
            else:
                yield Sample((x,), desc=f"{dt} {shape}")
    yield Sample((tensor((3,), "float64"),), desc="1-d error")


def eigh_samples(op):
    uplo = {"_linalg_eigh.default": ("L", "U"), "linalg_eigh.default": ("L", "U"),
            "linalg_eigvalsh.default": ("L", "U")}[op.name]
    for u in uplo:
        yield from square_samples(op, spd, errors=False)
        yield Sample((spd((3, 3), "float64"), u), desc=f"UPLO {u}")
    yield Sample((spd((3, 3), "float64"), "X"), desc="UPLO error")


def lstsq_samples(op):
    for dt in op.dtypes:
        for driver in (None, "gelsd", "gelss", "gels"):
            yield Sample((tensor((5, 3), dt), tensor((5, 2), dt)), {"driver": driver},
                         desc=f"{dt} tall {driver}")
            yield Sample((tensor((2, 5, 3), dt), tensor((5, 2), dt)), {"driver": driver},
                         desc=f"{dt} batched {driver}")
    yield Sample((tensor((5, 3), "float64"), tensor((4, 2), "float64")), desc="shape error")


def vector_norm_samples(op):
    for dt in op.dtypes:
        for ordv in (2, 1, 0, 3, 0.5, float("inf"), float("-inf"), -1):
            for lay in _LAYOUTS:
                yield Sample((tensor((3, 4), dt, lay), ordv), desc=f"{dt} {ordv} {lay}")
            yield Sample((tensor((2, 3, 4), dt), ordv, [0, 2], True), desc=f"{dt} {ordv} dims")
            yield Sample((tensor((), dt), ordv), desc=f"{dt} {ordv} 0-dim")
        yield Sample((tensor((3, 4), dt), 2, [-1]), {"dtype": DT("float64")}, desc=f"{dt} dtype")
    yield Sample((tensor((0, 3), "float32"), float("inf")), desc="empty inf error")
    yield Sample((tensor((0, 3), "float32"), 2), desc="empty 2")
    yield Sample((tensor((3,), "int64"),), desc="int error")


def matrix_norm_samples(op):
    strs = op.name.endswith("str_ord")
    ords = ("fro", "nuc") if strs else (1, -1, 2, -2, float("inf"), float("-inf"))
    for dt in op.dtypes:
        for o in ords:
            yield Sample((tensor((3, 4), dt, "transposed"), o), desc=f"{dt} {o}")
            yield Sample((tensor((2, 3, 4), dt), o, [0, 2], True), desc=f"{dt} {o} dims keepdim")
    yield Sample((tensor((3, 4), "float32"), "abc" if strs else 3), desc="order error")
    yield Sample((tensor((3,), "float32"), "fro" if strs else 2), desc="1-d error")


def norm_samples(op):
    strs = op.name.endswith("ord_str")
    for dt in op.dtypes:
        x = tensor((3, 4), dt, "sliced")
        if strs:
            for o in ("fro", "nuc"):
                yield Sample((x, o), desc=f"{dt} {o}")
                yield Sample((tensor((2, 3, 4), dt), o, [1, 2]), desc=f"{dt} {o} dims")
        else:
            for o in (None, 2, 1, float("inf"), -1):
                yield Sample((x, o), desc=f"{dt} {o}")
                yield Sample((x, o, [1]), desc=f"{dt} {o} dim 1")
            yield Sample((tensor((2, 3, 4), dt),), desc=f"{dt} 3-d no ord")
    yield Sample((tensor((2, 3, 4), "float32"), "fro" if strs else 2), desc="3-d with ord")


def pinv_samples(op):
    legacy = op.name == "linalg_pinv.default"
    for dt in op.dtypes:
        for shape in ((3, 4), (4, 3), (2, 3, 3)):
            x = tensor(shape, dt, "transposed")
            if legacy:
                yield Sample((x, 1e-5), desc=f"{dt} {shape}")
            else:
                yield Sample((x,), desc=f"{dt} {shape}")
                yield Sample((x,), {"atol": 0.5}, desc=f"{dt} {shape} atol")
                yield Sample((x,), {"rtol": 0.3}, desc=f"{dt} {shape} rtol")
        yield Sample((spd((3, 3), dt), 1e-5) if legacy else (spd((3, 3), dt),),
                     {"hermitian": True}, desc=f"{dt} hermitian")


def rank_samples(op):
    legacy = op.name == "linalg_matrix_rank.default"
    for dt in op.dtypes:
        for a in (tensor((3, 4), dt), singular(3, dt), well((2, 3, 3), dt)):
            yield Sample((a, 1e-3) if legacy else (a,), desc=f"{dt}")
            if not legacy:
                yield Sample((a,), {"atol": 1.0, "rtol": 0.1}, desc=f"{dt} tols")
        yield Sample((spd((3, 3), dt), 1e-3) if legacy else (spd((3, 3), dt),),
                     {"hermitian": True}, desc=f"{dt} hermitian")
    yield Sample((tensor((3,), "float32"), 1e-3) if legacy else (tensor((3,), "float32"),),
                 desc="1-d error")


def matrix_power_samples(op):
    for dt in ("float32", "float64", "int64"):
        for n in (0, 1, 2, 3, 5):
            yield Sample((tensor((3, 3), dt, "transposed", low=-2, high=2), n), desc=f"{dt} {n}")
        yield Sample((tensor((2, 2, 2), dt, low=-2, high=2), 4), desc=f"{dt} batch")
    for n in (-1, -3):
        yield Sample((well((3, 3), "float64"), n), desc=f"inverse {n}")
    yield Sample((tensor((2, 3), "float32"), 2), desc="not square")


# -- the table -----------------------------------------------------------------------------------

_add("baddbmm.default", baddbmm_samples, _P, "baddbmm_.default", "baddbmm.out")
_add("addbmm.default", baddbmm_samples, _P, "addbmm_.default", "addbmm.out")
_add("addmv.default", addmv_samples, _P, "addmv_.default", "addmv.out")
_add("vdot.default", vdot_samples, _P, None, "vdot.out")
_add("inner.default", inner_outer_samples, _P, None, "inner.out")
_add("outer.default", inner_outer_samples, _P, None, "outer.out")
_add("ger.default", inner_outer_samples, _P, None, "ger.out")
_add("tensordot.default", tensordot_samples, _P, None, "tensordot.out")
_add("kron.default", kron_samples, _P, None, "kron.out")
_add("linalg_multi_dot.default", multi_dot_samples, _P, None, "linalg_multi_dot.out")
_add("chain_matmul.default", multi_dot_samples, _P, None, "chain_matmul.out")
_add("einsum.default", einsum_samples, _F)
_add("linalg_inv_ex.default", square_samples, _F, None, "linalg_inv_ex.inverse")
_add("linalg_inv.default", singular_samples, _F, None, "linalg_inv.out")
_add("inverse.default", singular_samples, _F, None, "inverse.out")
# The LU/pivots outputs of the underscore ops are LAPACK's working storage, whose contents follow
# the input's memory layout in PyTorch: compared on contiguous inputs only.
_LU_ONLY = ("contiguous",)
_add("_linalg_det.default", lambda op: square_samples(op, layouts=_LU_ONLY), _F, None,
     "_linalg_det.result")
_add("linalg_det.default", singular_samples, _F, None, "linalg_det.out")
_add("det.default", singular_samples)
_add("_linalg_slogdet.default", lambda op: square_samples(op, layouts=_LU_ONLY), _F, None,
     "_linalg_slogdet.sign")
_add("linalg_slogdet.default", singular_samples, _F, None, "linalg_slogdet.out")
_add("slogdet.default", singular_samples, _F, None, "slogdet.out")
_add("logdet.default", lambda op: square_samples(op, spd))
_add("linalg_solve_ex.default", solve_samples, _F, None, "linalg_solve_ex.out")
_add("linalg_solve.default", solve_samples, _F, None, "linalg_solve.out")
_add("linalg_cholesky_ex.default", cholesky_samples, _F, None, "linalg_cholesky_ex.L")
_add("linalg_cholesky.default", cholesky_samples, _F, None, "linalg_cholesky.out")
_add("cholesky.default", cholesky_legacy_samples, _F, None, "cholesky.out")
_add("linalg_svdvals.default", svd_samples, _F, None, "linalg_svdvals.out")
_add("linalg_eigvalsh.default", eigh_samples, _F, None, "linalg_eigvalsh.out")
_add("linalg_lstsq.default", lstsq_samples, _F, None, "linalg_lstsq.out", 1e-3, 1e-4,
     meta_tags=("dynamic_output_shape",))
_add("linalg_vector_norm.default", vector_norm_samples, ("float32", "float64", "float16"), None,
     "linalg_vector_norm.out", 1e-4, 1e-5)
_add("linalg_matrix_norm.default", matrix_norm_samples, _F, None, "linalg_matrix_norm.out")
_add("linalg_matrix_norm.str_ord", matrix_norm_samples, _F, None,
     "linalg_matrix_norm.str_ord_out")
_add("linalg_norm.default", norm_samples, _F, None, "linalg_norm.out")
_add("linalg_norm.ord_str", norm_samples, _F, None, "linalg_norm.ord_str_out")
_add("linalg_pinv.default", pinv_samples, _F, None, "linalg_pinv.out", 1e-3, 1e-4)
_add("linalg_pinv.atol_rtol_float", pinv_samples, _F, None, "linalg_pinv.atol_rtol_float_out",
     1e-3, 1e-4)
_add("linalg_matrix_rank.default", rank_samples, _F, None, "linalg_matrix_rank.out")
_add("linalg_matrix_rank.atol_rtol_float", rank_samples, _F, None,
     "linalg_matrix_rank.atol_rtol_float_out")
_add("linalg_matrix_power.default", matrix_power_samples, _P, None, "linalg_matrix_power.out")
_add("matrix_power.default", matrix_power_samples, _P, None, "matrix_power.out")

_SIGNS = ("singular vectors are unique only up to sign (LAPACK builds differ): checked by "
          "reconstruction in tests/test_grad_linalg.py")
NOT_IN_TABLE.update({
    "_linalg_svd.default": _SIGNS, "linalg_svd.default": _SIGNS, "svd.default": _SIGNS,
    "linalg_qr.default": _SIGNS.replace("singular vectors", "Q's columns"),
    "_linalg_eigh.default": _SIGNS.replace("singular vectors", "eigenvectors"),
    "linalg_eigh.default": _SIGNS.replace("singular vectors", "eigenvectors"),
    "_linalg_solve_ex.default": "its LU output follows the memory layout LAPACK worked in: the "
                                "solution and info are checked through linalg_solve_ex",
    "linalg_eig.default": "eigenvectors are defined up to a complex phase: checked by "
                          "reconstruction in tests/test_grad_linalg.py",
    "linalg_eigvals.default": "complex eigenvalues in LAPACK's order: checked sorted in "
                              "tests/test_grad_linalg.py",
    # their out= forms, for the same reasons: out= semantics in tests/test_out_overloads.py
    "svd.U": _SIGNS, "linalg_svd.U": _SIGNS,
    "linalg_qr.out": _SIGNS.replace("singular vectors", "Q's columns"),
    "linalg_eigh.eigvals": _SIGNS.replace("singular vectors", "eigenvectors"),
    "linalg_eig.out": "eigenvectors are defined up to a complex phase",
    "linalg_eigvals.out": "complex eigenvalues in LAPACK's order",
    "_linalg_svd.U": _SIGNS,
    "_linalg_eigh.eigenvalues": _SIGNS.replace("singular vectors", "eigenvectors"),
    "_linalg_solve_ex.result": "its LU output follows the memory layout LAPACK worked in",
    "_linalg_check_errors.default": "raises LinAlgError from info: checked through linalg_inv, "
                                    "linalg_solve and linalg_cholesky's singular samples",
    "_unsafe_view.default": "internal to matmul: checked by matmul's entry and "
                            "tests/test_grad_linalg.py",
    "_unsafe_view.out": "internal to matmul (out= form generated with it)",
})

"""out= forms of the decompositions whose outputs are unique only up to sign or phase (svd,
linalg_svd, linalg_qr, linalg_eigh, linalg_eig, linalg_eigvals and the underscore ops behind
them; test_out_sweep compares values exactly, so they are not in its table): beside PyTorch, each out of another dtype raises the
same error (or is written), a wrong non-empty shape is resized with the same warning, the outs
are returned, and what they hold reconstructs the input."""
import warnings

import numpy as np
import pytest

import ember

_A = np.array([[4.0, 1.0, -2.0], [1.0, 3.0, 0.5], [-2.0, 0.5, 5.0]], dtype=np.float32)

# name -> (call(lib, A, out), the outs' dtypes when right)
_OPS = {
    "svd.U": (lambda L, a, out: L.svd(a, out=out), ("float32",) * 3),
    "svd.U no uv": (lambda L, a, out: L.svd(a, some=False, compute_uv=False, out=out),
                    ("float32",) * 3),
    "linalg_svd.U": (lambda L, a, out: L.linalg.svd(a, out=out), ("float32",) * 3),
    "linalg_qr.out": (lambda L, a, out: L.linalg.qr(a, out=out), ("float32",) * 2),
    "linalg_eigh.eigvals": (lambda L, a, out: L.linalg.eigh(a, out=out), ("float32",) * 2),
    "linalg_eig.out": (lambda L, a, out: L.linalg.eig(a, out=out), ("complex64",) * 2),
    "linalg_eigvals.out": (lambda L, a, out: L.linalg.eigvals(a, out=out), ("complex64",)),
    "_linalg_svd.U": (lambda L, a, out: L._linalg_svd(a, out=out), ("float32",) * 3),
    "_linalg_eigh.eigenvalues": (lambda L, a, out: L._linalg_eigh(a, out=out), ("float32",) * 2),
    "_linalg_solve_ex.result": (lambda L, a, out: L._linalg_solve_ex(a, a, out=out),
                                ("float32", "float32", "int32", "int32")),
}


def _reconstruct(name, r):
    """The input rebuilt from the outs (or the sorted eigenvalues), as NumPy."""
    r = [np.asarray(t.tolist()) for t in (r if isinstance(r, tuple) else (r,))]
    if name == "svd.U":
        return r[0] @ np.diag(r[1]) @ r[2].T
    if name == "svd.U no uv":  # S, and zeros for U and V
        return np.concatenate([r[1], r[0].ravel(), r[2].ravel()])
    if name == "_linalg_solve_ex.result":  # A X = A: the identity, and info 0
        return np.concatenate([r[0].ravel(), r[3].ravel()])
    if name in ("linalg_svd.U", "_linalg_svd.U"):
        return r[0] @ np.diag(r[1]) @ r[2]
    if name == "linalg_qr.out":
        return r[0] @ r[1]
    if name in ("linalg_eigh.eigvals", "_linalg_eigh.eigenvalues", "linalg_eig.out"):
        return r[1] @ np.diag(r[0]) @ np.linalg.inv(r[1])
    return np.sort_complex(r[0])


def _run(L, name, which, dtype=None, shape=None):
    """Call with fresh outs, one of them (``which``) replaced: (error, resize warnings, the
    outs' dtypes and shapes, whether they were returned, the reconstruction)."""
    call, dtypes = _OPS[name]
    outs = [L.empty(0, dtype=getattr(L, d)) for d in dtypes]
    if which is not None:
        outs[which] = L.zeros(shape or (0,), dtype=getattr(L, dtype or dtypes[which]))
    out = tuple(outs) if len(outs) > 1 else outs[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = call(L, L.tensor(_A), out)
        except RuntimeError as e:
            return type(e).__name__, str(e)
    resized = [str(w.message).split(".")[0] for w in caught if "resized" in str(w.message)]
    got = r if isinstance(r, tuple) else (r,)
    return (resized, [(str(o.dtype).split(".")[1], tuple(o.shape)) for o in outs],
            all(g is o for g, o in zip(got, outs)), _reconstruct(name, r))


def _same(mine, theirs):
    assert type(mine) is type(theirs) and len(mine) == len(theirs)
    if isinstance(mine[0], str):  # an error: type and message
        assert mine == theirs
        return
    assert mine[:3] == theirs[:3]
    np.testing.assert_allclose(mine[3], theirs[3], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", list(_OPS))
def test_out_forms_like_pytorch(torch, name):
    _same(_run(ember, name, None), _run(torch, name, None))
    want = {"linalg_eigvals.out": np.sort_complex(np.linalg.eigvals(_A)),
            "_linalg_solve_ex.result": np.concatenate([np.eye(3).ravel(), [0]])}
    if name != "svd.U no uv":
        np.testing.assert_allclose(_run(ember, name, None)[3], want.get(name, _A), rtol=1e-4,
                                   atol=1e-4)
    for which in range(len(_OPS[name][1])):
        for dtype in ("float64", "int64", "complex64", "float32"):
            _same(_run(ember, name, which, dtype), _run(torch, name, which, dtype))
        _same(_run(ember, name, which, shape=(2, 5)), _run(torch, name, which, shape=(2, 5)))

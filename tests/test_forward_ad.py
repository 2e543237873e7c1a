"""Forward-mode AD (``ember.autograd.forward_ad``): the API against PyTorch's, and an OpInfo-wide
check of every op's forward derivative.

For each op of the OpInfo table (tests/opinfo*.py) its first float64 sample runs with every
floating tensor argument made dual (random tangents ``u``), in ember and in PyTorch. Where
PyTorch supports forward AD for the op, ember's output tangents ``J u`` must equal PyTorch's,
and must agree with ember's reverse mode: ``<v, J u> == <J^T v, u>`` for a random ``v``. Ops
that ember cannot differentiate forward yet are listed in :data:`UNSUPPORTED` with a reason;
they must raise PyTorch's NotImplementedError ("Trying to use forward AD with ...").
"""
import collections
import copy
import warnings

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from helpers import report_line
from opinfo import OPS
from test_ops import _ids, ember_args, overload, torch_args
from test_ops_grad import float64_samples, _values

torch = pytest.importorskip("torch")

# Ops PyTorch differentiates in forward mode and ember does not (yet): op -> reason.
_NOT_PORTED = "PyTorch's forward formula not yet ported to ember's derivatives.yaml"
UNSUPPORTED = {}
# Ops whose forward derivative ember computes differently from PyTorch, checked against central
# finite differences instead: op -> reason.
DIFFERS = {
    "cholesky_inverse.default": "only the factor's triangle is read, so ember's tangent keeps "
                                "only the triangle of the input tangent (finite differences "
                                "agree); PyTorch's cholesky_inverse_jvp uses the whole tangent",
}

_STATS = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def coverage_report(request):
    yield
    report_line(request, "forward AD coverage: " + ", ".join(
        f"{n} {k}" for k, n in _STATS.most_common()))


# ---------------------------------------------------------------------------------------------
# The API.

def test_make_unpack_dual():
    x, t = ember.randn(3, dtype=ember.float64), ember.randn(3, dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        p, tan = fwAD.unpack_dual(d)
        assert tan is t and np.array_equal(p.numpy(), x.numpy())
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        y = d * d
    assert fwAD.unpack_dual(y).tangent is None  # the level's tangents are gone on exit
    assert fwAD.unpack_dual(x).tangent is None


def test_errors_match_pytorch():
    cases = {
        "no level": lambda lib, fw: fw.make_dual(lib.ones(2), lib.ones(2)),
        "int primal": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(
            lib.ones(2, dtype=lib.int64), lib.ones(2))),
        "size": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(lib.ones(2), lib.ones(3))),
        "nested": lambda lib, fw: _in_level(fw, fw.enter_dual_level),
        "twice": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(
            fw.make_dual(lib.ones(2), lib.ones(2)), lib.ones(2))),
    }
    import torch.autograd.forward_ad as tfw
    for name, case in cases.items():
        errs = []
        for lib, fw in ((ember, fwAD), (torch, tfw)):
            try:
                case(lib, fw)
                errs.append(None)
            except Exception as e:  # noqa: BLE001
                errs.append((type(e).__name__, str(e).replace("torch.", "ember.")))
        assert errs[0] == errs[1], name


def _in_level(fw, fn):
    with fw.dual_level():
        return fn()


def test_not_supported_message():
    # ormqr has no forward formula in PyTorch's derivatives.yaml either
    x = ember.randn(3, 3, dtype=ember.float64)
    tau, c = ember.randn(2, dtype=ember.float64), ember.randn(3, 2, dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones_like(x))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                                                      "ormqr that does not support"):
            ember.ormqr(d, tau, c)


def test_householder_product_jvp_matches_pytorch():
    # batched, tall, k < n, and tangents on both inputs (the OpInfo test takes one sample)
    import torch.autograd.forward_ad as tfw
    rng = np.random.default_rng(0)
    def draw(shape, cplx):
        return rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cplx else 0)
    for shape, k, cplx in (((4, 3), 2, False), ((2, 5, 3), 3, False), ((3, 3), 3, False),
                           ((4, 3), 2, True)):
        arrs = [draw(shape, cplx), draw(shape[:-2] + (k,), cplx)]
        tans = [draw(a.shape, cplx) for a in arrs]
        outs = []
        for lib, fw in ((ember, fwAD), (torch, tfw)):
            with fw.dual_level():
                v, t = (fw.make_dual(lib.tensor(a), lib.tensor(u)) for a, u in zip(arrs, tans))
                r = fw.unpack_dual(lib.linalg.householder_product(v, t))
                outs.append((r.primal.numpy().copy(), r.tangent.numpy().copy()))
        np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-12)
        np.testing.assert_allclose(outs[0][1], outs[1][1], atol=1e-10)


def test_views_and_inplace():
    x, t = ember.randn(4, 3, dtype=ember.float64), ember.randn(4, 3, dtype=ember.float64)
    tx, tt = torch.from_numpy(x.numpy().copy()), torch.from_numpy(t.numpy().copy())
    import torch.autograd.forward_ad as tfw
    outs = []
    for lib, fw, a, b in ((ember, fwAD, x, t), (torch, tfw, tx, tt)):
        with fw.dual_level():
            d = fw.make_dual(a.clone(), b)
            v = d[1:].t()                      # a view of a dual is a dual
            v.mul_(2)                          # in place through the view: base's tangent too
            w = lib.zeros(4, 3, dtype=lib.float64)
            w[0].copy_(d[0].exp())             # a plain tensor gets a tangent by an in-place op
            outs.append([fw.unpack_dual(z).tangent.numpy().copy() for z in (d, v, w)])
    for e, t_ in zip(*outs):
        np.testing.assert_allclose(e, t_)


# ---------------------------------------------------------------------------------------------
# Every op of the table.

def _dualize(args, kwargs, make):
    leaves = []

    def conv(x):
        if hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.is_floating_point:
            d = make(x, len(leaves))
            leaves.append(x)
            return d
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        return x
    return [conv(a) for a in args], {k: conv(v) for k, v in kwargs.items()}, leaves


def _outs(res):
    outs = res if isinstance(res, (tuple, list)) else (res,)
    return [o for o in outs if hasattr(o, "dtype") and hasattr(o, "shape")]


def _torch_fw(op, sample, tangents):
    import torch.autograd.forward_ad as tfw
    ta, tk = torch_args(torch, copy.deepcopy(sample))
    with tfw.dual_level():
        ta, tk, leaves = _dualize(ta, tk, lambda x, i: tfw.make_dual(
            x, torch.from_numpy(tangents(i, tuple(x.shape)).copy()).to(x.dtype)))
        if not leaves:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = overload(torch.ops, op.name)(*ta, **tk)
        return [(o.detach().numpy().copy() if o.dtype.is_floating_point else None,
                 None if tfw.unpack_dual(o).tangent is None else
                 tfw.unpack_dual(o).tangent.detach().resolve_conj().numpy().copy())
                for o in _outs(res)]


def _ember_fw(op, sample, tangents):
    ea, ek = ember_args(copy.deepcopy(sample))  # in-place ops write it
    with fwAD.dual_level():
        ea, ek, leaves = _dualize(ea, ek, lambda x, i: fwAD.make_dual(
            x, ember.tensor(tangents(i, tuple(x.shape)), dtype=x.dtype)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = overload(ember.ops, op.name)(*ea, **ek)
        return [(fwAD.unpack_dual(o).tangent) for o in _outs(res)], res


def _reverse_consistency(op, sample, tangents, ember_tangents, rng):
    """<v, J u> (forward) == <J^T v, u> (reverse), in ember."""
    ea, ek = ember_args(copy.deepcopy(sample))  # in-place ops write it
    leaves = []

    def conv(x):
        if hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.is_floating_point:
            x = x.detach().requires_grad_(True)
            leaves.append(x)
            return x.clone()  # not the leaf itself: in-place ops may write it
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        return x
    ea, ek = [conv(a) for a in ea], {k: conv(v) for k, v in ek.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = _outs(overload(ember.ops, op.name)(*ea, **ek))
    pairs = [(o, t) for o, t in zip(outs, ember_tangents)
             if t is not None and o.requires_grad and not o.dtype.is_complex]
    if not pairs:
        return
    vs = [rng.standard_normal(tuple(o.shape)) for o, _ in pairs]
    try:
        gs = ember.autograd.grad([o for o, _ in pairs], leaves,
                                 [ember.tensor(v, dtype=o.dtype) for v, (o, _) in zip(vs, pairs)],
                                 allow_unused=True)
    except RuntimeError:
        # reverse mode refuses the sample (a src larger than its index): so does PyTorch's
        with pytest.raises(RuntimeError):
            _torch_consistent(op, sample, tangents, vs, pairs)
        return False
    fwd = sum(float(np.sum(v * _values(t, v.shape))) for v, (_, t) in zip(vs, pairs))
    rev = sum(float(np.sum(_values(g, tuple(x.shape)) * tangents(i, tuple(x.shape))))
              for i, (g, x) in enumerate(zip(gs, leaves)))
    if np.isclose(fwd, rev, rtol=1e-6, atol=1e-8, equal_nan=True):
        return True
    # ties, duplicate indices, NaN operands: reverse and forward mode may legitimately pick
    # different one-sided derivatives; then PyTorch's two modes disagree the same way
    assert not _torch_consistent(op, sample, tangents, vs, pairs), \
        (op.name, sample.desc, fwd, rev)
    return False


def _torch_consistent(op, sample, tangents, vs, pairs):
    import torch.autograd.forward_ad as tfw
    ta, tk = torch_args(torch, copy.deepcopy(sample))
    leaves = []

    def conv(x):
        if hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.is_floating_point:
            x = x.detach().requires_grad_(True)
            leaves.append(x)
            return x.clone()  # not the leaf itself: in-place ops may write it
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        return x
    ta, tk = [conv(a) for a in ta], {k: conv(v) for k, v in tk.items()}
    outs = [o for o in _outs(overload(torch.ops, op.name)(*ta, **tk)) if o.requires_grad
            and not o.dtype.is_complex][:len(vs)]
    gs = torch.autograd.grad(outs, leaves, [torch.from_numpy(v).to(o.dtype)
                                            for v, o in zip(vs, outs)], allow_unused=True)
    rev = sum(float(np.sum(_values(g, tuple(x.shape)) * tangents(i, tuple(x.shape))))
              for i, (g, x) in enumerate(zip(gs, leaves)))
    with tfw.dual_level():
        ta2, tk2 = torch_args(torch, copy.deepcopy(sample))
        ta2, tk2, _ = _dualize(ta2, tk2, lambda x, i: tfw.make_dual(
            x, torch.from_numpy(tangents(i, tuple(x.shape)).copy()).to(x.dtype)))
        res = _outs(overload(torch.ops, op.name)(*ta2, **tk2))
        tans = [tfw.unpack_dual(o).tangent for o in res if o.dtype.is_floating_point]
    fwd = sum(float(np.sum(v * _values(t, v.shape))) for v, t in zip(vs, tans))
    return np.isclose(fwd, rev, rtol=1e-6, atol=1e-8, equal_nan=True)


def _check_finite_differences(op, sample, tangents, e_tans, eps=1e-6):
    def run(sign):
        ea, ek = ember_args(copy.deepcopy(sample))
        k = [0]

        def shift(x):
            if hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.is_floating_point:
                i = k[0]
                k[0] += 1
                return x + sign * eps * ember.tensor(tangents(i, tuple(x.shape)), dtype=x.dtype)
            if isinstance(x, (list, tuple)):
                return type(x)(shift(v) for v in x)
            return x
        ea, ek = [shift(a) for a in ea], {kk: shift(v) for kk, v in ek.items()}
        return [o.numpy() for o in _outs(overload(ember.ops, op.name)(*ea, **ek))]
    plus, minus = run(1), run(-1)
    for e, p, m in zip(e_tans, plus, minus):
        if e is not None:
            np.testing.assert_allclose(e.numpy(), (p - m) / (2 * eps), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
def test_forward_ad(op):
    samples = float64_samples(op)
    if not samples:
        _STATS["no float64 sample"] += 1
        pytest.skip("no float64 sample")
    # ordinary values first: at infinities and NaNs one-sided limits differ between formulas
    plain = [x for x in samples if not any(w in x.desc.lower() for w in ("special", "nan", "inf"))]
    sample = (plain or samples)[0]
    cache = {}

    def tangents(i, shape):
        if i not in cache:
            cache[i] = np.random.default_rng(10 + i).standard_normal(shape)
        return cache[i]
    try:
        t_res = _torch_fw(op, sample, tangents)
    except (NotImplementedError, RuntimeError) as e:
        if "forward AD" in str(e) or "forward grad" in str(e) or "fw_grad" in str(e):
            _STATS["unsupported in PyTorch"] += 1
            pytest.skip("PyTorch has no forward AD for this op")
        _STATS["error sample"] += 1
        pytest.skip("error sample (tests/test_ops.py compares errors)")
    if t_res is None or all(t is None for _, t in t_res):
        _STATS["no differentiable output"] += 1
        pytest.skip("no differentiable output")
    if op.name in UNSUPPORTED:
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
            _ember_fw(op, sample, tangents)
        _STATS["listed unsupported"] += 1
        return
    e_tans, _ = _ember_fw(op, sample, tangents)
    if op.name in DIFFERS:
        _check_finite_differences(op, sample, tangents, e_tans)
        _STATS["checked against finite differences"] += 1
        return
    assert len(e_tans) == len(t_res)
    for k, (e, (tp, t)) in enumerate(zip(e_tans, t_res)):
        if t is None:
            continue
        assert e is not None, f"{op.name}: output {k} has no tangent (PyTorch's has one)"
        np.testing.assert_allclose(_values(e, t.shape), t, rtol=1e-6, atol=1e-7,
                                   equal_nan=True, err_msg=f"{op.name} output {k} tangent")
    if _reverse_consistency(op, sample, tangents, e_tans, np.random.default_rng(0)) is False:
        _STATS["checked (modes disagree at ties, as in PyTorch)"] += 1
        return
    _STATS["checked"] += 1


# ---------------------------------------------------------------------------------------------
# autograd.Function: jvp, and vmap (the staticmethod and the errors)

def _functions(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            ctx.k = k
            return x ** 3 * k

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("not used")

        @staticmethod
        def jvp(ctx, x_t, k_t):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * x_t * ctx.k

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class WithVmap(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def vmap(info, in_dims, x):
            return x.movedim(in_dims[0], 0) * info.batch_size, 0

    class NoVmap(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Generated(NoVmap):
        generate_vmap_rule = True
    return Cube, NoJvp, WithVmap, NoVmap, Generated


def test_function_jvp_and_vmap_match_torch():
    import torch.autograd.forward_ad as tfw
    x, t = np.random.default_rng(3).standard_normal((2, 3, 2))
    res = []
    for lib, fw in ((ember, fwAD), (torch, tfw)):
        Cube, NoJvp, WithVmap, NoVmap, Generated = _functions(lib)
        out = []
        with fw.dual_level():
            y = Cube.apply(fw.make_dual(lib.tensor(x), lib.tensor(t)), 2.0)
            out.append(fw.unpack_dual(y).tangent.numpy())
            try:
                NoJvp.apply(fw.make_dual(lib.tensor(x), lib.tensor(t)))
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        out.append(lib.func.vmap(WithVmap.apply, in_dims=1)(lib.tensor(x)).numpy())
        out.append(lib.func.vmap(Generated.apply)(lib.tensor(x)).numpy())
        for F in (NoVmap, NoJvp):
            try:
                lib.func.vmap(F.apply)(lib.tensor(x))
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        res.append(out)
    assert len(res[0]) == len(res[1]) == 6
    for a, b in zip(*res):
        if isinstance(a, tuple):
            assert a == b
        else:
            np.testing.assert_allclose(a, b)

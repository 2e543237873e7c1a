"""Drives the OpInfo table (tests/opinfo.py and the tests/opinfo_*.py area modules) through
autograd: for every op, its float64 samples (float32-only samples are promoted to float64) are
differentiated in ember and in PyTorch with the same random ``grad_outputs``, and
``ember.autograd.gradcheck`` checks the smallest one against finite differences.

An op whose outputs PyTorch differentiates must be differentiable in ember too: an op without a
derivative formula (and no composite decomposition) fails here with "the derivative for ... is
not implemented". Ops whose outputs never require grad in PyTorch (comparisons, integer ops)
must not require grad in ember either. A coverage line is printed when the module ends.
"""
import collections
import warnings

import numpy as np
import pytest

import ember
from helpers import report_line
import ember.autograd.derivatives as D
from ember._dispatch.dispatcher import get_entry
from ember._dispatch.keys import K
from opinfo import OPS, T
from test_ops import _ids, ember_args, overload, torch_args

PARITY_SAMPLES = 2  # samples compared with PyTorch per table entry
GRADCHECK_MAX_NUMEL = 24  # gradcheck's cost grows with the elements of inputs and outputs
_FLOATS = ("float32", "float64")

_STATS = {"ops": set(), "formula": set(), "composite": set(), "parity": set(),
          "gradcheck": set(), "gradcheck_failed": set(), "skipped": []}


@pytest.fixture(scope="module", autouse=True)
def coverage_report(request):
    """Print how many table ops have derivatives, gradient parity and passing gradchecks."""
    yield
    s = _STATS
    reasons = collections.Counter(s["skipped"])
    line = (f"autograd coverage: {len(s['ops'])} table ops, {len(s['formula'])} with a derivative "
            f"formula, {len(s['composite'])} composite, {len(s['parity'])} with gradients equal "
            f"to PyTorch's, {len(s['gradcheck'])} passing gradcheck ("
            f"{len(s['gradcheck_failed'])} failing it like PyTorch); {len(s['skipped'])} "
            f"table entries skipped (" + ", ".join(f"{n} {r}" for r, n in reasons.most_common()) + ")")
    report_line(request, line)


def _qualname(name):
    op, _, ov = name.partition(".")
    return f"aten::{op}" + ("" if ov in ("", "default") else f".{ov}")


def _kind(name):
    """How ember differentiates an op: 'formula', 'composite', 'never' or None (no way)."""
    q = _qualname(name)
    if q in D.derivatives:
        return "formula"
    if q in D.never_recorded:
        return "never"
    entry = get_entry(q)
    if entry is not None and entry.has_kernel(K.CompositeImplicitAutograd):
        return "composite"
    return None


# ---------------------------------------------------------------------------------------------
# Choosing samples: float64 (or float32 promoted to float64), no half precision, no errors.

def _specs(x):
    if isinstance(x, T):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _specs(v)


def _promote(x):
    if isinstance(x, T):
        return T(x.values, "float64", x.layout) if x.dtype == "float32" else x
    if isinstance(x, (list, tuple)):
        return type(x)(_promote(v) for v in x)
    return x


def float64_samples(op):
    """The op's samples with float tensors, all in float64: native float64 samples first."""
    native, promoted = [], []
    for s in op.samples(op):
        floats = {t.dtype for t in _specs(s.args + tuple(s.kwargs.values()))
                  if t.dtype not in ("bool",) and not t.dtype.startswith(("int", "uint"))}
        if not floats or not floats <= set(_FLOATS):
            continue
        if floats == {"float64"}:
            native.append(s)
        elif "float64" not in floats:
            s.args = _promote(s.args)
            s.kwargs = {k: _promote(v) for k, v in s.kwargs.items()}
            promoted.append(s)
    return native + promoted


def _numel(sample):
    return sum(int(np.prod(np.shape(t.values))) for t in _specs(sample.args))


# ---------------------------------------------------------------------------------------------
# Running one sample in both libraries.

def _leaves(args, kwargs, make):
    """Detach every floating tensor argument into a leaf that requires grad; returns them."""
    leaves = []

    def conv(x):
        if hasattr(x, "requires_grad") and x.dtype.is_floating_point:
            x = make(x)
            leaves.append(x)
            return x
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        return x
    return [conv(a) for a in args], {k: conv(v) for k, v in kwargs.items()}, leaves


def _diff_outputs(res):
    outs = res if isinstance(res, (tuple, list)) else (res,)
    return [o for o in outs if hasattr(o, "requires_grad") and o.requires_grad]


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


class _Skip(Exception):
    pass


def torch_grads(torch, op, sample, rng):
    """PyTorch's gradients: (leaf count, grad_output arrays, gradients or exception)."""
    ta, tk = torch_args(torch, sample)
    ta, tk, leaves = _leaves(ta, tk, lambda t: t.detach().requires_grad_(True))
    try:
        res = _quiet(overload(torch.ops, op.name), *ta, **tk)
    except Exception:  # noqa: BLE001  an error sample: test_ops.py compares the errors
        raise _Skip("error sample") from None
    outs = _diff_outputs(res)
    if not leaves or not outs:
        return leaves, outs, [], None
    gos = [rng.standard_normal(tuple(o.shape)) for o in outs]
    try:
        gs = torch.autograd.grad(outs, leaves, [torch.from_numpy(g) .to(o.dtype)
                                                for g, o in zip(gos, outs)], allow_unused=True)
    except RuntimeError as e:
        return leaves, outs, gos, e
    return leaves, outs, gos, gs


def ember_grads(op, sample, n_outs, gos):
    ea, ek = ember_args(sample)
    ea, ek, leaves = _leaves(ea, ek, lambda t: t.detach().requires_grad_(True))
    res = _quiet(overload(ember.ops, op.name), *ea, **ek)
    outs = _diff_outputs(res)
    assert len(outs) == n_outs, (f"{op.name} [{sample.desc}]: {len(outs)} outputs require grad, "
                                 f"PyTorch has {n_outs}")
    if not outs:
        return [], []
    gos = [ember.tensor(g, dtype=o.dtype) for g, o in zip(gos, outs)]
    return ember.autograd.grad(outs, leaves, gos, allow_unused=True), outs


def _values(g, like_shape):
    if g is None or getattr(g, "_is_zerotensor", lambda: False)():  # PyTorch's ZeroTensor
        return np.zeros(like_shape)
    a = g.detach().resolve_conj().resolve_neg()  # (lazy conjugate/negative views)
    return a._nd() if hasattr(a, "_nd") else a.numpy()


def check_parity(torch, op, sample, rng):
    """ember's gradients equal PyTorch's. Returns False when PyTorch differentiates nothing."""
    leaves, outs, gos, t_gs = torch_grads(torch, op, sample, rng)
    if isinstance(t_gs, Exception):
        # PyTorch has no derivative either: ember must refuse the same way
        with pytest.raises(type(t_gs)):
            ember_grads(op, sample, len(outs), gos)
        raise _Skip("no derivative in PyTorch")
    e_gs, e_outs = ember_grads(op, sample, len(outs), gos)
    if not outs:
        return False
    for e, t in zip(e_outs, outs):
        if not np.allclose(_values(e, ()), _values(t, ()), rtol=1e-6, atol=1e-8, equal_nan=True):
            # e.g. eigenvectors of another sign: the gradients may differ as well
            raise _Skip("forward values differ (tests/test_ops.py compares them)")
    for i, (e, t, leaf) in enumerate(zip(e_gs, t_gs, leaves)):
        shape = tuple(leaf.shape)
        if e is not None:
            assert tuple(e.shape) == shape and e.dtype.name == str(leaf.dtype)[6:], \
                (op.name, sample.desc, i, e.shape, e.dtype)
        np.testing.assert_allclose(
            _values(e, shape), _values(t, shape), rtol=1e-6, atol=1e-8, equal_nan=True,
            err_msg=f"{op.name} [{sample.desc}]: gradient of input {i}")
    return True


# ---------------------------------------------------------------------------------------------
# gradcheck on the smallest sample.

def _jitter(sample, rng):
    """The sample with every float value moved off ties and kinks (|x| scaled by 1 +- 1..3%,
    zeros moved to +-0.03), where finite differences are meaningless."""
    def move(x):
        if isinstance(x, T) and x.dtype == "float64":
            v = np.asarray(x.values, dtype=np.float64)
            u = rng.uniform(0.01, 0.03, v.shape) * rng.choice([-1.0, 1.0], v.shape)
            return T(np.where(v == 0, 3 * u, v * (1 + u)), x.dtype, x.layout)
        if isinstance(x, (list, tuple)):
            return type(x)(move(v) for v in x)
        return x
    return type(sample)(move(sample.args), {k: move(v) for k, v in sample.kwargs.items()},
                        desc=sample.desc + " (jittered)")


def run_gradcheck(op, sample, torch=None):
    """ember's gradcheck on the sample (PyTorch's with ``torch``): True/False, or None when the
    differentiable tensors are not all positional arguments."""
    if torch is None:
        args, kwargs = ember_args(sample)
        fn, check = overload(ember.ops, op.name), ember.autograd.gradcheck
    else:
        args, kwargs = torch_args(torch, sample)
        fn, check = overload(torch.ops, op.name), torch.autograd.gradcheck
    args, kwargs, leaves = _leaves(args, kwargs,
                                   lambda t: t.contiguous().detach().requires_grad_(True))
    ids = {id(x) for x in leaves}
    slots = [i for i, a in enumerate(args) if id(a) in ids]
    if len(slots) != len(leaves) or not leaves:
        return None  # tensors inside lists or kwargs: covered by the parity check only

    def f(*xs):
        a = list(args)
        for i, x in zip(slots, xs):
            a[i] = x
        return fn(*a, **kwargs)
    try:
        return _quiet(check, f, tuple(leaves), raise_exception=False)
    except Exception:  # noqa: BLE001  (PyTorch's gradcheck raises for some unsupported cases)
        return False


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
def test_grad(torch, op):
    kind = _kind(op.name)
    _STATS["ops"].add(op.name)
    if kind in ("formula", "composite"):
        _STATS[kind].add(op.name)
    rng = np.random.default_rng(0)
    compared = []
    last_skip = "no float64 samples"
    for s in float64_samples(op):
        try:
            if check_parity(torch, op, s, rng):
                compared.append(s)
            else:
                last_skip = "no differentiable outputs"
        except _Skip as e:
            last_skip = str(e)
        if len(compared) >= PARITY_SAMPLES:
            break
    if not compared:
        _STATS["skipped"].append(last_skip)  # one per skipped test, as pytest counts them
        pytest.skip(last_skip)
    assert kind not in (None, "never"), op.name
    _STATS["parity"].add(op.name)

    small = [s for s in compared if 0 < _numel(s) <= GRADCHECK_MAX_NUMEL]
    if not small or op.name in _STATS["gradcheck"]:
        return
    s = min(small, key=_numel)
    ok = run_gradcheck(op, s)
    if ok is False:  # maybe a tie or a kink: try again off it
        s = _jitter(s, np.random.default_rng(1))
        ok = run_gradcheck(op, s)
    if ok is None:
        return
    if not ok:
        # finite differences can miss for reasons of the sample (inputs with constraints such
        # as symmetry, non-smooth points): then PyTorch's gradcheck fails on it too
        assert not run_gradcheck(op, s, torch), f"{op.name} [{s.desc}]: gradcheck failed"
        _STATS["gradcheck_failed"].add(op.name)
        return
    _STATS["gradcheck"].add(op.name)

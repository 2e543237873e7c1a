"""PyTorch's own distribution test cases as the oracle: the ``_get_examples()`` and
``_get_bad_examples()`` lists of PyTorch's test/distributions/test_distributions.py, and the KL
pairs of its ``TestKL.setUp`` (finite and infinite examples).

The installed torch wheel does not ship that file (there is no
``torch.testing._internal.distributions``), so the test reads it from
``$EMBER_PYTORCH_DISTRIBUTION_TESTS`` (the file's path) or from a PyTorch source checkout next
to the imported torch, takes just those functions out of it (``ast``; the rest of the file is
never run), builds every example in torch and, from the same converted parameters, in
ember, and compares batch/event shapes, sample shape and support, mean, mode, variance,
stddev, entropy, log_prob, cdf, icdf and enumerate_support. Every bad example must raise
ValueError in ember as in PyTorch, and every KL pair must give PyTorch's value. Differences
are listed in ``EXPECTED_FAILURES`` with their reasons; one that stops failing fails the test,
so the table stays true."""
import ast
import contextlib
import inspect
import math
import os
import warnings
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.distributions as ED
from helpers import to_np

torch = pytest.importorskip("torch")

_ENV = "EMBER_PYTORCH_DISTRIBUTION_TESTS"


def _source_path():
    candidates = [os.environ.get(_ENV)]
    # a source checkout (pip install -e / python setup.py develop) keeps test/ beside torch/
    candidates.append(Path(torch.__file__).resolve().parents[1] / "test" / "distributions"
                      / "test_distributions.py")
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


@contextlib.contextmanager
def _validation(on):
    """PyTorch's and ember's default validate_args set to ``on`` for the block."""
    saved_t, saved_e = torch.distributions.Distribution._validate_args, \
        ED.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(on)
    ED.Distribution.set_default_validate_args(on)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(saved_t)
        ED.Distribution.set_default_validate_args(saved_e)


class _SetUpBase:
    """Stands in for TestKL's unittest base class: only its setUp runs."""

    def setUp(self):
        pass


def _kl_setup_class(tree):
    """TestKL with its setUp alone, on a base that does nothing else."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestKL":
            body = [n for n in node.body if isinstance(n, ast.FunctionDef) and
                    n.name == "setUp"]
            return [ast.ClassDef(name="TestKL", bases=[ast.Name("_SetUpBase", ast.Load())],
                                 keywords=[], body=body, decorator_list=[], type_params=[])]
    return []


def _load_examples():
    """(examples, bad_examples, kl) from PyTorch's test file, or None when it is not here;
    kl is the setUp'd TestKL (finite_examples, infinite_examples)."""
    path = _source_path()
    if path is None:
        return None
    tree = ast.parse(path.read_text(), str(path))
    wanted = [n for n in tree.body
              if isinstance(n, ast.FunctionDef) and n.name in ("_get_examples",
                                                                "_get_bad_examples",
                                                                "pairwise")]
    wanted += _kl_setup_class(tree)
    namespace = {"torch": torch, "math": math, "inf": math.inf, "nan": math.nan,
                 "Example": namedtuple("Example", ["Dist", "params"]),
                 "_SetUpBase": _SetUpBase}
    namespace.update({n: getattr(torch.distributions, n) for n in torch.distributions.__all__})
    namespace.update({n: getattr(torch.distributions.transforms, n)
                      for n in torch.distributions.transforms.__all__})
    exec(compile(ast.fix_missing_locations(ast.Module(body=wanted, type_ignores=[])),
                 str(path), "exec"), namespace)
    torch.manual_seed(0)  # the examples draw random parameters
    kl = namespace["TestKL"]()
    with _validation(False):  # KL tests check formulas; some revisions' pairs are invalid
        kl.setUp()
    return namespace["_get_examples"](), namespace["_get_bad_examples"](), kl


_LOADED = _load_examples()
if _LOADED is None:
    pytest.skip(f"PyTorch's test/distributions/test_distributions.py is not shipped with the "
                f"installed torch {torch.__version__}: set {_ENV} to its path to run PyTorch's "
                f"own distribution examples against ember", allow_module_level=True)
EXAMPLES, BAD_EXAMPLES, KL = _LOADED

# (family, example index, what) -> why ember differs from PyTorch there. Keep it exact: an
# entry that starts passing fails its test.
EXPECTED_FAILURES = {
    ("Kumaraswamy", 0, "mode"): "PyTorch 2.13's Kumaraswamy.mode is NaN everywhere (its log-space "
                                "formula takes log of a negative number); ember returns the mode "
                                "((a - 1) / (a b - 1))^(1/a) (tests/test_distributions.py)",
    ("Kumaraswamy", 1, "mode"): "as Kumaraswamy example 0",
}

METHODS = ("mean", "mode", "variance", "stddev", "entropy", "log_prob", "cdf", "icdf",
           "enumerate_support")


# ---- torch objects -> ember objects ----------------------------------------------------

def to_ember(v):
    if isinstance(v, torch.Tensor):
        t = ember.tensor(v.detach().numpy())
        return t.requires_grad_() if v.requires_grad else t
    if isinstance(v, list):
        return [to_ember(x) for x in v]
    if isinstance(v, torch.distributions.Distribution):
        # a test's own subclass (TestKL's Binomial30) becomes the family it derives from
        family = next(c for c in type(v).__mro__ if c.__module__.startswith(
            "torch.distributions") and hasattr(ED, c.__name__))
        return _rebuild(getattr(ED, family.__name__), v, lambda name: _ctor_value(v, name),
                        family)
    if isinstance(v, torch.distributions.transforms.Transform):
        return _rebuild(getattr(ED.transforms, type(v).__name__), v,
                        lambda name: getattr(v, name, None))
    return v  # numbers, and the callables of the bad examples


def _ctor_value(dist, name):
    """The constructor argument ``name`` of a torch distribution: the attribute it stored, or
    a plain property over its state (Beta's concentrations, Chi2's df); lazily derived forms
    (a MultivariateNormal's other two matrices) are left out."""
    if name in dist.__dict__:
        return dist.__dict__[name]
    if isinstance(getattr(type(dist), name, None), property):
        return getattr(dist, name)
    return None


def _rebuild(cls, obj, lookup, torch_cls=None):
    """``cls`` called with ``obj``'s constructor arguments (those of ``torch_cls``, by
    default its own class), read back from its attributes (the parameter a distribution was
    given is the one in its __dict__)."""
    kwargs = {}
    for name in inspect.signature((torch_cls or type(obj)).__init__).parameters:
        if name in ("self", "validate_args", "cache_size"):
            continue
        value = lookup(name)
        if value is not None:
            kwargs[name] = to_ember(value)
    # the three matrix forms are exclusive; any one that has been computed is as good
    matrices = [k for k in ("covariance_matrix", "precision_matrix", "scale_tril")
                if k in kwargs]
    for extra in matrices[1:]:
        del kwargs[extra]
    if "probs" in kwargs and "logits" in kwargs:  # one was given, the other derived
        given = "probs" if obj.__dict__["probs"] is getattr(obj, "_param", None) else "logits"
        del kwargs["logits" if given == "probs" else "probs"]
    return cls(**kwargs)


def _to_torch_value(e):
    return torch.from_numpy(np.ascontiguousarray(to_np(e)))


def _same(got, expected):
    """None when ember's value matches torch's, else a description of the difference."""
    got = to_np(got.detach() if got.requires_grad else got)
    expected = expected.detach().numpy()
    if got.shape != expected.shape:
        return f"shape {got.shape} != {expected.shape}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype} != {expected.dtype}"
    tol = 1e-5 if expected.dtype == np.float32 else 1e-9
    try:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=tol * 10, atol=tol, equal_nan=True)
    except AssertionError as err:
        return str(err).strip().splitlines()[-3:]
    return None


def _outcome(fn):
    """('value', v) or ('raises', exception type)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "value", fn()
    except (NotImplementedError, ValueError, RuntimeError, AssertionError) as err:
        return "raises", type(err)


def _compare(t_dist, e_dist):
    """{what: difference} for every check that differs between the two distributions."""
    diffs = {}
    if tuple(t_dist.batch_shape) != tuple(e_dist.batch_shape) or \
            tuple(t_dist.event_shape) != tuple(e_dist.event_shape):
        return {"shapes": f"{e_dist.batch_shape}/{e_dist.event_shape} != "
                          f"{t_dist.batch_shape}/{t_dist.event_shape}"}
    torch.manual_seed(1)
    x = t_dist.sample()
    t_kind, t_s = _outcome(lambda: t_dist.sample((2,)))
    kind, s = _outcome(lambda: e_dist.sample((2,)))
    if (kind, t_kind) == ("raises", "raises"):
        if not issubclass(s, t_s):
            diffs["sample"] = f"raises {s.__name__}, PyTorch {t_s.__name__}"
    elif "raises" in (kind, t_kind):
        diffs["sample"] = f"ember: {kind} {s if kind == 'raises' else ''}, PyTorch: {t_kind}"
    elif tuple(s.shape) != tuple(t_s.shape) or s.dtype.name != str(t_s.dtype)[6:]:
        diffs["sample"] = f"{s.shape} {s.dtype} != {t_s.shape} {t_s.dtype}"
    elif not bool(e_dist.support.check(s).all()):
        diffs["sample"] = "outside the support"
    t_cdf = _outcome(lambda: t_dist.cdf(x))
    u = t_cdf[1] if t_cdf[0] == "value" else torch.full_like(x, 0.3)
    calls = {
        "log_prob": (lambda d, v: d.log_prob(v), x),
        "cdf": (lambda d, v: d.cdf(v), x),
        "icdf": (lambda d, v: d.icdf(v), u),
        "entropy": (lambda d, v: d.entropy(), None),
        "enumerate_support": (lambda d, v: d.enumerate_support(), None),
    }
    for what in METHODS:
        if what in calls:
            fn, arg = calls[what]
            expected = _outcome(lambda: fn(t_dist, arg))
            got = _outcome(lambda: fn(e_dist, to_ember(arg) if arg is not None else None))
        else:
            expected = _outcome(lambda: getattr(t_dist, what))
            got = _outcome(lambda: getattr(e_dist, what))
        if expected[0] == "raises":
            if got[0] != "raises" or not issubclass(got[1], expected[1]):
                diffs[what] = f"PyTorch raises {expected[1].__name__}, ember gives {got}"
        elif got[0] == "raises":
            diffs[what] = f"ember raises {got[1].__name__}"
        else:
            d = _same(got[1], expected[1])
            if d:
                diffs[what] = d
    return diffs


def _ids(examples):
    return [(ex.Dist.__name__, i, params) for ex in examples
            for i, params in enumerate(ex.params)]


@pytest.fixture(autouse=True)
def _validate_args():
    # PyTorch's distribution tests run with validation on; so does this one, in both
    with _validation(True):
        yield


@pytest.mark.parametrize("name,index,params", _ids(EXAMPLES),
                         ids=[f"{n}-{i}" for n, i, _ in _ids(EXAMPLES)])
def test_pytorch_example(name, index, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_dist = getattr(torch.distributions, name)(**params)
        e_dist = getattr(ED, name)(**{k: to_ember(v) for k, v in params.items()})
    diffs = _compare(t_dist, e_dist)
    expected = {what for (n, i, what) in EXPECTED_FAILURES if (n, i) == (name, index)}
    unexpected = {k: v for k, v in diffs.items() if k not in expected}
    assert not unexpected, f"{name} example {index}: ember differs from PyTorch: {unexpected}"
    fixed = expected - set(diffs)
    assert not fixed, f"{name} example {index}: now matches PyTorch, drop from " \
                      f"EXPECTED_FAILURES: {sorted(fixed)}"


@pytest.mark.parametrize("name,index,params", _ids(BAD_EXAMPLES),
                         ids=[f"{n}-{i}" for n, i, _ in _ids(BAD_EXAMPLES)])
def test_pytorch_bad_example(name, index, params):
    """ValueError where PyTorch raises it (and no error where, in float32, PyTorch's value
    rounds back into the support: Geometric(probs=1.00000001))."""
    t = _outcome(lambda: getattr(torch.distributions, name)(validate_args=True, **params))
    e = _outcome(lambda: getattr(ED, name)(validate_args=True,
                                           **{k: to_ember(v) for k, v in params.items()}))
    assert t[0] == e[0], f"PyTorch: {t}, ember: {e}"
    if t[0] == "raises":
        assert t[1] is ValueError and e[1] is ValueError, f"PyTorch: {t}, ember: {e}"


def test_every_pytorch_family_has_an_example():
    names = {ex.Dist.__name__ for ex in EXAMPLES}
    assert len(names) >= 40
    assert all(hasattr(ED, n) for n in names)


def _kl_ids(pairs):
    return [f"{type(p).__name__}-{type(q).__name__}-{i}" for i, (p, q) in enumerate(pairs)]


_FINITE = [(p, q) for (p, _), (_, q) in KL.finite_examples]


@pytest.mark.parametrize("p,q", _FINITE, ids=_kl_ids(_FINITE))
def test_pytorch_kl_finite_example(p, q):
    expected = torch.distributions.kl_divergence(p, q)
    with _validation(False):
        got = ED.kl_divergence(to_ember(p), to_ember(q))
    assert _same(got, expected) is None, _same(got, expected)


@pytest.mark.parametrize("p,q", KL.infinite_examples, ids=_kl_ids(KL.infinite_examples))
def test_pytorch_kl_infinite_example(p, q):
    assert bool((torch.distributions.kl_divergence(p, q) == math.inf).all())
    with _validation(False):
        assert bool((ED.kl_divergence(to_ember(p), to_ember(q)) == math.inf).all())

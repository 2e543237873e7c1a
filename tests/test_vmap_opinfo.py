"""vmap over every op of the OpInfo table (tests/opinfo*.py): the batched call equals the
looped one.

For each op, the first sample that ember runs becomes a batch of two: its top-level tensor
arguments, and the tensors of its arguments that are lists of tensors (cat, stack, einsum, the
foreach ops), stacked with a second copy (floating values scaled by 0.75, others repeated),
mapped over dim 0 (in_dims a list of zeros for a list); keyword arguments stay unbatched.
``vmap`` of the op must equal the stack of the per-sample calls. Where vmap refuses (data-dependent output shapes,
Python-number outputs), PyTorch's ``torch.func.vmap`` must refuse too; ops ember cannot batch
yet are listed in :data:`KNOWN` with a reason. Random ops are left to tests/test_vmap.py
(randomness modes). A coverage line counts the ops that ran on a batching rule and those that
needed the loop-and-stack fallback.
"""
import collections
import copy
import warnings

import numpy as np
import pytest

import ember
from helpers import report_line
from opinfo import OPS
from test_ops import _ids, ember_args, overload, torch_args

torch = pytest.importorskip("torch")

KNOWN = {}
_STATS = collections.Counter()
_RANDOM = set(ember.func.batching_rule_coverage()["randomness"])


@pytest.fixture(scope="module", autouse=True)
def coverage_report(request):
    yield
    report_line(request, "vmap over the op table: " + ", ".join(
        f"{n} {k}" for k, n in _STATS.most_common()))


def _is_tensor(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _tensor_list(x):
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(_is_tensor(t) for t in x)


def _second(lib, x):
    if _tensor_list(x):
        return type(x)(_second(lib, t) for t in x)
    if _is_tensor(x) and (x.dtype.is_floating_point or x.dtype.is_complex):
        return x * 0.75
    return x.clone() if _is_tensor(x) else x


def _batch(lib, a, b):
    """(the batched argument, its in_dims) of argument ``a`` and its second copy ``b``."""
    if _tensor_list(a):
        return type(a)(lib.stack([x, y]) for x, y in zip(a, b)), type(a)([0] * len(a))
    if _is_tensor(a):
        return lib.stack([a, b]), 0
    return a, None


def _outs(res):
    if _is_tensor(res):
        return [res]
    if isinstance(res, (tuple, list)) and all(_is_tensor(r) for r in res):
        return list(res)
    return None


def _run(lib, op, sample):
    conv = ember_args if lib is ember else (lambda s: torch_args(torch, s))
    args, kwargs = conv(copy.deepcopy(sample))
    fn = overload(lib.ops, op.name)
    second = [_second(lib, a) for a in args]
    batched, in_dims = zip(*[_batch(lib, a, b) for a, b in zip(args, second)]) if args \
        else ((), ())
    looped = [fn(*args, **kwargs), fn(*second, **kwargs)]
    out = lib.func.vmap(lambda *a: fn(*a, **kwargs), in_dims=in_dims)(*batched)
    return out, looped


def _first_runnable(op):
    for s in op.samples(op):
        if any(isinstance(a, (list, tuple)) for a in s.args):
            pass
        try:
            args, kwargs = ember_args(copy.deepcopy(s))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = overload(ember.ops, op.name)(*args, **kwargs)
        except Exception:  # noqa: BLE001  error samples: tests/test_ops.py
            continue
        if any(_is_tensor(a) or _tensor_list(a) for a in args):
            return s, res
    return None, None


@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
def test_vmap_matches_loop(op):
    qual = "aten::" + op.name.replace(".default", "")
    if qual in _RANDOM or op.name.split(".")[0] in {q.split("::")[1].split(".")[0]
                                                    for q in _RANDOM}:
        _STATS["random (tests/test_vmap.py)"] += 1
        pytest.skip("random op: covered by the randomness tests of tests/test_vmap.py")
    sample, res = _first_runnable(op)
    if sample is None:
        _STATS["no sample ember runs"] += 1
        pytest.skip("no sample with a tensor argument that ember runs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, looped = _run(ember, op, sample)
            err = None
        except Exception as e:  # noqa: BLE001
            err = e
    if err is None and op.name in KNOWN:
        pytest.xfail(KNOWN[op.name])  # wrong values: the comparison below would fail
    if err is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _run(torch, op, sample)
        except Exception:  # noqa: BLE001
            _STATS["refused, as by torch.func.vmap"] += 1
            return
        if op.name in KNOWN:
            _STATS["known gap"] += 1
            pytest.xfail(KNOWN[op.name])
        raise err
    outs, per = _outs(out), [_outs(r) for r in looped]
    if outs is None or any(p is None for p in per):
        _STATS["non-tensor output"] += 1
        return
    assert len(outs) == len(per[0])
    for k, o in enumerate(outs):
        want = ember.stack([per[0][k], per[1][k]])
        assert tuple(o.shape) == tuple(want.shape), (op.name, k, o.shape, want.shape)
        assert o.dtype == want.dtype, (op.name, k)
        a, b = o.detach(), want.detach()
        if a.dtype.is_complex:
            a, b = ember.view_as_real(a.resolve_conj()), ember.view_as_real(b.resolve_conj())
        np.testing.assert_allclose(a.to(ember.float64).numpy() if a.dtype != ember.bool
                                   else a.numpy(), b.to(ember.float64).numpy()
                                   if b.dtype != ember.bool else b.numpy(),
                                   rtol=1e-5, atol=1e-6, equal_nan=True,
                                   err_msg=f"{op.name} output {k}")
    fell_back = any("performance drop" in str(w.message) for w in caught)
    _STATS["batched by the fallback loop" if fell_back else "batched by rules"] += 1

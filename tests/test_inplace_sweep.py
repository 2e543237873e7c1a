"""In-place ops with a self of another dtype, a smaller shape or internal overlap, swept over the
whole op table against PyTorch.

For every in-place overload of the op table (tests/opinfo*.py), its first two samples on which
PyTorch's in-place call succeeds are called again on ember and on PyTorch with self replaced by
one of each other dtype among float64, float16, int64, bool and complex64 (the same values,
cast), by one whose shape is smaller along its first dim that is not 1 (so that it broadcasts to
the result's shape, which PyTorch refuses to resize self to), and by one expanded along dim 0
(stride 0: several elements share one memory location). Where PyTorch raises, ember raises the
same exception type with PyTorch's message and leaves self as it was (values, shape, strides,
dtype, version counter); where PyTorch succeeds, ember succeeds, returns self, bumps its version
counter and holds the same values, dtype and shape."""
import numpy as np
import pytest

import ember
from helpers import assert_same, to_np
from opinfo import OPS, T, Sample
from test_ops import _same_type, _tol, ember_args, overload, run, torch_args

_DTYPES = ("float64", "float16", "int64", "bool", "complex64")
_SAMPLES = 2

# in-place overload -> why ember still differs from PyTorch there (strict: a fix makes the test
# fail until the entry goes)
_XFAIL = {}

# one test per in-place overload, with the OpInfo entries that name it
_BY_INPLACE = {}
for _op in OPS:
    if _op.inplace:
        _BY_INPLACE.setdefault(_op.inplace, []).append(_op)


def _valid_samples(torch, inplace):
    """The first samples with a tensor self whose in-place call PyTorch accepts, each with its
    OpInfo."""
    found = []
    t_ip = overload(torch.ops, inplace)
    for op in _BY_INPLACE[inplace]:
        for s in op.samples(op):
            if not isinstance(s.args[0], T) or s.args[0].layout == "expanded" or s.public_ref:
                continue  # Python numbers as tensors, or a self that overlaps already
            ta, tk = torch_args(torch, s)
            if run(t_ip, *ta, **tk)[1] is None:
                found.append((op, s))
                if len(found) == _SAMPLES:
                    return found
    return found


def _variants(spec):
    """(description, self spec) of each self to put in place of the sample's."""
    vals = np.asarray(spec.values)
    for other in _DTYPES:
        if other != spec.dtype:
            yield f"self {other}", T(vals, other, spec.layout)
    big = [d for d, n in enumerate(vals.shape) if n > 1]
    if big:
        small = vals.take([0], axis=big[0])
        yield f"self shape {list(small.shape)}", T(small, spec.dtype)
    if vals.ndim and vals.shape[0] > 1:
        # (both sides build it from the first row, expanded along dim 0)
        yield "self expanded", T(vals, spec.dtype, "expanded")


def _state(t):
    return to_np(t).copy(), tuple(t.shape), t.stride(), t.dtype, t._version


def _mismatches(torch, inplace):
    e_ip, t_ip = overload(ember.ops, inplace), overload(torch.ops, inplace)
    samples = _valid_samples(torch, inplace)
    assert samples, f"{inplace}: no sample that PyTorch's in-place call accepts"
    problems = []
    for op, s in samples:
        for what, spec in _variants(s.args[0]):
            where = f"{inplace} [{s.desc}] {what}"
            v = Sample((spec,) + tuple(s.args[1:]), s.kwargs, desc=s.desc)
            ea, ek = ember_args(v)
            ta, tk = torch_args(torch, v)
            before = _state(ea[0])
            version = ta[0]._version
            _, t_exc = run(t_ip, *ta, **tk)
            e_res, e_exc = run(e_ip, *ea, **ek)
            if t_exc is not None:
                if e_exc is None:
                    problems.append(f"{where}: PyTorch raised {t_exc!r}, ember did not")
                    continue
                if not _same_type(e_exc, t_exc) or str(e_exc) != str(t_exc):
                    problems.append(f"{where}: ember raised {e_exc!r}, PyTorch {t_exc!r}")
                vals, shp, st, dtype, ver = before
                if (tuple(ea[0].shape), ea[0].stride(), ea[0].dtype) != (shp, st, dtype) or \
                        not np.array_equal(to_np(ea[0]), vals, equal_nan=vals.dtype.kind in "fc"):
                    problems.append(f"{where}: self changed by a failing call")
                if ea[0]._version != ver:
                    problems.append(f"{where}: version counter bumped by a failing call")
                continue
            if e_exc is not None:
                problems.append(f"{where}: ember raised {e_exc!r}, PyTorch succeeded")
                continue
            if e_res is not ea[0]:
                problems.append(f"{where}: an in-place op must return self")
            if (ea[0]._version > before[4]) != (ta[0]._version > version):
                problems.append(f"{where}: version counter {before[4]} -> {ea[0]._version}, "
                                f"PyTorch's {version} -> {ta[0]._version}")
            rtol, atol = _tol(op, ta[0])
            try:
                assert_same(ea[0], ta[0], rtol=rtol, atol=atol)
            except AssertionError as err:
                problems.append(f"{where}: {str(err).strip()[:300]}")
    return problems


@pytest.mark.parametrize("inplace", [
    pytest.param(o, marks=pytest.mark.xfail(strict=True, reason=_XFAIL[o]))
    if o in _XFAIL else o for o in _BY_INPLACE])
def test_inplace_sweep(torch, inplace):
    problems = _mismatches(torch, inplace)
    assert not problems, "\n".join(problems)

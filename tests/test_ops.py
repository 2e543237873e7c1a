"""Drives the OpInfo table (tests/opinfo.py): every sample of every op is run through ember and
PyTorch (the same aten overload in both), comparing values, dtypes and shapes, or exception
types when PyTorch rejects the sample; Meta results must match CPU shapes and dtypes; out= and
in-place variants must match PyTorch and leave out/self untouched when they fail."""
import warnings

import numpy as np
import pytest

import ember
from ember._core.device import META
from ember._dispatch.dispatcher import _operators
from ember._tensor import _alias, empty_tensor
from helpers import assert_same, from_np, to_np
from opinfo import DT, NOT_IN_TABLE, OPS, T, covered_ops

_STATS = {"samples": 0}
_HALF = ("float16", "bfloat16")


@pytest.fixture(scope="module", autouse=True)
def coverage_report(request):
    """Print coverage (ops declared / ops with samples / samples run) when the module ends."""
    yield
    declared = {_short(q) for q in _operators if q.startswith("aten::")}
    covered = covered_ops() & declared
    plugins = request.config.pluginmanager
    tr, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    line = (f"opinfo coverage: {len(declared)} ops declared, {len(covered)} with samples, "
            f"{len(declared & set(NOT_IN_TABLE))} in NOT_IN_TABLE, {_STATS['samples']} samples run")
    if tr is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # shown with or without -s
            tr.write_line("")
            tr.write_line(line)


def _short(qualname):
    name = qualname.split("::", 1)[1]
    return name if "." in name else name + ".default"


# ---------------------------------------------------------------------------------------------
# Building arguments

def _ember_tensor(spec):
    dt = getattr(ember, spec.dtype)
    a = np.asarray(spec.values).astype(dt._np)
    lay = spec.layout if a.ndim >= 1 else "contiguous"
    if lay == "transposed" and a.ndim < 2:
        lay = "contiguous"
    if lay == "contiguous":
        return from_np(a)
    if lay == "transposed":
        base = from_np(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
        st = list(base._stride)
        st[-1], st[-2] = st[-2], st[-1]
        return _alias(base, a.shape, tuple(st), 0)
    if lay == "sliced":
        base = from_np(np.repeat(a, 2, axis=-1))
        st = list(base._stride)
        st[-1] *= 2
        return _alias(base, a.shape, tuple(st), 0)
    base = from_np(np.ascontiguousarray(a[:1]))  # expanded along dim 0
    return _alias(base, a.shape, (0,) + tuple(base._stride[1:]), 0)


def _torch_tensor(torch, spec):
    dt = getattr(torch, spec.dtype)
    a = np.asarray(spec.values)
    mk = lambda x: torch.from_numpy(np.array(x, copy=True)).to(dt)  # noqa: E731
    lay = spec.layout if a.ndim >= 1 else "contiguous"
    if lay == "transposed" and a.ndim >= 2:
        return mk(np.swapaxes(a, -1, -2)).transpose(-1, -2)
    if lay == "sliced":
        return mk(np.repeat(a, 2, axis=-1))[..., ::2]
    if lay == "expanded":
        return mk(a[:1]).expand(a.shape)
    return mk(a)


def _meta_like(t):
    return empty_tensor(t._size, t._dtype, META, t._stride)


def _convert(x, tensor_fn, dtype_fn):
    if isinstance(x, T):
        return tensor_fn(x)
    if isinstance(x, DT):
        return dtype_fn(x.name)
    if isinstance(x, (list, tuple)):
        return type(x)(_convert(v, tensor_fn, dtype_fn) for v in x)
    return x


def ember_args(sample):
    f = lambda x: _convert(x, _ember_tensor, lambda n: getattr(ember, n))  # noqa: E731
    return [f(a) for a in sample.args], {k: f(v) for k, v in sample.kwargs.items()}


def torch_args(torch, sample):
    f = lambda x: _convert(x, lambda s: _torch_tensor(torch, s), lambda n: getattr(torch, n))  # noqa: E731
    return ([f(a) for a in sample.args],
            {k: f(v) for k, v in sample.kwargs.items()})


def overload(namespace, qualname):
    name, _, ov = qualname.partition(".")
    return getattr(getattr(namespace.aten, name), ov or "default")


def run(fn, *args, **kwargs):
    """(result, exception): exactly one is None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001  (compared against PyTorch's exception below)
        return None, e


def _tol(op, t):
    if str(t.dtype).split(".")[-1] in _HALF:
        return max(op.rtol, 2e-2), max(op.atol, 2e-2)
    return op.rtol, op.atol


def compare(op, e, t, desc):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t), desc
        for a, b in zip(e, t):
            compare(op, a, b, desc)
        return
    rtol, atol = _tol(op, t)
    try:
        assert_same(e, t, rtol=rtol, atol=atol)
    except AssertionError as err:
        raise AssertionError(f"{op.name} [{desc}]: {err}") from None


def _same_type(e_exc, t_exc):
    """The same builtin exception type, or for PyTorch's own classes (torch._C._LinAlgError)
    ember's class of the same public name (ember.linalg.LinAlgError) with the same base."""
    te, tt = type(e_exc), type(t_exc)
    if te is tt:
        return True
    return te.__name__ == tt.__name__.lstrip("_") and te.__mro__[1] is tt.__mro__[1]


def same_error(op, e_exc, t_exc, desc):
    assert e_exc is not None, f"{op.name} [{desc}]: PyTorch raised {t_exc!r}, ember did not"
    assert _same_type(e_exc, t_exc), (f"{op.name} [{desc}]: ember raised {e_exc!r}, PyTorch "
                                      f"raised {t_exc!r}")


def _ids(ops):
    seen = {}
    out = []
    for op in ops:
        seen[op.name] = seen.get(op.name, 0) + 1
        out.append(op.name if seen[op.name] == 1 else f"{op.name}#{seen[op.name]}")
    return out


# ---------------------------------------------------------------------------------------------
# Tests

@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
def test_values(torch, op):
    e_op, t_op = overload(ember.ops, op.name), overload(torch.ops, op.name)
    public = getattr(torch, op.name.split(".")[0], None)  # None: a method-only op (repeat)
    n = 0
    for s in op.samples(op):
        ea, ek = ember_args(s)
        ta, tk = torch_args(torch, s)
        t_res, t_exc = run(public if s.public_ref else t_op, *ta, **tk)
        e_res, e_exc = run(e_op, *ea, **ek)
        if t_exc is not None:
            same_error(op, e_exc, t_exc, s.desc)
        else:
            assert e_exc is None, f"{op.name} [{s.desc}]: ember raised {e_exc!r}"
            compare(op, e_res, t_res, s.desc)
        n += 1
    _STATS["samples"] += n
    assert n > 0


def _data_dependent(exc):
    return "ZeroDivisionError" in str(exc)


def _to_meta(a):
    if hasattr(a, "_keyset"):
        return _meta_like(a)
    if isinstance(a, (list, tuple)):  # Tensor[] arguments
        return type(a)(_to_meta(x) for x in a)
    return a


def dynamic_tags(op):
    """Tags of the op and of the ops its composite calls that may have data-dependent shapes."""
    return {str(t) for t in overload(ember.ops, op.name).tags} | set(op.meta_tags)


@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
def test_meta(op):
    """The Meta kernel agrees with the CPU kernel on shape and dtype, and on shape/dtype errors."""
    e_op = overload(ember.ops, op.name)
    for s in op.samples(op):
        ea, ek = ember_args(s)
        cpu, cpu_exc = run(e_op, *ea, **ek)
        ma = [_to_meta(a) for a in ea]
        meta, meta_exc = run(e_op, *ma, **ek)
        if isinstance(meta_exc, NotImplementedError) and "dynamic_output_shape" in dynamic_tags(op):
            continue  # result shape depends on the data: no Meta kernel, as in PyTorch
        if cpu_exc is not None:
            if not (s.data_dependent or _data_dependent(cpu_exc)):
                same_error(op, meta_exc, cpu_exc, s.desc + " (meta)")
            continue
        assert meta_exc is None, f"{op.name} [{s.desc}]: meta raised {meta_exc!r}"
        cpu = cpu if isinstance(cpu, (tuple, list)) else (cpu,)
        meta = meta if isinstance(meta, (tuple, list)) else (meta,)
        for c, m in zip(cpu, meta):
            assert m.device.type == "meta"
            assert (tuple(m.shape), m.dtype) == (tuple(c.shape), c.dtype), (op.name, s.desc)


def _out_names(qualname):
    sch = overload(ember.ops, qualname)._schema
    return [a.name for a in sch.arguments if a.is_write and a.kwarg_only]


def _bad_out_dtype(result_dtype):
    """An out dtype the result cannot be cast to (None when every dtype accepts it)."""
    if result_dtype.is_floating_point:
        return "int64"
    if result_dtype is not ember.bool:
        return "bool"
    return None


@pytest.mark.parametrize("op", [o for o in OPS if o.out], ids=_ids([o for o in OPS if o.out]))
def test_out(torch, op):
    e_out, t_out = overload(ember.ops, op.out), overload(torch.ops, op.out)
    names = _out_names(op.out)
    for s in op.samples(op):
        ea, ek = ember_args(s)
        ta, tk = torch_args(torch, s)
        ref, ref_exc = run(overload(torch.ops, op.name), *ta, **tk)
        if ref_exc is not None or s.public_ref:
            continue  # error samples are covered by test_values
        refs = ref if isinstance(ref, tuple) else (ref,)
        # out tensors of the right dtype, empty (resized silently by both)
        e_outs = [from_np(np.zeros((0,), getattr(ember, str(r.dtype).split(".")[-1])._np))
                  for r in refs]
        t_outs = [torch.empty(0, dtype=r.dtype) for r in refs]
        e_res, e_exc = run(e_out, *ea, **ek, **dict(zip(names, e_outs)))
        t_res, t_exc = run(t_out, *ta, **tk, **dict(zip(names, t_outs)))
        if t_exc is not None:
            same_error(op, e_exc, t_exc, s.desc + " (out)")
            continue
        assert e_exc is None, f"{op.out} [{s.desc}]: ember raised {e_exc!r}"
        for e, t in zip(e_outs, t_outs):
            compare(op, e, t, s.desc + " (out)")
        e_res = e_res if isinstance(e_res, tuple) else (e_res,)
        assert all(a is b for a, b in zip(e_res, e_outs)), "out= must return the out tensors"
        # an out the result cannot be cast into: same error, out untouched
        bad = _bad_out_dtype(e_outs[0].dtype)
        if bad is not None and len(refs) == 1:
            e_bad = from_np(np.full(tuple(refs[0].shape), 7, getattr(ember, bad)._np))
            t_bad = torch.full(tuple(refs[0].shape), 7, dtype=getattr(torch, bad))
            before = to_np(e_bad).copy()
            _, e_exc = run(e_out, *ea, **ek, **{names[0]: e_bad})
            _, t_exc = run(t_out, *ta, **tk, **{names[0]: t_bad})
            if t_exc is not None:
                same_error(op, e_exc, t_exc, s.desc + " (bad out dtype)")
                np.testing.assert_array_equal(to_np(e_bad), before,
                                              err_msg=f"{op.out}: out modified by a failing call")


@pytest.mark.parametrize("op", [o for o in OPS if o.inplace],
                         ids=_ids([o for o in OPS if o.inplace]))
def test_inplace(torch, op):
    e_ip, t_ip = overload(ember.ops, op.inplace), overload(torch.ops, op.inplace)
    for s in op.samples(op):
        if not isinstance(s.args[0], T) or s.args[0].layout == "expanded" or s.public_ref:
            continue  # in-place needs a tensor self without internal overlap
        ea, ek = ember_args(s)
        ta, tk = torch_args(torch, s)
        before = to_np(ea[0]).copy()
        version = ea[0]._version
        e_res, e_exc = run(e_ip, *ea, **ek)
        t_res, t_exc = run(t_ip, *ta, **tk)
        if t_exc is not None:
            same_error(op, e_exc, t_exc, s.desc + " (in-place)")
            np.testing.assert_array_equal(to_np(ea[0]), before,
                                          err_msg=f"{op.inplace}: self modified by a failing call")
            continue
        assert e_exc is None, f"{op.inplace} [{s.desc}]: ember raised {e_exc!r}"
        assert e_res is ea[0], "in-place ops return self"
        assert ea[0]._version > version
        compare(op, ea[0], ta[0], s.desc + " (in-place)")


def test_every_declared_op_is_in_the_table():
    declared = {_short(q) for q in _operators if q.startswith("aten::")}
    missing = sorted(declared - covered_ops() - set(NOT_IN_TABLE))
    assert not missing, f"ops without an OpInfo entry or a NOT_IN_TABLE reason: {missing}"
    stale = sorted((covered_ops() | set(NOT_IN_TABLE)) - declared)
    assert not stale, f"table entries for undeclared ops: {stale}"

"""Every dtype of PyTorch's OpInfo database that tests/test_op_db.py does not try.

test_op_db drives each CPU entry of ``op_db`` through ember in float32, float64 and two
integer/bool dtypes the entry supports. This sweep takes each resolvable entry and each other
dtype of bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
complex64, complex128, and each entry on PyTorch's "barebones" unsigned types uint16, uint32,
uint64, and runs the entry's first sample of that dtype in PyTorch and in ember:

* where PyTorch computes (the dtype is supported, or the entry accepts it anyway), ember must
  compute the same result (values within the dtype's tolerance, dtype, shape; random ops by
  dtype and shape only);
* where PyTorch raises (its dtype coverage is the specification: ember computing there is a
  defect too), ember must raise the same exception type with the same message, and leave its
  inputs as they were.

For a dtype the entry does not support, its sample function usually still builds a sample; where
it fails or builds none, the float32 sample's float32 tensors are converted with ``.to(dtype)``.
op_db lists the barebones unsigned types for no entry (ATen has few kernels for them: copies,
views, fills, ``cat``, ``eq``, ``mul`` ... and refuses the rest), so their samples are always the
converted float32 sample. The machinery (twins, sample conversion, comparison) is test_op_db's.
What still fails is listed in ``dtype_sweep_expected.py`` with a reason each, as strict xfails. A
summary line gives the counts.
"""
import concurrent.futures
import re

import numpy as np
import pytest

import ember
from helpers import report_line

import test_op_db as opdb
from test_op_db import _tensors

torch = opdb.torch

from dtype_sweep_expected import EXPECTED  # noqa: E402

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
          torch.complex128]
# uint16/32/64: never among an entry's dtypes; mostly refused, by ember's rules/unsigned.py table
BAREBONES = [torch.uint16, torch.uint32, torch.uint64]


def _resolvable(op):
    try:
        opdb.twin(op.op)
    except opdb.Unresolved:
        return False
    return True


# entries without an ember twin (torch.cuda.jiterator, CSR-only sparse ops): test_op_db's
# expected table says why; they are counted in the summary, not swept
_UNRESOLVED = [opdb.entry_id(op) for op in opdb.ENTRIES if not _resolvable(op)]
CASES = [(op, dt) for op in opdb.ENTRIES if opdb.entry_id(op) not in _UNRESOLVED
         for dt in DTYPES + BAREBONES if dt not in opdb._dtypes(op)]


def _short(dtype):
    return str(dtype).split(".")[1]


def case_id(case):
    op, dtype = case
    return f"{opdb.entry_id(op)}:{_short(dtype)}"


_STATS = {"cases": len(CASES), "passed": 0, "computed": 0, "refused": 0, "converted": 0}


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    s = _STATS
    report_line(request, (
        f"dtype sweep: {s['cases']} (entry, dtype) cases over {len(opdb.ENTRIES)} entries "
        f"({len(_UNRESOLVED)} unresolved entries not swept), {s['passed']} passing: "
        f"{s['computed']} computed as PyTorch, {s['refused']} refused as PyTorch "
        f"({s['converted']} on converted float32 samples); "
        f"{len(EXPECTED)} expected failures listed"))


# PyTorch's sample functions look for the running unittest method with inspect.stack(), which
# reads the source of every frame: under pytest's deep stack that is most of the sweep's time,
# so samples are made on a worker thread, whose stack is short
_SAMPLER = concurrent.futures.ThreadPoolExecutor(max_workers=1)


def _sample(op, dtype):
    """The entry's first sample of ``dtype`` and whether it was converted from float32."""
    return _SAMPLER.submit(_make_sample, op, dtype).result()


def _make_sample(op, dtype):
    torch.manual_seed(0)
    sample = None
    # (a sample function asked for a barebones unsigned type makes its tensors with ops PyTorch
    # refuses on them, or through a dtype no entry was written for: the converted float32
    # sample is the one defined sample)
    if dtype not in BAREBONES:
        try:
            sample = next(iter(op.sample_inputs("cpu", dtype, requires_grad=False)), None)
        except Exception:  # noqa: BLE001  (the sample function refuses an unsupported dtype)
            sample = None
    if sample is not None:
        return sample, False
    torch.manual_seed(0)
    sample = next(iter(op.sample_inputs("cpu", torch.float32, requires_grad=False)))
    # a negative float has no defined conversion to a barebones unsigned type (C++'s float to
    # unsigned conversion of it is undefined; PyTorch's result wraps to near 2**64 or saturates
    # by compiler), so those samples take magnitudes: small values, as every other dtype's
    # sample holds (uint8's conversion is defined by PyTorch and kept as it is)
    unsigned = dtype in BAREBONES
    return sample.transform(lambda t: (t.abs() if unsigned else t).to(dtype)
                            if isinstance(t, torch.Tensor) and t.dtype == torch.float32
                            else t), True


# A dtype in a message is printed by its module: PyTorch's "torch.int64" is ember's "ember.int64"
# (both messages are read so, which also equates a "torch.float16" that ember's message copies
# as text from PyTorch's, as linear_cross_entropy's acc_dtype error does).
_DTYPE_REPR = re.compile(r"\btorch\.(" + "|".join(_short(d) for d in DTYPES + BAREBONES) +
                         r")\b")


def _message(exc):
    return _DTYPE_REPR.sub(r"ember.\1", str(exc))


def _widened(result):
    """A result's leaves with float8 tensors as float32 (NumPy holds no float8): their dtypes
    are compared before, by name."""
    def widen(x):
        if isinstance(x, (torch.Tensor, ember.Tensor)) and "float8" in str(x.dtype):
            return x.float()
        return x
    leaves = opdb._leaves(result)
    return [widen(x) for x in leaves], [str(x.dtype).split(".")[1] for x in leaves
                                         if isinstance(x, (torch.Tensor, ember.Tensor))]


def _snapshot(tensors):
    # byte images: exact, NaN and signed zeros included (float8 through its bytes: NumPy holds
    # no float8)
    return [np.ascontiguousarray(opdb._as_numpy(
        t.view(ember.uint8) if "float8" in str(t.dtype) else t)).tobytes() if t.numel() else b""
        for t in tensors]


@pytest.mark.parametrize("case", [
    pytest.param(c, id=case_id(c), marks=[pytest.mark.xfail(strict=True,
                                                            reason=EXPECTED[case_id(c)])]
                 if case_id(c) in EXPECTED else []) for c in CASES])
def test_dtype(case):
    op, dtype = case
    fn = opdb.twin(op.op)
    sample, converted = _sample(op, dtype)
    torch.manual_seed(0)
    try:
        expected = op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001  (PyTorch refuses: ember must refuse alike)
        refusal = e
    else:
        refusal = None
    cache = {}
    inputs = opdb._to_ember([sample.input, sample.args, sample.kwargs], cache)
    before = _snapshot(_tensors(inputs))
    ember.manual_seed(0)
    if refusal is None:
        got, got_dtypes = _widened(opdb._call(fn, sample, cache))
        expected, expected_dtypes = _widened(expected)
        assert got_dtypes == expected_dtypes, f"dtypes {got_dtypes}, PyTorch {expected_dtypes}"
        opdb._compare(got, expected, values=not opdb._random(op))
        _STATS["computed"] += 1
    else:
        with pytest.raises(Exception) as info:
            opdb._call(fn, sample, cache)
        assert type(info.value) is type(refusal), \
            f"ember raises {type(info.value).__name__}({info.value}), PyTorch " \
            f"{type(refusal).__name__}({refusal})"
        assert _message(info.value) == _message(refusal), \
            f"ember's message {str(info.value)!r}, PyTorch's {str(refusal)!r}"
        assert _snapshot(_tensors(inputs)) == before, "ember changed its inputs before raising"
        _STATS["refused"] += 1
    _STATS["converted"] += converted
    _STATS["passed"] += 1


def test_expected_lists_only_swept_cases():
    """A line of the expected table names a case of the sweep (a renamed entry must take its
    lines along)."""
    ids = {case_id(c) for c in CASES}
    assert not set(EXPECTED) - ids, sorted(set(EXPECTED) - ids)[:10]



# ---------------------------------------------------------------------------------------------
# Cases the database's first samples do not reach: the other branch of a dtype rule the sweep
# fixed (sizes, empty inputs, backward kernels), each an expression run by both libraries.

_BRANCHES = [
    ("T.bmm(T.ones(2, 8, 8, dtype=T.bool), T.ones(2, 8, 8, dtype=T.bool))", "large bool bmm"),
    ("T.baddbmm(T.ones(1, 2, 2, dtype=T.bool), T.ones(1, 2, 3, dtype=T.bool), "
     "T.ones(1, 3, 2, dtype=T.bool))", "small bool baddbmm"),
    ("T.bmm(T.ones(2, 8, 8, dtype=T.complex32), T.ones(2, 8, 8, dtype=T.complex32))",
     "large ComplexHalf bmm"),
    ("T.mm(T.ones(3, 0, dtype=T.bool), T.ones(0, 3, dtype=T.bool))", "empty bool mm"),
    ("T.ops.aten.avg_pool3d_backward(T.ones(1, 1, 2, 2, 2, dtype=T.int32), "
     "T.ones(1, 1, 2, 2, 2, dtype=T.int32), [1, 1, 1], [1, 1, 1], [0, 0, 0], False, True, None)",
     "avg_pool3d backward"),
    ("T.ops.aten.avg_pool2d_backward(T.ones(1, 2, 2, dtype=T.int32), "
     "T.ones(1, 2, 2, dtype=T.int32), [1, 1], [1, 1], [0, 0], False, True, None)",
     "avg_pool2d backward"),
    ("T.linalg.eigh(T.ones(0, 0, dtype=T.float16))", "empty float16 eigh"),
    ("T.linalg.qr(T.ones(0, 0, dtype=T.float16))", "empty float16 qr"),
    ("T.linalg.svd(T.ones(2, 2, dtype=T.float16))", "float16 svd"),
    ("T.linalg.matrix_norm(T.ones(2, 2, dtype=T.float16), 'nuc')", "float16 nuclear norm"),
    ("T.cummax(T.ones((), dtype=T.complex64), 0)", "0-dim complex cummax"),
    ("T.max(T.ones(0, 3, dtype=T.complex64))", "empty complex max"),
    ("T.max(T.ones(0, 3, dtype=T.complex64), 0)", "empty complex max along a dim"),
    ("T.histc(T.ones(3, dtype=T.complex64), min=0, max=3)", "complex histc with a range"),
    ("T.polygamma(0, T.ones(3, dtype=T.complex64))", "complex digamma through polygamma"),
    ("T.softmax(T.ones(2, 3, dtype=T.complex64), 0)", "complex softmax over an inner dim"),
    ("T.unique(T.ones(3, 1, dtype=T.complex64), dim=0)", "complex unique along a dim"),
    ("T.nn.functional.adaptive_max_pool3d(T.ones(1, 1, 4, 4, 4, dtype=T.int32), 2)",
     "int adaptive_max_pool3d"),
    # the barebones unsigned types: rules/unsigned.py's argument-dependent rows
    ("T.ones(2, 3, dtype=T.uint16).flip(0)", "uint16 flip of an outer dim"),
    ("T.ones(2, 3, dtype=T.uint16).flip(1)", "uint16 flip of the last dim"),
    ("T.ones(2, 3, dtype=T.uint32).sum(0)", "uint32 sum to int64"),
    ("T.ones(2, 3, dtype=T.uint32).sum(0, dtype=T.uint16)", "sum to uint16"),
    ("T.ones(3, dtype=T.uint16).cumsum(0, dtype=T.uint64)", "cumsum to uint64"),
    ("T.ones(3, dtype=T.uint16) + 1.5", "uint16 plus a float"),
    ("T.ones(3, dtype=T.uint16) + 1", "uint16 plus an int"),
    ("T.ones(3, dtype=T.uint16).add_(T.ones(3, dtype=T.uint16))", "uint16 in-place add"),
    ("T.ones(3, dtype=T.uint16) < 2.5", "uint16 below a float"),
    ("T.ones(3, dtype=T.uint64) * T.ones(3, dtype=T.uint64)", "uint64 mul"),
    ("T.ones(3, dtype=T.uint16) == T.ones(3, dtype=T.uint16)", "uint16 eq"),
    ("T.cat([T.ones(3, dtype=T.uint32), T.ones(2, dtype=T.uint32)])", "uint32 cat"),
    ("T.ones(3, dtype=T.uint16) + T.ones(3, dtype=T.int64)", "uint16 promoted with int64"),
    ("T.round(T.ones(3, dtype=T.uint16), decimals=2)", "uint16 round with decimals"),
    ("T.div(T.ones(3, dtype=T.uint16), T.ones(3, dtype=T.uint16), rounding_mode='floor')",
     "uint16 floor division"),
    ("T.nn.functional.adaptive_avg_pool2d(T.ones(0, 2, 4, 4, dtype=T.uint16), 2)",
     "empty uint16 adaptive_avg_pool2d"),
    ("T.nn.functional.adaptive_avg_pool2d(T.ones(1, 2, 4, 4, dtype=T.uint16), 2)",
     "uint16 adaptive_avg_pool2d"),
    ("T.zeros(3, dtype=T.uint16).random_(-1, 5)", "uint16 random_ out of bounds"),
    ("T.zeros(3, dtype=T.uint32).cauchy_()", "uint32 cauchy_"),
    ("T.full((2,), 1e30, dtype=T.uint64)", "uint64 full overflowing"),
    ("T.zeros(3, dtype=T.uint16).fill_(7)", "uint16 fill_"),
]


@pytest.mark.parametrize("expr", [pytest.param(e, id=i) for e, i in _BRANCHES])
def test_dtype_rule_branches(expr):
    try:
        expected = eval(expr, {"T": torch})
    except Exception as e:  # noqa: BLE001  (PyTorch refuses: ember must refuse alike)
        with pytest.raises(type(e)) as info:
            eval(expr, {"T": ember})
        assert _message(info.value) == _message(e)
    else:
        opdb._compare(eval(expr, {"T": ember}), expected)


def test_unsigned_table_rows_all_gate_a_kernel():
    """Each row of the barebones unsigned table gates a registered CPU kernel (a row for an op
    whose CPU kernel is composite, or misspelled, would refuse nothing)."""
    from ember._kernels.rules import unsigned
    assert set(unsigned.NO_CPU_KERNEL) == unsigned.GATED, \
        sorted(set(unsigned.NO_CPU_KERNEL) ^ unsigned.GATED)


@pytest.mark.parametrize("name", ["conv1d", "conv2d", "conv3d", "conv_transpose2d"])
def test_complex_convolution_gradients(name):
    """Complex convolutions (which the sweep runs forward only): their input, weight and bias
    gradients are taken against the conjugates, as PyTorch's."""
    nd = int(name[-2])
    torch.manual_seed(0)
    t = [torch.randn(shape, dtype=torch.complex128, requires_grad=True)
         for shape in ((2, 4) + (5,) * nd, (4, 2) + (3,) * nd, (4,))]
    kw = dict(groups=2, stride=2, padding=1)
    out = getattr(torch.nn.functional, name)(*t, **kw)
    cot = torch.randn_like(out)
    expected = torch.autograd.grad(out, t, cot)
    e = [ember.from_numpy(x.detach().numpy()).requires_grad_() for x in t]
    got_out = getattr(ember.nn.functional, name)(*e, **kw)
    got = ember.autograd.grad(got_out, e, ember.from_numpy(cot.numpy()))
    opdb._compare(got_out, out)
    opdb._compare(list(got), list(expected))

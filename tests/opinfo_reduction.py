"""OpInfo entries of the reductions/scans/sorting area: nansum, nanmean, aminmax, std/var (and
_mean), norm, logsumexp, count_nonzero, the scans (cumsum, cumprod, cummax, cummin,
logcumsumexp), median/nanmedian, mode, quantile/nanquantile, kthvalue, sort/argsort/msort, topk,
unique (_unique2, unique_dim, unique_consecutive), bincount, histc, searchsorted, bucketize.
Loaded by tests/opinfo.py.

Ops that pick by rank get samples with distinct values where PyTorch's choice among ties is an
implementation detail (topk, median, kthvalue: nth_element/partial sort); sort (stable, and the
unstable sort's std::sort order over rows of 40) and mode (documented: the last index of the
smallest most frequent value) get ties too."""
import math

import numpy as np

from opinfo import DT, FLOATS, OPS, OpInfo, Sample, T, reduction_samples, tensor

REAL = ("float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16")
SHAPES = [(2, 3), (3, 4, 2), (), (0, 3), (5,)]
LAYOUTS = ("transposed", "sliced", "expanded")
NAN = math.nan


def _add(name, samples, dtypes=REAL, inplace=None, out=None, **tol):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, **tol))


_rng = np.random.default_rng(3)


def distinct(shape, dtype, layout="contiguous"):
    """Values without ties along any dim (a shuffled range), representable in ``dtype``."""
    n = int(np.prod(shape)) if shape else 1
    v = _rng.permutation(n).astype(np.float64)
    if dtype not in ("uint8", "bool"):
        v -= n // 2
    if dtype in FLOATS:
        v = v / 4
    return T(v.reshape(shape), dtype, layout)


def with_nan(dtype="float32"):
    return T(np.array([[3.0, NAN, 1.0, 2.0], [NAN, NAN, NAN, NAN], [2.0, 1.0, -1.0, 0.0]]), dtype)


def _dims_for(shape):
    nd = len(shape)
    dims = [None, []] + [[d] for d in range(-max(nd, 1), max(nd, 1))]
    if nd >= 2:
        dims += [[0, -1], [0, 0]]
    return dims + [[5]]


def layouts(dtypes, make=tensor):
    for dt in dtypes:
        for lay in LAYOUTS:
            yield dt, make((3, 4), dt, lay)


# -- nansum / nanmean / aminmax ------------------------------------------------------------------

def nan_reduction_samples(op):
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt)
            for dim in _dims_for(shape):
                for kd in (False, True):
                    yield Sample((x, dim, kd), desc=f"{dt} {shape} dim={dim} keepdim={kd}")
        if dt in FLOATS:
            for dim in (None, [1], [0]):
                yield Sample((with_nan(dt), dim), desc=f"{dt} NaN dim={dim}")
    for dt, x in layouts(("float32", "int64")):
        yield Sample((x, [1]), desc=f"{dt} {x.layout}")
    for src, target in (("int32", "float64"), ("float32", "float64"), ("bool", "int64")):
        yield Sample((tensor((2, 3), src), [1]), {"dtype": DT(target)}, desc=f"{src}->{target}")
    yield Sample((T(np.ones((2, 2)), "complex64"), None), desc="complex")


def aminmax_samples(op):
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt)
            yield Sample((x,), desc=f"{dt} {shape}")
            yield Sample((x,), {"keepdim": True}, desc=f"{dt} {shape} keepdim")
            for d in range(-max(len(shape), 1), max(len(shape), 1)):
                yield Sample((x,), {"dim": d, "keepdim": d % 2 == 0}, desc=f"{dt} {shape} dim={d}")
            yield Sample((x,), {"dim": 3}, desc=f"{dt} {shape} dim out of range")
        if dt in FLOATS:
            yield Sample((with_nan(dt),), {"dim": 1}, desc=f"{dt} NaN")
    for dt, x in layouts(("float32", "int64")):
        yield Sample((x,), {"dim": 0}, desc=f"{dt} {x.layout}")


# -- std / var and the _mean twins ---------------------------------------------------------------

_MOMENT_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "bool")


def correction_samples(op):
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt)
            for dim in _dims_for(shape):
                yield Sample((x, dim), desc=f"{dt} {shape} dim={dim}")
            for corr in (0, 2, 1.5):
                yield Sample((x, [0] if shape else None), {"correction": corr, "keepdim": True},
                             desc=f"{dt} {shape} correction={corr}")
    for dt, x in layouts(("float32",)):
        yield Sample((x, [1]), {"correction": 0}, desc=f"{dt} {x.layout}")
    yield Sample((with_nan(),), {"keepdim": True}, desc="NaN")
    yield Sample((T(np.array([1 + 2j, 3 - 1j, 0.5j]), "complex64"),), desc="complex")


def unbiased_samples(op, with_dim):
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt)
            for unbiased in (True, False):
                if not with_dim:
                    yield Sample((x, unbiased), desc=f"{dt} {shape} unbiased={unbiased}")
                    continue
                for dim in (None, [0], [-1]):
                    yield Sample((x, dim, unbiased, unbiased),
                                 desc=f"{dt} {shape} dim={dim} unbiased={unbiased}")


for _m in ("std", "var", "std_mean", "var_mean"):
    _add(f"{_m}.correction", correction_samples, _MOMENT_DTYPES, None, f"{_m}.correction_out",
         rtol=1e-4)
    _add(f"{_m}.default", lambda op: unbiased_samples(op, False), _MOMENT_DTYPES, rtol=1e-4)
    _add(f"{_m}.dim", lambda op: unbiased_samples(op, True), _MOMENT_DTYPES,
         None, f"{_m}.out" if _m in ("std", "var") else None, rtol=1e-4)

_add("nansum.default", nan_reduction_samples, REAL, None, "nansum.out", rtol=1e-2)
_add("nanmean.default", nan_reduction_samples, REAL, None, "nanmean.out", rtol=1e-2)
_add("aminmax.default", aminmax_samples, REAL, None, "aminmax.out")


# -- norm ----------------------------------------------------------------------------------------

_PS = (2, 1, 0, 3, 0.5, math.inf, -math.inf, -1)


def norm_samples(op):
    overload = op.name.split(".")[1]
    with_dim = "dim" in overload
    with_dtype = "dtype" in overload
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt)
            for p in _PS if dt in ("float32", "float64") else (2, 3):
                if with_dim:
                    for dim in ([1], [-1], [0, 1], []):
                        if shape and max(abs(d) for d in dim or [0]) < len(shape):
                            args = (x, p, dim, True) if with_dtype else (x, p, dim)
                            yield Sample(args, {"dtype": DT("float64")} if with_dtype else {},
                                         desc=f"{dt} {shape} p={p} dim={dim}")
                elif with_dtype:
                    yield Sample((x, p), {"dtype": DT("float64")}, desc=f"{dt} {shape} p={p}")
                else:
                    yield Sample((x, p), desc=f"{dt} {shape} p={p}")
    if overload == "ScalarOpt_dim":
        yield Sample((tensor((2, 3), "float32"), None, [1]), desc="p=None")
        yield Sample((tensor((3, 4), "float32", "transposed"), 2, [0]), desc="transposed")
    if with_dtype:
        extra = (2, [1], True) if with_dim else (2,)
        yield Sample((tensor((2, 3), "float64"),) + extra, {"dtype": DT("float32")},
                     desc="narrowing")
        yield Sample((tensor((2, 3), "float32"),) + extra, {"dtype": DT("int64")}, desc="int dtype")
    if not with_dtype:
        yield Sample((T(np.array([3 + 4j, 1j]), "complex64"), 2) + (([0],) if with_dim else ()),
                     desc="complex")


_NORM_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "bool")
_add("norm.Scalar", norm_samples, _NORM_DTYPES, None, "norm.Scalar_out", rtol=1e-4)
_add("norm.ScalarOpt_dtype", norm_samples, _NORM_DTYPES, None, "norm.ScalarOpt_dtype_out",
     rtol=1e-4)
_add("norm.ScalarOpt_dim", norm_samples, _NORM_DTYPES, None, "norm.out", rtol=1e-4)
_add("norm.ScalarOpt_dim_dtype", norm_samples, _NORM_DTYPES, None, "norm.dtype_out", rtol=1e-4)


# -- logsumexp / count_nonzero ------------------------------------------------------------------

def logsumexp_samples(op):
    yield from reduction_samples(op, ("list",))
    inf = T(np.array([[math.inf, math.inf], [-math.inf, -math.inf], [1.0, -math.inf]]), "float32")
    yield Sample((inf, [1]), desc="infinities")
    yield Sample((tensor((2, 3), "float32"), [], True), desc="dim=[] keepdim")
    yield Sample((tensor((0, 3), "float32"), [0, 1]), desc="empty")


_add("logsumexp.default", logsumexp_samples, REAL, None, "logsumexp.out", rtol=1e-4)
_add("count_nonzero.default",
     lambda op: (s for s in (Sample((tensor(sh, dt),) + d, desc=f"{dt} {sh} {d}")
                             for dt in op.dtypes for sh in SHAPES
                             for d in [(), (0,), (-1,), (2,)])),
     REAL, None, "count_nonzero.out")
_add("count_nonzero.dim_IntList",
     lambda op: (Sample((tensor(sh, dt), d), desc=f"{dt} {sh} {d}") for dt in op.dtypes
                 for sh in SHAPES for d in _dims_for(sh) if d is not None),
     REAL, None, "count_nonzero.dim_IntList_out")


# -- scans ---------------------------------------------------------------------------------------

def scan_samples(op, with_dtype=False, nan=False, **kw):
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt, **kw)
            for d in range(-max(len(shape), 1), max(len(shape), 1)):
                yield Sample((x, d), desc=f"{dt} {shape} dim={d}")
            yield Sample((x, 3), desc=f"{dt} {shape} dim out of range")
        for lay in LAYOUTS:
            yield Sample((tensor((3, 4), dt, lay, **kw), 1), desc=f"{dt} {lay}")
    if nan:
        yield Sample((with_nan(), 1), desc="NaN")
        yield Sample((T(np.array([1.0, 1.0, 2.0, 2.0, 0.0]), "float32"), 0), desc="ties")
    if with_dtype:
        for src, target in (("int32", "float64"), ("bool", "int32"), ("float32", "float64")):
            yield Sample((tensor((2, 3), src), 1), {"dtype": DT(target)}, desc=f"{src}->{target}")


_add("cumsum.default", lambda op: scan_samples(op, True), REAL, "cumsum_.default", "cumsum.out",
     rtol=1e-2)
_add("cumprod.default", lambda op: scan_samples(op, True, low=-2, high=2), REAL,
     "cumprod_.default", "cumprod.out", rtol=1e-2)
_add("cummax.default", lambda op: scan_samples(op, nan=True), REAL, None, "cummax.out")
_add("cummin.default", lambda op: scan_samples(op, nan=True), REAL, None, "cummin.out")
_add("logcumsumexp.default", lambda op: scan_samples(op, nan=True), REAL, None,
     "logcumsumexp.out", rtol=1e-4)


# -- selections by rank: median, nanmedian, kthvalue, mode ---------------------------------------

_SEL = ("float32", "float64", "int64", "int32", "uint8", "float16", "bfloat16", "bool")


def selection_samples(op, kind):
    """kind: 'full' (no dim), 'dim' (dim, keepdim), 'kth' (k, dim, keepdim)."""
    for dt in op.dtypes:
        for shape in SHAPES:
            # PyTorch's median/kthvalue pick among ties with nth_element: distinct values
            x = tensor(shape, dt) if kind == "mode" else distinct(shape, dt)
            if kind == "full":
                yield Sample((x,), desc=f"{dt} {shape}")
                continue
            for d in range(-max(len(shape), 1), max(len(shape), 1)):
                n = shape[d] if shape else 1
                for kd in (False, True):
                    if kind == "kth":
                        for k in {1, n, (n + 1) // 2, n + 1, 0}:
                            yield Sample((x, k, d, kd), desc=f"{dt} {shape} k={k} dim={d}")
                    else:
                        yield Sample((x, d, kd), desc=f"{dt} {shape} dim={d} keepdim={kd}")
            if kind != "kth":
                yield Sample((x, 4), desc=f"{dt} {shape} dim out of range")
        for lay in LAYOUTS if kind == "mode" else ("transposed", "sliced"):
            x = tensor((3, 4), dt, lay) if kind == "mode" else distinct((3, 4), dt, lay)
            yield Sample((x,) if kind == "full" else ((x, 2, 0) if kind == "kth" else (x, 0)),
                         desc=f"{dt} {lay}")
    if kind != "mode":  # PyTorch's mode of NaNs depends on its unstable sort
        for dt in ("float32", "float64"):
            # no all-NaN slice: which NaN PyTorch's nanmedian returns then is unspecified
            x = T(np.array([[3.0, NAN, 1.0, 2.0], [NAN, 5.0, NAN, 4.0], [2.0, 1.0, -1.0, 0.0]]), dt)
            yield Sample((x,) if kind == "full" else ((x, 2, 1) if kind == "kth" else (x, 1)),
                         desc=f"{dt} NaN")


for _m in ("median", "nanmedian"):
    _add(f"{_m}.default", lambda op: selection_samples(op, "full"), _SEL, None, f"{_m}.out")
    _add(f"{_m}.dim", lambda op: selection_samples(op, "dim"), _SEL, None, f"{_m}.dim_values")
# (bool is rejected except for 0-dim inputs, which PyTorch's out= form copies without a kernel)
_add("kthvalue.default", lambda op: selection_samples(op, "kth"), _SEL[:-1], None,
     "kthvalue.values")
_add("kthvalue.default", lambda op: [Sample((tensor((2, 3), "bool"), 1), desc="bool")], ("bool",),
     None, "kthvalue.values")
_add("mode.default", lambda op: selection_samples(op, "mode"), _SEL, None, "mode.values")


# -- quantile / nanquantile ----------------------------------------------------------------------

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile_samples(op):
    scalar = op.name.endswith("scalar")
    qs = [0.0, 0.25, 0.5, 0.9, 1.0]
    q1 = T(np.array(qs), "float32")
    for dt in op.dtypes:
        qt = T(np.array(qs), dt)
        q = (lambda v: v) if scalar else (lambda v: T(np.array(v), dt))
        for shape in [(2, 5), (3, 4, 2), (), (7,)]:
            x = tensor(shape, dt)
            for dim in [None] + list(range(-max(len(shape), 1), max(len(shape), 1))):
                for kd in (False, True):
                    # every interpolation on one shape; linear (the default) on the others
                    for interp in INTERPOLATIONS if shape == (2, 5) else ("linear",):
                        yield Sample((x, q(0.3) if scalar else qt, dim, kd),
                                     {"interpolation": interp},
                                     desc=f"{dt} {shape} dim={dim} keepdim={kd} {interp}")
            yield Sample((x, q(0.5)), desc=f"{dt} {shape} 0-dim q")
        yield Sample((with_nan(dt), q(0.4), 1), desc=f"{dt} NaN")
        yield Sample((with_nan(dt), q(0.5)), desc=f"{dt} NaN all")
        yield Sample((tensor((3, 4), dt, "transposed"), q(0.7), 0), desc=f"{dt} transposed")
        yield Sample((tensor((8,), dt), q(0.125)), {"interpolation": "nearest"},
                     desc=f"{dt} nearest half to even")
    # errors
    x = tensor((2, 3), "float32")
    yield Sample((x, q1 if not scalar else 0.5), {"interpolation": "cubic"}, desc="interpolation")
    yield Sample((tensor((0,), "float32"), q1 if not scalar else 0.5), desc="empty input")
    yield Sample((tensor((2, 3), "int64"), q1 if not scalar else 0.5), desc="int input")
    yield Sample((x, 1.5 if scalar else T(np.array([0.5, 1.5]), "float32")), desc="q out of [0, 1]",
                 data_dependent=not scalar)
    if not scalar:
        yield Sample((x, T(np.array([0.5]), "float64")), desc="q dtype")
        yield Sample((x, T(np.array([[0.5]]), "float32")), desc="2-d q")


for _m in ("quantile", "nanquantile"):
    _add(f"{_m}.default", quantile_samples, ("float32", "float64"), None, f"{_m}.out", rtol=1e-5)
    _add(f"{_m}.scalar", quantile_samples, ("float32", "float64"), None, f"{_m}.scalar_out",
         rtol=1e-5)


# -- sort / argsort / msort / topk -------------------------------------------------------------

def sort_samples(op):
    stable = op.name.endswith("stable")
    for dt in op.dtypes:
        for shape in SHAPES:
            x = tensor(shape, dt)  # (rows of at most 16 are insertion-sorted: stable)
            for d in range(-max(len(shape), 1), max(len(shape), 1)):
                for desc in (False, True):
                    if stable:
                        yield Sample((x,), {"stable": True, "dim": d, "descending": desc},
                                     desc=f"{dt} {shape} dim={d} desc={desc}")
                    else:
                        yield Sample((x, d, desc), desc=f"{dt} {shape} dim={d} desc={desc}")
            yield Sample((x,) if stable else (x, 3), {"stable": None, "dim": 3} if stable else {},
                         desc=f"{dt} {shape} dim out of range")
        for lay in LAYOUTS:
            yield Sample((tensor((3, 4), dt, lay),), {"stable": False} if stable else {},
                         desc=f"{dt} {lay}")
        # rows of 40 from three values: the unstable sort's order among ties is std::sort's
        ties = T(np.random.RandomState(0).randint(0, 3, (3, 40)).astype(np.float64), dt)
        for desc in (False, True):
            for d in (0, 1):
                kw = {"stable": False, "dim": d, "descending": desc} if stable else \
                    {"dim": d, "descending": desc}
                yield Sample((ties,), kw, desc=f"{dt} ties dim={d} desc={desc}")
    for desc in (False, True):
        kw = {"stable": True, "descending": desc} if stable else {"descending": desc}
        yield Sample((with_nan(),), kw, desc=f"NaN desc={desc}")
        wide_nan = T(np.where(np.arange(60) % 7 == 0, NAN, np.arange(60) % 4).reshape(2, 30),
                     "float32")
        yield Sample((wide_nan,), {"stable": False, "descending": desc} if stable else
                     {"descending": desc}, desc=f"NaN among ties desc={desc}")
        yield Sample((T(np.array([0.0, -0.0, 1.0, -0.0]), "float32"),), kw, desc="signed zeros")


def topk_samples(op):
    for dt in op.dtypes:
        for shape in SHAPES:
            x = distinct(shape, dt)  # topk's order among ties is unspecified
            for d in range(-max(len(shape), 1), max(len(shape), 1)):
                n = shape[d] if shape else 1
                for k in sorted({0, 1, n, n + 1, -1}):
                    for largest in (True, False):
                        yield Sample((x, k, d, largest), desc=f"{dt} {shape} k={k} dim={d}")
        for lay in ("transposed", "sliced"):
            yield Sample((distinct((3, 4), dt, lay), 2, 0), desc=f"{dt} {lay}")
    yield Sample((T(np.array([1.0, NAN, 3.0, -2.0]), "float32"), 2), desc="NaN largest")
    yield Sample((T(np.array([1.0, NAN, 3.0, -2.0]), "float32"), 2, 0, False), desc="NaN smallest")
    yield Sample((T(np.array([True, False]), "bool"), 1), desc="bool")


_SORT = ("float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool", "float16",
         "bfloat16")
_add("sort.default", sort_samples, _SORT, None, "sort.values")
_add("sort.stable", sort_samples, _SORT, None, "sort.values_stable")
_add("argsort.default", sort_samples, _SORT)
_add("argsort.stable", sort_samples, _SORT, None, "argsort.stable_out")
_add("msort.default", lambda op: (Sample((tensor(sh, dt, lay),), desc=f"{dt} {sh} {lay}")
                                  for dt in op.dtypes for sh in SHAPES
                                  for lay in ("contiguous", "transposed")),
     _SORT, None, "msort.out")
_add("topk.default", topk_samples, tuple(d for d in _SORT if d != "bool"), None, "topk.values")


# -- unique --------------------------------------------------------------------------------------

def unique_samples(op):
    kind = op.name.split(".")[0]
    flags = [(False, False), (True, False), (False, True), (True, True)]
    for dt in op.dtypes:
        for shape in [(2, 3), (6,), (), (0, 3), (3, 4, 2)]:
            x = tensor(shape, dt, low=-2, high=2)  # repeated values
            for inv, cnt in flags:
                if kind == "_unique2":
                    yield Sample((x, True, inv, cnt), desc=f"{dt} {shape} {inv} {cnt}")
                elif kind == "unique_consecutive":
                    yield Sample((x, inv, cnt), desc=f"{dt} {shape} {inv} {cnt}")
                for d in range(-len(shape), len(shape)):
                    if kind == "unique_dim":
                        yield Sample((x, d, True, inv, cnt), desc=f"{dt} {shape} dim={d}")
                    elif kind == "unique_consecutive":
                        yield Sample((x, inv, cnt, d), desc=f"{dt} {shape} dim={d}")
        rows = T(np.array([[1, 2], [1, 2], [0, 5], [1, 2]]), dt)
        if kind == "unique_dim":
            yield Sample((rows, 0, True, True, True), desc=f"{dt} repeated rows")
            yield Sample((tensor((), dt), 0), desc=f"{dt} 0-dim")
            yield Sample((tensor((0, 3), dt), 1), desc=f"{dt} empty unselected dim")
        elif kind == "unique_consecutive":
            yield Sample((rows, True, True, 0), desc=f"{dt} repeated rows")
        else:
            yield Sample((tensor((3, 4), dt, "transposed", low=-2, high=2), False, True, True),
                         desc=f"{dt} transposed unsorted")
    nan = T(np.array([NAN, 1.0, NAN, 1.0]), "float32")
    if kind == "_unique2":
        yield Sample((nan, True, True, True), desc="NaNs are distinct")
    elif kind == "unique_consecutive":
        yield Sample((nan, True, True), desc="NaNs are distinct")


_UNIQUE = ("float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16")
_add("_unique2.default", unique_samples, _UNIQUE, None, "_unique2.out")
_add("unique_dim.default", unique_samples, _UNIQUE, None, "unique_dim.out")
_add("unique_consecutive.default", unique_samples, _UNIQUE, None, "unique_consecutive.out")


# -- bincount / histc ----------------------------------------------------------------------------

def bincount_samples(op):
    for dt in op.dtypes:
        x = tensor((7,), dt, low=0, high=5)
        yield Sample((x,), desc=dt)
        yield Sample((x, None, 10), desc=f"{dt} minlength")
        for wdt in ("float32", "float64", "float16", "int64"):
            yield Sample((x, tensor((7,), wdt)), desc=f"{dt} weights {wdt}")
        yield Sample((tensor((0,), dt), None, 3), desc=f"{dt} empty")
        yield Sample((tensor((3, 4), dt, "sliced", low=0, high=5),), desc=f"{dt} 2-d")
        yield Sample((x, tensor((3,), "float32")), desc=f"{dt} weights length")
        yield Sample((x, None, -1), desc=f"{dt} negative minlength")
    yield Sample((T(np.array([1, -1, 2]), "int64"),), desc="negative", data_dependent=True)
    yield Sample((tensor((4,), "float32", positive=True),), desc="float input")
    yield Sample((T(np.array([True]), "bool"),), desc="bool input")


_add("bincount.default", bincount_samples, ("int64", "int32", "int16", "int8", "uint8"), None,
     "bincount.out")


def histc_samples(op):
    for dt in op.dtypes:
        for shape in [(20,), (3, 4), (), (0,)]:
            x = tensor(shape, dt)
            yield Sample((x,), desc=f"{dt} {shape}")
            yield Sample((x, 7), desc=f"{dt} {shape} 7 bins")
            yield Sample((x, 5, -2, 3), desc=f"{dt} {shape} range")
        yield Sample((T(np.array([1.0, 1.0]), dt), 4), desc=f"{dt} one value")
        yield Sample((tensor((3, 4), dt, "transposed"), 6, -5, 5), desc=f"{dt} transposed")
        yield Sample((tensor((4,), dt), 0), desc=f"{dt} no bins")
        yield Sample((tensor((4,), dt), 4, 3, 1), desc=f"{dt} min > max")
    yield Sample((tensor((4,), "int64"), 4), desc="int input")


_add("histc.default", histc_samples, ("float32", "float64", "float16", "bfloat16"), None,
     "histc.out", atol=1e-6)


# -- searchsorted / bucketize --------------------------------------------------------------------

def _sorted(shape, dtype):
    v = np.sort(tensor(shape, dtype).values, axis=-1)
    return T(v, dtype)


def searchsorted_samples(op):
    scalar = op.name.endswith("Scalar")
    for dt in op.dtypes:
        seq = _sorted((8,), dt)
        vals = [2, -1.5, 10] if scalar else [tensor((2, 3), dt), tensor((), dt), tensor((0,), dt),
                                              tensor((3, 4), dt, "transposed")]
        for v in vals:
            for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left"},
                       {"out_int32": True}):
                yield Sample((seq, v), kw, desc=f"{dt} {kw}")
        if not scalar:
            yield Sample((_sorted((2, 5), dt), tensor((2, 3), dt)), desc=f"{dt} per-row boundaries")
            yield Sample((_sorted((2, 5), dt), tensor((3, 3), dt)), desc=f"{dt} row mismatch")
    # (sorter, a keyword tensor the Meta test cannot move, is tested in test_grad_reduction.py)
    base = T(np.array([3.0, 1.0, 2.0, 5.0]), "float32")
    v = 2.5 if scalar else tensor((3,), "float32")
    yield Sample((base, v), {"side": "middle"}, desc="bad side")
    yield Sample((base, v), {"side": "left", "right": True}, desc="side/right conflict")
    yield Sample((T(np.array(1.0), "float32"), v), desc="0-dim boundaries")


def bucketize_samples(op):
    scalar = op.name.endswith("Scalar")
    for dt in op.dtypes:
        b = _sorted((6,), dt)
        vals = [3, -0.5] if scalar else [tensor((2, 3), dt), tensor((), dt), tensor((0,), dt)]
        for v in vals:
            for kw in ({}, {"right": True}, {"out_int32": True}):
                yield Sample((v, b), kw, desc=f"{dt} {kw}")
    v = 1 if scalar else tensor((3,), "float32")
    yield Sample((v, _sorted((2, 3), "float32")), desc="2-d boundaries")


_SS = ("float32", "float64", "int64", "int32", "uint8", "float16", "bfloat16")
_add("searchsorted.Tensor", searchsorted_samples, _SS, None, "searchsorted.Tensor_out")
_add("searchsorted.Scalar", searchsorted_samples, _SS, None, "searchsorted.Scalar_out")
_add("bucketize.Tensor", bucketize_samples, _SS, None, "bucketize.Tensor_out")
_add("bucketize.Scalar", bucketize_samples, _SS, None, "bucketize.Scalar_out")

"""OpInfo-style table: one entry per declared functional overload, with its sample inputs.

Each :class:`OpInfo` names an aten overload (``"add.Tensor"``); its PyTorch reference is the
same overload in ``torch.ops.aten``, so ember and PyTorch receive identical arguments. Its
``inplace``/``out`` overloads are tested from the same samples. ``samples(op)`` yields
:class:`Sample` objects whose tensor arguments are :class:`T` specs (values + memory layout);
``tests/test_ops.py`` turns them into ember tensors (any strides, via ``ember._tensor._alias``),
torch tensors and meta tensors, and compares values, dtypes, shapes and exception types.

Error samples need no special marking: whenever PyTorch raises on a sample, ember must raise the
same exception type (and leave ``out``/``self`` untouched). A sample whose error depends on the
data (integer division by zero) sets ``data_dependent`` so the Meta test skips the error check.

To add an op: append an OpInfo (usually through one of the category helpers at the bottom) or,
for ops other files test (factories, views, copies), name it in ``NOT_IN_TABLE`` with a reason.
"""
import dataclasses
import itertools
import math
from typing import Callable, Optional

import numpy as np

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "int16", "int8", "uint8")
ALL = FLOATS + INTS + ("bool",)


@dataclasses.dataclass
class T:
    """A tensor argument: its values and the memory layout to build it with."""
    values: np.ndarray
    dtype: str
    layout: str = "contiguous"  # contiguous | transposed | sliced | expanded


@dataclasses.dataclass
class DT:
    """A dtype argument (``dtype=DT("int64")``)."""
    name: str


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    data_dependent: bool = False
    desc: str = ""
    # the reference is the public torch function (torch.ops.aten rejects Python numbers in
    # Tensor positions, but torch.add(t, 1.5) passes them as wrapped numbers)
    public_ref: bool = False


@dataclasses.dataclass
class OpInfo:
    name: str                           # functional overload, "add.Tensor"
    samples: Callable                   # (OpInfo) -> iterable of Sample
    dtypes: tuple = ALL
    inplace: Optional[str] = None       # "add_.Tensor"
    out: Optional[str] = None           # "add.out"
    rtol: float = 1e-5
    atol: float = 1e-6
    meta_tags: tuple = ()               # ("dynamic_output_shape",): a composite over such ops

    def __repr__(self):
        return self.name


# ---------------------------------------------------------------------------------------------
# Values

_rng = np.random.default_rng(0)


def values(shape, dtype, low=-5, high=5, nonzero=False, positive=False):
    """Deterministic values for ``shape`` representable in ``dtype`` (as float64 or int64)."""
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        v = _rng.integers(0, 2, n).astype(bool)
        if nonzero:
            v[:] = True
    elif dtype in INTS:  # (the integers within [low, high] widened to whole bounds)
        lo = 1 if positive else (0 if dtype == "uint8" else math.floor(low))
        v = _rng.integers(lo, math.ceil(high) + 1, n)
        if nonzero:
            v[v == 0] = 1
    else:
        lo = 0.25 if positive else low
        v = np.round(_rng.uniform(lo, high, n) * 4) / 4  # exactly representable in bfloat16
        if nonzero:
            v[v == 0] = 0.5
    return v.reshape(shape)


def tensor(shape, dtype, layout="contiguous", **kw):
    if layout == "expanded":
        row = values((1,) + tuple(shape[1:]), dtype, **kw)
        return T(np.broadcast_to(row, shape).copy(), dtype, layout)
    return T(values(shape, dtype, **kw), dtype, layout)


def number_for(dtype, **kw):
    """A Python number of the category of ``dtype``."""
    if dtype == "bool":
        return True
    if dtype in INTS:
        return 3
    return 1.5 if not kw.get("positive") else 2.0


# ---------------------------------------------------------------------------------------------
# Sample generators by category

_BINARY_SHAPES = [((2, 3), (2, 3), "same shape"), ((2, 3), (3,), "broadcast"),
                  ((2, 1), (1, 3), "broadcast both"), ((), (2, 3), "0-dim self"),
                  ((2, 3), (), "0-dim other"), ((0, 3), (3,), "empty"), ((), (), "0-dim both")]
_LAYOUTS = ["transposed", "sliced", "expanded"]
_MIXED = [("float32", "int64"), ("int32", "float64"), ("bool", "int64"), ("uint8", "int8"),
          ("float16", "bfloat16"), ("int64", "float16"), ("bool", "float32")]


def binary_samples(op, rhs="tensor", lhs="tensor", extra=None, numbers=True, int_only=False,
                   **kw):
    """Samples of a binary pointwise op. rhs/lhs: 'tensor' or 'number' (Scalar overloads);
    numbers: whether the Tensor overload's public function takes a wrapped number; int_only: the
    Scalar operand must be integral; kw: value options (nonzero, positive, high)."""
    extra = extra or {}
    for dt in op.dtypes:
        if lhs == "number":
            for shape in [(2, 3), (), (0, 2)]:
                yield Sample((number_for(dt, **kw), tensor(shape, dt, **kw)), dict(extra), desc=dt)
            continue
        if rhs == "number":
            for shape in [(2, 3), (), (0, 2)]:
                for num in {number_for(dt, **kw), 2, 2 if int_only else 0.5, True}:
                    yield Sample((tensor(shape, dt, **kw), num), dict(extra), desc=f"{dt} {num!r}")
            yield Sample((tensor((2, 3), dt, "transposed", **kw), number_for(dt, **kw)),
                         dict(extra), desc=f"{dt} transposed")
            continue
        for a, b, desc in _BINARY_SHAPES:
            yield Sample((tensor(a, dt, **kw), tensor(b, dt, **kw)), dict(extra),
                         desc=f"{dt} {desc}")
        for la, lb in itertools.product(["contiguous"] + _LAYOUTS, repeat=2):
            # every layout pair for float32 and int64; one strided pair for the other dtypes
            if la == lb == "contiguous" or (dt not in ("float32", "int64") and
                                            (la, lb) != ("transposed", "sliced")):
                continue
            yield Sample((tensor((3, 4), dt, la, **kw), tensor((3, 4), dt, lb, **kw)), dict(extra),
                         desc=f"{dt} {la}/{lb}")
        if numbers:
            yield Sample((tensor((2, 3), dt, **kw), number_for(dt, **kw)), dict(extra),
                         desc=f"{dt} wrapped number", public_ref=True)
        yield Sample((tensor((2, 3), dt, **kw), tensor((4,), dt, **kw)), dict(extra),
                     desc=f"{dt} broadcast error")
    if lhs == "tensor" and rhs == "tensor":
        for da, db in _MIXED:
            if da in op.dtypes and db in op.dtypes:
                yield Sample((tensor((2, 3), da, **kw), tensor((2, 3), db, **kw)), dict(extra),
                             desc=f"{da}+{db}")
                yield Sample((tensor((2, 3), da, **kw), tensor((), db, **kw)), dict(extra),
                             desc=f"{da}+0-dim {db}")


def unary_samples(op, **kw):
    for dt in op.dtypes:
        for shape in [(2, 3), (), (0, 4)]:
            yield Sample((tensor(shape, dt, **kw),), desc=f"{dt} {shape}")
        for layout in _LAYOUTS:
            yield Sample((tensor((3, 4), dt, layout, **kw),), desc=f"{dt} {layout}")


def where_samples(op):
    for dt in op.dtypes:
        c = T(values((2, 3), "bool"), "bool")
        yield Sample((c, tensor((2, 3), dt), tensor((2, 3), dt)), desc=dt)
        yield Sample((T(values((3,), "bool"), "bool"), tensor((2, 1), dt), tensor((), dt)),
                     desc=f"{dt} broadcast")
        yield Sample((T(values((3, 4), "bool"), "bool", "transposed"), tensor((3, 4), dt, "sliced"),
                      tensor((3, 4), dt, "expanded")), desc=f"{dt} strided")
    yield Sample((T(values((2, 3), "bool"), "bool"), tensor((2, 3), "float32"),
                  tensor((2, 3), "int64")), desc="mixed")
    yield Sample((tensor((2, 3), "float32"), tensor((2, 3), "float32"),
                  tensor((2, 3), "float32")), desc="float condition")
    yield Sample((T(values((2, 3), "bool"), "bool"), tensor((2, 3), "float32"),
                  tensor((4,), "float32")), desc="broadcast error")


def where_scalar_samples(op, which):
    c = T(values((2, 3), "bool"), "bool")
    for dt in ("float32", "int64", "bool", "float16"):
        t = tensor((2, 3), dt)
        for num in (2, 2.5, True):
            args = {"self": (c, num, t), "other": (c, t, num), "both": (c, num, 1)}[which]
            yield Sample(args, desc=f"{dt} {num!r}")


def reduction_samples(op, dims=("all",), with_dtype=False, keepdim=True, int_dim=False, **kw):
    """Samples of a reduction. dims: which dim arguments the overload takes: 'all' (none),
    'list' (int[] dim), 'int' (int dim), 'optional' (int? dim)."""
    shapes = [(2, 3), (3, 4, 2), (), (0, 3), (5,)]
    along = "list" in dims or "int" in dims
    for dt in op.dtypes:
        for shape in shapes:
            x = tensor(shape, dt, **kw)
            if "all" in dims:
                yield Sample((x,), desc=f"{dt} {shape}")
            if not along:
                continue
            nd = len(shape)
            for d in range(-max(nd, 1), max(nd, 1)):
                for kd in (False, True) if keepdim else (False,):
                    arg = d if int_dim else [d]
                    yield Sample((x, arg, kd), desc=f"{dt} {shape} dim={d} keepdim={kd}")
            if not int_dim and nd >= 2:
                yield Sample((x, [0, -1]), desc=f"{dt} {shape} dims (0, -1)")
                yield Sample((x, [0, 0]), desc=f"{dt} {shape} repeated dim")
                yield Sample((x, []), desc=f"{dt} {shape} dim=[]")
            yield Sample((x, 3 if int_dim else [3]), desc=f"{dt} {shape} dim out of range")
        # (the value range too: prod's samples must not overflow float16, see below)
        if along:
            for layout in _LAYOUTS:
                yield Sample((tensor((3, 4), dt, layout, **kw), 1 if int_dim else [1]),
                             desc=f"{dt} {layout}")
        else:
            for layout in _LAYOUTS:
                yield Sample((tensor((3, 4), dt, layout, **kw),), desc=f"{dt} {layout}")
    if with_dtype:
        for dt in ("int32", "bool", "float32"):
            for target in ("float64", "int64", "float32"):
                x = tensor((2, 3), dt)
                if "all" in dims:
                    yield Sample((x,), {"dtype": DT(target)}, desc=f"{dt}->{target}")
                if along:
                    yield Sample((x, 1 if int_dim else [1]), {"dtype": DT(target)},
                                 desc=f"{dt}->{target} dim")


def optional_dim_samples(op):
    """argmax/argmin: int? dim."""
    for dt in op.dtypes:
        for shape in [(2, 3), (3, 4, 2), (), (0, 3), (5,)]:
            x = tensor(shape, dt)
            yield Sample((x,), desc=f"{dt} {shape}")
            yield Sample((x, None, True), desc=f"{dt} {shape} keepdim")
            for d in range(-max(len(shape), 1), max(len(shape), 1)):
                yield Sample((x, d), desc=f"{dt} {shape} dim={d}")
                yield Sample((x, d, True), desc=f"{dt} {shape} dim={d} keepdim")
        yield Sample((tensor((3, 4), dt, "transposed"), 0), desc=f"{dt} transposed")


def mm_like_samples(op, shapes):
    for dt in op.dtypes:
        for sa, sb in shapes:
            yield Sample((tensor(sa, dt), tensor(sb, dt)), desc=f"{dt} {sa}@{sb}")
    sa, sb = shapes[0]
    yield Sample((tensor(sa, "float32"), tensor(sb, "float64")), desc="dtype mismatch")
    yield Sample((tensor(sa, "bool"), tensor(sb, "bool")), desc="bool")
    if len(sa) == 2 and len(sb) == 2:
        yield Sample((tensor((3, 4), "float32", "transposed"), tensor((3, 5), "float32", "sliced")),
                     desc="strided")


def addmm_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((2, 4), dt), tensor((2, 3), dt), tensor((3, 4), dt)), desc=dt)
        yield Sample((tensor((4,), dt), tensor((2, 3), dt), tensor((3, 4), dt)), desc=f"{dt} bcast")
    f = "float64"
    yield Sample((tensor((2, 4), f), tensor((2, 3), f), tensor((3, 4), f)),
                 {"beta": 0.5, "alpha": 2})
    yield Sample((tensor((2, 4), f), tensor((2, 3), f), tensor((3, 4), f)), {"beta": 0})
    yield Sample((tensor((3,), f), tensor((2, 3), f), tensor((3, 4), f)), desc="self bcast error")
    yield Sample((tensor((2, 4), f), tensor((2, 3), f), tensor((4, 4), f)), desc="shape error")
    yield Sample((tensor((2, 4), "float32"), tensor((2, 3), f), tensor((3, 4), f)), desc="dtype")


def matmul_samples(op):
    shapes = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
              ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
              ((1, 2, 3), (5, 3, 4)), ((4, 1, 2, 3), (5, 3, 2)), ((0, 2, 3), (3, 4)),
              ((2, 3), (4, 5)), ((3,), (4,)), ((), (3,)), ((2, 2, 3), (3, 4, 5))]
    for dt in op.dtypes:
        for sa, sb in shapes:
            yield Sample((tensor(sa, dt), tensor(sb, dt)), desc=f"{dt} {sa}@{sb}")
    yield Sample((tensor((4, 3), "float32", "transposed"), tensor((3, 4), "float32", "sliced")))
    yield Sample((tensor((2, 4, 3), "float32", "transposed"), tensor((3, 4), "float32")))


# ---------------------------------------------------------------------------------------------
# The table

OPS = []


def _add(name, samples, dtypes=ALL, inplace=None, out=None, **tol):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, **tol))


def _binary(name, inplace, out, dtypes=ALL, rhs="tensor", lhs="tensor", extra=None, **kw):
    tol = {k: kw.pop(k) for k in ("rtol", "atol") if k in kw}
    _add(name, lambda op, kw=kw: binary_samples(op, rhs, lhs, extra, **kw), dtypes, inplace, out,
         **tol)


NUMERIC = tuple(d for d in ALL if d != "bool")
for _op in ("add", "sub"):
    _binary(f"{_op}.Tensor", f"{_op}_.Tensor", f"{_op}.out")
    _binary(f"{_op}.Scalar", f"{_op}_.Scalar", f"{_op}.Scalar_out", rhs="number")
    for _alpha in (2, 0.5, True):  # float alpha on integers and bool alpha are errors
        _binary(f"{_op}.Tensor", f"{_op}_.Tensor", f"{_op}.out", ("float32", "int64", "bool"),
                extra={"alpha": _alpha})
_binary("rsub.Tensor", None, "rsub.Tensor_out")
_binary("rsub.Scalar", None, "rsub.Scalar_out", rhs="number")
_binary("mul.Tensor", "mul_.Tensor", "mul.out")
_binary("mul.Scalar", "mul_.Scalar", "mul.Scalar_out", rhs="number")
_binary("div.Tensor", "div_.Tensor", "div.out", rtol=2e-3)
_binary("div.Scalar", "div_.Scalar", "div.Scalar_out", rhs="number", rtol=2e-3)
for _mode in ("trunc", "floor", None):
    _binary("div.Tensor_mode", "div_.Tensor_mode", "div.out_mode", ALL, nonzero=True,
            extra={"rounding_mode": _mode}, rtol=2e-3)
    _binary("div.Scalar_mode", "div_.Scalar_mode", "div.Scalar_mode_out", NUMERIC, rhs="number",
            extra={"rounding_mode": _mode}, rtol=2e-3)
_binary("div.Tensor_mode", "div_.Tensor_mode", "div.out_mode", ("float32", "int64"),
        extra={"rounding_mode": "round"})
_binary("true_divide.Tensor", "true_divide_.Tensor", "true_divide.out", rtol=2e-3)
_binary("true_divide.Scalar", "true_divide_.Scalar", None, rhs="number", rtol=2e-3)
_binary("floor_divide.default", "floor_divide_.Tensor", "floor_divide.out", nonzero=True)
_binary("floor_divide.Scalar", "floor_divide_.Scalar", "floor_divide.Scalar_out", NUMERIC,
        rhs="number")
_binary("remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out", ALL, nonzero=True,
        rtol=1e-3, atol=1e-2)
_binary("remainder.Scalar", "remainder_.Scalar", "remainder.Scalar_out", NUMERIC, rhs="number",
        rtol=1e-3, atol=1e-2)
_binary("remainder.Scalar_Tensor", None, "remainder.Scalar_Tensor_out", NUMERIC, lhs="number",
        nonzero=True, rtol=1e-3, atol=1e-2)
_binary("pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out", ALL, positive=True,
        high=3, rtol=2e-2)
_binary("pow.Tensor_Scalar", "pow_.Scalar", "pow.Tensor_Scalar_out", NUMERIC, rhs="number",
        positive=True, high=3, rtol=2e-2)
_binary("pow.Scalar", None, "pow.Scalar_out", NUMERIC, lhs="number", positive=True, high=3,
        rtol=2e-2)
OPS.append(OpInfo("pow.Tensor_Scalar", lambda op: iter([
    Sample((tensor((3,), "int64"), -1), desc="int ** negative int"),
    Sample((tensor((3,), "int64"), -1.5), desc="int ** negative float"),
    Sample((tensor((3,), "float32"), -2), desc="float ** negative int")]),
    ALL, "pow_.Scalar", "pow.Tensor_Scalar_out"))
OPS.append(OpInfo("pow.Tensor_Tensor", lambda op: iter([
    Sample((T(np.array([1, -1, 2, -1, 3]), "int64"), T(np.array([-1, -3, -2, 2, 0]), "int64")),
           desc="int ** negative int tensor")]), ALL, "pow_.Tensor", "pow.Tensor_Tensor_out"))
for _cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    _binary(f"{_cmp}.Tensor", f"{_cmp}_.Tensor", f"{_cmp}.Tensor_out")
    _binary(f"{_cmp}.Scalar", f"{_cmp}_.Scalar", f"{_cmp}.Scalar_out", rhs="number")
for _lg in ("logical_and", "logical_or", "logical_xor"):
    _binary(f"{_lg}.default", f"{_lg}_.default", f"{_lg}.out", numbers=False)
INTEGRAL = INTS + ("bool",)
for _bw in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _binary(f"{_bw}.Tensor", f"{_bw}_.Tensor", f"{_bw}.Tensor_out", INTEGRAL + ("float32",))
    _binary(f"{_bw}.Scalar", f"{_bw}_.Scalar", f"{_bw}.Scalar_out", INTEGRAL, rhs="number",
            int_only=True)
    _binary(f"{_bw}.Scalar_Tensor", None, f"{_bw}.Scalar_Tensor_out", INTEGRAL, lhs="number")
_binary("maximum.default", None, "maximum.out", numbers=False)
_binary("minimum.default", None, "minimum.out", numbers=False)
_binary("max.other", None, "max.out", numbers=False)
_binary("min.other", None, "min.out", numbers=False)
_add("where.self", where_samples, ("float32", "int64", "bool", "float16"), None, "where.self_out")
_add("where.ScalarSelf", lambda op: where_scalar_samples(op, "self"))
_add("where.ScalarOther", lambda op: where_scalar_samples(op, "other"))
_add("where.Scalar", lambda op: where_scalar_samples(op, "both"))

_UNARY = {  # op -> (dtypes, value kwargs, tolerances)
    "neg": (ALL, {}, {}), "abs": (ALL, {}, {}), "relu": (ALL, {}, {}),
    "exp": (ALL, {}, {"rtol": 1e-2}), "log": (ALL, {"positive": True}, {"rtol": 1e-2}),
    "sqrt": (ALL, {"positive": True}, {"rtol": 1e-2}),
    "sin": (ALL, {}, {"rtol": 1e-2, "atol": 1e-2}),
    "cos": (ALL, {}, {"rtol": 1e-2, "atol": 1e-2}), "tanh": (ALL, {}, {"rtol": 1e-2, "atol": 1e-2}),
    "sigmoid": (ALL, {}, {"rtol": 1e-2, "atol": 1e-3}),
    "reciprocal": (ALL, {"nonzero": True}, {"rtol": 1e-2}),
    "logical_not": (ALL, {}, {}), "bitwise_not": (ALL, {}, {}),
}
for _u, (_dts, _kw, _tol) in _UNARY.items():
    _add(f"{_u}.default", lambda op, kw=_kw: unary_samples(op, **kw), _dts, f"{_u}_.default",
         f"{_u}.out", **_tol)
_add("positive.default", unary_samples, ALL)

_R = ("float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16")
_add("sum.default", lambda op: reduction_samples(op, ("all",), True, False), _R, None, "sum.out",
     rtol=1e-2)
_add("sum.dim_IntList", lambda op: reduction_samples(op, ("list",), True), _R, None,
     "sum.IntList_out", rtol=1e-2)
# products of small values: a half-precision product that overflows depends on the order
# (PyTorch's CPU kernel multiplies in float16), so no product may reach 65504: at most 1.5 in
# magnitude, 1.5 ** 24 (the largest sample) is 16834
_add("prod.default", lambda op: reduction_samples(op, ("all",), True, False, low=-1.5,
                                                  high=1.5), _R, None, "prod.out", rtol=1e-2)
_add("prod.dim_int", lambda op: reduction_samples(op, ("int",), True, int_dim=True, low=-1.5,
                                                  high=1.5), _R, None, "prod.int_out", rtol=1e-2)
_add("mean.default", lambda op: reduction_samples(op, ("all",), True, False), _R, None,
     "mean.dtype_out", rtol=1e-2)
_add("mean.dim", lambda op: reduction_samples(op, ("list",), True), _R, None, "mean.out",
     rtol=1e-2)
for _m in ("amax", "amin"):
    _add(f"{_m}.default", lambda op: reduction_samples(op, ("all", "list")), _R, None, f"{_m}.out")
for _m in ("all", "any"):
    _add(f"{_m}.default", lambda op: reduction_samples(op, ("all",), keepdim=False), _R, None,
         f"{_m}.all_out")
    _add(f"{_m}.dim", lambda op: reduction_samples(op, ("int",), int_dim=True), _R, None,
         f"{_m}.out")
    _add(f"{_m}.dims", lambda op: reduction_samples(op, ("all", "list")), _R, None,
         f"{_m}.dims_out")
for _m in ("max", "min"):
    _add(f"{_m}.default", lambda op: reduction_samples(op, ("all",), keepdim=False), _R, None,
         f"{_m}.unary_out")
    _add(f"{_m}.dim", lambda op: reduction_samples(op, ("int",), int_dim=True), _R, None,
         f"{_m}.dim_{_m}")
for _m in ("argmax", "argmin"):
    _add(f"{_m}.default", optional_dim_samples, _R, None, f"{_m}.out")

_LA = ("float32", "float64", "int64", "int32")
_add("mm.default", lambda op: mm_like_samples(op, [((2, 3), (3, 4)), ((2, 3), (4, 5)),
                                                   ((3,), (3, 4)), ((2, 3), (3,)), ((0, 3), (3, 2)),
                                                   ((2, 0), (0, 3))]), _LA, None, "mm.out",
     rtol=1e-4)
_add("bmm.default", lambda op: mm_like_samples(op, [((2, 2, 3), (2, 3, 4)), ((2, 2, 3), (2, 4, 5)),
                                                    ((2, 2, 3), (3, 3, 4)), ((2, 3), (2, 3, 4)),
                                                    ((2, 2, 3), (3, 4))]), _LA, None, "bmm.out",
     rtol=1e-4)
_add("mv.default", lambda op: mm_like_samples(op, [((2, 3), (3,)), ((2, 3), (4,)), ((3,), (3,)),
                                                   ((2, 3), (3, 1))]), _LA, None, "mv.out",
     rtol=1e-4)
_add("dot.default", lambda op: mm_like_samples(op, [((3,), (3,)), ((3,), (4,)), ((2, 2), (3,)),
                                                    ((0,), (0,))]), _LA, None, "dot.out", rtol=1e-4)
_add("addmm.default", addmm_samples, _LA, "addmm_.default", "addmm.out", rtol=1e-4)
_add("matmul.default", matmul_samples, ("float32", "float64", "int64"), None, "matmul.out",
     rtol=1e-4)

# Ops declared in native_functions.yaml that other test files cover, with the reason.
_ELSEWHERE = {
    "checked against PyTorch's own OpInfo database (tests/test_op_db.py)": """
        _safe_softmax.default empty_permuted.default new_empty_strided.default
        nonzero_static.default nonzero_static.out resize_as_.default unsafe_split.Tensor
        unsafe_split_with_sizes.default unsafe_chunk.default channel_shuffle.default
        native_channel_shuffle.default""",
    "CUDA-only (the caching allocator's stream uses): tests/test_cuda.py": "record_stream.default",
    "pinned host memory (needs the accelerator's host allocator): tests/test_cuda_interop.py":
        "is_pinned.default pin_memory.default _pin_memory.default _pin_memory.out",
    "factory: values or randomness checked by tests/test_factories.py and tests/test_random.py": """
        zeros.out ones.out full.out arange.out arange.start_out linspace.out eye.out eye.m_out
        rand.out rand.generator_out randn.out randn.generator_out randint.out randint.generator_out
        randint.low_out randint.low_generator_out
        empty.memory_format empty_strided.default empty_like.default arange.default arange.start
        arange.start_step eye.default eye.m full.default full_like.default linspace.default
        ones.default ones_like.default zeros.default zeros_like.default new_empty.default
        new_full.default new_ones.default new_zeros.default scalar_tensor.default
        rand.default rand.generator rand_like.default rand_like.generator randint.default
        randint.generator randint.low randint.low_generator randn.default randn.generator
        randn_like.default randn_like.generator normal.Tensor_Tensor normal.Tensor_float
        normal.float_Tensor normal.float_float normal_.default random_.default random_.from
        random_.to uniform_.default""",
    "view: aliasing, strides and version counters checked by tests/test_views.py": """
        view.default view.dtype as_strided.default as_strided_.default alias.default
        broadcast_to.default chunk.default diagonal.default expand.default flatten.using_ints
        moveaxis.int moveaxis.intlist movedim.int movedim.intlist narrow.default narrow.Tensor
        permute.default reshape.default select.int slice.Tensor split.Tensor split.sizes
        split_with_sizes.default squeeze.default squeeze.dim squeeze.dims squeeze_.default
        squeeze_.dim squeeze_.dims swapaxes.default swapdims.default t.default t_.default
        transpose.int transpose_.default unbind.int unflatten.int unfold.default
        unsqueeze.default unsqueeze_.default detach.default""",
    "fill_diagonal_ (wrap, N-d, gradient, errors) and the in-place transposes under their numpy "
    "names: against PyTorch in tests/test_library_internals.py":
        """fill_diagonal_.default swapaxes_.default swapdims_.default""",
    "copy/conversion: checked by tests/test_conversions.py": """
        copy_.default _to_copy.default clone.default contiguous.default fill_.Scalar
        fill_.Tensor zero_.default resize_.default to.dtype to.device to.dtype_layout to.other
        _shape_as_tensor.default""",
    "scalar extraction: checked by tests/test_protocols.py": """
        _local_scalar_dense.default item.default""",
    "indexing: checked by tests/test_indexing.py": """
        index.Tensor index_put.default index_put_.default _index_put_impl_.default""",
    "fused CPU attention: values and gradients against PyTorch in tests/test_backends_sdpa.py": """
        _scaled_dot_product_flash_attention_for_cpu.default
        _scaled_dot_product_flash_attention_for_cpu_backward.default""",
    "CUDA-only flash and memory-efficient attention: against the math path in "
    "tests/test_cuda_attention.py": """
        _scaled_dot_product_efficient_attention.default
        _scaled_dot_product_efficient_attention_backward.default
        _scaled_dot_product_flash_attention.default
        _scaled_dot_product_flash_attention_backward.default""",
    "mixed-precision helpers: checked by the autocast/GradScaler tests": """
        _amp_foreach_non_finite_check_and_unscale_.default _amp_update_scale_.default""",
    "fused optimizer ops: against PyTorch's fused Adam/AdamW in tests/test_fused_adam.py": """
        _fused_adam_.default _fused_adamw_.default""",
    "PyTorch's own op database entries (values, gradients, errors): tests/test_op_db.py": """
        _chunk_cat.default _unsafe_masked_index.default
        _unsafe_masked_index_put_accumulate.default gradient.array gradient.scalararray
        gradient.scalarint gradient.scalarrayarray gradient.scalarrayint gradient.tensorarray
        gradient.tensorarrayint index_reduce.default index_reduce_.default""",
    "histograms: PyTorch's op database and tests/test_histogram.py against PyTorch": """
        _histogramdd_bin_edges.default _histogramdd_from_bin_cts.default
        _histogramdd_from_bin_tensors.default histogram.bin_ct histogram.bins_tensor
        histogramdd.TensorList_bins histogramdd.default histogramdd.int_bins""",
    "MHA/encoder fast path: values, out= and errors against PyTorch in tests/test_mha_fastpath.py":
        """_masked_softmax.default _masked_softmax.out _masked_softmax_backward.default
        _masked_softmax_backward.out _native_multi_head_attention.default
        _native_multi_head_attention.out _transform_bias_rescale_qkv.default
        _transform_bias_rescale_qkv.out _transformer_encoder_layer_fwd.default
        _transformer_encoder_layer_fwd.out""",
    "set_ onto a storage (what Triton's interpreter uses): tests/test_triton_op.py": """
        set_.source_Storage set_.source_Storage_storage_offset""",
    "set_ onto another tensor or a new storage: aliasing, versions and errors against PyTorch in "
    "tests/test_alias_sweep.py": """
        set_.default set_.source_Tensor set_.source_Tensor_storage_offset""",
    "values, gradients, out= and errors against PyTorch in tests/test_missing_ops_r3.py": """
        _batch_norm_no_update.default _batch_norm_no_update.out _batch_norm_with_update.default
        _batch_norm_with_update.out _batch_norm_with_update_functional.default
        _native_batch_norm_legit.default _native_batch_norm_legit.no_stats
        _native_batch_norm_legit.no_stats_out _native_batch_norm_legit.out
        _native_batch_norm_legit_functional.default _native_batch_norm_legit_no_training.default
        _native_batch_norm_legit_no_training.out batch_norm_backward.default
        segment_reduce.default segment_reduce.out _segment_reduce_backward.default
        _segment_reduce_backward.out fractional_max_pool2d.default fractional_max_pool2d.output
        fractional_max_pool2d_backward.default fractional_max_pool2d_backward.grad_input
        fractional_max_pool3d.default fractional_max_pool3d.output
        fractional_max_pool3d_backward.default fractional_max_pool3d_backward.grad_input
        hash_tensor.default hash_tensor.out matrix_exp_backward.default""",
    "linspace/logspace with tensor bounds: values and errors in tests/test_opdb_fixes.py": """
        linspace.Scalar_Tensor linspace.Scalar_Tensor_out linspace.Tensor_Scalar
        linspace.Tensor_Scalar_out linspace.Tensor_Tensor linspace.Tensor_Tensor_out
        logspace.Scalar_Tensor logspace.Scalar_Tensor_out logspace.Tensor_Scalar
        logspace.Tensor_Scalar_out logspace.Tensor_Tensor logspace.Tensor_Tensor_out""",
    "foreach ops: values, gradients and errors against PyTorch in tests/test_foreach.py": """
        _foreach_clamp_max_.Scalar _foreach_clamp_min_.Scalar _foreach_mul_.Tensor
        _foreach_norm.Scalar""",
    "recurrent layers: outputs, states and gradients against PyTorch in tests/test_rnn_ops.py":
        """lstm.input lstm.data gru.input gru.data rnn_tanh.input rnn_tanh.data rnn_relu.input
        rnn_relu.data lstm_cell.default gru_cell.default rnn_tanh_cell.default
        rnn_relu_cell.default _rnn_layer.default _rnn_layer_backward.default""",
    "float8 scaled matmuls: values, out=, Meta and errors against PyTorch in tests/test_float8.py":
        """_scaled_mm.default _scaled_mm.out _scaled_mm_v2.default _scaled_mm_v2.out""",
    "fake quantization: values, masks, gradients, out=, Meta and errors bit for bit against "
    "PyTorch in tests/test_fake_quant.py": """
        _fake_quantize_learnable_per_channel_affine.default
        _fake_quantize_learnable_per_channel_affine.out
        _fake_quantize_learnable_per_channel_affine_backward.default
        _fake_quantize_learnable_per_tensor_affine.default
        _fake_quantize_learnable_per_tensor_affine.out
        _fake_quantize_learnable_per_tensor_affine_backward.default
        _fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default
        _fake_quantize_per_tensor_affine_cachemask_tensor_qparams.out
        _fused_moving_avg_obs_fq_helper.default fake_quantize_per_channel_affine.default
        fake_quantize_per_channel_affine_cachemask.default
        fake_quantize_per_channel_affine_cachemask.out
        fake_quantize_per_channel_affine_cachemask_backward.default
        fake_quantize_per_tensor_affine.default fake_quantize_per_tensor_affine.tensor_qparams
        fake_quantize_per_tensor_affine_cachemask.default
        fake_quantize_per_tensor_affine_cachemask.out
        fake_quantize_per_tensor_affine_cachemask_backward.default
        fused_moving_avg_obs_fake_quant.default""",
    "grouped matmul: values, gradients, Meta shapes and errors against PyTorch in "
    "tests/test_grouped_mm.py": "_grouped_mm.default",
    "complex32 conversion: bits, gradients and the op_db chalf entry in tests/test_complex32.py":
        """chalf.default""",
    "symbolic size reads (the graph nodes of symbolic tracing): tests/test_dynamic_shapes.py":
        """sym_size.int sym_stride.int sym_numel.default""",
    "window factories: every overload, length and float dtype against torch, "
    "tests/test_api_surface.py": """
        bartlett_window.default bartlett_window.periodic blackman_window.default
        blackman_window.periodic hamming_window.default hamming_window.periodic
        hamming_window.periodic_alpha hamming_window.periodic_alpha_beta hann_window.default
        hann_window.periodic kaiser_window.beta kaiser_window.default kaiser_window.periodic""",
    "where(condition), nonzero's indices as a tuple: tests/test_api_surface.py": "where.default",
    "sparse COO constructors, conversions, metadata and sums (sparse inputs the table cannot "
    "make): values, layouts, gradients and errors against PyTorch in tests/test_sparse.py": """
        sparse_coo_tensor.size sparse_coo_tensor.indices sparse_coo_tensor.indices_size
        _sparse_coo_tensor_unsafe.default _validate_sparse_coo_tensor_args.default
        _sparse_coo_tensor_with_dims.default _sparse_coo_tensor_with_dims_and_tensors.default
        _to_dense.default to_dense.default to_dense_backward.default _to_sparse.sparse_dim
        _to_sparse.default to_sparse.sparse_dim to_sparse.default sparse_dim.default
        dense_dim.default _dimI.default _dimV.default _nnz.default coalesce.default
        _coalesce.default is_coalesced.default _coalesced_.default _indices.default
        _values.default indices.default values.default sparse_mask.default _sparse_sum.default
        _sparse_sum.dtype _sparse_sum.dim _sparse_sum.dim_dtype _sparse_sum_backward.default
        _sparse_mm.default _sparse_addmm.default embedding_sparse_backward.default
        _sparse_softmax.int _sparse_softmax.default _sparse_log_softmax.int
        _sparse_log_softmax.default _sparse_softmax_backward_data.default
        _sparse_log_softmax_backward_data.default sparse_csr_tensor.crow_col_value_size
        sparse_csr_tensor.crow_col_value _sparse_csr_tensor_unsafe.default
        _validate_sparse_csr_tensor_args.default crow_indices.default col_indices.default
        _to_sparse_csr.default to_sparse_csr.default _convert_indices_from_coo_to_csr.default
        _convert_indices_from_coo_to_csr.out _convert_indices_from_csr_to_coo.default
        _convert_indices_from_csr_to_coo.out""",
    "sparse compressed (CSC, BSR, BSC) constructors, invariant checks, accessors and "
    "conversions: against PyTorch in tests/test_sparse_compressed.py": """
        sparse_compressed_tensor.comp_plain_value sparse_compressed_tensor.comp_plain_value_size
        sparse_csc_tensor.ccol_row_value sparse_csc_tensor.ccol_row_value_size
        sparse_bsr_tensor.crow_col_value sparse_bsr_tensor.crow_col_value_size
        sparse_bsc_tensor.ccol_row_value sparse_bsc_tensor.ccol_row_value_size
        _sparse_compressed_tensor_unsafe.default _sparse_csc_tensor_unsafe.default
        _sparse_bsr_tensor_unsafe.default _sparse_bsc_tensor_unsafe.default
        _validate_sparse_compressed_tensor_args.default _validate_sparse_csc_tensor_args.default
        _validate_sparse_bsr_tensor_args.default _validate_sparse_bsc_tensor_args.default
        ccol_indices.default row_indices.default ccol_indices_copy.default
        row_indices_copy.default _to_sparse_csc.default _to_sparse_bsr.default
        _to_sparse_bsc.default to_sparse_csc.default to_sparse_bsr.default
        to_sparse_bsc.default""",
    "quantized tensors (quantized inputs the table cannot make): integers bit for bit, "
    "qparams, views, copies, printing, errors and save/load against PyTorch in "
    "tests/test_quantized.py": """
        quantize_per_tensor.default quantize_per_tensor.tensor_qparams
        quantize_per_tensor.tensors quantize_per_channel.default
        quantize_per_tensor_dynamic.default dequantize.self dequantize.tensors q_scale.default
        q_zero_point.default q_per_channel_scales.default q_per_channel_zero_points.default
        q_per_channel_axis.default int_repr.default _make_per_tensor_quantized_tensor.default
        _make_per_channel_quantized_tensor.default qscheme.default
        _empty_affine_quantized.default _empty_per_channel_affine_quantized.default
        empty_quantized.default""",
    "quantized max pooling (quantized inputs the table cannot make): integers, layouts and "
    "errors against PyTorch in tests/test_quantized_conv.py": "quantized_max_pool1d.default "
                                                              "quantized_max_pool2d.default",
}
NOT_IN_TABLE = {name: reason for reason, names in _ELSEWHERE.items() for name in names.split()}


def covered_ops():
    """Every overload name the table tests: functional, in-place and out variants."""
    names = set()
    for op in OPS:
        names.add(op.name)
        for v in (op.inplace, op.out):
            if v:
                names.add(v)
    return names


# ---------------------------------------------------------------------------------------------
# More of the table lives in tests/opinfo_<area>.py, one module per op area, each appending to
# OPS (and NOT_IN_TABLE) with the helpers above. They are loaded last, in name order.

def _load_areas():
    import importlib
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    for fname in sorted(os.listdir(here)):
        if fname.startswith("opinfo_") and fname.endswith(".py"):
            importlib.import_module(fname[:-3])


_load_areas()

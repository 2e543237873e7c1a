"""OpInfo entries of the PyTorch API-surface ops (issue 3 follow-up): the aliases (absolute,
arccos, divide, greater, concat, ...), sampled lightly since their base ops are covered in full
elsewhere, and the ops added with them. Loaded by tests/opinfo.py."""
import numpy as np

from opinfo import (DT, NOT_IN_TABLE, OPS, OpInfo, Sample, T, binary_samples, tensor,  # noqa: F401
                    unary_samples, values)
from opinfo_shape import cat_samples

_FEW = ("float32", "float64", "int64", "bool")


def _add(name, samples, dtypes=_FEW, inplace=None, out=None, **kw):
    OPS.append(OpInfo(name, samples, dtypes, inplace, out, **kw))


# -- aliases -------------------------------------------------------------------------------------

_UNARY_ALIASES = {  # alias -> value kwargs that keep the base op in its domain
    "absolute": {}, "negative": {}, "fix": {}, "arctan": {}, "arcsinh": {},
    "arccos": {"low": -1, "high": 1}, "arcsin": {"low": -1, "high": 1},
    "arctanh": {"low": -1, "high": 1}, "arccosh": {"positive": True},
}
for _a, _kw in _UNARY_ALIASES.items():
    _add(f"{_a}.default", lambda op, kw=_kw: unary_samples(op, **kw), _FEW, f"{_a}_.default",
         f"{_a}.out", rtol=1e-4, atol=1e-5)


def _binary(name, inplace, out, rhs="tensor", extra=None, **kw):
    _add(name, lambda op: binary_samples(op, rhs, "tensor", extra, **kw), _FEW, inplace, out,
         rtol=1e-4, atol=1e-5)


_binary("arctan2.default", "arctan2_.default", "arctan2.out", numbers=False)
_binary("divide.Tensor", "divide_.Tensor", "divide.out")
_binary("divide.Scalar", "divide_.Scalar", None, rhs="number")
for _mode in ("trunc", "floor", None):
    _binary("divide.Tensor_mode", "divide_.Tensor_mode", "divide.out_mode", nonzero=True,
            extra={"rounding_mode": _mode})
    _binary("divide.Scalar_mode", "divide_.Scalar_mode", None, rhs="number", nonzero=True,
            extra={"rounding_mode": _mode})
for _a in ("multiply", "subtract"):
    _binary(f"{_a}.Tensor", f"{_a}_.Tensor", f"{_a}.out")
    _binary(f"{_a}.Scalar", f"{_a}_.Scalar", None, rhs="number")
_binary("subtract.Tensor", "subtract_.Tensor", "subtract.out", extra={"alpha": 2})
for _a in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
    _binary(f"{_a}.Tensor", f"{_a}_.Tensor", f"{_a}.Tensor_out")
    _binary(f"{_a}.Scalar", f"{_a}_.Scalar", f"{_a}.Scalar_out", rhs="number")
for _a in ("concat", "concatenate"):
    _add(f"{_a}.default", cat_samples, _FEW, None, f"{_a}.out")


# -- predicates, broadcasting, atleast / stack / split -------------------------------------------

NOT_IN_TABLE.update({
    name: "returns a Python bool/int/dtype: checked by tests/test_api_surface.py"
    for name in ("numel.default", "is_floating_point.default", "is_complex.default",
                 "is_signed.default", "is_inference.default", "is_nonzero.default",
                 "is_same_size.default", "result_type.Tensor", "result_type.Scalar",
                 "result_type.Scalar_Tensor", "result_type.Scalar_Scalar")})

_LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def broadcast_tensors_samples(op):
    for dt in op.dtypes:
        yield Sample(([tensor((2, 1), dt), tensor((3,), dt, "sliced"), tensor((), dt)],), desc=dt)
    yield Sample(([tensor((3, 4), "float32", "transposed"), tensor((4,), "int64")],), desc="mixed")
    yield Sample(([tensor((0, 3), "float32"), tensor((1, 3), "float32")],), desc="empty")
    yield Sample(([tensor((2, 3), "float32"), tensor((4,), "float32")],), desc="error")


_add("broadcast_tensors.default", broadcast_tensors_samples)


def atleast_samples(op):
    for dt in op.dtypes:
        for shape in [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4), (0,)]:
            yield Sample((tensor(shape, dt),), desc=f"{dt} {shape}")
        yield Sample((tensor((3, 4), dt, "transposed"),), desc=f"{dt} transposed")


def atleast_seq_samples(op):
    yield Sample(([tensor((), "float32"), tensor((3,), "int64"), tensor((2, 3), "bool")],))
    yield Sample(([],), desc="empty list")


for _n in (1, 2, 3):
    _add(f"atleast_{_n}d.default", atleast_samples)
    _add(f"atleast_{_n}d.Sequence", atleast_seq_samples)


def column_stack_samples(op):
    for dt in op.dtypes:
        yield Sample(([tensor((3,), dt), tensor((3, 2), dt, "transposed"), tensor((3,), dt)],),
                     desc=dt)
        yield Sample(([tensor((), dt), tensor((1,), dt)],), desc=f"{dt} 0-dim")
    yield Sample(([tensor((3,), "float32"), tensor((3,), "int64")],), desc="promotion")
    yield Sample(([tensor((3,), "float32"), tensor((4,), "float32")],), desc="size error")
    yield Sample(([],), desc="empty list error")


def row_stack_samples(op):
    for dt in op.dtypes:
        yield Sample(([tensor((3,), dt), tensor((2, 3), dt, "sliced")],), desc=dt)
    yield Sample(([tensor((3,), "float32"), tensor((4,), "float32")],), desc="size error")


_add("column_stack.default", column_stack_samples, _FEW, None, "column_stack.out")
_add("row_stack.default", row_stack_samples, _FEW, None, "row_stack.out")


def split_samples(op):
    name = op.name.split(".")[0]
    min_dims = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[name]
    array = op.name.endswith("array")
    for dt in op.dtypes:
        for shape in [(4,), (4, 6), (4, 6, 2), (2, 4, 6, 8)][min_dims - 1:]:
            for lay in _LAYOUTS:
                arg = [1, 3] if array else 2
                yield Sample((tensor(shape, dt, lay), arg), desc=f"{dt} {shape} {lay}")
    if array:
        yield Sample((tensor((4, 6, 2), "float32"), [5, 1, 10]), desc="unordered indices")
    else:
        yield Sample((tensor((4, 6, 2), "float32"), 5), desc="not divisible error")
        yield Sample((tensor((4, 6, 2), "float32"), 0), desc="zero sections error")
    yield Sample((tensor((4,) * (min_dims - 1), "float32"), [1] if array else 1),
                 desc="too few dims error")


for _s in ("hsplit", "vsplit", "dsplit"):
    _add(f"{_s}.int", split_samples, ("float32", "int64"))
    _add(f"{_s}.array", split_samples, ("float32", "int64"))
_add("ravel.default", atleast_samples)


# -- diff, trapezoid, cov, corrcoef, vander ------------------------------------------------------

def diff_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 5), dt, lay),), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 5), dt), 2, 0), desc=f"{dt} n=2 dim=0")
        yield Sample((tensor((3, 5), dt), 7), desc=f"{dt} n past the length")
        yield Sample((tensor((3, 5), dt), 0), desc=f"{dt} n=0")
        yield Sample((tensor((3, 5), dt), 1, -1, tensor((3, 2), dt), tensor((3, 1), dt)),
                     desc=f"{dt} prepend/append")
    yield Sample((tensor((5,), "int64"), 1, 0, tensor((2,), "float32")), desc="promotion")
    yield Sample((tensor((), "float32"),), desc="0-dim error")
    yield Sample((tensor((5,), "float32"), -1), desc="negative n error")
    yield Sample((tensor((3, 5), "float32"), 1, -1, tensor((2, 2), "float32")),
                 desc="prepend shape error")
    yield Sample((tensor((3, 5), "float32"), 1, -1, tensor((2,), "float32")),
                 desc="prepend dim error")
    yield Sample((tensor((3, 5), "float32"), 1, 2), desc="dim error")


_add("diff.default", diff_samples, _FEW, None, "diff.out")

_NUM = ("float32", "float64", "int64")


def trapezoid_x_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 5), dt, lay), tensor((5,), dt)), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 5), dt), tensor((3, 5), dt, "transposed")), {"dim": 0},
                     desc=f"{dt} x full dim 0")
        yield Sample((tensor((3, 5), dt), tensor((1, 5), dt)), desc=f"{dt} x broadcast")
        yield Sample((tensor((3, 0), dt), tensor((0,), dt)), desc=f"{dt} empty")
    yield Sample((tensor((3, 5), "float32"), tensor((4,), "float32")), desc="x size error")
    yield Sample((tensor((3, 5), "bool"), tensor((5,), "float32")), desc="bool error")


def trapezoid_dx_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 5), dt, lay),), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 5), dt),), {"dx": 0.5, "dim": 0}, desc=f"{dt} dx dim 0")
        yield Sample((tensor((3, 5), dt),), {"dx": 2}, desc=f"{dt} int dx")
        yield Sample((tensor((0, 5), dt),), {"dim": 0}, desc=f"{dt} empty")
    yield Sample((tensor((3, 5), "bool"),), desc="bool error")
    yield Sample((tensor((3, 5), "float32"),), {"dim": 3}, desc="dim error")


for _t in ("trapezoid", "trapz", "cumulative_trapezoid"):
    _add(f"{_t}.x", trapezoid_x_samples, _NUM)
    _add(f"{_t}.dx", trapezoid_dx_samples, _NUM)


def cov_samples(op):
    for dt in ("float32", "float64", "int64"):
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 5), dt, lay),), desc=f"{dt} {lay}")
        yield Sample((tensor((5,), dt),), desc=f"{dt} 1-d")
        yield Sample((tensor((), dt),), desc=f"{dt} 0-dim")
    if op.name.startswith("corrcoef"):
        yield Sample((tensor((2, 3, 4), "float32"),), desc="3-d error")
        return
    # fweights/aweights samples live in tests/test_api_surface.py (the Meta test moves only
    # positional tensors to Meta)
    yield Sample((tensor((3, 5), "float64"),), {"correction": 0}, desc="correction 0")
    yield Sample((tensor((3, 5), "bool"),), desc="bool error")
    yield Sample((tensor((2, 3, 4), "float32"),), desc="3-d error")


# the weight and degrees-of-freedom checks read data: no Meta result, as in PyTorch
_add("cov.default", cov_samples, rtol=1e-4, atol=1e-5, meta_tags=("dynamic_output_shape",))
_add("corrcoef.default", cov_samples, rtol=1e-4, atol=1e-5,
     meta_tags=("dynamic_output_shape",))


# vander and as_strided_scatter: integer samples only here, because tests/test_ops_grad.py
# differentiates every float sample against PyTorch, whose backward of these two is broken
# (vander: a version-counter error; as_strided_scatter: a wrong gradient for self). Their float
# values are compared in tests/test_api_surface.py, their gradients checked in
# tests/test_grad_api.py. detach_copy likewise: PyTorch marks its output as requiring grad but
# has no derivative for it.
def vander_samples(op):
    for dt in ("int64", "int32", "uint8", "bool"):
        x = tensor((4,), dt, low=-3, high=3)
        yield Sample((x,), desc=dt)
        yield Sample((x, 3, True), desc=f"{dt} N=3 increasing")
    yield Sample((tensor((4,), "int64", "sliced"), 0), desc="N=0")
    yield Sample((tensor((4,), "int64"), 1), desc="N=1")
    yield Sample((tensor((0,), "int64"),), desc="empty")
    yield Sample((tensor((2, 2), "int64"),), desc="2-d error")
    yield Sample((tensor((4,), "int64"), -1), desc="negative N error")


_add("vander.default", vander_samples, rtol=1e-4)


# -- distances, kl_div, dist ---------------------------------------------------------------------

_F = ("float32", "float64")


def cdist_samples(op):
    for dt in op.dtypes:
        for p in (2.0, 1.0, 0.5, float("inf")):
            yield Sample((tensor((4, 3), dt), tensor((5, 3), dt, "transposed"), p),
                         desc=f"{dt} p={p}")
        yield Sample((tensor((2, 4, 3), dt), tensor((2, 5, 3), dt), 2.0, 2), desc=f"{dt} batched")
    yield Sample((tensor((4, 3), "float32"), tensor((5, 2), "float32")), desc="columns error")
    yield Sample((tensor((3,), "float32"), tensor((5, 3), "float32")), desc="1-d error")


def pdist_samples(op):
    for dt in op.dtypes:
        for p in (2.0, 1.0, 3.0):
            yield Sample((tensor((4, 3), dt, "sliced"), p), desc=f"{dt} p={p}")
    yield Sample((tensor((4,), "float32"),), desc="1-d error")


def _shared_rows(x1, x2, n=2):
    """x2 with x1's first ``n`` rows in front: zero distances, whose gradient is the special
    case of the backward ops."""
    return T(np.concatenate([x1.values[..., :n, :], x2.values], -2), x2.dtype)


def euclidean_dist_samples(op):
    # (no shared rows: at a zero distance the product path's squared distance is rounding
    # noise, clamped and divided by, and PyTorch's gradient there is that noise too; cdist's
    # direct path gives those pairs the zero gradient, tested in its samples)
    for dt in op.dtypes:
        yield Sample((tensor((4, 3), dt), tensor((3, 3), dt)), desc=f"{dt}")
        yield Sample((tensor((2, 4, 3), dt, "transposed"), tensor((2, 5, 3), dt)),
                     desc=f"{dt} batched")
    yield Sample((tensor((4, 3), "float32"), tensor((5, 2), "float32")), desc="columns error")
    yield Sample((tensor((4, 3), "float32"), tensor((5, 3), "float64")), desc="dtype error")


def cdist_forward_samples(op):
    for dt in op.dtypes:
        x1 = tensor((4, 3), dt)
        for p in (2.0, 1.0, 0.5, 3.0, float("inf"), 0.0):
            yield Sample((x1, _shared_rows(x1, tensor((3, 3), dt)), p, None), desc=f"{dt} p={p}")
        for mode in (1, 2):
            yield Sample((tensor((2, 4, 3), dt), tensor((1, 5, 3), dt, "transposed"), 2.0, mode),
                         desc=f"{dt} broadcast batch, mode {mode}")
        yield Sample((tensor((0, 3), dt), tensor((5, 3), dt), 2.0, None), desc=f"{dt} no rows")
        yield Sample((tensor((4, 0), dt), tensor((5, 0), dt), 1.0, None), desc=f"{dt} no columns")
    f = tensor((4, 3), "float32")
    yield Sample((f, f, 2.0, 5), desc="mode error")
    yield Sample((f, f, -1.0, None), desc="negative p error")
    yield Sample((tensor((4, 3), "int64"), tensor((4, 3), "int64"), 2.0, None), desc="int error")
    yield Sample((f, tensor((4, 3), "float64"), 1.0, None), desc="dtype error")
    yield Sample((tensor((3,), "float32"), f, 2.0, None), desc="1-d error")
    yield Sample((f, tensor((5, 2), "float32"), 2.0, None), desc="columns error")


def _norms(diff, p):
    """The p-norms of ``diff`` over its last dim (the distances the backward ops are given)."""
    diff = np.abs(diff)
    if p == 0:
        return (diff != 0).sum(-1).astype(float)
    if p == float("inf"):
        return diff.max(-1)
    return (diff ** p).sum(-1) ** (1 / p)


def cdist_backward_samples(op):
    for dt in op.dtypes:
        x1 = tensor((2, 4, 3), dt)
        x2 = _shared_rows(T(x1.values[0], dt), tensor((3, 3), dt))
        for p in (2.0, 1.0, 0.5, 1.5, 3.0, float("inf"), 0.0):
            d = T(_norms(x1.values[..., :, None, :] - x2.values[None, :, :], p), dt)
            yield Sample((tensor((2, 4, 5), dt, "transposed"), x1, x2, p, d), desc=f"{dt} p={p}")


def pdist_forward_samples(op):
    for dt in op.dtypes:
        x = tensor((3, 3), dt)
        x = T(np.concatenate([x.values, x.values[:2]]), dt)
        for p in (2.0, 1.0, 0.5, 3.0, float("inf"), 0.0):
            yield Sample((x, p), desc=f"{dt} p={p}")
        yield Sample((tensor((1, 3), dt),), desc=f"{dt} one row")
        yield Sample((tensor((3, 0), dt),), desc=f"{dt} no columns")
    yield Sample((tensor((4, 3), "float32", "sliced"),), desc="non-contiguous error")
    yield Sample((tensor((4, 3), "int64"),), desc="int error")


def pdist_backward_samples(op):
    for dt in op.dtypes:
        x = tensor((3, 3), dt)
        x = T(np.concatenate([x.values, x.values[:2]]), dt)
        i, j = np.triu_indices(5, 1)
        for p in (2.0, 1.0, 0.5, 3.0, float("inf"), 0.0):
            d = T(_norms(x.values[i] - x.values[j], p), dt)
            yield Sample((tensor((10,), dt), x, p, d), desc=f"{dt} p={p}")
    yield Sample((tensor((10,), "float32"), tensor((5, 3), "float32", "sliced"), 2.0,
                  tensor((10,), "float32", positive=True)), desc="non-contiguous error")


def similarity_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((4, 3), dt), tensor((4, 3), dt, "transposed")), desc=dt)
        yield Sample((tensor((4, 3), dt), tensor((3,), dt)), desc=f"{dt} broadcast")
    if op.name.startswith("cosine"):
        yield Sample((tensor((4, 3), "float64"), tensor((4, 3), "float64"), 0, 1e-3), desc="dim 0")
    else:
        yield Sample((tensor((4, 3), "float64"), tensor((4, 3), "float64"), 1.0, 1e-3, True),
                     desc="p=1 keepdim")


def kl_div_samples(op):
    for dt in op.dtypes:
        inp = tensor((3, 4), dt, low=-3, high=0)
        tgt = tensor((3, 4), dt, "transposed", positive=True, high=1)
        for red in (0, 1, 2):
            yield Sample((inp, tgt, red), desc=f"{dt} reduction={red}")
            yield Sample((inp, inp, red), {"log_target": True}, desc=f"{dt} log target")
    yield Sample((tensor((3, 4), "float32"), tensor((4,), "float32", positive=True)),
                 desc="broadcast")


def dist_samples(op):
    for dt in op.dtypes:
        for p in (2, 1, 0, 3.5, float("inf")):
            yield Sample((tensor((3, 4), dt), tensor((4,), dt, "sliced"), p), desc=f"{dt} p={p}")
    yield Sample((tensor((3, 4), "int64"), tensor((3, 4), "int64")), desc="int error")
    yield Sample((tensor((3, 4), "float32"), tensor((5,), "float32")), desc="broadcast error")


_add("cdist.default", cdist_samples, _F, rtol=1e-4, atol=1e-4)
_add("pdist.default", pdist_samples, _F, rtol=1e-4, atol=1e-5)
_add("_euclidean_dist.default", euclidean_dist_samples, _F, None, "_euclidean_dist.out",
     rtol=1e-4, atol=1e-4)
_add("_cdist_forward.default", cdist_forward_samples, _F, None, "_cdist_forward.out", rtol=1e-4,
     atol=1e-5)
_add("_cdist_backward.default", cdist_backward_samples, _F, None, "_cdist_backward.out",
     rtol=1e-4, atol=1e-5)
_add("_pdist_forward.default", pdist_forward_samples, _F, None, "_pdist_forward.out", rtol=1e-4,
     atol=1e-5)
_add("_pdist_backward.default", pdist_backward_samples, _F, None, "_pdist_backward.out",
     rtol=1e-4, atol=1e-5)
_add("cosine_similarity.default", similarity_samples, _F, rtol=1e-4, atol=1e-5)
_add("pairwise_distance.default", similarity_samples, _F, rtol=1e-4, atol=1e-5)
_add("kl_div.default", kl_div_samples, _F, rtol=1e-4, atol=1e-5)
_add("dist.default", dist_samples, _F, None, "dist.out", rtol=1e-4, atol=1e-5)


# -- pointwise decompositions: isreal, deg2rad, rad2deg, ldexp, renorm ---------------------------

_add("isreal.default", unary_samples, ("float32", "int64", "bool", "float16"))
for _u in ("deg2rad", "rad2deg"):
    _add(f"{_u}.default", unary_samples, ("float32", "float64", "int64", "bool", "bfloat16"),
         f"{_u}_.default", f"{_u}.out", rtol=1e-4)
_add("ldexp.Tensor", lambda op: binary_samples(op, numbers=False, high=4),
     ("float32", "float64", "int64"), "ldexp_.default", "ldexp.out", rtol=1e-4)


def renorm_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 4), dt, lay), 2, 0, 5), desc=f"{dt} {lay}")
        yield Sample((tensor((2, 3, 4), dt), 1, -1, 4.5), desc=f"{dt} p=1 dim=-1")
        yield Sample((tensor((2, 3, 4), dt), float("inf"), 1, 2), desc=f"{dt} p=inf")
    yield Sample((tensor((4,), "float32"), 2, 0, 1), desc="1-d error")
    yield Sample((tensor((3, 4), "float32"), 0, 0, 1), desc="p=0 error")
    yield Sample((tensor((3, 4), "float32"), 2, 0, -1), desc="negative maxnorm error")
    yield Sample((tensor((3, 4), "float32"), 2, 2, 1), desc="dim error")


_add("renorm.default", renorm_samples, _F, "renorm_.default", "renorm.out", rtol=1e-4,
     atol=1e-5)


# -- scatter into a view, and the view copies -----------------------------------------------------

def select_scatter_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 4), dt, lay), tensor((4,), dt), 0, 1), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 4), dt), tensor((3,), dt), -1, -1), desc=f"{dt} dim -1")
    yield Sample((tensor((3, 4), "float32"), tensor((3,), "float32"), 0, 1), desc="shape error")
    yield Sample((tensor((3, 4), "float32"), tensor((4,), "float32"), 0, 5),
                 desc="index out of range error")


def slice_scatter_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((4, 6), dt, lay), tensor((4, 2), dt), 1, 1, 5, 2),
                         desc=f"{dt} {lay}")
        yield Sample((tensor((4, 6), dt), tensor((4, 6), dt)), desc=f"{dt} whole")
        yield Sample((tensor((4, 6), dt), tensor((2, 6), dt), 0, -2), desc=f"{dt} negative start")
    yield Sample((tensor((4, 6), "float32"), tensor((4, 3), "float32"), 1, 1, 5, 2),
                 desc="shape error")


def diagonal_scatter_samples(op):
    for dt in op.dtypes:
        for lay in _LAYOUTS:
            yield Sample((tensor((3, 4), dt, lay), tensor((3,), dt)), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 4), dt), tensor((3,), dt), 1), desc=f"{dt} offset 1")
        yield Sample((tensor((2, 3, 4), dt), tensor((3, 2), dt), -1, 2, 0), desc=f"{dt} dims")
    yield Sample((tensor((3, 4), "float32"), tensor((4,), "float32")), desc="shape error")


def as_strided_scatter_samples(op):
    for dt in op.dtypes:
        yield Sample((tensor((3, 4), dt), tensor((2, 2), dt), [2, 2], [4, 1], 1), desc=dt)
        yield Sample((tensor((3, 4), dt), tensor((3,), dt), [3], [5]), desc=f"{dt} diagonal")
    yield Sample((tensor((3, 4), "int64"), tensor((2, 3), "int64"), [2, 2], [4, 1]),
                 desc="shape error")


_add("select_scatter.default", select_scatter_samples, _FEW, None, "select_scatter.out")
_add("slice_scatter.default", slice_scatter_samples, _FEW, None, "slice_scatter.out")
_add("diagonal_scatter.default", diagonal_scatter_samples, _FEW, None, "diagonal_scatter.out")
_add("as_strided_scatter.default", as_strided_scatter_samples, ("int64", "bool"), None,
     "as_strided_scatter.out")


def view_copy_samples(args, layouts=("contiguous", "transposed", "sliced")):
    """Samples of a view-copy op: (extra args) after a (2, 3, 4) tensor in each layout."""
    def samples(op):
        for dt in op.dtypes:
            for lay in layouts:
                yield Sample((tensor((2, 3, 4), dt, lay),) + args, desc=f"{dt} {lay}")
    return samples


_VIEW_COPY_ARGS = {  # overload -> (extra args, out overload)
    "alias_copy.default": ((), "alias_copy.out"),
    "as_strided_copy.default": (([2, 2], [1, 2], 1), "as_strided_copy.out"),
    "detach_copy.default": ((), "detach_copy.out"),
    "diagonal_copy.default": ((0, 1, 2), "diagonal_copy.out"),
    "expand_copy.default": (([2, 2, 3, 4],), "expand_copy.out"),
    "narrow_copy.default": ((2, 1, 2), "narrow_copy.out"),
    "permute_copy.default": (([2, 0, 1],), "permute_copy.out"),
    "select_copy.int": ((1, -1), "select_copy.int_out"),
    "slice_copy.Tensor": ((2, 0, 4, 2), "slice_copy.Tensor_out"),
    "split_copy.Tensor": ((2, 2), None),
    "split_with_sizes_copy.default": (([1, 3], 2), None),
    "squeeze_copy.default": ((), "squeeze_copy.out"),
    "squeeze_copy.dim": ((0,), "squeeze_copy.dim_out"),
    "squeeze_copy.dims": (([0, 1],), "squeeze_copy.dims_out"),
    "transpose_copy.int": ((0, 2), "transpose_copy.int_out"),
    "unbind_copy.int": ((1,), None),
    "unfold_copy.default": ((2, 2, 1), "unfold_copy.out"),
    "unsqueeze_copy.default": ((1,), "unsqueeze_copy.out"),
    "view_copy.default": (([4, -1],), "view_copy.out"),
    "view_copy.dtype": ((), "view_copy.dtype_out"),
}
for _v, (_args, _out) in _VIEW_COPY_ARGS.items():
    # as_strided reads the storage, whose layout the test builds differently for each library
    _lays = ("contiguous",) if _v.startswith("as_strided") else \
        ("contiguous", "transposed", "sliced")
    _dts = ("int64", "bool") if _v.startswith("detach") else ("float32", "int64")
    _add(_v, view_copy_samples(_args, _lays), _dts, None, _out)
OPS[-1].samples = lambda op: iter([Sample((tensor((2, 3, 4), "float32"), DT("int32"))),
                                   Sample((tensor((2, 3, 4), "int64"), DT("float64")))])
_add("t_copy.default", lambda op: iter([Sample((tensor((3, 4), "float32", "sliced"),)),
                                        Sample((tensor((2, 3, 4), "float32"),), desc="3-d error")]),
     ("float32",), None, "t_copy.out")
_add("view_as_real_copy.default",
     lambda op: iter([Sample((T(values((2, 3), "float64") + 1j, "complex64"),))]),
     ("complex64",), None, "view_as_real_copy.out")
_add("view_as_complex_copy.default",
     lambda op: iter([Sample((tensor((3, 2), "float32"),)),
                      Sample((tensor((3, 3), "float32"),), desc="last dim error")]),
     ("float32",), None, "view_as_complex_copy.out")


# -- functionalization's functional forms (ember._functorch.functional_wrapper) ------------------

def copy_functional_samples(op):
    """copy(self, src): self's layout kept, src broadcast and converted."""
    for dt in op.dtypes:
        yield Sample((tensor((2, 3), dt, "transposed"), tensor((3,), "float64")),
                     desc=f"{dt} broadcast src")
        yield Sample((tensor((2, 3), dt), tensor((2, 3), dt, "sliced")), desc=dt)


_add("copy.default", copy_functional_samples, ("float32", "int64"))
_add("zero.default", view_copy_samples(()), ("float32", "int64", "bool"))
NOT_IN_TABLE.update({
    name: "random (the functional forms of uniform_, normal_, ...: a clone and the in-place op): "
          "seeds and graphs checked by tests/test_functionalize_runtime.py"
    for name in ("uniform.default", "normal_functional.default", "random.default",
                 "random.from", "random.to", "exponential.default", "geometric.default",
                 "cauchy.default", "log_normal.default")})

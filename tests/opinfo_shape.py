"""OpInfo entries of the shape and indexing ops (cat ... cross): every layout, 0-dim and empty
inputs, each dtype, and error samples (wrong index dtypes, out-of-range indices, bad shapes)."""
import numpy as np

from opinfo import ALL, OPS, OpInfo, Sample, T, tensor, values

_S = ("float32", "float64", "int64", "int32", "bool", "float16", "bfloat16", "uint8")
_LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def _idx(values_, dtype="int64"):
    return T(np.asarray(values_), dtype)


# errors only the data can reveal (index values, mask counts): Meta kernels cannot raise them
_DATA_ERRORS = ("out of range", "negative", "too few source")


def _add(name, samples, dtypes=_S, inplace=None, out=None, **kw):
    def marked(op):
        for s in samples(op):
            s.data_dependent = any(k in s.desc for k in _DATA_ERRORS)
            yield s
    OPS.append(OpInfo(name, marked, dtypes, inplace, out, **kw))


def _per_layout(dt, shape=(3, 4), **kw):
    for lay in _LAYOUTS:
        yield lay, tensor(shape, dt, lay, **kw)


# -- concatenation ---------------------------------------------------------------------------

def cat_samples(op):
    for dt in op.dtypes:
        yield Sample(([tensor((2, 3), dt), tensor((4, 3), dt, "transposed")],), desc=dt)
        yield Sample(([tensor((2, 3), dt), tensor((2, 1), dt, "sliced")], 1), desc=f"{dt} dim 1")
        yield Sample(([tensor((2, 3), dt), tensor((2, 3), dt, "expanded")], -1), desc=f"{dt} -1")
    yield Sample(([tensor((2, 3), "float32"), tensor((2, 3), "int64")],), desc="promotion")
    yield Sample(([tensor((2, 3), "float32"), tensor((0,), "float64")],), desc="legacy empty")
    yield Sample(([tensor((0, 3), "float32"), tensor((2, 3), "float32")],), desc="empty")
    yield Sample(([tensor((2, 3), "float32"), tensor((2, 4), "float32")],), desc="size error")
    yield Sample(([tensor((2, 3), "float32"), tensor((3,), "float32")],), desc="ndim error")
    yield Sample(([tensor((), "float32"), tensor((), "float32")],), desc="0-dim error")
    yield Sample(([tensor((2, 3), "float32")], 2), desc="dim error")


def stack_samples(op):
    for dt in op.dtypes:
        yield Sample(([tensor((2, 3), dt), tensor((2, 3), dt, "transposed")],), desc=dt)
        for d in (1, 2, -1):
            yield Sample(([tensor((2, 3), dt), tensor((2, 3), dt, "sliced")], d),
                         desc=f"{dt} dim {d}")
    yield Sample(([tensor((), "float32"), tensor((), "int32")],), desc="0-dim promotion")
    yield Sample(([tensor((2, 3), "float32"), tensor((3, 2), "float32")],), desc="size error")
    yield Sample(([tensor((2, 3), "float32")], 3), desc="dim error")


def hvd_stack_samples(op):
    for dt in op.dtypes:
        for shapes in (((3,), (2,)), ((2, 3), (2, 1)), ((), ()), ((2, 3, 1), (2, 3, 2)),
                       ((2,), (2,)), ((1, 3), (2, 3))):
            yield Sample(([tensor(shapes[0], dt), tensor(shapes[1], dt)],), desc=f"{dt} {shapes}")
    yield Sample(([tensor((2, 3), "float32"), tensor((3,), "int64")],), desc="mixed")


def tensor_split_samples(op):
    kind = op.name.split(".")[1]
    for dt in op.dtypes:
        x = tensor((7, 4), dt, "transposed")
        if kind == "sections":
            for sec, d in ((3, 0), (2, 1), (8, 0), (1, -1)):
                yield Sample((x, sec, d), desc=f"{dt} {sec}/{d}")
            yield Sample((x, 0), desc="0 sections error")
        elif kind == "indices":
            for ids, d in (([1, 4], 0), ([2], 1), ([5, 2, 9], 0), ([], 0)):
                yield Sample((x, ids, d), desc=f"{dt} {ids}")
        else:
            yield Sample((x, _idx(3)), desc=f"{dt} sections tensor")
            yield Sample((x, _idx([1, 5]), 0), desc=f"{dt} indices tensor")
    yield Sample((tensor((), "float32"), 2) if kind == "sections" else
                 (tensor((), "float32"), [1]) if kind == "indices" else
                 (tensor((4,), "float32"), _idx([1.0], "float32")), desc="error")


# -- reordering --------------------------------------------------------------------------------

def flip_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for dims in ([0], [1], [0, 1], [-1], []):
                yield Sample((x, dims), desc=f"{dt} {lay} {dims}")
        yield Sample((tensor((), dt), [0]), desc=f"{dt} 0-dim")
        yield Sample((tensor((0, 3), dt), [0]), desc=f"{dt} empty")
    yield Sample((tensor((2, 3), "float32"), [0, 0]), desc="repeated dim")
    yield Sample((tensor((2, 3), "float32"), [2]), desc="dim error")


def fliplr_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x,), desc=f"{dt} {lay}")
        yield Sample((tensor((2, 3, 2), dt),), desc=f"{dt} 3-d")
    yield Sample((tensor((3,), "float32"),), desc="1-d")
    yield Sample((tensor((), "float32"),), desc="0-d")


def roll_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for sh, dims in ((1, [0]), (-2, [1]), ([1, 2], [0, 1]), (5, []), (3, [-1])):
                yield Sample((x, sh if isinstance(sh, list) else [sh], dims),
                             desc=f"{dt} {lay} {sh} {dims}")
    yield Sample((tensor((), "float32"), [1]), desc="0-dim")
    yield Sample((tensor((0, 3), "float32"), [1], [0]), desc="empty")
    yield Sample((tensor((2, 3), "float32"), [1, 2], [0]), desc="align error")


def rot90_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for k in (1, 2, 3, 4, -1, 0):
                yield Sample((x, k), desc=f"{dt} {lay} k={k}")
        yield Sample((tensor((2, 3, 4), dt), 1, [2, 0]), desc=f"{dt} 3-d dims")
    yield Sample((tensor((3,), "float32"),), desc="1-d error")
    yield Sample((tensor((2, 3), "float32"), 1, [0, 0]), desc="same dims")
    yield Sample((tensor((2, 3), "float32"), 1, [0, 1, 2]), desc="3 dims")


def tri_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for k in (0, 1, -1, 5, -5):
                yield Sample((x, k), desc=f"{dt} {lay} {k}")
        yield Sample((tensor((2, 3, 4), dt),), desc=f"{dt} batched")
        yield Sample((tensor((0, 3), dt),), desc=f"{dt} empty")
    yield Sample((tensor((3,), "float32"),), desc="1-d error")


def repeat_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for reps in ([2, 1], [1, 3], [2, 2, 2], [0, 1]):
                yield Sample((x, reps), desc=f"{dt} {lay} {reps}")
        yield Sample((tensor((), dt), [3]), desc=f"{dt} 0-dim")
        yield Sample((tensor((), dt), []), desc=f"{dt} 0-dim no reps")
    yield Sample((tensor((2, 3), "float32"), [2]), desc="too few")


def tile_samples(op):
    for dt in op.dtypes:
        for reps in ([2], [2, 1], [1, 2, 3], []):
            yield Sample((tensor((2, 3), dt, "transposed"), reps), desc=f"{dt} {reps}")


def repeat_interleave_samples(op):
    kind = op.name.split(".")[1]
    for dt in op.dtypes:
        x = tensor((3, 2), dt, "transposed")
        if kind == "self_int":
            for r, d in ((2, None), (3, 0), (2, 1), (0, 1), (2, -1)):
                yield Sample((x, r, d), desc=f"{dt} {r} {d}")
            yield Sample((tensor((), dt), 3), desc=f"{dt} 0-dim")
        elif kind == "self_Tensor":
            yield Sample((x, _idx([1, 0, 2]), 0), desc=f"{dt} per-row")
            yield Sample((x, _idx(2), 1), desc=f"{dt} 0-dim repeats")
            yield Sample((x, _idx([2])), desc=f"{dt} flattened")
            yield Sample((x, _idx([1, 2]), 0), desc=f"{dt} size error")
    if kind == "Tensor":
        yield Sample((_idx([1, 0, 3]),), desc="indices")
        yield Sample((_idx([2, 1], "int32"),), desc="int32")
        yield Sample((_idx([1, -1]),), desc="negative error")
        yield Sample((_idx([1.0, 2.0], "float32"),), desc="dtype error")


# -- gather / scatter --------------------------------------------------------------------------

def gather_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, 0, _idx([[0, 2, 1, 0], [2, 2, 0, 1]])), desc=f"{dt} {lay} dim0")
            yield Sample((x, 1, _idx([[3, 0], [1, 1], [2, 0]])), desc=f"{dt} {lay} dim1")
            yield Sample((x, -1, _idx([[3], [1]])), desc=f"{dt} {lay} smaller index")
        yield Sample((tensor((), dt), 0, _idx(0)), desc=f"{dt} 0-dim")
    yield Sample((tensor((3, 4), "float32"), 0, _idx(np.zeros((0, 4), np.int64))), desc="empty")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([[0, 1]], "int32")), desc="int32 error")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([[0, 3]])), desc="out of range")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([[0, -1]])), desc="negative")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([0, 1])), desc="ndim error")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([[0] * 5])), desc="size error")


_SCATTER_INDEX = [[0, 2, 1, 0], [2, 2, 0, 1]]  # duplicates along dim 0 in column 0/1


def scatter_samples(op):
    kind = op.name.split(".")
    value = kind[-1] in ("value", "value_reduce")
    reduces = {"reduce": ("add", "multiply"), "value_reduce": ("add", "multiply"),
               "two": ("sum", "prod", "mean", "amax", "amin")}.get(kind[-1], (None,))
    for dt in op.dtypes:
        for red in reduces:
            for lay, x in _per_layout(dt):
                src = 2 if value else tensor((3, 5), dt, lay)
                idx = _idx([[0, 1, 2, 0], [1, 2, 0, 1]]) if red is None else _idx(_SCATTER_INDEX)
                args = (x, 0, idx, src)
                kw = {}
                if op.name.startswith("scatter_reduce"):
                    args = args + (red,)
                    for inc in (True, False):
                        yield Sample(args, {"include_self": inc}, desc=f"{dt} {lay} {red} {inc}")
                    continue
                if red is not None:
                    kw["reduce"] = red
                yield Sample(args, kw, desc=f"{dt} {lay} {red}")
            extra = {"reduce": red} if red is not None and "scatter_reduce" not in op.name else {}
            tail = (red,) if "scatter_reduce" in op.name else ()
            src = 2 if value else tensor((2, 2), dt)
            yield Sample((tensor((3, 4), dt), 1, _idx([[3, 0], [1, 3]]), src) + tail, extra,
                         desc=f"{dt} dim1 {red}")
            yield Sample((tensor((), dt), 0, _idx(0), 2 if value else tensor((), dt)) + tail,
                         extra, desc=f"{dt} 0-dim {red}")
    f = "float32"
    red = reduces[0]
    extra = {"reduce": red} if red is not None and "scatter_reduce" not in op.name else {}
    tail = (red,) if "scatter_reduce" in op.name else ()
    src = 2.0 if value else tensor((2, 4), f)
    yield Sample((tensor((3, 4), f), 0, _idx([[0, 1]], "int32"), src) + tail, extra,
                 desc="int32 index")
    yield Sample((tensor((3, 4), f), 0, _idx([[0, 3]]), src) + tail, extra, desc="out of range")
    if not value:
        yield Sample((tensor((3, 4), f), 0, _idx([[0, 1]]), tensor((2, 4), "float64")) + tail,
                     extra, desc="src dtype")
    if "scatter_reduce" in op.name:
        yield Sample((tensor((3, 4), f), 0, _idx([[0, 1]]), src, "foo"), desc="bad reduce")


def index_select_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, 0, _idx([2, 0, 2])), desc=f"{dt} {lay}")
            yield Sample((x, 1, _idx([3, 1], "int32")), desc=f"{dt} {lay} int32")
        for d in (0, 1):  # (PyTorch's contiguous dim-1 path raises RuntimeError, others IndexError)
            yield Sample((tensor((3, 4), dt), d, _idx([-1])), desc=f"{dt} dim {d} negative error")
        yield Sample((tensor((), dt), 0, _idx([0, 0])), desc=f"{dt} 0-dim")
        yield Sample((tensor((3, 4), dt), 0, _idx(1)), desc=f"{dt} 0-dim index")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([3])), desc="out of range")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([[0]])), desc="2-d index")
    yield Sample((tensor((3, 4), "float32"), 0, _idx([0.0], "float32")), desc="float index")


def index_source_samples(op):
    name = op.name.split(".")[0]
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, 0, _idx([2, 0]), tensor((2, 4), dt, lay)), desc=f"{dt} {lay}")
            yield Sample((x, 1, _idx([3, 1, 0]), tensor((3, 3), dt, "transposed")),
                         desc=f"{dt} {lay} dim1")
        if name == "index_add":
            yield Sample((tensor((3, 4), dt), 0, _idx([1, 1]), tensor((2, 4), dt)),
                         desc=f"{dt} duplicates")
            if dt not in ("bool",):
                yield Sample((tensor((3, 4), dt), 0, _idx([0, 2]), tensor((2, 4), dt)),
                             {"alpha": 2}, desc=f"{dt} alpha")
        yield Sample((tensor((), dt), 0, _idx([0]), tensor((), dt)), desc=f"{dt} 0-dim")
    f = "float32"
    yield Sample((tensor((3, 4), f), 0, _idx([0, 1]), tensor((3, 4), f)), desc="count error")
    yield Sample((tensor((3, 4), f), 0, _idx([0, 1]), tensor((2, 4), "float64")), desc="dtype")
    yield Sample((tensor((3, 4), f), 0, _idx([0, 5]), tensor((2, 4), f)), desc="out of range")
    yield Sample((tensor((3, 4), f), 0, _idx([0, 1], "int32"), tensor((2, 4), f)), desc="int32")
    yield Sample((tensor((3, 4), f), 0, _idx([0, 1]), tensor((2, 3), f)), desc="slice shape")


def index_fill_samples(op):
    tensor_value = op.name.endswith("int_Tensor")
    for dt in op.dtypes:
        v = tensor((), dt) if tensor_value else (True if dt == "bool" else 7)
        for lay, x in _per_layout(dt):
            yield Sample((x, 0, _idx([2, 0]), v), desc=f"{dt} {lay}")
            yield Sample((x, -1, _idx([-1]), v), desc=f"{dt} {lay} negative")
        yield Sample((tensor((), dt), 0, _idx(0), v), desc=f"{dt} 0-dim")
    f = "float32"
    v = tensor((), "float64") if tensor_value else 2.5
    yield Sample((tensor((3, 4), f), 0, _idx([0, 1]), v), desc="value dtype")
    yield Sample((tensor((3, 4), f), 0, _idx([0, 1], "int32"), v), desc="int32 error")
    yield Sample((tensor((3, 4), f), 0, _idx([5]), v), desc="out of range")
    if tensor_value:
        yield Sample((tensor((3, 4), f), 0, _idx([0]), tensor((2,), f)), desc="1-d value")


# -- masks ------------------------------------------------------------------------------------

def _mask(shape, layout="contiguous"):
    return T(values(shape, "bool"), "bool", layout)


def masked_fill_samples(op):
    tensor_value = op.name.endswith("Tensor")
    for dt in op.dtypes:
        vals = [tensor((), dt)] if tensor_value else [2, 0.5, True]
        for v in vals:
            for lay, x in _per_layout(dt):
                yield Sample((x, _mask((3, 4), "transposed"), v), desc=f"{dt} {lay} {v!r}")
            yield Sample((tensor((3, 4), dt), _mask((4,)), v), desc=f"{dt} broadcast mask")
            yield Sample((tensor((4,), dt), _mask((3, 4)), v), desc=f"{dt} broadcast self")
            yield Sample((tensor((), dt), _mask(()), v), desc=f"{dt} 0-dim")
    f = "float32"
    v = tensor((), "float64") if tensor_value else 1.0
    yield Sample((tensor((3, 4), f), tensor((3, 4), "uint8"), v), desc="uint8 mask")
    yield Sample((tensor((3, 4), f), _mask((3, 4)), v), desc="value dtype")
    yield Sample((tensor((3, 4), f), _mask((2, 4)), v), desc="shape error")
    if tensor_value:
        yield Sample((tensor((3, 4), f), _mask((3, 4)), tensor((1,), f)), desc="1-d value")


def masked_select_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, _mask((3, 4), "sliced")), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 4), dt), _mask((4,))), desc=f"{dt} broadcast")
        yield Sample((tensor((), dt), _mask(())), desc=f"{dt} 0-dim")
    yield Sample((tensor((3, 4), "float32"), tensor((3, 4), "float32")), desc="float mask")


def masked_scatter_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, _mask((3, 4)), tensor((4, 3), dt, lay)), desc=f"{dt} {lay}")
        yield Sample((tensor((3, 4), dt), _mask((4,)), tensor((12,), dt)), desc=f"{dt} bcast")
    f = "float32"
    yield Sample((tensor((3, 4), f), T(np.ones((3, 4), bool), "bool"), tensor((5,), f)),
                 desc="too few source elements")
    yield Sample((tensor((3, 4), f), _mask((3, 4)), tensor((12,), "float64")), desc="dtype")
    yield Sample((tensor((3, 4), f), tensor((3, 4), "float32"), tensor((12,), f)), desc="mask")


def take_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, _idx([[0, 11], [-1, 5]])), desc=f"{dt} {lay}")
        yield Sample((tensor((), dt), _idx([0, 0])), desc=f"{dt} 0-dim")
    yield Sample((tensor((3, 4), "float32"), _idx([12])), desc="out of range")
    yield Sample((tensor((3, 4), "float32"), _idx([1], "int32")), desc="int32")


def take_along_dim_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, _idx([[0, 2, 1, 0]]), 0), desc=f"{dt} {lay} broadcast")
            yield Sample((x, _idx([[3], [1], [0]]), 1), desc=f"{dt} {lay} dim1")
            if lay != "transposed":  # (the reference's "transposed" tensors are contiguous)
                yield Sample((x, _idx([11, 0, 3])), desc=f"{dt} {lay} flat")
    yield Sample((tensor((3, 4), "float32"), _idx([0]), 0), desc="ndim error")
    yield Sample((tensor((3, 4), "float32"), _idx([[0]], "int32"), 0), desc="dtype error")


def put_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x, _idx([0, 10, -1]), tensor((3,), dt)), desc=f"{dt} {lay}")  # (no index twice: which write wins is unspecified)
            if dt != "bool":
                yield Sample((x, _idx([1, 1, 2]), tensor((3,), dt), True), desc=f"{dt} accumulate")
    f = "float32"
    yield Sample((tensor((3, 4), f), _idx([0, 12]), tensor((2,), f)), desc="out of range")
    yield Sample((tensor((3, 4), f), _idx([0, 1]), tensor((3,), f)), desc="count error")
    yield Sample((tensor((3, 4), f), _idx([0, 1]), tensor((2,), "float64")), desc="dtype")


def nonzero_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt, low=-1, high=1):
            yield Sample((x,), desc=f"{dt} {lay}")
        yield Sample((tensor((), dt),), desc=f"{dt} 0-dim")
        yield Sample((tensor((0, 3), dt),), desc=f"{dt} empty")
        yield Sample((tensor((2, 3, 2), dt, low=-1, high=1),), desc=f"{dt} 3-d")


# -- grids and combinations --------------------------------------------------------------------

def meshgrid_samples(op):
    for dt in op.dtypes:
        a, b, c = tensor((3,), dt), tensor((2,), dt, "sliced"), tensor((), dt)
        for ts in ([a], [a, b], [a, b, c], [c, a]):
            if op.name == "meshgrid.indexing":
                for ix in ("ij", "xy"):
                    yield Sample((ts,), {"indexing": ix}, desc=f"{dt} {len(ts)} {ix}")
            else:
                yield Sample((ts,), desc=f"{dt} {len(ts)}")
    bad = [tensor((3,), "float32"), tensor((2,), "float64")]
    kw = {"indexing": "ij"} if op.name == "meshgrid.indexing" else {}
    yield Sample((bad,), kw, desc="dtype error")
    yield Sample(([tensor((2, 2), "float32")],), kw, desc="2-d error")
    if kw:
        yield Sample(([tensor((3,), "float32")],), {"indexing": "ab"}, desc="indexing error")


def cartesian_prod_samples(op):
    for dt in op.dtypes:
        a, b, c = tensor((3,), dt), tensor((2,), dt, "sliced"), tensor((0,), dt)
        for ts in ([a], [a, b], [a, b, a], [a, c]):
            yield Sample((ts,), desc=f"{dt} {len(ts)}")
    yield Sample(([tensor((2, 2), "float32")],), desc="2-d error")


def combinations_samples(op):
    for dt in op.dtypes:
        x = tensor((4,), dt, "sliced")
        for r in (0, 1, 2, 3, 5):
            for rep in (False, True):
                yield Sample((x, r, rep), desc=f"{dt} r={r} rep={rep}")
    yield Sample((tensor((2, 2), "float32"),), desc="2-d error")
    yield Sample((tensor((3,), "float32"), -1), desc="negative r")


# -- diagonals, trace, cross ---------------------------------------------------------------------

def diag_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for k in (0, 1, -2, 5):
                yield Sample((x, k), desc=f"{dt} {lay} {k}")
        for k in (0, 2, -1):
            yield Sample((tensor((3,), dt, "sliced"), k), desc=f"{dt} 1-d {k}")
    yield Sample((tensor((2, 2, 2), "float32"),), desc="3-d error")


def diag_embed_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            for args in ((), (1,), (-1, 0, 2), (0, 2, 0), (1, -1, -3)):
                yield Sample((x,) + args, desc=f"{dt} {lay} {args}")
        yield Sample((tensor((), dt),), desc=f"{dt} 0-dim")
    yield Sample((tensor((3,), "float32"), 0, 0, 0), desc="same dims")


def diagflat_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt, (2, 2)):
            for k in (0, 1, -1):
                yield Sample((x, k), desc=f"{dt} {lay} {k}")
        yield Sample((tensor((), dt),), desc=f"{dt} 0-dim")


def block_diag_samples(op):
    for dt in op.dtypes:
        yield Sample(([tensor((2, 3), dt, "transposed"), tensor((3,), dt), tensor((), dt),
                       tensor((1, 2), dt, "expanded")],), desc=dt)
        yield Sample(([tensor((0, 2), dt), tensor((2, 0), dt)],), desc=f"{dt} empty")
    yield Sample(([tensor((2, 2), "float32"), tensor((2,), "int64")],), desc="promotion")
    yield Sample(([tensor((2, 2, 2), "float32")],), desc="3-d error")


def trace_samples(op):
    for dt in op.dtypes:
        for lay, x in _per_layout(dt):
            yield Sample((x,), desc=f"{dt} {lay}")
        yield Sample((tensor((0, 3), dt),), desc=f"{dt} empty")
    yield Sample((tensor((3,), "float32"),), desc="1-d error")


def cross_samples(op):
    linalg = op.name.startswith("linalg")
    kw = (lambda d: {"dim": d}) if linalg else (lambda d: {} if d is None else {"dim": d})
    for dt in op.dtypes:
        yield Sample((tensor((4, 3), dt), tensor((4, 3), dt, "sliced")), kw(-1 if linalg else 1),
                     desc=dt)
        yield Sample((tensor((3, 4), dt, "transposed"), tensor((1, 4), dt)), kw(0),
                     desc=f"{dt} broadcast dim0")
        if not linalg:
            yield Sample((tensor((2, 3), dt), tensor((2, 3), dt)), desc=f"{dt} default dim")
    yield Sample((tensor((4, 2), "float32"), tensor((4, 2), "float32")), kw(1), desc="size error")
    yield Sample((tensor((4, 3), "float32"), tensor((3,), "float32")), kw(1), desc="ndim error")


# -- the table -----------------------------------------------------------------------------------

_NUM = tuple(d for d in _S if d != "bool")
_FL = ("float32", "float64", "int64")
_add("cat.default", cat_samples, _S, None, "cat.out")
_add("stack.default", stack_samples, _S, None, "stack.out")
for _n in ("hstack", "vstack", "dstack"):
    _add(f"{_n}.default", hvd_stack_samples, _FL, None, f"{_n}.out")
for _k in ("sections", "indices"):
    _add(f"tensor_split.{_k}", tensor_split_samples, _FL)
# its split points are tensor values: Meta tensors cannot provide them
_add("tensor_split.tensor_indices_or_sections", tensor_split_samples, _FL, None, None,
     meta_tags=("dynamic_output_shape",))
_add("flip.default", flip_samples, _S, None, "flip.out")
_add("fliplr.default", fliplr_samples, _FL)
_add("flipud.default", fliplr_samples, _FL)
_add("roll.default", roll_samples, _S, None, "roll.out")
_add("rot90.default", rot90_samples, _FL, None, "rot90.out")
_add("tril.default", tri_samples, _S, "tril_.default", "tril.out")
_add("triu.default", tri_samples, _S, "triu_.default", "triu.out")
_add("repeat.default", repeat_samples, _S, None, "repeat.out")
_add("tile.default", tile_samples, _FL)
_add("repeat_interleave.Tensor", repeat_interleave_samples, ("int64",), None,
     "repeat_interleave.Tensor_out")
_add("repeat_interleave.self_int", repeat_interleave_samples, _FL)
_add("repeat_interleave.self_Tensor", repeat_interleave_samples, _FL, None, None, meta_tags=("dynamic_output_shape",))
_add("gather.default", gather_samples, _S, None, "gather.out")
_add("scatter.src", scatter_samples, _S, "scatter_.src", "scatter.src_out")
_add("scatter.value", scatter_samples, _S, "scatter_.value", "scatter.value_out")
_add("scatter.reduce", scatter_samples, ("float32", "float64", "int64", "int32"),
     "scatter_.reduce", "scatter.reduce_out")
_add("scatter.value_reduce", scatter_samples, ("float32", "float64", "int64", "int32"),
     "scatter_.value_reduce", "scatter.value_reduce_out")
_add("scatter_add.default", scatter_samples, _NUM, "scatter_add_.default", "scatter_add.out")
_add("scatter_reduce.two", scatter_samples, ("float32", "float64", "int64", "int32"),
     "scatter_reduce_.two", "scatter_reduce.two_out")
_add("index_select.default", index_select_samples, _S, None, "index_select.out")
_add("index_add.default", index_source_samples, _NUM, "index_add_.default", "index_add.out")
_add("index_copy.default", index_source_samples, _S, "index_copy_.default", "index_copy.out")
_add("index_fill.int_Scalar", index_fill_samples, _S, "index_fill_.int_Scalar",
     "index_fill.int_Scalar_out")
_add("index_fill.int_Tensor", index_fill_samples, _S, "index_fill_.int_Tensor",
     "index_fill.int_Tensor_out")
_add("masked_fill.Scalar", masked_fill_samples, _S, "masked_fill_.Scalar",
     "masked_fill.Scalar_out")
_add("masked_fill.Tensor", masked_fill_samples, _S, "masked_fill_.Tensor",
     "masked_fill.Tensor_out")
_add("masked_select.default", masked_select_samples, _S, None, "masked_select.out")
_add("masked_scatter.default", masked_scatter_samples, _S, "masked_scatter_.default",
     "masked_scatter.out")
_add("take.default", take_samples, _S, None, "take.out")
_add("take_along_dim.default", take_along_dim_samples, _FL, None, "take_along_dim.out")
_add("put.default", put_samples, _S, "put_.default", "put.out")
_add("nonzero.default", nonzero_samples, _S, None, "nonzero.out")
_add("argwhere.default", nonzero_samples, _FL)
_add("nonzero_numpy.default", nonzero_samples, _FL, None, None, meta_tags=("dynamic_output_shape",))
_add("meshgrid.default", meshgrid_samples, _FL)
_add("meshgrid.indexing", meshgrid_samples, _FL)
_add("cartesian_prod.default", cartesian_prod_samples, _FL)
_add("combinations.default", combinations_samples, _FL, None, None, meta_tags=("dynamic_output_shape",))
_add("diag.default", diag_samples, _S, None, "diag.out")
_add("diag_embed.default", diag_embed_samples, _S, None, "diag_embed.out")
_add("diagflat.default", diagflat_samples, _FL)
_add("block_diag.default", block_diag_samples, _S, None, "block_diag.out")
_add("trace.default", trace_samples, _NUM, None, "trace.out")
_add("linalg_cross.default", cross_samples, ("float32", "float64", "int64"), None,
     "linalg_cross.out")
_add("cross.default", cross_samples, ("float32", "float64", "int64"), None, "cross.out")

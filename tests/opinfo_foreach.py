"""Table entries of the foreach ops. The functional ones (Tensor[] in, Tensor[] out) run through
the table; the in-place ones return nothing, which the table's value check doesn't model, so they
are checked by tests/test_foreach.py (values, dtypes, version counters, Meta, errors) instead."""
from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, tensor

NOT_IN_TABLE.update(dict.fromkeys("""
    _foreach_add_.Scalar _foreach_add_.List _foreach_mul_.Scalar _foreach_mul_.List
    _foreach_div_.ScalarList _foreach_lerp_.Scalar _foreach_addcmul_.Scalar
    _foreach_addcdiv_.ScalarList _foreach_maximum_.List""".split(),
    "in-place Tensor-list op (returns nothing): checked by tests/test_foreach.py"))

_FLOATS = ("float32", "float64", "float16", "bfloat16")


def _list(dtype, **kw):
    """Contiguous, transposed, sliced, 0-dim and empty tensors in one list."""
    return [tensor((2, 3), dtype, **kw), tensor((3, 2), dtype, "transposed", **kw),
            tensor((4,), dtype, "sliced", **kw), tensor((), dtype, **kw),
            tensor((0, 2), dtype, **kw)]


def _unary_samples(op, **kw):
    for dt in op.dtypes:
        yield Sample((_list(dt, **kw),), desc=f"{dt} mixed layouts")
    yield Sample(([tensor((2,), "float32"), tensor((3,), "float64")],), desc="mixed dtypes")


def _add_samples(op):
    for dt in op.dtypes:
        yield Sample((_list(dt), _list(dt)), dict(alpha=2), desc=f"{dt} alpha")
        yield Sample((_list(dt), _list(dt)), desc=f"{dt}")
    yield Sample(([tensor((2, 3), "float32")], [tensor((3,), "float32")]), desc="broadcast")
    yield Sample(([tensor((2,), "int64")], [tensor((2,), "float32")]), desc="promotion")
    yield Sample(([tensor((2,), "float32")], [tensor((3,), "float32")]), desc="shape (error)")
    yield Sample(([tensor((2,), "float32")], [tensor((2,), "float32")] * 2),
                 desc="length (error)")


OPS.append(OpInfo("_foreach_sqrt.default", lambda op: _unary_samples(op, positive=True),
                  dtypes=_FLOATS + ("int64",)))
OPS.append(OpInfo("_foreach_neg.default", _unary_samples, dtypes=_FLOATS + ("int64", "int8")))
OPS.append(OpInfo("_foreach_add.List", _add_samples, dtypes=_FLOATS + ("int64", "int32")))
OPS.append(OpInfo("_foreach_sub.List", _add_samples, dtypes=_FLOATS + ("int64", "int32")))

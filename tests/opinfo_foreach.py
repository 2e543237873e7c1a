"""Table entries of the foreach ops. The functional ones (Tensor[] in, Tensor[] out) run through
the table; the in-place ones return nothing, which the table's value check doesn't model, so they
are checked by tests/test_foreach.py (values, dtypes, version counters, Meta, errors) instead."""
from opinfo import NOT_IN_TABLE, OPS, OpInfo, Sample, tensor

NOT_IN_TABLE.update(dict.fromkeys("""
    _foreach_add_.Scalar _foreach_add_.List _foreach_mul_.Scalar _foreach_mul_.List
    _foreach_div_.ScalarList _foreach_lerp_.Scalar _foreach_addcmul_.Scalar
    _foreach_addcdiv_.ScalarList _foreach_maximum_.List""".split(),
    "in-place Tensor-list op (returns nothing): checked by tests/test_foreach.py"))

NOT_IN_TABLE.update(dict.fromkeys("""
    _foreach_abs.default _foreach_abs_.default _foreach_acos.default _foreach_acos_.default
    _foreach_add.Scalar _foreach_add.ScalarList _foreach_add.Tensor _foreach_add_.ScalarList
    _foreach_add_.Tensor _foreach_addcdiv.Scalar _foreach_addcdiv.ScalarList
    _foreach_addcdiv.Tensor _foreach_addcdiv_.Scalar _foreach_addcdiv_.Tensor
    _foreach_addcmul.Scalar _foreach_addcmul.ScalarList _foreach_addcmul.Tensor
    _foreach_addcmul_.ScalarList _foreach_addcmul_.Tensor _foreach_asin.default
    _foreach_asin_.default _foreach_atan.default _foreach_atan_.default _foreach_ceil.default
    _foreach_ceil_.default _foreach_clamp_max.Scalar _foreach_clamp_max.List
    _foreach_clamp_max.ScalarList _foreach_clamp_max_.List _foreach_clamp_max_.ScalarList
    _foreach_clamp_min.Scalar _foreach_clamp_min.List _foreach_clamp_min.ScalarList
    _foreach_clamp_min_.List _foreach_clamp_min_.ScalarList _foreach_clone.default
    _foreach_copy.default _foreach_copy_.default _foreach_cos.default _foreach_cos_.default
    _foreach_cosh.default _foreach_cosh_.default _foreach_div.Scalar _foreach_div.List
    _foreach_div.ScalarList _foreach_div.Tensor _foreach_div_.Scalar _foreach_div_.List
    _foreach_div_.Tensor _foreach_erf.default _foreach_erf_.default _foreach_erfc.default
    _foreach_erfc_.default _foreach_exp.default _foreach_exp_.default _foreach_expm1.default
    _foreach_expm1_.default _foreach_floor.default _foreach_floor_.default _foreach_frac.default
    _foreach_frac_.default _foreach_lerp.List _foreach_lerp.Scalar _foreach_lerp.ScalarList
    _foreach_lerp_.List _foreach_lerp_.ScalarList _foreach_lgamma.default
    _foreach_lgamma_.default _foreach_log.default _foreach_log10.default _foreach_log10_.default
    _foreach_log1p.default _foreach_log1p_.default _foreach_log2.default _foreach_log2_.default
    _foreach_log_.default _foreach_max.default _foreach_maximum.Scalar _foreach_maximum.List
    _foreach_maximum.ScalarList _foreach_maximum_.Scalar _foreach_maximum_.ScalarList
    _foreach_minimum.Scalar _foreach_minimum.List _foreach_minimum.ScalarList
    _foreach_minimum_.Scalar _foreach_minimum_.List _foreach_minimum_.ScalarList
    _foreach_mm.default _foreach_mul.Scalar _foreach_mul.List _foreach_mul.ScalarList
    _foreach_mul.Tensor _foreach_mul_.ScalarList _foreach_neg_.default _foreach_pow.List
    _foreach_pow.Scalar _foreach_pow.ScalarList _foreach_pow.ScalarAndTensor _foreach_pow_.List
    _foreach_pow_.Scalar _foreach_pow_.ScalarList _foreach_powsum.Scalar
    _foreach_reciprocal.default _foreach_reciprocal_.default _foreach_round.default
    _foreach_round_.default _foreach_rsqrt.default _foreach_rsqrt_.default
    _foreach_sigmoid.default _foreach_sigmoid_.default _foreach_sign.default
    _foreach_sign_.default _foreach_sin.default _foreach_sin_.default _foreach_sinh.default
    _foreach_sinh_.default _foreach_sqrt_.default _foreach_sub.Scalar _foreach_sub.ScalarList
    _foreach_sub_.Scalar _foreach_sub_.List _foreach_sub_.ScalarList _foreach_tan.default
    _foreach_tan_.default _foreach_tanh.default _foreach_tanh_.default _foreach_trunc.default
    _foreach_trunc_.default _foreach_zero.default _foreach_zero_.default""".split(),
    "foreach op of PyTorch's whole family: every overload checked against PyTorch by "
    "tests/test_foreach_ops.py"))

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

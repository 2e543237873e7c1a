"""CompositeImplicitAutograd reductions, written in ember ops as PyTorch decomposes them: the
``unbiased`` std/var overloads (-> ``.correction``), nanmean (nansum / count of non-NaN),
quantile/nanquantile (sort, rank, pick, interpolate: ``aten/src/ATen/native/Sorting.cpp``),
argsort and msort (-> sort). Autograd records the ops they call, so they need no formula."""
from ..._core import dtype as D
from ..._core import overlap as _overlap
from ..._ops.overload import ops

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load


# -- std / var with ``unbiased`` -> the correction overloads ------------------------------------

def std(self, unbiased=True):
    return _aten.std.correction._call(self, None, int(unbiased), False)


def std_dim(self, dim, unbiased=True, keepdim=False):
    return _aten.std.correction._call(self, dim, int(unbiased), keepdim)


def var(self, unbiased=True):
    return _aten.var.correction._call(self, None, int(unbiased), False)


def var_dim(self, dim, unbiased=True, keepdim=False):
    return _aten.var.correction._call(self, dim, int(unbiased), keepdim)


def std_mean(self, unbiased=True):
    return _aten.std_mean.correction._call(self, None, int(unbiased), False)


def std_mean_dim(self, dim, unbiased=True, keepdim=False):
    return _aten.std_mean.correction._call(self, dim, int(unbiased), keepdim)


def var_mean(self, unbiased=True):
    return _aten.var_mean.correction._call(self, None, int(unbiased), False)


def var_mean_dim(self, dim, unbiased=True, keepdim=False):
    return _aten.var_mean.correction._call(self, dim, int(unbiased), keepdim)


def nanmean(self, dim=None, keepdim=False, dtype=None):
    if self._dtype._category < D.FLOATING:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {self._dtype._short}")
    aten = _aten
    count = aten.sum.dim_IntList._call(aten.eq.Tensor._call(self, self), dim, keepdim, None)
    return aten.div.Tensor._call(aten.nansum.default._call(self, dim, keepdim, dtype), count)


# -- argsort / msort -> sort ----------------------------------------------------------------------

def argsort(self, dim=-1, descending=False):
    return _aten.sort.default._call(self, dim, descending)[1]


def argsort_stable(self, stable, dim=-1, descending=False):
    return _aten.sort.stable._call(self, stable, dim, descending)[1]


def msort(self):
    return _aten.sort.default._call(self, 0, False)[0]


# -- quantile / nanquantile ---------------------------------------------------------------------

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check_quantile(self, q, interpolation):
    """PyTorch's quantile_checks, in its order (nanquantile reports as quantile() too)."""
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if len(q._size) > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if self._dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q._dtype is not self._dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if q._device.type != "meta":  # a data check: PyTorch skips it on Meta as well
        aten = _aten
        ok = aten.logical_and.default._call(aten.ge.Scalar._call(q, 0), aten.le.Scalar._call(q, 1))
        if not aten.all.default._call(ok).item():
            raise RuntimeError("quantile() q values must be in the range [0, 1]")


def _to(t, dtype):
    return _aten._to_copy.default._call(t, dtype, None, None, None, False, None)


def _gather_last(sorted_, idx):
    """``sorted_[..., idx[..., j]]`` for each row, through advanced indexing."""
    aten = _aten
    n, k = sorted_._size[-1], idx._size[-1]
    rows = sorted_.numel() // n if n else 0
    flat = aten.reshape.default._call(sorted_, [rows, n])
    fidx = aten.reshape.default._call(idx, [rows, k])
    r = aten.arange.default._call(rows, D.int64, None, sorted_._device, None)
    r = aten.reshape.default._call(r, [rows, 1])
    picked = aten.index.Tensor._call(flat, [r, fidx])
    return aten.reshape.default._call(picked, list(idx._size))


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan):
    _check_quantile(self, q, interpolation)
    aten = _aten
    ndim = len(self._size)
    x = aten.reshape.default._call(self, [-1]) if dim is None or ndim == 0 else \
        aten.movedim.int._call(self, dim, -1)
    sorted_ = aten.sort.default._call(x, -1, False)[0]  # NaN sorts last
    n = sorted_._size[-1]
    q1 = aten.reshape.default._call(q, [-1])  # ranks are (..., Q)
    if ignore_nan:
        valid = aten.sum.dim_IntList._call(aten.eq.Tensor._call(sorted_, sorted_), [-1], True, None)
        # all-NaN slices rank 0: their first element, NaN
        last = aten.where.ScalarOther._call(aten.gt.Scalar._call(valid, 0),
                                            aten.sub.Scalar._call(valid, 1, 1), 0)
        ranks = aten.mul.Tensor._call(q1, _to(last, self._dtype))
    else:
        # a slice holding NaN has a NaN quantile: rank it at the last (NaN) element
        tail = aten.select.int._call(sorted_, -1, n - 1)
        has_nan = aten.unsqueeze.default._call(aten.ne.Tensor._call(tail, tail), -1)
        ranks = aten.where.ScalarSelf._call(has_nan, float(n - 1),
                                            aten.mul.Scalar._call(q1, n - 1))
    below = _to(ranks, D.int64)  # ranks are >= 0: truncation is floor
    frac = aten.sub.Tensor._call(ranks, below, 1)
    up = _to(aten.gt.Scalar._call(frac, 0), D.int64)
    if interpolation == "lower":
        result = _gather_last(sorted_, below)
    elif interpolation == "higher":
        result = _gather_last(sorted_, aten.add.Tensor._call(below, up, 1))
    elif interpolation == "nearest":  # round half to even, as torch.round
        odd = aten.eq.Scalar._call(aten.remainder.Scalar._call(below, 2), 1)
        half_up = aten.logical_and.default._call(aten.eq.Scalar._call(frac, 0.5), odd)
        step = aten.logical_or.default._call(aten.gt.Scalar._call(frac, 0.5), half_up)
        result = _gather_last(sorted_, aten.add.Tensor._call(below, _to(step, D.int64), 1))
    else:
        lo = _gather_last(sorted_, below)
        hi = _gather_last(sorted_, aten.add.Tensor._call(below, up, 1))
        weight = aten.mul.Scalar._call(_to(up, self._dtype), 0.5) if interpolation == "midpoint" \
            else frac
        result = aten.add.Tensor._call(lo, aten.mul.Tensor._call(
            aten.sub.Tensor._call(hi, lo, 1), weight), 1)
    # (..., Q) -> (Q, ...), with the reduced dims kept as size 1 when keepdim
    result = aten.movedim.int._call(result, -1, 0)
    if keepdim:
        if dim is None:
            result = aten.reshape.default._call(result, [result._size[0]] + [1] * ndim)
        elif ndim:
            result = aten.unsqueeze.default._call(result, (dim % ndim) + 1)
    if len(q._size) == 0:
        result = aten.squeeze.dim._call(result, 0)
    # ATen writes the quantiles into a new tensor of their (..., Q) layout moved to (Q, ...): a
    # copy in the same layout, not a view of the steps' results
    if result._is_view():
        result = aten.clone.default._call(result, None)
    return result


def _q_tensor(self, q):
    if not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    return _aten.scalar_tensor.default._call(q, self._dtype, None, self._device, None)


def quantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, False)


def quantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, _q_tensor(self, q), dim, keepdim, interpolation, False)


def nanquantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, True)


def nanquantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, _q_tensor(self, q), dim, keepdim, interpolation, True)


# -- nansum/nanmean out= forms: a floating input reduces in the out dtype, which must be floating --

def _check_nan_out(self, dtype, out):
    # the sum runs in out's dtype (ATen's infer_dtype_from_optional), which has no integral,
    # bool or complex kernel for a floating input
    if self._dtype.is_floating_point and dtype is None and not out._dtype.is_floating_point \
            and self.numel():  # an empty input runs no kernel
        raise NotImplementedError(f'"nansum_cpu" not implemented for \'{out._dtype._short}\'')


def nansum_out(self, dim=None, keepdim=False, dtype=None, out=None):
    from .. import generic
    _check_nan_out(self, dtype, out)
    generic.write_out("nansum", (_aten.nansum.default._call(self, dim, keepdim, dtype),), (out,))
    return out


def nanmean_out(self, dim=None, keepdim=False, dtype=None, out=None):
    from .. import generic
    _check_nan_out(self, dtype, out)
    generic.write_out("nanmean", (nanmean(self, dim, keepdim, dtype),), (out,))
    return out


# -- cumsum/cumprod out= and in-place: the scan runs in the destination's dtype ------------------

def _scan_into(name, self, dim, dtype, out):
    from ..._core import strides as _st
    from .. import generic
    _st.wrap_dim(dim, len(self._size))
    if dtype is not None and dtype is not out._dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {dtype._short}, but got "
                           f"{out._dtype._short} instead")
    if out._dtype is D.bool_ and self.numel() and self.dim():  # 0-dim and empty: no kernel runs
        raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
    result = getattr(_aten, name).default._call(self, dim, out._dtype)
    generic.write_out(name, (result,), (out,))
    return out


def cumsum_out(self, dim, dtype=None, out=None):
    return _scan_into("cumsum", self, dim, dtype, out)


def cumprod_out(self, dim, dtype=None, out=None):
    return _scan_into("cumprod", self, dim, dtype, out)


def cumsum_(self, dim, dtype=None):
    _overlap.assert_no_internal_overlap(self)
    return _scan_into("cumsum", self, dim, dtype, self)


def cumprod_(self, dim, dtype=None):
    _overlap.assert_no_internal_overlap(self)
    return _scan_into("cumprod", self, dim, dtype, self)

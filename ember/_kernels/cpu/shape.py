"""CPU kernels of the shape and indexing ops on NumPy: concatenation, flips and rolls, triangles,
repeat, gather/scatter (with reductions), index_select/add/copy/fill, masks, take/put, nonzero,
diag_embed, trace and cross. The checks and shape rules are the Meta kernels'
(``meta/shape.py``); what only the data can tell (index bounds, mask counts) is checked here.

Gather and scatter address elements through one coordinate tuple (``_coords``): the index
tensor along ``dim`` and broadcast ``arange``s along the other dims, so every variant is a
single NumPy fancy-indexing expression or ``ufunc.at`` call."""
import warnings

import numpy as np

from ...backends._context import alert_not_deterministic

from ..._core import complex32 as _complex32
from ..._core import dtype as D
from ..._core import strides as _st
from ..rules import shape as R
from ..rules.factory import check_fits
from ..rules.float8 import REFUSED as _REFUSED, refuse as _refuse
from ..rules.reduction import check_float8
from . import _util
from ._util import add_rows_at, nd, own, wrap


def _as(a, dtype):
    if not hasattr(a, "dtype"):  # (a device array stays one: see cpu/_util.array_module)
        a = np.asarray(a)
    if a.dtype == dtype._np:
        return a
    if dtype is D.complex32 or a.dtype == D.complex32._np:  # (NumPy cannot cast the float16 pair)
        return _complex32.cast(a, dtype._np)
    return a.astype(dtype._np)


# On a GPU (device arrays) the index checks below are device-side assertions, as PyTorch's CUDA
# kernels' "index out of bounds": looking on the host would wait for the device at every call
# and make the op uncapturable in a CUDA graph (cpu/_util.check_index_range).
_DEVICE_MESSAGE = "index out of bounds"


def _check_bounds(idx, size, dim):
    """gather/scatter indices must lie in [0, size) (no negative indices, as in PyTorch)."""
    if _util.array_module(idx) is not np:
        _util.check_index_range(idx, 0, size, RuntimeError, _DEVICE_MESSAGE)
    elif idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)].flat[0]
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _wrap_index(idx, size, msg, negative=True):
    """Indices in [-size, size) made non-negative (in [0, size) where not ``negative``); for
    others ``msg(index)`` raises."""
    low = -size if negative else 0
    xp = _util.array_module(idx)
    if xp is not np:
        _util.check_index_range(idx, low, size, IndexError, _DEVICE_MESSAGE)
    elif idx.size and (idx.min() < low or idx.max() >= size):
        bad = idx[(idx < low) | (idx >= size)].flat[0]
        msg(bad)
    return xp.where(idx < 0, idx + size, idx) if negative else idx


def _raise(exc, message):
    """A callback raising ``exc(message(bad_index))`` for the bounds checks above."""
    def fail(i):
        raise exc(message(i))
    return fail


# -- concatenation ---------------------------------------------------------------------------

def cat(tensors, dim=0):
    shape, dtype = R.cat_shape(tensors, dim)
    parts = [_as(nd(t), dtype) for t in tensors if not R._is_legacy_empty(t)]
    if not parts:
        return wrap(np.empty(shape, dtype._np))
    d = _st.wrap_dim(dim, parts[0].ndim)
    return wrap(_util.concatenate_arrays(parts, d))


def stack(tensors, dim=0):
    R.check_stack(tensors)
    d = _st.wrap_dim(dim, tensors[0].dim() + 1)
    dtype = R.result_dtype(tensors)
    return wrap(_util.stack_arrays([_as(nd(t), dtype) for t in tensors], d))


# -- reordering --------------------------------------------------------------------------------

def flip(self, dims):
    dims = R.flip_dims(self, dims)
    a = nd(self)
    return wrap(np.flip(a, tuple(dims)).copy() if dims and a.ndim else a.copy())


def roll(self, shifts, dims=()):
    shifts, dims = R.roll_args(self, shifts, dims)
    a = nd(self)
    if not dims:  # roll the flattened tensor
        return wrap(np.roll(a.reshape(-1), shifts[0]).reshape(a.shape))
    return wrap(own(np.roll(a, shifts, axis=dims)))


def tril(self, diagonal=0):
    R.check_tri("tril", self)
    return wrap(own(np.tril(nd(self), diagonal)))


def triu(self, diagonal=0):
    R.check_tri("triu", self)
    return wrap(own(np.triu(nd(self), diagonal)))


def repeat(self, repeats):
    shape = R.repeat_shape(self, repeats)
    a = nd(self)
    a = a.reshape((1,) * (len(shape) - a.ndim) + a.shape)
    return wrap(own(np.tile(a, tuple(repeats))).reshape(shape))


def repeat_interleave_Tensor(repeats, output_size=None):
    """The indices [0]*r0 + [1]*r1 + ...: what repeat_interleave(self, repeats) gathers."""
    if repeats.dim() > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if repeats._dtype not in (D.int64, D.int32):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{repeats._dtype._short}'")
    r = nd(repeats).reshape(-1)
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    out = np.repeat(np.arange(r.size, dtype=r.dtype), r)
    if output_size is not None and output_size != out.size:
        raise RuntimeError("allocated size does not match required size")
    return wrap(out)


# -- gather / scatter --------------------------------------------------------------------------

def _coords(index_shape, d, idx):
    """The fancy-index tuple addressing element [i0, .., idx[i], .., in] for every position of
    the index tensor: ``idx`` along dim d, broadcast aranges along the others (made by the
    index's array module: a device index gets device aranges, not host ones that CuPy would
    copy over, which a CUDA graph capture refuses)."""
    xp = _util.array_module(idx)
    n = len(index_shape)
    out = []
    for k in range(n):
        if k == d:
            out.append(idx)
        else:
            shape = [1] * n
            shape[k] = index_shape[k]
            out.append(xp.arange(index_shape[k]).reshape(shape))
    return tuple(out)


def _as_nd(a):
    return a.reshape(1) if a.ndim == 0 else a


def _region(a, shape):
    """The leading ``shape`` block of ``a`` (src of scatter may be larger than index)."""
    return a[tuple(slice(0, s) for s in shape)]


def gather(self, dim, index, sparse_grad=False):
    d = R.check_gather(self, dim, index)
    a, idx = _as_nd(nd(self)), nd(index)
    if idx.size == 0:
        return wrap(np.empty(idx.shape, a.dtype))
    idx = _as_nd(idx)
    _check_bounds(idx, a.shape[d], d)
    return wrap(own(a[_coords(idx.shape, d, idx)]).reshape(index._size))


def _scatter(self, dim, index, src, name, how=None, include_self=True):
    """self with src (array or scalar) written at the scattered positions, combined by ``how``
    (None: assignment; else a scatter_reduce name)."""
    d = R.check_scatter(name, self, dim, index, src if hasattr(src, "_keyset") else None)
    if name == "scatter_reduce":
        R.check_scatter_reduce_dtype(self, how)
    r = _as_nd(nd(self)).copy()
    idx = nd(index)
    if idx.size == 0:
        return wrap(r.reshape(self._size))
    idx = _as_nd(idx)
    _check_bounds(idx, r.shape[d], d)
    pos = _coords(idx.shape, d, idx)
    v = _region(_as_nd(nd(src)), idx.shape) if hasattr(src, "_keyset") else \
        _util.array_module(r).full(idx.shape, src).astype(r.dtype)
    if how is None:
        r[pos] = v
    elif self._dtype in _REDUCED_FLOAT and how in ("sum", "mean", "prod") and \
            self._device.type == "cpu":
        # ATen's CPU scatter reductions of half and bfloat16 accumulate in float and round once
        acc = r.astype(np.float32)
        _reduce_at(acc, pos, v.astype(np.float32), how, include_self, round_to=r.dtype)
        r[...] = acc
    else:
        _reduce_at(r, pos, v, how, include_self)
    return wrap(r.reshape(self._size))


def _floating(dt):
    return dt.kind == "f" or dt.name == "bfloat16"  # (ml_dtypes' bfloat16 is of kind "V")


_IDENTITY = {"sum": lambda dt: 0, "mean": lambda dt: 0, "prod": lambda dt: 1,
             "amax": lambda dt: (-np.inf if _floating(dt) else
                                 (False if dt.kind == "b" else np.iinfo(dt).min)),
             "amin": lambda dt: (np.inf if _floating(dt) else
                                 (True if dt.kind == "b" else np.iinfo(dt).max))}
_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
          "amin": np.minimum}


_REDUCED_FLOAT = (D.float16, D.bfloat16)


def _reduce_at(r, pos, v, how, include_self, round_to=None):
    """scatter_reduce in place on r: positions scattered to start from the reduction's identity
    when include_self is False; mean divides by the number of contributions (floor division
    for integers, as PyTorch) — the sum rounded to ``round_to`` first where r accumulates a
    half or bfloat16 tensor in float."""
    if not include_self:
        r[pos] = _IDENTITY[how](r.dtype)
    if r.dtype == np.bool_ and how in ("sum", "mean"):
        np.logical_or.at(r, pos, v)
    elif r.dtype == np.bool_ and how == "prod":
        np.logical_and.at(r, pos, v)
    else:
        _UFUNC[how].at(r, pos, v)
    if how == "mean":
        count = _util.array_module(r).full(r.shape, 1 if include_self else 0, np.int64)
        np.add.at(count, pos, 1)
        safe = np.maximum(count, 1)
        if r.dtype.kind in "iu":
            r[...] = np.floor_divide(r, safe)
        elif r.dtype.kind != "b":
            total = r if round_to is None else r.astype(round_to).astype(r.dtype)
            r[...] = (total / safe).astype(r.dtype)


def scatter_src(self, dim, index, src):
    return _scatter(self, dim, index, src, "scatter")


def scatter_value(self, dim, index, value):
    return _scatter(self, dim, index, value, "scatter")


def scatter_reduce(self, dim, index, src, reduce):  # noqa: A002  (schema name)
    R.check_scatter_reduce(reduce, False)
    warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be "
                  "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
                  "reduction options.", UserWarning, stacklevel=2)
    return _scatter(self, dim, index, src, "scatter", R.SCATTER_REDUCES[reduce])


def scatter_value_reduce(self, dim, index, value, reduce):  # noqa: A002
    R.check_scatter_reduce(reduce, False)
    return _scatter(self, dim, index, value, "scatter", R.SCATTER_REDUCES[reduce])


def scatter_add(self, dim, index, src):
    return _scatter(self, dim, index, src, "scatter_add", "sum")


def scatter_reduce_two(self, dim, index, src, reduce, include_self=True):  # noqa: A002
    R.check_scatter_reduce(reduce, True)
    return _scatter(self, dim, index, src, "scatter_reduce", reduce, include_self)


# -- index_* ops -------------------------------------------------------------------------------

def _index_along(self, d, index, msg, negative=True):
    """index as a flat array of non-negative positions along dim d; negative positions count
    from the end only where the op allows them (index_fill); others raise ``msg``'s error."""
    size = self._size[d] if self.dim() else 1
    return _wrap_index(nd(index).reshape(-1), size, msg, negative)


def index_select(self, dim, index):
    if self._dtype in _REFUSED or index._dtype in _REFUSED:  # (rules/float8.py's IN_KERNEL)
        _refuse("index_select", (self, dim, index))
    d, shape = R.check_index_select(self, dim, index)
    size = self._size[d] if self.dim() else 1
    if d == 1 and _st.is_contiguous(self._size, self._stride):
        # PyTorch's contiguous dim-1 fast path reports a bad index differently
        fail = _raise(RuntimeError, lambda i: f"INDICES element is out of DATA bounds, id={i} "
                                              f"axis_dim={size}")
    else:
        fail = _raise(IndexError, lambda i: "index out of range in self")
    idx = _index_along(self, d, index, fail, negative=False)
    return wrap(own(np.take(_as_nd(nd(self)), idx, axis=d)).reshape(shape))


def _index_write(name, self, dim, index, source, how):
    d = R.check_index_source(name, self, dim, index, source)
    r = _as_nd(nd(self)).copy()
    # index_copy_ names itself and raises IndexError; index_add_ raises RuntimeError, except on a
    # 0-d or 1-d self, where its scalar loop reports "index out of range in self"
    if name == "index_add_" and self.dim() <= 1:
        fail = _raise(IndexError, lambda i: "index out of range in self")
    else:
        exc, prefix = (IndexError, f"{name}(): ") if name == "index_copy_" else (RuntimeError, "")
        fail = _raise(exc, lambda i: f"{prefix}index {i} is out of bounds for dimension {d} "
                                     f"with size {r.shape[d]}")
    idx = _index_along(self, d, index, fail, negative=False)
    pos = (slice(None),) * d + (idx,)
    src = nd(source).reshape(r.shape[:d] + (idx.size,) + r.shape[d + 1:])
    how(r, pos, src)
    return wrap(r.reshape(self._size))


def index_add(self, dim, index, source, alpha=1):
    # ATen's CPU index_add_ hands alpha 1 with an int64 index along the first or last dim to
    # scatter_add, which accumulates half and bfloat16 in float and rounds once; its other
    # paths add one index's slice at a time, rounding at every add
    opmath = self._dtype in _REDUCED_FLOAT and alpha == 1 and index._dtype is D.int64 and \
        self.dim() > 1 and (dim % self.dim() in (0, self.dim() - 1)) and \
        self._device.type == "cpu"

    def add(r, pos, src):
        if r.dtype == np.bool_:
            np.logical_or.at(r, pos, src)
        elif self._dtype is D.complex32:  # in complex64, rounded back once
            acc = _complex32.to_complex64(r)
            np.add.at(acc, pos, _complex32.to_complex64(src) * np.complex64(alpha))
            r[...] = _complex32.from_any(acc)
        else:
            acc = r.astype(np.float32) if opmath else r
            # (an integer alpha wraps in the integer type, as ATen's scalar_t cast does)
            a = np.asarray(alpha).astype(src.dtype) if src.dtype.kind in "ui" else alpha
            src = src.astype(acc.dtype, copy=False) if alpha == 1 else \
                (src * a).astype(acc.dtype)
            if len(pos) == 1 and r.ndim >= 2 and r.size and src.size:  # dim 0: whole rows
                add_rows_at(acc.reshape(r.shape[0], -1), pos[0], src.reshape(src.shape[0], -1))
            else:
                np.add.at(acc, pos, src)
            if opmath:
                r[...] = acc
    return _index_write("index_add_", self, dim, index, source, add)


def index_copy(self, dim, index, source):
    def copy(r, pos, src):
        r[pos] = src
    return _index_write("index_copy_", self, dim, index, source, copy)


def _index_fill(self, dim, index, value):
    d = R.check_index_fill(self, dim, index, value if hasattr(value, "_keyset") else None)
    if not hasattr(value, "_keyset"):
        check_fits(value, self._dtype)
    r = _as_nd(nd(self)).copy()
    idx = _index_along(self, d, index, _raise(IndexError, lambda i: f"index {i} is out of bounds "
                                                                    f"for dimension {d} with size "
                                                                    f"{r.shape[d]}"))
    r[(slice(None),) * d + (idx,)] = _as(nd(value) if hasattr(value, "_keyset") else value,
                                         self._dtype)
    return wrap(r.reshape(self._size))


def index_fill_int_Scalar(self, dim, index, value):
    return _index_fill(self, dim, index, value)


def index_fill_int_Tensor(self, dim, index, value):
    return _index_fill(self, dim, index, value)


# -- masks --------------------------------------------------------------------------------------

def _masked_fill(self, mask, value, value_t=None):
    shape = R.check_masked_fill(self, mask, value_t, None if value_t is not None else value)
    if not self._dtype.is_complex and np.iscomplexobj(value):
        value = np.real(value)  # an imaginary part of 0 (anything else failed the check)
    if self._dtype is D.complex32:
        value = _as(value, D.complex32)
    r = np.broadcast_to(nd(self), shape).copy()
    r[np.broadcast_to(nd(mask), shape)] = value
    return wrap(r)


def masked_fill_Scalar(self, mask, value):
    return _masked_fill(self, mask, value)


def masked_fill_Tensor(self, mask, value):
    if value._dtype.is_complex and not self._dtype.is_complex and value.dim() == 0:
        # the value is read as a scalar of self's type: an imaginary part cannot fit
        check_fits(complex(nd(value)), self._dtype)
    return _masked_fill(self, mask, nd(value), value)


def masked_select(self, mask):
    shape = R.check_masked_select(self, mask)
    return wrap(own(np.broadcast_to(nd(self), shape)[np.broadcast_to(nd(mask), shape)]))


def masked_scatter(self, mask, source):
    shape = R.check_masked_scatter(self, mask, source)
    r = np.broadcast_to(nd(self), shape).copy()
    m = np.broadcast_to(nd(mask), shape)
    n = int(np.count_nonzero(m))
    src = nd(source).reshape(-1)
    if src.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    r[m] = src[:n]
    return wrap(r)


def take(self, index):
    R.check_take(self, index)
    a = nd(self).reshape(-1)
    idx = _wrap_index(nd(index), a.size, _raise(IndexError, lambda i: f"out of range: tried to "
                                                                      f"access index {i} on a "
                                                                      f"tensor of {a.size} "
                                                                      f"elements."))
    return wrap(own(a[idx]))


def put(self, index, source, accumulate=False):
    R.check_put(self, index, source)
    if not accumulate:  # which duplicate index wins is unspecified (PyTorch alerts put_ too)
        alert_not_deterministic("put_")
    r = nd(self).copy()
    flat = r.reshape(-1)
    idx = _wrap_index(nd(index).reshape(-1), flat.size,
                      _raise(IndexError, lambda i: f"out of range: tried to access index {i} "
                                                   f"on a tensor of {flat.size} elements."))
    src = nd(source).reshape(-1)
    if accumulate:
        np.add.at(flat, idx, src)
    else:
        flat[idx] = src
    return wrap(r)


def nonzero(self):
    check_float8("nonzero", self)
    return wrap(np.argwhere(nd(self)).astype(np.int64))


# -- diagonals, trace, cross ---------------------------------------------------------------------

def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    shape, d1, d2 = R.diag_embed_shape(self, offset, dim1, dim2)
    a = _as_nd(nd(self))
    n = shape[d1]
    xp = _util.array_module(a)
    z = xp.zeros(a.shape[:-1] + (n, n), a.dtype)
    k = xp.arange(a.shape[-1])
    z[..., k + max(-offset, 0), k + max(offset, 0)] = a
    # the two new dims sit last in z; move them to dim1, dim2 (in increasing order)
    order = sorted([(d1, -2), (d2, -1)])
    z = np.moveaxis(z, [s for _, s in order], [d for d, _ in order])
    return wrap(_util.contiguous(z))


def trace(self):
    dtype = R.trace_dtype(self)
    a = nd(self)
    acc = np.float32 if dtype in (D.float16, D.bfloat16) else dtype._np
    return wrap(_util.array_of(np.trace(a, dtype=acc)).astype(dtype._np))


def linalg_cross(self, other, dim=-1):
    shape, d, dtype = R.cross_shape(self, other, dim)
    a = np.broadcast_to(_as(nd(self), dtype), shape)
    b = np.broadcast_to(_as(nd(other), dtype), shape)
    return wrap(own(np.cross(a, b, axis=d)).astype(dtype._np, copy=False))


def block_diag(tensors):
    mats, shape, dtype = R.block_diag_shape(tensors)
    r = _util.array_module(nd(tensors[0]) if tensors else None).zeros(shape, dtype._np)
    i = j = 0
    for t, (h, w) in zip(tensors, mats):
        r[i:i + h, j:j + w] = nd(t).reshape(h, w)
        i, j = i + h, j + w
    return wrap(r)

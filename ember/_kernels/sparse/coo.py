"""Sparse COO kernels (PyTorch's ``SparseTensor.cpp``, ``SparseTensorMath.cpp`` and
``SparseUnaryOps.cpp``), registered for SparseCPU and SparseCUDA.

A sparse tensor of ``size`` holds ``indices``, int64 (sparse_dim, nnz), and ``values``,
(nnz, *size[sparse_dim:]); its element at an index is the sum of the values listed for it, so an
index may repeat until the tensor is coalesced (sorted, unique). Every kernel here is a few ember
ops on those two dense tensors:

* linear ops (neg, multiplying or dividing by a scalar, adding two sparse tensors, transposing)
  keep the entries as they are, repeats included;
* ops that are not linear (sin, sqrt, pow ...) coalesce first, since f(a) + f(b) != f(a + b);
* a dense operand is read at the entries' indices (``dense[indices]``) and written there with
  ``index_put_(accumulate=True)``, which sums repeats as the tensor's meaning says.

The parts are plain tensors (no autograd history: autograd sees the sparse tensor), so these
kernels record nothing; a dense operand that requires grad is read through an untracked alias.
"""
import math

from ..._core import strides as _st
from ..._core.device import sparse_coo
from ..._core.promotion import promote_types
from ..._core.tensor_impl import _alias, _untracked, sparse_coo_tensor_impl
from ..._dispatch.keys import SPARSE_BITS
from ..._ops.overload import ops
from ..registration import register
from . import kernel_table
from ..rules import sparse as _R

_aten = ops.aten

# "op.overload" -> kernel, registered for both keys of the layout at the end of this module
_KERNELS, _kernel = kernel_table()


def _is_sparse(t):
    return hasattr(t, "_keyset") and bool(t._keyset & SPARSE_BITS)


def _parts(t):
    s = t._sparse
    return s.indices, s.values


def _new(indices, values, size, coalesced=False):
    return sparse_coo_tensor_impl(indices, values, size, coalesced)


def _shared(t):
    """A tensor sharing ``t``'s memory and version counter, not a view in autograd's sense
    (``_values()``, ``_indices()``: PyTorch's aliases of a sparse tensor's parts)."""
    a = _alias(t, t._size, t._stride, t._offset)
    a._base_ = None
    return a


def _set_parts(self, indices, values, coalesced):
    """An in-place op's result: ``self`` now holds these parts (a new version of it)."""
    s = self._sparse
    s.indices, s.values, s.coalesced = _untracked(indices), _untracked(values), coalesced
    if self._vc is not None:
        self._vc[0] += 1
    return self


def _rows(indices):
    """The index tensors of the sparse dims, for ``index``/``index_put_``."""
    return list(indices.unbind(0))


def _linear_index(indices, size):
    """Each entry's position in the row-major order of the sparse dims (int64 (nnz,))."""
    lin, stride = None, 1
    for d in reversed(range(indices._size[0])):
        row = indices[d]
        term = row if stride == 1 else row * stride
        lin = term if lin is None else lin + term
        stride *= size[d]
    if lin is None:
        return indices.new_zeros((indices._size[1],))
    return lin


def _unravel(lin, size, sparse_dim):
    """The (sparse_dim, n) indices of linear positions ``lin``."""
    if sparse_dim == 0:
        return lin.new_zeros((0, lin._size[0]))
    rows, stride = [], math.prod(size[:sparse_dim])
    for d in range(sparse_dim):
        stride //= size[d]
        rows.append(_aten.remainder.Scalar._call(lin // stride, size[d]))
    return _aten.stack.default._call(rows, 0)


# -- metadata ------------------------------------------------------------------------------------

def sparse_dim_sparse(self):
    return self._sparse.sparse_dim


def dense_dim_sparse(self):
    return self._sparse.values.dim() - 1


def _nnz_sparse(self):
    return self._sparse.values._size[0]


def is_coalesced_sparse(self):
    return self._sparse.coalesced


def _coalesced_sparse_(self, coalesced):
    self._sparse.coalesced = bool(coalesced)
    return self


def _indices_sparse(self):
    return _shared(self._sparse.indices)


def _values_sparse(self):
    return _shared(self._sparse.values)


def indices_sparse(self):
    if not self._sparse.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _shared(self._sparse.indices)


def values_sparse(self):
    if not self._sparse.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _shared(self._sparse.values)


# -- coalescing and conversions --------------------------------------------------------------------

def _coalesce_sparse(self):
    """Sorted unique indices, the values of each repeated index summed."""
    indices, values = _parts(self)
    if values._size[0] < 2:
        return _new(indices.clone(), values.clone(), self._size, True)
    lin = _linear_index(indices, self._size)
    unique, inverse, _ = _aten._unique2.default._call(lin, True, True, False)
    summed = values.new_zeros((unique._size[0],) + values._size[1:])
    summed.index_add_(0, inverse, values)
    return _new(_unravel(unique, self._size, indices._size[0]), summed, self._size, True)


@_kernel("coalesce")
def _coalesced(t):
    """coalesce below autograd (inside ``__torch_dispatch__``, say): PyTorch's composite
    kernel serves the sparse keys too, ember's composites read strides, so this one does."""
    return t if t._sparse.coalesced else _coalesce_sparse(t)


def _to_dense_sparse(self, dtype=None, masked_grad=None):
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_to_dense")
    indices, values = _parts(self)
    out = values.new_zeros(self._size)
    if values._size[0]:
        if indices._size[0] == 0:
            out.add_(values.sum(0))
        else:
            out.index_put_(_rows(indices), values, accumulate=True)
    return out


def _to_sparse_sparse_dim_sparse(self, sparse_dim):
    if sparse_dim != self._sparse.sparse_dim:
        raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                           "!=self.sparse_dim() is not supported")
    return clone_sparse(self)


def _to_sparse_sparse(self, layout=None, blocksize=None, dense_dim=None):
    _R.check_to_sparse_arguments("sparse_coo_to_sparse", sparse_coo, layout, blocksize)
    if layout is not None and layout is not sparse_coo:
        return _R.to_compressed_op(_aten, layout)(self, blocksize, dense_dim)
    return clone_sparse(self)


def _find(keys, query):
    """(position, found): where each of ``query`` lies in sorted ``keys`` (clamped to a valid
    position) and whether it is there."""
    pos = _aten.searchsorted.Tensor._call(keys, query, False, False, None, None)
    pos = pos.clamp_(max=keys._size[0] - 1)
    return pos, keys.index_select(0, pos) == query


def _lookup(self, indices):
    """The values of sparse ``self`` at each index column of ``indices`` (zeros where it has
    none), found by binary search in its coalesced linear indices."""
    c = _coalesced(self)
    cindices, cvalues = _parts(c)
    n = indices._size[1]
    if cvalues._size[0] == 0 or n == 0:
        return cvalues.new_zeros((n,) + cvalues._size[1:])
    pos, found = _find(_linear_index(cindices, self._size), _linear_index(indices, self._size))
    picked = cvalues.index_select(0, pos)
    found = found.view((n,) + (1,) * (picked.dim() - 1))
    return _aten.where.self._call(found, picked, picked.new_zeros(()))


@_kernel("sparse_mask")
def sparse_mask_sparse(self, mask):
    """``self``'s values at ``mask``'s entries, in ``mask``'s layout (a sparse ``self`` is
    summed over its repeats first, as PyTorch's)."""
    if tuple(self._size) != tuple(mask._size):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{_R._fmt(self._size)} but mask has size {_R._fmt(mask._size)}")
    mindices, _ = _parts(mask)
    if _is_sparse(self):
        values = _lookup(self, mindices)
    else:
        values = _aten.index.Tensor._call(_untracked(self), _rows(mindices))
    return _new(mindices, values, mask._size, mask._sparse.coalesced)


@_kernel("clone")
def clone_sparse(self, memory_format=None):
    indices, values = _parts(self)
    return _new(indices.clone(), values.clone(), self._size, self._sparse.coalesced)


@_kernel("detach")
def detach_sparse(self):
    indices, values = _parts(self)
    return _new(indices, values, self._size, self._sparse.coalesced)


@_kernel("_to_copy")
def _to_copy_sparse(self, dtype=None, layout=None, device=None, pin_memory=None,
                    non_blocking=False, memory_format=None):
    indices, values = _parts(self)
    out = _new(indices.to(device=device, copy=True),
               values.to(dtype=dtype, device=device, copy=True), self._size,
               self._sparse.coalesced)
    return out if layout is None or layout is sparse_coo else _to_dense_sparse(out)


@_kernel("copy_")
def copy_sparse_(self, src, non_blocking=False):
    if not (_is_sparse(self) and _is_sparse(src)):
        raise RuntimeError(f"copy_() between dense and sparse Tensors is not implemented! Found "
                           f"self type = {self.type()} and src type = {src.type()}")
    indices, values = _parts(src)
    self._size = tuple(src._size)
    self._stride = (0,) * len(self._size)
    return _set_parts(self, indices.to(self._device, copy=True),
                      values.to(self._dtype, device=self._device, copy=True),
                      src._sparse.coalesced)


@_kernel("zero_")
def zero_sparse_(self):
    indices, values = _parts(self)
    return _set_parts(self, indices.new_empty((indices._size[0], 0)),
                      values.new_empty((0,) + values._size[1:]), True)


@_kernel("zeros_like", "empty_like")
def zeros_like_sparse(self, dtype=None, layout=None, device=None, pin_memory=None,
                      memory_format=None):
    if layout is not None and layout is not sparse_coo:
        return _aten.zeros.default._call(self._size, dtype or self._dtype, layout,
                                         device or self._device, None)
    indices, values = _parts(self)
    return _new(indices.new_empty((indices._size[0], 0), device=device),
                values.new_empty((0,) + values._size[1:], dtype=dtype, device=device),
                self._size, True)


# -- factories (a sparse ``layout=``: BackendSelect picks the sparse key) --------------------------

def _empty(size, dtype, device):
    size = tuple(size)
    return _aten._sparse_coo_tensor_with_dims.default._call(len(size), 0, size, dtype, None,
                                                            device, None)


@_kernel("empty.memory_format")
def empty_sparse(size, dtype=None, layout=None, device=None, pin_memory=None,
                 memory_format=None):
    if memory_format is not None:
        raise RuntimeError("Sparse layout does not support memory_format")
    return _empty(size, dtype, device)


@_kernel("empty_strided")
def empty_strided_sparse(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype, device)


@_kernel("zeros")
def zeros_sparse(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype, device)


@_kernel("ones", "full")
def full_sparse(size, *args):
    raise RuntimeError("full(...) is not implemented for sparse layout")


# -- arithmetic ----------------------------------------------------------------------------------

def _scaled(values, alpha):
    return values if alpha == 1 else values * alpha


def _add_into(dense, sparse, alpha):
    """``dense += alpha * sparse`` in place (``dense`` an untracked tensor)."""
    indices, values = _parts(sparse)
    if values._size[0] == 0:
        return dense
    values = _scaled(values, alpha).to(dense._dtype)
    if indices._size[0] == 0:
        return dense.add_(values.sum(0))
    return dense.index_put_(_rows(indices), values, accumulate=True)


def _add_sparse_sparse(self, other, alpha):
    """Both sets of entries; two coalesced inputs give the coalesced sum (PyTorch merges
    them), others keep every entry."""
    _R.check_same_size("add", self, other)
    if self._sparse.sparse_dim != other._sparse.sparse_dim:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimensions, "
                           f"but {self._sparse.sparse_dim} != {other._sparse.sparse_dim}")
    (si, sv), (oi, ov) = _parts(self), _parts(other)
    dtype = promote_types(self._dtype, other._dtype)
    indices = _aten.cat.default._call([si, oi], 1)
    values = _aten.cat.default._call([sv.to(dtype), _scaled(ov, alpha).to(dtype)], 0)
    out = _new(indices, values, self._size)
    if self._sparse.coalesced and other._sparse.coalesced:
        out = _coalesce_sparse(out)
    return out


@_kernel("add.Tensor")
def add_sparse(self, other, alpha=1):
    if _is_sparse(self) and _is_sparse(other):
        return _add_sparse_sparse(self, other, alpha)
    if _is_sparse(self):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    _R.check_same_size("add", self, other)
    out = _untracked(self).to(promote_types(self._dtype, other._dtype), copy=True)
    return _add_into(out, other, alpha)


@_kernel("add_.Tensor")
def add_sparse_(self, other, alpha=1):
    if _is_sparse(self) and _is_sparse(other):
        r = _add_sparse_sparse(self, other, alpha)
        indices, values = _parts(r)
        return _set_parts(self, indices, values.to(self._dtype), r._sparse.coalesced)
    if _is_sparse(self):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    _R.check_same_size("add", self, other)
    _add_into(_untracked(self), other, alpha)
    return self


@_kernel("sub.Tensor")
def sub_sparse(self, other, alpha=1):
    return add_sparse(self, other, -alpha)


@_kernel("sub_.Tensor")
def sub_sparse_(self, other, alpha=1):
    return add_sparse_(self, other, -alpha)


@_kernel("add.Scalar", "sub.Scalar")
def add_scalar_sparse(self, other, alpha=1):
    raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")


def _mul_values(self, other):
    """The values of ``self * other`` at ``self``'s entries (``other`` a scalar or dense)."""
    indices, values = _parts(self)
    if not hasattr(other, "_keyset") or other.dim() == 0:
        return values * (other if not hasattr(other, "_keyset") else _untracked(other))
    dense = _untracked(other).expand(self._size)
    return values * _aten.index.Tensor._call(dense, _rows(indices))


def _mul_sparse_sparse(self, other):
    """``self``'s entries whose index ``other`` has, each times ``other``'s (coalesced) value
    there: PyTorch's intersection, which keeps ``self``'s repeats and order."""
    _R.check_same_size("mul", self, other)
    a, b = self, _coalesced(other)
    (ai, av), (bi, bv) = _parts(a), _parts(b)
    coalesced = self._sparse.coalesced
    if av._size[0] == 0 or bv._size[0] == 0:
        dtype = promote_types(self._dtype, other._dtype)
        return _new(ai[:, :0], av[:0].to(dtype), self._size, coalesced)
    pos, hit = _find(_linear_index(bi, self._size), _linear_index(ai, self._size))
    keep = hit.nonzero().view(-1)
    return _new(ai.index_select(1, keep),
                av.index_select(0, keep) * bv.index_select(0, pos.index_select(0, keep)),
                self._size, coalesced)


@_kernel("mul.Tensor")
def mul_sparse(self, other):
    if _is_sparse(self) and _is_sparse(other):
        return _mul_sparse_sparse(self, other)
    s, d = (self, other) if _is_sparse(self) else (other, self)
    if hasattr(d, "_keyset") and d.dim() and tuple(_st.broadcast_shapes(d._size, s._size)) != tuple(s._size):
        raise RuntimeError(f"mul: expected sizes of 'self' and 'other' to match, but "
                           f"{_R._fmt(self._size)} != {_R._fmt(other._size)}")
    keep = s._sparse.coalesced
    return _new(s._sparse.indices, _mul_values(s, d), s._size, keep)


@_kernel("mul.Scalar")
def mul_scalar_sparse(self, other):
    return _new(self._sparse.indices, _mul_values(self, other), self._size,
                self._sparse.coalesced)


@_kernel("mul_.Tensor", "mul_.Scalar")
def mul_sparse_(self, other):
    if not _is_sparse(self):
        raise RuntimeError("mul_(dense, sparse) is not supported: the product is sparse")
    r = mul_sparse(self, other) if hasattr(other, "_keyset") else mul_scalar_sparse(self, other)
    indices, values = _parts(r)
    return _set_parts(self, indices, values.to(self._dtype), r._sparse.coalesced)


def _check_divisor(other):
    if _is_sparse(other) or (hasattr(other, "_keyset") and other.dim() != 0):
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor "
                           f"(got shape {_R._fmt(other._size)} for divisor)")


@_kernel("div.Tensor", "div.Scalar")
def div_sparse(self, other):
    if not _is_sparse(self):
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                           "(got a sparse divisor)")
    _check_divisor(other)
    indices, values = _parts(self)
    divisor = _untracked(other) if hasattr(other, "_keyset") else other
    return _new(indices, values / divisor, self._size, self._sparse.coalesced)


@_kernel("div_.Tensor", "div_.Scalar")
def div_sparse_(self, other):
    r = div_sparse(self, other)
    return _set_parts(self, r._sparse.indices, r._sparse.values.to(self._dtype),
                      r._sparse.coalesced)


@_kernel("neg")
def neg_sparse(self):
    indices, values = _parts(self)
    return _new(indices, values.neg(), self._size, self._sparse.coalesced)


@_kernel("neg_")
def neg_sparse_(self):
    self._sparse.values.neg_()
    return _set_parts(self, *_parts(self), self._sparse.coalesced)


@_kernel("_conj_physical")
def conj_physical_sparse(self):
    """PyTorch's conj_physical_out_sparse: the values conjugated, the pattern (coalesced or not)
    kept; ``conj()`` of a sparse tensor is this (its parts carry no conjugate bit)."""
    indices, values = _parts(self)
    return _new(indices, _aten.conj_physical.default._call(values), self._size,
                self._sparse.coalesced)


@_kernel("conj_physical_")
def conj_physical_sparse_(self):
    if self._dtype.is_complex:  # ATen writes it with a TensorIterator, which refuses COO
        raise RuntimeError("unsupported tensor layout: Sparse")
    return self


# Ops that map zero to zero, computed on the coalesced values (PyTorch's coalesced unary ufuncs;
# its deg2rad, rad2deg and conj_physical are ember composites of the ops here)
_UNARY = ["abs", "sgn", "sign", "sqrt", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan",
          "atanh", "ceil", "floor", "trunc", "round", "frac", "expm1", "log1p", "erf", "erfinv",
          "relu", "nan_to_num", "signbit", "isnan", "isinf", "isposinf", "isneginf"]
_INPLACE = ["abs_", "sgn_", "sign_", "sqrt_", "sin_", "sinh_", "tan_", "tanh_", "asin_", "asinh_",
            "atan_", "atanh_", "ceil_", "floor_", "trunc_", "round_", "frac_", "expm1_", "log1p_",
            "erf_", "erfinv_", "relu_", "nan_to_num_"]


def _unary(name):
    packet = getattr(_aten, name)

    def kernel(self, *args):
        c = _coalesced(self)
        indices, values = _parts(c)
        return _new(indices, packet.default._call(values, *args), self._size, True)
    kernel.__name__ = kernel.__qualname__ = f"{name}_sparse"
    return kernel


def _unary_(name):
    packet = getattr(_aten, name)

    def kernel(self, *args):
        if not self._sparse.coalesced:  # (PyTorch's rule: it would coalesce in place)
            raise RuntimeError(f"{name} requires coalesced input")
        packet.default._call(self._sparse.values, *args)
        return _set_parts(self, *_parts(self), True)
    kernel.__name__ = kernel.__qualname__ = f"{name}sparse"
    return kernel


for _name in _UNARY:
    _KERNELS[_name] = _unary(_name)
for _name in _INPLACE:
    _KERNELS[_name] = _unary_(_name)


@_kernel("pow.Tensor_Scalar")
def pow_sparse(self, exponent):
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                           "the result tensor dense")
    c = _coalesced(self)
    indices, values = _parts(c)
    return _new(indices, values.pow(exponent), self._size, True)


# -- reductions ------------------------------------------------------------------------------------

@_kernel("sum")
def sum_sparse(self, dtype=None):
    return self._sparse.values.sum(dtype=dtype)


def _sum_dims(self, dims, keepdim):
    """``self`` summed over ``dims``: sparse while a sparse dim remains, else dense."""
    ndim = self.dim()
    dims = sorted({_st.wrap_dim(d, ndim) for d in dims}) if dims else list(range(ndim))
    self = _coalesced(self)
    sparse_dim = self._sparse.sparse_dim
    indices, values = _parts(self)
    dense_dims = [d - sparse_dim + 1 for d in dims if d >= sparse_dim]
    if dense_dims:
        values = values.sum(dense_dims, keepdim=keepdim)
    summed = [d for d in dims if d < sparse_dim]
    kept = [d for d in range(sparse_dim) if d not in summed]
    size = tuple(1 if d in dims else s for d, s in enumerate(self._size) if keepdim or d not in dims)
    if not summed:
        return _new(indices.clone(), values, size, self._sparse.coalesced)
    if not kept and not keepdim:
        return values.sum(0)
    if keepdim:
        indices = indices.clone()
        indices[summed] = 0
    else:
        indices = indices.index_select(0, indices.new_tensor(kept))
    return _coalesce_sparse(_new(indices, values, size))


@_kernel("sum.dim_IntList")
def sum_dim_sparse(self, dim, keepdim=False, dtype=None):
    out = _sum_dims(self, dim or [], keepdim)
    return out if dtype is None else out.to(dtype)


@_kernel("_sparse_sum.dim")
def _sparse_sum_dim_sparse(self, dim):
    return _sum_dims(self, dim, False)


@_kernel("_sparse_sum_backward")
def _sparse_sum_backward_sparse(grad, self, dim):
    """The gradient at ``self``'s elements (its coalesced entries): that of the element each
    was summed into."""
    if _is_sparse(grad):
        grad = _to_dense_sparse(grad)
    for d in sorted(_st.wrap_dim(d, self.dim()) for d in dim):
        grad = grad.unsqueeze(d)
    self = _coalesced(self)
    indices, _ = _parts(self)
    full = _untracked(grad).expand(self._size)
    values = _aten.index.Tensor._call(full, _rows(indices)) if indices._size[0] else \
        full.unsqueeze(0).expand((indices._size[1],) + tuple(self._size))
    return _new(indices, values.clone(), self._size, True)


# -- softmax ---------------------------------------------------------------------------------------

def _softmax_groups(self, dim):
    """(coalesced self, the group of each entry, the number of groups): along a sparse ``dim``
    the entries sharing their other sparse indices form a group (a softmax runs over each)."""
    c = _coalesced(self)
    indices, _ = _parts(c)
    others = [d for d in range(indices._size[0]) if d != dim]
    if not others:
        return c, indices.new_zeros((indices._size[1],)), 1
    keys = _linear_index(indices.index_select(0, indices.new_tensor(others)),
                         [self._size[d] for d in others])
    unique, group, _ = _aten._unique2.default._call(keys, True, True, False)
    return c, group, unique._size[0]


def _group_sum(values, group, n):
    return values.new_zeros((n,) + values._size[1:]).index_add_(0, group, values)


def _sparse_softmax_any(self, dim, log):
    dim = _st.wrap_dim(dim, self.dim())
    sparse_dim = self._sparse.sparse_dim
    if dim >= sparse_dim:  # a dense dim: each entry's block is whole
        c = _coalesced(self)
        indices, values = _parts(c)
        fn = _aten._log_softmax if log else _aten._softmax
        return _new(indices, fn.default._call(values, dim - sparse_dim + 1, False), self._size,
                    True)
    c, group, n = _softmax_groups(self, dim)
    indices, values = _parts(c)
    if values._size[0] == 0:
        return _new(indices, values.clone(), self._size, True)
    spread = group.view((-1,) + (1,) * (values.dim() - 1)).expand(values._size)
    top = values.new_empty((n,) + values._size[1:]).scatter_reduce_(0, spread, values, "amax",
                                                                    include_self=False)
    shifted = values - top.index_select(0, group)
    total = _group_sum(shifted.exp(), group, n).index_select(0, group)
    out = shifted - total.log() if log else shifted.exp() / total
    return _new(indices, out, self._size, True)


@_kernel("_sparse_softmax")
def _sparse_softmax_sparse(self, dim, half_to_float):
    return _sparse_softmax_any(self, dim, False)


@_kernel("_sparse_log_softmax")
def _sparse_log_softmax_sparse(self, dim, half_to_float):
    return _sparse_softmax_any(self, dim, True)


def _softmax_backward_any(grad_output, output, dim, log):
    """The gradient at ``output``'s entries: g - sum(g) * softmax for log_softmax,
    softmax * (g - sum(g * softmax)) for softmax, the sums over each softmax group."""
    indices, out = _parts(output)
    g = _lookup(grad_output, indices) if _is_sparse(grad_output) else _aten.index.Tensor._call(
        _untracked(grad_output), _rows(indices))
    dim = _st.wrap_dim(dim, output.dim())
    sparse_dim = output._sparse.sparse_dim
    if dim >= sparse_dim:
        d = dim - sparse_dim + 1
        inner = g.sum(d, keepdim=True) if log else (g * out).sum(d, keepdim=True)
    else:
        _, group, n = _softmax_groups(output, dim)
        inner = _group_sum(g if log else g * out, group, n).index_select(0, group)
    values = g - out.exp() * inner if log else out * (g - inner)
    return _new(indices, values, output._size, True)


@_kernel("_sparse_softmax_backward_data")
def _sparse_softmax_backward_data_sparse(grad_output, output, dim, self):
    return _softmax_backward_any(grad_output, output, dim, False)


@_kernel("_sparse_log_softmax_backward_data")
def _sparse_log_softmax_backward_data_sparse(grad_output, output, dim, self):
    return _softmax_backward_any(grad_output, output, dim, True)


# -- products -------------------------------------------------------------------------------------

def _spmm(sparse, dense):
    """sparse (m, k) @ dense (k, n): each entry adds value * a row of ``dense`` to its row."""
    _R.check_mm("addmm", sparse, dense)
    if sparse._sparse.sparse_dim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {sparse._sparse.sparse_dim} sparse "
                           f"dims and {sparse.dim() - sparse._sparse.sparse_dim} dense dims")
    indices, values = _parts(sparse)
    dense = _untracked(dense)
    dtype = promote_types(sparse._dtype, dense._dtype)
    out = dense.new_zeros((sparse._size[0], dense._size[1]), dtype=dtype)
    if values._size[0]:
        rows = dense.index_select(0, indices[1]).to(dtype)
        out.index_add_(0, indices[0], rows * values.to(dtype).unsqueeze(1))
    return out


@_kernel("mm")
def mm_sparse(self, mat2):
    if _is_sparse(self) and _is_sparse(mat2):
        raise NotImplementedError("mm: ember has no product of two sparse COO tensors")
    if _is_sparse(self):
        return _spmm(self, mat2)
    # dense @ sparse = (sparse^T @ dense^T)^T
    _R.check_mm("mm", self, mat2)
    return _spmm(transpose_sparse(mat2, 0, 1), _untracked(self).t()).t()


def addmm_with(mm, is_sparse, self, mat1, mat2, beta, alpha):
    """``beta * self + alpha * mm(mat1, mat2)`` for a dense ``self``: addmm of a sparse layout
    (COO here, the compressed ones in ``compressed.py``) given its product."""
    if is_sparse(self):
        raise RuntimeError("addmm: the added tensor must be dense")
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # self is ignored, NaN and all (BLAS's rule)
        return product
    self = _untracked(self)
    return product + (self if beta == 1 else self * beta)


@_kernel("addmm", "_sparse_addmm")
def addmm_sparse(self, mat1, mat2, beta=1, alpha=1):
    return addmm_with(mm_sparse, _is_sparse, self, mat1, mat2, beta, alpha)


# -- shape ----------------------------------------------------------------------------------------

@_kernel("transpose.int")
def transpose_sparse(self, dim0, dim1):
    ndim = self.dim()
    d0, d1 = _st.wrap_dim(dim0, ndim), _st.wrap_dim(dim1, ndim)
    indices, values = _parts(self)
    size = list(self._size)
    size[d0], size[d1] = size[d1], size[d0]
    sparse_dim = self._sparse.sparse_dim
    if d0 == d1:
        return _new(indices.clone(), values.clone(), size, self._sparse.coalesced)
    if d0 < sparse_dim and d1 < sparse_dim:
        order = list(range(sparse_dim))
        order[d0], order[d1] = d1, d0
        return _new(indices.index_select(0, indices.new_tensor(order)), values.clone(), size)
    if d0 >= sparse_dim and d1 >= sparse_dim:
        values = values.transpose(d0 - sparse_dim + 1, d1 - sparse_dim + 1).clone()
        return _new(indices.clone(), values, size, self._sparse.coalesced)
    raise RuntimeError("transpose: transposing between sparse and dense dimensions is not "
                       "supported")


@_kernel("t")
def t_sparse(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.dim()}D")
    return transpose_sparse(self, 0, 1) if self.dim() == 2 else clone_sparse(self)


for _name, _fn in _KERNELS.items():
    register(_name, "SparseCPU", _fn)
    register(_name, "SparseCUDA", _fn)

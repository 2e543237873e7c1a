"""``Tensor.__getitem__`` / ``__setitem__``: PyTorch's Python indexing rules.

An index is walked left to right (``applySlicing`` in PyTorch): integers become ``select``,
slices ``slice``, ``None`` ``unsqueeze``, ``...`` skips dims; each is a view op called through the
dispatcher, so the result of basic indexing is a view. Tensors, lists and bools are *advanced*
indices: they are collected into the ``Tensor?[]`` list of ``aten::index.Tensor`` (a copy) or
``aten::index_put_`` (a write), with ``None`` for the dims between them, the layout those ops
expect (a k-dim bool mask fills one slot but consumes k dims).
"""
import operator
import sys
import warnings

import numpy as np

from ._core import dtype as D
from ._core.device import META
from ._ops.overload import ops
from ._tensor import Tensor, empty_tensor, wrap_array

_INDEX_DTYPES = (D.bool_, D.uint8)  # 0-dim tensors of these act like Python bools


def getitem(self, index):
    # fast paths, as in THPVariable_getitem
    if index is None:
        return ops.aten.unsqueeze.default._call(self, 0)
    if index is Ellipsis:
        return ops.aten.alias.default._call(self)
    if index.__class__ is int:
        return _select(self, 0, index, 0)
    if index.__class__ is slice:
        result = _slice(self, 0, index)
        return result if result is not self else ops.aten.alias.default._call(self)
    result, indices = _apply_slicing(self, _as_tuple(index))
    if indices:
        return ops.aten.index.Tensor._call(result, _on_device(self, indices))
    if result is self:
        # x[...] / x[()] still return a new tensor object, as PyTorch does
        return ops.aten.alias.default._call(self)
    return result


def setitem(self, index, value):
    # Subclasses (Parameter, FakeTensor) are tensors too; only numbers become 0-dim tensors.
    if value.__class__ is not Tensor and not isinstance(value, Tensor):
        value = _value_tensor(self, value)
    if index is Ellipsis or index is None:
        return _copy_to(self, value)
    if index.__class__ is int:
        return _copy_to(_select(self, 0, index, 0), value)
    if index.__class__ is slice:
        return _copy_to(_slice(self, 0, index), value)
    sliced, indices = _apply_slicing(self, _as_tuple(index))
    if not indices:
        return _copy_to(sliced, value)
    if value._size[:1] == (1,):
        value = ops.aten.view.default._call(value, _strip_leading_ones(value._size))
    ops.aten.index_put_.default._call(sliced, _on_device(self, indices), value, False)


# ---- the walk over an index tuple -----------------------------------------------------------------

def _as_tuple(index):
    """NumPy's legacy rule (treatSequenceAsTuple): a short list holding slices, ``...``, ``None``,
    tensors or sequences is a tuple of indices (with a deprecation warning); other lists are one
    advanced index."""
    if isinstance(index, tuple):
        if any(i.__class__ is np.ndarray for i in index):
            return tuple(_sequence_index(i) if i.__class__ is np.ndarray else i for i in index)
        return index
    if index.__class__ is np.ndarray:  # an array index is a tensor index, as a list is
        return (_sequence_index(index),)
    if isinstance(index, list) and 0 < len(index) < 32 and any(
            isinstance(i, (Tensor, list, tuple, slice)) or i is Ellipsis or i is None
            for i in index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and "
                      "will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In "
                      "pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], "
                      "which will result either in an error or a different result",
                      UserWarning, stacklevel=3)
        return tuple(index)
    return (index,)


def _count_dims(indices):
    """How many dims of the indexed tensor the index consumes (None, ... and bools consume none)."""
    n = 0
    for i in indices:
        if isinstance(i, Tensor):
            n += i.dim() if i._dtype in _INDEX_DTYPES else 1
        elif not (i is None or i is Ellipsis or isinstance(i, bool)):
            n += 1
    return n


def _apply_slicing(self, indices):
    """Apply the view part of ``indices`` and collect the advanced part into a ``Tensor?[]`` list
    (empty when there is none)."""
    specified = _count_dims(indices)
    ndim = self.dim()
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result = self
    dim = 0
    out = []  # the index list: grows with a None per kept dim once a tensor index was seen

    def record(t):
        nonlocal dim
        if not out:
            out.extend([None] * dim)
        out.append(t)
        dim += t.dim() if t._dtype in _INDEX_DTYPES else 1

    def skip(k):
        if out:
            out.extend([None] * k)

    for pos, i in enumerate(indices):
        if i.__class__ is int:
            result = _select(result, dim, i, pos)
        elif i.__class__ is slice:
            result = _slice(result, dim, i)
            dim += 1
            skip(1)
        elif i is Ellipsis:
            k = ndim - specified
            dim += k
            skip(k)
        elif i is None:
            result = ops.aten.unsqueeze.default._call(result, dim)
            dim += 1
            skip(1)
        elif isinstance(i, bool):
            result = ops.aten.unsqueeze.default._call(result, dim)
            record(_bool_index(i))
        elif isinstance(i, Tensor):
            if i.dim() == 0 and i._dtype._category <= D.INTEGRAL:
                if i._dtype in _INDEX_DTYPES:
                    result = ops.aten.unsqueeze.default._call(result, dim)
                    record(_bool_index(bool(i.item())))
                else:
                    result = _select(result, dim, int(i.item()), pos)
            else:
                record(i)
        elif isinstance(i, (list, tuple, range)):
            # (PyTorch takes any Python sequence here, as torch.tensor(seq): sbi indexes the
            # diagonal with ``[..., range(d), range(d)]``)
            record(_sequence_index(i))
        else:
            try:
                k = operator.index(i)
            except TypeError:
                raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or "
                                 f"byte Variables are valid indices (got {type(i).__name__})") from None
            result = _select(result, dim, k, pos)
    return result, out


def _select(t, dim, index, real_dim):
    if t.dim() == 0 and index == 0:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    size = t._size[dim] if t.dim() else 0
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size {size}")
    return ops.aten.select.int._call(t, dim, index)


def _slice(t, dim, s):
    # Python's own slice normalization: None bounds become 0 / sys.maxsize, steps are checked
    try:
        step = 1 if s.step is None else operator.index(s.step)
        start = 0 if s.start is None else operator.index(s.start)
        stop = sys.maxsize if s.stop is None else operator.index(s.stop)
    except TypeError:
        raise TypeError("slice indices must be integers or None or have an __index__ method") from None
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step < 0:
        raise ValueError("step must be greater than zero")
    if t.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if start == 0 and step == 1 and stop == t._size[dim]:
        return t  # the whole dim: PyTorch skips the slice op
    return ops.aten.slice.Tensor._call(t, dim, start, stop, step)


# ---- advanced-index tensors ----------------------------------------------------------------------

def _bool_index(flag):
    """A Python bool adds a dim of size 1 that True keeps (index [0]) and False empties."""
    return wrap_array(np.zeros(1 if flag else 0, dtype=np.int64))


def _sequence_index(seq):
    """A list index as a tensor: bool and uint8 lists stay masks, anything else becomes int64."""
    a = np.array(seq)
    if a.dtype != np.bool_ and a.dtype != np.uint8:
        a = a.astype(np.int64)
    return wrap_array(a)


def _on_device(self, indices):
    """Index tensors for a meta tensor: bool masks become their (CPU-known) nonzero positions,
    then every index becomes a meta tensor of the same shape, since meta kernels need shapes only."""
    if self._device is not META:
        return indices
    out = []
    for t in indices:
        if t is None or t._device is META:
            out.append(t)
        elif t._dtype in _INDEX_DTYPES:
            out.extend(empty_tensor(p.shape, D.int64, META) for p in np.nonzero(t._nd()))
        else:
            out.append(empty_tensor(t._size, t._dtype, META))
    return out


# ---- writing -------------------------------------------------------------------------------------

_PY_SCALARS = (bool, int, float, complex)


def _value_tensor(self, value):
    """A Python number as a 0-dim tensor of ``self``'s dtype (PyTorch's valueToTensor)."""
    if not isinstance(value, _PY_SCALARS) and not isinstance(value, np.generic):
        raise TypeError(f"can't assign a {type(value).__name__} to a {self.type()}")
    if self._dtype is D.complex32:  # (NumPy cannot cast into the float16 pair)
        from ._core import complex32 as _complex32
        return wrap_array(_complex32.scalar(value))
    return wrap_array(np.array(value).astype(self._dtype._np))


def _strip_leading_ones(size):
    """NumPy compatibility: leading size-1 dims of a value are dropped before broadcasting."""
    i = 0
    while i < len(size) and size[i] == 1:
        i += 1
    return size[i:]


def _copy_to(dst, src):
    """PyTorch's copy_to: copy when shapes match, fill from a 0-dim CPU value, else broadcast
    ``src`` to ``dst``'s shape and copy."""
    if dst._size != src._size and not src._size and src._device.type == "cpu":
        ops.aten.fill_.Tensor._call(dst, src)
        return
    if dst._size != src._size:
        src = ops.aten.view.default._call(src, _strip_leading_ones(src._size))
        src = ops.aten.expand.default._call(src, dst._size, False)
    ops.aten.copy_.default._call(dst, src, False)

"""Shape and indexing ops that PyTorch decomposes (CompositeImplicitAutograd), written in ember
ops as ATen writes them: the stacks, tensor_split, fliplr/flipud, repeat_interleave, tile,
take_along_dim, argwhere, meshgrid, cartesian_prod, combinations, diag, diagflat, cross; and
rot90 (CompositeExplicitAutograd: flips and a transpose, with its own derivative)."""
import warnings

from ..._core import dtype as D
from ..._core import overlap as _overlap
from ..._core import strides as _st
from ..._core.device import contiguous_format
from ..._ops.overload import ops
from ..._core.tensor_impl import _alias


A = ops.aten


def _reshape(t, shape):
    return A.reshape.default._call(t, tuple(shape))


def _atleast(t, n):
    """atleast_1d/2d/3d of one tensor (a view where PyTorch's is)."""
    s = t._size
    if len(s) >= n:
        return t
    if n == 1:
        return _reshape(t, (1,))
    if n == 2:
        return _reshape(t, (1, 1) if len(s) == 0 else (1,) + s)
    return _reshape(t, {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


def _check_nonempty(tensors, name):
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")


def hstack(tensors):
    _check_nonempty(tensors, "hstack")
    ts = [_atleast(t, 1) for t in tensors]
    return A.cat.default._call(ts, 0 if ts and ts[0].dim() == 1 else 1)


def vstack(tensors):
    _check_nonempty(tensors, "vstack")
    return A.cat.default._call([_atleast(t, 2) for t in tensors], 0)


def dstack(tensors):
    _check_nonempty(tensors, "dstack")
    return A.cat.default._call([_atleast(t, 3) for t in tensors], 2)


# -- splitting ---------------------------------------------------------------------------------

def _check_split_input(self):
    if self.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")


def tensor_split_sections(self, sections, dim=0):
    _check_split_input(self)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    d = _st.wrap_dim(dim, self.dim())
    n = self._size[d]
    small, extra = divmod(n, sections)
    out, start = [], 0
    for i in range(sections):
        size = small + (1 if i < extra else 0)
        out.append(A.slice.Tensor._call(self, d, start, start + size, 1))
        start += size
    return out


def tensor_split_indices(self, indices, dim=0):
    _check_split_input(self)
    d = _st.wrap_dim(dim, self.dim())
    out, start = [], 0
    for idx in indices:
        out.append(A.slice.Tensor._call(self, d, start, idx, 1))
        start = idx
    out.append(A.slice.Tensor._call(self, d, start, self._size[d], 1))
    return out


def tensor_split_tensor_indices_or_sections(self, tensor_indices_or_sections, dim=0):
    t = tensor_indices_or_sections
    if t._device.type == "meta":
        raise NotImplementedError("tensor_split: the split points of a meta tensor are unknown "
                                  "(the result depends on its values)")
    if t._device.type != "cpu":
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be on cpu, but "
                           f"it's on {t._device}")
    if t._dtype is not D.int64:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of "
                           f"long, but got {t._dtype._short}")
    if t.dim() > 1:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                           f"zero-dimensional or one-dimensional tensor, but got a tensor with "
                           f"{t.dim()} dims")
    values = t.tolist()
    if t.dim() == 0:
        return tensor_split_sections(self, values, dim)
    return tensor_split_indices(self, values, dim)


# -- flips and rotations -----------------------------------------------------------------------

def fliplr(self):
    if self.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return A.flip.default._call(self, [1])


def flipud(self):
    if self.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return A.flip.default._call(self, [0])


def rot90(self, k=1, dims=(0, 1)):
    nd = self.dim()
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or (dims[0] - dims[1]) % nd == 0:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    for d in dims:
        if not -nd <= d < nd:
            raise RuntimeError(f"Rotation dim{dims.index(d)} out of range, dim{dims.index(d)} = "
                               f"{d}")
    k %= 4
    d0, d1 = dims
    if k == 1:
        # (transposed in place: ATen's result is the flip's, not a view of it)
        return A.transpose_.default._call(A.flip.default._call(self, [d1]), d0, d1)
    if k == 2:
        return A.flip.default._call(self, list(dims))
    if k == 3:
        return A.transpose_.default._call(A.flip.default._call(self, [d0]), d0, d1)
    return A.clone.default._call(self, None)


# -- repeats -----------------------------------------------------------------------------------

def repeat_interleave_self_int(self, repeats, dim=None, output_size=None):
    t = self if dim is not None else _reshape(self, (-1,))
    d = _st.wrap_dim(0 if dim is None else dim, t.dim())
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if t.dim() == 0:
        t = _reshape(t, (1,))
    shape = list(t._size)
    u = A.unsqueeze.default._call(t, d + 1)
    e = A.expand.default._call(u, tuple(shape[:d + 1] + [repeats] + shape[d + 1:]), False)
    shape[d] *= repeats
    # ATen's clone of the expansion, then a view of it: never the input's memory (repeats=1)
    return A.view.default._call(A.clone.default._call(e, contiguous_format), shape)


def repeat_interleave_self_Tensor(self, repeats, dim=None, output_size=None):
    t = self if dim is not None else _reshape(self, (-1,))
    d = 0 if dim is None else dim
    size = t._size[_st.wrap_dim(d, t.dim())] if t.dim() else 1
    if repeats.dim() == 0 or (repeats.dim() == 1 and repeats._size[0] == 1):
        repeats = A.expand.default._call(_reshape(repeats, (1,)), (size,), False)
    elif repeats.dim() == 1:
        if repeats._size[0] != size:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats._size[0]} and input.size({d}) = "
                               f"{size}")
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    index = A.repeat_interleave.Tensor._call(repeats, output_size)
    return A.index_select.default._call(t, d, index)


def tile(self, dims):
    dims = tuple(dims)
    if len(dims) < self.dim():
        dims = (1,) * (self.dim() - len(dims)) + dims
    return A.repeat.default._call(self, dims)


# -- selection ---------------------------------------------------------------------------------

def take_along_dim(self, indices, dim=None):
    if indices._dtype is not D.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices._dtype._short}")
    if dim is None:
        flat = A.view.default._call  # a view, as ATen's: non-viewable inputs raise
        return A.gather.default._call(flat(self, (-1,)), 0, flat(indices, (-1,)), False)
    d = _st.wrap_dim(dim, self.dim())
    if self.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {self.dim()} dimensions for input, "
                           f"and {indices.dim()} dimensions for indices")
    if self.dim() and self._size[d]:
        # PyTorch 2.13 takes the indices modulo the dim's size (so -1 is the last element)
        indices = A.remainder.Scalar._call(indices, self._size[d])
    s = list(self._size)
    s[d] = indices._size[d] if indices.dim() else 1
    idx = A.expand.default._call(indices, _st.broadcast_shapes(tuple(s), indices._size), False)
    i = list(indices._size)
    if i:
        i[d] = self._size[d]
    src = A.expand.default._call(self, _st.broadcast_shapes(tuple(i), self._size), False)
    return A.gather.default._call(src, d, idx, False)


def argwhere(self):
    return A.nonzero.default._call(self)


def nonzero_numpy(self):
    t = A.unsqueeze.default._call(self, 0) if self.dim() == 0 else self
    return A.unbind.int._call(A.nonzero.default._call(t), 1)


def where(condition):
    """``where(condition)``: the indices of its nonzero elements, one tensor per dimension
    (``nonzero(condition, as_tuple=True)``)."""
    return A.nonzero_numpy.default._call(condition)


# -- grids and combinations --------------------------------------------------------------------

def meshgrid(tensors):
    warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                  "indexing argument.", UserWarning, stacklevel=3)
    return meshgrid_indexing(tensors, "ij")


def meshgrid_indexing(tensors, indexing):
    n = len(tensors)
    if n == 0:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors[1:]:
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t._device != tensors[0]._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f'{indexing}')
    ts = list(tensors)
    swap = indexing == "xy" and n >= 2
    if swap:  # xy: the first two outputs are transposed, as in NumPy
        ts[0], ts[1] = ts[1], ts[0]
    for t in ts:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    shape = tuple(t.numel() for t in ts)
    grids = []
    for i, t in enumerate(ts):
        view = [1] * n
        view[i] = -1
        grids.append(A.expand.default._call(A.view.default._call(t, tuple(view)), shape, False))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


def _check_1d(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {_st._fmt_list(t._size)}")


def cartesian_prod(tensors):
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid_indexing(tensors, "ij")
    return A.stack.default._call([_reshape(g, (-1,)) for g in grids], 1)


def combinations(self, r=2, with_replacement=False):
    _check_1d(self)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return A.empty.memory_format._call((0,), self._dtype, None, self._device, None, None)
    n = self.numel()
    rng = A.arange.default._call(n, D.int64, None, self._device, None)
    grids = meshgrid_indexing([rng] * r, "ij")
    mask = A.full.default._call(tuple([n] * r), True, D.bool_, None, self._device, None)
    cmp = A.le.Tensor if with_replacement else A.lt.Tensor
    for i in range(1, r):
        mask = A.logical_and.default._call(mask, cmp._call(grids[i - 1], grids[i]))
    cols = [A.index_select.default._call(self, 0, A.masked_select.default._call(g, mask))
            for g in grids]
    return A.stack.default._call(cols, 1)


# -- diagonals, cross --------------------------------------------------------------------------

def diag(self, diagonal=0):
    if self.dim() == 1:
        return A.diag_embed.default._call(self, diagonal, 0, 1)
    if self.dim() == 2:
        return A.clone.default._call(A.diagonal.default._call(self, diagonal, 0, 1), None)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.dim()}D")


def diagflat(self, offset=0):
    return diag(_reshape(self, (-1,)), offset)


def cross(self, other, dim=None):
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=3)
        dim = next((i for i, s in enumerate(self._size) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return A.linalg_cross.default._call(self, other, dim)


def _unsafe_view(self, size):
    """A tensor of shape ``size`` over self's storage that is not a view of it (no base, its own
    version counter): what ATen returns when a fresh intermediate (a reshape's copy, a bmm
    result) is reshaped, so autograd does not treat it as a view."""
    shape = _st.infer_size(tuple(size), _st.numel(self._size))
    stride = _st.compute_view_stride(self._size, self._stride, shape)
    if stride is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    t = _alias(self, shape, tuple(stride), self._offset)
    t._base_ = None
    t._vc = None if self._vc is None else [0]
    return t


# -- out= forms of the concatenations: PyTorch's cat.out raises TypeError for an out dtype the
# inputs cannot be cast to (the stacks all write through it) --------------------------------------

def _cat_into(result, out):
    from ..._core.promotion import can_cast
    from .. import generic
    if not can_cast(result._dtype, out._dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{out._dtype._short}")
    generic.write_out("cat", (result,), (out,))
    return out


def cat_out(tensors, dim, out):
    _overlap.check_no_overlap(out, tensors)  # cat reads every input while writing out
    return _cat_into(A.cat.default._call(tensors, dim), out)


def stack_out(tensors, dim, out):
    _overlap.check_no_overlap(out, tensors)
    return _cat_into(A.stack.default._call(tensors, dim), out)


def hstack_out(tensors, out):
    return _cat_into(hstack(tensors), out)


def vstack_out(tensors, out):
    return _cat_into(vstack(tensors), out)


def dstack_out(tensors, out):
    return _cat_into(dstack(tensors), out)

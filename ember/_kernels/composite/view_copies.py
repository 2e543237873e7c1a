"""Scatter into a view (``select_scatter``, ``slice_scatter`` ...), the ``*_copy`` form of
each view op and ``slice_inverse`` (PyTorch's functionalization ops): composites written in
ember ops."""
from ..._ops.overload import ops
from ..registration import register
from ..rules import check_failed

_aten = ops.aten


def _scatter_into(self, src, view):
    """A copy of self with ``view(copy)`` overwritten by src (shapes must match exactly)."""
    out = _aten.clone.default._call(self, None)
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    _aten.copy_.default._call(target, src, False)
    return out


def select_scatter(self, src, dim, index):
    return _scatter_into(self, src, lambda t: _aten.select.int._call(t, dim, index))


def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    return _scatter_into(self, src, lambda t: _aten.slice.Tensor._call(t, dim, start, end, step))


def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(self, src,
                         lambda t: _aten.diagonal.default._call(t, offset, dim1, dim2))


def as_strided_scatter(self, src, size, stride, storage_offset=None):
    return _scatter_into(self, src, lambda t: _aten.as_strided.default._call(
        t, size, stride, storage_offset))


# view-copy op -> the view overload it copies (PyTorch's functionalization "*_copy" ops)
_VIEW_COPIES = {
    "alias_copy": "alias.default", "as_strided_copy": "as_strided.default",
    "detach_copy": "detach.default", "diagonal_copy": "diagonal.default",
    "expand_copy": "expand.default",
    "permute_copy": "permute.default", "select_copy.int": "select.int",
    "slice_copy.Tensor": "slice.Tensor", "split_copy.Tensor": "split.Tensor",
    "split_with_sizes_copy": "split_with_sizes.default", "squeeze_copy": "squeeze.default",
    "squeeze_copy.dim": "squeeze.dim", "squeeze_copy.dims": "squeeze.dims",
    "t_copy": "t.default", "transpose_copy.int": "transpose.int",
    "unbind_copy.int": "unbind.int", "unfold_copy": "unfold.default",
    "unsqueeze_copy": "unsqueeze.default",
    "view_copy": "reshape.default",  # takes any strides, as PyTorch's: the copy needs no view
    "view_copy.dtype": "view.dtype", "view_as_real_copy": "view_as_real.default",
    "view_as_complex_copy": "view_as_complex.default",
}


def _view_copy(view):
    name, _, overload = view.partition(".")

    def kernel(*args):
        from ..._core.device import contiguous_format
        res = getattr(getattr(_aten, name), overload)._call(*args)
        clone = _aten.clone.default._call
        if isinstance(res, (list, tuple)):
            return [clone(r, contiguous_format) for r in res]
        return clone(res, contiguous_format)
    return kernel


# CompositeExplicitAutogradNonFunctional, as in PyTorch: a traced graph (make_fx of
# functionalize(f, remove="mutations_and_views")) records the copy op itself; autograd uses the
# view op's formula (ember.autograd.derivatives) and vmap decomposes it (ember._functorch).
for _op, _view in _VIEW_COPIES.items():
    register(_op, "CompositeExplicitAutogradNonFunctional", _view_copy(_view))

_narrow_copy = _view_copy("narrow.default")


def narrow_copy(self, dim, start, length):
    """narrow's copy; ATen's narrow_copy_dense_cpu checks a non-negative dim with TORCH_CHECK
    (RuntimeError) before narrow's own checks (IndexError for a negative one)."""
    if self.dim() > 0 and dim >= self.dim():
        raise RuntimeError(check_failed("dim < static_cast<int64_t>(self_sizes.size())"))
    return _narrow_copy(self, dim, start, length)


register("narrow_copy", "CompositeImplicitAutograd", narrow_copy)


# The copies of a sparse tensor's parts: PyTorch's CompositeExplicitAutogradNonFunctional
# kernels, which its dispatcher runs for dense and CSR tensors but not for COO ones (so
# values_copy of a COO tensor is "Could not run ... 'SparseCPU' backend" there too).
for _part in ("values", "indices", "crow_indices", "col_indices", "ccol_indices", "row_indices"):
    for _key in ("CompositeExplicitAutogradNonFunctional", "SparseCsrCPU", "SparseCsrCUDA"):
        register(f"{_part}_copy", _key, _view_copy(f"{_part}.default"))


def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """The view of ``self``'s storage that ``src`` is when ``self`` is ``src``'s slice (the
    inverse functionalization replays): ``self`` with ``src``'s sizes, strides and offset."""
    return _aten.as_strided.default._call(self, src._size, src._stride, src._offset)

"""``BatchedTensor``: a tensor seen one sample at a time inside ``vmap``.

A BatchedTensor wraps a ``value`` (a plain tensor, or a BatchedTensor of a lower level) holding
the whole batch along ``bdim``; its own sizes and strides are the value's without that dim (the
*logical* tensor the vmapped function sees). Its key set has FuncTorchBatched, which sorts above
Autograd, so every operator on it reaches the batching kernels (ember._functorch.batching);
these call operators on the values, so autograd records its graph on the physical tensors and
per-sample gradients come from ordinary reverse mode.

The BatchedTensor itself has no storage of its own to read: ``.item()``, ``.tolist()``,
``.numpy()`` and data-dependent Python control flow raise PyTorch's vmap errors.
"""
from .._dispatch.keys import K, bit
from .._tensor import Tensor, _PYTHON_KEYS
from .wrapper_tensor import WrapperTensor, new_wrapper

_BATCHED = bit(K.FuncTorchBatched)


class BatchedTensor(WrapperTensor):
    __slots__ = ("_bdim",)

    def backward(self, *args, **kwargs):
        raise RuntimeError("vmap: It looks like you're calling .backward() on a Tensor inside "
                           "vmap. Use ember.func.grad or ember.func.vjp inside vmap instead.")

    # -- no data to look at ------------------------------------------------------------------
    def _nd(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def numpy(self, *, force=False):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __bool__(self):
        raise_data_dependent()

    def __repr__(self, *, tensor_contents=None):
        inner = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n    {inner}\n)"


def raise_item():
    raise RuntimeError(
        "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
        "calling .item() on a Tensor, please try to rewrite what you're doing with other "
        "operations. If error is occurring somewhere inside PyTorch internals, please file a "
        "bug report.")


def raise_data_dependent():
    raise RuntimeError(
        "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
        "flow. We don't support that yet, please file an issue at "
        "https://github.com/pytorch/pytorch/issues .")


def make_batched(value, bdim, level):
    """Wrap ``value`` (batch along ``bdim``) as a BatchedTensor of ``level``."""
    t = new_wrapper(BatchedTensor, level)
    _set_value(t, value, bdim)
    return t


def _set_value(t, value, bdim):
    """(Re)point ``t`` at ``value``; its logical metadata follows (in-place view ops use this)."""
    size, stride = value._size, value._stride
    t._value = value
    t._bdim = bdim
    t._size = size[:bdim] + size[bdim + 1:]
    t._stride = stride[:bdim] + stride[bdim + 1:]
    t._offset = value._offset
    t._storage_ = value._storage_
    t._dtype = value._dtype
    t._device = value._device
    t._keyset = (value._keyset & ~_PYTHON_KEYS) | _BATCHED
    t._vc = value._vc


def is_batchedtensor(x):
    """Whether ``x`` is batched at any level (``torch._C._functorch.is_batchedtensor``)."""
    return x.__class__ is BatchedTensor


def is_batched_at(x, level):
    return x.__class__ is BatchedTensor and x._level == level


def unwrap(x, level):
    """(value, bdim) of ``x`` at ``level``, or (x, None) when it is not batched there."""
    if x.__class__ is BatchedTensor and x._level == level:
        return x._value, x._bdim
    return x, None


def maybe_level(x):
    return x._level if x.__class__ is BatchedTensor else 0


def physical(x):
    """The innermost plain tensor under all batching levels."""
    while x.__class__ is BatchedTensor:
        x = x._value
    return x


def wrap_like(template, phys):
    """``phys`` (shaped like ``physical(template)``) wrapped in ``template``'s levels and dims."""
    chain = []
    t = template
    while t.__class__ is BatchedTensor:
        chain.append((t._bdim, t._level))
        t = t._value
    for bdim, level in reversed(chain):
        phys = make_batched(phys, bdim, level)
    return phys

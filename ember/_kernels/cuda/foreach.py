"""CUDA kernels of the multi-tensor ("foreach") ops the optimizers and ``clip_grad_norm_`` call:
one launch of ``csrc/foreach.cu`` updates a whole list (PyTorch's ``multi_tensor_apply``) where the
CPU kernel bodies on device arrays make several CuPy launches and temporaries per tensor.

The kernels serve lists of contiguous float32 or float64 CUDA tensors of one dtype on one GPU
whose partner lists match them element for element — what an optimizer's parameter group is.
Anything else (other dtypes, layouts or devices, broadcasting, the simulated device) takes the
path it took before: ``NeedsHost``, so the CPU foreach kernel on device arrays (``shared.py``,
whose slow path gives the single ops' dtype rules and errors), or for ``_foreach_mul_`` the
pointwise kernel per tensor, and for the functional ops their composite definitions. Arguments are
checked by the shared foreach rules first, so both paths raise the same errors.
"""
import math

import numpy as np

from ..._core import dtype as D
from ..._core.tensor_impl import empty_tensor, make_tensor
from ..composite import foreach as _composite
from ..rules.foreach import _check_lengths, check_scalar_list, check_scalar_tensor, \
    foreach_norm_check
from . import pointwise as _pointwise
from .arrays import NeedsHost, launch, runtime
from .fused import _kernel, pointer

_SUFFIX = {D.float32: "f32", D.float64: "f64"}
# csrc/foreach.cu's ForeachOp
(ADD_SCALAR, ADD_LIST, MUL_SCALAR, MUL_DEVICE, MUL_LIST, DIV_SCALAR, LERP, ADDCMUL, ADDCDIV,
 MAXIMUM, CLAMP_MIN, CLAMP_MAX, SQRT) = range(13)
_ROW = np.dtype([("self", np.uint64), ("other1", np.uint64), ("other2", np.uint64),
                 ("out", np.uint64), ("n", np.int64), ("scalar", np.float64)])
_CHUNK = 16384  # elements per block: 64 per thread
_BLOCK = 256


def _eligible(*lists):
    """The kernel suffix when every tensor of ``lists`` is a contiguous, non-empty CUDA tensor
    of the first one's float32/float64 dtype on its device, the device is a GPU, and the lists'
    i-th tensors have the same number of elements; else decline."""
    first = lists[0][0]
    dt, dev = first._dtype, first._device
    sfx = _SUFFIX.get(dt)
    if sfx is None or dev.type != "cuda" or runtime().simulated:
        raise NeedsHost("no multi-tensor kernel for this dtype or device")
    for group in zip(*lists):
        n = group[0].numel()
        for t in group:
            if t._dtype is not dt or t._device != dev or t.numel() != n or not n or \
                    not t.is_contiguous():
                raise NeedsHost("a multi-tensor kernel needs matching contiguous tensors")
    return sfx


def _table(xp, rt, rows):
    """The rows (tuples of _ROW's fields) in device memory. While the stream captures a CUDA
    graph, the copy is captured too (CuPy refuses one from pageable memory then): from pinned
    memory that the graph keeps, which each replay copies again — the same rows, since a replay
    finds its tensors at the captured addresses."""
    from ...cuda import _host_allocator, graphs
    host = np.array(rows, dtype=_ROW).view(np.uint8)
    stream = xp.cuda.get_current_stream().ptr
    graph = graphs.capturing_graph(stream)
    if graph is None:
        return xp.asarray(host)
    pinned = _host_allocator.allocate(host.nbytes)
    pinned[:] = host
    table = xp.empty(host.nbytes, np.uint8)
    rt.memcpy_htod(table.data.ptr, pinned, stream, pinned=True)
    graph.keep_alive(pinned)
    return table


def _addr(t):
    return int(pointer(t)) if t is not None else 0


def _apply(op, selves, others1=None, others2=None, outs=None, scalars=None, alpha=0.0,
           device_scalar=None):
    """One ``foreach_apply`` launch over the lists (``scalars``: one per tensor, or None;
    ``device_scalar``: the 0-dim tensor every row's ``other1`` reads)."""
    sfx = _eligible(*[x for x in (selves, others1, others2, outs) if x is not None])
    if device_scalar is not None:
        others1 = [device_scalar] * len(selves)
    rows = [(_addr(t), _addr(others1[i]) if others1 is not None else 0,
             _addr(others2[i]) if others2 is not None else 0,
             _addr(outs[i]) if outs is not None else 0,
             t.numel(), float(scalars[i]) if scalars is not None else 0.0)
            for i, t in enumerate(selves)]
    chunks = max(math.ceil(t.numel() / _CHUNK) for t in selves)

    def body(xp, rt):
        _kernel("foreach.cu", f"foreach_apply_{sfx}")(
            (chunks, len(rows)), (_BLOCK,),
            (_table(xp, rt, rows), np.int32(op), np.float64(alpha), np.int64(_CHUNK)))
    launch(selves[0]._device, body)


# --- in place (below ADInplaceOrView, which bumps each tensor's version once, as PyTorch)

def _foreach_add__Scalar(self, scalar):
    _check_lengths(self)
    _real(scalar)
    _apply(ADD_SCALAR, self, scalars=[scalar] * len(self))


def _foreach_add__List(self, other, alpha=1):
    _check_lengths(self, other)
    _real(alpha)
    _apply(ADD_LIST, self, other, alpha=float(alpha))


def _foreach_mul__Scalar(self, scalar):
    _check_lengths(self)
    try:
        _real(scalar)
        _apply(MUL_SCALAR, self, scalars=[scalar] * len(self))
    except NeedsHost:
        _pointwise._foreach_mul_(self, scalar)


def _foreach_mul__Tensor(self, other):
    """By a 0-dim tensor of the list's dtype on its device, read there: no synchronisation
    (``clip_grad_norm_`` scales by the norm it has just computed)."""
    _check_lengths(self)
    check_scalar_tensor(other)
    try:
        if other._dtype is not self[0]._dtype or other._device != self[0]._device:
            raise NeedsHost("a scalar tensor of another dtype or device")
        _apply(MUL_DEVICE, self, device_scalar=other)
    except NeedsHost:
        _pointwise._foreach_mul_(self, other)


def _foreach_mul__List(self, other):
    _check_lengths(self, other)
    _apply(MUL_LIST, self, other)


def _foreach_div__ScalarList(self, scalars):
    _check_lengths(self)
    check_scalar_list(self, scalars)
    for s in scalars:
        _real(s)
    _apply(DIV_SCALAR, self, scalars=scalars)


def _foreach_lerp__Scalar(self, tensors1, weight):
    _check_lengths(self, tensors1)
    _real(weight)
    _apply(LERP, self, tensors1, alpha=float(weight))


def _foreach_addcmul__Scalar(self, tensor1, tensor2, value=1):
    _check_lengths(self, tensor1, tensor2)
    _real(value)
    _apply(ADDCMUL, self, tensor1, tensor2, scalars=[value] * len(self))


def _foreach_addcdiv__ScalarList(self, tensor1, tensor2, scalars):
    _check_lengths(self, tensor1, tensor2)
    check_scalar_list(self, scalars)
    for s in scalars:
        _real(s)
    _apply(ADDCDIV, self, tensor1, tensor2, scalars=scalars)


def _foreach_maximum__List(self, other):
    _check_lengths(self, other)
    _apply(MAXIMUM, self, other)


def _foreach_clamp_min__Scalar(self, scalar):
    _check_lengths(self)
    _real(scalar)
    _apply(CLAMP_MIN, self, scalars=[scalar] * len(self))


def _foreach_clamp_max__Scalar(self, scalar):
    _check_lengths(self)
    _real(scalar)
    _apply(CLAMP_MAX, self, scalars=[scalar] * len(self))


def _real(number):
    """Scalars the kernels take: real numbers (a complex one, or a tensor, goes the other way)."""
    if isinstance(number, (complex, np.complexfloating)) or not isinstance(
            number, (int, float, np.number)):
        raise NeedsHost("a scalar the multi-tensor kernels do not take")


# --- functional

def _foreach_sqrt(self):
    _check_lengths(self)
    try:
        _eligible(self)
    except NeedsHost:
        return _composite.FUNCTIONAL["_foreach_sqrt"](self)
    outs = [empty_tensor(t._size, t._dtype, t._device) for t in self]
    _apply(SQRT, self, outs=outs)
    return tuple(outs)


def _foreach_norm_Scalar(self, ord=2, dtype=None):  # noqa: A002 (PyTorch's name)
    """ord 2 in two launches: each chunk's sum of squares, then each tensor's chunks added in a
    fixed order and its square root; the norms are 0-dim tensors over one buffer."""
    foreach_norm_check(self, ord)
    try:
        sfx = _eligible(self)
        if ord != 2 or (dtype is not None and dtype is not self[0]._dtype):
            raise NeedsHost("a norm other than the 2-norm in the list's dtype")
    except NeedsHost:
        return _composite._foreach_norm_Scalar(self, ord, dtype)
    dt, dev = self[0]._dtype, self[0]._device
    counts = [math.ceil(t.numel() / _CHUNK) for t in self]
    firsts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    norms = empty_tensor((len(self),), dt, dev)
    partial = empty_tensor((int(sum(counts)),), dt, dev)
    base = _addr(norms)
    rows = [(_addr(t), 0, 0, base + i * dt.itemsize, t.numel(), float(firsts[i]))
            for i, t in enumerate(self)]

    def body(xp, rt):
        table = _table(xp, rt, rows)
        _kernel("foreach.cu", f"foreach_sumsq_partials_{sfx}")(
            (max(counts), len(rows)), (_BLOCK,), (table, pointer(partial), np.int64(_CHUNK)))
        _kernel("foreach.cu", f"foreach_norm_finish_{sfx}")(
            (len(rows),), (_BLOCK,), (table, pointer(partial), np.int64(_CHUNK)))
    launch(dev, body)
    return tuple(make_tensor(norms._storage, (), (), i, dt, dev) for i in range(len(self)))


def kernel_names():
    return [f"{k}_{sfx}" for sfx in _SUFFIX.values()
            for k in ("foreach_apply", "foreach_sumsq_partials", "foreach_norm_finish")]


def kernels():
    return {"_foreach_add_.Scalar": _foreach_add__Scalar,
            "_foreach_add_.List": _foreach_add__List,
            "_foreach_mul_.Scalar": _foreach_mul__Scalar,
            "_foreach_mul_.Tensor": _foreach_mul__Tensor,
            "_foreach_mul_.List": _foreach_mul__List,
            "_foreach_div_.ScalarList": _foreach_div__ScalarList,
            "_foreach_lerp_.Scalar": _foreach_lerp__Scalar,
            "_foreach_addcmul_.Scalar": _foreach_addcmul__Scalar,
            "_foreach_addcdiv_.ScalarList": _foreach_addcdiv__ScalarList,
            "_foreach_maximum_.List": _foreach_maximum__List,
            "_foreach_clamp_min_.Scalar": _foreach_clamp_min__Scalar,
            "_foreach_clamp_max_.Scalar": _foreach_clamp_max__Scalar,
            "_foreach_sqrt": _foreach_sqrt,
            "_foreach_norm.Scalar": _foreach_norm_Scalar}

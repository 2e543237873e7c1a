"""Helper functions that ``derivatives.yaml`` formulas call (PyTorch's
``torch/csrc/autograd/FunctionsManual.cpp``, same names), written in ember ops only so that a
backward pass is itself differentiable (double backward).

Formulas are evaluated with :data:`NAMESPACE` as globals: every public ``ember`` function plus
these helpers. Broadcasting is not handled here: the engine sums each gradient down to its
input's shape (``validate_outputs``), as PyTorch's engine does.
"""
import math

import ember

from .._core import strides as _st
from .._kernels.rules import linalg as _linalg_rules
from .._ops.bindings import python_modules
from .._ops.overload import ops
from .engine import sum_to

_aten = ops.aten  # ops resolve when called: the op table is built after the kernels load

__all__ = []

M_PI = math.pi
M_LN2 = math.log(2.0)


def _is_number(x):
    return not hasattr(x, "_keyset")


def takes_undefined_grads(fn):
    """Marks a helper that, as its PyTorch counterpart, takes None for the gradient of an output
    that was not used (PyTorch passes an undefined tensor) and leaves that output's term out.
    A node whose formulas all call such helpers gets None, not zeros (see derivatives.py): a
    zero still multiplies the term's other factors, and 0 * inf is NaN (svd's
    1 / (s_j^2 - s_i^2) at repeated singular values, var's 2 / (n - correction) at n == 1)."""
    fn.takes_undefined_grads = True
    return fn


def zeros_from_meta(meta):
    shape, dtype, device = meta
    return ember.zeros(shape, dtype=dtype, device=device)


def _conj(x):
    """``x.conj()`` for tensors (a no-op on real ones); Python numbers pass through (a complex
    Python number is conjugated too)."""
    if _is_number(x):
        return x.conjugate()
    # Tensor::conj() returns a real tensor itself without a dispatcher call; so does this
    return x.conj() if x._dtype.is_complex else x


def maybe_multiply(grad, s):
    return grad if (_is_number(s) and s == 1) else grad * s


def handle_r_to_c(self_dtype, grad):
    if not (self_dtype.is_complex) and grad._dtype.is_complex:
        return ember.real(grad)
    return grad


def mul_tensor_backward(grad, other, self_dtype):
    return handle_r_to_c(self_dtype, grad * _conj(other))


def div_tensor_self_backward(grad, other, self_dtype, rounding_mode=None):
    if rounding_mode is not None:
        return ember.zeros_like(grad)
    return handle_r_to_c(self_dtype, grad / _conj(other))


def div_tensor_other_backward(grad, self, other, rounding_mode=None):
    if rounding_mode is not None:
        return ember.zeros_like(grad)
    return -grad * _conj((self / other) / other)


def pow_backward(grad, self, exponent):
    if exponent == 0.0:
        return ember.zeros_like(self)
    return grad * _conj(exponent * self.pow(exponent - 1))


def pow_backward_self(grad, self, exponent):
    g = grad * _conj(exponent * self.pow(exponent - 1))
    return ember.where(exponent == 0.0, ember.zeros_like(g), g)


def pow_backward_exponent(grad, self, exponent, result):
    if _is_number(self):
        if self == 0.0:
            return ember.where(exponent >= 0, ember.zeros_like(grad), grad * (result * math.log(self)
                                                                    if self > 0 else math.nan))
        return grad * _conj(result * math.log(self))
    cond = (self == 0) & (exponent >= 0)
    g = grad * _conj(result * ember.log(self))
    return ember.where(cond, ember.zeros_like(g), g)


def unsqueeze_multiple(t, dims, ndim):
    dims = sorted(d % ndim for d in dims)
    for d in dims:
        t = t.unsqueeze(d)
    return t


def _reduced_dims(dims, ndim):
    if dims is None or (not _is_number(dims) and len(dims) == 0):
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return [d % ndim if ndim else 0 for d in dims]


def sum_backward(grad, sizes, dims, keepdim):
    ndim = len(sizes)
    if not keepdim and ndim > 0:
        dims = _reduced_dims(dims, ndim)
        grad = unsqueeze_multiple(grad, dims, ndim)
    return grad.expand(sizes)


def mean_backward(grad, sizes, dims, numel, keepdim):
    ndim = len(sizes)
    rdims = _reduced_dims(dims, ndim)
    n = 1
    for d in rdims:
        n *= sizes[d] if ndim else 1
    if dims is None or len(dims) == 0:
        n = numel
    return sum_backward(grad, sizes, dims, keepdim) / n


def evenly_distribute_backward(grad, input, value):
    mask = (input == value)
    if input._dtype.is_floating_point and bool(value != value):
        mask = input != input  # the max of a tensor holding NaN is NaN: spread over the NaNs
    count = mask.sum()
    return mask * (grad / count)


def value_selecting_reduction_backward(grad, dim, indices, sizes, keepdim):
    ndim = len(sizes)
    if ndim == 0:
        return grad
    dim = dim % ndim
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    # one-hot along ``dim``: positions equal to the selected index get the gradient
    shape = [1] * ndim
    shape[dim] = sizes[dim]
    pos = ember.arange(sizes[dim], device=grad._device).view(shape)
    return ember.where(pos == indices, grad, ember.zeros((), dtype=grad._dtype, device=grad._device))


def _column_major(sizes, strides):
    return sizes is not None and len(strides) == 2 and strides[0] == 1 and strides[1] == sizes[0]


def mm_mat1_backward(grad, mat2, alpha=1, sizes=None, strides=None):
    # a column-major input (a transposed weight) gets its gradient column-major too, so that
    # AccumulateGrad can keep it without copying it into the parameter's layout (as PyTorch)
    if _column_major(sizes, strides):
        return maybe_multiply(mat2.conj().mm(grad.t()).t(), alpha)
    return maybe_multiply(grad.mm(mat2.t().conj()), alpha)


def mm_mat2_backward(grad, mat1, alpha=1, sizes=None, strides=None):
    if _column_major(sizes, strides):
        return maybe_multiply(grad.t().mm(mat1.conj()).t(), alpha)
    return maybe_multiply(mat1.t().conj().mm(grad), alpha)


def grouped_mm_mat1_backward(grad, mat2, sizes, strides, offs):
    # the gradient of each group is a grouped product too; a column-major input gets its
    # gradient column-major (as mm_mat1_backward), which also keeps it within the product's
    # stride rules
    if _linalg_rules.grouped_mm_is_transposed(sizes, strides):
        return ember._grouped_mm(mat2, grad.transpose(-2, -1), offs=offs).transpose(-2, -1)
    return ember._grouped_mm(grad, mat2.transpose(-2, -1), offs=offs)


def grouped_mm_mat2_backward(grad, mat1, sizes, strides, offs):
    if _linalg_rules.grouped_mm_is_transposed(sizes, strides):
        return ember._grouped_mm(grad.transpose(-2, -1), mat1, offs=offs).transpose(-2, -1)
    return ember._grouped_mm(mat1.transpose(-2, -1), grad, offs=offs)


def restore_reduced_dims(t, dims, keepdim):
    if keepdim:
        return t
    ndim = t.dim() + len(dims)
    return unsqueeze_multiple(t, dims, ndim) if dims else t


def scale_grad_by_count(grad, mask, dims):
    return (grad / mask.sum(list(dims), keepdim=True)) * mask


def amax_amin_backward(grad, self, result, dims, keepdim):
    dims = _reduced_dims(dims, self.dim())
    mask = restore_reduced_dims(result, dims, keepdim) == self
    return scale_grad_by_count(restore_reduced_dims(grad, dims, keepdim), mask, dims)


def permute_backwards(grad, dims):
    ndim = len(dims)
    inv = [0] * ndim
    for i, d in enumerate(dims):
        inv[d % ndim] = i
    return grad.permute(inv)


def unsqueeze_to(grad, dims, sizes):
    """Undo a squeeze: re-insert the size-1 dims that were squeezed away."""
    ndim = len(sizes)
    if dims is None:
        dims = [i for i, s in enumerate(sizes) if s == 1]
    elif isinstance(dims, int):
        dims = [dims]
    for d in sorted(d % ndim if ndim else 0 for d in dims):
        if ndim and sizes[d] == 1:
            grad = grad.unsqueeze(d)
    return grad.reshape(sizes)


def _zeros_new(grad, sizes):
    # grad.new_zeros, not zeros(): under vmap (a batched cotangent, as jacrev's) the zeros
    # must be batched like grad for the copy_ into them
    return grad.new_zeros(sizes)


def select_backward(grad, sizes, dim, index):
    g = _zeros_new(grad, sizes)
    _aten.select.int(g, dim, index).copy_(grad)
    return g


def slice_backward(grad, sizes, dim, start, end, step):
    g = _zeros_new(grad, sizes)
    _aten.slice.Tensor(g, dim, start, end, step).copy_(grad)
    return g


def slice_of(grad, dim, start, end, step):
    """``grad.slice(dim, start, end, step)`` (ATen's C++ method; no Tensor method in Python)."""
    return _aten.slice.Tensor(grad, dim, start, end, step)


def diagonal_backward(grad, sizes, offset, dim1, dim2):
    g = _zeros_new(grad, sizes)
    g.diagonal(offset, dim1, dim2).copy_(grad)
    return g


def split_backward(grads, split_sizes, dim, sizes, dtype, device):
    """Each piece's gradient goes to its slice of a zero gradient (missing pieces stay 0)."""
    some = next((p for p in grads if p is not None), None)
    g = (some.new_zeros(sizes, dtype=dtype, device=device) if some is not None else
         ember.zeros(sizes, dtype=dtype, device=device))  # batched like the grads under vmap
    dim = dim % len(sizes)
    start = 0
    for piece, n in zip(grads, split_sizes):
        if piece is not None:
            g.narrow(dim, start, n).copy_(piece)
        start += n
    return g


def split_sizes_of(split_size, sizes, dim):
    n = sizes[dim % len(sizes)]
    out = []
    while n > 0:
        out.append(min(split_size, n))
        n -= split_size
    return out or [0]


def unbind_backward(grads, dim, sizes, dtype, device):
    some = next((p for p in grads if p is not None), None)
    g = (some.new_zeros(sizes, dtype=dtype, device=device) if some is not None else
         ember.zeros(sizes, dtype=dtype, device=device))  # batched like the grads under vmap
    dim = dim % len(sizes)
    for i, piece in enumerate(grads):
        if piece is not None:
            _aten.select.int(g, dim, i).copy_(piece)
    return g


def unfold_backward(grad, sizes, dim, size, step):
    """Each window element adds back into its source position (windows may overlap)."""
    g = _zeros_new(grad, sizes)
    nwin = grad.size(dim)
    ndim = len(sizes)
    d = dim % ndim if ndim else 0
    for w in range(nwin):
        piece = grad.select(d, w).movedim(-1, d) if ndim else grad.select(0, w)
        tgt = g.narrow(d, w * step, size) if ndim else g
        tgt.add_(piece)
    return g


def as_strided_backward(grad, in_size, in_stride, in_offset, size, stride, storage_offset):
    """Scatter ``grad`` back through an ``as_strided`` view, relative to the input's storage.
    Where the output's elements overlap (several read one memory location) their gradients are
    summed; where the input's do, each location's gradient is shared among the input elements
    reading it (PyTorch's ``as_strided_backward``)."""
    offset = in_offset if storage_offset is None else storage_offset
    extent = max(_st.storage_extent(in_size, in_stride, in_offset),
                 _st.storage_extent(size, stride, offset))
    flat = ember.zeros((extent,), dtype=grad._dtype, device=grad._device)
    if _maybe_overlapping(size, stride):
        flat.index_put_((_storage_indices(size, stride, offset, grad._device),),
                        grad.reshape(-1), accumulate=True)
    else:
        flat.as_strided(size, stride, offset).copy_(grad)
    if _maybe_overlapping(in_size, in_stride):
        count = ember.zeros((extent,), dtype=grad._dtype, device=grad._device)
        count.index_put_((_storage_indices(in_size, in_stride, in_offset, grad._device),),
                         ember.ones((_st.numel(in_size),), dtype=grad._dtype, device=grad._device),
                         accumulate=True)
        flat = flat / count.clamp_min(1)
    return flat.as_strided(in_size, in_stride, in_offset)


def _maybe_overlapping(size, stride):
    """Whether two elements of this geometry can share a memory location: sorted by stride,
    each dimension must step past everything the smaller ones reach."""
    reach = 0
    for st, n in sorted((st, n) for n, st in zip(size, stride) if n > 1):
        if st <= reach:
            return True
        reach += (n - 1) * st
    return False


def _storage_indices(size, stride, offset, device):
    """The storage index of every element of a strided geometry, flattened."""
    idx = ember.full((), offset, dtype=ember.int64, device=device)
    for n, st in zip(size, stride):
        idx = idx.unsqueeze(-1) + ember.arange(n, dtype=ember.int64, device=device) * st
    return idx.reshape(-1)


def to_copy_backward(grad, dtype, device):
    if grad._dtype.is_complex and not dtype.is_complex:
        grad = ember.real(grad)
    return grad.to(dtype=dtype, device=device)


def sigmoid_backward(grad, result):
    return ember.ops.aten.sigmoid_backward.default(grad, result)  # an op, as in PyTorch's graphs


def tanh_backward(grad, result):
    return ember.ops.aten.tanh_backward.default(grad, result)


def threshold_backward(grad, self, threshold):
    return ember.ops.aten.threshold_backward.default(grad, self, threshold)  # one op, as PyTorch


def clamp_backward(grad, self, min, max):
    zero = ember.zeros((), dtype=grad._dtype, device=grad._device)
    if min is not None and max is not None:
        return ember.where((self >= min) & (self <= max), grad, zero)
    if min is not None:
        return ember.where(self >= min, grad, zero)
    if max is not None:
        return ember.where(self <= max, grad, zero)
    return grad


def where_self_backward(condition, grad):
    return ember.where(condition, grad, ember.zeros((), dtype=grad._dtype, device=grad._device))


def where_other_backward(condition, grad):
    return ember.where(condition, ember.zeros((), dtype=grad._dtype, device=grad._device), grad)


def masked_fill_backward(grad, mask):
    return grad.masked_select(mask).sum() if hasattr(grad, "masked_select") else (grad * mask).sum()


def cat_tensors_backward(grad, sizes_list, dim):
    out = []
    start = 0
    ndim = grad.dim()
    for sizes in sizes_list:
        if len(sizes) == 1 and sizes[0] == 0 and ndim != 1:
            out.append(None)  # legacy empty tensor in cat: no gradient
            continue
        d = dim % ndim
        n = sizes[d]
        out.append(grad.narrow(d, start, n))
        start += n
    return out


def stack_tensors_backward(grad, dim, dtypes):
    """``dtypes``: the inputs' dtypes (what PyTorch's StackBackward saves instead of the inputs);
    the engine casts each slice to its input's dtype."""
    return list(grad.unbind(dim % grad.dim()))


def clamp_backward_min_max(grad, self, min, max, grad_input_mask):
    """Gradients of clamp's tensor bounds: a bound gets the gradient where it was the result."""
    zero = ember.zeros((), dtype=grad._dtype, device=grad._device)
    gmin = gmax = None
    if min is not None and max is not None:
        if grad_input_mask[0]:
            gmin = ember.where((self < min).logical_and(min < max), grad, zero)
        if grad_input_mask[1]:
            gmax = ember.where((self > max).logical_or(max < min), grad, zero)
    elif min is not None and grad_input_mask[0]:
        gmin = ember.where(self < min, grad, zero)
    elif max is not None and grad_input_mask[1]:
        gmax = ember.where(self > max, grad, zero)
    return gmin, gmax


def var_backward(grad, self, dim, correction, keepdim):
    ndim = self.dim()
    dims = _reduced_dims(dim, ndim)
    n = 1
    for d in dims:
        n *= self._size[d] if ndim else 1
    c = 1 if correction is None else correction
    if not keepdim and ndim:
        grad = unsqueeze_multiple(grad, dims, ndim)
    mean = self.mean(dims, keepdim=True) if ndim else self
    # a double division, as in PyTorch: no degrees of freedom left gives inf (not an error)
    factor = 2.0 / (n - c) if n != c else math.inf
    return factor * grad * (self - mean)


def std_backward(result, grad, self, dim, correction, keepdim):
    # where the std is 0 the gradient is 0, not nan (PyTorch masks it the same way)
    return var_backward((grad / (result * 2)).masked_fill(result == 0, 0), self, dim, correction,
                        keepdim)


def expand_backward(grad, sizes):
    return sum_to(grad, sizes)


def prod_backward(grad, self, result, dim, keepdim):
    """d prod / d x_i = product of the other elements: result / x_i without zeros; with one zero
    in a slice only that position gets a gradient; with two or more, none does."""
    if dim is None:
        self_flat = self.reshape(-1)
        g = prod_backward(grad.reshape(1), self_flat, result.reshape(1), 0, True)
        return g.reshape(self.shape)
    if not keepdim and self.dim():
        grad = grad.unsqueeze(dim)
        result = result.unsqueeze(dim)
    is_zero = self == 0
    n_zero = is_zero.sum(dim, keepdim=True)
    others = ember.where(is_zero, ember.ones((), dtype=self._dtype), self).prod(dim, keepdim=True)
    zero = ember.zeros((), dtype=self._dtype)
    at_zero = ember.where(n_zero == 1, others, zero)
    safe = ember.where(is_zero, ember.ones((), dtype=self._dtype), self)
    return grad * ember.where(is_zero, at_zero, ember.where(n_zero == 0, result / safe, zero))


def index_backward(grad, sizes, indices):
    g = _zeros_new(grad, sizes)
    return g.index_put(indices, grad, True)


def _namespace():
    ns = {k: getattr(ember, k) for k in dir(ember) if not k.startswith("__")}
    # ops PyTorch binds under torch._C._nn / _linalg / _fft / _special are named bare in formulas
    for fns in python_modules.values():
        ns.update(fns)
    ns.update({k: v for k, v in globals().items() if not k.startswith("_") and callable(v)})
    ns.update(M_PI=M_PI, M_LN2=M_LN2, math=math, sum_to=expand_backward, ops=ops)
    return ns


# Globals for formula evaluation, filled on first use (ember is fully imported by then).
NAMESPACE = {}


def ensure_namespace():
    if not NAMESPACE:
        NAMESPACE.update(_namespace())


# nn.functional helpers (ember/autograd/_formulas_nn.py)
from ._formulas_nn import *  # noqa: E402,F401,F403

from ._formulas_shape import *  # noqa: E402,F401,F403  (shape/indexing/linalg helpers)

from ._formulas_pointwise import *  # noqa: E402,F401,F403  (pointwise helpers)

from ._formulas_reduction import *  # noqa: E402,F401,F403  (reduction/scan/sorting helpers)

from ._formulas_conv import *  # noqa: E402,F401,F403  (convolution/pooling/resampling helpers)

from ._formulas_fft import *  # noqa: E402,F401,F403  (FFT helpers)

from ._formulas_api import *  # noqa: E402,F401,F403  (API-surface helpers: renorm)

from ._formulas_special import *  # noqa: E402,F401,F403  (special-function helpers)

from ._formulas_fwd import *  # noqa: E402,F401,F403  (forward-derivative helpers: *_jvp)

from ._formulas_sparse import *  # noqa: E402,F401,F403  (sparse COO helpers)

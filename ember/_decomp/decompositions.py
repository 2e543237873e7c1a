"""The decompositions themselves: each non-core op written with core aten ops.

The formulas are PyTorch's (``torch/_decomp/decompositions.py``, ``torch/_refs``), written
against ember's op surface. Each one is tested against the op it replaces on the OpInfo
samples, values and gradients (``tests/test_decomp.py``).
"""
import math

from .. import ops
from .._core import dtype as _dt
from .._core.promotion import promote_types
from . import register_decomposition

aten = ops.aten


def _default_float():
    return _dt.get_default_dtype()


def _scalar(v, like):
    """A 0-dim tensor holding ``v`` with ``like``'s dtype and device (where's operand)."""
    return aten.scalar_tensor.default(v, dtype=like.dtype, device=like.device)


def _all_dims(x):
    return list(range(x.dim()))


_LOW = (_dt.float16, _dt.bfloat16)


def _opmath(fn):
    """Compute a pointwise decomposition of float16/bfloat16 tensors in float32 and round
    once at the end, as the kernels (and PyTorch's ``pw_cast_for_opmath``) do."""
    def wrapper(*args, **kwargs):
        low = next((a.dtype for a in args if hasattr(a, "dtype") and a.dtype in _LOW), None)
        if low is None:
            return fn(*args, **kwargs)
        args = [aten._to_copy.default(a, dtype=_dt.float32)
                if hasattr(a, "dtype") and a.dtype in _LOW else a for a in args]
        out = fn(*args, **kwargs)
        if isinstance(out, tuple):
            return tuple(o if o is None else aten._to_copy.default(o, dtype=low) for o in out)
        return aten._to_copy.default(out, dtype=low)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _opmath_compute_only(fn):
    """Like :func:`_opmath` but without the final rounding: the function casts its result
    itself (PyTorch's ``compute_only_pw_cast_for_opmath``)."""
    def wrapper(*args, **kwargs):
        args = [aten._to_copy.default(a, dtype=_dt.float32)
                if hasattr(a, "dtype") and a.dtype in _LOW else a for a in args]
        return fn(*args, **kwargs)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ---------------------------------------------------------------------------------------------
# views and factories

@register_decomposition(aten.t.default)
def t(self):
    return aten.permute.default(self, [1, 0]) if self.dim() == 2 else aten.alias.default(self)


@register_decomposition(aten.transpose.int)
def transpose(self, dim0, dim1):
    n = self.dim()
    if n == 0:
        return aten.alias.default(self)
    perm = list(range(n))
    d0, d1 = dim0 % n, dim1 % n
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return aten.permute.default(self, perm)


@register_decomposition(aten.detach.default)
def detach(self):
    return aten.alias.default(self)


@register_decomposition(aten._unsafe_view.default)
def _unsafe_view(self, size):
    return aten.view.default(self, size)


@register_decomposition(aten.squeeze.default)
def squeeze(self):
    return aten.squeeze.dims(self, [d for d in range(self.dim()) if self.shape[d] == 1])


@register_decomposition(aten.split.Tensor)
def split(self, split_size, dim=0):
    size = self.shape[dim] if self.dim() else 1
    if split_size == 0 and size == 0:
        return [aten.alias.default(self)]
    n = max(1, -(-size // split_size)) if split_size else 1
    sizes = [split_size] * (n - 1) + [size - split_size * (n - 1)]
    return aten.split_with_sizes.default(self, sizes, dim)


@register_decomposition(aten.unbind.int)
def unbind(self, dim=0):
    return [aten.select.int(self, dim, i) for i in range(self.shape[dim])]


def _full(size, value, dtype, device, default):
    return aten.full.default(list(size), value, dtype=dtype if dtype is not None else default,
                             device=device)


@register_decomposition(aten.zeros.default)
def zeros(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(size, 0, dtype, device, _default_float())


@register_decomposition(aten.ones.default)
def ones(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(size, 1, dtype, device, _default_float())


@register_decomposition(aten.zeros_like.default)
def zeros_like(self, *, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    return aten.full_like.default(self, 0, dtype=dtype, device=device)


@register_decomposition(aten.ones_like.default)
def ones_like(self, *, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
    return aten.full_like.default(self, 1, dtype=dtype, device=device)


@register_decomposition(aten.new_zeros.default)
def new_zeros(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(size, 0, dtype, device if device is not None else self.device, self.dtype)


@register_decomposition(aten.new_ones.default)
def new_ones(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(size, 1, dtype, device if device is not None else self.device, self.dtype)


@register_decomposition(aten.new_full.default)
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(size, fill_value, dtype, device if device is not None else self.device,
                 self.dtype)


@register_decomposition(aten.new_empty.default)
def new_empty(self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.empty.memory_format(list(size), dtype=dtype if dtype is not None else self.dtype,
                                    device=device if device is not None else self.device)


@register_decomposition(aten.empty_like.default)
def empty_like(self, *, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    return aten.empty.memory_format(list(self.shape),
                                    dtype=dtype if dtype is not None else self.dtype,
                                    device=device if device is not None else self.device)


@register_decomposition([aten.arange.default, aten.arange.start])
def arange(*args, dtype=None, layout=None, device=None, pin_memory=None):
    start, end = (0, args[0]) if len(args) == 1 else args[:2]
    return aten.arange.start_step(start, end, 1, dtype=dtype, device=device)


def _tri_mask(self, diagonal, upper):
    rows, cols = self.shape[-2], self.shape[-1]
    r = aten.unsqueeze.default(aten.arange.start_step(0, rows, 1, device=self.device), -1)
    c = aten.arange.start_step(0, cols, 1, device=self.device)
    diff = aten.sub.Tensor(c, r)
    return aten.ge.Scalar(diff, diagonal) if upper else aten.le.Scalar(diff, diagonal)


@register_decomposition(aten.tril.default)
def tril(self, diagonal=0):
    return aten.where.self(_tri_mask(self, diagonal, False), self, _scalar(0, self))


@register_decomposition(aten.triu.default)
def triu(self, diagonal=0):
    return aten.where.self(_tri_mask(self, diagonal, True), self, _scalar(0, self))


# ---------------------------------------------------------------------------------------------
# pointwise

@register_decomposition(aten.rsub.Tensor)
def rsub_tensor(self, other, *, alpha=1):
    if not hasattr(other, "dtype"):
        other = _number(other, self)
    return aten.sub.Tensor(other, self, alpha=alpha)


@register_decomposition(aten.rsub.Scalar)
def rsub_scalar(self, other, alpha=1):
    return aten.sub.Tensor(_number(other, self), self, alpha=alpha)


def _number(v, like):
    """A Python number as a 0-dim tensor that promotes as a wrapped number does: a float
    against an integer tensor gives the default float dtype, else ``like``'s dtype wins."""
    if isinstance(v, bool):
        dtype = _dt.bool_
    elif isinstance(v, float) and not like.is_floating_point():
        dtype = _default_float()
    elif isinstance(v, float):
        dtype = like.dtype
    else:
        dtype = like.dtype if like.dtype is not _dt.bool_ else _dt.int64
    return aten.scalar_tensor.default(v, dtype=dtype, device=like.device)


@register_decomposition(aten.addcmul.default)
def addcmul(self, tensor1, tensor2, *, value=1):
    # the result dtype comes from the three tensors; value is cast to it (PyTorch's rule)
    dtype = promote_types(promote_types(self.dtype, tensor1.dtype), tensor2.dtype)
    if not dtype.is_floating_point and not dtype.is_complex:
        value = int(value)
    prod = aten.mul.Tensor(tensor1, tensor2)
    out = aten.add.Tensor(self, prod if value == 1 else aten.mul.Tensor(prod, value))
    return out if out.dtype == dtype else aten._to_copy.default(out, dtype=dtype)


@register_decomposition(aten.addcdiv.default)
def addcdiv(self, tensor1, tensor2, *, value=1):
    q = aten.div.Tensor(tensor1, tensor2)
    return aten.add.Tensor(self, q if value == 1 else aten.mul.Tensor(q, value))


@register_decomposition(aten.masked_fill.Scalar)
def masked_fill_scalar(self, mask, value):
    return aten.where.self(mask, _scalar(value, self), self)


@register_decomposition(aten.masked_fill.Tensor)
def masked_fill_tensor(self, mask, value):
    value = aten._to_copy.default(value, dtype=self.dtype)
    return aten.where.self(mask, value, self)


@register_decomposition(aten.clamp_min.default)
def clamp_min(self, min):
    return aten.clamp.default(self, min, None)


@register_decomposition(aten.clamp_max.default)
def clamp_max(self, max):
    return aten.clamp.default(self, None, max)


@register_decomposition(aten.clamp_min.Tensor)
def clamp_min_tensor(self, min):
    return aten.clamp.Tensor(self, min, None)


@register_decomposition(aten.clamp_max.Tensor)
def clamp_max_tensor(self, max):
    return aten.clamp.Tensor(self, None, max)


@register_decomposition(aten.square.default)
def square(self):
    return aten.pow.Tensor_Scalar(self, 2)


@register_decomposition(aten.frac.default)
def frac(self):
    return aten.sub.Tensor(self, aten.trunc.default(self))


@register_decomposition(aten.relu6.default)
def relu6(self):
    return aten.hardtanh.default(self, 0, 6)


@register_decomposition(aten.hardsigmoid.default)
@_opmath
def hardsigmoid(self):
    # where, not clamp: the gradient is zero at +-3 exactly, as the kernel's
    inner = aten.add.Scalar(aten.div.Scalar(self, 6), 0.5)
    return aten.where.self(aten.le.Scalar(self, -3), _scalar(0, self),
                           aten.where.self(aten.ge.Scalar(self, 3), _scalar(1, self), inner))


@register_decomposition(aten.hardswish.default)
@_opmath
def hardswish(self):
    inner = aten.div.Scalar(aten.mul.Tensor(self, aten.add.Scalar(self, 3)), 6)
    return aten.where.self(aten.le.Scalar(self, -3), _scalar(0, self),
                           aten.where.self(aten.lt.Scalar(self, 3), inner, self))


@register_decomposition(aten.silu.default)
@_opmath
def silu(self):
    return aten.mul.Tensor(self, aten.sigmoid.default(self))


@register_decomposition(aten.mish.default)
@_opmath
def mish(self):
    return aten.mul.Tensor(self, aten.tanh.default(aten.softplus.default(self)))


@register_decomposition(aten.softplus.default)
@_opmath
def softplus(self, beta=1, threshold=20):
    scaled = aten.mul.Scalar(self, beta) if beta != 1 else self
    soft = aten.log1p.default(aten.exp.default(scaled))
    if beta != 1:
        soft = aten.div.Scalar(soft, beta)
    return aten.where.self(aten.gt.Scalar(scaled, threshold), self, soft)


@register_decomposition(aten.lerp.Scalar)
@_opmath
def lerp_scalar(self, end, weight):
    diff = aten.sub.Tensor(end, self)
    if abs(weight) < 0.5:
        return aten.add.Tensor(self, aten.mul.Scalar(diff, weight))
    return aten.sub.Tensor(end, aten.mul.Scalar(diff, 1 - weight))


@register_decomposition(aten.lerp.Tensor)
@_opmath
def lerp_tensor(self, end, weight):
    diff = aten.sub.Tensor(end, self)
    small = aten.lt.Scalar(aten.abs.default(weight), 0.5)
    return aten.where.self(small, aten.add.Tensor(self, aten.mul.Tensor(weight, diff)),
                           aten.sub.Tensor(end, aten.mul.Tensor(
                               diff, aten.sub.Tensor(_scalar(1, weight), weight))))


# ---------------------------------------------------------------------------------------------
# reductions and normalisations

@register_decomposition(aten.sum.default)
def sum_default(self, *, dtype=None):
    return aten.sum.dim_IntList(self, _all_dims(self), False, dtype=dtype)


@register_decomposition(aten.logsumexp.default)
@_opmath
def logsumexp(self, dim, keepdim=False):
    if not self.is_floating_point():
        self = aten._to_copy.default(self, dtype=_default_float())
    if self.numel() == 0:
        return aten.log.default(aten.sum.dim_IntList(aten.exp.default(self), dim, keepdim))
    m = aten.amax.default(self, dim, True)
    m = aten.where.self(aten.isinf.default(m), _scalar(0, m), m)
    s = aten.log.default(aten.sum.dim_IntList(aten.exp.default(aten.sub.Tensor(self, m)),
                                              dim, keepdim))
    if not keepdim:
        m = aten.squeeze.dims(m, [d % max(self.dim(), 1) for d in dim])
    return aten.add.Tensor(s, m)


@register_decomposition(aten.var_mean.correction)
@_opmath
def var_mean(self, dim=None, *, correction=None, keepdim=False):
    return (aten.var.correction(self, dim, correction=correction, keepdim=keepdim),
            aten.mean.dim(self, dim if dim is not None else _all_dims(self), keepdim))


@register_decomposition(aten.std.correction)
@_opmath
def std(self, dim=None, *, correction=None, keepdim=False):
    return aten.sqrt.default(aten.var.correction(self, dim, correction=correction,
                                                 keepdim=keepdim))


@register_decomposition(aten.linalg_vector_norm.default)
def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
    out_dtype = dtype if dtype is not None else self.dtype
    if out_dtype in _LOW:  # accumulate in float32, round once (the kernel's opmath)
        out = linalg_vector_norm(aten._to_copy.default(self, dtype=_dt.float32), ord, dim,
                                 keepdim)
        return aten._to_copy.default(out, dtype=out_dtype)
    x = aten._to_copy.default(self, dtype=dtype) if dtype is not None else self
    dims = list(dim) if dim is not None else _all_dims(x)
    if isinstance(dims, int):
        dims = [dims]
    a = aten.abs.default(x)
    if ord == 0:
        return aten.sum.dim_IntList(aten._to_copy.default(aten.ne.Scalar(x, 0), dtype=x.dtype),
                                    dims, keepdim)
    if ord == math.inf:
        return aten.amax.default(a, dims, keepdim)
    if ord == -math.inf:
        return aten.amin.default(a, dims, keepdim)
    if ord == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(x, x), dims, keepdim))
    if ord == 1:
        return aten.sum.dim_IntList(a, dims, keepdim)
    return aten.pow.Tensor_Scalar(aten.sum.dim_IntList(aten.pow.Tensor_Scalar(a, ord), dims,
                                                       keepdim), 1.0 / ord)


@register_decomposition(aten.mse_loss.default)
def mse_loss(self, target, reduction=1):
    d = aten.sub.Tensor(self, target)
    loss = aten.mul.Tensor(d, d)
    if reduction == 1:
        return aten.mean.default(loss)
    if reduction == 2:
        return aten.sum.dim_IntList(loss, _all_dims(loss), False)
    return loss


@register_decomposition(aten.nll_loss_forward.default)
def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """PyTorch's: gather the target class's value, weighted; ignored targets count zero."""
    channel = 0 if self.dim() == 1 else 1
    valid = aten.ne.Scalar(target, ignore_index)
    safe = aten.where.self(valid, target, _scalar(0, target))
    picked = aten.squeeze.dims(aten.gather.default(self, channel,
                                                   aten.unsqueeze.default(safe, channel)),
                               [channel])
    if weight is not None:
        w = aten.index.Tensor(weight, [safe])
        w = aten.where.self(valid, w, _scalar(0, w))
    else:
        w = aten._to_copy.default(valid, dtype=self.dtype)
    loss = aten.neg.default(aten.mul.Tensor(picked, w))
    if reduction == 0:
        return loss, aten.full.default([], 0.0, dtype=self.dtype, device=self.device)
    total_weight = aten.sum.dim_IntList(w, _all_dims(w), False)
    total = aten.sum.dim_IntList(loss, _all_dims(loss), False)
    if reduction == 1:
        total = aten.div.Tensor(total, total_weight)
    return total, total_weight


@register_decomposition(aten.nll_loss_backward.default)
def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    channel = 0 if self.dim() == 1 else 1
    valid = aten.ne.Scalar(target, ignore_index)
    safe = aten.unsqueeze.default(aten.where.self(valid, target, _scalar(0, target)), channel)
    if weight is not None:
        w = aten.index.Tensor(weight, [aten.squeeze.dims(safe, [channel])])
        w = aten.where.self(valid, w, _scalar(0, w))
    else:
        w = aten._to_copy.default(valid, dtype=self.dtype)
    g = grad_output
    if reduction == 1:
        g = aten.div.Tensor(g, total_weight)
    coef = aten.mul.Tensor(aten.neg.default(w), g)
    zeros = aten.full_like.default(self, 0)
    return aten.scatter.src(zeros, channel, safe, aten.unsqueeze.default(coef, channel))


@register_decomposition(aten.log_softmax.int)
def log_softmax(self, dim, dtype=None):
    x = aten._to_copy.default(self, dtype=dtype) if dtype is not None else self
    return aten._log_softmax.default(x, dim, False)


@register_decomposition(aten.softmax.int)
def softmax(self, dim, dtype=None):
    x = aten._to_copy.default(self, dtype=dtype) if dtype is not None else self
    return aten._softmax.default(x, dim, False)


# ---------------------------------------------------------------------------------------------
# backward ops (they appear in joint graphs)

@register_decomposition(aten.native_dropout_backward.default)
def native_dropout_backward(grad_output, mask, scale):
    return aten.mul.Tensor(grad_output,
                           aten.mul.Scalar(aten._to_copy.default(mask, dtype=grad_output.dtype),
                                           scale))


@register_decomposition(aten.threshold_backward.default)
def threshold_backward(grad_output, self, threshold):
    return aten.where.self(aten.le.Scalar(self, threshold), _scalar(0, grad_output),
                           grad_output)


@register_decomposition(aten.gelu_backward.default)
@_opmath
def gelu_backward(grad_output, self, *, approximate="none"):
    x = self
    if approximate == "tanh":
        k_beta = math.sqrt(2) * (2 / math.sqrt(math.pi)) * 0.5
        k_kappa = 0.044715
        x_sq = aten.mul.Tensor(x, x)
        x_cube = aten.mul.Tensor(x_sq, x)
        inner = aten.mul.Scalar(aten.add.Tensor(x, aten.mul.Scalar(x_cube, k_kappa)), k_beta)
        tanh_inner = aten.tanh.default(inner)
        left = aten.mul.Scalar(x, 0.5)
        right = aten.add.Scalar(tanh_inner, 1)
        left_d = aten.mul.Scalar(right, 0.5)
        tanh_d = aten.sub.Tensor(_scalar(1, x), aten.mul.Tensor(tanh_inner, tanh_inner))
        inner_d = aten.mul.Scalar(aten.add.Scalar(aten.mul.Scalar(x_sq, 3 * k_kappa), 1),
                                  k_beta)
        right_d = aten.mul.Tensor(aten.mul.Tensor(left, tanh_d), inner_d)
        return aten.mul.Tensor(grad_output, aten.add.Tensor(left_d, right_d))
    cdf = aten.mul.Scalar(aten.add.Scalar(aten.erf.default(
        aten.mul.Scalar(x, math.sqrt(0.5))), 1), 0.5)
    pdf = aten.mul.Scalar(aten.exp.default(aten.mul.Scalar(aten.mul.Tensor(x, x), -0.5)),
                          1 / math.sqrt(2 * math.pi))
    return aten.mul.Tensor(grad_output, aten.add.Tensor(cdf, aten.mul.Tensor(x, pdf)))


@register_decomposition(aten.elu_backward.default)
@_opmath
def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    negcoef, poscoef, negiptcoef = alpha * scale, scale, input_scale
    if is_result:  # self_or_result is elu's output: d/dx = input_scale * (out + alpha*scale)
        neg = aten.mul.Tensor(aten.mul.Scalar(grad_output, negiptcoef),
                              aten.add.Scalar(self_or_result, negcoef))
    else:
        neg = aten.mul.Tensor(aten.mul.Scalar(aten.mul.Scalar(grad_output, negiptcoef), negcoef),
                              aten.exp.default(aten.mul.Scalar(self_or_result, negiptcoef)))
    return aten.where.self(aten.le.Scalar(self_or_result, 0), neg,
                           aten.mul.Scalar(grad_output, poscoef))


@register_decomposition(aten.silu_backward.default)
@_opmath
def silu_backward(grad_output, self):
    sig = aten.sigmoid.default(self)
    one_minus = aten.sub.Tensor(_scalar(1, sig), sig)
    return aten.mul.Tensor(grad_output, aten.mul.Tensor(
        sig, aten.add.Scalar(aten.mul.Tensor(self, one_minus), 1)))


@register_decomposition(aten.leaky_relu_backward.default)
def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    return aten.where.self(aten.gt.Scalar(self, 0), grad_output,
                           aten.mul.Scalar(grad_output, negative_slope))


@register_decomposition(aten.hardtanh_backward.default)
def hardtanh_backward(grad_output, self, min_val, max_val):
    outside = aten.logical_or.default(aten.le.Scalar(self, min_val),
                                      aten.ge.Scalar(self, max_val))
    return aten.where.self(outside, _scalar(0, grad_output), grad_output)


@register_decomposition(aten._softmax_backward_data.default)
@_opmath_compute_only
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    new_grad = aten.mul.Tensor(grad_output, output)
    res = aten.sub.Tensor(new_grad, aten.mul.Tensor(
        output, aten.sum.dim_IntList(new_grad, [dim], True)))
    res = res if res.dtype == input_dtype else aten._to_copy.default(res, dtype=input_dtype)
    return _contiguous(res)


@register_decomposition(aten._log_softmax_backward_data.default)
@_opmath_compute_only
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    res = aten.sub.Tensor(grad_output, aten.mul.Tensor(
        aten.exp.default(output), aten.sum.dim_IntList(grad_output, [dim], True)))
    return res if res.dtype == input_dtype else aten._to_copy.default(res, dtype=input_dtype)


# ---------------------------------------------------------------------------------------------
# batch norm (PyTorch's core IR has _native_batch_norm_legit*, which ember does not declare:
# native_batch_norm and its backward lower to reductions and pointwise ops)

def _bn_shape(x):
    return [1, x.shape[1]] + [1] * (x.dim() - 2)


@register_decomposition(aten.native_batch_norm.default)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    dims = [0] + list(range(2, input.dim()))
    shape = _bn_shape(input)
    if training:
        n = input.numel() // input.shape[1]
        mean = aten.mean.dim(input, dims, True)
        var = aten.var.correction(input, dims, correction=0, keepdim=True)
        invstd = aten.rsqrt.default(aten.add.Scalar(var, eps))
        out = aten.mul.Tensor(aten.sub.Tensor(input, mean), invstd)
        save_mean = aten.squeeze.dims(mean, dims)
        save_invstd = aten.squeeze.dims(invstd, dims)
        if running_mean is not None:  # the statistics update (functionalized afterwards)
            new_mean = aten.add.Tensor(aten.mul.Scalar(running_mean, 1 - momentum),
                                       aten.mul.Scalar(save_mean, momentum))
            aten.copy_.default(running_mean, new_mean)
        if running_var is not None:
            unbiased = aten.mul.Scalar(aten.squeeze.dims(var, dims), n / max(n - 1, 1))
            new_var = aten.add.Tensor(aten.mul.Scalar(running_var, 1 - momentum),
                                      aten.mul.Scalar(unbiased, momentum))
            aten.copy_.default(running_var, new_var)
    else:
        mean = aten.view.default(running_mean, shape)
        invstd = aten.rsqrt.default(aten.add.Scalar(aten.view.default(running_var, shape), eps))
        out = aten.mul.Tensor(aten.sub.Tensor(input, mean), invstd)
        save_mean = aten.full.default([0], 0, dtype=input.dtype, device=input.device)
        save_invstd = aten.full.default([0], 0, dtype=input.dtype, device=input.device)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, shape))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, shape))
    return out, save_mean, save_invstd


@register_decomposition(aten.native_batch_norm_backward.default)
def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    dims = [0] + list(range(2, input.dim()))
    shape = _bn_shape(input)
    if train:
        mean, invstd = save_mean, save_invstd
    else:
        mean = running_mean
        invstd = aten.rsqrt.default(aten.add.Scalar(running_var, eps))
    mean = aten.view.default(mean, shape)
    invstd = aten.view.default(invstd, shape)
    n = input.numel() // input.shape[1]
    grad_sum = aten.sum.dim_IntList(grad_out, dims, False)
    centered = aten.sub.Tensor(input, mean)
    dot_p = aten.sum.dim_IntList(aten.mul.Tensor(grad_out, centered), dims, False)
    grad_scale = invstd if weight is None else aten.mul.Tensor(
        invstd, aten.view.default(weight, shape))
    grad_input = None
    if output_mask[0]:
        if train:
            proj_scale = aten.mul.Tensor(aten.view.default(aten.div.Scalar(dot_p, n), shape),
                                         aten.mul.Tensor(invstd, invstd))
            grad_mean = aten.view.default(aten.div.Scalar(grad_sum, n), shape)
            proj = aten.mul.Tensor(centered, proj_scale)
            grad_input = aten.mul.Tensor(
                aten.sub.Tensor(aten.sub.Tensor(grad_out, proj), grad_mean), grad_scale)
        else:
            grad_input = aten.mul.Tensor(grad_out, grad_scale)
    grad_weight = aten.mul.Tensor(dot_p, aten.view.default(invstd, [input.shape[1]])) \
        if output_mask[1] else None
    grad_bias = grad_sum if output_mask[2] else None
    return grad_input, grad_weight, grad_bias


# ---------------------------------------------------------------------------------------------
# more pointwise ops and reductions (PyTorch's torch/_refs formulas)

def _float_of(x):
    """Integer and bool inputs of a float-valued op compute in the default float dtype."""
    if x.is_floating_point() or x.is_complex():
        return x
    return aten._to_copy.default(x, dtype=_default_float())


@register_decomposition(aten.floor_divide.default)
def floor_divide(self, other):
    return aten.div.Tensor_mode(self, other, rounding_mode="floor")


@register_decomposition(aten.floor_divide.Scalar)
def floor_divide_scalar(self, other):
    return aten.div.Scalar_mode(self, other, rounding_mode="floor")


def _all_result(x, out):
    return aten._to_copy.default(out, dtype=_dt.uint8) if x.dtype is _dt.uint8 else out


@register_decomposition(aten.all.default)
def all_default(self):
    return _all_result(self, aten.logical_not.default(
        aten.any.default(aten.logical_not.default(self))))


@register_decomposition(aten.all.dim)
def all_dim(self, dim, keepdim=False):
    return _all_result(self, aten.logical_not.default(
        aten.any.dim(aten.logical_not.default(self), dim, keepdim)))


@register_decomposition(aten.all.dims)
def all_dims(self, dim=None, keepdim=False):
    return _all_result(self, aten.logical_not.default(
        aten.any.dims(aten.logical_not.default(self), dim, keepdim)))


@register_decomposition(aten.max.default)
def max_default(self):
    return aten.amax.default(self, _all_dims(self), False)


@register_decomposition(aten.min.default)
def min_default(self):
    return aten.amin.default(self, _all_dims(self), False)


@register_decomposition(aten.aminmax.default)
def aminmax(self, *, dim=None, keepdim=False):
    dims = _all_dims(self) if dim is None else [dim]
    if dim is None and keepdim:
        mn = aten.amin.default(self, dims, True)
        mx = aten.amax.default(self, dims, True)
    else:
        mn = aten.amin.default(self, dims, keepdim)
        mx = aten.amax.default(self, dims, keepdim)
    return mn, mx


@register_decomposition(aten.std_mean.correction)
@_opmath
def std_mean(self, dim=None, *, correction=None, keepdim=False):
    var = aten.var.correction(self, dim, correction=correction, keepdim=keepdim)
    return (aten.sqrt.default(var),
            aten.mean.dim(self, dim if dim is not None else _all_dims(self), keepdim))


@register_decomposition(aten.count_nonzero.dim_IntList)
def count_nonzero_dims(self, dim):
    return aten.sum.dim_IntList(aten.ne.Scalar(self, 0), list(dim), False, dtype=_dt.int64)


@register_decomposition(aten.count_nonzero.default)
def count_nonzero(self, dim=None):
    dims = _all_dims(self) if dim is None else [dim]
    return aten.sum.dim_IntList(aten.ne.Scalar(self, 0), dims, False, dtype=_dt.int64)


@register_decomposition(aten.trace.default)
def trace(self):
    return aten.sum.dim_IntList(aten.diagonal.default(self), [0], False)


@register_decomposition(aten.stack.default)
def stack(tensors, dim=0):
    ndim = tensors[0].dim() + 1
    return aten.cat.default([aten.unsqueeze.default(t, dim % ndim) for t in tensors],
                            dim % ndim)


@register_decomposition(aten.roll.default)
def roll(self, shifts, dims=()):
    shifts, dims = list(shifts), list(dims)
    if not dims:
        from .. import contiguous_format
        flat = aten.view.default(aten.clone.default(self, memory_format=contiguous_format),
                                 [-1]) if self.dim() != 1 else self
        return aten.view.default(roll(flat, shifts, [0]), list(self.shape))
    out = self
    for shift, dim in zip(shifts, dims):
        n = out.shape[dim]
        if n == 0:
            continue
        s = shift % n
        if s == 0:
            continue
        out = aten.cat.default([aten.slice.Tensor(out, dim, n - s, n),
                                aten.slice.Tensor(out, dim, 0, n - s)], dim)
    return out if out is not self else aten.clone.default(self)


@register_decomposition(aten.mv.default)
def mv(self, vec):
    return aten.squeeze.dims(aten.mm.default(self, aten.unsqueeze.default(vec, 1)), [1])


def _beta_alpha(self, prod, beta, alpha):
    if alpha != 1:
        prod = aten.mul.Tensor(prod, alpha)
    if beta == 0:  # self is ignored (its nans too), as the kernels do
        return aten.add.Tensor(prod, aten.mul.Tensor(aten.full_like.default(self, 0), 0)) \
            if tuple(self.shape) != tuple(prod.shape) else prod
    return aten.add.Tensor(self if beta == 1 else aten.mul.Tensor(self, beta), prod)


@register_decomposition(aten.addmv.default)
def addmv(self, mat, vec, *, beta=1, alpha=1):
    return _beta_alpha(self, mv(mat, vec), beta, alpha)


@register_decomposition(aten.baddbmm.default)
def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    return _beta_alpha(self, aten.bmm.default(batch1, batch2), beta, alpha)


@register_decomposition(aten.celu.default)
def celu(self, alpha=1.0):
    return aten.elu.default(self, alpha, 1, 1.0 / alpha)


@register_decomposition(aten.hardshrink.default)
def hardshrink(self, lambd=0.5):
    return aten.where.self(aten.gt.Scalar(aten.abs.default(self), lambd), self,
                           _scalar(0, self))


@register_decomposition(aten.threshold.default)
def threshold(self, threshold, value):
    return aten.where.self(aten.le.Scalar(self, threshold), _scalar(value, self), self)


@register_decomposition(aten.glu.default)
@_opmath
def glu(self, dim=-1):
    a, b = aten.split_with_sizes.default(self, [self.shape[dim] // 2] * 2, dim)
    return aten.mul.Tensor(a, aten.sigmoid.default(b))


@register_decomposition(aten.exp2.default)
@_opmath
def exp2(self):
    return aten.pow.Scalar(2.0, _float_of(self))


@register_decomposition(aten.isposinf.default)
def isposinf(self):
    return aten.logical_and.default(aten.isinf.default(self), aten.gt.Scalar(self, 0))


@register_decomposition(aten.isneginf.default)
def isneginf(self):
    return aten.logical_and.default(aten.isinf.default(self), aten.lt.Scalar(self, 0))


@register_decomposition(aten.sinc.default)
@_opmath
def sinc(self):
    x = _float_of(self)
    zero = aten.eq.Scalar(x, 0)
    # a safe denominator: the unselected branch must not put 0/0 into the gradient
    px = aten.mul.Scalar(aten.where.self(zero, _scalar(1, x), x), math.pi)
    return aten.where.self(zero, _scalar(1, x), aten.div.Tensor(aten.sin.default(px), px))


@register_decomposition(aten.heaviside.default)
def heaviside(self, values):
    pos = aten._to_copy.default(aten.gt.Scalar(self, 0), dtype=self.dtype)
    return aten.where.self(aten.eq.Scalar(self, 0), aten._to_copy.default(values,
                                                                          dtype=self.dtype), pos)


# ---------------------------------------------------------------------------------------------
# core ops that Inductor decomposes (``ember._inductor.decomposition``): they are in the Core
# ATen IR, so ``core_aten_decompositions`` leaves them alone, but a compiler that fuses
# pointwise ops into reductions wants them as exactly that. The formulas, the float32
# computation of float16/bfloat16 and the rounding points are PyTorch's
# (``torch/_decomp/decompositions.py``, ``torch/_refs``).

def _computation_dtype(dtype):
    """PyTorch's ``utils.get_computation_dtype``: float16/bfloat16 compute in float32."""
    return _dt.float32 if dtype in _LOW else dtype


def _to(x, dtype):
    return x if x.dtype == dtype else aten._to_copy.default(x, dtype=dtype)


def _contiguous(x):
    """``x.contiguous()``: the eager kernels return contiguous tensors, so must these."""
    if x.is_contiguous():
        return x
    from .._core.device import contiguous_format
    return aten.clone.default(x, memory_format=contiguous_format)


def _safe_amax(x, dim):
    """``amax(x, dim, keepdim=True)``, also over an empty ``dim`` (where eager softmax returns an
    empty tensor and amax alone would raise): a padded -inf, max's identity, never wins."""
    if x.dim() == 0 or x.shape[dim] > 0:
        return aten.amax.default(x, [dim], True)
    pad_shape = list(x.shape)
    pad_shape[dim] = 1
    pad = aten.full.default(pad_shape, float("-inf"), dtype=x.dtype, device=x.device)
    return aten.amax.default(aten.cat.default([x, pad], dim), [dim], True)


def _check_half_to_float(x, half_to_float):
    if half_to_float and x.dtype != _dt.float16:
        raise AssertionError(
            f"half_to_float is True but x.dtype is {x.dtype}, expected torch.half")


@register_decomposition(aten._softmax.default)
def _softmax(x, dim, half_to_float):
    # exp(x - max) / sum: a row of -inf gives nan (0/0) and a +inf gives nan, as the kernel's
    x = _contiguous(x)
    _check_half_to_float(x, half_to_float)
    result_dtype = x.dtype
    x = _to(x, _computation_dtype(x.dtype))
    unnormalized = aten.exp.default(aten.sub.Tensor(x, _safe_amax(x, dim)))
    result = aten.div.Tensor(unnormalized,
                             aten.sum.dim_IntList(unnormalized, [dim], True))
    return result if half_to_float else _to(result, result_dtype)


@register_decomposition(aten._log_softmax.default)
def _log_softmax(x, dim, half_to_float):
    x = _contiguous(x)
    _check_half_to_float(x, half_to_float)
    result_dtype = x.dtype
    x = _to(x, _computation_dtype(x.dtype))
    shifted = aten.sub.Tensor(x, _safe_amax(x, dim))
    shifted_logsumexp = aten.log.default(
        aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True))
    result = aten.sub.Tensor(shifted, shifted_logsumexp)
    return result if half_to_float else _to(result, result_dtype)


@register_decomposition(aten.gelu.default)
@_opmath
def gelu(self, *, approximate="none"):
    # PyTorch's torch._refs.nn.functional.gelu, constants as in ATen's GeluKernel
    if approximate == "tanh":
        k_beta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5  # sqrt(2) * 2/sqrt(pi) / 2
        k_kappa = 0.044715
        a_cube = aten.mul.Tensor(aten.mul.Tensor(self, self), self)
        inner = aten.mul.Scalar(aten.add.Tensor(self, aten.mul.Scalar(a_cube, k_kappa)), k_beta)
        return aten.mul.Tensor(aten.mul.Scalar(self, 0.5),
                               aten.add.Scalar(aten.tanh.default(inner), 1))
    if approximate == "none":
        k_alpha = 0.70710678118654752440  # 1/sqrt(2)
        return aten.mul.Tensor(aten.mul.Scalar(self, 0.5), aten.add.Scalar(
            aten.erf.default(aten.mul.Scalar(self, k_alpha)), 1))
    raise RuntimeError("approximate argument must be either none or tanh.")


def _normalize(a, norm_dims, eps):
    """Mean and 1/std of ``a`` over ``norm_dims`` (kept), and ``(a - mean) * rstd``, in the
    computation dtype (PyTorch's ``torch._refs._normalize``; var and mean are the biased
    statistics a Welford reduction gives)."""
    a_acc = _to(a, _computation_dtype(a.dtype))
    biased_var = aten.var.correction(a_acc, norm_dims, correction=0, keepdim=True)
    mean = aten.mean.dim(a_acc, norm_dims, True)
    rstd = aten.rsqrt.default(aten.add.Scalar(biased_var, eps))
    out = aten.mul.Tensor(aten.sub.Tensor(a_acc, mean), rstd)
    return out, mean, rstd


@register_decomposition(aten.native_layer_norm.default)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    normalized_ndim = len(normalized_shape)
    if normalized_ndim < 1:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = "
                           f"{list(normalized_shape)}")
    # ATen's checks and messages (layer_norm_cpu_out's _check_layer_norm_inputs)
    shape = list(normalized_shape)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = {shape}")
    if input.dim() < normalized_ndim or list(input.shape[input.dim() - normalized_ndim:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if input.is_complex():
        raise RuntimeError("native_layer_norm does not support complex inputs")
    input = _contiguous(input)
    weight = _contiguous(weight) if weight is not None else None
    bias = _contiguous(bias) if bias is not None else None
    axis = input.dim() - normalized_ndim
    out, mean, rstd = _normalize(input, list(range(axis, input.dim())), eps)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    # on the CPU the saved statistics have the input's dtype too
    return _to(out, input.dtype), _to(mean, input.dtype), _to(rstd, input.dtype)


def _unsqueeze_to_dim(x, dim):
    for _ in range(dim - x.dim()):
        x = aten.unsqueeze.default(x, -1)
    return x


@register_decomposition(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    input_shape = list(input.shape)
    input_ndim = input.dim()
    computation_dtype = _computation_dtype(input.dtype)
    grad_out_cast, input_cast, weight_cast, bias_cast = (
        _contiguous(_to(x, computation_dtype)) if x is not None else None
        for x in (grad_out, input, weight, bias))
    axis = input_ndim - len(normalized_shape)
    inner_dim_indices = list(range(axis, input_ndim))
    outer_dim_indices = list(range(axis))
    N = math.prod(input_shape[axis:])
    M = math.prod(input_shape[:axis])
    if M == 0 or N == 0:
        def zeros(shape):
            return aten.full.default(shape, 0, dtype=input.dtype, device=input.device)
        return (zeros(input_shape) if output_mask[0] else None,
                zeros(input_shape[axis:]) if output_mask[1] else None,
                zeros(input_shape[axis:]) if output_mask[2] else None)
    mean = _unsqueeze_to_dim(mean, input_ndim)
    rstd = _unsqueeze_to_dim(rstd, input_ndim)
    x_hat = aten.mul.Tensor(aten.sub.Tensor(input_cast, mean), rstd)
    grad_x_hat = grad_out_cast if weight_cast is None else aten.mul.Tensor(grad_out_cast,
                                                                           weight_cast)
    a = aten.mul.Scalar(grad_x_hat, N)
    b = aten.sum.dim_IntList(grad_x_hat, inner_dim_indices, True)
    c1 = aten.mul.Tensor(grad_x_hat, x_hat)
    c2 = aten.sum.dim_IntList(c1, inner_dim_indices, True)
    c3 = aten.mul.Tensor(x_hat, c2)
    inner = aten.sub.Tensor(aten.sub.Tensor(a, b), c3)
    d_input = d_weight = d_bias = None
    if output_mask[0]:
        d_input = aten.mul.Tensor(aten.div.Scalar(rstd, N), inner)
    if output_mask[1] and weight_cast is not None:
        prod = aten.mul.Tensor(grad_out_cast, x_hat)
        d_weight = aten.sum.dim_IntList(prod, outer_dim_indices, False) \
            if outer_dim_indices else prod
    if output_mask[2] and bias_cast is not None:
        d_bias = aten.sum.dim_IntList(grad_out_cast, outer_dim_indices, False) \
            if outer_dim_indices else aten.clone.default(grad_out_cast)
    return (_to(d_input, input.dtype) if d_input is not None else None,
            _to(d_weight, weight.dtype) if d_weight is not None else None,
            _to(d_bias, bias.dtype) if d_bias is not None else None)


def _unsqueeze_multiple(x, dims):
    for d in sorted(dims):
        x = aten.unsqueeze.default(x, d)
    return x


@register_decomposition(aten.native_group_norm.default)
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    if C % group != 0:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups = {group}")
    input_acc = _to(input, _computation_dtype(input.dtype))
    cpg = C // group
    reshaped = aten.view.default(_contiguous(input_acc), [N, group, cpg, HxW])
    biased_var = aten.var.correction(reshaped, [2, 3], correction=0, keepdim=True)
    mean = aten.mean.dim(reshaped, [2, 3], True)
    rstd = aten.rsqrt.default(aten.add.Scalar(biased_var, eps))
    if weight is not None:
        # the CPU kernel's form: one scale and one shift per (sample, channel), then
        # x * w + b (PyTorch's decomposition follows it on the CPU, and so rounds the same)
        w = aten.mul.Tensor(rstd, aten.view.default(weight, [1, group, cpg, 1]))
        b = aten.mul.Tensor(aten.neg.default(mean), w)
        if bias is not None:
            b = aten.add.Tensor(b, aten.view.default(bias, [1, group, cpg, 1]))
        w = aten.view.default(_contiguous(w), [N, C])
        b = aten.view.default(_contiguous(b), [N, C])
        broadcast_dims = list(range(2, input.dim()))
        out = aten.add.Tensor(aten.mul.Tensor(input_acc, _unsqueeze_multiple(w, broadcast_dims)),
                              _unsqueeze_multiple(b, broadcast_dims))
    else:
        out = aten.view.default(aten.mul.Tensor(aten.sub.Tensor(reshaped, mean), rstd),
                                list(input.shape))
        if bias is not None:
            broadcast_dims = [0] + list(range(2, input.dim()))
            out = aten.add.Tensor(out, _unsqueeze_multiple(bias, broadcast_dims))
    return (_to(out, input.dtype), aten.squeeze.dims(_to(mean, input.dtype), [2, 3]),
            aten.squeeze.dims(_to(rstd, input.dtype), [2, 3]))


@register_decomposition(aten.native_group_norm_backward.default)
@_opmath
def native_group_norm_backward(grad_output, input, mean, rstd, gamma, N, C, HxW, group,
                               output_mask):
    if C % group != 0:
        raise RuntimeError(f"Expect number of channels {C} to be evenly-divisible by number of "
                           f"groups {group}")
    cpg = C // group
    ds = aten.sum.dim_IntList(aten.view.default(
        _contiguous(aten.mul.Tensor(grad_output, input)), [N, C, HxW]), [2], False)
    db = aten.sum.dim_IntList(aten.view.default(_contiguous(grad_output), [N, C, HxW]), [2],
                              False)
    d_input = d_gamma = d_bias = None
    if output_mask[0]:
        s = 1.0 / (HxW * cpg)
        if gamma is not None:
            g = aten.unsqueeze.default(gamma, 0)
            ds_val = aten.sum.dim_IntList(aten.view.default(aten.mul.Tensor(ds, g),
                                                            [N, group, cpg]), [2], False)
            db_val = aten.sum.dim_IntList(aten.view.default(aten.mul.Tensor(db, g),
                                                            [N, group, cpg]), [2], False)
            c1 = aten.mul.Tensor(aten.unsqueeze.default(rstd, -1),
                                 aten.view.default(gamma, [1, group, cpg]))
        else:
            ds_val = aten.sum.dim_IntList(aten.view.default(ds, [N, group, cpg]), [2], False)
            db_val = aten.sum.dim_IntList(aten.view.default(db, [N, group, cpg]), [2], False)
            c1 = aten.mul.Tensor(aten.unsqueeze.default(rstd, -1), aten.full.default(
                [1, group, cpg], 1, dtype=rstd.dtype, device=rstd.device))
        rstd3 = aten.mul.Tensor(aten.mul.Tensor(rstd, rstd), rstd)
        c2 = aten.mul.Scalar(aten.mul.Tensor(
            aten.sub.Tensor(aten.mul.Tensor(db_val, mean), ds_val), rstd3), s)
        c3 = aten.sub.Tensor(aten.mul.Tensor(aten.neg.default(c2), mean),
                             aten.mul.Scalar(aten.mul.Tensor(db_val, rstd), s))
        c1 = aten.unsqueeze.default(c1, -1)
        c2 = _unsqueeze_to_dim(c2, 4)
        c3 = _unsqueeze_to_dim(c3, 4)
        d_input = aten.add.Tensor(aten.add.Tensor(
            aten.mul.Tensor(aten.view.default(_contiguous(grad_output), [N, group, cpg, HxW]),
                            c1),
            aten.mul.Tensor(aten.view.default(_contiguous(input), [N, group, cpg, HxW]), c2)),
            c3)
        d_input = _to(aten.view.default(d_input, list(input.shape)), input.dtype)
    if output_mask[1]:
        centered = aten.sub.Tensor(aten.view.default(ds, [N, group, cpg]), aten.mul.Tensor(
            aten.view.default(db, [N, group, cpg]), aten.unsqueeze.default(mean, -1)))
        d_gamma = aten.view.default(aten.sum.dim_IntList(
            aten.mul.Tensor(centered, aten.unsqueeze.default(rstd, -1)), [0], False), [C])
    if output_mask[2]:
        d_bias = aten.sum.dim_IntList(db, [0], False)
    return d_input, d_gamma, d_bias


@register_decomposition(aten.embedding_dense_backward.default)
def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    # PyTorch's: an accumulating index_put into zeros, the rows of out-of-range and padding
    # indices masked off (its _unsafe_masked_index[_put_accumulate], written out: clamped
    # indices, masked values)
    result_dtype = grad_output.dtype
    grad_output = _to(grad_output, _computation_dtype(grad_output.dtype))
    indices = _to(indices, _dt.int64)
    valid = aten.logical_and.default(aten.ge.Scalar(indices, 0),
                                     aten.lt.Scalar(indices, num_weights))
    if scale_grad_by_freq:
        counts = aten.full.default([num_weights], 0, dtype=indices.dtype, device=indices.device)
        ones = aten.full_like.default(indices, 1)
        counts = aten.index_put.default(
            counts, [aten.clamp.default(indices, -num_weights, num_weights - 1)],
            aten.where.self(valid, ones, _scalar(0, ones)), True)
        scale = aten.index.Tensor(counts, [aten.clamp.default(indices, 0, num_weights - 1)])
        scale = aten.where.self(valid, scale, _scalar(1, scale))
        grad_output = aten.div.Tensor(grad_output, aten.unsqueeze.default(scale, -1))
    mask = _unsqueeze_to_dim(aten.logical_and.default(valid, aten.ne.Scalar(indices, padding_idx)),
                             grad_output.dim())
    grad_weight = aten.full.default([num_weights] + list(grad_output.shape[indices.dim():]), 0,
                                    dtype=grad_output.dtype, device=grad_output.device)
    masked = aten.where.self(mask, grad_output, _scalar(0, grad_output))
    out = aten.index_put.default(
        grad_weight, [aten.clamp.default(indices, -num_weights, num_weights - 1)], masked, True)
    return _to(out, result_dtype)


# pointwise and indexing core ops Inductor decomposes (PyTorch's torch._refs formulas), so
# that its lowerings see where/clamp/expm1/index only

@register_decomposition(aten.elu.default)
@_opmath
def elu(self, alpha=1, scale=1, input_scale=1):
    return aten.where.self(aten.gt.Scalar(self, 0), aten.mul.Scalar(self, scale),
                           aten.mul.Scalar(aten.expm1.default(aten.mul.Scalar(self, input_scale)),
                                           alpha * scale))


@register_decomposition(aten.leaky_relu.default)
@_opmath
def leaky_relu(self, negative_slope=0.01):
    return aten.where.self(aten.gt.Scalar(self, 0), self, aten.mul.Scalar(self, negative_slope))


@register_decomposition(aten.hardtanh.default)
def hardtanh(self, min_val=-1, max_val=1):
    if self.dtype == _dt.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not self.is_floating_point():
        # bounds do not promote an integer tensor (ATen's legacy behaviour)
        min_val, max_val = int(min_val), int(max_val)
        if self.dtype == _dt.uint8 and (min_val < 0 or max_val < 0):
            raise RuntimeError("Cannot do hardtanh on an unsigned type with negative limits")
    if min_val > max_val:  # clamp's answer (max_val) for crossed bounds
        return aten.clamp.default(self, min_val, max_val)
    # PyTorch's is clamp(self, min_val, max_val); the same values, but where keeps the
    # kernel's zero gradient at the bounds themselves (clamp's passes 1 there)
    return aten.where.self(aten.le.Scalar(self, min_val), _scalar(min_val, self),
                           aten.where.self(aten.ge.Scalar(self, max_val),
                                           _scalar(max_val, self), self))


@register_decomposition(aten.var.dim)
def var_dim(self, dim=None, unbiased=True, keepdim=False):
    return aten.var.correction(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


@register_decomposition(aten._euclidean_dist.default)
def _euclidean_dist(x1, x2):
    # PyTorch's: the p=2 distances of one product, [-2a, |a|^2, 1] . [b, 1, |b|^2]
    n1 = aten.sum.dim_IntList(aten.pow.Tensor_Scalar(x1, 2), [-1], True)
    n2 = aten.sum.dim_IntList(aten.pow.Tensor_Scalar(x2, 2), [-1], True)
    m1 = aten.cat.default([aten.mul.Tensor(x1, -2), n1, aten.ones_like.default(n1)], -1)
    m2 = aten.cat.default([x2, aten.ones_like.default(n2), n2], -1)
    d2 = aten.matmul.default(m1, aten.transpose.int(m2, -1, -2))
    return aten.sqrt.default(aten.clamp_min.default(d2, 1e-30))


@register_decomposition(aten.index_select.default)
def index_select(self, dim, index):
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if self.dim() == 0:  # a scalar is an element of R^1; the result is a scalar again
        if index.numel() != 1:
            raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                               f"{index.numel()} value(s)")
        picked = aten.index.Tensor(aten.view.default(self, [1]),
                                   [aten.view.default(index, [-1])])
        return aten.view.default(picked, [])
    dim = dim % self.dim()
    if index.dim() == 0:
        index = aten.unsqueeze.default(index, 0)
    return aten.index.Tensor(self, [None] * dim + [index])


def _reshape(x, shape):
    """``x.reshape(shape)``: a view of a contiguous tensor, else of a contiguous copy."""
    return aten.view.default(_contiguous(x), shape)


@register_decomposition(aten.max_pool2d_with_indices_backward.default)
def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    # PyTorch's: each output gradient goes to the input position its index names, summed
    # where windows overlap (scatter_add; deterministic on the CPU, so PyTorch's fallback to
    # the kernel in deterministic mode is not needed). float16/bfloat16 accumulate in float32.
    in_h, in_w = self.shape[-2], self.shape[-1]
    out_h, out_w = grad_output.shape[-2], grad_output.shape[-1]
    batched = self.dim() == 4
    if not batched:
        self = aten.unsqueeze.default(self, 0)
        grad_output = aten.unsqueeze.default(grad_output, 0)
        indices = aten.unsqueeze.default(indices, 0)
    bc = self.shape[0] * self.shape[1]
    accum_dtype = _computation_dtype(grad_output.dtype)
    grad_input = aten.full.default([bc, in_h * in_w], 0, dtype=accum_dtype,
                                   device=grad_output.device)
    grad_flat = _to(_reshape(grad_output, [bc, out_h * out_w]), accum_dtype)
    grad_input = aten.scatter_add.default(grad_input, 1, _reshape(indices, [bc, out_h * out_w]),
                                          grad_flat)
    grad_input = _to(aten.view.default(grad_input, [self.shape[0], self.shape[1], in_h, in_w]),
                     grad_output.dtype)
    from .._core.device import channels_last
    if not self.is_contiguous() and self.is_contiguous(memory_format=channels_last):
        grad_input = aten.clone.default(grad_input, memory_format=channels_last)
    return grad_input if batched else aten.squeeze.dims(grad_input, [0])

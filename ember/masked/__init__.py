"""``ember.masked``: PyTorch's ``torch.masked`` reductions and normalizations on strided tensors.

Each function takes ``mask=`` (a boolean tensor broadcast to the input's shape; None means every
element counts). Masked-out elements are replaced by the operation's identity (0 for sum, 1 for
prod, -inf for amax / logsumexp / softmax, NaN for median, ...) before the ordinary ember op
runs, exactly as torch/masked/_ops.py composes them, so values and gradients are PyTorch's:
masked-out elements get a zero gradient. A MaskedTensor input (``maskedtensor``) brings its own
mask, and its gradient comes back as a MaskedTensor. Sparse layouts are not supported."""
import builtins as _builtins

import ember as _E

__all__ = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod",
           "softmax", "log_softmax", "softmin", "logsumexp", "logaddexp", "norm", "normalize",
           "std", "var", "median", "MaskedTensor", "masked_tensor", "as_masked_tensor",
           "is_masked_tensor"]

_SMALL_INTS = None


def _small_ints():
    """dtypes whose masked sum/prod accumulate in int64 (PyTorch's sum promotion)."""
    global _SMALL_INTS
    if _SMALL_INTS is None:
        _SMALL_INTS = {_E.uint8, _E.bool, _E.int8, _E.int16, _E.int32}
    return _SMALL_INTS


def _check_strided(name, t):
    if t.layout != _E.strided:
        raise ValueError(f"masked {name} expects strided tensor (got {t.layout} tensor)")


def _reduction_identity(op_name, input, *args):
    """The value that leaves the reduction unchanged (None where there is none)."""
    dtype, device = input.dtype, input.device
    fp = input.dtype.is_floating_point
    if op_name in ("sum", "cumsum"):
        return _E.tensor(0, dtype=dtype, device=device)
    if op_name in ("prod", "cumprod"):
        return _E.tensor(1, dtype=dtype, device=device)
    if op_name in ("amax", "argmax", "logaddexp"):
        if fp:
            return _E.tensor(-float("inf"), dtype=dtype, device=device)
        if input.dtype.is_signed or dtype == _E.uint8:
            return _E.tensor(_E.iinfo(dtype).min, dtype=dtype, device=device)
    elif op_name == "logsumexp":
        if fp:
            return _E.tensor(-float("inf"), dtype=dtype, device=device)
        if input.dtype.is_complex:
            return _E.tensor(complex(-float("inf"), 0), dtype=dtype, device=device)
        if input.dtype.is_signed or dtype == _E.uint8:
            return _E.tensor(_E.iinfo(dtype).min, dtype=dtype, device=device)
    elif op_name in ("amin", "argmin"):
        if fp:
            return _E.tensor(float("inf"), dtype=dtype, device=device)
        if input.dtype.is_signed or dtype == _E.uint8:
            return _E.tensor(_E.iinfo(dtype).max, dtype=dtype, device=device)
    elif op_name in ("mean", "var", "std"):
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == float("-inf"):
            if not fp:
                raise AssertionError(f"input must be floating point, got {input.dtype}")
            return _E.tensor(float("inf"), dtype=dtype, device=device)
        return _E.tensor(0, dtype=dtype, device=device)
    elif op_name == "median":
        return _E.tensor(float("nan"), dtype=dtype if fp else _E.float32, device=device)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim, ndim):
    """Sorted non-negative reduction dims (every dim for None or ())."""
    if dim == ():
        dim = None
    if dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, mask):
    """``mask`` broadcast to the input's shape, as bool."""
    _check_strided("operation", input)
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = _E.broadcast_to(mask.clone(), input.shape).to(dtype=_E.bool)
    return mask.to(dtype=_E.bool)


def _combine_input_and_mask(op_name, input, mask, *args):
    """The input with masked-out elements replaced by ``op_name``'s identity; a MaskedTensor's
    own data and mask, its gradient handed back as a MaskedTensor of that mask."""
    def helper(input, mask):
        if mask is None:
            return input
        fill = _reduction_identity(op_name, input, *args)
        return _E.where(_input_mask(input, mask), input, fill)

    if not is_masked_tensor(input):
        return helper(input, mask)

    class Combine(_E.autograd.Function):
        @staticmethod
        def forward(ctx, input, mask):
            ctx.save_for_backward(mask)
            if mask is not None:
                ctx.mark_non_differentiable(mask)
            return helper(input, mask)

        @staticmethod
        def backward(ctx, grad_output):
            (mask,) = ctx.saved_tensors
            grad_data = grad_output.get_data() if is_masked_tensor(grad_output) else grad_output
            return as_masked_tensor(grad_data, mask), None

    return Combine.apply(input.get_data(), input.get_mask())


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001
    if dtype is None:
        dtype = _E.int64 if input.dtype in _small_ints() else input.dtype
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask("sum", input, mask)
    _check_strided("sum", mask_input)
    return _E.sum(mask_input, dim_, _builtins.bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = _E.int64 if input.dtype in _small_ints() else input.dtype
    dim_ = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask("prod", input, mask)
    _check_strided("prod", result)
    result = result.to(dtype=dtype)
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=_builtins.bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask("sum", input, mask)
    _check_strided("cumsum", mask_input)
    return _E.cumsum(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask("prod", input, mask)
    _check_strided("cumprod", mask_input)
    return _E.cumprod(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask("amax", input, mask)
    dim_ = _canonical_dim(dim, mask_input.ndim)
    _check_strided("amax", mask_input)
    return _E.amax(mask_input, dim_, _builtins.bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask("amin", input, mask)
    dim_ = _canonical_dim(dim, mask_input.ndim)
    _check_strided("amin", mask_input)
    return _E.amin(mask_input, dim_, _builtins.bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask("argmax", input, mask)
    _check_strided("argmax", mask_input)
    return _E.argmax(mask_input, dim, _builtins.bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask("argmin", input, mask)
    _check_strided("argmin", mask_input)
    return _E.argmin(mask_input, dim, _builtins.bool(keepdim)).to(dtype=dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype_source = "Optional"
    if dtype is None:
        dtype = input.dtype
        dtype_source = "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {dtype_source} dtype must be "
                         f"either a floating point or complex dtype. Got: {dtype}")
    _check_strided("mean", input)
    if mask is None:
        count = sum(_E.ones(input.shape, dtype=_E.int64, device=input.device), dim,
                    keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=_builtins.bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=_E.float32)
    mask_input = _combine_input_and_mask("median", input, mask)
    _check_strided("median", mask_input)
    # masked-out elements are NaN: nanmedian skips them (a fully masked row gives NaN)
    output = _E.nanmedian(mask_input, dim_, keepdim).values
    if is_float:
        return output
    if not _E.isnan(output).any():
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating "
                     "point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask("logsumexp", input, mask)
    _check_strided("logsumexp", mask_input)
    return _E.logsumexp(mask_input, dim_, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    if dtype is None:
        dtype = input.dtype
    if input.layout != _E.strided or other.layout != _E.strided:
        raise ValueError(f"masked logaddexp expects strided tensors (got {input.layout} tensor "
                         f"for input, {other.layout} for other)")
    mask_input = _combine_input_and_mask("logaddexp", input, input_mask)
    mask_other = _combine_input_and_mask("logaddexp", other, other_mask)
    return _E.logaddexp(mask_input, mask_other).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask("norm", input, mask, ord)
    _check_strided("norm", mask_input)
    dim_ = _canonical_dim(dim, input.ndim)
    return _E.linalg.vector_norm(mask_input, ord, dim_, _builtins.bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, *, correction_opt, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _E.float32
    compute_dtype = dtype
    if not (compute_dtype.is_floating_point or compute_dtype.is_complex):
        compute_dtype = _E.float32
    _check_strided("std/var", input)
    if mask is None:
        count = sum(_E.ones(input.shape, dtype=_E.int64, device=input.device), dim,
                    keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    sample_mean = _E.divide(sample_total, count)
    x = _E.subtract(input, sample_mean)
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype,
                mask=None if mask is None else inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real_dtype = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = count.to(real_dtype)
        count = _E.subtract(count, correction)
        count = _E.maximum(count, count.new_zeros([]))
    output = _E.divide(total, count).to(dtype=dtype)
    return _E.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)


def _normalizer(name, fill_like, input, dim, dtype, mask):
    """softmax/log_softmax/softmin: masked-out elements take the identity of ``fill_like``
    (amax: -inf, amin: +inf), so they get no weight."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(fill_like, input, mask)
    _check_strided(name, mask_input)
    return getattr(_E.nn.functional, name)(mask_input, dim_, dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    return _normalizer("softmax", "amax", input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    return _normalizer("log_softmax", "amax", input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    return _normalizer("softmin", "amin", input, dim, dtype, mask)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask("sum", input, mask)
    _check_strided("normalize", mask_input)
    nrm_ = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = _E.maximum(nrm_, nrm_.new_full([], eps))
    return _E.divide(mask_input, denom)


from .maskedtensor.core import is_masked_tensor, MaskedTensor  # noqa: E402  (torch.masked's)
from .maskedtensor.creation import as_masked_tensor, masked_tensor  # noqa: E402

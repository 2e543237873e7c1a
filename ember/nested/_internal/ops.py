"""The jagged layout's operators (PyTorch's ``torch/nested/_internal/ops.py``).

``JAGGED_OPS_TABLE`` maps an ATen overload to its kernel on jagged tensors; pointwise ops (the
``pointwise`` tag) take a generic kernel. Each kernel computes on the dense ``values`` and wraps
the result with the input's offsets; it runs below autograd (at the Python key), so autograd
has recorded the op on the outer tensors and its derivative formula calls these kernels again.
An op with no entry raises ``NotImplementedError`` naming it, as PyTorch does.

:func:`jagged_torch_function` takes calls at ``__torch_function__`` that need more than one
ATen op on the values or give a dense result: ``linear``, ``matmul``, ``unbind``, ``sum`` and
``mean`` over the batch or ragged dims, ``scaled_dot_product_attention`` (``sdpa.py``). They are
written in ember ops on ``values()``, so autograd runs through them as through dense code.
PyTorch dispatches ``linear`` and ``matmul`` below autograd with nested-only derivative
formulas; ember has no such formulas, and its composite ``linear`` would decompose first.
"""
import functools

from ... import ops as _ops
from ..._core import strides as _st
from .nested_int import is_nested_int
from .nested_tensor import NestedTensor, nested_like

aten = _ops.aten

JAGGED_OPS_TABLE = {}


# -- dimension helpers -------------------------------------------------------------------------
def _outer_to_inner_dim(ndim, dim, ragged_dim):
    """The values' dim for an outer dim: the batch dim maps onto the ragged one."""
    if isinstance(dim, (tuple, list)):
        return type(dim)(dict.fromkeys(_outer_to_inner_dim(ndim, d, ragged_dim) for d in dim))
    if not 0 <= dim < ndim:
        raise AssertionError(f"dim {dim} out of range for ndim {ndim}")
    return ragged_dim - 1 if dim == 0 else dim - 1


def _wrap_jagged_dim(ndim, dim, ragged_dim, op_name):
    wrapped = _st.wrap_dim(dim, ndim)
    if wrapped == ragged_dim:
        raise RuntimeError(f"{op_name}(): not supported for NestedTensor on ragged dim")
    if wrapped == 0:
        raise RuntimeError(f"{op_name}(): not supported for NestedTensor on dim=0")
    return _outer_to_inner_dim(ndim, wrapped, ragged_dim)


def extract_kwargs(arg):
    return {"offsets": arg._offsets, "lengths": arg._lengths,
            "_metadata_cache": arg._metadata_cache, "_ragged_idx": arg._ragged_idx}


def raggedness_matches(nt, size):
    """Whether ``size`` (of another jagged tensor) has ``nt``'s batch and ragged sizes."""
    end = nt._ragged_idx + 1
    nt_ragged = nt._size[:end]
    size_ragged = tuple(size)[:end]
    return len(nt_ragged) == len(size_ragged) and all(
        ns == s or (not is_nested_int(ns) and ns == 1 and not is_nested_int(s))
        for ns, s in zip(nt_ragged, size_ragged))


def squeeze_leading_ones(t):
    """``t`` without its leading size-1 dims (a dense operand broadcast against values)."""
    while t.dim() > 0 and t.shape[0] == 1:
        t = t.squeeze(0)
    return t


def register_jagged_func(aten_ops):
    def wrapper(func):
        for op in aten_ops:
            JAGGED_OPS_TABLE[op] = functools.partial(func, op)
        return func
    return wrapper


def lookup_jagged(func, *args, **kwargs):
    fn = JAGGED_OPS_TABLE.get(func)
    if fn is not None:
        return fn
    if "pointwise" in func.tags:
        for arg in args:
            if is_nested_int(arg):
                raise RuntimeError(f"NestedTensor {func.__name__}: invalid argument {arg}")
        num_tensor_args = sum(isinstance(x, NestedTensor) or hasattr(x, "_size") for x in args)
        if num_tensor_args == 1:
            return functools.partial(jagged_unary_pointwise, func)
        if num_tensor_args == 2:
            return functools.partial(jagged_binary_pointwise, func)
    return None


# -- pointwise -----------------------------------------------------------------------------------
def jagged_unary_pointwise(func, *args, **kwargs):
    njt = next(arg for arg in args if isinstance(arg, NestedTensor))
    return NestedTensor(func(*(arg._values if arg is njt else arg for arg in args), **kwargs),
                        **extract_kwargs(njt))


def jagged_binary_pointwise(func, *args, **kwargs):
    a, b = args[0], args[1]
    msg = "cannot call binary pointwise function {} with inputs of shapes {} and {}"
    if isinstance(a, NestedTensor) and isinstance(b, NestedTensor):
        if raggedness_matches(a, b._size):
            return NestedTensor(func(a._values, b._values, *args[2:], **kwargs),
                                **extract_kwargs(a))
        raise RuntimeError(msg.format(func.__name__, a._size, b._size))
    a_is_nt = isinstance(a, NestedTensor)
    nt, t = (a, b) if a_is_nt else (b, a)
    if t.dim() > nt.dim():
        raise NotImplementedError("NYI: broadcasting NT with T with larger dim")
    t_squeezed = squeeze_leading_ones(t)
    # a dense operand with no batch or ragged extent broadcasts against the values directly
    if nt.dim() >= t_squeezed.dim() + 2:
        lhs, rhs = (nt._values, t_squeezed) if a_is_nt else (t_squeezed, nt._values)
        return NestedTensor(func(lhs, rhs, *args[2:], **kwargs), **extract_kwargs(nt))
    # PyTorch broadcasts a (B, 1, ...) dense operand through a padded copy; ember does not
    raise RuntimeError(msg.format(func.__name__, a.shape, b.shape))


# -- copies, conversions, factories ------------------------------------------------------------
@register_jagged_func([aten.clone.default])
def clone_default(func, inp, *, memory_format=None):
    return NestedTensor(func(inp._values, memory_format=memory_format), **extract_kwargs(inp))


@register_jagged_func([aten.detach.default, aten.alias.default])
def view_default(func, inp):
    return NestedTensor(func(inp._values), **extract_kwargs(inp))


@register_jagged_func([aten._to_copy.default])
def to_copy_default(func, inp, **kwargs):
    kwargs.pop("layout", None)  # the values are strided: the result stays jagged
    values = func(inp._values, **kwargs)
    kw = extract_kwargs(inp)
    if values.device != inp._offsets.device:
        kw["offsets"] = inp._offsets.to(values.device)
        if inp._lengths is not None:
            kw["lengths"] = inp._lengths.to(values.device)
    return NestedTensor(values, **kw)


@register_jagged_func([aten.copy_.default])
def copy_default(func, inp, src, non_blocking=False):
    if inp._size != src._size:
        raise RuntimeError("copy_ only supports Nested Tensors that have same size and the "
                           "exact same offset tensor.")
    inp._values.copy_(src._values)
    return inp


@register_jagged_func([aten.empty_like.default, aten.ones_like.default, aten.zeros_like.default,
                       aten.rand_like.default, aten.randn_like.default])
def like_factory_default(func, inp, **kwargs):
    kwargs.pop("layout", None)
    return NestedTensor(func(inp._values, **kwargs), **extract_kwargs(inp))


@register_jagged_func([aten.zero_.default])
def zero__default(func, inp):
    func(inp._values)
    return inp


@register_jagged_func([aten.is_same_size.default])
def is_same_size_default(func, a, b):
    return a._size == b._size


# -- softmax and layer norm over non-ragged dims ---------------------------------------------
@register_jagged_func([aten._softmax.default, aten._log_softmax.default])
def softmax_default(func, inp, dim, half_to_float):
    name = "softmax" if func is aten._softmax.default else "log_softmax"
    d = _wrap_jagged_dim(inp.dim(), dim, inp._ragged_idx, name)
    return NestedTensor(func(inp._values, d, half_to_float), **extract_kwargs(inp))


@register_jagged_func([aten._softmax_backward_data.default,
                       aten._log_softmax_backward_data.default])
def softmax_backward_default(func, grad_output, output, dim, input_dtype):
    d = _wrap_jagged_dim(output.dim(), dim, output._ragged_idx, "softmax_backward")
    return NestedTensor(func(grad_output._values, output._values, d, input_dtype),
                        **extract_kwargs(grad_output))


def _check_layer_norm(inp, normalized_shape):
    if inp.dim() - len(normalized_shape) <= inp._ragged_idx:
        raise RuntimeError("layer_norm(): normalizing over ragged dim not supported for nested "
                           "tensors")


@register_jagged_func([aten.native_layer_norm.default])
def native_layer_norm_default(func, inp, normalized_shape, weight=None, bias=None, eps=1e-5):
    _check_layer_norm(inp, normalized_shape)
    out, mean, rstd = func(inp._values, normalized_shape, weight, bias, eps)
    return NestedTensor(out, **extract_kwargs(inp)), mean, rstd


@register_jagged_func([aten.native_layer_norm_backward.default])
def native_layer_norm_backward_default(func, grad_out, inp, normalized_shape, mean, rstd,
                                       weight, bias, output_mask):
    d_input, d_weight, d_bias = func(grad_out._values, inp._values, normalized_shape, mean,
                                     rstd, weight, bias, output_mask)
    if d_input is None:
        return None, d_weight, d_bias
    return NestedTensor(d_input, **extract_kwargs(inp)), d_weight, d_bias


# -- reductions over non-ragged dims (the others are in jagged_torch_function) -------------
def _inner_reduce_dims(inp, dim, name):
    """The values' dims for reducing ``dim`` (outer), all of them past the batch dim and not
    the ragged one, and the ragged dim's index after a reduction without keepdim."""
    dims = [_st.wrap_dim(d, inp.dim()) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    for d in dims:
        if d == 0 or d == inp._ragged_idx:
            raise RuntimeError(f"{name}(): reducing along the batch or ragged dimension of a "
                               "NestedTensor is done by its __torch_function__, not here")
    return [d - 1 for d in dims], inp._ragged_idx - sum(d < inp._ragged_idx for d in dims)


@register_jagged_func([aten.sum.dim_IntList, aten.mean.dim])
def reduce_dim(func, inp, dim=None, keepdim=False, *, dtype=None):
    name = "sum" if func is aten.sum.dim_IntList else "mean"
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        raise RuntimeError(f"{name}(): reducing along the batch or ragged dimension of a "
                           "NestedTensor is done by its __torch_function__, not here")
    dims, new_ragged = _inner_reduce_dims(inp, dim, name)
    kw = extract_kwargs(inp)
    if not keepdim:
        kw["_ragged_idx"] = new_ragged
    return NestedTensor(func(inp._values, dims, keepdim, dtype=dtype), **kw)


# -- shape ops -----------------------------------------------------------------------------------
@register_jagged_func([aten.transpose.int])
def transpose_int(func, inp, dim0, dim1):
    ndim = inp.dim()
    dim0, dim1 = _st.wrap_dim(dim0, ndim), _st.wrap_dim(dim1, ndim)
    if inp._lengths is not None:
        raise ValueError("transpose(): not supported on jagged layout nested tensor with holes")
    kw = extract_kwargs(inp)
    if inp._ragged_idx in (dim0, dim1):
        if dim0 == 0 or dim1 == 0:
            raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
        kw["_ragged_idx"] = dim1 if dim0 == inp._ragged_idx else dim0
        return NestedTensor(func(inp._values, _outer_to_inner_dim(ndim, dim0, inp._ragged_idx),
                                 _outer_to_inner_dim(ndim, dim1, inp._ragged_idx)), **kw)
    d0 = _wrap_jagged_dim(ndim, dim0, inp._ragged_idx, "transpose")
    d1 = _wrap_jagged_dim(ndim, dim1, inp._ragged_idx, "transpose")
    return NestedTensor(func(inp._values, d0, d1), **kw)


@register_jagged_func([aten.unsqueeze.default])
def unsqueeze_default(func, inp, dim):
    wrapped = _st.wrap_dim(dim, inp.dim() + 1)  # unsqueeze takes dims up to ndim
    if wrapped == 0:
        raise RuntimeError("unsqueeze(): not supported for NestedTensor on dim=0")
    kw = extract_kwargs(inp)
    if wrapped <= inp._ragged_idx:  # a dim added before the ragged one moves it
        kw["_ragged_idx"] += 1
    return NestedTensor(func(inp._values, wrapped - 1), **kw)


@register_jagged_func([aten.squeeze.dim])
def squeeze_dim(func, inp, dim):
    d = _wrap_jagged_dim(inp.dim(), dim, inp._ragged_idx, "squeeze")
    kw = extract_kwargs(inp)
    if d < inp._ragged_idx - 1 and inp._values.shape[d] == 1:
        kw["_ragged_idx"] -= 1
    return NestedTensor(func(inp._values, d), **kw)


@register_jagged_func([aten.expand.default])
def expand_default(func, inp, size, implicit=False):
    if not raggedness_matches(inp, size):
        raise RuntimeError(f"expand(): cannot expand shape {inp._size} -> {tuple(size)}")
    expand_arg = [-1 if d == inp._ragged_idx else size[d] for d in range(1, inp.dim())]
    return NestedTensor(func(inp._values, expand_arg), **extract_kwargs(inp))


@register_jagged_func([aten.unbind.int])
def unbind_int(func, inp, dim=0):
    if dim != 0:
        raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
    return tuple(_pieces(inp, inp._values))


def _pieces(nt, values):
    """Each component of ``nt`` as a narrow view of ``values`` (its values, or a view of them
    on the autograd graph)."""
    offsets = nt._offsets.tolist()
    lengths = nt._seq_lengths().tolist()
    return [values.narrow(nt._ragged_idx - 1, o, n) for o, n in zip(offsets, lengths)]


# -- __torch_function__-level ops ----------------------------------------------------------------
def _functions():
    """The public functions jagged_torch_function handles (looked up on first use: ember's
    modules import this package before they exist)."""
    global _FUNCTIONS
    if _FUNCTIONS is None:
        import ember
        import ember.nn.functional as F
        from .sdpa import jagged_scaled_dot_product_attention
        _FUNCTIONS = {F.linear: _linear,
                      ember.matmul: _matmul, ember.Tensor.matmul: _matmul,
                      ember.unbind: _unbind, ember.Tensor.unbind: _unbind,
                      ember.sum: _sum, ember.Tensor.sum: _sum,
                      ember.mean: _mean, ember.Tensor.mean: _mean,
                      F.scaled_dot_product_attention: jagged_scaled_dot_product_attention}
    return _FUNCTIONS


_FUNCTIONS = None


def jagged_torch_function(func, *args, **kwargs):
    fn = _functions().get(func)
    if fn is None:
        raise NotImplementedError(func)
    return fn(*args, **kwargs)


def _linear(input, weight, bias=None):
    import ember.nn.functional as F
    if not isinstance(input, NestedTensor) or isinstance(weight, NestedTensor):
        raise RuntimeError("linear(): a nested tensor is supported as the input only, with a "
                           "dense weight")
    if input._ragged_idx == input.dim() - 1:
        raise RuntimeError("linear(): not supported for NestedTensor on ragged dim")
    return nested_like(input, F.linear(input.values(), weight, bias))


def _matmul(input, other):
    if (isinstance(input, NestedTensor) and not isinstance(other, NestedTensor)
            and other.dim() == 2 and input._ragged_idx < input.dim() - 1):
        return nested_like(input, input.values().matmul(other))
    raise RuntimeError(f"matmul(): not supported between inputs of shapes {input.shape} and "
                       f"{other.shape}: ember's jagged matmul takes a nested tensor ragged "
                       "before its last dim times a 2-d dense tensor")


def _unbind(input, dim=0):
    if dim != 0:
        raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
    return tuple(_pieces(input, input.values()))


def _reduce(name, input, dim, keepdim, dtype):
    """``sum``/``mean`` of a jagged tensor: over non-ragged dims a jagged tensor (the table's
    kernel), over the batch and ragged dims a dense one computed on ``values()``."""
    ndim = input.dim()
    dims = range(ndim) if dim is None else [
        _st.wrap_dim(d, ndim) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    dims = sorted(set(dims))
    r = input._ragged_idx
    inner = [d - 1 for d in dims if d not in (0, r)]
    if 0 not in dims and r not in dims:
        op = aten.sum.dim_IntList if name == "sum" else aten.mean.dim
        return op(input, dims, keepdim, dtype=dtype)
    if 0 in dims and r not in dims:
        raise RuntimeError(f"{name}(): not supported along the batch dimension but not the "
                           "ragged dimension for NestedTensor")
    import ember
    pieces = _pieces(input, input.values())
    if 0 in dims:  # batch and ragged: over the rows of every component together
        rows = ember.cat(pieces, r - 1) if input._lengths is not None else input.values()
        out = getattr(rows, name)([r - 1, *inner], keepdim=keepdim, dtype=dtype)
        return out.unsqueeze(0) if keepdim else out
    # the ragged dim without the batch one: one reduction per component
    return ember.stack([getattr(p, name)([r - 1, *inner], keepdim=keepdim, dtype=dtype)
                        for p in pieces], 0)


def _sum(input, dim=None, keepdim=False, *, dtype=None):
    return _reduce("sum", input, dim, keepdim, dtype)


def _mean(input, dim=None, keepdim=False, *, dtype=None):
    return _reduce("mean", input, dim, keepdim, dtype)


def to_padded_tensor(nt, padding, output_size=None):
    """The dense ``(B, max length, ...)`` tensor of ``nt``'s components, each padded with
    ``padding`` along the ragged dim (to ``output_size`` when given)."""
    import ember
    import ember.nn.functional as F
    if not isinstance(nt, NestedTensor):
        raise RuntimeError("to_padded_tensor(): expected a nested tensor")
    if nt._lengths is not None:
        raise RuntimeError("to_padded_tensor(): not supported for nested tensors with holes")
    r = nt._ragged_idx
    pieces = _pieces(nt, nt.values())
    max_len = nt._get_max_seqlen()
    if output_size is not None:
        output_size = tuple(output_size)
        want = [s for i, s in enumerate(nt._size) if i not in (0, r)]
        have = [s for i, s in enumerate(output_size) if i not in (0, r)]
        if (len(output_size) != nt.dim() or output_size[0] != nt._size[0] or want != have
                or output_size[r] < max_len):
            raise RuntimeError(f"to_padded_tensor(): output_size {list(output_size)} cannot "
                               f"hold a nested tensor of size {nt._size}")
        max_len = output_size[r]
    trailing = nt.dim() - 1 - r  # dims after the ragged one, padded by nothing
    return ember.stack([F.pad(p, [0, 0] * trailing + [0, max_len - p.shape[r - 1]],
                              value=padding) for p in pieces], 0)

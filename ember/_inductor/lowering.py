"""Lowerings: one function per aten overload, turning the op's IR inputs into IR (PyTorch's
``torch._inductor.lowering``).

Pointwise ops become lazy ``Pointwise`` nodes whose ``inner_fn`` calls the matching ``ops``
method; reductions become ``Reduction`` nodes; view ops become ``ReinterpretView``s whose size,
stride and offset are the ones the traced graph recorded (``node.meta["val"]``), so ember's
view rules (``_kernels/rules``) are reused, not restated. Ops with no entry here run through
``FallbackKernel`` (the eager op), which ``GraphLowering`` counts and logs.

Dtypes follow the traced graph too: every lowering reads its result dtype from
``meta["val"]`` and computes in the promoted dtype of its inputs, as the eager kernels do.
"""
import math

import ember
from ember.fx.node import Node

from . import ir
from .virtualized import V, ops

__all__ = ["lowerings", "register_lowering", "REDUCTION_TYPES"]

aten = ember.ops.aten
lowerings = {}


def register_lowering(*aten_ops, lazy_inputs=True):
    """Register ``fn`` for each overload in ``aten_ops`` (a packet means all its overloads).
    ``lazy_inputs=False`` asks the graph to give the lowering realized (strided) inputs."""
    def decorator(fn):
        fn.lazy_inputs = lazy_inputs
        for op in aten_ops:
            overloads = ([getattr(op, n) for n in op.overloads()] if hasattr(op, "overloads")
                         else [op])
            for o in overloads:
                lowerings[o] = fn
        return fn
    return decorator


def _out_val():
    return V.graph.current_node.meta["val"]


def _arg_vals(args):
    """The traced metadata (fake tensors) of the current node's tensor arguments, scalars as
    they are: what ``ember.result_type`` needs to promote as the eager op did."""
    return [a.meta["val"] if isinstance(a, Node) else a for a in args]


def _promoted(node_args):
    """The dtype the eager op computes in: its first two arguments promoted."""
    vals = [v for v in _arg_vals(node_args) if isinstance(v, (ember.Tensor, bool, int, float))]
    if len(vals) == 1:
        v = vals[0]
        return v.dtype if isinstance(v, ember.Tensor) else ember.tensor(v).dtype
    return ember.result_type(*vals[:2])


def broadcast_loader(x, size, dtype):
    """Element ``index`` of ``x`` (IR or a Python scalar) broadcast to ``size``, as ``dtype``."""
    if not isinstance(x, ir.IRNode):
        return lambda idx: ops.constant(x, dtype)
    xs = x.get_size()
    shift = len(size) - len(xs)
    load = x.make_loader()
    keep = [xs[k] != 1 or size[k + shift] == 1 for k in range(len(xs))]
    xdt = x.get_dtype()

    def inner(idx):
        v = load([idx[k + shift] if keep[k] else 0 for k in range(len(xs))])
        return v if xdt == dtype else ops.to_dtype(v, dtype)
    return inner


def _origins(args=()):
    """The fx nodes a value computes: the current one and those of lazy inputs inlined."""
    out = [V.graph.current_node]
    for a in args:
        if isinstance(a, ir.Loops):
            out += [o for o in a.origins if o not in out]
    return tuple(out)


def pointwise(fn, *inputs, compute_dtype=None):
    """A lazy ``Pointwise`` with the current node's size and dtype: ``fn`` of the inputs'
    elements converted to ``compute_dtype`` (the result dtype unless that is bool, when it is
    the inputs' promoted dtype: comparisons and predicates)."""
    val = _out_val()
    size, dtype = tuple(val.shape), val.dtype
    if compute_dtype is None:
        compute_dtype = dtype if dtype != ember.bool else _promoted(V.graph.current_node.args)
    loaders = [broadcast_loader(x, size, compute_dtype) for x in inputs]

    def inner(idx):
        v = fn(*[load(idx) for load in loaders])
        return v if v.dtype == dtype else ops.to_dtype(v, dtype)
    return ir.Pointwise(size, inner, dtype, _origins(inputs))


# -- pointwise tables ---------------------------------------------------------------------------
# aten name -> ops method. Unary ops compute in the result dtype (ints become floats first for
# exp, sin...), binary ops in the promoted dtype.
UNARY = {
    "abs": "abs", "neg": "neg", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log",
    "log2": "log2", "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "reciprocal": "reciprocal", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin",
    "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf", "erfc": "erfc",
    "sigmoid": "sigmoid", "relu": "relu", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "sign": "sign", "sgn": "sign", "square": "square",
    "logical_not": "logical_not", "bitwise_not": "bitwise_not", "isnan": "isnan",
    "isinf": "isinf", "isfinite": "isfinite", "signbit": "signbit",
}
BINARY = {
    "mul": "mul", "div": "truediv", "maximum": "maximum", "minimum": "minimum",
    "fmax": "fmax", "fmin": "fmin", "pow": "pow", "atan2": "atan2", "fmod": "fmod",
    "remainder": "remainder", "floor_divide": "floordiv", "eq": "eq", "ne": "ne", "lt": "lt",
    "le": "le", "gt": "gt", "ge": "ge", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor", "hypot": "hypot", "copysign": "copysign",
}


def _unary(method):
    def lower(x):
        return pointwise(lambda v: getattr(ops, method)(v), x)
    return lower


def _binary(method):
    def lower(a, b):
        return pointwise(lambda u, v: getattr(ops, method)(u, v), a, b)
    return lower


for _name, _method in UNARY.items():
    register_lowering(getattr(aten, _name).default)(_unary(_method))
for _name, _method in BINARY.items():
    _packet = getattr(aten, _name)
    for _ov in _packet.overloads():
        if not _ov.endswith("out") and _ov not in ("Scalar_Tensor", "Scalar_Tensor_out"):
            if _name == "div" and _ov not in ("Tensor", "Scalar"):
                continue  # div.Tensor_mode / Scalar_mode take rounding_mode: fallback
            register_lowering(getattr(_packet, _ov))(_binary(_method))


@register_lowering(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar)
def _add_sub(a, b, alpha=1):
    op = ops.add if V.graph.current_node.target.overloadpacket is aten.add else ops.sub
    if alpha == 1:
        return pointwise(op, a, b)
    return pointwise(lambda x, y: op(x, ops.mul(y, ops.constant(alpha, y.dtype))), a, b)


@register_lowering(aten.pow.Tensor_Scalar)
def _pow_scalar(x, exponent):
    # PyTorch's pow specialisations: squares and square roots are exact and much cheaper
    if exponent == 2:
        return pointwise(lambda v: ops.mul(v, v), x)
    if exponent == 1:
        return pointwise(lambda v: v, x)
    if exponent == 0.5:
        return pointwise(lambda v: ops.sqrt(v), x)
    if exponent == -1 and _out_val().dtype.is_floating_point:
        return pointwise(lambda v: ops.reciprocal(v), x)
    return pointwise(lambda v, e: ops.pow(v, e), x, exponent)


@register_lowering(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther,
                   aten.where.Scalar)
def _where(cond, a, b):
    val = _out_val()
    size, dtype = tuple(val.shape), val.dtype
    lc = broadcast_loader(cond, size, ember.bool)
    la, lb = broadcast_loader(a, size, dtype), broadcast_loader(b, size, dtype)
    return ir.Pointwise(size, lambda idx: ops.where(lc(idx), la(idx), lb(idx)), dtype,
                        _origins((cond, a, b)))


@register_lowering(aten.clamp.default, aten.clamp.Tensor)
def _clamp(x, min=None, max=None):
    _bounds_in_range(min, max)

    def fn(v, *bounds):
        bounds = list(bounds)
        if min is not None:
            v = ops.clamp_min(v, bounds.pop(0))
        if max is not None:
            v = ops.clamp_max(v, bounds.pop(0))
        return v
    return pointwise(fn, x, *[b for b in (min, max) if b is not None])


def _bounds_in_range(*bounds):
    """Integer clamps with a bound the dtype cannot hold wrap it first, as eager does: left
    to the eager kernel."""
    dtype = _out_val().dtype
    if dtype.is_floating_point or dtype == ember.bool:
        return
    info = ember.iinfo(dtype)
    for b in bounds:
        if isinstance(b, (int, float)) and not info.min <= b <= info.max:
            raise NotImplementedError("integer clamp with an out-of-range bound")


@register_lowering(aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp_min(x, lo):
    _bounds_in_range(lo)
    return pointwise(lambda v, b: ops.clamp_min(v, b), x, lo)


@register_lowering(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(x, hi):
    _bounds_in_range(hi)
    return pointwise(lambda v, b: ops.clamp_max(v, b), x, hi)


@register_lowering(aten.gelu.default)
def _gelu(x, approximate="none"):
    def fn(v):
        c = lambda k: ops.constant(k, v.dtype)  # noqa: E731
        if approximate == "tanh":
            inner = ops.mul(c(math.sqrt(2 / math.pi)),
                            ops.add(v, ops.mul(c(0.044715), ops.mul(v, ops.mul(v, v)))))
            return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.tanh(inner)))
        return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.erf(ops.mul(v, c(math.sqrt(0.5))))))
    return pointwise(fn, x)


@register_lowering(aten.leaky_relu.default)
def _leaky_relu(x, negative_slope=0.01):
    return pointwise(lambda v: ops.where(ops.gt(v, ops.constant(0, v.dtype)), v,
                                         ops.mul(v, ops.constant(negative_slope, v.dtype))), x)


@register_lowering(aten.hardtanh.default)
def _hardtanh(x, min_val=-1.0, max_val=1.0):
    return pointwise(lambda v: ops.clamp_max(ops.clamp_min(v, ops.constant(min_val, v.dtype)),
                                             ops.constant(max_val, v.dtype)), x)


@register_lowering(aten.clone.default, aten._to_copy.default)
def _copy(x, **kwargs):
    # a fresh tensor (clone, dtype/memory-format change); the graph's strides for the result
    # come from meta["val"] when it is realized
    if "device" in kwargs and kwargs["device"] is not None and \
            ember.device(kwargs["device"]).type != "cpu":
        raise NotImplementedError("device copies are extern")
    return pointwise(lambda v: v, x, compute_dtype=x.get_dtype())


@register_lowering(aten.full.default, aten.full_like.default)
def _full(size, fill_value, **kwargs):
    val = _out_val()
    return ir.Pointwise(tuple(val.shape), lambda idx: ops.constant(fill_value, val.dtype),
                        val.dtype, _origins(()))


@register_lowering(aten.scalar_tensor.default)
def _scalar_tensor(s, **kwargs):
    val = _out_val()
    return ir.Pointwise((), lambda idx: ops.constant(s, val.dtype), val.dtype, _origins(()))


@register_lowering(aten.fill.Scalar)
def _fill(x, value):
    val = _out_val()
    return ir.Pointwise(tuple(val.shape), lambda idx: ops.constant(value, val.dtype),
                        val.dtype, _origins(()))


@register_lowering(aten.arange.start_step)
def _arange(start, end, step=1, **kwargs):
    val = _out_val()
    return ir.Pointwise(tuple(val.shape),
                        lambda idx: ops.index_expr(idx[0] * step + start, val.dtype),
                        val.dtype, _origins(()))


# -- piecewise ops: each output element comes from one input, chosen by its position -------
def _position(idx, dim):
    return ops.index_expr(idx[dim], ember.int64)


def _in_range(pos, lo, hi, extent):
    """``lo <= pos < hi`` as a C predicate for a position in ``[0, extent)``: bounds that
    every position meets are left out; None when all are."""
    return _all([ops.ge(pos, ops.constant(lo, ember.int64)) if lo > 0 else None,
                 ops.lt(pos, ops.constant(hi, ember.int64)) if hi < extent else None])


def _all(conds):
    """The conjunction of the predicates that are not None; None when none are."""
    conds = [c for c in conds if c is not None]
    out = conds[0] if conds else None
    for c in conds[1:]:
        out = ops.logical_and(out, c)
    return out


@register_lowering(aten.constant_pad_nd.default)
def _constant_pad_nd(x, pad, value=0):
    """Padding (or cropping, for negative pads) of the last ``len(pad) // 2`` dims: an output
    element inside the input's image loads it, the others are ``value``."""
    val = _out_val()
    size, dtype = x.get_size(), val.dtype
    n = len(size)
    low = [0] * n
    for k in range(len(pad) // 2):
        low[n - 1 - k] = pad[2 * k]
    load = x.make_loader()

    def inner(idx):
        src = [i - lo for i, lo in zip(idx, low)]
        mask = _all(_in_range(_position(idx, d), low[d], low[d] + size[d], val.shape[d])
                    for d in range(n))
        return load(src) if mask is None else ops.masked(mask, lambda: load(src), value)
    return ir.Pointwise(tuple(val.shape), inner, dtype, _origins((x,)))


@register_lowering(aten.cat.default)
def _cat(tensors, dim=0):
    """Each output element loads from the input whose slice of ``dim`` holds it (inputs that
    are empty along ``dim``, or legacy 1-D empty tensors, hold none)."""
    val = _out_val()
    dtype = val.dtype
    dim = dim % len(val.shape)
    parts, offset = [], 0
    for t in tensors:
        tsize = t.get_size()
        if len(tsize) != len(val.shape) or tsize[dim] == 0:
            continue
        parts.append((offset, offset + tsize[dim], t.make_loader(), t.get_dtype()))
        offset += tsize[dim]
    if not parts:
        raise NotImplementedError("cat of empty tensors")

    extent = val.shape[dim]

    def inner(idx):
        pos = _position(idx, dim)
        out = None
        for lo, hi, load, tdt in reversed(parts):
            src = [i - lo if d == dim else i for d, i in enumerate(idx)]

            def body(load=load, src=src, tdt=tdt):
                v = load(src)
                return v if tdt == dtype else ops.to_dtype(v, dtype)
            if out is None:  # the last part: every position past the others
                mask = _in_range(pos, lo, extent, extent)
                out = body() if mask is None else ops.masked(mask, body, 0)
            else:
                out = ops.where(_in_range(pos, 0, hi, extent),
                                ops.masked(_in_range(pos, lo, hi, extent), body, 0), out)
        return out
    return ir.Pointwise(tuple(val.shape), inner, dtype, _origins(tuple(tensors)))


@register_lowering(aten.slice_scatter.default)
def _slice_scatter(base, src, dim=0, start=None, end=None, step=1):
    """``base`` with ``src`` written over ``base[start:end:step]`` along ``dim``."""
    val = _out_val()
    dtype = val.dtype
    size = base.get_size()
    dim = dim % len(size)
    n = src.get_size()[dim]
    start = 0 if start is None else (start + size[dim] if start < 0 else start)
    start = min(max(start, 0), size[dim])
    if step != 1 and n > 1:
        raise NotImplementedError("slice_scatter with a step")  # needs exact division in C
    load_base, load_src = base.make_loader(), src.make_loader()

    def inner(idx):
        inside = _in_range(_position(idx, dim), start, start + n, size[dim])
        if inside is None:
            return load_src(idx)
        src_idx = [i - start if d == dim else i for d, i in enumerate(idx)]
        return ops.where(inside, ops.masked(inside, lambda: load_src(src_idx), 0),
                         load_base(idx))
    return ir.Pointwise(tuple(val.shape), inner, dtype, _origins((base, src)))


@register_lowering(aten.select_scatter.default)
def _select_scatter(base, src, dim, index):
    """``base`` with ``src`` written over ``base.select(dim, index)``."""
    val = _out_val()
    size = base.get_size()
    dim = dim % len(size)
    index = index + size[dim] if index < 0 else index
    load_base, load_src = base.make_loader(), src.make_loader()

    def inner(idx):
        here = ops.eq(_position(idx, dim), ops.constant(index, ember.int64))
        return ops.where(here, load_src([i for d, i in enumerate(idx) if d != dim]),
                         load_base(idx))
    return ir.Pointwise(tuple(val.shape), inner, val.dtype, _origins((base, src)))


# -- views ----------------------------------------------------------------------------------------
VIEW_OPS = (aten.view.default, aten._unsafe_view.default, aten.permute.default,
            aten.expand.default, aten.unsqueeze.default, aten.squeeze.default,
            aten.squeeze.dim, aten.squeeze.dims, aten.slice.Tensor, aten.select.int,
            aten.t.default, aten.transpose.int, aten.as_strided.default,
            aten.diagonal.default, aten.unfold.default, aten.alias.default,
            aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int)


@register_lowering(*VIEW_OPS, lazy_inputs=False)
def _view(x, *args, **kwargs):
    """A view (or a list of views: split, unbind) of a realized input: the size, stride and
    offset traced for the result."""
    base = x.data if isinstance(x, ir.ReinterpretView) else x

    def view(val):
        return ir.ReinterpretView(base, ir.Layout(val.shape, val.stride(), val.dtype,
                                                  val.storage_offset()))
    val = _out_val()
    return [view(v) for v in val] if isinstance(val, (list, tuple)) else view(val)


# -- reductions -----------------------------------------------------------------------------------
REDUCTION_TYPES = ("sum", "prod", "max", "min", "any")


def _dims(x, dims):
    """The reduced dims, sorted: ``None`` or ``[]`` mean all of them (``amax(x, [])`` reduces
    everything) unless the traced result kept every dim (``any(x, dim=())``); a 0-dim input
    has none."""
    n = len(x.get_size())
    if n == 0:
        return []
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        val = _out_val()
        val = val[0] if isinstance(val, (list, tuple)) else val
        return [] if dims is not None and tuple(val.shape) == tuple(x.get_size()) \
            else list(range(n))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % n for d in dims})


def reduction(x, dims, keepdim, reduction_type, dtype, fn=None):
    """``Reduction`` of ``fn(x)`` (``x`` by default) over ``dims`` in ``dtype``."""
    size = x.get_size()
    rdims = [d for d in dims if d < len(size)]
    ranges = [1 if i in rdims else n for i, n in enumerate(size)] if keepdim else \
        [n for i, n in enumerate(size) if i not in rdims]
    rranges = [size[d] for d in rdims]
    load = broadcast_loader(x, size, dtype)
    kept = [i for i in range(len(size)) if i not in rdims]

    def inner(idx, ridx):
        full = [0] * len(size)
        for j, d in enumerate(rdims):
            full[d] = ridx[j]
        for j, d in enumerate(kept):
            full[d] = idx[d] if keepdim else idx[j]
        v = load(full)
        return fn(v) if fn is not None else v
    return ir.Reduction(ranges, rranges, reduction_type, inner, dtype, dtype,
                        _origins((x,)))


def _reduce(reduction_type):
    def lower(x, dim=None, keepdim=False, *, dtype=None):
        out = _out_val().dtype
        return reduction(x, _dims(x, dim), keepdim, reduction_type, out)
    return lower


register_lowering(aten.sum.dim_IntList, aten.sum.default)(_reduce("sum"))
register_lowering(aten.amax.default)(_reduce("max"))
register_lowering(aten.amin.default)(_reduce("min"))
register_lowering(aten.any.dim, aten.any.dims, aten.any.default)(_reduce("any"))


@register_lowering(aten.prod.dim_int, aten.prod.default)
def _prod(x, dim=None, keepdim=False, *, dtype=None):
    return reduction(x, _dims(x, dim), keepdim, "prod", _out_val().dtype)


@register_lowering(aten.mean.dim, aten.mean.default)
def _mean(x, dim=None, keepdim=False, *, dtype=None):
    dtype = _out_val().dtype
    dims = _dims(x, dim)
    n = math.prod(x.get_size()[d] for d in dims)
    total = V.graph.realize(reduction(x, dims, keepdim, "sum", dtype))
    load = total.make_loader()
    return ir.Pointwise(total.get_size(),
                        lambda idx: ops.truediv(load(idx), ops.constant(n, dtype)),
                        dtype, _origins(()))


def _var(x, dims, correction, keepdim, dtype):
    """Two passes over the rows, as accurate as Welford's one: the mean, then the sum of
    squared deviations (the kernels keep the row in cache between them)."""
    n = math.prod(x.get_size()[d] for d in dims)
    mean = V.graph.realize(reduction(x, dims, True, "sum", dtype))
    mload = mean.make_loader()
    xload = broadcast_loader(x, x.get_size(), dtype)
    inv_n = 1.0 / n if n else math.nan

    def centred(idx):
        m = ops.mul(mload([0 if d in dims else i for d, i in enumerate(idx)]),
                    ops.constant(inv_n, dtype))
        d = ops.sub(xload(idx), m)
        return ops.mul(d, d)
    dev = ir.Pointwise(x.get_size(), centred, dtype, _origins((x,)))
    ssq = V.graph.realize(reduction(dev, dims, keepdim, "sum", dtype))
    denom = max(n - correction, 0)
    sload = ssq.make_loader()
    var = ir.Pointwise(ssq.get_size(),
                       lambda idx: ops.truediv(sload(idx), ops.constant(denom, dtype)),
                       dtype, _origins(()))
    size = ssq.get_size()
    mean_out = ir.Pointwise(
        size, lambda idx: ops.mul(mload(_keepdim_index(idx, dims, keepdim, len(x.get_size()))),
                                  ops.constant(inv_n, dtype)), dtype, _origins(()))
    return var, mean_out


def _keepdim_index(idx, dims, keepdim, ndim):
    if keepdim:
        return idx
    it = iter(idx)
    return [0 if d in dims else next(it) for d in range(ndim)]


def _correction(correction, unbiased=None):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


@register_lowering(aten.var.correction, aten.var.dim, aten.var.default)
def _var_lower(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # var.default(self, unbiased)
        dim, unbiased = None, dim
    return _var(x, _dims(x, dim), _correction(correction, unbiased), keepdim,
                _out_val().dtype)[0]


@register_lowering(aten.var_mean.correction, aten.var_mean.dim, aten.var_mean.default)
def _var_mean_lower(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return _var(x, _dims(x, dim), _correction(correction, unbiased), keepdim,
                _out_val()[0].dtype)


# -- indexing ---------------------------------------------------------------------------------------
def _index_input(index, size, op, dim=0):
    """``index`` in memory, with the wrapper told to check it lies in ``[0, size)`` before
    the kernels load through it."""
    index = V.graph.realize(index)
    V.graph.add_bounds_check(index, size, op, dim)
    return index.make_loader()


@register_lowering(aten.embedding.default)
def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # padding_idx and scale_grad_by_freq only change the backward
    val = _out_val()
    load_w = weight.make_loader()
    load_i = _index_input(indices, weight.get_size()[0], "embedding")

    def inner(idx):
        row = ops.indirect_indexing(load_i(idx[:-1]))
        return load_w([row, idx[-1]])
    return ir.Pointwise(tuple(val.shape), inner, val.dtype, _origins((weight,)))


@register_lowering(aten.gather.default)
def _gather(x, dim, index, *, sparse_grad=False):
    val = _out_val()
    size = x.get_size()
    if not size:
        raise NotImplementedError("gather of a 0-dim tensor")
    dim = dim % len(size)
    load_x = x.make_loader()
    load_i = _index_input(index, size[dim], "gather", dim)

    def inner(idx):
        picked = ops.indirect_indexing(load_i(idx))
        return load_x([picked if d == dim else i for d, i in enumerate(idx)])
    return ir.Pointwise(tuple(val.shape), inner, val.dtype, _origins((x,)))


@register_lowering(aten.scatter.src, aten.scatter.value)
def _scatter(x, dim, index, src):
    """``scatter`` when ``index`` picks one position per row of ``dim`` (its size there is 1,
    elsewhere ``x``'s: the one-hot of ``nll_loss``'s backward): each output element compares
    its position with its row's index. Other scatters write elements other rows read: eager."""
    val = _out_val()
    size = x.get_size()
    if not size:
        raise NotImplementedError("scatter into a 0-dim tensor")
    dim = dim % len(size)
    isize = index.get_size()
    if len(isize) != len(size) or isize[dim] != 1 or \
            any(isize[d] != size[d] for d in range(len(size)) if d != dim):
        raise NotImplementedError("scatter where rows pick several positions runs eagerly")
    load_x = x.make_loader()
    load_i = _index_input(index, size[dim], "scatter", dim)
    load_src = broadcast_loader(src, (), val.dtype) if not isinstance(src, ir.IRNode) \
        else src.make_loader()

    def inner(idx):
        row = [0 if d == dim else i for d, i in enumerate(idx)]
        hit = ops.eq(_position(idx, dim), load_i(row))
        s = load_src(row)
        return ops.where(hit, s if s.dtype == val.dtype else ops.to_dtype(s, val.dtype),
                         load_x(idx))
    return ir.Pointwise(tuple(val.shape), inner, val.dtype, _origins((x,)))


# -- pooling: windows unrolled into each output element ----------------------------------------
_MAX_WINDOW = 25  # window elements unrolled per output element; larger windows run eagerly


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v) * (2 if len(v) == 1 else 1)


def _pool_args(kernel_size, stride, padding, dilation):
    """(kernel, stride, padding, dilation) as pairs; an empty stride is the kernel size."""
    k = _pair(kernel_size)
    return k, _pair(stride) if stride else k, _pair(padding), _pair(dilation)


def _inside(h, w, in_h, in_w):
    """``0 <= h < in_h and 0 <= w < in_w`` for window positions (index expressions)."""
    h, w = ops.index_expr(h, ember.int64), ops.index_expr(w, ember.int64)
    zero = ops.constant(0, ember.int64)
    return _all([ops.ge(h, zero), ops.lt(h, ops.constant(in_h, ember.int64)),
                 ops.ge(w, zero), ops.lt(w, ops.constant(in_w, ember.int64))])


@register_lowering(aten.max_pool2d_with_indices.default)
def _max_pool2d_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """Values and flat ``h * W + w`` indices of each window's maximum, ATen's CPU rule: the
    first maximum, a NaN wins (the last NaN), and an all ``-inf`` window names its first
    position inside the input. With padding or ceil_mode, window positions outside the input
    are skipped (guarded loads)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args(kernel_size, stride, padding, dilation)
    if kh * kw > _MAX_WINDOW:
        raise NotImplementedError("a large pooling window runs eagerly")
    vals, idx_val = _out_val()
    in_h, in_w = x.get_size()[-2:]
    dtype = x.get_dtype()
    load = x.make_loader()
    edges = bool(ph or pw or ceil_mode)  # else every window lies inside the input
    lowest = -math.inf if dtype.is_floating_point else ember.iinfo(dtype).min

    def window(idx):
        *lead, oh, ow = idx
        best = ops.constant(lowest, dtype)
        best_i = ops.constant(-1, ember.int64)  # no position inside the input seen yet
        for i in range(kh):
            for j in range(kw):
                h, w = oh * sh - ph + i * dh, ow * sw - pw + j * dw
                pos = ops.index_expr(h * in_w + w, ember.int64)
                take_first = None
                if edges:
                    inside = _inside(h, w, in_h, in_w)
                    v = ops.masked(inside, lambda h=h, w=w: load([*lead, h, w]), lowest)
                    take_first = inside if i == j == 0 else ops.logical_and(
                        inside, ops.eq(best_i, ops.constant(-1, ember.int64)))
                elif i == 0 and j == 0:
                    best, best_i = load([*lead, h, w]), pos
                    continue
                else:
                    v = load([*lead, h, w])
                take = ops.logical_or(ops.gt(v, best), ops.isnan(v))
                if take_first is not None:
                    take = ops.logical_or(take, take_first)
                best = ops.where(take, v, best)
                best_i = ops.where(take, pos, best_i)
        return best, best_i

    return (ir.Pointwise(tuple(vals.shape), lambda idx: window(idx)[0], vals.dtype,
                         _origins((x,))),
            ir.Pointwise(tuple(idx_val.shape), lambda idx: window(idx)[1], idx_val.dtype,
                         _origins((x,))))


@register_lowering(aten.max_pool2d_with_indices_backward.default)
def _max_pool2d_with_indices_backward(grad_output, x, kernel_size, stride, padding, dilation,
                                      ceil_mode, indices):
    """Each input position sums the output gradients of the windows whose index names it.
    The windows that can hold input row ``h`` end at ``(h + pad) // stride``; the few before
    it are checked too (an index names a position of its own window, so the comparison
    leaves out the others). Half types accumulate in float32, as the eager kernel does."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args(kernel_size, stride, padding, dilation)
    val = _out_val()
    out_h, out_w = grad_output.get_size()[-2:]
    in_w = x.get_size()[-1]
    rh, rw = (kh - 1) * dh // sh + 1, (kw - 1) * dw // sw + 1
    if rh * rw > _MAX_WINDOW:
        raise NotImplementedError("many overlapping windows run eagerly")
    acc_dtype = ember.float32 if val.dtype in (ember.float16, ember.bfloat16) else val.dtype
    load_g, load_i = grad_output.make_loader(), indices.make_loader()

    def inner(idx):
        *lead, h, w = idx
        here = ops.index_expr(h * in_w + w, ember.int64)
        total = ops.constant(0, acc_dtype)
        for a in reversed(range(rh)):  # windows in ascending order, as the eager sum runs
            for b in reversed(range(rw)):
                oh, ow = ir.FloorDiv(h + ph, sh) - a, ir.FloorDiv(w + pw, sw) - b
                out = [*lead, oh, ow]

                def contribution(out=out):
                    g = load_g(out)
                    g = g if g.dtype == acc_dtype else ops.to_dtype(g, acc_dtype)
                    return ops.where(ops.eq(load_i(out), here), g,
                                     ops.constant(0, acc_dtype))
                valid = _inside(oh, ow, out_h, out_w)
                total = ops.add(total, ops.masked(valid, contribution, 0))
        return total if acc_dtype == val.dtype else ops.to_dtype(total, val.dtype)
    return ir.Pointwise(tuple(val.shape), inner, val.dtype, _origins((grad_output,)))


# the lowerings that choose among kernels by timing (mm, addmm, bmm), kept in their own
# package; imported last, since they build on the helpers above
from . import kernel  # noqa: E402,F401

"""Lowerings: one function per aten overload, turning the op's IR inputs into IR (PyTorch's
``torch._inductor.lowering``).

Pointwise ops become lazy ``Pointwise`` nodes whose ``inner_fn`` calls the matching ``ops``
method; reductions become ``Reduction`` nodes, cumulative ops ``Scan`` nodes and accumulating
indexed writes (index_put with accumulate, index_add, scatter_add, embedding's backward)
``Scatter`` nodes; view ops become ``ReinterpretView``s whose size,
stride and offset are the ones the traced graph recorded (``node.meta["val"]``), so ember's
view rules (``_kernels/rules``) are reused, not restated. Ops with no entry here run through
``FallbackKernel`` (the eager op), which ``GraphLowering`` counts and logs.

Dtypes follow the traced graph too: every lowering reads its result dtype from
``meta["val"]`` and computes in the promoted dtype of its inputs, as the eager kernels do.
"""
import math

import ember
from ember.fx.node import Node

from .._core.strides import contiguous_strides
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


# the negative bit's lazy view as the values it stands for (PyTorch's lowering): a buffer holds
# values, which kernels and reinterpreting views read as they are
register_lowering(aten._neg_view.default)(_unary("neg"))


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


def reduction(x, dims, keepdim, reduction_type, dtype, fn=None, **welford):
    """``Reduction`` of ``fn(x)`` (``x`` by default) over ``dims`` in ``dtype``
    (``"welford_reduce"``: a ``WelfordReduction``, given its ``output_index``)."""
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
    if reduction_type == "welford_reduce":
        return ir.WelfordReduction(ranges, rranges, inner, dtype, origins=_origins((x,)),
                                   **welford)
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
    return _stat_mean(x, _dims(x, dim), keepdim, dtype)


def _stat_mean(x, dims, keepdim, dtype):
    """``sum / n``, float and the half types summed in double (a float sum of ``1e4 + noise``
    loses what numpy's pairwise sum keeps): the sum ``_var`` shares."""
    n = math.prod(x.get_size()[d] for d in dims)
    acc = _stat_acc_dtype(dtype)
    total = V.graph.realize(reduction(x, dims, keepdim, "sum", acc))
    load = total.make_loader()
    return ir.Pointwise(total.get_size(),
                        lambda idx: _as(ops.truediv(load(idx), ops.constant(n, acc)), dtype),
                        dtype, _origins(()))


def _stat_acc_dtype(dtype):
    return ember.float64 if dtype in (ember.float32, ember.float16, ember.bfloat16) else dtype


def _var(x, dims, correction, keepdim, dtype):
    """Variance and mean. Over rows (the innermost dim reduced) in one vectorised pass of
    shifted sums: with ``K`` the row's first element, ``s1 = sum(x - K)`` and
    ``s2 = sum((x - K)**2)`` give ``var = (s2 - s1**2 / n) / (n - correction)``, summed in the
    same loop as the mean's plain sum. Shifting by an element of the row keeps the cancellation
    small (the textbook shifted-data algorithm): in double, the float rows of ``1e4 + noise``
    keep every digit float has. On 4096x1024 layer_norm it is 8% faster than the two passes
    (the mean, then the squared deviations) it replaced, which remain for a reduced extent
    that may be 0 (symbolic or empty: no first element to load). Welford's update, whose serial
    dependence OpenMP cannot vectorise along a row, was 16x slower (benchmarks/NOTES.md).
    Over a strided dim (columns: batch norm's statistics) Welford's single pass runs,
    vectorised across the kept elements, so the input is read once (on the loaded 2-core
    machine it was measured on, two passes were still 1.1-2.3x faster: see NOTES). Both accumulate
    float and the half types in double, as ATen's CPU kernels do (``1e4 + noise`` keeps its
    variance; it costs 4% on layer_norm). NaN and inf give NaN, as ATen's (``x - K`` or
    ``s2 - s1**2 / n`` is ``inf - inf``)."""
    if not _reduces_innermost(x, dims):
        return _var_welford(x, dims, correction, keepdim, dtype)
    acc = _stat_acc_dtype(dtype)
    size = x.get_size()
    n = math.prod(size[d] for d in dims)
    xload = broadcast_loader(x, size, acc)
    denom = max(n - correction, 0)
    if isinstance(n, int) and n > 0:
        def shifted(idx):
            return ops.sub(xload(idx), xload([0 if d in dims else i for d, i in enumerate(idx)]))

        def squared(idx):
            d = shifted(idx)
            return ops.mul(d, d)
        sums = [V.graph.realize(reduction(ir.Pointwise(size, f, acc, _origins((x,))), dims,
                                          keepdim, "sum", acc)) for f in (shifted, squared)]
        s1, s2 = (b.make_loader() for b in sums)

        def var_at(idx):
            a = s1(idx)
            m2 = ops.sub(s2(idx), ops.truediv(ops.mul(a, a), ops.constant(n, acc)))
            # rounding may leave a tiny negative m2 where the true one is 0
            m2 = ops.maximum(m2, ops.constant(0, acc))
            return _as(ops.truediv(m2, ops.constant(denom, acc)), dtype)
        var = ir.Pointwise(sums[0].get_size(), var_at, dtype, _origins(()))
        return var, _stat_mean(x, dims, keepdim, dtype)
    mean = _stat_mean(x, dims, keepdim, acc)  # the sum mean() of the same dims shares
    mload = mean.make_loader()

    def centred(idx):
        kept = ([0 if d in dims else i for d, i in enumerate(idx)] if keepdim else
                [i for d, i in enumerate(idx) if d not in dims])
        d = ops.sub(xload(idx), mload(kept))
        return ops.mul(d, d)
    dev = ir.Pointwise(size, centred, acc, _origins((x,)))
    ssq = V.graph.realize(reduction(dev, dims, keepdim, "sum", acc))
    sload = ssq.make_loader()
    var = ir.Pointwise(ssq.get_size(),
                       lambda idx: _as(ops.truediv(sload(idx), ops.constant(denom, acc)), dtype),
                       dtype, _origins(()))
    return var, _stat_mean(x, dims, keepdim, dtype)


def _reduces_innermost(x, dims):
    """Whether ``dims`` include ``x``'s innermost dim in memory (the smallest stride of a
    realized input; the last dim of a lazy one), or every dim that is not 1."""
    size = x.get_size()
    kept = [d for d, n in enumerate(size) if n != 1 and d not in dims]
    if not kept:
        return True
    stride = (x.layout.stride if isinstance(x, (ir.Buffer, ir.ReinterpretView))
              else contiguous_strides(size))
    inner = min((d for d, n in enumerate(size) if n != 1), key=lambda d: (abs(stride[d]), -d))
    return inner in dims


def _var_welford(x, dims, correction, keepdim, dtype):
    """Variance from Welford's m2 and the mean from a plain sum, in one pass over the input
    (one kernel). The sum keeps the mean's IEEE behaviour (``mean([inf, 1])`` is inf, where
    Welford's running mean turns NaN); float and the half types sum in double, as the
    Welford update does (codegen.cpp), so the mean of ``1e4 + noise`` is as accurate."""
    n = math.prod(x.get_size()[d] for d in dims)
    m2 = V.graph.realize(reduction(x, dims, keepdim, "welford_reduce", dtype, output_index=1))
    denom = max(n - correction, 0)
    m2load = m2.make_loader()
    var = ir.Pointwise(m2.get_size(),
                       lambda idx: ops.truediv(m2load(idx), ops.constant(denom, dtype)),
                       dtype, _origins(()))
    return var, _stat_mean(x, dims, keepdim, dtype)


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
def _index_input(index, size, op, dim=0, wrap=False):
    """``index`` in memory, with the wrapper told to check it lies in ``[0, size)`` before
    the kernels load through it (``[-size, size)`` with ``wrap``: negative indices count from
    the end, as Python's do; the loader returns them wrapped)."""
    index = V.graph.realize(index)
    V.graph.add_bounds_check(index, size, op, dim, wrap)
    load = index.make_loader()
    if not wrap:
        return load

    def load_wrapped(idx):
        i = load(idx)
        return ops.where(ops.lt(i, ops.constant(0, i.dtype)),
                         ops.add(i, ops.constant(size, i.dtype)), i)
    return load_wrapped


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


# -- scans ----------------------------------------------------------------------------------------
def _scan(x, dim, combine_fn, dtypes, inits, values=None):
    """``Scan`` nodes (one per value of the tuple ``combine_fn`` carries) of ``x`` along
    ``dim``: ``values(load, idx)`` gives the scanned tuple of element ``idx`` (by default
    ``x``'s element as ``dtypes[0]``). A dim of one element needs no carry: its result is
    ``combine_fn(inits, values)``, a pointwise node."""
    val = _out_val()
    size = tuple((val[0] if isinstance(val, (list, tuple)) else val).shape)
    load = broadcast_loader(x, size, dtypes[0])
    inner = (lambda idx: (load(idx),)) if values is None else (lambda idx: values(load, idx))
    if not size or size[dim % len(size)] <= 1:
        def element(idx, k):
            start = tuple(ops.constant(v, dt) for v, dt in zip(inits, dtypes))
            return combine_fn(start, inner(idx))[k]
        return [ir.Pointwise(size, lambda idx, k=k: element(idx, k), dt, _origins((x,)))
                for k, dt in enumerate(dtypes)]
    group = object()
    return [ir.Scan(size, dim % len(size), combine_fn, inner, dtypes, inits, k, group,
                    _origins((x,))) for k in range(len(dtypes))]


@register_lowering(aten.cumsum.default, aten.cumprod.default)
def _cumsum_cumprod(x, dim, *, dtype=None):
    """Integer and bool inputs accumulate in int64, as the traced result says; float16 and
    bfloat16 in float32 (their register type), rounded when stored."""
    out = _out_val().dtype
    if V.graph.current_node.target is aten.cumsum.default:
        # -0.0 is the identity of float addition (0.0 + -0.0 is 0.0; cumsum([-0.0]) is -0.0)
        op, init = ops.add, (-0.0 if out.is_floating_point else 0)
    else:
        op, init = ops.mul, 1
    return _scan(x, dim, lambda c, v: (op(c[0], v[0]),), (out,), (init,))[0]


def _log_add_exp(a, b):
    """``log(exp(a) + exp(b))`` as ATen's logcumsumexp kernel computes it: equal infinities
    give themselves (not ``inf - inf``), NaN propagates."""
    lo, hi = ops.minimum(a, b), ops.maximum(a, b)
    mixed = ops.logical_or(ops.ne(lo, hi), ops.isfinite(lo))
    return ops.where(mixed, ops.add(ops.log1p(ops.exp(ops.sub(lo, hi))), hi), a)


@register_lowering(aten.logcumsumexp.default)
def _logcumsumexp(x, dim):
    out = _out_val().dtype
    if not out.is_floating_point:
        raise NotImplementedError("logcumsumexp of an integer tensor")
    return _scan(x, dim, lambda c, v: (_log_add_exp(c[0], v[0]),), (out,), (-math.inf,))[0]


@register_lowering(aten.cummax.default, aten.cummin.default)
def _cummax_cummin(x, dim):
    """Values and indices of the running maximum (minimum): a later equal element or a NaN
    takes over, as ATen's CPU kernel does (``x >= best || isnan(x)``)."""
    values, indices = _out_val()
    dtype = values.dtype
    is_max = V.graph.current_node.target is aten.cummax.default
    if dtype.is_floating_point:
        start = -math.inf if is_max else math.inf
    elif dtype == ember.bool:
        start = not is_max
    else:
        info = ember.iinfo(dtype)
        start = info.min if is_max else info.max
    ndim = len(values.shape)
    d = dim % ndim if ndim else 0

    def elements(load, idx):
        pos = ops.index_expr(idx[d] if ndim else 0, ember.int64)
        return load(idx), pos

    def combine(best, new):
        better = ops.ge(new[0], best[0]) if is_max else ops.le(new[0], best[0])
        take = ops.logical_or(better, ops.isnan(new[0]))
        return ops.where(take, new[0], best[0]), ops.where(take, new[1], best[1])
    return tuple(_scan(x, d, combine, (dtype, ember.int64), (start, 0), elements))


# -- accumulating stores ----------------------------------------------------------------------------
def _scatter(init, ranges, output_indexer, inner_fn, inputs):
    """A ``Scatter`` of the current node's size and dtype: ``init`` (a value or an IR node
    giving the initial buffer), then ``inner_fn(index)`` added at ``output_indexer(index)``
    for every index of ``ranges``."""
    val = _out_val()
    size, dtype = tuple(val.shape), val.dtype
    init_fn = broadcast_loader(init, size, dtype)
    return ir.Scatter(size, init_fn, ranges, output_indexer, inner_fn, dtype, _origins(inputs))


def _as(v, dtype):
    return v if v.dtype == dtype else ops.to_dtype(v, dtype)


@register_lowering(aten.embedding_dense_backward.default)
def _embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                              scale_grad_by_freq):
    """Row ``indices[i]`` of the weight's gradient sums the gradient rows ``i`` that name it;
    as in eager (ATen's CPU kernel), rows naming ``padding_idx`` or an index outside
    ``[0, num_weights)`` (negative ones too: no wrapping) add nothing (a zero, into row 0);
    with ``scale_grad_by_freq`` each row is divided by how often its index occurs (counted by
    a scatter of ones first)."""
    dtype = _out_val().dtype
    isize = tuple(indices.get_size())
    load_g = broadcast_loader(grad_output, grad_output.get_size(), dtype)
    load_i = V.graph.realize(indices).make_loader()

    def in_range(i):
        return ops.logical_and(ops.ge(i, ops.constant(0, i.dtype)),
                               ops.lt(i, ops.constant(num_weights, i.dtype)))

    def row_of(i):
        return ops.indirect_indexing(ops.where(in_range(i), i, ops.constant(0, i.dtype)))

    def row(idx):
        return row_of(load_i(idx[:-1]))
    counts = None
    if scale_grad_by_freq:
        counts = V.graph.realize(ir.Scatter(
            (num_weights,), lambda idx: ops.constant(0, ember.int64), isize,
            lambda idx: [row_of(load_i(idx))],
            lambda idx: _as(in_range(load_i(idx)), ember.int64), ember.int64, _origins(())))
        load_c = counts.make_loader()

    def value(idx):
        g = load_g(idx)
        if counts is not None:
            g = ops.truediv(g, _as(load_c([row(idx)]), dtype))
        i = load_i(idx[:-1])
        keep = ops.logical_and(in_range(i), ops.ne(i, ops.constant(padding_idx, i.dtype)))
        return ops.where(keep, g, ops.constant(0, dtype))
    return _scatter(0, tuple(grad_output.get_size()), lambda idx: [row(idx), idx[-1]],
                    value, (grad_output,))


@register_lowering(aten.index_put.default)
def _index_put(x, indices, values, accumulate=False):
    """``x`` with ``values`` added at the elements the integer index tensors pick (each
    index tensor indexes one dim; they broadcast together). Assignment (no accumulate), bool
    masks and index tensors separated by full slices run eagerly."""
    if not accumulate:
        raise NotImplementedError("index_put without accumulate runs eagerly")
    size = x.get_size()
    dtype = _out_val().dtype
    picked = [d for d, t in enumerate(indices) if t is not None]
    if not picked or picked != list(range(picked[0], picked[-1] + 1)) or any(
            indices[d].get_dtype() not in (ember.int64, ember.int32) for d in picked):
        raise NotImplementedError("index_put with these indices runs eagerly")
    first, last = picked[0], picked[-1] + 1
    bshape = _broadcast_shape([indices[d].get_size() for d in picked])
    ranges = tuple(size[:first]) + bshape + tuple(size[last:])
    nb = len(bshape)
    loads = [_index_input(indices[d], size[d], "index_put", d, wrap=True) for d in picked]
    shapes = [indices[d].get_size() for d in picked]
    load_v = broadcast_loader(values, ranges, dtype)

    def coords(idx):
        b = idx[first:first + nb]
        picks = [ops.indirect_indexing(load(_broadcast_index(b, shape)))
                 for load, shape in zip(loads, shapes)]
        return list(idx[:first]) + picks + list(idx[first + nb:])
    return _scatter(x, ranges, coords, load_v, (x, values))


def _broadcast_shape(shapes):
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for k, m in enumerate(s):
            j = n - len(s) + k
            out[j] = m if out[j] == 1 else out[j]
    return tuple(out)


def _broadcast_index(idx, shape):
    """The element of a tensor of ``shape`` that broadcasts to element ``idx``."""
    lead = len(idx) - len(shape)
    return [0 if m == 1 else idx[lead + k] for k, m in enumerate(shape)]


@register_lowering(aten.index_add.default)
def _index_add(x, dim, index, source, *, alpha=1):
    """Slice ``i`` of ``source`` along ``dim``, times ``alpha``, added to slice ``index[i]``
    of ``x``."""
    size = x.get_size()
    if not size:
        raise NotImplementedError("index_add into a 0-dim tensor")
    dim = dim % len(size)
    dtype = _out_val().dtype
    load_i = _index_input(index, size[dim], "index_add", dim)
    load_s = broadcast_loader(source, source.get_size(), dtype)
    ranges = tuple(source.get_size())
    if len(ranges) != len(size):
        raise NotImplementedError("index_add of a 0-dim source")
    ipos = (lambda idx: [idx[dim]]) if index.get_size() else (lambda idx: [])

    def value(idx):
        v = load_s(idx)
        return v if alpha == 1 else ops.mul(v, ops.constant(alpha, dtype))
    return _scatter(x, ranges, lambda idx: [ops.indirect_indexing(load_i(ipos(idx)))
                                            if d == dim else i for d, i in enumerate(idx)],
                    value, (x, source))


@register_lowering(aten.scatter_add.default, aten.scatter_reduce.two)
def _scatter_add(x, dim, index, src, reduce="sum", *, include_self=True):
    """``src[i]`` added to ``x`` at ``i`` with its ``dim`` coordinate replaced by
    ``index[i]`` (scatter_reduce's other reductions, and sums leaving ``self`` out, run
    eagerly)."""
    if reduce != "sum" or not include_self:
        raise NotImplementedError(f"scatter_reduce {reduce!r} runs eagerly")
    size = x.get_size()
    if not size:
        raise NotImplementedError("scatter_add into a 0-dim tensor")
    dim = dim % len(size)
    dtype = _out_val().dtype
    load_i = _index_input(index, size[dim], "scatter_add", dim)
    load_s = broadcast_loader(src, src.get_size(), dtype)
    return _scatter(x, tuple(index.get_size()),
                    lambda idx: [ops.indirect_indexing(load_i(idx)) if d == dim else i
                                 for d, i in enumerate(idx)], load_s, (x, src))


# the lowerings that choose among kernels by timing (mm, addmm, bmm), kept in their own
# package; imported last, since they build on the helpers above
from . import kernel  # noqa: E402,F401

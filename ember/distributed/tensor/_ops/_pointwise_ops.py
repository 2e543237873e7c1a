"""Pointwise ops: sharded on any dim of the broadcast shape (each input on the dim it
broadcasts from, replicated where it is broadcast), or replicated; Partial inputs pass through
only where the op commutes with the reduction (PyTorch's rule tables: sums through add/sub,
sum and avg through scaling, max/min through non-decreasing functions, ...), otherwise they are
reduced first. Every op tagged ``pointwise`` is registered, as PyTorch registers its
``Tag.pointwise`` ops.
"""
import ember

from .._dtensor_spec import TensorMeta
from .._sharding_prop import _ShardingPlaceholder
from ..placement_types import Partial, Replicate
from .utils import infer_broadcast_dims_map, register_single_dim_strategy, resolve_ops


def _tensor_metas(args_meta):
    for a in args_meta:
        if isinstance(a, TensorMeta):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, TensorMeta))


def pointwise_strategy(partial_rules=()):
    """The single-dim strategy of a pointwise op with ``partial_rules`` as extra lists (those
    of the call's length: an op called with a scalar has one input fewer)."""
    def strategy(op, args_meta, kwargs_meta):
        metas = list(_tensor_metas(args_meta))
        common = ember.broadcast_shapes(*[m.shape for m in metas])
        n_out = sum(1 for r in op._schema.returns if r.is_tensor_like)
        rows = []
        for i in range(len(common)):
            row = [_ShardingPlaceholder(i)] * n_out
            for m in metas:
                src = infer_broadcast_dims_map(common, m.shape)[i]
                row.append(_ShardingPlaceholder(src) if src >= 0 else Replicate())
            rows.append(row)
        rows.extend(list(r) for r in partial_rules if len(r) == n_out + len(metas))
        return rows
    return strategy


def _register(names, rules=()):
    ops = resolve_ops(names)
    register_single_dim_strategy(ops, allow_uneven_sharding=True)(pointwise_strategy(rules))
    return set(ops)


_UNARY_LINEAR = [[Partial("sum"), Partial("sum")], [Partial("avg"), Partial("avg")]]

_BINARY_ADDITIVE = [
    [Partial("sum"), Partial("sum"), Partial("sum")],
    [Partial("avg"), Partial("avg"), Partial("avg")],
    # adding a replicated value keeps avg/max/min pending (a sum would add it n times)
    [Partial("avg"), Partial("avg"), Replicate()],
    [Partial("max"), Partial("max"), Replicate()],
    [Partial("min"), Partial("min"), Replicate()],
    [Partial("avg"), Replicate(), Partial("avg")],
]
_MUL = _UNARY_LINEAR + [
    [Partial("sum"), Partial("sum"), Replicate()], [Partial("avg"), Partial("avg"), Replicate()],
    [Partial("sum"), Replicate(), Partial("sum")], [Partial("avg"), Replicate(), Partial("avg")],
]
_DIV = _UNARY_LINEAR + [
    [Partial("sum"), Partial("sum"), Replicate()], [Partial("avg"), Partial("avg"), Replicate()],
]
_NON_DECREASING = [[Partial("max"), Partial("max")], [Partial("min"), Partial("min")]]
_NON_INCREASING = [[Partial("min"), Partial("max")], [Partial("max"), Partial("min")]]
_ALL_PARTIAL_UNARY = [[Partial(r), Partial(r)] for r in ("sum", "avg", "max", "min")]
_ALL_PARTIAL_BINARY = [[Partial(r)] * 3 for r in ("sum", "avg", "max", "min")]
_MONOTONE_BINARY = [
    [Partial("max"), Partial("max"), Replicate()], [Partial("max"), Replicate(), Partial("max")],
    [Partial("min"), Partial("min"), Replicate()], [Partial("min"), Replicate(), Partial("min")],
]

_special = set()
_special |= _register(["add.Tensor", "add_.Tensor", "sub.Tensor", "sub_.Tensor"],
                      _BINARY_ADDITIVE)
_special |= _register(["mul.Tensor", "mul_.Tensor"], _MUL)
_special |= _register(["div.Tensor", "div_.Tensor"], _DIV)
_special |= _register(["div.Scalar", "div_.Scalar", "mul.Scalar", "mul_.Scalar"], _UNARY_LINEAR)
_special |= _register(["neg.default", "neg_.default"], _UNARY_LINEAR + _NON_INCREASING)
_special |= _register([
    "asinh.default", "asinh_.default", "atan.default", "atan_.default", "ceil.default",
    "ceil_.default", "deg2rad.default", "erf.default", "erf_.default", "exp.default",
    "exp_.default", "exp2.default", "exp2_.default", "expm1.default", "expm1_.default",
    "floor.default", "floor_.default", "rad2deg.default", "relu.default", "relu_.default",
    "round.default", "round_.default", "round.decimals", "sgn.default", "sigmoid.default",
    "sigmoid_.default", "sign.default", "sign_.default", "sinh.default", "sinh_.default",
    "tanh.default", "tanh_.default", "trunc.default", "trunc_.default", "nan_to_num.default",
    "hardshrink.default", "threshold.default"], _NON_DECREASING)
_special |= _register(["erfc.default", "erfc_.default"], _NON_INCREASING)
_special |= _register(["positive.default"], _ALL_PARTIAL_UNARY)
_special |= _register(["logaddexp.default", "logaddexp2.default"], _MONOTONE_BINARY)
_special |= _register(["clamp_min.Tensor", "fmax.default", "maximum.default"],
                      _MONOTONE_BINARY + [[Partial("max")] * 3])
_special |= _register(["clamp_max.Tensor", "fmin.default", "minimum.default"],
                      _MONOTONE_BINARY + [[Partial("min")] * 3])
_special |= _register(["copy_.default"], _ALL_PARTIAL_BINARY)


def _tagged_pointwise_ops():
    aten = ember.ops.aten
    for name in dir(aten):
        packet = getattr(aten, name, None)
        if not hasattr(packet, "overloads"):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if "pointwise" in op.tags and not op._schema.kind_is_out:
                yield op


register_single_dim_strategy([op for op in _tagged_pointwise_ops() if op not in _special],
                             allow_uneven_sharding=True)(pointwise_strategy())

"""Registration of sharding strategies and the small helpers strategies share."""
import ember

from ..placement_types import Shard, _StridedShard


def _propagator():
    from .._api import DTensor
    return DTensor._op_dispatcher.sharding_propagator


def resolve_ops(names):
    """``["add.Tensor", ...]`` as ``ember.ops.aten`` overloads."""
    ops = []
    for name in names:
        packet, _, overload = name.partition(".")
        ops.append(getattr(getattr(ember.ops.aten, packet), overload or "default"))
    return ops


def register_op_strategy(ops):
    """Register ``fn(op_schema) -> [OpSpec]`` for ``ops`` (overloads or names)."""
    def wrapper(fn):
        for op in resolve_ops(ops) if isinstance(ops[0], str) else ops:
            _propagator().register_op_strategy(op, fn)
        return fn
    return wrapper


def register_single_dim_strategy(ops, allow_uneven_sharding=False):
    """Register ``fn(op, args_meta, kwargs_meta) -> [[Placement | _ShardingPlaceholder]]``."""
    def wrapper(fn):
        for op in resolve_ops(ops) if isinstance(ops[0], str) else ops:
            _propagator().register_single_dim_strategy(op, fn, allow_uneven_sharding)
        return fn
    return wrapper


def normalize_dim(dim, ndim):
    return dim if dim >= 0 else dim + ndim


def infer_broadcast_dims_map(common_shape, input_shape):
    """For each dim of the broadcast shape, the input dim it comes from (-1: broadcast)."""
    common_ndim, input_ndim = len(common_shape), len(input_shape)
    dims = [-1] * common_ndim
    for idx in range(-1, -1 - input_ndim, -1):
        if input_shape[idx] == common_shape[idx]:
            dims[common_ndim + idx] = input_ndim + idx
    return dims


def with_dim(placement, dim):
    """A shard placement of the same kind on tensor dim ``dim``."""
    if isinstance(placement, _StridedShard):
        return _StridedShard(dim, split_factor=placement.split_factor)
    return Shard(dim)


def register_op_handler(ops):
    """Handle ``ops`` with ``fn(dispatcher, op, args, kwargs)`` instead of a strategy."""
    def wrapper(fn):
        from .._api import DTensor
        for op in resolve_ops(ops):
            DTensor._op_dispatcher._custom_op_handlers[op] = fn
        return fn
    return wrapper

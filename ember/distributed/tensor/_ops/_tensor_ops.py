"""Ops that keep their input's layout (clone, detach, fill_, zero_, ...), ``_to_copy``,
the ``*_like`` factories (a Partial input gives a Replicate output: the values are new),
``new_*`` (replicated, or like the input where the shape is the same), ``cat``/``stack`` (every
input laid out alike, the joined dim whole), ``item()`` and ``equal``."""
import ember
import ember.distributed as dist

from .._dtensor_spec import DTensorSpec
from .._op_schema import OpSpec
from .._redistribute import redistribute_local_tensor
from .._sharding_prop import _ShardingPlaceholder
from ..placement_types import Partial, Replicate, _is_shard_like
from .utils import (normalize_dim, register_op_handler, register_op_strategy,
                    register_single_dim_strategy, with_dim)


@register_op_strategy(["clone.default", "contiguous.default", "detach.default",
                       "alias.default", "fill_.Scalar", "zero_.default",
                       "view.dtype", "empty_like.default"])
def propagate_single_input_strategy(op_schema):
    spec = op_schema.args_schema[0]
    return [OpSpec(DTensorSpec(spec.mesh, spec.placements), [spec])]


@register_op_strategy(["ones_like.default", "zeros_like.default", "full_like.default"])
def create_like_strategy(op_schema):
    spec = op_schema.args_schema[0]
    placements = tuple(Replicate() if isinstance(p, Partial) else p for p in spec.placements)
    return [OpSpec(DTensorSpec(spec.mesh, placements), [spec])]


@register_op_strategy(["new_empty.default", "new_full.default", "new_ones.default",
                       "new_zeros.default", "new_empty_strided.default"])
def new_factory_strategy(op_schema):
    spec, size = op_schema.args_schema[0], op_schema.args_schema[1]
    mesh = spec.mesh
    strategies = [OpSpec(DTensorSpec(mesh, (Replicate(),) * mesh.ndim), [spec], [0.0])]
    # an uninitialized output may also take a Partial input's layout (it is written next)
    uninitialized = op_schema.op._schema.base_name in ("new_empty", "new_empty_strided")
    if tuple(spec.shape) == tuple(size) and (spec.is_sharded() or uninitialized):
        strategies.append(OpSpec(DTensorSpec(mesh, spec.placements), [spec], [-0.1]))
    return strategies


def _partial_survives_cast(reduce_op, src, dst):
    """Whether a Partial of ``reduce_op`` may stay pending through a cast from ``src`` to
    ``dst`` (not to bool, and not a sum from floating point to integers)."""
    if dst is None or src == dst:
        return True
    if dst is ember.bool:
        return False
    return reduce_op in ("max", "min") or not (src.is_floating_point and
                                                not dst.is_floating_point)


@register_single_dim_strategy(["_to_copy.default"], allow_uneven_sharding=True)
def to_copy_strategy(op, args_meta, kwargs_meta):
    meta = args_meta[0]
    rows = [[_ShardingPlaceholder(d), _ShardingPlaceholder(d)] for d in range(len(meta.shape))]
    rows += [[Partial(r), Partial(r)] for r in Partial.ALL_REDUCE_OPS
             if _partial_survives_cast(r, meta.dtype, kwargs_meta.get("dtype"))]
    return rows


@register_op_handler(["_local_scalar_dense.default"])
def local_scalar_dense_handler(dispatcher, op_call, args, kwargs):
    """``item()``: this rank's local value (PyTorch's: no communication)."""
    return op_call(args[0]._local_tensor)


@register_op_handler(["equal.default"])
def equal_handler(dispatcher, op_call, args, kwargs):
    """Both sides laid out as the one with more shards (Partial reduced first, a 0-dim side
    replicated), compared locally, and the answers combined over the world (PyTorch's rule)."""
    a, b = args
    mesh = a.device_mesh
    if a.ndim == 0 or b.ndim == 0:
        placements = (Replicate(),) * mesh.ndim
    else:
        src = a if a._spec.num_shards >= b._spec.num_shards else b
        placements = tuple(Replicate() if isinstance(p, Partial) else p for p in src.placements)
    locals_ = [x._local_tensor if x.placements == placements else
               redistribute_local_tensor(x._local_tensor, x._spec,
                                         DTensorSpec(mesh, placements, x._spec.tensor_meta))
               for x in (a, b)]
    same = ember.tensor(int(op_call(*locals_)), device=mesh.device_type)
    dist.all_reduce(same, op=dist.ReduceOp.MIN)
    return bool(same.item())


def _merge(current, new):
    """The placement ``cat``/``stack`` inputs follow on one mesh dim (PyTorch's priority:
    a shard over a Partial over Replicate; two different shards or Partials: Replicate)."""
    if current == new:
        return current
    if current.is_partial():
        return new if _is_shard_like(new) else (Replicate() if new.is_partial() else current)
    if _is_shard_like(current):
        return Replicate() if _is_shard_like(new) else current
    return new


@register_op_strategy(["stack.default"])
def stack_strategy(op_schema):
    specs = op_schema.args_schema[0]
    mesh = specs[0].mesh
    dim = normalize_dim(op_schema.args_schema[1] if len(op_schema.args_schema) > 1 else 0,
                        specs[0].ndim + 1)
    follow = list(specs[0].placements)
    for spec in specs[1:]:
        follow = [_merge(c, n) for c, n in zip(follow, spec.placements)]
    inputs = [DTensorSpec(mesh, tuple(follow), tensor_meta=s.tensor_meta) for s in specs]
    out = tuple(with_dim(p, p.dim + 1) if _is_shard_like(p) and p.dim >= dim else p
                for p in follow)
    return [OpSpec(DTensorSpec(mesh, out), inputs)]


@register_op_strategy(["cat.default"])
def cat_strategy(op_schema):
    specs = op_schema.args_schema[0]
    mesh = specs[0].mesh
    dim = normalize_dim(op_schema.args_schema[1] if len(op_schema.args_schema) > 1 else 0,
                        specs[0].ndim)
    strategies, seen = [], set()
    for spec in specs:
        exemplar = tuple(Replicate() if _is_shard_like(p) and p.dim == dim else p
                         for p in spec.placements)
        if exemplar in seen:
            continue
        seen.add(exemplar)
        strategies.append(OpSpec(DTensorSpec(mesh, exemplar),
                                 [DTensorSpec(mesh, exemplar, tensor_meta=s.tensor_meta)
                                  for s in specs]))
    return strategies

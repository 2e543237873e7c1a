"""View-like ops: a shard follows its dim to the output.

``view``/``_unsafe_view``/``reshape`` group the input and output dims into runs with equal
products (PyTorch's ``view_groups``): a dim kept as is keeps its shard; in a flattened run the
first dim's shard (evenly sharded, or the run's last dim) becomes the output dim's shard and a
later dim's shard becomes a ``_StridedShard`` of it (for ``reshape``, and where the run is also
split, it is gathered instead, as PyTorch does); in a split run the shard goes to the first
output dim if that divides evenly. A shard that cannot follow is an error for the views (which
must not copy: PyTorch's messages) and is gathered first for ``reshape``. ``expand``,
``permute``, ``transpose``, ``unsqueeze``, ``squeeze``, ``slice`` and ``select`` map dims
directly (a sliced or selected sharded dim is gathered first). Partial passes through.
"""
import math

import ember

from .._dtensor_spec import DTensorSpec
from .._op_schema import OpSpec
from ..placement_types import Replicate, Shard, _StridedShard, _is_shard_like
from .utils import normalize_dim, register_op_handler, register_op_strategy, with_dim

aten = ember.ops.aten


def _infer_size(total, sizes):
    sizes = list(sizes)
    if -1 in sizes:
        i = sizes.index(-1)
        known = math.prod(s for s in sizes if s != -1)
        sizes[i] = total // known if known else 0
    return sizes


def view_groups(from_size, to_size):
    """Runs ``(input dims, output dims)`` of equal products covering both shapes, size-1 dims
    alone."""
    to_size = _infer_size(math.prod(from_size), to_size)
    groups, fi, ti = [], 0, 0
    while fi < len(from_size) or ti < len(to_size):
        fdims, tdims = [], []
        f = t = 1
        if fi < len(from_size):
            f = from_size[fi]
            fdims.append(fi)
            fi += 1
        if ti < len(to_size):
            t = to_size[ti]
            tdims.append(ti)
            ti += 1
        if f == 1 and t != 1:
            ti -= 1
            tdims = []
        elif f != 1 and t == 1:
            fi -= 1
            fdims = []
        else:
            while f != t:
                if f < t:
                    f *= from_size[fi]
                    fdims.append(fi)
                    fi += 1
                else:
                    t *= to_size[ti]
                    tdims.append(ti)
                    ti += 1
        groups.append((fdims, tdims))
    return groups, to_size


def _shards_of(placements, mesh, dim):
    return math.prod(mesh.size(i) for i, p in enumerate(placements)
                     if _is_shard_like(p) and p.dim == dim)


def _view_rule(spec, to_size, strict):
    """(input target placements, output placements) of viewing ``spec`` as ``to_size``."""
    shape = list(spec.shape)
    groups, to_size = view_groups(shape, to_size)
    group_of = {d: g for g in groups for d in g[0]}
    target, out = [], []
    for mesh_dim, p in enumerate(spec.placements):
        if not _is_shard_like(p):
            target.append(p)
            out.append(p)
            continue
        fdims, tdims = group_of[p.dim]
        n = _shards_of(spec.placements, spec.mesh, p.dim)
        new, error = _follow(p, shape, to_size, fdims, tdims, n, strict)
        if error is not None and strict:
            raise RuntimeError(error.format(mesh_dim=mesh_dim, size=spec.mesh.size(mesh_dim)))
        if new is None or isinstance(new, Replicate):
            target.append(Replicate())
            out.append(Replicate())
        else:
            target.append(p)
            out.append(new)
    return tuple(target), tuple(out)


_MUST_REDISTRIBUTE = ("This operation would remove or reshape sharded dimension {dim}, which "
                      "requires redistribution. Please redistribute the input first.")


def _follow(p, shape, to_size, fdims, tdims, n, strict):
    """The output placement of shard ``p`` in the run ``fdims -> tdims`` (``n`` shards of its
    dim), Replicate where it is gathered even for a view, or ``(None, error)`` where it cannot
    follow (the error has ``{mesh_dim}`` and ``{size}`` to fill)."""
    cannot = _MUST_REDISTRIBUTE.replace("{dim}", str(p.dim))
    if not tdims:
        return None, cannot
    if len(fdims) == 1 and len(tdims) == 1:
        return with_dim(p, tdims[0]), None
    if isinstance(p, _StridedShard):
        if len(fdims) == 1:  # unflattening a flattened run: the split factor names the dim
            for k in range(len(tdims)):
                if math.prod(to_size[t] for t in tdims[:k]) == p.split_factor and \
                        (k == len(tdims) - 1 or to_size[tdims[k]] % n == 0):
                    return Shard(tdims[k]), None
        return None, cannot
    first = p.dim == fdims[0]
    if len(fdims) > 1:  # a flatten, maybe followed by a split
        if shape[p.dim] % n != 0 and p.dim != fdims[-1]:
            return None, (f"Cannot flatten unevenly sharded tensor: dimension {p.dim} (size "
                          f"{shape[p.dim]}) is not evenly divisible by mesh dimension "
                          f"{{mesh_dim}} (size {{size}}). Please redistribute the tensor "
                          f"before this operation.")
        if not first:
            if len(tdims) == 1 and strict:
                sf = math.prod(shape[d] for d in fdims[:fdims.index(p.dim)])
                return _StridedShard(tdims[0], split_factor=sf), None
            return Replicate(), None
        if len(tdims) == 1:
            return Shard(tdims[0]), None
    if to_size[tdims[0]] % n == 0:  # a split: the first output dim takes the shard
        return Shard(tdims[0]), None
    return None, (f"Cannot unflatten unevenly sharded tensor: output dimension 0 (size "
                  f"{to_size[tdims[0]]}) is not evenly divisible by mesh dimension {{mesh_dim}} "
                  f"(size {{size}}). Please redistribute the tensor before this operation.")


def _view_strategy(strict):
    def strategy(op_schema):
        spec, size = op_schema.args_schema[0], op_schema.args_schema[1]
        target, out = _view_rule(spec, list(size), strict)
        return [OpSpec(DTensorSpec(spec.mesh, out),
                       [DTensorSpec(spec.mesh, target, tensor_meta=spec.tensor_meta)])]
    return strategy


register_op_strategy(["view.default", "_unsafe_view.default"])(_view_strategy(strict=True))
register_op_strategy(["reshape.default"])(_view_strategy(strict=False))


def _map_dims(op_schema, spec, dim_map, gather=()):
    """The strategy of an op moving input dim ``d`` to ``dim_map[d]`` (None: the dim is gone and
    must not be sharded), gathering the dims in ``gather`` first."""
    target, out = [], []
    for p in spec.placements:
        if _is_shard_like(p) and (p.dim in gather or dim_map[p.dim] is None):
            target.append(Replicate())
            out.append(Replicate())
        else:
            target.append(p)
            out.append(with_dim(p, dim_map[p.dim]) if _is_shard_like(p) else p)
    return [OpSpec(DTensorSpec(spec.mesh, tuple(out)),
                   [DTensorSpec(spec.mesh, tuple(target), tensor_meta=spec.tensor_meta)])]


@register_op_strategy(["expand.default"])
def expand_strategy(op_schema):
    spec, size = op_schema.args_schema[0], op_schema.args_schema[1]
    shift = len(size) - spec.ndim
    expanded = [d for d in range(spec.ndim) if spec.shape[d] == 1 and size[d + shift] not in
                (1, -1)]
    return _map_dims(op_schema, spec, {d: d + shift for d in range(spec.ndim)}, expanded)


@register_op_strategy(["permute.default"])
def permute_strategy(op_schema):
    spec, dims = op_schema.args_schema[0], op_schema.args_schema[1]
    dims = [normalize_dim(d, spec.ndim) for d in dims]
    return _map_dims(op_schema, spec, {d: dims.index(d) for d in range(spec.ndim)})


@register_op_strategy(["transpose.int"])
def transpose_strategy(op_schema):
    spec, a, b = op_schema.args_schema[:3]
    a, b = normalize_dim(a, spec.ndim), normalize_dim(b, spec.ndim)
    dim_map = {d: d for d in range(spec.ndim)}
    dim_map[a], dim_map[b] = b, a
    return _map_dims(op_schema, spec, dim_map)


@register_op_strategy(["unsqueeze.default"])
def unsqueeze_strategy(op_schema):
    spec, dim = op_schema.args_schema[0], op_schema.args_schema[1]
    dim = normalize_dim(dim, spec.ndim + 1)
    return _map_dims(op_schema, spec, {d: d + (d >= dim) for d in range(spec.ndim)})


@register_op_strategy(["squeeze.dims"])
def squeeze_strategy(op_schema):
    spec, dims = op_schema.args_schema[0], op_schema.args_schema[1]
    gone = {normalize_dim(d, spec.ndim) for d in dims if spec.shape[d] == 1}
    kept = [d for d in range(spec.ndim) if d not in gone]
    return _map_dims(op_schema, spec, {d: (kept.index(d) if d in kept else None)
                                       for d in range(spec.ndim)})


@register_op_strategy(["slice.Tensor"])
def slice_strategy(op_schema):
    args = list(op_schema.args_schema) + [0, None, None, 1][len(op_schema.args_schema) - 1:]
    spec, dim, start, end, step = args[:5]
    dim = normalize_dim(dim, spec.ndim)
    size = spec.shape[dim]
    full = (start in (None, 0)) and (end is None or end >= size) and step == 1
    return _map_dims(op_schema, spec, {d: d for d in range(spec.ndim)}, () if full else (dim,))


@register_op_strategy(["select.int"])
def select_strategy(op_schema):
    spec, dim = op_schema.args_schema[0], normalize_dim(op_schema.args_schema[1],
                                                        op_schema.args_schema[0].ndim)
    return _map_dims(op_schema, spec, {d: (None if d == dim else d - (d > dim))
                                       for d in range(spec.ndim)})


@register_op_handler(["squeeze.default", "squeeze.dim", "squeeze.dims"])
def squeeze_handler(dispatcher, op_call, args, kwargs):
    """Any squeeze runs as ``squeeze.dims`` over the dims of global size 1 it names (a sharded
    dim may be 1 locally and must stay)."""
    x = args[0]
    if op_call is aten.squeeze.default:
        named = range(x.ndim)
    elif op_call is aten.squeeze.dim:
        named = [args[1]]
    else:
        named = args[1]
    dims = [normalize_dim(d, x.ndim) for d in named if x.shape[d] == 1]
    if op_call is aten.squeeze.dims and list(named) == dims:
        return dispatcher.propagate_and_run(op_call, args, kwargs)
    return aten.squeeze.dims(x, dims)

"""Sharding propagation: for an op call on DTensors, the layouts its inputs must take and the
layouts of its outputs.

Each op has a strategy (``_ops/``), PyTorch's two kinds:

* a single-mesh-dim strategy, ``fn(op, args_meta, kwargs_meta)``: the valid
  ``[outputs..., inputs...]`` placement lists on one mesh dimension, with
  ``_ShardingPlaceholder(dim)`` standing for "sharded on tensor dim ``dim``" (filled with the
  shard kinds the inputs use). The all-Replicate list is added, the lists are combined over every
  mesh dimension, and combinations that mix Partial kinds, would change an in-place op's
  ``self``, or shard a dimension smaller than its shard count are dropped;
* an op strategy, ``fn(op_schema)``: the candidate ``OpSpec``s given the inputs' layouts.

The candidate with the cheapest redistribution of the inputs is chosen (PyTorch's cost model and
tie-breaking: a negative cost first, then one needing no redistribution, then the first of zero
cost). The global output shape, stride and dtype come from running the op on meta tensors of the
global inputs' metadata. An op without a strategy raises PyTorch's NotImplementedError.
"""
import itertools

import ember

from ._collective_utils import redistribute_cost
from ._dtensor_spec import DTensorSpec, TensorMeta
from ._op_schema import OpSchema, OpSpec, OutputSharding
from ._utils import compute_local_shape_and_global_offset, compute_local_stride
from .placement_types import Partial, Replicate, Shard, _StridedShard, _is_shard_like

aten = ember.ops.aten
_CACHE_SIZE = 4096


class _ShardingPlaceholder:
    """"Sharded on tensor dim ``dim``", whatever shard kind the inputs use."""

    def __init__(self, dim):
        self.dim = dim

    def __repr__(self):
        return f"_ShardingPlaceholder(dim={self.dim})"


def is_tensor_shardable(shape, spec):
    """Whether every sharded dim of ``shape`` has at least as many elements as shards."""
    num_shards = [1] * len(shape)
    for i, p in enumerate(spec.placements):
        if _is_shard_like(p):
            if p.dim >= len(shape):
                return False
            num_shards[p.dim] *= spec.mesh.size(i)
            need = num_shards[p.dim] * (p.split_factor if isinstance(p, _StridedShard) else 1)
            if shape[p.dim] < need:
                return False
    return True


def _mixed_partial(placements):
    kinds = {(type(p), p.reduce_op) for p in placements if isinstance(p, Partial)}
    if len(kinds) <= 1:
        return False
    return not (len({t for t, _ in kinds}) == 1 and {r for _, r in kinds} == {"sum", "avg"})


def _fill_placeholders(strategies, input_specs):
    """Each placeholder list once per shard kind among the inputs' placements."""
    builders = {}
    for spec in input_specs:
        for p in spec.placements:
            if isinstance(p, _StridedShard):
                builders.setdefault(("strided", p.split_factor),
                                    lambda d, sf=p.split_factor: _StridedShard(d, split_factor=sf))
            elif isinstance(p, Shard):
                builders.setdefault("shard", Shard)
    out = []
    for s in strategies:
        if any(isinstance(p, _ShardingPlaceholder) for p in s):
            for build in builders.values():
                out.append([build(p.dim) if isinstance(p, _ShardingPlaceholder) else p
                            for p in s])
        else:
            out.append(list(s))
    return out


def expand_single_dim_strategies(mesh, op_schema, strategies, output_meta, *,
                                 allow_uneven_sharding=False):
    """The ``OpSpec``s of a single-mesh-dim strategy's lists combined over every mesh dim."""
    input_specs = op_schema.args_spec
    n_in = len(input_specs)
    n_out = sum(1 for r in op_schema.op._schema.returns if r.is_tensor_like)
    strategies = [list(s) for s in strategies]
    if not any(all(isinstance(p, Replicate) or p is None for p in s) for s in strategies):
        metas = (output_meta,) if isinstance(output_meta, TensorMeta) else output_meta
        strategies.insert(0, [None if metas is None or metas[i] is None else Replicate()
                              for i in range(n_out)] + [Replicate()] * n_in)
    strategies = _fill_placeholders(strategies, input_specs)
    inplace = op_schema.is_inplace_op()
    result = []
    blocked = None
    for combo in itertools.product(strategies, repeat=mesh.ndim):
        per_position = list(zip(*combo))
        if any(_mixed_partial(p) for p in per_position if p[0] is not None):
            continue
        targets = [DTensorSpec(mesh, per_position[n_out + i], tensor_meta=s.tensor_meta)
                   for i, s in enumerate(input_specs)]
        if inplace and (targets[0].placements != input_specs[0].placements
                        or per_position[0] != input_specs[0].placements):
            blocked = input_specs[0].placements
            continue
        if not all(is_tensor_shardable(s.tensor_meta.shape, t)
                   or (allow_uneven_sharding and s.placements == t.placements)
                   for s, t in zip(input_specs, targets)):
            continue
        outputs = [None if per_position[i][0] is None else DTensorSpec(mesh, per_position[i])
                   for i in range(n_out)]
        result.append(OpSpec(outputs[0] if n_out == 1 else tuple(outputs), targets,
                             [redistribute_cost(s, t) for s, t in zip(input_specs, targets)]))
    if not result and blocked is not None:
        raise RuntimeError(f"{op_schema.op}: in-place operations that require placement changes "
                           f"are not supported. The input has placement {blocked}, but no valid "
                           f"strategy preserves this placement. Please use the out-of-place "
                           f"version of this operation instead.")
    return result


def _select_min_cost_strategy(strategies, op_schema):
    """PyTorch's choice: a negative cost (the cheapest), else the last strategy needing no
    redistribution, else the first of zero cost, else the cheapest."""
    if len(strategies) == 1:
        return strategies[0]
    costs = [sum(s.redistribute_cost) for s in strategies]
    negative = no_redistribute = zero = -1
    current = [s.placements for s in op_schema.args_spec]
    for i, (s, cost) in enumerate(zip(strategies, costs)):
        if cost < 0:
            if negative == -1 or cost < costs[negative]:
                negative = i
        elif cost == 0:
            wanted = [t.placements for t in s.input_specs] if s.input_specs is not None else \
                [s.output_spec.placements] * len(current)
            if wanted == current:
                no_redistribute = i
            elif zero == -1:
                zero = i
    for pick in (negative, no_redistribute, zero):
        if pick != -1:
            return strategies[pick]
    return strategies[min(range(len(costs)), key=costs.__getitem__)]


def _meta_of(value):
    if isinstance(value, DTensorSpec):
        m = value.tensor_meta
        return ember.empty_strided(m.shape, m.stride, dtype=m.dtype, device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_meta_of(v) for v in value)
    return value


def _tensor_meta_of(out):
    if isinstance(out, ember.Tensor):
        return TensorMeta(ember.Size(out.shape), tuple(out.stride()), out.dtype)
    if isinstance(out, (list, tuple)):
        return tuple(_tensor_meta_of(o) for o in out)
    return None


def _with_meta(spec, meta):
    if spec is None:
        return None
    if isinstance(spec, DTensorSpec):
        return DTensorSpec(spec.mesh, spec.placements, tensor_meta=meta)
    return tuple(_with_meta(s, m) for s, m in zip(spec, meta))


class ShardingPropagator:
    def __init__(self):
        self.op_strategy_funcs = {}  # op -> fn(op_schema) -> [OpSpec]
        self.op_single_dim_strategy_funcs = {}  # op -> (fn, allow_uneven_sharding)
        # ops whose shape (and stride) arguments must be made local when the output is sharded
        self.op_to_shape_and_stride_idx = {
            aten.new_empty.default: 1, aten.new_full.default: 1, aten.new_ones.default: 1,
            aten.new_zeros.default: 1, aten.new_empty_strided.default: (1, 2),
            aten.expand.default: 1, aten.reshape.default: 1, aten.view.default: 1,
            aten._unsafe_view.default: 1,
        }
        self._cache = {}

    def register_op_strategy(self, op, fn):
        self.op_strategy_funcs[op] = fn

    def register_single_dim_strategy(self, op, fn, allow_uneven_sharding=False):
        self.op_single_dim_strategy_funcs[op] = (fn, allow_uneven_sharding)

    def has_strategy(self, op):
        return op in self.op_strategy_funcs or op in self.op_single_dim_strategy_funcs

    def _propagate_tensor_meta(self, op_schema):
        args = [_meta_of(a) for a in op_schema.args_schema]
        kwargs = {k: _meta_of(v) for k, v in op_schema.kwargs_schema.items()}
        if "device" in kwargs:  # a conversion's target device (the metadata is the same)
            kwargs["device"] = ember.device("meta")
        out = op_schema.op(*args, **kwargs)
        if not op_schema.op._schema.returns:
            return None
        if op_schema.is_inplace_op():
            return op_schema.args_spec[0].tensor_meta
        return _tensor_meta_of(out)

    def propagate_op_sharding(self, op_schema):
        try:
            key = hash(op_schema)
        except TypeError:
            return self.propagate_op_sharding_non_cached(op_schema)
        found = self._cache.get(key)
        mesh = op_schema.get_mesh_from_args()
        # equal meshes need not be the same: one made after the process groups were built again
        # compares equal to the old one, whose groups are gone, and the cached output specs
        # would hand the old mesh to the new tensors
        if found is not None and found[2] is mesh and found[0] == op_schema:
            return found[1]
        result = self.propagate_op_sharding_non_cached(op_schema)
        if len(self._cache) >= _CACHE_SIZE:  # calls with ever-new scalars (an LR schedule)
            self._cache.clear()
        self._cache[key] = (op_schema, result, mesh)
        return result

    def strategies_for(self, op_schema, out_meta):
        op = op_schema.op
        single = self.op_single_dim_strategy_funcs.get(op)
        if single is not None:
            fn, allow_uneven = single
            return expand_single_dim_strategies(
                op_schema.get_mesh_from_args(), op_schema,
                fn(op, op_schema.args_meta, op_schema.kwargs_meta), out_meta,
                allow_uneven_sharding=allow_uneven)
        strategies = self.op_strategy_funcs[op](op_schema)
        for s in strategies:
            if s.redistribute_cost is None:
                targets = s.input_specs if s.input_specs is not None else \
                    [s.output_spec] * len(op_schema.args_spec)
                s.redistribute_cost = [redistribute_cost(c, t) for c, t in
                                       zip(op_schema.args_spec, targets)]
        return strategies

    def propagate_op_sharding_non_cached(self, op_schema):
        op = op_schema.op
        if not self.has_strategy(op):
            raise NotImplementedError(f"Operator {op} does not have a sharding strategy "
                                      f"registered.")
        meshes = {s.mesh for s in op_schema.args_spec}
        if len(meshes) > 1:
            first, other = op_schema.args_spec[0].mesh, (meshes - {op_schema.args_spec[0].mesh})
            raise ValueError(f"Cannot run {op} on inputs with different meshes: got {first} and "
                             f"{other.pop()}")
        out_meta = self._propagate_tensor_meta(op_schema)
        strategies = self.strategies_for(op_schema, out_meta)
        if not strategies:
            raise RuntimeError(f"Sharding propagation failed for {op_schema}: no valid strategy")
        chosen = _select_min_cost_strategy(strategies, op_schema)
        expected, needs_redistribute = [], False
        for i, current in enumerate(op_schema.args_spec):
            wanted = chosen.output_spec if chosen.input_specs is None else chosen.input_specs[i]
            expected.append(wanted.shallow_copy_with_tensor_meta(current.tensor_meta))
            needs_redistribute |= current.placements != wanted.placements
        suggestion = _rewrap_schema(op_schema, expected) if needs_redistribute else None
        output_specs = chosen.output_specs
        n_returns = len([r for r in op._schema.returns if r.is_tensor_like])
        if isinstance(output_specs, DTensorSpec) and n_returns > 1:
            output_specs = (output_specs,) * n_returns
        output_specs = _with_meta(output_specs, out_meta) if out_meta is not None else None
        sharding = OutputSharding(output_specs, suggestion, needs_redistribute)
        idx = self.op_to_shape_and_stride_idx.get(op)
        if idx is not None and any(_is_shard_like(p) for p in output_specs.placements):
            sharding.redistribute_schema = self._local_shape_args(
                suggestion or op_schema, idx, out_meta, output_specs)
            sharding.needs_redistribute = sharding.use_val_from_redistribute_schema = True
        return sharding

    @staticmethod
    def _local_shape_args(schema, idx, out_meta, spec):
        shape_idx, stride_idx = idx if isinstance(idx, tuple) else (idx, None)
        args = list(schema.args_schema)
        local_shape, _ = compute_local_shape_and_global_offset(out_meta.shape, spec.mesh,
                                                               spec.placements, skip_offset=True)
        args[shape_idx] = list(local_shape)
        if stride_idx is not None:
            args[stride_idx] = list(compute_local_stride(out_meta.stride, local_shape))
        return OpSchema(schema.op, args, schema.kwargs_schema)


def _rewrap_schema(op_schema, expected):
    """``op_schema`` with its tensor arguments' specs replaced, in order, by ``expected``."""
    it = iter(expected)

    def swap(v):
        if isinstance(v, DTensorSpec):
            return next(it)
        if isinstance(v, (list, tuple)) and any(isinstance(x, DTensorSpec) for x in v):
            return type(v)(next(it) if isinstance(x, DTensorSpec) else x for x in v)
        return v
    args = [swap(a) for a in op_schema.args_schema]
    kwargs = {k: swap(v) for k, v in op_schema.kwargs_schema.items()}
    return OpSchema(op_schema.op, args, kwargs)

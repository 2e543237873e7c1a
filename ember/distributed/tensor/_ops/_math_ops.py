"""Reductions (PyTorch's linear-reduction rule): reducing over a sharded dim leaves a Partial of
the reduction's kind ("sum", "avg", "max", "min", "product", or a ``_NormPartial`` for p-norms);
an input already Partial of the same kind stays so; otherwise (another Partial kind, or a mean
over an unevenly sharded dim) the reduced dims and Partials are made Replicate first.
Softmax-like ops need their dim whole; ``nll_loss`` needs the class dim whole and reduces the
rest; ``native_layer_norm`` and its backward keep a shard of a leading (not normalized) dim, the
gradients of the weight and bias then Partial (PyTorch's rules).
"""
from .._dtensor_spec import DTensorSpec
from .._op_schema import OpSpec
from ..placement_types import Partial, Replicate, _is_shard_like
from .._sharding_prop import _ShardingPlaceholder
from .utils import (normalize_dim, register_op_strategy, register_single_dim_strategy,
                    resolve_ops, with_dim)

LINEAR_REDUCTION_OP_MAP = {
    "sum.default": "sum", "sum.dim_IntList": "sum", "nansum.default": "sum",
    "mean.default": "avg", "mean.dim": "avg",
    "prod.default": "product", "prod.dim_int": "product",
    "all.default": "product", "all.dim": "product",
    "any.default": "sum", "any.dim": "sum", "any.dims": "sum",
    "max.default": "max", "min.default": "min",
    "amax.default": "max", "amin.default": "min",
}
_REDUCTION_OP = dict(zip(resolve_ops(LINEAR_REDUCTION_OP_MAP), LINEAR_REDUCTION_OP_MAP.values()))


def _reduction_dims(dims_arg, ndim):
    if dims_arg is None:
        return None
    dims = [dims_arg] if isinstance(dims_arg, int) else list(dims_arg)
    if ndim == 0 and dims in ([0], [-1], []):
        return None
    return [normalize_dim(d, ndim) for d in dims] if dims else None


def _evenly_sharded_on(shape, spec, dim):
    n = 1
    for i, p in enumerate(spec.placements):
        if _is_shard_like(p) and p.dim == dim:
            n *= spec.mesh.size(i)
    return shape[dim] % n == 0


class _NormPartial(Partial):
    """Partial p-norms: each rank holds the norm of its part; reducing raises them to the p-th
    power, sums, and takes the p-th root."""

    def __init__(self, norm_type=2):
        super().__init__("sum")
        self.norm_type = norm_type

    def _pre_reduce(self, tensor):
        return tensor ** self.norm_type

    def _post_reduce(self, tensor):
        return tensor ** (1.0 / self.norm_type)

    def _reduce_value(self, tensor, mesh, mesh_dim):
        return self._post_reduce(super()._reduce_value(self._pre_reduce(tensor), mesh, mesh_dim))

    def _reduce_shard_value(self, tensor, mesh, mesh_dim, shard_spec):
        return self._post_reduce(super()._reduce_shard_value(self._pre_reduce(tensor), mesh,
                                                             mesh_dim, shard_spec))

    def _partition_value(self, tensor, mesh, mesh_dim):
        return tensor / mesh.size(mesh_dim) ** (1 / self.norm_type)

    def __eq__(self, other):
        return isinstance(other, _NormPartial) and self.norm_type == other.norm_type

    def __hash__(self):
        return 1 + hash(self.norm_type)

    def __repr__(self):
        return f"_NormPartial({self.norm_type})"

    def __str__(self):
        return f"_NormP({self.norm_type})"

    def __reduce__(self):
        return (_NormPartial, (self.norm_type,))


class NormReduction:
    """The reduction of a p-norm (its Partial is a ``_NormPartial``; p = 0 counts, a sum)."""

    def __init__(self, norm_type):
        self.norm_type = norm_type

    def placement(self):
        return Partial("sum") if self.norm_type == 0 else _NormPartial(self.norm_type)


def _norm_reduction(norm_type):
    if norm_type in (float("inf"), "inf"):
        return "max"
    if norm_type in (float("-inf"), "-inf"):
        return "min"
    return NormReduction(norm_type)


def common_reduction_strategy(spec, reduce_dims, keep_dim, reduction_op):
    linear = True
    if reduction_op == "avg":
        linear = all(_evenly_sharded_on(spec.shape, spec, d) for d in reduce_dims)
    if any(isinstance(p, Partial) and p.reduce_op != reduction_op for p in spec.placements):
        linear = False
    if linear:
        placements = spec.placements
    else:
        placements = tuple(Replicate() if p.is_partial() or (_is_shard_like(p)
                                                             and p.dim in reduce_dims) else p
                           for p in spec.placements)
    new_dim, count = [], 0
    for d in range(spec.ndim):
        if d in reduce_dims and not keep_dim:
            new_dim.append(-1)
        else:
            new_dim.append(count)
            count += 1
    out = []
    for p in placements:
        if not _is_shard_like(p):
            out.append(p)
        elif new_dim[p.dim] == -1 or p.dim in reduce_dims:
            out.append(reduction_op.placement() if isinstance(reduction_op, NormReduction)
                       else Partial(reduction_op))
        else:
            out.append(with_dim(p, new_dim[p.dim]))
    target = DTensorSpec(spec.mesh, placements, tensor_meta=spec.tensor_meta)
    return [OpSpec(DTensorSpec(spec.mesh, tuple(out)), [target])]


@register_op_strategy(list(LINEAR_REDUCTION_OP_MAP))
def linear_reduction_strategy(op_schema):
    args = op_schema.args_schema
    spec = args[0]
    dims = _reduction_dims(args[1], spec.ndim) if len(args) > 1 else None
    reduce_dims = list(range(spec.ndim)) if dims is None else dims
    keep_dim = len(args) > 2 and bool(args[2])
    return common_reduction_strategy(spec, reduce_dims, keep_dim,
                                     _REDUCTION_OP[op_schema.op])


@register_op_strategy(["linalg_vector_norm.default", "norm.Scalar"])
def vector_norm_strategy(op_schema):
    args = op_schema.args_schema
    spec = args[0]
    dims = _reduction_dims(args[2], spec.ndim) if len(args) > 2 else None
    reduce_dims = list(range(spec.ndim)) if dims is None else dims
    keep_dim = len(args) > 3 and bool(args[3])
    return common_reduction_strategy(spec, reduce_dims, keep_dim,
                                     _norm_reduction(args[1] if len(args) > 1 else 2))


@register_op_strategy(["_softmax.default", "_log_softmax.default"])
def softmax_strategy(op_schema):
    spec, dim = op_schema.args_schema[0], op_schema.args_schema[1]
    dim = normalize_dim(dim, spec.ndim)
    placements = tuple(Replicate() if p.is_partial() or (_is_shard_like(p) and p.dim == dim)
                       else p for p in spec.placements)
    target = DTensorSpec(spec.mesh, placements, tensor_meta=spec.tensor_meta)
    return [OpSpec(DTensorSpec(spec.mesh, placements), [target])]


@register_op_strategy(["_softmax_backward_data.default", "_log_softmax_backward_data.default"])
def softmax_backward_strategy(op_schema):
    grad, out, dim = op_schema.args_schema[:3]
    dim = normalize_dim(dim, grad.ndim)
    src = grad if grad.num_shards >= out.num_shards else out
    placements = tuple(Replicate() if p.is_partial() or (_is_shard_like(p) and p.dim == dim)
                       else p for p in src.placements)
    target = DTensorSpec(grad.mesh, placements)
    return [OpSpec(target, [target.shallow_copy_with_tensor_meta(grad.tensor_meta),
                            target.shallow_copy_with_tensor_meta(out.tensor_meta)])]


def _replicate_all(spec):
    return DTensorSpec(spec.mesh, (Replicate(),) * spec.mesh.ndim, tensor_meta=spec.tensor_meta)


def _skip_dim(placements, dim):
    return tuple(with_dim(p, p.dim - 1) if _is_shard_like(p) and p.dim > dim else p
                 for p in placements)


def _nll_loss_inputs(spec, target):
    """The input whole along the class dim, the target laid out as the input's other dims."""
    channel_dim = 1 if spec.ndim >= 2 else 0
    placements = tuple(Replicate() if p.is_partial() or (_is_shard_like(p) and
                                                         p.dim == channel_dim) else p
                       for p in spec.placements)
    return (DTensorSpec(spec.mesh, placements, tensor_meta=spec.tensor_meta),
            DTensorSpec(spec.mesh, _skip_dim(placements, channel_dim),
                        tensor_meta=target.tensor_meta))


@register_op_strategy(["nll_loss_forward.default"])
def nll_loss_forward_strategy(op_schema):
    spec, target, weight, reduction, _ = op_schema.args_schema
    inp, tgt = _nll_loss_inputs(spec, target)
    inputs = [inp, tgt] + ([_replicate_all(weight)] if weight is not None else [])
    mesh = spec.mesh
    if reduction == 0:  # none: a loss per target element, laid out as the target
        return [OpSpec((DTensorSpec(mesh, tgt.placements),
                        DTensorSpec(mesh, (Replicate(),) * mesh.ndim)), inputs)]
    if reduction == 1 and not all(_evenly_sharded_on(tgt.shape, tgt, d) for d in
                                  range(tgt.ndim)):
        raise ValueError("The intermediate results of nll_loss cannot be evenly sharded, "
                         "resulting in biased mean result.")
    dims = list(range(tgt.ndim))
    out = common_reduction_strategy(tgt, dims, False, "avg" if reduction == 1 else "sum")
    total = common_reduction_strategy(tgt, dims, False, "sum")
    return [OpSpec((out[0].output_specs, total[0].output_specs), inputs)]


@register_op_strategy(["nll_loss_backward.default"])
def nll_loss_backward_strategy(op_schema):
    grad, spec, target, weight, reduction, _, total_weight = op_schema.args_schema
    inp, tgt = _nll_loss_inputs(spec, target)
    inputs = [tgt if reduction == 0 else _replicate_all(grad), inp, tgt]
    if weight is not None:
        inputs.append(_replicate_all(weight))
    inputs.append(_replicate_all(total_weight) if reduction == 1 else total_weight)
    return [OpSpec(DTensorSpec(inp.mesh, inp.placements), inputs)]


@register_single_dim_strategy(["native_layer_norm.default"])
def layer_norm_strategy(op, args_meta, kwargs_meta):
    """[out, mean, rstd, input, weight?, bias?]: sharded alike on a leading dim."""
    input_meta, normalized_shape, weight_meta, bias_meta = args_meta[:4]
    axis = len(input_meta.shape) - len(normalized_shape)
    strategies = []
    for dim in range(axis):
        rule = [_ShardingPlaceholder(dim)] * 4
        rule += [Replicate()] * ((weight_meta is not None) + (bias_meta is not None))
        strategies.append(rule)
    return strategies


@register_single_dim_strategy(["native_layer_norm_backward.default"])
def layer_norm_bwd_strategy(op, args_meta, kwargs_meta):
    """[d_input, d_weight, d_bias, grad_out, input, mean, rstd, weight?, bias?]."""
    input_meta, normalized_shape = args_meta[1], args_meta[2]
    weight_meta, bias_meta = args_meta[5], args_meta[6]
    axis = len(input_meta.shape) - len(normalized_shape)
    strategies = []
    for dim in range(axis):
        rule = [_ShardingPlaceholder(dim),
                Partial("sum") if weight_meta is not None else None,
                Partial("sum") if bias_meta is not None else None]
        rule += [_ShardingPlaceholder(dim)] * 4
        rule += [Replicate()] * ((weight_meta is not None) + (bias_meta is not None))
        strategies.append(rule)
    return strategies

"""Matrix products as einsums (PyTorch's rules per mesh dim): shard a batch dim everywhere,
shard the contracted dim of both operands (the output is Partial), shard a free dim of one
operand and of the output, or keep one operand Partial (products are linear in each). ``addmm``
and ``baddbmm`` add the bias, laid out as the output (Replicate where it broadcasts).
``t`` swaps the shards of its two dims.
"""
from .._dtensor_spec import DTensorSpec
from .._op_schema import OpSpec
from .._sharding_prop import _ShardingPlaceholder
from ..placement_types import Partial, Replicate
from .utils import register_op_strategy, register_single_dim_strategy, with_dim
from ..placement_types import _is_shard_like


def einsum_single_dim_strategies(equation, bias_shape=None):
    """``[output, (bias,) lhs, rhs]`` placement lists of ``equation`` ("mk,kn->mn") on one
    mesh dim."""
    inputs, output = equation.split("->")
    lhs, rhs = inputs.split(",")
    batch = [d for d in output if d in lhs and d in rhs]
    contracting = [d for d in lhs if d in rhs and d not in output]
    lhs_only = [d for d in output if d in lhs and d not in rhs]
    rhs_only = [d for d in output if d in rhs and d not in lhs]

    def bias_placement(p):
        if bias_shape is None:
            return None
        if not isinstance(p, _ShardingPlaceholder):
            return p
        src = p.dim - (len(output) - len(bias_shape))
        return Replicate() if src < 0 or bias_shape[src] == 1 else _ShardingPlaceholder(src)

    def row(out, left, right):
        bias = bias_placement(out)
        return [out, left, right] if bias is None else [out, bias, left, right]

    def ph(dims, d):
        return _ShardingPlaceholder(dims.index(d))
    rows = [row(ph(output, d), ph(lhs, d), ph(rhs, d)) for d in batch]
    rows += [row(Partial(), ph(lhs, d), ph(rhs, d)) for d in contracting]
    rows += [row(ph(output, d), ph(lhs, d), Replicate()) for d in lhs_only]
    rows += [row(ph(output, d), Replicate(), ph(rhs, d)) for d in rhs_only]
    for op in Partial.LINEAR_REDUCE_OPS:
        rows.append(row(Partial(op), Partial(op), Replicate()))
        rows.append(row(Partial(op), Replicate(), Partial(op)))
    if not contracting and not lhs_only and not rhs_only:
        for op in Partial.LINEAR_REDUCE_OPS:
            rows.append(row(Partial(op), Partial(op), Partial(op)))
    return rows


@register_single_dim_strategy(["mm.default"])
def mm_strategy(op, args_meta, kwargs_meta):
    return einsum_single_dim_strategies("mk,kn->mn")


@register_single_dim_strategy(["addmm.default"])
def addmm_strategy(op, args_meta, kwargs_meta):
    return einsum_single_dim_strategies("mk,kn->mn", bias_shape=args_meta[0].shape)


@register_single_dim_strategy(["bmm.default"])
def bmm_strategy(op, args_meta, kwargs_meta):
    return einsum_single_dim_strategies("bmk,bkn->bmn")


@register_single_dim_strategy(["baddbmm.default"])
def baddbmm_strategy(op, args_meta, kwargs_meta):
    return einsum_single_dim_strategies("bmk,bkn->bmn", bias_shape=args_meta[0].shape)


@register_single_dim_strategy(["dot.default"])
def dot_strategy(op, args_meta, kwargs_meta):
    return einsum_single_dim_strategies("i,i->")


@register_op_strategy(["t.default"])
def transpose_strategy(op_schema):
    spec = op_schema.args_schema[0]
    if spec.ndim <= 1:
        placements = spec.placements
    else:
        placements = tuple(with_dim(p, 1 - p.dim) if _is_shard_like(p) else p
                           for p in spec.placements)
    return [OpSpec(DTensorSpec(spec.mesh, placements), [spec])]

"""``loss_parallel``: cross-entropy on logits sharded on the class dim, without gathering them
(PyTorch's algorithm). Inside the context, DTensor runs ``_log_softmax``, ``nll_loss_forward``
and their backwards with handlers of their own: the log-softmax all-reduces the row maxima and
the sums of exponentials; the loss picks each target's log-probability on the rank holding its
class (the targets as a ``_MaskPartial``: shifted into the shard, the others masked) and sums
over the ranks; the backward computes softmax minus one-hot on each rank's classes in one step
(the log-softmax backward then passes it through), so the gradient needs no communication.
"""
import contextlib

import ember
import ember.distributed._functional_collectives as funcol

from .._api import DTensor
from .._dtensor_spec import DTensorSpec, TensorMeta
from .._ops._math_ops import _skip_dim
from .._ops.utils import normalize_dim
from ..placement_types import Partial, Replicate, Shard, _MaskPartial, _is_shard_like

aten = ember.ops.aten

__all__ = ["loss_parallel"]

# nll_loss's reduction argument
_NONE, _MEAN, _SUM = 0, 1, 2


@contextlib.contextmanager
def loss_parallel():
    """Within the block (and for the ``backward()`` of what it computes, which must run inside
    too), ``F.cross_entropy``/``nn.CrossEntropyLoss`` take a DTensor input sharded on the class
    dim by exactly one mesh dim (the others Shard or Replicate), class-index targets (a plain
    tensor where their placements are all Replicate) and an optional replicated weight; no
    label smoothing. ``reduction="mean"`` needs a 1-D mesh."""
    DTensor._op_dispatcher._custom_op_handlers.update(customized_loss_ops)
    try:
        yield
    finally:
        for op in customized_loss_ops:
            DTensor._op_dispatcher._custom_op_handlers.pop(op)


def _find_all_reduce_mesh_dim(placements, dim):
    """The one mesh dim sharding tensor dim ``dim`` (the others must be Shard or Replicate)."""
    shard_mesh_dims = [i for i, p in enumerate(placements) if p.is_shard(dim)]
    if len(shard_mesh_dims) != 1:
        raise ValueError(f"loss_parallel() requires exactly one mesh dim to shard tensor "
                         f"dimension {dim}, but got placements {placements} with "
                         f"{len(shard_mesh_dims)} such mesh dim(s).")
    mesh_dim = shard_mesh_dims[0]
    for i, p in enumerate(placements):
        if i != mesh_dim and not (p.is_shard() or p.is_replicate()):
            raise ValueError(f"loss_parallel() expects non-TP mesh dims to be Shard or "
                             f"Replicate, got {p} at dim {i}.")
    return mesh_dim


def _cast_to_dtensor(tensor, placements, mesh):
    if isinstance(tensor, DTensor):
        if tensor.placements == placements:
            return tensor
        raise RuntimeError(f"Expected {placements} but got {tensor.placements}.")
    if isinstance(tensor, ember.Tensor):
        if any(p.is_shard() for p in placements):
            raise ValueError(
                f"loss_parallel() requires a DTensor (not a plain torch.Tensor) when the derived "
                f"placements {placements} contain Shard — this happens on a multi-dimensional "
                f"mesh with a batch-sharded non-TP dim. Wrap the tensor with DTensor.from_local "
                f"or distribute_tensor to make the sharding explicit.")
        return DTensor.from_local(tensor, device_mesh=mesh, placements=placements,
                                  run_check=False)
    raise TypeError(f"Unsupported type {type(tensor)}")


def _target_placements(placements, channel_dim):
    """The input's placements with the class dim (and Partials) replicated, the class dim
    removed."""
    replicated = tuple(Replicate() if p.is_partial() or (_is_shard_like(p) and
                                                         p.dim == channel_dim) else p
                       for p in placements)
    return _skip_dim(replicated, channel_dim)


def _propagate_tensor_meta(dispatcher, op_call, args, kwargs):
    schema = dispatcher.unwrap(op_call, args, kwargs)[0]
    meta = dispatcher.sharding_propagator._propagate_tensor_meta(schema)
    return meta if isinstance(meta, TensorMeta) else meta[0]


def _log_softmax(x, dim, half_to_float, mesh, mesh_dim):
    """log_softmax over ``dim`` split across the ranks of ``mesh_dim`` (the decomposition's
    computation with the max and the sum all-reduced)."""
    if half_to_float and x.dtype != ember.half:
        raise AssertionError
    result_dtype = x.dtype
    computation_dtype = ember.float32 if x.dtype in (ember.float16, ember.bfloat16) else x.dtype
    x = x.to(dtype=computation_dtype, memory_format=ember.contiguous_format)
    if x.numel() == 0:
        shifted = x
    else:
        x_max = funcol.all_reduce(ember.amax(x, dim, keepdim=True), reduceOp="MAX",
                                  group=(mesh, mesh_dim))
        shifted = x - x_max
    shifted_sumexp = funcol.all_reduce(ember.sum(ember.exp(shifted), dim, keepdim=True),
                                       reduceOp="SUM", group=(mesh, mesh_dim))
    result = shifted - ember.log(shifted_sumexp)
    return result if half_to_float else result.to(result_dtype)


def _log_softmax_handler(dispatcher, op_call, args, kwargs):
    x, dim, half_to_float = args[0], args[1], args[2]
    spec = x._spec
    dim = normalize_dim(dim, x.dim())
    mesh_dim = _find_all_reduce_mesh_dim(spec.placements, dim)
    meta = _propagate_tensor_meta(dispatcher, op_call, args, kwargs)
    res = _log_softmax(x._local_tensor, dim, half_to_float, spec.mesh, mesh_dim)
    return DTensor(res, DTensorSpec(spec.mesh, spec.placements, tensor_meta=meta),
                   requires_grad=res.requires_grad)


def _log_softmax_backward_handler(dispatcher, op_call, args, kwargs):
    # the nll_loss backward already produced the gradient of the logits
    return args[0].to(args[3])


def _weight_view(weight, n_dims, channel_dim):
    if n_dims <= 1:
        return weight
    shape = [1] * n_dims
    shape[channel_dim] = weight.shape[0]
    return weight.view(shape)


def _nll_loss_forward(x, target, weight, local_weight, reduction, ignore_index, input_shape,
                      mesh, mesh_dim):
    n_dims = x.dim()
    channel_dim = 1 if n_dims >= 2 else 0
    if weight is not None:
        w = _weight_view(weight, n_dims, channel_dim)
        x = x * _weight_view(local_weight, n_dims, channel_dim)
    safe_target = ember.where(target != ignore_index, target, 0)
    safe_target_ = safe_target.unsqueeze(channel_dim)
    # -gather(x, channel_dim, target) where each rank holds a slice of the classes
    partial_placement = _MaskPartial(offset_shape=input_shape, offset_dim=channel_dim)
    safe_target_partial_ = partial_placement._partition_value(safe_target_, mesh, mesh_dim)
    result_partial = ember.gather(x, channel_dim, safe_target_partial_)
    result_reduced = partial_placement._reduce_value(result_partial, mesh, mesh_dim)
    result = -result_reduced.squeeze(channel_dim)
    result = ember.where(target != ignore_index, result, 0)
    if reduction == _NONE and n_dims > 1:
        return result, x.new_full((), 0.0)
    if weight is not None:
        new_shape = list(x.shape)
        new_shape[channel_dim] = -1
        wsum = ember.gather(w.expand(new_shape), channel_dim, safe_target_).squeeze(channel_dim)
        total_weight = ember.where(target != ignore_index, wsum, 0).sum()
    else:
        total_weight = (target != ignore_index).sum().to(x)
    # on an N-D mesh these are sums over this rank's batch (Partial on the other dims)
    if reduction == _SUM:
        result = result.sum()
    elif reduction == _MEAN:
        result = result.sum() / total_weight
    return result, total_weight


def _nll_loss_forward_handler(dispatcher, op_call, args, kwargs):
    x, target, weight, reduction, ignore_index = args[:5]
    channel_dim = 1 if x.dim() >= 2 else 0
    spec = x._spec
    mesh_dim = _find_all_reduce_mesh_dim(spec.placements, channel_dim)
    target_placements = _target_placements(spec.placements, channel_dim)
    target = _cast_to_dtensor(target, target_placements, spec.mesh)
    local_weight = None
    if weight is not None:
        weight = _cast_to_dtensor(weight, (Replicate(),) * spec.mesh.ndim, spec.mesh)
        # this rank's classes of the weight, cut locally
        sharded = [Shard(0) if i == mesh_dim else Replicate() for i in range(spec.mesh.ndim)]
        local_weight = weight.redistribute(spec.mesh, sharded)._local_tensor
        if local_weight.shape[0] != x._local_tensor.shape[channel_dim]:
            raise AssertionError
    if reduction == _NONE:
        output_placements = target_placements
    else:
        if reduction == _MEAN and spec.mesh.ndim > 1:
            raise NotImplementedError(
                f"loss_parallel() with reduction='mean' is only supported on one-dimensional "
                f"DeviceMesh; got mesh with ndim={spec.mesh.ndim}. Use reduction='sum' or "
                f"'none' instead.")
        output_placements = tuple(Replicate() if i == mesh_dim else
                                  (Partial() if p.is_shard() else p)
                                  for i, p in enumerate(spec.placements))
    args = list(args)
    args[1], args[2] = target, weight
    meta = _propagate_tensor_meta(dispatcher, op_call, tuple(args), kwargs)
    result, total_weight = _nll_loss_forward(
        x._local_tensor, target._local_tensor,
        weight._local_tensor if weight is not None else None, local_weight, reduction,
        ignore_index, x.shape, spec.mesh, mesh_dim)
    out_spec = DTensorSpec(spec.mesh, output_placements, tensor_meta=meta)
    return DTensor(result, out_spec, requires_grad=result.requires_grad), total_weight


def _nll_loss_and_log_softmax_backward(grad_output, x, target, weight, reduction, ignore_index,
                                       total_weight, input_shape, mesh, mesh_dim):
    """The gradient of the logits: (exp(log-probabilities) - one-hot(target)) * grad on this
    rank's classes (nll_loss's and log_softmax's backwards fused: no all-gather)."""
    channel_dim = 0 if x.dim() < 2 else 1
    if reduction == _MEAN:
        grad_output = grad_output / total_weight
    target = target.unsqueeze(channel_dim)
    safe_target = ember.where(target != ignore_index, target, 0)
    grad_input = ember.zeros_like(x)
    # scatter(grad_input, channel_dim, target, -1) on the rank holding each target's class
    partial_placement = _MaskPartial(offset_shape=input_shape, offset_dim=channel_dim)
    flat_target = safe_target.squeeze(channel_dim).flatten()
    masked_safe_target = partial_placement._partition_value(flat_target, mesh, mesh_dim)
    grad_update = partial_placement.mask_buffer.data.to(grad_input.dtype) - 1.0
    arange_1d = ember.arange(masked_safe_target.shape[0], device=masked_safe_target.device)
    if x.dim() == 1:
        grad_input[masked_safe_target] = grad_update
    elif x.dim() == 2:
        grad_input[arange_1d, masked_safe_target] = grad_update
    else:
        grad_input_t = grad_input.transpose(channel_dim, -1)
        intermediate_shape = grad_input_t.shape
        grad_input_2d = grad_input_t.reshape(-1, x.shape[channel_dim])
        grad_input_2d[arange_1d, masked_safe_target] = grad_update
        grad_input = grad_input_2d.view(intermediate_shape).transpose(channel_dim, -1)
    if grad_input.dim() > grad_output.dim() > 0:
        grad_output = grad_output.unsqueeze(channel_dim)
    if weight is not None:
        new_shape = list(x.shape)
        new_shape[channel_dim] = -1
        w = _weight_view(weight, x.dim(), channel_dim).expand(new_shape)
        grad_output = grad_output * ember.gather(w, channel_dim, safe_target)
    grad_output = ember.where(target != ignore_index, grad_output, 0)
    return (grad_input + ember.exp(x)) * grad_output


def _nll_loss_backward_handler(dispatcher, op_call, args, kwargs):
    grad_output, x, target, weight, reduction, ignore_index, total_weight = args[:7]
    channel_dim = 1 if x.dim() >= 2 else 0
    spec = x._spec
    mesh_dim = _find_all_reduce_mesh_dim(spec.placements, channel_dim)
    target_placements = _target_placements(spec.placements, channel_dim)
    all_replicate = (Replicate(),) * spec.mesh.ndim
    target = _cast_to_dtensor(target, target_placements, spec.mesh)
    if weight is not None:
        weight = _cast_to_dtensor(weight, all_replicate, spec.mesh)
    if reduction == _NONE:
        # autograd may hand the per-element gradient over in another layout than the loss's
        grad_output = grad_output.redistribute(spec.mesh, target_placements)
    args = list(args)
    args[0], args[2], args[3] = grad_output, target, weight
    args[6] = _cast_to_dtensor(total_weight, all_replicate, spec.mesh)
    meta = _propagate_tensor_meta(dispatcher, op_call, tuple(args), kwargs)
    result = _nll_loss_and_log_softmax_backward(
        grad_output._local_tensor, x._local_tensor, target._local_tensor,
        weight._local_tensor if weight is not None else None, reduction, ignore_index,
        total_weight, x.shape, spec.mesh, mesh_dim)
    return DTensor(result, DTensorSpec(spec.mesh, spec.placements, tensor_meta=meta),
                   requires_grad=result.requires_grad)


# ember has no nll_loss2d ops: nll_loss_nd flattens an N-d input into nll_loss_forward's 2-D
customized_loss_ops = {
    aten._log_softmax.default: _log_softmax_handler,
    aten._log_softmax_backward_data.default: _log_softmax_backward_handler,
    aten.nll_loss_forward.default: _nll_loss_forward_handler,
    aten.nll_loss_backward.default: _nll_loss_backward_handler,
}

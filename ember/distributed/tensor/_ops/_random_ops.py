"""Random ops on DTensors: the values are those one device would draw for the global tensor
(every rank draws the global tensor from its generator, the same on every rank, and keeps its
part), so a sharded model initialises and drops out as the unsharded one. PyTorch reaches the
same values on CUDA meshes with offsets into the Philox stream and refuses CPU meshes; ember
draws the whole tensor on every rank (memory of the global tensor, for the call)."""
import ember

from .._api import DTensor, _shard_of_full
from .._dtensor_spec import DTensorSpec, TensorMeta
from ..placement_types import Partial, Replicate
from .utils import register_op_handler


@register_op_handler(["normal_.default", "uniform_.default", "bernoulli_.float",
                      "exponential_.default", "random_.default", "random_.from", "random_.to",
                      "geometric_.default", "log_normal_.default", "cauchy_.default"])
def random_inplace_handler(dispatcher, op_call, args, kwargs):
    x = args[0]
    full = ember.empty(x.shape, dtype=x.dtype, device=x._local_tensor.device)
    op_call(full, *args[1:], **kwargs)
    x._local_tensor.copy_(_shard_of_full(full, x._spec))
    return x


@register_op_handler(["native_dropout.default"])
def dropout_handler(dispatcher, op_call, args, kwargs):
    x = args[0]
    ones = ember.ones(x.shape, dtype=x.dtype, device=x._local_tensor.device)
    scale_full, mask_full = op_call(ones, *args[1:], **kwargs)
    spec = x._spec
    out = x._local_tensor * _shard_of_full(scale_full, spec)
    mask_placements = tuple(Replicate() if isinstance(p, Partial) else p for p in spec.placements)
    mask_spec = DTensorSpec(spec.mesh, mask_placements,
                            tensor_meta=TensorMeta(spec.shape, spec.stride, mask_full.dtype))
    return (DTensor(out, spec, requires_grad=False),
            DTensor(_shard_of_full(mask_full, mask_spec), mask_spec, requires_grad=False))


@register_op_handler(["rand_like.default", "randn_like.default"])
def random_like_handler(dispatcher, op_call, args, kwargs):
    x = args[0]
    full = op_call(ember.empty(x.shape, dtype=x.dtype, device=x._local_tensor.device),
                   *args[1:], **kwargs)
    placements = tuple(Replicate() if isinstance(p, Partial) else p for p in x.placements)
    spec = DTensorSpec(x.device_mesh, placements,
                       tensor_meta=TensorMeta(x.shape, tuple(full.stride()), full.dtype))
    return DTensor(_shard_of_full(full, spec), spec, requires_grad=False)

"""Embedding lookups (PyTorch's rules): a column-sharded table gives an output sharded on its
last dim; a row-sharded table takes the indices as a ``_MaskPartial`` (shifted into the shard,
the others masked) and gives a ``_MaskPartial`` output sharing the mask; indices sharded on a dim
give an output sharded on it. The backward accumulates a column-sharded gradient, or a Partial
one from sharded or Partial gradients."""
import ember

from ..placement_types import Partial, Replicate, Shard, _MaskPartial
from .utils import register_single_dim_strategy


@register_single_dim_strategy(["embedding.default"])
def embedding_strategy(op, args_meta, kwargs_meta):
    """Placement order: [output, weight, indices]."""
    weight_meta, indices_meta = args_meta[0], args_meta[1]
    indices_ndim = len(indices_meta.shape)
    # one object for the output and the indices: they share the mask
    embedding_partial = _MaskPartial(offset_shape=ember.Size(weight_meta.shape), offset_dim=0)
    strategies = [[Shard(indices_ndim), Shard(1), Replicate()],
                  [embedding_partial, Shard(0), embedding_partial]]
    strategies += [[Shard(i), Replicate(), Shard(i)] for i in range(indices_ndim)]
    return strategies


@register_single_dim_strategy(["embedding_dense_backward.default"])
def embedding_dense_backward_strategy(op, args_meta, kwargs_meta):
    """Placement order: [weight grad, grad_output, indices]."""
    grad_out_ndim = len(args_meta[0].shape)
    strategies = [[Shard(1), Shard(grad_out_ndim - 1), Replicate()]]
    strategies += [[Partial(), Shard(i), Shard(i)] for i in range(len(args_meta[1].shape))]
    strategies.append([Partial(), Partial(), Replicate()])
    return strategies

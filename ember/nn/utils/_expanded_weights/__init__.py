"""``nn.utils._expanded_weights``: ExpandedWeight, the tensor subclass behind
``call_for_per_sample_grads``, and its per-sample gradient rules (linear, convolutions,
embedding, layer/group/instance norm), registered on import."""
from .conv_expanded_weights import ConvPerSampleGrad
from .embedding_expanded_weights import EmbeddingPerSampleGrad
from .expanded_weights_impl import ExpandedWeight
from .group_norm_expanded_weights import GroupNormPerSampleGrad
from .instance_norm_expanded_weights import InstanceNormPerSampleGrad
from .layer_norm_expanded_weights import LayerNormPerSampleGrad
from .linear_expanded_weights import LinearPerSampleGrad

__all__ = ["ExpandedWeight"]

# importing a rule's module registers it
_RULES = (ConvPerSampleGrad, EmbeddingPerSampleGrad, GroupNormPerSampleGrad,
          InstanceNormPerSampleGrad, LayerNormPerSampleGrad, LinearPerSampleGrad)

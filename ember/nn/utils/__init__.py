"""``nn.utils``: gradient clipping, parameter/vector conversion, parametrizations, packed sequences."""
from . import parametrizations, parametrize, rnn  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                        clip_grads_with_norm_, get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
from ..modules.utils import consume_prefix_in_state_dict_if_present  # noqa: F401

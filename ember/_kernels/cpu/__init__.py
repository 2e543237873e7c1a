"""CPU kernels on NumPy. Each accepts tensors of any strides (through cached NumPy views of their
storage) and returns fresh tensors built from the arrays NumPy produced, without copies."""
from .copy import *  # noqa: F401,F403
from .factory import *  # noqa: F401,F403
from .factory_more import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .amp import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .resample import *  # noqa: F401,F403
from .grid import *  # noqa: F401,F403
from .foreach import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .pointwise_more import *  # noqa: F401,F403
from .misc_ops import *  # noqa: F401,F403

from .factory import honour_pin_memory as _honour_pin_memory  # noqa: E402

# Factories that build their result directly rather than through empty: pin_memory=True gives the
# result in pinned memory, as PyTorch's (which allocate with empty(..., pin_memory)).
(zeros, ones, full, scalar_tensor, arange, arange_start, arange_start_step, linspace, logspace,
 eye, eye_m, triu_indices, tril_indices) = map(_honour_pin_memory, (
    zeros, ones, full, scalar_tensor, arange, arange_start, arange_start_step, linspace,  # noqa: F405
    logspace, eye, eye_m, triu_indices, tril_indices))  # noqa: F405

"""Device-independent kernels: view ops (pure metadata, via ``ember._core.strides``) and
CompositeImplicitAutograd decompositions written in ember ops."""
from .basic import *  # noqa: F401,F403
from .conversions import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .factory import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .resample import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .grid import *  # noqa: F401,F403
from .api import *  # noqa: F401,F403
from .foreach import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .missing_ops import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403

"""``ember.signal.windows``: PyTorch's window functions (SciPy's definitions), written in ember
ops so a window is built by the dispatcher like any tensor, with PyTorch's argument checks and
its ``sym``/``dtype``/``layout``/``device``/``requires_grad`` keywords."""
from .windows import (bartlett, blackman, cosine, exponential, gaussian, general_cosine,
                      general_hamming, hamming, hann, kaiser, nuttall)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]

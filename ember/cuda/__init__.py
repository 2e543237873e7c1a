"""``ember.cuda``: the CUDA device module. Minimal for now: availability and ``amp``."""
from . import amp  # noqa: F401


def is_available():
    """True when CuPy is installed and sees a GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, or no device: all mean "not available"
        return False

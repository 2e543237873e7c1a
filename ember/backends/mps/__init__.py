"""``ember.backends.mps``: Apple's Metal Performance Shaders. ember has no MPS kernels, so MPS
is neither built nor available; tensors on ``device="mps"`` fail as in a PyTorch build without
MPS."""
from functools import lru_cache as _lru_cache

__all__ = ["get_core_count", "get_name", "is_built", "is_available", "is_macos13_or_newer",
           "is_macos_or_newer"]

_NOT_BUILT = "ember is not linked with support for mps devices"


def is_built() -> bool:
    r"""Return whether ember is built with MPS support (it is not)."""
    return False


@_lru_cache
def is_available() -> bool:
    r"""Return a bool indicating if MPS is currently available."""
    return False


@_lru_cache
def is_macos_or_newer(major: int, minor: int) -> bool:
    r"""Return a bool indicating whether MPS is running on given MacOS or newer."""
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


@_lru_cache
def is_macos13_or_newer(minor: int = 0) -> bool:
    r"""Return a bool indicating whether MPS is running on MacOS 13 or newer."""
    return is_macos_or_newer(13, minor)


def get_name() -> str:
    r"""Return Metal device name."""
    raise RuntimeError(_NOT_BUILT)


def get_core_count() -> int:
    r"""Return GPU core count."""
    raise RuntimeError(_NOT_BUILT)

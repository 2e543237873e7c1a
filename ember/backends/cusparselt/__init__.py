"""``ember.backends.cusparselt``: NVIDIA's cuSPARSELt (2:4 sparse matmul); ember does not link
it, so there is no version and no algorithm id."""
from typing import Optional

__all__ = ["version", "is_available", "get_max_alg_id"]


def version() -> Optional[int]:
    """Return the version of cuSPARSELt (None: not available)."""
    return None


def is_available() -> bool:
    r"""Return a bool indicating if cuSPARSELt is currently available."""
    return False


def get_max_alg_id() -> Optional[int]:
    return None

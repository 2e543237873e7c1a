"""``ember.testing``: PyTorch's test helpers -- ``assert_close``, ``make_tensor``, ``assert_allclose``."""
from ._comparison import assert_allclose, assert_close  # noqa: F401
from ._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

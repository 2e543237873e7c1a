"""``ember.backends.nnpack``: NNPACK convolutions. ember does not link NNPACK, so
``is_available()`` is False; the ``enabled`` flag keeps PyTorch's default and type check."""
from contextlib import contextmanager

from .. import _allow_nonbracketed_mutation
from .._context import check_bool, ctx as _ctx

__all__ = ["is_available", "flags", "set_flags"]


def is_available():
    r"""Return whether ember is built with NNPACK support (it is not)."""
    return False


def set_flags(_enabled):
    r"""Set if nnpack is enabled globally"""
    orig_flags = (_ctx.nnpack_enabled,)
    _ctx.nnpack_enabled = check_bool("set_enabled_NNPACK", _enabled)
    return orig_flags


@contextmanager
def flags(enabled=False):
    r"""Context manager for setting if nnpack is enabled globally"""
    with _allow_nonbracketed_mutation():
        orig_flags = set_flags(enabled)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(orig_flags[0])

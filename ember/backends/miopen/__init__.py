"""``ember.backends.miopen``: AMD MIOpen's immediate mode switch (ember has no ROCm kernels;
the flag keeps PyTorch's default and type check)."""
import sys
from contextlib import contextmanager

from .. import ContextProp, PropModule, _allow_nonbracketed_mutation
from .._context import check_bool, ctx as _ctx


def _get_immediate():
    return _ctx.miopen_immediate


def _set_immediate(v):
    _ctx.miopen_immediate = check_bool("set_immediate_miopen", v)


def set_flags(_immediate=None):
    orig_flags = (_get_immediate(),)
    if _immediate is not None:
        _set_immediate(_immediate)
    return orig_flags


@contextmanager
def flags(immediate=False):
    with _allow_nonbracketed_mutation():
        orig_flags = set_flags(immediate)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig_flags)


class MiopenModule(PropModule):
    immediate = ContextProp(_get_immediate, _set_immediate)


sys.modules[__name__] = MiopenModule(sys.modules[__name__], __name__)

"""``ember.backends.mkldnn``: oneDNN (formerly MKL-DNN). ember's CPU kernels are NumPy and do
not call oneDNN, so ``is_available()`` is False; the flags keep PyTorch's names, defaults and
type checks (``enabled = "x"`` raises as in PyTorch), and a verbose scope cannot be entered."""
import sys
from contextlib import contextmanager

from .. import (ContextProp, PropModule, _FP32Precision, _allow_nonbracketed_mutation,
                _get_fp32_precision_getter, _set_fp32_precision_setter)
from .._context import check_bool, ctx as _ctx


def is_available():
    r"""Return whether ember is built with MKL-DNN support (it is not)."""
    return False


def is_acl_available():
    r"""Return whether ember is built with MKL-DNN + ACL support (it is not)."""
    return False


VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2


class verbose:
    """On-demand oneDNN verbosing (``DNNL_VERBOSE`` for one block). Without oneDNN, entering a
    scope with a level other than VERBOSE_OFF fails, as in a PyTorch build without it."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return
        raise AssertionError(
            "Failed to set MKLDNN into verbose mode. Please consider to disable this verbose "
            "scope.")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


def _get_enabled():
    return _ctx.mkldnn_enabled


def _set_enabled(v):
    _ctx.mkldnn_enabled = check_bool("set_enabled_mkldnn", v)


def _get_deterministic():
    return _ctx.mkldnn_deterministic


def _set_deterministic(v):
    _ctx.mkldnn_deterministic = check_bool("set_deterministic_mkldnn", v)


def _get_allow_tf32():
    return _get_fp32_precision_getter("mkldnn", "all")() == "tf32"


def _set_allow_tf32(v):
    check_bool("set_allow_tf32_onednn", v)
    _set_fp32_precision_setter("mkldnn", "all")("tf32" if v else "ieee")


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    orig_flags = (_get_enabled(), _get_deterministic(), _get_allow_tf32(),
                  _get_fp32_precision_getter("mkldnn", "all")())
    if _enabled is not None:
        _set_enabled(_enabled)
    if _deterministic is not None:
        _set_deterministic(_deterministic)
    if _allow_tf32 is not None:
        _set_allow_tf32(_allow_tf32)
    if _fp32_precision is not None:
        _set_fp32_precision_setter("mkldnn", "all")(_fp32_precision)
    return orig_flags


@contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    with _allow_nonbracketed_mutation():
        orig_flags = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(*orig_flags)


class MkldnnModule(PropModule):
    def is_available(self):
        return is_available()

    enabled = ContextProp(_get_enabled, _set_enabled)
    deterministic = ContextProp(_get_deterministic, _set_deterministic)
    allow_tf32 = ContextProp(_get_allow_tf32, _set_allow_tf32)
    matmul = _FP32Precision("mkldnn", "matmul")
    conv = _FP32Precision("mkldnn", "conv")
    rnn = _FP32Precision("mkldnn", "rnn")
    fp32_precision = ContextProp(_get_fp32_precision_getter("mkldnn", "all"),
                                 _set_fp32_precision_setter("generic", "all"))


sys.modules[__name__] = MkldnnModule(sys.modules[__name__], __name__)

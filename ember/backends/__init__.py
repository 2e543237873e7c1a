"""Backend switches, as ``torch.backends``: one submodule per backend library PyTorch can use
(``cpu, cuda, cudnn, cusparselt, mha, miopen, mps, mkl, mkldnn, nnpack, openmp, opt_einsum,
python_native, quantized, kleidiai, xeon``). Each flag either changes what ember does or reports
a fact about ember on this machine; the shared flag state lives in ``_context``.

This module also holds PyTorch's machinery for module-level flags: ``ContextProp`` (a property
on a module, so ``ember.backends.cudnn.benchmark = True`` runs a type-checking setter),
``PropModule`` (the module subclass that carries such properties) and
``disable_global_flags``/``flags_frozen`` (which forbid bare assignment, leaving ``flags()``
context managers as the only way to change a flag)."""
import sys
import types
from contextlib import contextmanager

from ._context import ctx as _ctx

__allow_nonbracketed_mutation_flag = True


def disable_global_flags():
    global __allow_nonbracketed_mutation_flag
    __allow_nonbracketed_mutation_flag = False


def flags_frozen():
    return not __allow_nonbracketed_mutation_flag


@contextmanager
def __allow_nonbracketed_mutation():
    global __allow_nonbracketed_mutation_flag
    old = __allow_nonbracketed_mutation_flag
    __allow_nonbracketed_mutation_flag = True
    try:
        yield
    finally:
        __allow_nonbracketed_mutation_flag = old


# A module-level name PyTorch's submodules import (name-mangling makes the double underscore
# awkward to import from a class body or function).
_allow_nonbracketed_mutation = __allow_nonbracketed_mutation


class ContextProp:
    """A module attribute backed by a getter and a setter (PyTorch's ``ContextProp``)."""

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype):
        return self.getter()

    def __set__(self, obj, val):
        if not flags_frozen():
            self.setter(val)
        else:
            raise RuntimeError(
                f"not allowed to set {obj.__name__} flags "
                "after disable_global_flags; please use flags() context manager instead")


class PropModule(types.ModuleType):
    """A module object whose class holds ``ContextProp`` descriptors; other attributes come
    from the original module ``m``."""

    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)


# fp32_precision: PyTorch 2.13's per-(backend, op) precision ("none" = inherit, "ieee", "tf32").
_FP32_VALUES = ("none", "ieee", "tf32")
_FP32_BACKENDS = {"generic": ("all",), "cuda": ("all", "matmul", "conv", "rnn"),
                  "mkldnn": ("all", "matmul", "conv", "rnn")}


def _get_fp32(backend, op):
    value = _ctx.fp32_precision.get((backend, op), "none")
    if value == "none" and (backend, op) == ("cuda", "matmul"):
        # PyTorch reports the cuBLAS precision implied by float32_matmul_precision
        return "ieee" if _ctx.float32_matmul_precision == "highest" else "tf32"
    return value


def _set_fp32(backend, op, value):
    if not isinstance(value, str):
        raise RuntimeError(f"_set_fp32_precision_setter expects a str, but got "
                           f"{type(value).__name__}")
    if value not in _FP32_VALUES:
        raise RuntimeError(f"Unknown precision: {value}")
    _ctx.fp32_precision[(backend, op)] = value
    if (backend, op) == ("cuda", "matmul") and value != "none":
        _ctx.float32_matmul_precision = "highest" if value == "ieee" else "high"


def _get_fp32_precision_getter(backend, op):
    return lambda: _get_fp32(backend, op)


def _set_fp32_precision_setter(backend, op):
    return lambda precision: _set_fp32(backend, op, precision)


class _FP32Precision:
    """``backend.op.fp32_precision`` (e.g. ``ember.backends.cudnn.conv.fp32_precision``)."""

    def __init__(self, backend, op):
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "op", op)

    def __setattr__(self, name, value):
        if name == "fp32_precision":
            _set_fp32(self.backend, self.op, value)
        else:
            raise AttributeError("Unknown attribute " + name)

    def __getattr__(self, name):
        if name == "fp32_precision":
            return _get_fp32(self.backend, self.op)
        raise AttributeError("Unknown attribute " + name)


def set_flags(_fp32_precision="none"):
    orig_flags = (_get_fp32("generic", "all"),)
    if _fp32_precision is not None:
        _set_fp32("generic", "all", _fp32_precision)
    return orig_flags


@contextmanager
def flags(fp32_precision="none"):
    with __allow_nonbracketed_mutation():
        orig_flags = set_flags(fp32_precision)
    try:
        yield
    finally:
        with __allow_nonbracketed_mutation():
            set_flags(*orig_flags)


class GenericModule(PropModule):
    fp32_precision = ContextProp(_get_fp32_precision_getter("generic", "all"),
                                 _set_fp32_precision_setter("generic", "all"))


sys.modules[__name__] = GenericModule(sys.modules[__name__], __name__)

from . import (cpu, cuda, cudnn, cusparselt, kleidiai, mha, miopen, mkl, mkldnn, mps,  # noqa: E402,F401
               nnpack, openmp, opt_einsum, python_native, quantized)

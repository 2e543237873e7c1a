"""``torch._custom_ops``: PyTorch's first custom-operator API (before ``torch.library.custom_op``),
kept for the libraries that still call it, on ember.library's machinery.

``custom_op`` defines the operator (from a schema string, or inferred from a prototype
function's annotations), ``impl`` registers a kernel per device type, ``impl_abstract`` the
fake implementation and ``get_ctx`` is ``ember.library.get_ctx``. Not provided: its
``impl_save_for_backward``/``impl_backward`` pair (the old autograd registration); use
``ember.library.register_autograd``.
"""
import inspect
import warnings

from . import library as _library
from .library import get_ctx

__all__ = ["custom_op", "impl", "impl_abstract", "get_ctx"]

# Libraries defining the operators made here, kept for the process (PyTorch's global registry).
_libraries = []


_RESERVED_NS = {"prim", "prims", "aten", "at", "torch", "pytorch"}


def _parse_qualname(qualname):
    names = qualname.split("::", 1)
    if len(names) != 2:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator "
                         f"name should look something like ns::foo")
    ns, name = names
    if "." in name:
        raise ValueError(f"The torch.custom_ops APIs do not handle overloads, i.e. operator "
                         f"names with '.' in them. Please name your operator something like "
                         f"ns::foo. Got: {qualname}")
    if "." in ns:
        raise ValueError(f'custom_op(..., ns="{ns}"): expected ns to not contain any . (and be '
                         f'a valid variable name)')
    if ns in _RESERVED_NS:
        raise ValueError(f"custom_op(..., ns='{ns}'): '{ns}' is a reserved namespace, please "
                         f"choose something else. ")
    return ns, name


def _define(ns, name, schema):
    warnings.warn("torch._custom_op is deprecated and will be removed in PyTorch 2.6, please use "
                  "the equivalent torch.library API instead.", DeprecationWarning, stacklevel=3)
    lib = _library.Library(ns, "FRAGMENT")
    lib.define(f"{name}{schema}", tags=("needs_fixed_stride_order",))
    _libraries.append(lib)


def custom_op(qualname, func_or_schema=None):
    """Define the operator ``qualname`` ("ns::name") from a schema string, or (as a decorator)
    from a prototype function whose annotations give the schema and whose name is ``name``."""
    ns, name = _parse_qualname(qualname)

    def inner(func):
        if not inspect.isfunction(func):
            raise ValueError(f"custom_op(...)(func): Expected `func` to be a Python function, "
                             f"got: {type(func)}")
        if func.__name__ != name:
            raise ValueError(f"custom_op(qualname='{qualname}', ...)(func): expected `func` to "
                             f"have name '{name}' but got '{func.__name__}'. Please either "
                             f"change the name of `func` or the qualname that is passed to "
                             f"`custom_op`")
        _define(ns, name, _library.infer_schema(func, mutates_args=()))
        return func

    if func_or_schema is None:
        return inner
    if isinstance(func_or_schema, str):
        _define(ns, name, func_or_schema)
        return None
    return inner(func_or_schema)


def impl(qualname, *, device_types=("cpu", "cuda"), func=None):
    """Register ``func`` as the operator's kernel for ``device_types``."""
    def inner(func):
        _library.impl(qualname, device_types, func)
        return func
    return inner(func) if func is not None else inner


def impl_abstract(qualname, *, func=None):
    """Register the operator's fake (abstract) implementation: ``register_fake``."""
    return _library.register_fake(qualname, func, _stacklevel=2)

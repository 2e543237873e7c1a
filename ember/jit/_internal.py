"""The decorators and markers of ``torch.jit`` (PyTorch's ``torch._jit_internal``): they tag
functions with ``_torchscript_modifier`` exactly as PyTorch does, or are the identity where
PyTorch's eager behaviour is the identity (``annotate``, ``Attribute``, ``Final``)."""
import functools
import typing

from ..futures import Future

__all__ = ["FunctionModifiers", "export", "ignore", "unused", "annotate", "Attribute", "Final",
           "is_scripting", "is_tracing", "fork", "wait", "get_torchscript_modifier", "_overload",
           "_overload_method"]

Final = typing.Final


class FunctionModifiers:
    """How a function is treated when its module is scripted (PyTorch's strings)."""
    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = (
        "if this method is not scripted, copy the python method onto the scripted model")
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def get_torchscript_modifier(fn):
    if not callable(fn):
        return None
    if hasattr(fn, "__func__"):
        fn = fn.__func__
    return getattr(fn, "_torchscript_modifier", FunctionModifiers.DEFAULT)


def _copy_to_script_wrapper(fn):
    """Mark a method that a script wrapper of its module copies over as Python (container
    modules' methods; pyro marks its own)."""
    fn._torchscript_modifier = FunctionModifiers.COPY_TO_SCRIPT_WRAPPER
    return fn


def export(fn):
    """Mark a method as an entry point of the scripted module (it stays callable on it)."""
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def unused(fn):
    """Mark a function so that a scripted module raises instead of running it."""
    if isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def ignore(drop=False, **kwargs):
    """Leave a function as a Python call (``drop=True``: as :func:`unused`). Usable bare
    (``@ignore``) or called (``@ignore(drop=True)``), as PyTorch's."""
    if callable(drop):
        fn = drop
        fn._torchscript_modifier = FunctionModifiers.IGNORE
        return fn
    if not isinstance(drop, bool):
        raise RuntimeError("Argument to @torch.jit.ignore must be a bool or "
                           f"a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        import warnings
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now drop "
                      "the function call on compilation. Use torch.jit.unused now. {}",
                      category=FutureWarning)
        drop = drop_on_export

    def decorator(fn):
        fn._torchscript_modifier = (FunctionModifiers.UNUSED if drop
                                    else FunctionModifiers.IGNORE)
        return fn
    return decorator


def _warn_at_user_frame(message, category, frame=None):
    """Warn at the nearest frame outside the ember package (the user's line), since the call
    that triggers the warning is reached through several ember layers."""
    import os
    import sys
    import warnings
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame = frame or sys._getframe(1)
    # ember's generated code (dispatch entries, operator methods) is named "<ember ...>"
    while frame is not None and (frame.f_code.co_filename.startswith(root)
                                 or frame.f_code.co_filename.startswith("<ember")):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category)
        return
    g = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=g.get("__name__"),
                           registry=g.setdefault("__warningregistry__", {}))


def _unused_stub(name):
    def stub(*args, **kwargs):
        raise RuntimeError(f"This Python function is annotated to be ignored and cannot be run "
                           f"(method {name!r} is @torch.jit.unused)")
    return stub


_OVERLOAD_EXAMPLE = """
Example usage of overload function:
@torch.jit._overload
def my_function(x: type0) -> type0: # decl 1
    pass

@torch.jit._overload
def my_function(x: type1) -> type1: # decl 2
    pass

def my_function(x):                 # implementation
    if isinstance(x, type0):
        return x
    elif isinstance(x, type1):
        return x
"""


def _check_overload_body(func):
    """PyTorch's check that an overload declaration's body is ``pass`` or ``...``."""
    import ast
    import inspect
    import textwrap
    import warnings
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except OSError:
        warnings.warn(f"Unable to retrieve source for @torch.jit._overload function: {func}.",
                      stacklevel=3)
        return
    body = ast.parse(source).body[0].body
    if len(body) != 1 or not (isinstance(body[0], ast.Pass) or (
            isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and body[0].value.value is Ellipsis)):
        raise RuntimeError(
            "Only `pass` statement or `...` can be the body of overload declaration:\n"
            + "\n".join(source.split("\n")[:3])
            + " <- Expecting `pass` or `...` here!\n" + _OVERLOAD_EXAMPLE)


def _overload(func):
    """Declare one typed signature of a function for the TorchScript compiler. ember compiles no
    TorchScript, so only PyTorch's check of the declaration runs; in Python the definition
    that follows the declarations replaces them, as in PyTorch."""
    _check_overload_body(func)
    return func


_overload_method = _overload  # (a method's declaration is checked the same way)


def annotate(the_type, the_value):
    """Give ``the_value`` a type for the TorchScript compiler; in Python it is ``the_value``."""
    return the_value


def Attribute(value, type):  # noqa: A002 (PyTorch's parameter name)
    """Declare a module attribute's type; in Python it is ``value``."""
    return value


def is_scripting():
    """False: ember's ``script`` runs the Python code itself (captured by ``ember.compile`` or
    eagerly), never a TorchScript compilation, so the Python branch is the one that runs."""
    return False


_tracing_depth = 0


def script_if_tracing(fn):
    """``fn``, to be compiled as TorchScript only while a trace runs (PyTorch keeps its control
    flow in the traced graph that way). ember's ``trace`` records the ATen ops ``fn`` runs, as
    ember's ``script`` would: the wrapper calls ``fn`` in both cases, and a branch on tensor
    values is frozen in the trace (with the TracerWarning a tensor-to-Python conversion gives)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper.__original_fn = fn  # the attributes PyTorch's wrapper carries
    wrapper.__script_if_tracing_wrapper = True
    return wrapper


_script_if_tracing = script_if_tracing


def is_tracing():
    """True while :func:`ember.jit.trace` records a graph."""
    return _tracing_depth > 0


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now and return a completed :class:`ember.futures.Future`
    (PyTorch's eager ``fork`` also runs synchronously outside TorchScript)."""
    fut = Future()
    fut.set_result(func(*args, **kwargs))  # an exception propagates here, as PyTorch's eager fork
    return fut


def wait(future):
    """The value of a future returned by :func:`fork`."""
    return future.wait()


def interface(obj):
    """``@jit.interface``: marks a class as a TorchScript interface, a type for annotations
    (``List[MyInterface]``). Nothing compiles TorchScript here, so after PyTorch's checks the
    class is returned as it is, marked as PyTorch marks it."""
    import inspect
    import warnings

    from ..nn import Module
    warnings.warn("`torch.jit.interface` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    is_module_interface = issubclass(obj, Module) and len(obj.mro()) == 3
    if not is_module_interface and len(obj.mro()) > 2:
        raise RuntimeError("TorchScript interface does not support inheritance yet. Please "
                           "directly inherit from 'object' or 'nn.Module'.")
    obj.__torch_script_interface__ = f"__torch__.{obj.__module__}.{obj.__qualname__}"
    return obj


def jit_isinstance(obj, target_type):
    """``jit.isinstance``: Python's isinstance that also checks the element types of
    ``List[...]``, ``Dict[..., ...]``, ``Tuple[...]`` and ``Optional``/``Union`` targets."""
    import collections.abc
    import warnings
    if isinstance(target_type, collections.abc.Container):
        if not isinstance(target_type, tuple):
            raise RuntimeError("The second argument to `torch.jit.isinstance` must be a type or "
                               "a tuple of types")
        return any(jit_isinstance(obj, t) for t in target_type)
    origin = typing.get_origin(target_type)
    if target_type in (list, dict, tuple, typing.List, typing.Dict, typing.Tuple,
                       typing.Optional):
        name = getattr(target_type, "_name", None) or target_type.__name__.capitalize()
        raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a "
                           f"contained type, e.g. {name}[int]")
    if origin is None:
        return isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin in (list, dict, tuple) and obj in ([], {}, ()):
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance "
                      "in eager mode. For example, List[int] would become list and therefore "
                      "falsely return True for List[float] or List[str].", stacklevel=2)
    if origin is list:
        return isinstance(obj, list) and all(jit_isinstance(e, args[0]) for e in obj)
    if origin is dict:
        return isinstance(obj, dict) and all(
            jit_isinstance(k, args[0]) and jit_isinstance(v, args[1])
            for k, v in obj.items())
    if origin is tuple:
        return (isinstance(obj, tuple) and len(obj) == len(args)
                and all(jit_isinstance(e, t) for e, t in zip(obj, args)))
    if origin is typing.Union or getattr(origin, "__name__", "") == "UnionType":
        return obj is None and type(None) in args or any(jit_isinstance(obj, t) for t in args)
    return False

"""Everything else the interpreter meets: ember functions captured as graph calls, the grad-mode,
autocast and profiler context managers (their state is set during the trace and recorded in
the graph) and ``nullcontext``, exceptions made and raised in captured code, user classes and
objects (objects read from the frame, objects created in captured
code, and those that are graph values: an op's result holding tensors, or an argument rebuilt
in the graph from lifted inputs), Python modules, ``super()``, and the library calls traced by
their meaning rather than their code: ``os.environ``, loggers, ``inspect.signature``,
``copy.deepcopy``."""
import collections.abc
import contextlib
import copy
import functools
import inspect
import itertools
import os
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable
from .dicts import ConstDictVariable

__all__ = ["TorchInGraphFunctionVariable", "GradModeVariable", "GradModeWrappedVariable",
           "AutocastVariable", "NullContextVariable", "WithExitVariable", "ExceptionVariable",
           "UserDefinedClassVariable", "UserDefinedObjectVariable", "PythonModuleVariable",
           "SuperVariable", "SkippedFunctionVariable", "TracedObjectVariable",
           "TracedFunctionVariable", "rebuild_object", "rebuild_function", "raise_observed",
           "raise_attribute_error"]


def rebuild_object(cls, state):
    """An object of ``cls`` whose attributes are ``state``: a user object holding tensors,
    passed to an op in a graph (its tensors are graph values) or returned by residual code."""
    obj = object.__new__(cls)
    obj.__dict__.update(state)
    return obj


def rebuild_function(fn, defaults, kwdefaults, cells, global_values):
    """``fn``'s code over the given defaults, closure contents and globals (``global_values``
    over ``fn.__globals__``): a function whose captured tensors a graph lifted (as PyTorch
    lifts the tensors a closure reads), passed to an op."""
    f_globals = fn.__globals__
    if global_values:
        f_globals = {**f_globals, **global_values}
    new = types.FunctionType(fn.__code__, f_globals, fn.__name__, defaults,
                             tuple(types.CellType(c) for c in cells))
    new.__kwdefaults__ = kwdefaults
    new.__qualname__ = fn.__qualname__
    new.__dict__.update(fn.__dict__)
    return new

# ember functions that change global state or do I/O: a graph break when called.
_STATEFUL = {"manual_seed", "seed", "set_default_dtype", "set_default_device",
             "use_deterministic_algorithms", "set_printoptions", "save", "load", "set_rng_state",
             "get_rng_state", "set_num_threads", "set_grad_enabled_global", "initial_seed",
             "set_float32_matmul_precision", "is_grad_enabled", "get_default_dtype"}


class TorchInGraphFunctionVariable(VariableTracker):
    """An ember callable (``ember.sin``, ``F.relu``, an OpOverload, an allow_in_graph function):
    called with tensor arguments it becomes a call_function node; with constants only and a
    non-tensor result it is folded."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def as_python_constant(self):
        return self.fn

    def python_type(self):
        return type(self.fn)

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        try:
            return VariableBuilder(tx, None)(getattr(self.fn, name))
        except AttributeError:
            unimplemented(f"{self.fn}.{name}")

    def call_function(self, tx, args, kwargs):
        from .builtin import contains_tensor
        from .. import eval_frame
        fn = self.fn
        name = getattr(fn, "__name__", "")
        if fn in eval_frame._disabled_fns:
            unimplemented(f"call to a function marked ember.compiler.disable: "
                          f"{getattr(fn, '__qualname__', fn)}")
        if name == "is_grad_enabled":
            from ..._dispatch import tls
            return ConstantVariable(tls.state.grad_enabled)
        if name == "get_default_dtype":
            from ..._core.dtype import get_default_dtype
            return ConstantVariable(get_default_dtype())
        from ..._higher_order_ops.cond import cond
        if fn is cond:
            from .higher_order_ops import trace_cond
            return trace_cond(tx, args, kwargs)
        if name in ("is_compiling", "is_dynamo_compiling"):
            return ConstantVariable(True)
        if name == "is_exporting":  # ember.export does not capture through Dynamo
            from ... import compiler
            return ConstantVariable(compiler._is_exporting_flag)
        if name in _STATEFUL:
            unimplemented(f"call to ember.{name}, which changes global state")
        if name in ("is_tensor",) and len(args) == 1:
            from .tensor import TensorVariable
            return ConstantVariable(isinstance(args[0], TensorVariable))
        # objects and functions holding tensors become graph values (OutputGraph.graph_arg)
        args, kwargs = tx.output.graph_args(tx, args, kwargs)
        if not contains_tensor(args, kwargs) and getattr(fn, "_ember_in_graph", None) is None:
            # No tensor in: a factory (a graph node) or a constant function (folded).
            try:
                cargs = [a.as_python_constant() for a in args]
                ckw = {k: v.as_python_constant() for k, v in kwargs.items()}
            except Exception:  # noqa: BLE001 - a non-constant argument goes to the graph
                return tx.output.call_graph(tx, "call_function", fn, args, kwargs)
            from ..._tensor import Tensor
            probe = tx.output.run_fake(fn, cargs, ckw)
            if isinstance(probe, Tensor) or (isinstance(probe, (tuple, list)) and
                                             any(isinstance(p, Tensor) for p in probe)):
                return tx.output.call_graph(tx, "call_function", fn, args, kwargs)
            from .builder import wrap_constant_like
            return wrap_constant_like(tx, fn(*cargs, **ckw))
        return tx.output.call_graph(tx, "call_function", fn, args, kwargs)

    def __repr__(self):
        return f"TorchInGraphFunctionVariable({getattr(self.fn, '__qualname__', self.fn)})"


class AutogradFunctionApplyVariable(TorchInGraphFunctionVariable):
    """``MyFunction.apply`` of a custom ``autograd.Function``: the call is one graph op, which
    AOTAutograd's ``make_fx`` traces into aten ops, the forward directly and the backward
    inside the joint graph's ``autograd.grad`` (ember's engine runs the ctx protocol, as it
    does eagerly). Its backward is run once on the fake outputs here, so that one the graph
    cannot trace (data-dependent shapes) breaks the graph at the call instead of failing in
    the backend."""

    def call_function(self, tx, args, kwargs):
        from ... import autograd
        from ..._dispatch import tls
        from .lists import BaseListVariable
        from .tensor import TensorVariable
        out = super().call_function(tx, args, kwargs)
        if not tls.state.grad_enabled:
            return out
        leaves = [a.example for a in list(args) + list(kwargs.values())
                  if isinstance(a, TensorVariable) and a.example.requires_grad]
        outs = [v.example for v in (out.items if isinstance(out, BaseListVariable) else [out])
                if isinstance(v, TensorVariable) and v.example.grad_fn is not None]
        if leaves and outs:
            try:
                with tx.output.fake_mode:
                    autograd.grad(outs, leaves, [o.new_ones(o.shape) for o in outs],
                                  allow_unused=True)
            except Exception as e:  # noqa: BLE001 - the call then runs eagerly
                unimplemented(f"the backward of {self.fn.__self__.__qualname__} cannot be traced "
                              f"({type(e).__name__}: {e})")
        return out


class SkippedFunctionVariable(VariableTracker):
    """A callable that cannot be traced (C code outside ember, a disabled function)."""

    def __init__(self, fn, reason, source=None):
        super().__init__(source)
        self.fn, self.reason = fn, reason

    def as_python_constant(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        unimplemented(self.reason)


class ContextManagerVariable(VariableTracker):
    def enter(self, tx):
        raise NotImplementedError

    def exit(self, tx):
        raise NotImplementedError

    def var_getattr(self, tx, name):
        if name == "__enter__":
            return _BoundCtx(self, "enter")
        if name == "__exit__":
            return WithExitVariable(self)
        unimplemented(f"context manager attribute {name}")


class _BoundCtx(VariableTracker):
    def __init__(self, ctx, what):
        super().__init__()
        self.ctx, self.what = ctx, what

    def call_function(self, tx, args, kwargs):
        return self.ctx.enter(tx)


class GradModeVariable(ContextManagerVariable):
    """``no_grad()``, ``enable_grad()``, ``set_grad_enabled(b)``: the trace's grad mode is set,
    and the graph records ``ember._C._set_grad_enabled`` where it changes."""

    def __init__(self, target, cls, initial=None):
        super().__init__()
        self.target, self.cls, self.initial = target, cls, initial

    def python_type(self):
        return self.cls

    def enter(self, tx):
        from ..._dispatch import tls
        self.initial = tls.state.grad_enabled
        tx.output.set_grad_mode(tx, self.target)
        return ConstantVariable(None)

    def exit(self, tx):
        tx.output.set_grad_mode(tx, self.initial)

    def call_function(self, tx, args, kwargs):
        # `@no_grad()` on a function made in captured code
        if len(args) != 1 or kwargs or self.cls.__name__ == "set_grad_enabled":
            unimplemented(f"{self.cls.__name__} object called with {args} {kwargs}")
        return GradModeWrappedVariable(self, args[0])

    def arg_repr(self):
        """The constructor's argument that makes this mode (set_grad_enabled's flag)."""
        return repr(self.target) if self.cls.__name__ == "set_grad_enabled" else ""

    def reconstruct_entered(self, cg):
        """Residual code that enters the real context manager (a break inside the block)."""
        t = cg.temp()
        cg.lines.append(f"{t} = {cg.const(self.cls)}({self.arg_repr()})")
        cg.lines.append(f"{t}.__enter__()")
        cg.lines.append(f"{t}.prev = {self.initial!r}")  # the mode before the block
        return f"{t}.__exit__"


class GradModeWrappedVariable(VariableTracker):
    """A function decorated with a grad-mode object in captured code: each call runs it
    inlined between the mode's enter and exit."""

    def __init__(self, mode, fn):
        super().__init__()
        self.mode, self.fn = mode, fn

    def call_function(self, tx, args, kwargs):
        mode = GradModeVariable(self.mode.target, self.mode.cls)
        mode.enter(tx)
        try:
            return self.fn.call_function(tx, args, kwargs)
        finally:  # (an exception raised in the function leaves the mode too, as eager)
            mode.exit(tx)

    def reconstruct(self, cg):
        return f"{cg.const(self.mode.cls)}({self.mode.arg_repr()})({cg.reconstruct(self.fn)})"


class ProfilerContextVariable(ContextManagerVariable):
    """``record_function(...)`` and the profilers' context managers in captured code: no-ops
    (as PyTorch's ProfilerContextVariable: the ranges of a compiled region are not recorded,
    the graph's kernels are what a profile shows)."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def python_type(self):
        return self.cls

    def enter(self, tx):
        return ConstantVariable(None)

    def exit(self, tx):
        pass

    def reconstruct_entered(self, cg):
        t = cg.temp()
        cg.lines.append(f"{t} = {cg.const(contextlib.nullcontext)}()")
        return f"{t}.__exit__"


class AutocastVariable(ContextManagerVariable):
    def __init__(self, args):
        super().__init__()
        self.args = args  # device_type, dtype, enabled, cache_enabled
        self.node = None

    def enter(self, tx):
        from ...amp.autocast_mode import _enter_autocast
        self.node, self.mode = tx.output.enter_autocast(tx, _enter_autocast, self.args)
        return ConstantVariable(None)

    def exit(self, tx):
        from ...amp.autocast_mode import _exit_autocast
        tx.output.exit_autocast(tx, _exit_autocast, self.node, self.mode)


class InferenceModeVariable(ContextManagerVariable):
    """``inference_mode(mode)``: entered for real during the trace (the thread's key sets and
    grad mode change), recorded as ``_enter_inference_mode`` / ``_exit_inference_mode``."""

    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def python_type(self):
        from ...autograd.grad_mode import inference_mode
        return inference_mode

    def enter(self, tx):
        from ...autograd.grad_mode import _enter_inference_mode, inference_mode
        self.node, self.real = tx.output.enter_autocast(tx, _enter_inference_mode, [self.mode],
                                                        real=inference_mode(self.mode))
        return ConstantVariable(None)

    def exit(self, tx):
        from ...autograd.grad_mode import _exit_inference_mode
        tx.output.exit_autocast(tx, _exit_inference_mode, self.node, self.real)


class NullContextVariable(ContextManagerVariable):
    """``contextlib.nullcontext(enter_result)``: the context manager that does nothing (the
    usual other arm of ``autocast(...) if amp else nullcontext()``)."""

    def __init__(self, enter_result):
        super().__init__()
        self.enter_result = enter_result

    def python_type(self):
        return contextlib.nullcontext

    def enter(self, tx):
        return self.enter_result

    def exit(self, tx):
        pass

    def reconstruct_entered(self, cg):
        t = cg.temp()
        cg.lines.append(f"{t} = {cg.const(contextlib.nullcontext)}()")
        return f"{t}.__exit__"


class WithExitVariable(VariableTracker):
    """The ``__exit__`` that BEFORE_WITH leaves on the stack."""

    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx

    def call_function(self, tx, args, kwargs):
        self.ctx.exit(tx)
        return ConstantVariable(None)

    def reconstruct(self, cg):
        if hasattr(self.ctx, "reconstruct_entered"):
            return self.ctx.reconstruct_entered(cg)
        unimplemented(f"graph break inside a {type(self.ctx).__name__} block")


class UserDefinedClassVariable(VariableTracker):
    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def as_python_constant(self):
        return self.cls

    def python_type(self):
        return type(self.cls)

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        from ..source import AttrSource
        try:
            v = getattr(self.cls, name)
        except AttributeError as e:
            raise_attribute_error(tx, self, name, str(e))
        raw = None
        for k in self.cls.__mro__:
            if name in k.__dict__:
                raw = k.__dict__[name]
                break
        from ...autograd.function import Function
        if name == "apply" and issubclass(self.cls, Function) and \
                _mro_lookup(self.cls, "apply")[1] is Function:
            return AutogradFunctionApplyVariable(v)
        if isinstance(raw, classmethod):
            from .functions import UserMethodVariable
            return UserMethodVariable(raw.__func__, self)
        return VariableBuilder(tx, AttrSource(self.source, name) if self.source else None)(v)

    def call_function(self, tx, args, kwargs):
        from ...autograd import grad_mode as gm
        from ...amp.autocast_mode import autocast
        cls = self.cls
        if cls is gm.no_grad and not args:
            return GradModeVariable(False, cls)
        if cls is gm.enable_grad and not args:
            return GradModeVariable(True, cls)
        if cls is gm.set_grad_enabled:
            return GradModeVariable(bool(args[0].as_python_constant()), cls)
        if cls is gm.inference_mode:
            mode = args[0].as_python_constant() if args else \
                kwargs["mode"].as_python_constant() if "mode" in kwargs else True
            return InferenceModeVariable(bool(mode))
        from ...profiler import profile, record_function
        if issubclass(cls, (record_function, profile)):
            return ProfilerContextVariable(cls)
        if cls is functools.partial and args:
            from .functions import FunctoolsPartialVariable
            return FunctoolsPartialVariable(args[0], args[1:], kwargs)
        if cls is itertools.chain and not kwargs:
            from .lists import ListIteratorVariable
            return ListIteratorVariable([v for a in args for v in tx.unpack(a)])
        if cls is itertools.product and set(kwargs) <= {"repeat"}:
            from .lists import ListIteratorVariable, TupleVariable
            repeat = kwargs["repeat"].as_python_constant() if kwargs else 1
            return ListIteratorVariable([TupleVariable(list(t)) for t in itertools.product(
                *[tx.unpack(a) for a in args], repeat=repeat)])
        if issubclass(cls, autocast):
            vals = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            names = ["device_type", "dtype", "enabled", "cache_enabled"]
            full = dict(zip(names, vals))
            full.update(kw)
            if cls is not autocast:  # ember.cpu.amp.autocast / ember.cuda.amp.autocast
                full.setdefault("device_type", getattr(cls, "_device_type", None) or
                                ("cuda" if "cuda" in cls.__module__ else "cpu"))
            return AutocastVariable([full.get("device_type"), full.get("dtype"),
                                     full.get("enabled", True), full.get("cache_enabled")])
        if all(a.is_python_constant() for a in args) and \
                all(v.is_python_constant() for v in kwargs.values()) and \
                cls in (int, float, bool, str, tuple, list, slice, complex):
            from .builder import wrap_constant_like
            return wrap_constant_like(tx, cls(*[a.as_python_constant() for a in args]))
        from ... import finfo, iinfo, nn
        constant_args = all(a.is_python_constant() for a in args) and \
            all(v.is_python_constant() for v in kwargs.values())
        if cls in (finfo, iinfo) and constant_args:  # a dtype's constants
            from .builder import VariableBuilder
            return VariableBuilder(tx, None)(cls(*[a.as_python_constant() for a in args]))
        if issubclass(cls, nn.Module) and constant_args:
            return _stateless_module(tx, cls, args, kwargs)
        if issubclass(cls, BaseException) and ExceptionVariable.modelled(cls) and not kwargs:
            return ExceptionVariable(cls, args)
        if issubclass(cls, BaseException) and ExceptionVariable.python_init(cls):
            return ExceptionVariable.construct(tx, cls, args, kwargs)
        if cls is contextlib.nullcontext and len(args) + len(kwargs) <= 1:
            return NullContextVariable(args[0] if args else kwargs.get(
                "enter_result", ConstantVariable(None)))
        from ..._core.size import Size
        if cls is Size and len(args) <= 1 and not kwargs:
            from .lists import SizeVariable
            return SizeVariable(tx.unpack(args[0]) if args else [])
        if cls is collections.defaultdict and len(args) <= 1 and not kwargs:
            from .dicts import DefaultDictVariable
            return DefaultDictVariable({}, args[0] if args else ConstantVariable(None))
        from .lists import NamedTupleVariable, is_namedtuple_class
        if is_namedtuple_class(cls) and type(cls).__call__ is type.__call__:
            return NamedTupleVariable.construct(tx, cls, args, kwargs)
        why = _why_not_constructible(cls)
        if why is None:
            return NewObjectVariable.construct(tx, cls, args, kwargs)
        unimplemented(f"creating an instance of {cls.__qualname__} in captured code ({why})")

    def __repr__(self):
        return f"UserDefinedClassVariable({self.cls.__qualname__})"


_GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class ExceptionVariable(VariableTracker):
    """An exception made in captured code (PyTorch's ExceptionVariable), to be raised and caught
    there: its class, its ``args`` and the attributes ``raise`` sets (``__cause__``,
    ``__context__``, ``__suppress_context__``). A class whose construction is
    ``BaseException``'s own (no Python ``__new__``/``__init__``) is exactly ``cls(*args)``; one
    with a Python ``__init__`` over such a base (``python_init``) is made as CPython makes it:
    ``BaseException.__new__`` sets ``args``, then its ``__init__`` is inlined, and the
    attributes it sets are ``attrs`` too (rebuilt without running ``__init__`` again)."""

    def __init__(self, cls, args):
        super().__init__()
        self.cls = cls
        self.args = list(args)
        self.attrs = {"__cause__": ConstantVariable(None), "__context__": ConstantVariable(None),
                      "__suppress_context__": ConstantVariable(False),
                      "__traceback__": ConstantVariable(None)}
        self.init_in_python = False

    @staticmethod
    def modelled(cls):
        if type(cls).__call__ is not type.__call__:
            return False
        python = (types.FunctionType, staticmethod, classmethod)
        return not any(isinstance(k.__dict__.get(name), python) for k in cls.__mro__
                       for name in ("__new__", "__init__"))

    @staticmethod
    def python_init(cls):
        """Whether ``cls`` adds only a Python ``__init__`` (and methods) to a builtin exception
        whose ``__new__`` and ``__init__`` are ``BaseException``'s."""
        if type(cls).__call__ is not type.__call__:
            return False
        base = next(k for k in cls.__mro__ if k.__module__ == "builtins")
        if base not in _PLAIN_EXCEPTIONS or "__slots__" in vars(cls):
            return False
        python = (types.FunctionType, staticmethod, classmethod)
        return not any(isinstance(k.__dict__.get("__new__"), python) for k in cls.__mro__) \
            and isinstance(_mro_lookup(cls, "__init__")[0], types.FunctionType)

    @classmethod
    def construct(cls, tx, exc_cls, args, kwargs):
        from .functions import UserMethodVariable
        vt = cls(exc_cls, args)
        vt.init_in_python = True
        UserMethodVariable(_mro_lookup(exc_cls, "__init__")[0], vt).call_function(
            tx, list(args), dict(kwargs))
        return vt

    def python_type(self):
        return self.cls

    def as_python_constant(self):
        args = [a.as_python_constant() for a in self.args]
        exc = BaseException.__new__(self.cls, *args) if self.init_in_python else \
            self.cls(*args)
        for name, v in self.attrs.items():
            if name != "__traceback__":
                setattr(exc, name, v.as_python_constant())
        return exc

    def store_attr(self, tx, name, value):
        """``self.name = value`` in the exception's ``__init__`` (or on a caught one)."""
        if name == "args":
            self.args = tx.unpack(value)
        elif name == "__traceback__" or (name.startswith("__") and name not in self.attrs):
            unimplemented(f"setting {name} on an exception in captured code")
        else:
            self.attrs[name] = value

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        from .functions import UserFunctionVariable, UserMethodVariable
        from .lists import TupleVariable
        if name == "args":
            return TupleVariable(list(self.args))
        if name in self.attrs:
            return self.attrs[name]
        raw, owner = _mro_lookup(self.cls, name)
        if raw is None:
            raise_attribute_error(tx, None, name, f"'{self.cls.__name__}' object has no "
                                                  f"attribute '{name}'")
        if isinstance(raw, types.FunctionType):
            return UserMethodVariable(raw, self)
        if isinstance(raw, property) and isinstance(raw.fget, types.FunctionType):
            return UserFunctionVariable(raw.fget).call_function(tx, [self], {})
        if owner.__module__ != "builtins" and not hasattr(raw, "__get__"):
            return VariableBuilder(tx, None)(raw)  # a class attribute
        unimplemented(f"attribute {name!r} of a {self.cls.__name__} raised in captured code")

    def set_cause(self, cause):
        """``raise self from cause`` (``cause`` None: ``from None``)."""
        self.attrs["__cause__"] = cause
        self.attrs["__suppress_context__"] = ConstantVariable(True)

    def reconstruct(self, cg):
        hit = cg.cache.get(id(self))
        if hit is None:
            hit = cg.cache[id(self)] = cg.temp()
            args = "".join(f"{cg.reconstruct(a)}, " for a in self.args)
            if self.init_in_python:  # __init__ ran in the capture: its effects are attrs
                cg.lines.append(f"{hit} = {cg.const(BaseException)}.__new__("
                                f"{cg.const(self.cls)}, {args})")
            else:
                cg.lines.append(f"{hit} = {cg.const(self.cls)}({args})")
            for name, v in self.attrs.items():
                if name != "__traceback__":
                    cg.lines.append(f"{hit}.{name} = {cg.reconstruct(v)}")
        return hit

    def debug_repr(self):
        """``cls(args)`` as PyTorch's messages show the exception."""
        args = ", ".join(repr(a.value) if isinstance(a, ConstantVariable) else repr(a)
                         for a in self.args)
        return f"{self.cls.__name__}({args})"

    def __repr__(self):
        return f"ExceptionVariable({self.cls.__name__})"


# the builtin exceptions made by BaseException's own __new__ and __init__ (args = the
# positional arguments): a Python __init__ over them is inlined
_PLAIN_EXCEPTIONS = frozenset({
    BaseException, Exception, ValueError, TypeError, RuntimeError, KeyError, IndexError,
    LookupError, ArithmeticError, ZeroDivisionError, OverflowError, NotImplementedError,
    AssertionError, RecursionError, Warning, UserWarning, DeprecationWarning, FutureWarning,
    RuntimeWarning})


def raise_observed(exc):
    """Raise a real exception ``exc`` (a builtin's, run on constants at capture time) in the
    captured code, where its handlers can catch it."""
    from ..exc import ObservedException
    if not ExceptionVariable.modelled(type(exc)):
        unimplemented(f"{type(exc).__name__} raised in captured code: {exc}")
    raise ObservedException(ExceptionVariable(type(exc), [ConstantVariable(a)
                                                          for a in exc.args]))


def raise_attribute_error(tx, obj, name, msg):
    """CPython's AttributeError for reading ``name`` from ``obj``, raised in the captured code
    (``except AttributeError``, ``getattr``'s default and ``hasattr`` see it, as PyTorch
    traces them); an object read from the frame is guarded on the attribute's absence."""
    from ..source import HasAttrSource
    if obj is not None and obj.source is not None:
        tx.output.guards.constant_match(HasAttrSource(obj.source, name), False)
    raise_observed(AttributeError(msg))


class UserDefinedObjectVariable(VariableTracker):
    """An object of a user class, read from the frame (guarded by type, attributes by value)."""

    def __init__(self, obj, source=None):
        super().__init__(source)
        self.obj = obj

    def python_type(self):
        return type(self.obj)

    def as_python_constant(self):
        return self.obj

    def truth(self, tx):
        """``bool(obj)``: its Python ``__bool__``, else its Python ``__len__`` != 0, else True."""
        from .functions import UserMethodVariable
        t = type(self.obj)
        for name in ("__bool__", "__len__"):
            fn = _mro_lookup(t, name)[0]
            if fn is None:
                continue
            if not isinstance(fn, types.FunctionType):
                unimplemented(f"bool() of a {t.__name__} object")
            r = UserMethodVariable(fn, self).call_function(tx, [], {})
            return r.truth(tx)
        return True

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        from ..source import AttrSource
        from .functions import UserMethodVariable
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        d = getattr(self.obj, "__dict__", {})
        src = AttrSource(self.source, name) if self.source is not None else None
        t = type(self.obj)
        getattribute, owner = _mro_lookup(t, "__getattribute__")
        if owner is not object and isinstance(getattribute, types.FunctionType) and \
                src is not None:
            # a class that computes its attributes (transformers' configs map old names):
            # the value read through it now, guarded as read
            try:
                value = getattr(self.obj, name)
            except AttributeError as e:
                raise_attribute_error(tx, self, name, str(e))
            if isinstance(value, types.MethodType) and value.__self__ is self.obj and \
                    isinstance(value.__func__, types.FunctionType):
                return UserMethodVariable(value.__func__, self)
            return VariableBuilder(tx, src)(value)
        if name in d:
            return VariableBuilder(tx, src)(d[name])
        raw = None
        for k in t.__mro__:
            if name in k.__dict__:
                raw = k.__dict__[name]
                break
        else:
            fallback = _mro_lookup(t, "__getattr__")[0]
            if isinstance(fallback, types.FunctionType):
                return UserMethodVariable(fallback, self).call_function(
                    tx, [ConstantVariable(name)], {})
            raise_attribute_error(tx, self, name, f"'{t.__name__}' object has no attribute "
                                                  f"'{name}'")
        if isinstance(raw, property):
            from .functions import UserFunctionVariable
            return UserFunctionVariable(raw.fget).call_function(tx, [self], {})
        if isinstance(raw, staticmethod):
            return VariableBuilder(tx, None)(raw.__func__)
        if isinstance(raw, types.FunctionType):
            return UserMethodVariable(raw, self)
        if isinstance(raw, types.MemberDescriptorType):  # a __slots__ entry: its value
            try:
                value = raw.__get__(self.obj)
            except AttributeError as e:
                raise_attribute_error(tx, self, name, str(e))
            return VariableBuilder(tx, src)(value)
        if hasattr(raw, "__get__") and not isinstance(raw, (int, float, str, tuple)):
            unimplemented(f"descriptor {name} of {type(self.obj).__name__}")
        return VariableBuilder(tx, src)(raw)

    def has_unpack_var_sequence(self, tx):
        it = _mro_lookup(type(self.obj), "__iter__")[0]
        return it is collections.abc.Sequence.__iter__ or (
            isinstance(it, types.FunctionType) and not it.__code__.co_flags & _GENERATOR)

    def unpack_var_sequence(self, tx):
        from .functions import UserMethodVariable
        t = type(self.obj)
        it = _mro_lookup(t, "__iter__")[0]
        if it is collections.abc.Sequence.__iter__:
            # Sequence's generator reads self[0], self[1], ... until IndexError; the indices
            # below len(self) are those items for any sequence whose __len__ is truthful
            n = UserMethodVariable(_mro_lookup(t, "__len__")[0], self).call_function(tx, [], {})
            getitem = _mro_lookup(t, "__getitem__")[0]
            return [UserMethodVariable(getitem, self).call_function(tx, [ConstantVariable(i)], {})
                    for i in range(n.as_python_constant())]
        if isinstance(it, types.FunctionType) and not it.__code__.co_flags & _GENERATOR:
            return tx.unpack(UserMethodVariable(it, self).call_function(tx, [], {}))
        return super().unpack_var_sequence(tx)

    def call_function(self, tx, args, kwargs):
        call = getattr(type(self.obj), "__call__", None)
        if isinstance(call, types.FunctionType):
            from .functions import UserMethodVariable
            return UserMethodVariable(call, self).call_function(tx, args, kwargs)
        unimplemented(f"calling a {type(self.obj).__name__} object")

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.obj).__name__})"


def _stateless_module(tx, cls, args, kwargs):
    """A module built in captured code from constants (``CrossEntropyLoss()`` in a forward):
    built now, once, and used as a constant when it holds no parameters or buffers. One with
    state would be new (and freshly initialised) on every eager call, so it stays eager."""
    from ... import random
    from .nn_module import NNModuleVariable
    rng = random.get_rng_state()
    m = cls(*[a.as_python_constant() for a in args],
            **{k: v.as_python_constant() for k, v in kwargs.items()})
    if next(m.parameters(), None) is not None or next(m.buffers(), None) is not None:
        random.set_rng_state(rng)  # as if never built
        unimplemented(f"creating a {cls.__name__} with parameters or buffers in captured code")
    return NNModuleVariable(m)


def _mro_lookup(cls, name):
    """``name`` as the class (or a base) defines it, and the class that does."""
    for k in cls.__mro__:
        if name in k.__dict__:
            return k.__dict__[name], k
    return None, None


# the C bases a traced user class may have: the dict part of the object is a ConstDictVariable
_DICT_BASES = (collections.OrderedDict, dict)


def _dict_base(cls):
    return next((k for k in cls.__mro__ if k in _DICT_BASES), None)


def _why_not_constructible(cls):
    """Why ``cls(...)`` cannot be traced as a new object, or None when it can: the instance
    must come from ``object.__new__`` (or ``dict.__new__`` for a dict subclass) with no
    metaclass ``__call__``, and what runs at construction (``__init__``, ``__setattr__``) must
    be Python we can inline or the dict base's own."""
    from ... import nn
    from ..._tensor import Tensor
    if type(cls).__call__ is not type.__call__:
        return f"its metaclass {type(cls).__name__} defines __call__"
    if issubclass(cls, (nn.Module, Tensor, BaseException)):
        return "modules, tensors and exceptions are not modelled"
    base = _dict_base(cls) or object
    if cls.__new__ is not base.__new__:
        return "it defines __new__ or derives from a C type"
    for name in ("__init__", "__setattr__"):
        fn, owner = _mro_lookup(cls, name)
        if owner not in (base, object) and not isinstance(fn, types.FunctionType):
            return f"its {name} is not a Python function"
    return None


class NewObjectVariable(UserDefinedObjectVariable):
    """An object of a user class created in captured code (as PyTorch's
    UserDefinedObjectVariable with a new-object mutation type). ``obj`` is an empty instance
    made with ``object.__new__`` at capture time, so type checks and method lookups see the
    real class; the attributes are variables in ``attrs``, and a dict subclass's items are a
    ConstDictVariable in ``dict_vt`` that ``dict``'s own methods act on. Residual code builds
    the object only where it leaves the graph (returned, stored elsewhere, live at a break)."""

    def __init__(self, obj):
        super().__init__(obj)
        self.attrs = {}
        self.dict_base = _dict_base(type(obj))
        self.dict_vt = None if self.dict_base is None else \
            ConstDictVariable({}, user_cls=type(obj))

    @classmethod
    def construct(cls, tx, user_cls, args, kwargs):
        base = _dict_base(user_cls) or object
        try:
            obj = base.__new__(user_cls)
        except TypeError as e:  # an abstract class: eager raises the same at this call
            unimplemented(f"creating an instance of {user_cls.__qualname__}: {e}")
        if not hasattr(obj, "__dict__"):
            unimplemented(f"creating an instance of {user_cls.__qualname__} in captured code "
                          f"(its instances use __slots__)")
        vt = cls(obj)
        vt.call_method(tx, "__init__", args, kwargs)
        return vt

    def _base_method(self, name):
        """The dict base's or ``object``'s own ``name``, when the class does not define it in
        Python above them; else None."""
        fn, owner = _mro_lookup(type(self.obj), name)
        if owner is object:
            return _ObjectMethod(self, name)
        if owner is not None and owner in _DICT_BASES and self.dict_vt is not None:
            return _DictMethod(self.dict_vt, name)
        return None

    def store_attr(self, tx, name, value):
        """``self.name = value``: the class's Python ``__setattr__`` inlined if it has one."""
        self.call_method(tx, "__setattr__", [ConstantVariable(name), value], {})

    def delete_attr(self, tx, name):
        """``del self.name``: the class's Python ``__delattr__`` inlined if it has one."""
        self.call_method(tx, "__delattr__", [ConstantVariable(name)], {})

    def var_getattr(self, tx, name):
        getattribute, owner = _mro_lookup(type(self.obj), "__getattribute__")
        if owner is not object and isinstance(getattribute, types.FunctionType):
            from .functions import UserMethodVariable
            return UserMethodVariable(getattribute, self).call_function(
                tx, [ConstantVariable(name)], {})
        return self.generic_getattr(tx, name)

    def generic_getattr(self, tx, name):
        """``object.__getattribute__(self, name)``: the attributes, then the class."""
        if name in self.attrs:
            return self.attrs[name]
        if name == "__dict__":
            return ObjectDictVariable(self)
        return self._base_method(name) or super().var_getattr(tx, name)

    def truth(self, tx):
        if self._base_method("__len__") is not None and self._base_method("__bool__") is None:
            return self.dict_vt.truth(tx)
        return super().truth(tx)

    def has_unpack_var_sequence(self, tx):
        return isinstance(self._base_method("__iter__"), _DictMethod) or \
            super().has_unpack_var_sequence(tx)

    def unpack_var_sequence(self, tx):
        if isinstance(self._base_method("__iter__"), _DictMethod):
            return self.dict_vt.unpack_var_sequence(tx)
        return super().unpack_var_sequence(tx)

    def reconstruct(self, cg):
        hit = cg.cache.get(id(self))
        if hit is not None:
            return hit
        t = cg.cache[id(self)] = cg.temp()  # first, so that cycles refer to it
        base = self.dict_base or object
        cg.lines.append(f"{t} = {cg.const(base)}.__new__({cg.const(type(self.obj))})")
        if self.dict_vt is not None:
            for k, v in self.dict_vt.items.items():
                cg.lines.append(f"{cg.const(base)}.__setitem__({t}, "
                                f"{cg.reconstruct(ConstantVariable(k))}, {cg.reconstruct(v)})")
        state = ", ".join(f"{k!r}: {cg.reconstruct(v)}" for k, v in self.attrs.items())
        if state:
            cg.lines.append(f"{t}.__dict__.update({{{state}}})")
        return t

    def as_python_constant(self):
        unimplemented(f"a {type(self.obj).__name__} object created in captured code is not a "
                      f"constant")

    def __repr__(self):
        return f"NewObjectVariable({type(self.obj).__name__})"


class _ObjectMethod(VariableTracker):
    """``object``'s ``__init__``/``__setattr__`` on a new object (directly or as
    ``super().<name>``)."""

    def __init__(self, obj, name):
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx, args, kwargs):
        if self.name == "__setattr__":
            name, value = args
            self.obj.attrs[name.as_python_constant()] = value
            return ConstantVariable(None)
        if self.name == "__init__":
            if args or kwargs:
                unimplemented(f"{type(self.obj.obj).__name__}() takes no arguments")
            return ConstantVariable(None)
        if self.name == "__getattribute__":
            return self.obj.generic_getattr(tx, args[0].as_python_constant())
        if self.name == "__delattr__":
            name = args[0].as_python_constant()
            if name not in self.obj.attrs:
                unimplemented(f"AttributeError: del of {name!r}, which the object does not have")
            del self.obj.attrs[name]
            return ConstantVariable(None)
        unimplemented(f"object.{self.name} of an object created in captured code")


def _plain_data(v):
    """Values ``copy.deepcopy`` copies without running user code, that compare by value."""
    if v is None or type(v) in (bool, int, float, complex, str, bytes):
        return True
    if type(v) in (list, tuple):
        return all(_plain_data(x) for x in v)
    if type(v) is dict:
        return all(type(k) in (str, int) and _plain_data(x) for k, x in v.items())
    return False


def _copied_by_state(cls):
    """Whether ``copy.deepcopy`` of a ``cls`` instance is ``cls.__new__(cls)`` with a deep copy
    of ``__dict__``: no copy hooks of its own, plain ``object`` construction."""
    import copyreg
    return cls.__new__ is object.__new__ and cls not in copyreg.dispatch_table and all(
        _mro_lookup(cls, name)[1] in (object, None)
        for name in ("__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__",
                     "__setstate__", "__slots__"))


class DeepCopyVariable(VariableTracker):
    """``copy.deepcopy(x)`` of plain data, or of an object read from the frame whose state is
    plain data (transformers copies its configs in the forward): the copy is a new object of
    the capture, holding a deep copy of the state read now; a guard on the original's whole
    ``__dict__`` (by value) keeps the capture valid."""

    def call_function(self, tx, args, kwargs):
        from ..source import AttrSource
        from .builder import VariableBuilder, wrap_constant_like
        x = args[0] if len(args) == 1 and not kwargs else None
        if x is not None and x.is_python_constant() and _plain_data(x.as_python_constant()):
            return wrap_constant_like(tx, copy.deepcopy(x.as_python_constant()))
        if isinstance(x, NewObjectVariable) and x.dict_vt is None and \
                _copied_by_state(type(x.obj)):
            state = {k: v.as_python_constant() if v.is_python_constant() else None
                     for k, v in x.attrs.items()}
            if all(v.is_python_constant() for v in x.attrs.values()) and _plain_data(state):
                new = NewObjectVariable(object.__new__(type(x.obj)))
                new.attrs = {k: VariableBuilder(tx, None)(v)
                             for k, v in copy.deepcopy(state).items()}
                return new
        if type(x) is not UserDefinedObjectVariable or x.source is None or \
                not _copied_by_state(type(x.obj)) or not _plain_data(vars(x.obj)):
            unimplemented(f"copy.deepcopy of {x} (only plain data, or an object whose state "
                          f"is plain data, is copied in captured code)")
        state = copy.deepcopy(vars(x.obj))
        tx.output.guards.constant_match(AttrSource(x.source, "__dict__"), state)
        new = NewObjectVariable(object.__new__(type(x.obj)))
        new.attrs = {k: VariableBuilder(tx, None)(v) for k, v in copy.deepcopy(state).items()}
        return new


class ObjectDictVariable(VariableTracker):
    """``obj.__dict__`` of a new object, for reading (``get``, ``in``, items)."""

    def __init__(self, owner):
        super().__init__()
        self.owner = owner

    def as_python_constant(self):
        return {k: v.as_python_constant() for k, v in self.owner.attrs.items()}

    def call_method(self, tx, name, args, kwargs):
        if name in ("get", "__getitem__", "__contains__", "keys", "values", "items",
                    "__len__"):
            return ConstDictVariable(self.owner.attrs).call_dict_method(tx, name, args, kwargs)
        unimplemented(f"obj.__dict__.{name} of an object created in captured code")


class EnvironVariable(VariableTracker):
    """``os.environ``: reads of a variable are constants of the capture, each guarded on its
    value (a changed or new setting recompiles); writes are not modelled."""

    def python_type(self):
        return type(os.environ)

    def call_method(self, tx, name, args, kwargs):
        from ..source import EnvironSource
        if name not in ("get", "__getitem__", "__contains__") or kwargs or \
                not args[0].is_python_constant():
            unimplemented(f"os.environ.{name} in captured code")
        key = args[0].as_python_constant()
        value = os.environ.get(key)
        tx.output.guards.constant_match(EnvironSource(key), value)
        if name == "__contains__":
            return ConstantVariable(value is not None)
        if value is None:
            if name == "get":
                return args[1] if len(args) > 1 else ConstantVariable(None)
            unimplemented(f"KeyError {key!r} from os.environ in captured code")
        return ConstantVariable(value)

    def reconstruct(self, cg):
        return "___sys_modules['os'].environ"


# what emits a record (transformers adds the *_once and advice variants to Logger)
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                          "log", "warning_once", "info_once", "warning_advice"})


class LoggerVariable(VariableTracker):
    """A ``logging.Logger``: calls that emit a record are replayed by residual code after the
    graph (as PyTorch's reorderable logging functions), so a compiled call logs what an eager
    call logs, once per call (``warning_once`` and other caching wrappers stay once); the
    level queries are answered at capture time."""

    def __init__(self, logger, source=None):
        super().__init__(source)
        self.logger = logger

    def python_type(self):
        return type(self.logger)

    def as_python_constant(self):
        return self.logger

    def var_getattr(self, tx, name):
        fn = getattr(self.logger, name, None)
        if name in _LOG_METHODS and callable(fn):
            return _DeferredCall(fn)
        if name in ("name", "level", "disabled"):
            return ConstantVariable(fn)
        if name in ("isEnabledFor", "getEffectiveLevel"):
            return _ReadNow(fn)
        unimplemented(f"Logger.{name} in captured code")


class _ReadNow(VariableTracker):
    """A query of constant arguments answered at capture time."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def call_function(self, tx, args, kwargs):
        return ConstantVariable(self.fn(*[a.as_python_constant() for a in args],
                                        **{k: v.as_python_constant() for k, v in kwargs.items()}))


class _DeferredCall(VariableTracker):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def call_function(self, tx, args, kwargs):
        tx.output.side_effects.calls.append((self.fn, list(args), dict(kwargs)))
        return ConstantVariable(None)


class InspectSignatureVariable(VariableTracker):
    """``inspect.signature(f)`` of a function known at capture time: a constant (CPython's
    implementation builds it through C objects the interpreter does not model)."""

    def call_function(self, tx, args, kwargs):
        from .builder import VariableBuilder
        from .functions import UserFunctionVariable, UserMethodVariable
        f = args[0] if len(args) == 1 and not kwargs else None
        if isinstance(f, UserFunctionVariable):
            fn = f.fn
        elif isinstance(f, UserMethodVariable):
            fn = types.MethodType(f.fn, object())  # only the binding of self matters here
        elif f is not None and f.is_python_constant() and callable(f.as_python_constant()):
            fn = f.as_python_constant()
        else:
            unimplemented(f"inspect.signature of {f}")
        return VariableBuilder(tx, None)(inspect.signature(fn))


class PythonModuleVariable(VariableTracker):
    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def as_python_constant(self):
        return self.module

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        try:
            v = getattr(self.module, name)
        except AttributeError as e:
            raise_observed(AttributeError(str(e)))
        # a module's attributes are taken as fixed (as PyTorch does): no guard
        return VariableBuilder(tx, None)(v)

    def __repr__(self):
        return f"PythonModuleVariable({self.module.__name__})"


class SuperVariable(VariableTracker):
    def __init__(self, cls, obj):
        super().__init__()
        self.cls, self.obj = cls, obj

    def python_type(self):
        return super

    def var_getattr(self, tx, name):
        from .functions import UserMethodVariable
        from .builder import VariableBuilder
        objcls = self.obj.python_type()
        mro = objcls.__mro__
        for k in mro[mro.index(self.cls) + 1:]:
            if name in k.__dict__:
                raw = k.__dict__[name]
                if isinstance(raw, types.FunctionType):
                    return UserMethodVariable(raw, self.obj)
                if k in _DICT_BASES and isinstance(self.obj, ConstDictVariable):
                    return _DictMethod(self.obj, name)
                if isinstance(self.obj, ExceptionVariable) and k in _PLAIN_EXCEPTIONS and \
                        name == "__init__":
                    return _ExceptionInit(self.obj)
                if isinstance(self.obj, NewObjectVariable):
                    if k is object:
                        return _ObjectMethod(self.obj, name)
                    if k in _DICT_BASES and self.obj.dict_vt is not None:
                        return _DictMethod(self.obj.dict_vt, name)
                return VariableBuilder(tx, None)(raw)
        unimplemented(f"super().{name}")


class _ExceptionInit(VariableTracker):
    """``BaseException.__init__`` (``super().__init__(...)`` in an exception's ``__init__``):
    ``args`` becomes the positional arguments."""

    def __init__(self, exc):
        super().__init__()
        self.exc = exc

    def call_function(self, tx, args, kwargs):
        if kwargs:
            raise_observed(TypeError(f"{self.exc.cls.__name__}() takes no keyword arguments"))
        self.exc.args = list(args)
        return ConstantVariable(None)


class _DictMethod(VariableTracker):
    """``super().<name>`` in a dict subclass: ``dict``'s own method on the traced dict."""

    def __init__(self, obj, name):
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx, args, kwargs):
        return self.obj.call_dict_method(tx, self.name, args, kwargs)


class TracedObjectVariable(UserDefinedObjectVariable):
    """A user object that is a graph value: ``node`` computes it (an op returned it, or it was
    rebuilt from its attributes to be passed to an op), ``attrs`` are its attributes as
    variables (its tensors are graph values) and ``example`` is the object over fake tensors
    that ops run on during capture. Residual code rebuilds it from ``attrs``."""

    def __init__(self, cls, attrs, node, example):
        super().__init__(example)
        self.cls, self.attrs, self.node = cls, attrs, node

    @property
    def example(self):
        return self.obj

    def python_type(self):
        return self.cls

    def as_python_constant(self):
        unimplemented(f"a {self.cls.__name__} object holding graph values is not a constant")

    def var_getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        return super().var_getattr(tx, name)

    def reconstruct(self, cg):
        state = ", ".join(f"{k!r}: {cg.reconstruct(v)}" for k, v in self.attrs.items())
        return f"{cg.const(rebuild_object)}({cg.const(self.cls)}, {{{state}}})"

    def __repr__(self):
        return f"TracedObjectVariable({self.cls.__name__})"


class TracedFunctionVariable(VariableTracker):
    """A function passed to an op whose captured tensors are graph values: ``node`` rebuilds
    it in the graph (``rebuild_function``) and ``example`` is it over fake tensors."""

    def __init__(self, node, example):
        super().__init__()
        self.node, self.example = node, example

    def python_type(self):
        return types.FunctionType

    def __repr__(self):
        return f"TracedFunctionVariable({self.example.__qualname__})"

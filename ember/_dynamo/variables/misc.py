"""Everything else the interpreter meets: ember functions captured as graph calls, the grad-mode
and autocast context managers (their state is set during the trace and recorded in the graph),
user classes and objects (and those that are graph values: an op's result holding tensors, or
an argument rebuilt in the graph from lifted inputs), Python modules, ``super()``."""
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["TorchInGraphFunctionVariable", "GradModeVariable", "AutocastVariable",
           "WithExitVariable", "UserDefinedClassVariable", "UserDefinedObjectVariable",
           "PythonModuleVariable", "SuperVariable", "SkippedFunctionVariable",
           "TracedObjectVariable", "TracedFunctionVariable", "rebuild_object",
           "rebuild_function"]


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

    def enter(self, tx):
        from ..._dispatch import tls
        self.initial = tls.state.grad_enabled
        tx.output.set_grad_mode(tx, self.target)
        return ConstantVariable(None)

    def exit(self, tx):
        tx.output.set_grad_mode(tx, self.initial)

    def call_function(self, tx, args, kwargs):
        # no_grad used as a decorator inside captured code
        unimplemented("grad-mode object used as a decorator inside captured code")

    def reconstruct_entered(self, cg):
        """Residual code that enters the real context manager (a break inside the block)."""
        t = cg.temp()
        ctor = cg.const(self.cls)
        arg = repr(self.target) if self.cls.__name__ == "set_grad_enabled" else ""
        cg.lines.append(f"{t} = {ctor}({arg})")
        cg.lines.append(f"{t}.__enter__()")
        cg.lines.append(f"{t}.prev = {self.initial!r}")  # the mode before the block
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

    def enter(self, tx):
        from ...autograd.grad_mode import _enter_inference_mode, inference_mode
        self.node, self.real = tx.output.enter_autocast(tx, _enter_inference_mode, [self.mode],
                                                        real=inference_mode(self.mode))
        return ConstantVariable(None)

    def exit(self, tx):
        from ...autograd.grad_mode import _exit_inference_mode
        tx.output.exit_autocast(tx, _exit_inference_mode, self.node, self.real)


class WithExitVariable(VariableTracker):
    """The ``__exit__`` that BEFORE_WITH leaves on the stack."""

    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx

    def call_function(self, tx, args, kwargs):
        self.ctx.exit(tx)
        return ConstantVariable(None)

    def reconstruct(self, cg):
        if isinstance(self.ctx, GradModeVariable):
            return self.ctx.reconstruct_entered(cg)
        unimplemented("graph break inside an autocast block")


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
        except AttributeError:
            unimplemented(f"type object '{self.cls.__name__}' has no attribute '{name}'")
        raw = None
        for k in self.cls.__mro__:
            if name in k.__dict__:
                raw = k.__dict__[name]
                break
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
        unimplemented(f"creating an instance of {cls.__qualname__} in captured code")

    def __repr__(self):
        return f"UserDefinedClassVariable({self.cls.__qualname__})"


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
        t = type(self.obj)
        if hasattr(t, "__bool__") or hasattr(t, "__len__"):
            unimplemented(f"bool() of a {t.__name__} object")
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
        if name in d:
            return VariableBuilder(tx, src)(d[name])
        raw = None
        for k in type(self.obj).__mro__:
            if name in k.__dict__:
                raw = k.__dict__[name]
                break
        else:
            unimplemented(f"'{type(self.obj).__name__}' object has no attribute '{name}'")
        if isinstance(raw, property):
            from .functions import UserFunctionVariable
            return UserFunctionVariable(raw.fget).call_function(tx, [self], {})
        if isinstance(raw, staticmethod):
            return VariableBuilder(tx, None)(raw.__func__)
        if isinstance(raw, types.FunctionType):
            return UserMethodVariable(raw, self)
        if hasattr(raw, "__get__") and not isinstance(raw, (int, float, str, tuple)):
            unimplemented(f"descriptor {name} of {type(self.obj).__name__}")
        return VariableBuilder(tx, src)(raw)

    def call_function(self, tx, args, kwargs):
        call = getattr(type(self.obj), "__call__", None)
        if isinstance(call, types.FunctionType):
            from .functions import UserMethodVariable
            return UserMethodVariable(call, self).call_function(tx, args, kwargs)
        unimplemented(f"calling a {type(self.obj).__name__} object")

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.obj).__name__})"


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
        except AttributeError:
            unimplemented(f"module '{self.module.__name__}' has no attribute '{name}'")
        # a module's attributes are taken as fixed (as PyTorch does): no guard
        return VariableBuilder(tx, None)(v)

    def __repr__(self):
        return f"PythonModuleVariable({self.module.__name__})"


class SuperVariable(VariableTracker):
    def __init__(self, cls, obj):
        super().__init__()
        self.cls, self.obj = cls, obj

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
                return VariableBuilder(tx, None)(raw)
        unimplemented(f"super().{name}")


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

"""VariableBuilder: a real Python value read from the frame (with its Source) becomes a
VariableTracker, and the guard that makes the trace valid for it is installed here: tensors
become graph inputs with a tensor guard, constants get a value guard, modules, functions and
classes an identity guard, containers a length or keys guard."""
import collections
import copy
import enum
import functools
import inspect
import logging
import os
import types

from ..._core.api_name import as_ember
from .base import VariableTracker, unimplemented
from .builtin import BuiltinVariable
from .constant import ConstantVariable
from .decorators import decorator_variable
from .dicts import ConstDictVariable
from .functions import (FunctoolsPartialVariable, FunctoolsWrapsVariable,
                        LruCacheWrapperVariable, UserFunctionVariable, UserMethodVariable)
from .lists import (ListVariable, NamedTupleVariable, SizeVariable, TupleVariable,
                    is_namedtuple_class)
from .misc import (AutocastVariable, DeepCopyVariable, EnvironVariable, GradModeVariable,
                   InferenceModeVariable, InspectSignatureVariable,
                   LoggerVariable, PythonModuleVariable, SkippedFunctionVariable,
                   TorchInGraphFunctionVariable, UserDefinedClassVariable,
                   UserDefinedObjectVariable)
from .nn_module import NNModuleVariable

__all__ = ["VariableBuilder", "wrap_constant_like", "is_constant_value"]


def is_constant_value(v):
    from ..._core.dtype import dtype
    from ..._core.device import device
    from ..._core.size import Size
    if v is None or v is Ellipsis or v is NotImplemented:
        return True
    if isinstance(v, (bool, int, float, complex, str, bytes, range, dtype, device,
                      enum.Enum)) and not isinstance(v, Size):
        return True
    if isinstance(v, slice):
        return all(is_constant_value(x) for x in (v.start, v.stop, v.step))
    t = type(v)
    mod = as_ember(t.__module__)
    return (mod == "ember" or mod.startswith("ember._core")) and t.__name__ in (
        "memory_format", "layout", "finfo", "iinfo", "qscheme")


def wrap_constant_like(tx, v):
    """A value computed at capture time (no source, no guard)."""
    from ..._core.size import Size
    from ..._core.symint import SymInt
    if is_constant_value(v):
        return ConstantVariable(v)
    if isinstance(v, SymInt):  # a symbolic size: a graph value, never a constant
        return tx.output.wrap_int(tx, v)
    if isinstance(v, Size):
        return SizeVariable([tx.output.wrap_int(tx, i) for i in v])
    if type(v) is tuple:
        return TupleVariable([wrap_constant_like(tx, i) for i in v])
    if type(v) is list:
        return ListVariable([wrap_constant_like(tx, i) for i in v])
    if type(v) is dict:
        return ConstDictVariable({k: wrap_constant_like(tx, i) for k, i in v.items()})
    return VariableBuilder(tx, None)(v)


# ember's Python code that Dynamo traces into as it does user code (Dynamo's own, and what
# PyTorch's Dynamo inlines too, trace_rules' MOD_INLINELIST): called as one graph op, an
# optimizer's step would run on a copy of the optimizer that the graph rebuilds, and its state
# would be lost
_INLINED = ("ember._dynamo", "ember.optim")


def _is_ember_callable(v):
    mod = as_ember(getattr(v, "__module__", None)) or ""
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
        return (mod == "ember" or mod.startswith("ember.")) and not any(
            mod == p or mod.startswith(p + ".") for p in _INLINED)
    return as_ember(type(v).__module__).startswith("ember._ops") and callable(v)


# Builtin types the interpreter models as functions (BuiltinVariable), not as classes.
_BUILTIN_TYPES = {range, zip, enumerate, reversed, super, list, tuple, dict, int, float, bool,
                  str, map, filter, slice, type, set, frozenset, complex, object}


def _grad_mode_exit(tx, value, src):
    """The ``__exit__`` of an entered grad-mode block, passed to a resume function by a graph
    break inside ``with no_grad():``: the block's exit restores the mode it saved."""
    from ...autograd import grad_mode as gm
    from .misc import WithExitVariable
    from ..source import AttrSource
    obj = value.__self__
    if value.__func__.__name__ != "__exit__" or not isinstance(
            obj, (gm._GradModeSetter, gm.set_grad_enabled)) or not hasattr(obj, "prev"):
        return None
    if src is not None:
        self_src = AttrSource(src, "__self__")
        tx.output.guards.type_match(self_src, obj)
        tx.output.guards.constant_match(AttrSource(self_src, "prev"), obj.prev)
    from ..._dispatch import tls
    ctx = GradModeVariable(tls.state.grad_enabled, type(obj), initial=obj.prev)
    return WithExitVariable(ctx)


def _hashable(v):
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _traceable_dict(value):
    """A dict (or a subclass without instance attributes) with constant keys."""
    if not isinstance(value, dict) or getattr(value, "__dict__", None):
        return False
    t = type(value)
    # a C subclass (defaultdict, Counter's C parts) changes item semantics we do not model
    if t not in (dict, collections.OrderedDict) and any(
            k.__dict__.get("__missing__") is not None and
            not isinstance(k.__dict__["__missing__"], types.FunctionType)
            for k in t.__mro__ if k is not dict):
        return False
    # classes and typing's special forms as keys too (a table of validators by type): fixed
    # objects, compared by identity
    return all(is_constant_value(k) or isinstance(k, type) or
               type(k).__module__ == "typing" for k in value)


class VariableBuilder:
    def __init__(self, tx, source):
        self.tx, self.source = tx, source

    def __call__(self, value):
        from ... import nn
        from ..._tensor import Tensor
        from .. import eval_frame
        tx, src = self.tx, self.source
        guards = tx.output.guards
        if isinstance(value, VariableTracker):
            return value
        if isinstance(value, Tensor):
            # no fake (meta) sparse or nested tensors: the frame runs eagerly
            if value._storage_ is None or value.is_nested:
                unimplemented(f"a {value.layout} tensor (ember.compile captures strided tensors)")
            return tx.output.wrap_tensor(tx, value, src)
        if is_constant_value(value):
            if src is not None:
                guards.constant_match(src, value)
            return ConstantVariable(value, src)
        if isinstance(value, nn.Module):
            if src is not None:
                guards.id_match(src, value)
            return NNModuleVariable(value, src)
        if value is os.environ:
            return EnvironVariable()
        if value is inspect.signature:
            return InspectSignatureVariable()
        if value is copy.deepcopy:
            return DeepCopyVariable()
        if value is functools.wraps:
            return FunctoolsWrapsVariable()
        if type(value) is types.MappingProxyType and all(is_constant_value(k) for k in value):
            # read-only: no guard on later changes is needed beyond its owner's
            return ConstDictVariable({k: VariableBuilder(tx, None)(v) for k, v in value.items()},
                                     user_cls=types.MappingProxyType)
        if type(value) is functools.partial:
            from ..source import AttrSource
            if src is not None:
                guards.type_match(src, value)
            part = [VariableBuilder(tx, AttrSource(src, a) if src is not None else None)(
                getattr(value, a)) for a in ("func", "args", "keywords")]
            return FunctoolsPartialVariable(part[0], part[1].items, part[2].items, src)
        from ...amp.autocast_mode import autocast
        if isinstance(value, autocast):
            # an autocast object made outside (``@autocast(...)`` decorating a method, whose
            # wrapper enters it): its settings, guarded as read
            from ..source import AttrSource
            names = ("device", "fast_dtype", "_enabled", "_cache_enabled")
            if src is not None:
                guards.type_match(src, value)
                for n in names:
                    guards.constant_match(AttrSource(src, n), getattr(value, n))
            return AutocastVariable([getattr(value, n) for n in names])
        from ...autograd import grad_mode as gm
        if isinstance(value, (gm._GradModeSetter, gm.inference_mode)):
            # a grad-mode object made outside the trace, or by a call folded in it (the
            # ``clone()`` that a ``@no_grad()`` function's wrapper enters at each call)
            from ..source import AttrSource
            if src is not None:
                guards.type_match(src, value)
            if isinstance(value, gm.inference_mode):
                if src is not None:
                    guards.constant_match(AttrSource(src, "mode"), value.mode)
                return InferenceModeVariable(value.mode)
            return GradModeVariable(type(value)._mode, type(value))
        if isinstance(value, logging.Logger):
            return LoggerVariable(value, src)
        from ..._core.size import Size
        if isinstance(value, Size):
            if src is not None:
                guards.constant_match(src, value)
            return SizeVariable([ConstantVariable(i) for i in value], src)
        if type(value) in (list, tuple):
            if src is not None:
                guards.length_match(src, value)
            from ..source import GetItemSource
            items = [VariableBuilder(tx, GetItemSource(src, i) if src else None)(v)
                     for i, v in enumerate(value)]
            if type(value) is list:
                return tx.output.side_effects.track_list(ListVariable(items, src), value)
            return TupleVariable(items, src)
        if isinstance(value, tuple) and is_namedtuple_class(type(value)):
            if src is not None:  # (the type fixes the length)
                guards.type_match(src, value)
            from ..source import GetItemSource
            return NamedTupleVariable([VariableBuilder(tx, GetItemSource(src, i) if src else
                                                       None)(v) for i, v in enumerate(value)],
                                      type(value), src)
        if _traceable_dict(value):
            if src is not None:
                guards.dict_keys(src, value)
            from ..source import GetItemSource
            # a key without a literal spelling (a class) cannot name its value in a guard: such a
            # value is read now, as a constant of the capture (these are fixed tables)
            items = {k: VariableBuilder(tx, GetItemSource(src, k) if src and
                                        is_constant_value(k) else None)(v)
                     for k, v in value.items()}
            return tx.output.side_effects.track_list(
                ConstDictVariable(items, src, user_cls=type(value)), value)
        if type(value).__name__ in ("tuple_iterator", "list_iterator", "range_iterator"):
            from ..source import IterItemSource, iter_rest
            from .lists import ListIteratorVariable
            rest = iter_rest(value)
            if src is not None:
                guards.iter_length(src, len(rest), value)
            return ListIteratorVariable([VariableBuilder(
                tx, IterItemSource(src, i) if src else None)(v) for i, v in enumerate(rest)])
        # callables
        orig = getattr(value, "_torchdynamo_orig_callable", None)
        if orig is not None:  # a compiled function called from compiled code: inlined whole
            from ..source import AttrSource
            value = orig
            # the identity guard is on the wrapped function, so it is read through the wrapper
            src = AttrSource(src, "_torchdynamo_orig_callable") if src is not None else None
        if isinstance(value, functools._lru_cache_wrapper) and \
                isinstance(getattr(value, "__wrapped__", None), types.FunctionType):
            if src is not None:
                guards.id_match(src, value)
            return LruCacheWrapperVariable(value, src)
        if not _hashable(value):
            if src is not None:
                guards.type_match(src, value)
            return UserDefinedObjectVariable(value, src)
        special = decorator_variable(tx, value, src)
        if special is not None:
            return special
        if value in eval_frame._disabled_fns:
            if src is not None:
                guards.id_match(src, value)
            return SkippedFunctionVariable(
                value, f"call to a function marked ember.compiler.disable: "
                       f"{getattr(value, '__qualname__', value)}", src)
        if value in eval_frame._allowed_fns:
            return TorchInGraphFunctionVariable(value, src)
        if isinstance(value, types.FunctionType):
            if _is_ember_callable(value):
                if src is not None:
                    guards.id_match(src, value)
                return TorchInGraphFunctionVariable(value, src)
            if src is not None:
                if value.__closure__:
                    guards.closure_match(src, value)
                else:
                    guards.id_match(src, value)
            return UserFunctionVariable(value, src)
        if isinstance(value, types.BuiltinFunctionType):
            if _is_ember_callable(value):
                return TorchInGraphFunctionVariable(value, src)
            self_ = getattr(value, "__self__", None)
            if self_ is None or isinstance(self_, types.ModuleType):
                return BuiltinVariable(value, src)
            return SkippedFunctionVariable(
                value, f"call to C method {value.__qualname__} Dynamo does not model", src)
        if isinstance(value, types.MethodType):
            exit_ctx = _grad_mode_exit(tx, value, src)
            if exit_ctx is not None:
                return exit_ctx
            if isinstance(value.__self__, Tensor):  # tensor.method passed around
                from ..source import AttrSource
                from .tensor import GetAttrMethod
                if src is not None:
                    tx.output.guards.constant_match(AttrSource(src, "__name__"),
                                                    value.__name__)
                owner = VariableBuilder(tx, AttrSource(src, "__self__") if src else None)(
                    value.__self__)
                return GetAttrMethod(owner, value.__name__)
            obj = VariableBuilder(tx, None)(value.__self__)
            if isinstance(value.__func__, types.FunctionType):
                from .. import output_graph  # imports this module: a true cycle
                # (an object holding tensors would reach a graph op as a copy the graph
                # rebuilds, which the method might change: its code is traced instead)
                if _is_ember_callable(value.__func__) and not isinstance(
                        value.__self__, (nn.Module, type)) and \
                        not output_graph._holds_tensor(value.__self__):
                    return TorchInGraphFunctionVariable(value, src)
                return UserMethodVariable(value.__func__, obj, src)
            unimplemented(f"bound method {value}")
        if isinstance(value, types.ModuleType):
            if src is not None:
                guards.id_match(src, value)
            return PythonModuleVariable(value, src)
        if isinstance(value, type) and value in _BUILTIN_TYPES:
            return BuiltinVariable(value, src)
        if isinstance(value, type):
            if src is not None:
                guards.id_match(src, value)
            return UserDefinedClassVariable(value, src)
        if _is_ember_callable(value):
            return TorchInGraphFunctionVariable(value, src)
        if as_ember(type(value).__module__).startswith("ember._ops"):
            return PythonModuleVariable(value, src)  # ember.ops / ember.ops.aten namespaces
        if isinstance(value, (types.GeneratorType, types.CoroutineType, set, frozenset)):
            unimplemented(f"{type(value).__name__} value in captured code")
        if src is not None:
            guards.type_match(src, value)
        return UserDefinedObjectVariable(value, src)

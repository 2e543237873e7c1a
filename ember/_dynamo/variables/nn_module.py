"""``nn.Module`` objects during capture: guarded by identity, their attributes read through
their parameter, buffer, submodule and ``__dict__`` tables (each read guarded: parameters and
buffers become graph inputs with tensor guards, constants like ``training`` are guarded by
value), their ``forward`` inlined when called (hooks present: a graph break). Attribute writes
are side effects replayed after the graph."""
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["NNModuleVariable"]

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


class NNModuleVariable(VariableTracker):
    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def python_type(self):
        return type(self.module)

    def as_python_constant(self):
        return self.module

    def truth(self, tx):
        return True

    def var_getattr(self, tx, name):
        from .builder import VariableBuilder
        from ..source import AttrSource
        from .functions import UserMethodVariable
        from ..source import GetItemSource
        m = self.module
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        src = AttrSource(self.source, name) if self.source is not None else None
        if name == "__dict__":  # (PyTorch's get_dict_vt) read key by key, not copied whole
            return ModuleDictVariable(self)
        d = m.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            t = d.get(table)
            if t is not None and name in t:
                # read through the table (PyTorch's L['self']._modules['fc']): a dict lookup
                # in the guards instead of Module.__getattr__
                tsrc = GetItemSource(AttrSource(self.source, table), name) \
                    if self.source is not None else None
                if tsrc is not None:
                    tx.output.module_attr_sources.add(tsrc.name())
                return VariableBuilder(tx, tsrc)(t[name])
        if name in d:
            if src is not None:
                tx.output.module_attr_sources.add(src.name())
            return VariableBuilder(tx, src)(d[name])
        cls_attr = None
        for klass in type(m).__mro__:
            if name in klass.__dict__:
                cls_attr = klass.__dict__[name]
                break
        else:
            unimplemented(f"'{type(m).__name__}' object has no attribute '{name}'")
        if isinstance(cls_attr, property):
            from .functions import UserFunctionVariable
            return UserFunctionVariable(cls_attr.fget).call_function(tx, [self], {})
        if isinstance(cls_attr, staticmethod):
            return VariableBuilder(tx, None)(cls_attr.__func__)
        if isinstance(cls_attr, classmethod):
            from .misc import UserDefinedClassVariable
            return UserMethodVariable(cls_attr.__func__, UserDefinedClassVariable(type(m)))
        if isinstance(cls_attr, (types.GetSetDescriptorType, types.MemberDescriptorType)):
            # a C type's attribute or a __slots__ entry: its __get__ is C that runs no user
            # code, so the value it gives now is the attribute's (guarded as read)
            try:
                value = cls_attr.__get__(m, type(m))
            except AttributeError:
                unimplemented(f"'{type(m).__name__}' object has no attribute '{name}'")
            return VariableBuilder(tx, src)(value)
        if callable(cls_attr) and hasattr(cls_attr, "__code__"):
            return UserMethodVariable(cls_attr, self)
        return VariableBuilder(tx, None)(cls_attr)

    def _guard_no_hooks(self, tx):
        from ..source import AttrSource
        from ...nn.modules import module as _mod
        m = self.module
        for h in _HOOK_DICTS:
            if getattr(m, h, None):
                unimplemented(f"nn.Module hooks ({h}) on {type(m).__name__}")
            if self.source is not None:
                tx.output.guards.dict_keys(AttrSource(self.source, h), getattr(m, h))
        for g in ("_global_forward_hooks", "_global_forward_pre_hooks",
                  "_global_backward_hooks", "_global_backward_pre_hooks"):
            if getattr(_mod, g, None):
                unimplemented(f"global nn.Module hooks ({g})")

    def call_function(self, tx, args, kwargs):
        from ...nn.modules.module import Module
        from .functions import UserFunctionVariable
        m = self.module
        call = type(m).__call__
        if call is not Module.__call__:
            return UserFunctionVariable(call).call_function(tx, [self] + list(args), kwargs)
        self._guard_no_hooks(tx)
        fwd = self.var_getattr(tx, "forward")
        return fwd.call_function(tx, args, kwargs)

    def call_method(self, tx, name, args, kwargs):
        from ...nn.modules.container import ModuleDict, ModuleList, Sequential
        from .lists import ListIteratorVariable, TupleVariable
        from .builder import VariableBuilder
        from ..source import GetItemSource
        m = self.module
        if name == "__getitem__" and isinstance(m, (ModuleList, Sequential, ModuleDict)):
            idx = args[0].as_python_constant()
            if isinstance(idx, slice):
                if isinstance(m, ModuleDict) or self.source is None:
                    unimplemented(f"slicing a {type(m).__name__} in captured code")
                return ModuleSliceVariable(self, idx, self.unpack_var_sequence(tx)[idx])
            src = GetItemSource(self.source, idx) if self.source is not None else None
            return VariableBuilder(tx, src)(m[idx])
        if name == "__len__":
            return ConstantVariable(len(m))
        if isinstance(m, ModuleDict) and name in ("keys", "values", "items"):
            keys = list(m.keys())
            vals = [VariableBuilder(tx, GetItemSource(self.source, k))(m[k]) for k in keys]
            if name == "keys":
                return ListIteratorVariable([ConstantVariable(k) for k in keys])
            if name == "values":
                return ListIteratorVariable(vals)
            return ListIteratorVariable([TupleVariable([ConstantVariable(k), v])
                                         for k, v in zip(keys, vals)])
        if name in ("parameters", "named_parameters", "buffers", "children", "modules",
                    "named_children", "named_modules", "named_buffers"):
            unimplemented(f"nn.Module.{name}() in captured code")
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def has_unpack_var_sequence(self, tx):
        from ...nn.modules.container import ModuleDict, ModuleList, Sequential
        return isinstance(self.module, (ModuleList, Sequential, ModuleDict))

    def unpack_var_sequence(self, tx):
        from ...nn.modules.container import ModuleDict
        from .builder import VariableBuilder
        from ..source import GetItemSource
        m = self.module
        if isinstance(m, ModuleDict):
            return [ConstantVariable(k) for k in m.keys()]
        src = self.source
        if src is not None:
            tx.output.guards.constant_match(_LenSource(src), len(m))
        return [VariableBuilder(tx, GetItemSource(src, i) if src else None)(sub)
                for i, sub in enumerate(m)]

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__})"


class ModuleDictVariable(VariableTracker):
    """``module.__dict__`` read by captured code (``Module.__call__`` asks it for a compiled
    ``_call_impl``): each key is looked up as the attribute it holds, with the module's
    attribute guards, and a missing key is guarded to stay missing."""

    def __init__(self, owner):
        super().__init__()
        self.owner = owner

    def python_type(self):
        return dict

    def _has(self, tx, key):
        m = self.owner.module
        if tx.output.side_effects.pending_attr(self.owner, key) is not None:
            return True
        present = key in m.__dict__
        if self.owner.source is not None:
            tx.output.guards.constant_match(_ContainsSource(self.owner.source, key), present)
        return present

    def call_method(self, tx, name, args, kwargs):
        if name in ("get", "__getitem__", "__contains__") and not kwargs and args and \
                args[0].is_python_constant() and len(args) <= (1 if name != "get" else 2):
            key = args[0].as_python_constant()
            if not isinstance(key, str):
                unimplemented(f"module.__dict__.{name} with a {type(key).__name__} key")
            if self._has(tx, key):
                return ConstantVariable(True) if name == "__contains__" else \
                    self.owner.var_getattr(tx, key)
            if name == "__contains__":
                return ConstantVariable(False)
            if name == "get":
                return args[1] if len(args) > 1 else ConstantVariable(None)
            unimplemented(f"KeyError: {key!r} (module.__dict__[{key!r}] in captured code)")
        unimplemented(f"module.__dict__.{name} in captured code")

    def __repr__(self):
        return f"ModuleDictVariable({type(self.owner.module).__name__})"


class ModuleSliceVariable(VariableTracker):
    """``container[a:b]`` of a ModuleList/Sequential: eager builds a new container of the same
    submodules; capture keeps the submodules (``items``, each with its source) and residual
    code slices the real container again where the slice leaves the graph."""

    def __init__(self, container, index, items):
        super().__init__()
        self.container, self.index, self.items = container, index, items

    def python_type(self):
        return type(self.container.module)

    def has_unpack_var_sequence(self, tx):
        return True

    def unpack_var_sequence(self, tx):
        return list(self.items)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__getitem__":
            idx = args[0].as_python_constant()
            if isinstance(idx, slice):
                return ModuleSliceVariable(self.container, None, self.items[idx])
            return self.items[idx]
        unimplemented(f"{type(self.container.module).__name__}[slice].{name} in captured code")

    def reconstruct(self, cg):
        if self.index is None:
            unimplemented("a slice of a sliced module container leaving the graph")
        return f"{cg.reconstruct(self.container)}[{cg.const(self.index, 'slice')}]"


class _LenSource:
    """``len(<module container>)`` as a guarded value."""
    guard_source = "local"

    def __init__(self, base):
        self.base = base

    def name(self):
        return f"len({self.base.name()})"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        return f"___len({b})"

    def __hash__(self):
        return hash(self.name())

    def __eq__(self, other):
        return isinstance(other, _LenSource) and other.name() == self.name()


class _ContainsSource:
    """``key in <module>.__dict__`` as a guarded value."""

    def __init__(self, base, key):
        self.base, self.key = base, key
        self.guard_source = base.guard_source

    def name(self):
        return f"{self.key!r} in {self.base.name()}.__dict__"

    def expr(self):
        return self.expr_with_base(self.base.expr())

    def expr_with_base(self, b):
        return f"({self.key!r} in ___getattr({b}, '__dict__'))"

    def __hash__(self):
        return hash(self.name())

    def __eq__(self, other):
        return isinstance(other, _ContainsSource) and other.name() == self.name()

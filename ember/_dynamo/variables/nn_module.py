"""``nn.Module`` objects during capture: guarded by identity, their attributes read through
their parameter, buffer, submodule and ``__dict__`` tables (each read guarded: parameters and
buffers become graph inputs with tensor guards, constants like ``training`` are guarded by
value), their ``forward`` inlined when called, with their forward (pre-)hooks around it
(backward hooks: a graph break). Attribute writes are side effects replayed after the graph."""
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["NNModuleVariable"]

# the tree walks modelled on the real module, with the tables besides ``_modules`` each reads
_STRUCTURE_METHODS = {"parameters": ("_parameters",), "named_parameters": ("_parameters",),
                      "buffers": ("_buffers",), "named_buffers": ("_buffers",),
                      "children": (), "named_children": (), "modules": (),
                      "named_modules": ()}
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
# which forward (pre-)hooks take keyword arguments: read by the trace, guarded as the hooks
_HOOK_FLAG_DICTS = ("_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs")


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
            from .misc import raise_attribute_error
            raise_attribute_error(tx, self, name, f"'{type(m).__name__}' object has no "
                                                  f"attribute '{name}'")
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

    def _guard_hooks(self, tx):
        """The module's hook tables, guarded by their keys. Forward (pre-)hooks are traced
        around ``forward`` (:meth:`call_function`); backward hooks, hooks on a module read
        without a source and global hooks are not captured."""
        from ..source import AttrSource
        from ...nn.modules import module as _mod
        m = self.module
        for h in _HOOK_DICTS + _HOOK_FLAG_DICTS:
            table = getattr(m, h, None)
            if table and ("backward" in h or self.source is None):
                unimplemented(f"nn.Module hooks ({h}) on {type(m).__name__}")
            if self.source is not None and table is not None:
                tx.output.guards.dict_keys(AttrSource(self.source, h), table)
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
        self._guard_hooks(tx)
        fwd = self.var_getattr(tx, "forward")
        if not (m._forward_pre_hooks or m._forward_hooks):
            return fwd.call_function(tx, args, kwargs)
        return self._call_with_hooks(tx, fwd, list(args), dict(kwargs))

    def _call_with_hooks(self, tx, fwd, args, kwargs):
        """``Module._call_impl`` with forward pre-hooks and forward hooks, in its order: each
        pre-hook may replace the arguments, each hook the result."""
        from .builder import VariableBuilder
        from .dicts import ConstDictVariable
        from .lists import TupleVariable
        from ..source import AttrSource, GetItemSource
        m = self.module

        def hooks(table):
            src = AttrSource(self.source, table)
            return [(hid, VariableBuilder(tx, GetItemSource(src, hid))(hook))
                    for hid, hook in getattr(m, table).items()]

        def is_none(v):
            return isinstance(v, ConstantVariable) and v.value is None
        for hid, hook in hooks("_forward_pre_hooks"):
            if hid in m._forward_pre_hooks_with_kwargs:
                r = tx.call(hook, [self, TupleVariable(args), ConstDictVariable(kwargs)], {})
                if not is_none(r):
                    parts = tx.unpack(r) if isinstance(r, TupleVariable) else ()
                    if len(parts) != 2 or not isinstance(parts[1], ConstDictVariable):
                        unimplemented("forward pre-hook must return None or a tuple of "
                                      "(new_args, new_kwargs)")
                    args, kwargs = tx.unpack(parts[0]), dict(parts[1].items)
            else:
                r = tx.call(hook, [self, TupleVariable(args)], {})
                if not is_none(r):
                    args = tx.unpack(r) if isinstance(r, TupleVariable) else [r]
        result = fwd.call_function(tx, args, kwargs)
        for hid, hook in hooks("_forward_hooks"):
            if hid in m._forward_hooks_with_kwargs:
                r = tx.call(hook, [self, TupleVariable(args), ConstDictVariable(kwargs),
                                   result], {})
            else:
                r = tx.call(hook, [self, TupleVariable(args), result], {})
            if not is_none(r):
                result = r
        return result

    def call_method(self, tx, name, args, kwargs):
        from ...nn.modules.container import ModuleDict, ModuleList, Sequential
        from ...nn.modules.module import Module
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
        if name in _STRUCTURE_METHODS and getattr(type(m), name, None) is getattr(Module, name):
            return self._structure(tx, name, args, kwargs)
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def _structure(self, tx, name, args, kwargs):
        """``parameters()``, ``named_modules()`` and the other walks of the module tree: run
        on the real module now (the tree is fixed for the capture: the key lists of the tables
        walked are guarded), each module, parameter and buffer it yields read through the
        table entries that lead to it (PyTorch's sources), as an iterator over them."""
        from .builder import VariableBuilder
        from .lists import ListIteratorVariable, TupleVariable
        from ..source import AttrSource, GetItemSource
        if self.source is None or not all(
                v.is_python_constant() for v in list(args) + list(kwargs.values())):
            unimplemented(f"nn.Module.{name}() in captured code")
        tables = ("_modules",) + _STRUCTURE_METHODS[name]
        sources = {}  # id(object) -> source: the first path to it, as the walk finds them

        def walk(mod, src):
            for table in tables:
                t = mod.__dict__.get(table)
                if t is None:
                    continue
                tsrc = AttrSource(src, table)
                tx.output.guards.dict_keys(tsrc, t)
                for k, v in t.items():
                    if v is None:  # (skipped by the walk: guarded to stay so)
                        tx.output.guards.constant_match(GetItemSource(tsrc, k), None)
                    elif id(v) not in sources:
                        sources[id(v)] = GetItemSource(tsrc, k)
                        if table == "_modules":
                            walk(v, sources[id(v)])
        sources[id(self.module)] = self.source
        walk(self.module, self.source)
        result = getattr(self.module, name)(*[a.as_python_constant() for a in args],
                                            **{k: v.as_python_constant()
                                               for k, v in kwargs.items()})

        def wrap(obj):
            if id(obj) not in sources:  # (reached some other way: an overridden walk)
                unimplemented(f"nn.Module.{name}() yielded an object outside the module tree")
            src = sources[id(obj)]
            if src.name() != self.source.name():
                tx.output.module_attr_sources.add(src.name())
            return VariableBuilder(tx, src)(obj)
        if name.startswith("named_"):
            items = [TupleVariable([ConstantVariable(n), wrap(o)]) for n, o in result]
        else:
            items = [wrap(o) for o in result]
        return ListIteratorVariable(items)

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

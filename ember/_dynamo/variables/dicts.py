"""Dicts with constant keys during capture; mutation of a dict read from the frame is written
back after the graph (``d.clear(); d.update(...)``). A subclass of ``dict`` is the same
variable with its class kept: the methods it defines in Python are inlined, the rest are
``dict``'s (as PyTorch's UserDefinedDictVariable). A ``defaultdict`` made in captured code
calls its factory for a missing key."""
import collections
import types

from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["ConstDictVariable", "DefaultDictVariable", "DictViewVariable"]


class ConstDictVariable(VariableTracker):
    def __init__(self, items, source=None, user_cls=dict):
        super().__init__(source)
        self.items = dict(items)  # python-constant key -> VariableTracker
        self.user_cls = user_cls

    def python_type(self):
        return self.user_cls

    def as_python_constant(self):
        return {k: v.as_python_constant() for k, v in self.items.items()}

    def truth(self, tx):
        return bool(self.items)

    def has_unpack_var_sequence(self, tx):
        return True

    def unpack_var_sequence(self, tx):
        from .builder import wrap_constant_like
        return [wrap_constant_like(tx, k) for k in self.items]

    def _mutate(self, tx):
        tx.output.side_effects.mutate(self)

    def _python_override(self, name):
        """The Python function ``user_cls`` defines for ``name`` above ``dict``, if any."""
        for k in self.user_cls.__mro__:
            if k is dict:
                return None
            fn = k.__dict__.get(name)
            if fn is not None:
                return fn if isinstance(fn, types.FunctionType) else None
        return None

    def call_method(self, tx, name, args, kwargs):
        override = self._python_override(name) if self.user_cls is not dict else None
        if override is not None:
            from .functions import UserMethodVariable
            return UserMethodVariable(override, self).call_function(tx, args, kwargs)
        return self.call_dict_method(tx, name, args, kwargs)

    def call_dict_method(self, tx, name, args, kwargs):
        """``dict.<name>(self, ...)``: what ``super().<name>`` reaches in a subclass."""
        key = lambda: args[0].as_python_constant()  # noqa: E731
        if name == "__getitem__":
            k = key()
            if k not in self.items:
                from .misc import raise_observed
                raise_observed(KeyError(k))
            return self.items[k]
        if name == "get":
            d = args[1] if len(args) > 1 else ConstantVariable(None)
            return self.items.get(key(), d)
        if name == "__contains__":
            return ConstantVariable(key() in self.items)
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name in ("keys", "values", "items") and not args and not kwargs:
            return DictViewVariable(self, name)
        if name == "__setitem__":
            self._mutate(tx)
            self.items[key()] = args[1]
            return ConstantVariable(None)
        if name == "__delitem__":
            self._mutate(tx)
            del self.items[key()]
            return ConstantVariable(None)
        if name == "pop":
            self._mutate(tx)
            if len(args) > 1:
                return self.items.pop(key(), args[1])
            return self.items.pop(key())
        if name in ("update", "__init__"):
            self._mutate(tx)
            if args:
                other = args[0]
                if not isinstance(other, ConstDictVariable):
                    unimplemented("dict.update with a non-dict")
                self.items.update(other.items)
            self.items.update(kwargs)
            return ConstantVariable(None)
        if name == "setdefault":
            k = key()
            if k not in self.items:
                self._mutate(tx)
                self.items[k] = args[1] if len(args) > 1 else ConstantVariable(None)
            return self.items[k]
        if name == "clear":
            self._mutate(tx)
            self.items.clear()
            return ConstantVariable(None)
        if name == "copy":
            return ConstDictVariable(self.items, user_cls=self.user_cls)
        unimplemented(f"dict.{name}")

    def reconstruct(self, cg):
        inner = ", ".join(f"{cg.reconstruct(ConstantVariable(k))}: {cg.reconstruct(v)}"
                          for k, v in self.items.items())
        if self.user_cls is dict:
            return "{" + inner + "}"
        return f"{cg.const(self.user_cls)}({{{inner}}})"


class DefaultDictVariable(ConstDictVariable):
    """A ``collections.defaultdict`` made in captured code: a missing key read with ``d[k]``
    gets ``default_factory()`` (the factory called in the trace) and keeps it."""

    def __init__(self, items, default_factory, source=None):
        super().__init__(items, source, user_cls=collections.defaultdict)
        self.default_factory = default_factory

    def call_dict_method(self, tx, name, args, kwargs):
        if name == "__getitem__":
            k = args[0].as_python_constant()
            if k not in self.items:
                factory = self.default_factory
                if isinstance(factory, ConstantVariable) and factory.value is None:
                    from .misc import raise_observed
                    raise_observed(KeyError(k))
                self._mutate(tx)
                self.items[k] = factory.call_function(tx, [], {})
            return self.items[k]
        if name == "copy":
            return DefaultDictVariable(self.items, self.default_factory)
        return super().call_dict_method(tx, name, args, kwargs)

    def var_getattr(self, tx, name):
        if name == "default_factory":
            return self.default_factory
        return super().var_getattr(tx, name)

    def reconstruct(self, cg):
        inner = ", ".join(f"{cg.reconstruct(ConstantVariable(k))}: {cg.reconstruct(v)}"
                          for k, v in self.items.items())
        return (f"{cg.const(collections.defaultdict)}({cg.reconstruct(self.default_factory)}, "
                f"{{{inner}}})")


class DictViewVariable(VariableTracker):
    """``d.keys()``, ``d.values()``, ``d.items()``: views, not iterators. Each iteration,
    ``len`` and ``in`` reads the dict as it is then (a view sees later writes, and can be
    iterated again); residual code asks the rebuilt dict for the view."""

    def __init__(self, dict_vt, kind):
        super().__init__()
        self.dict_vt, self.kind = dict_vt, kind

    def python_type(self):
        return type(getattr({}, self.kind)())

    def as_python_constant(self):
        if self.kind != "keys":
            return super().as_python_constant()
        return dict.fromkeys(self.dict_vt.items).keys()

    def truth(self, tx):
        return bool(self.dict_vt.items)

    def has_unpack_var_sequence(self, tx):
        return True

    def unpack_var_sequence(self, tx):
        from .builder import wrap_constant_like
        from .lists import TupleVariable
        items = self.dict_vt.items
        if self.kind == "keys":
            return [wrap_constant_like(tx, k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([wrap_constant_like(tx, k), v]) for k, v in items.items()]

    def call_method(self, tx, name, args, kwargs):
        from .lists import ListIteratorVariable
        if name == "__len__":
            return ConstantVariable(len(self.dict_vt.items))
        if name == "__iter__":
            return ListIteratorVariable(self.unpack_var_sequence(tx))
        if name == "__contains__" and self.kind == "keys" and args[0].is_python_constant():
            return ConstantVariable(args[0].as_python_constant() in self.dict_vt.items)
        if name == "__contains__" and self.kind == "values":
            from .builtin import compare_eq
            return ConstantVariable(any(compare_eq(tx, v, args[0])
                                        for v in self.dict_vt.items.values()))
        unimplemented(f"dict_{self.kind}.{name} in captured code")

    def reconstruct(self, cg):
        return f"{cg.reconstruct(self.dict_vt)}.{self.kind}()"

    def __repr__(self):
        return f"DictViewVariable({self.kind})"

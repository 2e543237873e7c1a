"""Lists, tuples, named tuples, ``ember.Size``, ranges and iterators during capture. Lists are
mutable: a list that came from the frame (it has a source) and is mutated is recorded as a side
effect and written back after the graph (``L['xs'][:] = [...]``)."""
from .base import VariableTracker, unimplemented
from .constant import ConstantVariable

__all__ = ["ListVariable", "TupleVariable", "NamedTupleVariable", "SizeVariable",
           "ListIteratorVariable", "is_namedtuple_class"]


def is_namedtuple_class(cls):
    """Whether ``cls`` is a ``collections.namedtuple`` (or ``typing.NamedTuple``) class, or a
    subclass that keeps its ``__new__``: its instances are made from their fields alone."""
    if not (isinstance(cls, type) and issubclass(cls, tuple)):
        return False
    owner = next((k for k in cls.__mro__ if "__new__" in k.__dict__), None)
    return owner is not None and "_fields" in owner.__dict__ and "_make" in owner.__dict__


class BaseListVariable(VariableTracker):
    py_type = list

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self):
        return self.py_type

    def as_python_constant(self):
        return self.py_type([i.as_python_constant() for i in self.items])

    def has_unpack_var_sequence(self, tx):
        return True

    def unpack_var_sequence(self, tx):
        return list(self.items)

    def truth(self, tx):
        return bool(self.items)

    def getitem(self, tx, idx):
        if isinstance(idx, slice):
            return type(self)(self.items[idx]) if self.py_type is not list else \
                ListVariable(self.items[idx])
        try:
            return self.items[idx]
        except IndexError as e:
            from .misc import raise_observed
            raise_observed(e)

    def call_method(self, tx, name, args, kwargs):
        if name == "__getitem__":
            return self.getitem(tx, args[0].as_python_constant())
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__contains__":
            from .builtin import compare_eq
            return ConstantVariable(any(compare_eq(tx, i, args[0]) for i in self.items))
        if name == "index":
            from .builtin import compare_eq
            for i, it in enumerate(self.items):
                if compare_eq(tx, it, args[0]):
                    return ConstantVariable(i)
            unimplemented("list.index of a missing item")
        if name == "count":
            from .builtin import compare_eq
            return ConstantVariable(sum(compare_eq(tx, i, args[0]) for i in self.items))
        if name in ("__add__", "__radd__"):
            other = args[0]
            if not isinstance(other, BaseListVariable):
                unimplemented(f"{self.py_type.__name__} + {other}")
            items = self.items + other.items if name == "__add__" else other.items + self.items
            return self._like(items)
        if name == "__mul__":
            return self._like(self.items * args[0].as_python_constant())
        unimplemented(f"{self.py_type.__name__}.{name}")

    def _like(self, items):
        """What ``+`` and ``*`` make of this sequence's type: a list, a tuple, or a Size."""
        return ListVariable(items) if self.py_type is list else \
            SizeVariable(items) if isinstance(self, SizeVariable) else TupleVariable(items)

    def reconstruct(self, cg):
        inner = ", ".join(cg.reconstruct(i) for i in self.items)
        if self.py_type is tuple:
            return f"({inner},)" if len(self.items) == 1 else f"({inner})"
        return f"[{inner}]"

    def __repr__(self):
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(BaseListVariable):
    py_type = tuple


class NamedTupleVariable(TupleVariable):
    """A namedtuple of traced values: what ops with named results return
    (``ember.return_types.sort``: ``values``, ``indices``); fields read by name or position."""

    def __init__(self, items, tuple_cls, source=None):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls

    @property
    def py_type(self):
        return self.tuple_cls

    def as_python_constant(self):
        return self.tuple_cls(*[i.as_python_constant() for i in self.items])

    @classmethod
    def construct(cls, tx, tuple_cls, args, kwargs):
        """``tuple_cls(*args, **kwargs)``: the fields bound as the generated ``__new__`` binds
        them, defaults filled in."""
        fields = tuple_cls._fields
        name = tuple_cls.__name__
        if len(args) > len(fields):
            unimplemented(f"TypeError: {name}.__new__() takes {len(fields) + 1} positional "
                          f"arguments but {len(args) + 1} were given")
        bound = dict(zip(fields, args))
        for k, v in kwargs.items():
            if k not in fields or k in bound:
                unimplemented(f"TypeError: {name}.__new__() got an unexpected or repeated "
                              f"argument '{k}'")
            bound[k] = v
        defaults = getattr(tuple_cls, "_field_defaults", {})
        missing = [f for f in fields if f not in bound and f not in defaults]
        if missing:
            unimplemented(f"TypeError: {name}.__new__() missing required arguments {missing}")
        from .builder import wrap_constant_like
        return cls([bound[f] if f in bound else wrap_constant_like(tx, defaults[f])
                    for f in fields], tuple_cls)

    def var_getattr(self, tx, name):
        from .functions import UserFunctionVariable, UserMethodVariable
        fields = self.tuple_cls._fields
        if name in fields:
            return self.items[fields.index(name)]
        if name == "_fields":
            return ConstantVariable(fields)
        raw = self._user_attr(name)
        if isinstance(raw, property):
            return UserFunctionVariable(raw.fget).call_function(tx, [self], {})
        if raw is not None:
            return UserMethodVariable(raw, self)
        return super().var_getattr(tx, name)

    def _user_attr(self, name):
        """The Python function or property the class defines as ``name`` (a
        ``typing.NamedTuple`` body's), or None."""
        import types
        for k in self.tuple_cls.__mro__:
            if k is tuple:
                return None
            raw = k.__dict__.get(name)
            if isinstance(raw, types.FunctionType) or (
                    isinstance(raw, property) and isinstance(raw.fget, types.FunctionType)):
                return raw
        return None

    def call_method(self, tx, name, args, kwargs):
        if name == "_replace" and not args:
            fields = self.tuple_cls._fields
            if not set(kwargs) <= set(fields):
                unimplemented(f"ValueError: Got unexpected field names: "
                              f"{sorted(set(kwargs) - set(fields))!r}")
            return NamedTupleVariable([kwargs.get(f, v) for f, v in zip(fields, self.items)],
                                      self.tuple_cls)
        if name == "_asdict" and not args and not kwargs:
            from .dicts import ConstDictVariable
            return ConstDictVariable(dict(zip(self.tuple_cls._fields, self.items)))
        raw = self._user_attr(name)
        if raw is not None and not isinstance(raw, property):
            from .functions import UserMethodVariable
            return UserMethodVariable(raw, self).call_function(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.const(self.tuple_cls)}({', '.join(cg.reconstruct(i) for i in self.items)})"


class SizeVariable(TupleVariable):
    """``tensor.shape``: a tuple of ints that is an ``ember.Size``."""

    @property
    def py_type(self):
        from ..._core.size import Size
        return Size

    def as_python_constant(self):
        from ..._core.size import Size
        return Size([i.as_python_constant() for i in self.items])

    def getitem(self, tx, idx):
        if isinstance(idx, slice):
            return SizeVariable(self.items[idx])
        return super().getitem(tx, idx)

    def call_method(self, tx, name, args, kwargs):
        if name == "numel":
            from .builtin import binary_op
            import operator
            n = ConstantVariable(1)
            for i in self.items:  # symbolic sizes multiply into a graph value
                n = binary_op(tx, operator.mul, [n, i])
            return n
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.const(self.py_type)}({super().reconstruct(cg)})"


class ListVariable(BaseListVariable):
    py_type = list

    def _mutate(self, tx):
        tx.output.side_effects.mutate(self)

    def call_method(self, tx, name, args, kwargs):
        if name == "append":
            self._mutate(tx)
            self.items.append(args[0])
            return ConstantVariable(None)
        if name == "extend":
            self._mutate(tx)
            self.items.extend(args[0].unpack_var_sequence(tx))
            return ConstantVariable(None)
        if name == "insert":
            self._mutate(tx)
            self.items.insert(args[0].as_python_constant(), args[1])
            return ConstantVariable(None)
        if name == "pop":
            self._mutate(tx)
            return self.items.pop(*[a.as_python_constant() for a in args])
        if name == "clear":
            self._mutate(tx)
            self.items.clear()
            return ConstantVariable(None)
        if name == "reverse":
            self._mutate(tx)
            self.items.reverse()
            return ConstantVariable(None)
        if name == "copy":
            return ListVariable(self.items)
        if name == "__setitem__":
            self._mutate(tx)
            idx = args[0].as_python_constant()
            if isinstance(idx, slice):
                self.items[idx] = args[1].unpack_var_sequence(tx)
            else:
                self.items[idx] = args[1]
            return ConstantVariable(None)
        if name == "__delitem__":
            self._mutate(tx)
            del self.items[args[0].as_python_constant()]
            return ConstantVariable(None)
        if name == "remove":
            from .builtin import compare_eq
            for i, it in enumerate(self.items):
                if compare_eq(tx, it, args[0]):
                    self._mutate(tx)
                    del self.items[i]
                    return ConstantVariable(None)
            unimplemented("list.remove of a missing item")
        if name == "__iadd__":
            self._mutate(tx)
            self.items.extend(args[0].unpack_var_sequence(tx))
            return self
        if name == "sort" and not args and set(kwargs) <= {"key", "reverse"}:
            from .builtin import _order
            ordered = _order(tx, sorted, [ListVariable(self.items)], kwargs)
            self._mutate(tx)
            self.items[:] = ordered.items
            return ConstantVariable(None)
        if name == "__imul__":
            self._mutate(tx)
            self.items[:] = self.items * args[0].as_python_constant()
            return self
        return super().call_method(tx, name, args, kwargs)


class ListIteratorVariable(VariableTracker):
    """An iterator over items known at capture time (lists, ranges, zip, enumerate, dicts)."""

    def __init__(self, items, index=0):
        super().__init__()
        self.items = list(items)
        self.index = index

    def next_item(self, tx):
        if self.index >= len(self.items):
            return None
        v = self.items[self.index]
        self.index += 1
        return v

    def has_unpack_var_sequence(self, tx):
        return True

    def unpack_var_sequence(self, tx):
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest

    def call_method(self, tx, name, args, kwargs):
        if name == "__next__":
            v = self.next_item(tx)
            if v is None:
                unimplemented("StopIteration inside captured code")
            return v
        if name == "__iter__":
            return self
        unimplemented(f"iterator.{name}")

    def reconstruct(self, cg):
        inner = ", ".join(cg.reconstruct(i) for i in self.items[self.index:])
        return f"___iter(({inner}{',' if len(self.items) - self.index == 1 else ''}))"

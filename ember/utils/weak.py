"""Weak references and weak-keyed dictionaries that compare keys by identity (PyTorch's
``torch.utils.weak``).

``weakref.WeakKeyDictionary`` hashes and compares its keys with ``__hash__``/``__eq__``, and a
tensor's ``==`` is elementwise (its result has no single truth value). ``WeakIdRef`` hashes a
key by ``id`` and compares by identity while both referents live; ``WeakIdKeyDictionary`` (alias
``WeakTensorKeyDictionary``) is CPython's ``WeakKeyDictionary`` built on it. An ember tensor's
Python object is the tensor itself (never resurrected from C, as PyTorch's can be), so no
``_fix_weakref`` step is needed when a reference is followed.
"""
import collections.abc as _collections_abc
import weakref
from collections.abc import Mapping, MutableMapping
from weakref import ref

from .._tensor import Tensor

WeakRef = ref

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]


class _IterationGuard:
    """Registers itself with the container while an iteration runs, delaying removals of dead
    keys until the last iteration ends (CPython's ``weakref._IterationGuard``)."""

    def __init__(self, weakcontainer):
        self.weakcontainer = ref(weakcontainer)  # no cycle

    def __enter__(self):
        w = self.weakcontainer()
        if w is not None:
            w._iterating.add(self)
        return self

    def __exit__(self, e, t, b):
        w = self.weakcontainer()
        if w is not None:
            s = w._iterating
            s.remove(self)
            if not s:
                w._commit_removals()


class WeakIdRef(weakref.ref):
    """A weak reference hashed by its referent's ``id``, equal to another when both referents
    are alive and the same object (a dead one equals only itself: a new object at the old
    address is a different key)."""
    __slots__ = ["_id"]

    def __init__(self, key, callback=None):
        self._id = id(key)  # cached now: the referent may be gone when the hash is asked
        super().__init__(key, callback)

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        a = self()
        b = other()
        if a is not None and b is not None:
            return a is b
        return self is other


class _WeakHashRef(weakref.ref):
    """``WeakIdRef`` for objects whose ``__hash__`` is their identity: hashed and compared by
    ``hash`` of the referent."""
    __slots__ = ["_id"]

    def __init__(self, key, callback=None):
        self._id = hash(key)
        super().__init__(key, callback)

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        a = self()
        b = other()
        if a is not None and b is not None:
            return hash(a) == hash(b)
        return self is other


class WeakIdKeyDictionary(MutableMapping):
    """CPython's ``weakref.WeakKeyDictionary`` with its keys wrapped in ``ref_type``
    (``WeakIdRef``): an entry goes when its key object is collected."""

    def __init__(self, dict=None, ref_type=WeakIdRef):
        self.data = {}
        self.ref_type = ref_type

        def remove(k, selfref=ref(self)):
            self = selfref()
            if self is not None:
                if self._iterating:
                    self._pending_removals.append(k)
                else:
                    try:
                        del self.data[k]
                    except KeyError:
                        pass

        self._remove = remove
        self._pending_removals = []  # dead keys seen while an iteration ran
        self._iterating = set()
        self._dirty_len = False
        if dict is not None:
            self.update(dict)

    def _commit_removals(self):
        # a dead reference never equals a live one, so mutating before this runs is safe; some
        # keys may already be gone
        pop = self._pending_removals.pop
        d = self.data
        while True:
            try:
                key = pop()
            except IndexError:
                return
            try:
                del d[key]
            except KeyError:
                pass

    def _scrub_removals(self):
        d = self.data
        self._pending_removals = [k for k in self._pending_removals if k in d]
        self._dirty_len = False

    def __delitem__(self, key):
        self._dirty_len = True
        del self.data[self.ref_type(key)]

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __len__(self):
        if self._dirty_len and self._pending_removals:
            # pending removals may name keys deleted explicitly since (CPython issue #21173)
            self._scrub_removals()
        return len(self.data) - len(self._pending_removals)

    def __repr__(self):
        return f"<{self.__class__.__name__} at {id(self):#x}>"

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def copy(self):
        new = WeakIdKeyDictionary()
        with _IterationGuard(self):
            for key, value in self.data.items():
                o = key()
                if o is not None:
                    new[o] = value
        return new

    __copy__ = copy

    def __deepcopy__(self, memo):
        from copy import deepcopy
        new = self.__class__()
        with _IterationGuard(self):
            for key, value in self.data.items():
                o = key()
                if o is not None:
                    new[o] = deepcopy(value, memo)
        return new

    def get(self, key, default=None):
        return self.data.get(self.ref_type(key), default)

    def __contains__(self, key):
        try:
            wr = self.ref_type(key)
        except TypeError:
            return False
        return wr in self.data

    def items(self):
        with _IterationGuard(self):
            for wr, value in self.data.items():
                key = wr()
                if key is not None:
                    yield key, value

    def keys(self):
        with _IterationGuard(self):
            for wr in self.data:
                obj = wr()
                if obj is not None:
                    yield obj

    __iter__ = keys

    def values(self):
        with _IterationGuard(self):
            for wr, value in self.data.items():
                if wr() is not None:
                    yield value

    def keyrefs(self):
        """The weak references to the keys (possibly dead by the time they are followed)."""
        return list(self.data)

    def popitem(self):
        self._dirty_len = True
        while True:
            key, value = self.data.popitem()
            o = key()
            if o is not None:
                return o, value

    def pop(self, key, *args):
        self._dirty_len = True
        return self.data.pop(self.ref_type(key), *args)

    def setdefault(self, key, default=None):
        return self.data.setdefault(self.ref_type(key, self._remove), default)

    def update(self, dict=None, **kwargs):
        d = self.data
        if dict is not None:
            if not hasattr(dict, "items"):
                dict = type({})(dict)
            for key, value in dict.items():
                d[self.ref_type(key, self._remove)] = value
        if kwargs:
            self.update(kwargs)

    def __ior__(self, other):
        self.update(other)
        return self

    def __or__(self, other):
        if isinstance(other, _collections_abc.Mapping):
            c = self.copy()
            c.update(other)
            return c
        return NotImplemented

    def __ror__(self, other):
        if isinstance(other, _collections_abc.Mapping):
            c = self.__class__()
            c.update(other)
            c.update(self)
            return c
        return NotImplemented

    def __eq__(self, other):
        # Mapping's equality compares keys with ==; these keys compare by identity
        if not isinstance(other, Mapping):
            return NotImplemented
        return {id(k): v for k, v in self.items()} == {id(k): v for k, v in other.items()}


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor: calling it gives the tensor, or ``None`` once collected."""

    def __init__(self, tensor):
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(tensor)}.")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        out = self.ref()
        if out is None:
            return out
        if not isinstance(out, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(out)}.")
        return out

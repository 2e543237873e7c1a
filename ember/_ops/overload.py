"""``OpOverload`` / ``OpOverloadPacket`` and the ``ember.ops.<namespace>`` objects.

``ember.ops.aten.add`` is a packet; ``ember.ops.aten.add.Tensor`` is an overload, callable with
any mix of positional and keyword arguments (it normalizes them against its schema and enters
the dispatcher; a call that fails with an argument of another type than the schema's raises
PyTorch's RuntimeError for it). Generated bindings skip normalization and call
``overload._call`` directly.
"""
import functools
import keyword
import os

import numpy as np

from .. import overrides as _overrides
from .._core import api_name
from .._dispatch import dispatcher as _d
from .._dispatch.keys import parse_key
from .._core.codegen import compile_source


class OpOverload:
    def __init__(self, entry, packet):
        self._entry = entry
        entry.overload = self
        self._schema = entry.schema
        self._ns = entry.namespace
        self._opname = entry.schema.base_name
        self._overloadname = entry.schema.overload_name or "default"
        self.__name__ = f"{self._opname}.{self._overloadname}"
        self.__qualname__ = self.__name__
        self.__module__ = f"ember._ops.{self._ns}"
        self._overloadpacket = packet
        self._call = _d.make_call(entry)

    @functools.cached_property
    def _normalize(self):
        """Binds (args, kwargs) to the schema; generated on first use (bindings never need it),
        which keeps ``import ember`` from compiling a thousand functions nobody calls."""
        return _make_normalizer(self._schema, self._entry.qualname)

    def __call__(self, *args, **kwargs):
        if _overrides._TF_ON and _overrides._check(args + tuple(kwargs.values())):
            return _torch_function(self, args, kwargs)
        args = self._normalize(*args, **kwargs)
        try:
            return self._call(*args)
        except Exception:
            # the schema's type check runs only once the call has failed (a try costs nothing
            # until it catches): a wrong-typed argument is then PyTorch's RuntimeError
            self._normalize.check_types(args)
            raise

    def redispatch(self, keyset, *args, **kwargs):
        return self._entry.redispatch(keyset, *self._normalize(*args, **kwargs))

    def __repr__(self):
        return f"<OpOverload(op='{self._ns}.{self._opname}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self._ns}.{self._opname}.{self._overloadname}"

    def name(self):
        return self._entry.qualname

    @property
    def namespace(self):
        return self._ns

    @property
    def overloadpacket(self):
        return self._overloadpacket

    @property
    def tags(self):
        return self._entry.tags

    @property
    def is_view(self):
        return any(r.alias and not r.is_write for r in self._schema.returns)

    def has_kernel_for_dispatch_key(self, key):
        return self._entry.has_kernel(parse_key(key))

    def _dispatch_key_of(self, keys):
        return self._entry._slot(parse_key(keys))

    def decompose(self, *args, **kwargs):
        """Run the CompositeImplicitAutograd kernel, if the op has one."""
        from .._dispatch.keys import K
        k = self._entry._kernel(K.CompositeImplicitAutograd)
        if k is None:
            return NotImplemented
        return k.fn(*self._normalize(*args, **kwargs))

    def __hash__(self):
        return id(self)

    # an op is unique: copying a table keyed by ops keeps its keys (ptflops' aten counter)
    def __deepcopy__(self, memo=None):
        return self

    def __reduce__(self):
        return (_resolve_overload, (self._ns, self._opname, self._overloadname))


def _resolve_overload(ns, name, overload):
    return getattr(getattr(getattr(ops, ns), name), overload)


class OpOverloadPacket:
    """All overloads of one op name. Calling it picks the overload that binds the arguments."""

    def __init__(self, ns, name):
        self._ns = ns
        self._qualified_op_name = f"{ns}::{name}"
        self.__name__ = name
        self.__module__ = f"ember._ops.{ns}"
        self._overloads = {}

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        try:
            return self._overloads[overload]
        except KeyError:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'") from None

    def overloads(self):
        return list(self._overloads)

    def __deepcopy__(self, memo=None):
        return self

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._ns}.{self.__name__}')>"

    def __str__(self):
        return f"{self._ns}.{self.__name__}"

    def __call__(self, *args, **kwargs):
        if _overrides._TF_ON and _overrides._check(args + tuple(kwargs.values())):
            return _torch_function(self, args, kwargs)
        errors = []
        for ov in self._overloads.values():
            try:
                norm = ov._normalize(*args, **kwargs)
            except TypeError as e:
                errors.append(str(e))
                continue
            if _types_match(ov._schema, norm):
                return ov._call(*norm)
        raise TypeError(f"{self}() received an invalid combination of arguments; tried:\n  "
                        + "\n  ".join(str(o._schema) for o in self._overloads.values()))


def _torch_function(op, args, kwargs):
    """A call of an op packet or overload handed to ``__torch_function__`` (PyTorch's C++
    checks its arguments as it does a binding's; its error names the op oddly, as here)."""
    name = f"{api_name.name}.ops{op._ns}.{op.__name__.split('.')[0]}"
    return _overrides._handle(op, args + tuple(kwargs.values()), args, kwargs, name)


def _types_match(schema, values):
    from .._tensor import Tensor
    for a, v in zip(schema.arguments, values):
        if a.base == "Tensor" and not a.is_list and not a.optional and not isinstance(v, Tensor):
            return False
    return True


class _Namespace:
    """``ember.ops.aten``: attribute access yields op packets."""

    def __init__(self, name):
        self.name = name
        self._packets = {}

    def __getattr__(self, op):
        try:
            return self._packets[op]
        except KeyError:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}'") from None

    def __repr__(self):
        return f"<ember.ops.{self.name}>"

    def __dir__(self):
        return list(self._packets)


class _Ops:
    """``ember.ops``: namespaces are created on first registration."""

    def __init__(self):
        self._namespaces = {}
        self.loaded_libraries = set()

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        try:
            return self._namespaces[ns]
        except KeyError:
            raise AttributeError(f"No such operator namespace {ns!r}") from None

    def load_library(self, path):
        """Load a shared library whose TORCH_LIBRARY blocks register operators
        (``torch.ops.load_library``); what they raise is raised here."""
        from .._library.cpp import load_library
        load_library(path)
        self.loaded_libraries.add(os.path.realpath(path))

    def namespace(self, ns):
        if ns not in self._namespaces:
            self._namespaces[ns] = _Namespace(ns)
            _cache_attr(self, ns, self._namespaces[ns])
        return self._namespaces[ns]


ops = _Ops()


def _cache_attr(obj, name, value):
    """Also make ``value`` a plain attribute of ``obj`` (when that shadows nothing), so
    ``ops.aten.add.Tensor`` is three attribute reads, not three ``__getattr__`` misses: kernels
    and formulas name ops so on every call."""
    if not hasattr(type(obj), name) and (name not in vars(obj) or vars(obj)[name] is value
                                         or name in getattr(obj, "_cached_attrs", ())):
        vars(obj)[name] = value
        vars(obj).setdefault("_cached_attrs", set()).add(name)


def _uncache_attr(obj, name):
    if name in vars(obj).get("_cached_attrs", ()):
        vars(obj).pop(name, None)
        vars(obj)["_cached_attrs"].discard(name)


def add_overload(entry):
    """Create the OpOverload for a freshly defined entry and hang it under ember.ops."""
    ns = ops.namespace(entry.namespace)
    name = entry.schema.base_name
    packet = ns._packets.get(name)
    if packet is None:
        packet = ns._packets[name] = OpOverloadPacket(entry.namespace, name)
        _cache_attr(ns, name, packet)
    ov = OpOverload(entry, packet)
    packet._overloads[ov._overloadname] = ov
    _cache_attr(packet, ov._overloadname, ov)
    return ov


def remove_overload(entry):
    ns = ops.namespace(entry.namespace)
    packet = ns._packets.get(entry.schema.base_name)
    if packet is not None:
        overload = entry.schema.overload_name or "default"
        packet._overloads.pop(overload, None)
        _uncache_attr(packet, overload)
        if not packet._overloads:
            del ns._packets[entry.schema.base_name]
            _uncache_attr(ns, entry.schema.base_name)


# ---------------------------------------------------------------------------------------------

def py_name(name):
    return name + "_" if keyword.iskeyword(name) else name


def default_value(arg):
    """A schema default as the Python object a kernel receives."""
    v = arg.default
    if arg.base == "MemoryFormat" and isinstance(v, str):
        from .._core import device as dev
        return getattr(dev, v)
    if arg.base == "ScalarType" and isinstance(v, str):
        from .._core import dtype as D
        return D.ALIASES[v]
    if arg.is_list and arg.list_size and isinstance(v, (int, float)) and not isinstance(v, bool):
        return (v,) * arg.list_size
    return v


def _make_normalizer(schema, qualname):
    """Generate ``normalize(*args, **kwargs) -> tuple`` with the schema's own Python signature."""
    params, names, consts = [], [], {}
    star = False
    for i, a in enumerate(schema.arguments):
        n = py_name(a.name)
        names.append(n)
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        if a.has_default():
            consts[f"_d{i}"] = default_value(a)
            params.append(f"{n}=_d{i}")
        else:
            params.append(n)
    # an int given for int[N] means N copies, as PyTorch's argument parser reads it
    expand = [f"    if {n}.__class__ is int: {n} = ({n},) * {a.list_size}\n"
              for n, a in zip(names, schema.arguments)
              if a.is_list and a.list_size and a.base in ("int", "SymInt")]
    # a Device argument may be given by name ("cuda:0"), as PyTorch's op calls take it
    expand += [f"    if {n}.__class__ is str: {n} = _device({n})\n"
               for n, a in zip(names, schema.arguments) if a.base == "Device" and not a.is_list]
    ret = ", ".join(names) + ("," if len(names) == 1 else "")
    src = f"def normalize({', '.join(params)}):\n{''.join(expand)}    return ({ret})\n"
    ns = dict(consts)
    from .._core.device import device
    ns["_device"] = device
    compile_source(src, f"<ember normalizer {qualname}>", ns)
    inner = ns["normalize"]
    renamed = {a.name: py_name(a.name) for a in schema.arguments if py_name(a.name) != a.name}

    def normalize(*args, **kwargs):
        if renamed:
            kwargs = {renamed.get(k, k): v for k, v in kwargs.items()}
        try:
            return inner(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{qualname}() {str(e).partition(') ')[2] or e}; schema: {schema}") from None
    normalize.check_types = functools.partial(_check_types, schema, qualname)
    return normalize


# The TorchScript type names PyTorch's op calls print for schema types
_JIT_TYPES = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float",
              "Scalar": "number", "bool": "bool", "str": "str"}


def _fits(base, v):
    """Whether PyTorch's op call takes ``v`` for a (non-list) value of schema type ``base``:
    a bool passes for an int and an int for a bool, a number for a Tensor, a tensor is no
    number."""
    from .bindings import is_int, is_number
    from .._core.symint import SymBool, SymFloat
    if base == "Tensor":  # (a number becomes a wrapped-number tensor)
        return hasattr(v, "_keyset") or is_number(v)
    if base in ("int", "SymInt", "bool"):
        return is_int(v) or isinstance(v, (bool, np.bool_, SymBool))
    if base == "str":
        return isinstance(v, str)
    return (is_number(v) or isinstance(v, (SymFloat, SymBool))) and not (
        base == "float" and isinstance(v, complex))


def _check_types(schema, qualname, values):
    """PyTorch's check of an op call's arguments against the schema (the types in
    ``_JIT_TYPES``; others pass): its RuntimeError for the first that does not fit."""
    for i, (a, v) in enumerate(zip(schema.arguments, values)):
        t = _JIT_TYPES.get(a.base)
        # (PyTorch's op calls take None for a bool; argsort.stable's samples pass it)
        if t is None or v is None and (a.optional or a.base == "bool"):
            continue
        if not a.is_list:
            fits = _fits(a.base, v)
        elif isinstance(v, (list, tuple)):
            fits = all(_fits(a.base, x) or x is None and a.elem_optional for x in v)
        else:  # an int for int[N] means N copies
            fits = a.list_size is not None and a.base in ("int", "SymInt") and _fits(a.base, v)
        if not fits:
            if a.is_list:
                t = f"List[{t}]"
            if a.optional:
                t = f"Optional[{t}]"
            raise RuntimeError(f"{qualname.partition('.')[0]}() Expected a value of type '{t}' "
                               f"for argument '{a.name}' but instead found type "
                               f"'{type(v).__name__}'.\nPosition: {i}\nValue: {v!r}\n"
                               f"Declaration: {schema}") from None

"""``ember.utils._pytree``: nested containers as (leaves, structure) pairs, PyTorch's Python pytree.

A pytree is a tree of registered containers (tuple, list, dict, OrderedDict, defaultdict, deque,
any namedtuple, and whatever :func:`register_pytree_node`, :func:`register_dataclass` or
:func:`register_constant` adds) whose other values, ``None`` included, are the leaves.
``tree_flatten`` returns the leaves left to right plus a :class:`TreeSpec`; ``tree_unflatten``
rebuilds the same structure around new leaves; the ``*_with_path`` functions also give each leaf's
key path (``MappingKey``/``SequenceKey``/``GetAttrKey``, printed by :func:`keystr`).
``treespec_dumps``/``treespec_loads`` write a spec as PyTorch's JSON (protocol 1), so a spec
written by either library reads in the other.
"""
import dataclasses
import functools
import importlib
import importlib.metadata
import json
import re
import threading
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, Generic, Hashable, NamedTuple, Protocol, TypeVar

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext",
           "ToDumpableContextFn", "FromDumpableContextFn", "PyTreeSpec", "TreeSpec", "LeafSpec",
           "keystr", "key_get", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "treespec_dumps", "treespec_loads",
           "treespec_pprint", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
           "is_structseq", "is_structseq_class", "is_structseq_instance"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

Context = Any
PyTree = Any
FlattenFn = Callable[[PyTree], tuple[list[Any], Context]]
UnflattenFn = Callable[[Iterable[Any], Context], PyTree]
DumpableContext = Any  # anything json can write
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
FlattenWithKeysFn = Callable[[PyTree], tuple[list[tuple[Any, Any]], Any]]
FlattenFunc, UnflattenFunc, FlattenWithKeysFunc = FlattenFn, UnflattenFn, FlattenWithKeysFn

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"

# torch.utils._cxx_pytree exists only with optree >= 0.13 installed; ember's says the same.
_optree_minimum_version = "0.13.0"
try:
    _optree_version = importlib.metadata.version("optree")
except importlib.metadata.PackageNotFoundError:
    _optree_version = "0.0.0a0"
_cxx_pytree_exists = _cxx_pytree_dynamo_traceable = \
    tuple(map(int, re.match(r"(\d+)\.(\d+)", _optree_version).groups())) >= (0, 13)


def _deprecated(message):
    """Mark a function as PyTorch marks it with ``typing_extensions.deprecated``: each call warns
    ``message`` as a FutureWarning at the caller."""
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            warnings.warn(message, FutureWarning, stacklevel=2)
            return func(*args, **kwargs)
        return wrapper
    return decorate


class KeyEntry(Protocol):
    """One step of a key path: hashable, printable, and ``get(parent)`` returns the child."""
    def __hash__(self) -> int: ...

    def __eq__(self, other: object) -> bool: ...

    def __str__(self) -> str: ...

    def get(self, parent: Any) -> Any: ...


KeyPath = tuple[KeyEntry, ...]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: FlattenFn  # node -> (children, context)
    unflatten_fn: UnflattenFn  # (children, context) -> node
    flatten_with_keys_fn: FlattenWithKeysFn | None  # node -> ([(key, child)], context)


class _SerializeNodeDef(NamedTuple):
    typ: type
    serialized_type_name: str
    to_dumpable_context: ToDumpableContextFn | None
    from_dumpable_context: FromDumpableContextFn | None


_NODE_REGISTRY_LOCK = threading.RLock()
SUPPORTED_NODES: dict[type, NodeDef] = {}
SUPPORTED_SERIALIZED_TYPES: dict[type, _SerializeNodeDef] = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict[str, type] = {}
CONSTANT_NODES: set[type] = set()


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Make ``cls`` a container: ``flatten_fn(node) -> (children, context)``,
    ``unflatten_fn(children, context) -> node``; ``flatten_with_keys_fn`` gives the children
    with their keys (the ``*_with_path`` functions need it), ``serialized_type_name`` and the
    context converters let ``treespec_dumps`` write the node."""
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
        _private_register_pytree_node(
            cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
            to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
            flatten_with_keys_fn=flatten_with_keys_fn)


def _private_register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                                  to_dumpable_context=None, from_dumpable_context=None,
                                  flatten_with_keys_fn=None):
    """:func:`register_pytree_node` that overwrites an earlier registration (with a warning)."""
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            warnings.warn(f"{cls} is already registered as pytree node. "
                          "Overwriting the previous registration.", stacklevel=2)
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        if (to_dumpable_context is None) ^ (from_dumpable_context is None):
            raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                             "be None or registered.")
        if serialized_type_name is None:
            serialized_type_name = NO_SERIALIZED_TYPE_NAME_FOUND
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(
            cls, serialized_type_name, to_dumpable_context, from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[serialized_type_name] = cls


@_deprecated("`torch.utils._pytree._register_pytree_node` is deprecated. "
             "Please use `torch.utils._pytree.register_pytree_node` instead.")
def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None,
                          *, serialized_type_name=None, to_dumpable_context=None,
                          from_dumpable_context=None, flatten_with_keys_fn=None):
    if to_str_fn is not None or maybe_from_str_fn is not None:
        warnings.warn("`to_str_fn` and `maybe_from_str_fn` is deprecated. "
                      "Please use `to_dumpable_context` and `from_dumpable_context` instead.",
                      FutureWarning, stacklevel=3)
    _private_register_pytree_node(
        cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
        to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
        flatten_with_keys_fn=flatten_with_keys_fn)


def _deregister_pytree_node(cls):
    with _NODE_REGISTRY_LOCK:
        del SUPPORTED_NODES[cls]
        del SERIALIZED_TYPE_TO_PYTHON_TYPE[SUPPORTED_SERIALIZED_TYPES[cls].serialized_type_name]
        del SUPPORTED_SERIALIZED_TYPES[cls]
        CONSTANT_NODES.discard(cls)


def register_dataclass(cls, *, field_names=None, drop_field_names=None,
                       serialized_type_name=None):
    """Make ``cls``, built by passing its fields, a container of those fields (a dataclass's
    ``init`` fields unless ``field_names`` says; ``drop_field_names`` are left out). Fields that
    are None are kept in the context, not as leaves."""
    drop_field_names = drop_field_names or []
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError("field_names must be specified with a list of all fields used to "
                             f"initialize {cls}, as it is not a dataclass.")
    elif field_names is None:
        field_names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init}
        init_fields.difference_update(drop_field_names)
        if init_fields != set(field_names):
            msg = "field_names does not include all dataclass fields.\n"
            if missing := init_fields - set(field_names):
                msg += (f"Missing fields in `field_names`: {missing}. If you want to include "
                        "these fields in the pytree, please add them to `field_names`, "
                        "otherwise please add them to `drop_field_names`.\n")
            if unexpected := set(field_names) - init_fields:
                msg += (f"Unexpected fields in `field_names`: {unexpected}. Please remove these "
                        "fields, or add them to `drop_field_names`.\n")
            raise ValueError(msg)

    def flatten(obj):
        values, names, none_names = [], [], []
        for name in field_names:
            value = getattr(obj, name)
            if value is None:
                none_names.append(name)
            else:
                values.append(value)
                names.append(name)
        return values, [names, none_names]

    def unflatten(values, context):
        names, none_names = context
        return cls(**dict(zip(names, values, strict=True)), **dict.fromkeys(none_names))

    def flatten_with_keys(obj):
        values, (names, _) = flatten(obj)
        return [(GetAttrKey(k), v) for k, v in zip(names, values, strict=True)], names

    _private_register_pytree_node(cls, flatten, unflatten,
                                  serialized_type_name=serialized_type_name,
                                  flatten_with_keys_fn=flatten_with_keys)


@dataclasses.dataclass(frozen=True, slots=True)
class ConstantNode(Generic[T]):
    """The context of a :func:`register_constant` node: the value itself."""
    value: T


def _constant_flatten(x):
    return [], ConstantNode(x)


def _constant_unflatten(_, context):
    return context.value


def register_constant(cls):
    """Make instances of ``cls`` (hashable, with their own ``__eq__``) nodes with no leaves: the
    value travels in the spec."""
    if cls.__eq__ is object.__eq__:
        raise TypeError("register_constant(cls) expects `cls` to have a non-default `__eq__` "
                        "implementation.")
    # a class defining __eq__ without __hash__ gets __hash__ = None, not object's
    if cls.__hash__ is None:
        raise TypeError("register_constant(cls) expects `cls` to have a non-default `__hash__` "
                        "implementation.")
    with _NODE_REGISTRY_LOCK:
        _private_register_pytree_node(cls, _constant_flatten, _constant_unflatten,
                                      flatten_with_keys_fn=_constant_flatten)
        CONSTANT_NODES.add(cls)


def is_constant_class(cls):
    return isinstance(cls, type) and cls in CONSTANT_NODES


def _is_constant_holder(spec):
    return isinstance(spec._context, ConstantNode)


def _retrieve_constant(spec):
    if not _is_constant_holder(spec):
        raise AssertionError("spec does not correspond to a registered constant pytree")
    return tree_unflatten([], spec)


# -- key paths ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey(Generic[T]):
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True, slots=True)
class MappingKey(Generic[K, T]):
    key: K

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp):
    """A key path as the expression that reaches the leaf: ``['a'][0].x``."""
    return "".join([str(k) for k in kp])


def key_get(obj, kp):
    for k in kp:
        obj = k.get(obj)
    return obj


# -- namedtuples and structseqs (optree's tests) ------------------------------------------------

def is_namedtuple(obj):
    """Whether ``obj`` is a namedtuple class or an instance of one."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_class(cls):
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(field) is str for field in cls._fields)
            and callable(getattr(cls, "_make", None))
            and callable(getattr(cls, "_asdict", None)))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


@_deprecated("torch.utils._pytree._is_namedtuple_instance is private and will be removed in a "
             "future release. Please use torch.utils._pytree.is_namedtuple_instance instead.")
def _is_namedtuple_instance(tree):
    return is_namedtuple_instance(tree)


Py_TPFLAGS_BASETYPE = 1 << 10  # CPython: the type may be subclassed


def is_structseq(obj):
    """Whether ``obj`` is a C-level PyStructSequence class (``os.stat_result``) or instance."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls):
    return (isinstance(cls, type) and cls.__bases__ == (tuple,)
            and isinstance(getattr(cls, "n_fields", None), int)
            and isinstance(getattr(cls, "n_sequence_fields", None), int)
            and isinstance(getattr(cls, "n_unnamed_fields", None), int)
            and not cls.__flags__ & Py_TPFLAGS_BASETYPE)


def is_structseq_instance(obj):
    return is_structseq_class(type(obj))


# -- the built-in containers ---------------------------------------------------------------------

def _seq_keys(values):
    return [(SequenceKey(i), v) for i, v in enumerate(values)]


def _map_keys(keys, values):
    return [(MappingKey(k), v) for k, v in zip(keys, values, strict=True)]


def _tuple_flatten(d):
    return list(d), None


def _tuple_flatten_with_keys(d):
    return _seq_keys(d), None


def _tuple_unflatten(values, context):
    return tuple(values)


def _list_flatten(d):
    return d, None


def _list_flatten_with_keys(d):
    return _seq_keys(d), None


def _list_unflatten(values, context):
    return list(values)


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d):
    values, keys = _dict_flatten(d)
    return _map_keys(keys, values), keys


def _dict_unflatten(values, context):
    return dict(zip(context, values, strict=True))


def _namedtuple_flatten(d):
    return list(d), type(d)


def _namedtuple_flatten_with_keys(d):
    return [(GetAttrKey(f), v) for f, v in zip(type(d)._fields, d, strict=True)], type(d)


def _namedtuple_unflatten(values, context):
    return context(*values)


def _namedtuple_serialize(context):
    name = SUPPORTED_SERIALIZED_TYPES.get(context)
    if name is None:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {context} because we didn't register "
            "a serializated_type_name. Please register using `_register_namedtuple`.")
    if name.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {context} because we couldn't find a "
            "serializated_type_name. Please register using `_register_namedtuple`.")
    return name.serialized_type_name


def _namedtuple_deserialize(dumpable_context):
    if dumpable_context not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(
            f"Can't deserialize TreeSpec of namedtuple class {dumpable_context} because we "
            "couldn't find a serializated name.")
    return SERIALIZED_TYPE_TO_PYTHON_TYPE[dumpable_context]


def _register_namedtuple(cls, *, serialized_type_name):
    """Give the namedtuple class ``cls`` a name so that specs holding it can be serialized (it
    is a container either way)."""
    _private_register_pytree_node(
        cls, _namedtuple_flatten, _namedtuple_unflatten,
        serialized_type_name=serialized_type_name, to_dumpable_context=_namedtuple_serialize,
        from_dumpable_context=_namedtuple_deserialize,
        flatten_with_keys_fn=_namedtuple_flatten_with_keys)


def _ordereddict_flatten(d):
    return list(d.values()), list(d.keys())


def _ordereddict_flatten_with_keys(d):
    values, keys = _ordereddict_flatten(d)
    return _map_keys(keys, values), keys


def _ordereddict_unflatten(values, context):
    return OrderedDict(zip(context, values, strict=True))


_odict_flatten, _odict_unflatten = _ordereddict_flatten, _ordereddict_unflatten


def _defaultdict_flatten(d):
    values, keys = _dict_flatten(d)
    return values, [d.default_factory, keys]


def _defaultdict_flatten_with_keys(d):
    values, context = _defaultdict_flatten(d)
    return _map_keys(context[1], values), context


def _defaultdict_unflatten(values, context):
    default_factory, keys = context
    return defaultdict(default_factory, _dict_unflatten(values, keys))


def _defaultdict_serialize(context):
    default_factory, keys = context
    return {"default_factory_module": default_factory.__module__,
            "default_factory_name": default_factory.__qualname__,
            "dict_context": keys}


def _defaultdict_deserialize(dumpable_context):
    if not isinstance(dumpable_context, dict):
        raise AssertionError("dumpable_context must be a dict")
    expected_keys = {"default_factory_module", "default_factory_name", "dict_context"}
    if set(dumpable_context) != expected_keys:
        raise AssertionError(f"dumpable_context keys must be {expected_keys}, "
                             f"got {set(dumpable_context)}")
    module, name = dumpable_context["default_factory_module"], \
        dumpable_context["default_factory_name"]
    if not isinstance(module, str):
        raise AssertionError("default_factory_module must be a string")
    if not isinstance(name, str):
        raise AssertionError("default_factory_name must be a string")
    return [getattr(importlib.import_module(module), name), dumpable_context["dict_context"]]


def _deque_flatten(d):
    return list(d), d.maxlen


def _deque_flatten_with_keys(d):
    return _seq_keys(d), d.maxlen


def _deque_unflatten(values, context):
    return deque(values, maxlen=context)


_private_register_pytree_node(tuple, _tuple_flatten, _tuple_unflatten,
                              serialized_type_name="builtins.tuple",
                              flatten_with_keys_fn=_tuple_flatten_with_keys)
_private_register_pytree_node(list, _list_flatten, _list_unflatten,
                              serialized_type_name="builtins.list",
                              flatten_with_keys_fn=_list_flatten_with_keys)
_private_register_pytree_node(dict, _dict_flatten, _dict_unflatten,
                              serialized_type_name="builtins.dict",
                              flatten_with_keys_fn=_dict_flatten_with_keys)
# every namedtuple class is a node, under this one key: the class travels as the context
_private_register_pytree_node(namedtuple, _namedtuple_flatten, _namedtuple_unflatten,
                              serialized_type_name="collections.namedtuple",
                              to_dumpable_context=_namedtuple_serialize,
                              from_dumpable_context=_namedtuple_deserialize,
                              flatten_with_keys_fn=_namedtuple_flatten_with_keys)
_private_register_pytree_node(OrderedDict, _ordereddict_flatten, _ordereddict_unflatten,
                              serialized_type_name="collections.OrderedDict",
                              flatten_with_keys_fn=_ordereddict_flatten_with_keys)
_private_register_pytree_node(defaultdict, _defaultdict_flatten, _defaultdict_unflatten,
                              serialized_type_name="collections.defaultdict",
                              to_dumpable_context=_defaultdict_serialize,
                              from_dumpable_context=_defaultdict_deserialize,
                              flatten_with_keys_fn=_defaultdict_flatten_with_keys)
_private_register_pytree_node(deque, _deque_flatten, _deque_unflatten,
                              serialized_type_name="collections.deque",
                              flatten_with_keys_fn=_deque_flatten_with_keys)

STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})


def _get_node_type(tree):
    """The registry key of ``tree``: its type, or ``namedtuple`` for every namedtuple (even one
    registered by itself, as specs everywhere expect)."""
    node_type = type(tree)
    return namedtuple if is_namedtuple_class(node_type) else node_type


def tree_is_leaf(tree, is_leaf=None):
    """Whether ``tree`` is a leaf: ``is_leaf(tree)`` says so, or it is no registered node."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


@_deprecated("torch.utils._pytree._is_leaf is private and will be removed in a future release. "
             "Please use torch.utils._pytree.tree_is_leaf instead.")
def _is_leaf(tree, is_leaf=None):
    return tree_is_leaf(tree, is_leaf=is_leaf)


# -- TreeSpec ------------------------------------------------------------------------------------

_setattr = object.__setattr__  # how TreeSpec.__init__ sets the fields of a frozen spec


@dataclasses.dataclass(init=False, frozen=True, eq=False, repr=False, slots=True)
class TreeSpec:
    """The structure of a pytree: the root's node type (None for a leaf), its context (dict
    keys, the namedtuple class, ...) and one spec per child."""
    type: Any
    _context: Context
    _children: list
    num_nodes: int
    num_leaves: int
    num_children: int

    def __init__(self, type, context, children_specs):
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if children_specs:
                raise AssertionError("leaf node should not have children")
            num_nodes = num_leaves = 1
        else:
            num_nodes, num_leaves = 1, 0
            for child in children_specs:
                num_nodes += child.num_nodes
                num_leaves += child.num_leaves
        _setattr(self, "type", type)
        _setattr(self, "_context", context)
        _setattr(self, "_children", children_specs)
        _setattr(self, "num_nodes", num_nodes)
        _setattr(self, "num_leaves", num_leaves)
        _setattr(self, "num_children", len(children_specs))

    def __repr__(self, indent=0):
        prefix = f"TreeSpec({self.type.__name__}, {self._context}, ["
        children = ""
        if self.num_children:
            indent += 2
            children += self._children[0].__repr__(indent)
            children += "," if self.num_children > 1 else ""
            children += ",".join(["\n" + " " * indent + c.__repr__(indent)
                                  for c in self._children[1:]])
        return prefix + children + "])"

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        # types compare by printed name, as PyTorch's: a class defined again (a reloaded module)
        # still matches
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        node_type, context = self.type, self._context
        if node_type is defaultdict:
            context = (context[0], tuple(context[1]))
        elif node_type in (dict, OrderedDict):
            context = tuple(context)
        elif isinstance(context, ConstantNode):
            context = context.value
        elif node_type is not None and node_type not in BUILTIN_TYPES:
            context = None  # a custom node's context may not hash; equal specs still hash alike
        return hash((node_type, context, tuple(self._children)))

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        warnings.warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` to "
                      "access a single child, or `treespec.children()` to get all children.",
                      FutureWarning, stacklevel=2)
        return self._children

    def is_leaf(self):
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self):
        return self._children.copy()

    def child(self, index):
        return self._children[index]

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` at this spec's leaves (``tree`` has this spec as a prefix);
        ValueError where the structures differ."""
        subtrees = []
        _flatten_up_to(self, tree, subtrees)
        return subtrees

    def unflatten(self, leaves):
        """The tree of this structure holding ``leaves``."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return _build(self, iter(leaves))


PyTreeSpec = TreeSpec


class LeafSpec(TreeSpec):
    """The spec of a leaf (deprecated as a class: test ``spec.is_leaf()``)."""
    __slots__ = ()

    def __init__(self):
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use "
                      "`isinstance(treespec, TreeSpec) and treespec.is_leaf()` instead.",
                      FutureWarning, stacklevel=2)
        TreeSpec.__init__(self, None, None, [])

    def __repr__(self, indent=0):
        return "*"


# all leaves share one spec (made without LeafSpec's warning)
_LEAF_SPEC = object.__new__(LeafSpec)
TreeSpec.__init__(_LEAF_SPEC, None, None, [])


def treespec_leaf():
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /):
    children = list(iterable)
    if any(not isinstance(child, TreeSpec) for child in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping=(), /, **kwargs):
    dct = dict(mapping, **kwargs)
    if any(not isinstance(child, TreeSpec) for child in dct.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {dct!r}.")
    return TreeSpec(dict, list(dct.keys()), list(dct.values()))


def _is_pytreespec_instance(obj):
    return isinstance(obj, TreeSpec)


# The recursive helpers below are module-level functions: a nested function calling itself sits
# in a reference cycle with its closure and would keep the leaves (a compiled graph's output
# tensors among them) alive until the cyclic garbage collector ran, out of the caching
# allocator's reach.

def _flatten(node, is_leaf, leaves):
    """The TreeSpec of ``node``, its leaves appended to ``leaves``."""
    if is_leaf is not None and is_leaf(node):
        leaves.append(node)
        return _LEAF_SPEC
    node_type = _get_node_type(node)
    node_def = SUPPORTED_NODES.get(node_type)
    if node_def is None:
        leaves.append(node)
        return _LEAF_SPEC
    children, context = node_def.flatten_fn(node)
    return TreeSpec(node_type, context, [_flatten(c, is_leaf, leaves) for c in children])


def _build(spec, leaves):
    """The tree of ``spec`` with its leaves taken from the iterator ``leaves``."""
    if spec.is_leaf():
        return next(leaves)
    return SUPPORTED_NODES[spec.type].unflatten_fn([_build(c, leaves) for c in spec._children],
                                                   spec._context)


def _flatten_up_to(spec, node, subtrees):
    if spec.is_leaf():
        subtrees.append(node)
        return
    node_type = _get_node_type(node)
    if spec.type not in BUILTIN_TYPES:  # custom nodes must match exactly
        if node_type != spec.type:
            raise ValueError(f"Type mismatch; expected {spec.type!r}, but got {node_type!r}.")
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        if len(children) != spec.num_children:
            raise ValueError(f"Node arity mismatch; expected {spec.num_children}, "
                             f"but got {len(children)}.")
        if context != spec._context:
            raise ValueError(f"Node context mismatch for custom node type {spec.type!r}.")
    else:
        # the three dict types stand in for each other; their keys must match, in any order
        both_dicts = spec.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
        if not both_dicts and node_type != spec.type:
            raise ValueError(f"Node type mismatch; expected {spec.type!r}, "
                             f"but got {node_type!r}.")
        if len(node) != spec.num_children:
            raise ValueError(f"Node arity mismatch; expected {spec.num_children}, "
                             f"but got {len(node)}.")
        if both_dicts:
            keys = spec._context if spec.type is not defaultdict else spec._context[1]
            got, expected = set(node), set(keys)
            if got != expected:
                missing, extra = expected - got, got - expected
                message = ""
                if missing:
                    message += f"; missing key(s): {missing}"
                if extra:
                    message += f"; extra key(s): {extra}"
                raise ValueError(f"Node keys mismatch{message}.")
            children = [node[k] for k in keys]
        else:
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if node_type is not deque and context != spec._context:  # a deque's maxlen may differ
                raise ValueError(f"Node context mismatch for node type {spec.type!r}; "
                                 f"expected {spec._context!r}, but got {context!r}.")
    for subtree, subspec in zip(children, spec._children, strict=True):
        _flatten_up_to(subspec, subtree, subtrees)


def _collect(node, is_leaf, leaves):
    """Append the leaves of ``node`` to ``leaves``."""
    if is_leaf is not None and is_leaf(node):
        leaves.append(node)
        return
    node_def = SUPPORTED_NODES.get(_get_node_type(node))
    if node_def is None:
        leaves.append(node)
        return
    for child in node_def.flatten_fn(node)[0]:
        _collect(child, is_leaf, leaves)


def _generate_key_paths(key_path, tree, is_leaf=None):
    if is_leaf and is_leaf(tree):
        yield key_path, tree
        return
    node_type = _get_node_type(tree)
    handler = SUPPORTED_NODES.get(node_type)
    if not handler:
        yield key_path, tree
        return
    if not handler.flatten_with_keys_fn:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. "
                         "Please pass a flatten_with_keys_fn argument to register_pytree_node.")
    for k, c in handler.flatten_with_keys_fn(tree)[0]:
        yield from _generate_key_paths((*key_path, k), c, is_leaf)


# -- flatten, unflatten, map ---------------------------------------------------------------------

def tree_flatten(tree, is_leaf=None):
    """(leaves left to right, TreeSpec)."""
    leaves = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """The tree of ``treespec`` around ``leaves`` (the two arguments may come swapped)."""
    if not _is_pytreespec_instance(treespec):
        if not _is_pytreespec_instance(leaves):
            raise TypeError("Expected `treespec` to be an instance of PyTreeSpec but got item "
                            f"of type {type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)



def tree_iter(tree, is_leaf=None):
    """The leaves of ``tree``, lazily."""
    if tree_is_leaf(tree, is_leaf=is_leaf):
        yield tree
    else:
        for child in SUPPORTED_NODES[_get_node_type(tree)].flatten_fn(tree)[0]:
            yield from tree_iter(child, is_leaf=is_leaf)


def tree_leaves(tree, is_leaf=None):
    leaves = []
    _collect(tree, is_leaf, leaves)
    return leaves


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf=is_leaf)[1]


def arg_tree_leaves(*args, **kwargs):
    """``tree_leaves((args, kwargs))``, without building the tuple."""
    leaves = []
    for a in args:
        _collect(a, None, leaves)
    for a in kwargs.values():
        _collect(a, None, leaves)
    return leaves


def tree_map(func, tree, *rests, is_leaf=None):
    """``func`` applied to every leaf of ``tree`` (and the subtrees of ``rests`` at the same
    places: ``tree`` must be a prefix of each), in ``tree``'s structure."""
    leaves, treespec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    return treespec.unflatten(map(func, *flat_args))


def tree_map_(func, tree, *rests, is_leaf=None):
    """``tree_map`` for its side effects; returns ``tree`` itself."""
    leaves, treespec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    deque(map(func, *flat_args), maxlen=0)
    return tree


def map_only(type_or_types_or_pred, /):
    """Decorator: the function runs on values of the given type(s), or for which the predicate
    holds; other values pass through."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x):
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """The leaves of ``treespec`` each paired with the leaf of the prefix ``tree`` above it
    (``0`` against ``[*, *]`` gives ``[0, 0]``: vmap's ``in_dims``), or None if ``tree`` is no
    prefix of it."""
    result = []

    def add_leaves(x, subtree):
        result.extend([x] * tree_structure(subtree, is_leaf=is_leaf).num_leaves)

    full_tree = tree_unflatten([0] * treespec.num_leaves, treespec)
    try:
        tree_map_(add_leaves, tree, full_tree, is_leaf=is_leaf)
    except ValueError:
        return None
    return result


def tree_flatten_with_path(tree, is_leaf=None):
    """``tree_flatten`` with each leaf's key path: ([(path, leaf)], TreeSpec)."""
    _, treespec = tree_flatten(tree, is_leaf)
    return list(_generate_key_paths((), tree, is_leaf)), treespec


def tree_leaves_with_path(tree, is_leaf=None):
    return list(_generate_key_paths((), tree, is_leaf))


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """``tree_map`` whose ``func`` takes the leaf's key path first."""
    keypath_leaves, treespec = tree_flatten_with_path(tree, is_leaf)
    columns = list(zip(*keypath_leaves, strict=True))
    columns += [treespec.flatten_up_to(r) for r in rests]
    return treespec.unflatten(func(*xs) for xs in zip(*columns, strict=True))


# -- serialization: PyTorch's JSON, protocol 1 ---------------------------------------------------

class EnumEncoder(json.JSONEncoder):
    """Writes an Enum member as ``{"__enum__": true, "fqn": "module:Class", "name": ...}``."""
    def default(self, obj):
        if isinstance(obj, Enum):
            return {"__enum__": True,
                    "fqn": f"{obj.__class__.__module__}:{obj.__class__.__qualname__}",
                    "name": obj.name}
        return super().default(obj)


def enum_object_hook(obj):
    if "__enum__" in obj:
        modname, _, classname = obj["fqn"].partition(":")
        enum_cls = importlib.import_module(modname)
        for attr in classname.split("."):
            enum_cls = getattr(enum_cls, attr)
        return enum_cls[obj["name"]]
    return obj


@dataclasses.dataclass
class _TreeSpecSchema:
    """A serialized TreeSpec: the node's serialized type name (None for a leaf), its context as
    a JSON string (or what ``to_dumpable_context`` made of it), and the children's schemas."""
    type: str | None
    context: DumpableContext
    children_spec: list


class _ProtocolFn(NamedTuple):
    treespec_to_json: Callable
    json_to_treespec: Callable


def _treespec_to_json(treespec):
    if treespec.is_leaf():
        return _TreeSpecSchema(None, None, [])
    if treespec.type not in SUPPORTED_SERIALIZED_TYPES:
        raise NotImplementedError(f"Serializing {treespec.type} in pytree is not registered.")
    node_def = SUPPORTED_SERIALIZED_TYPES[treespec.type]
    if node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(
            f"No registered serialization name for {treespec.type} found. Please update your "
            "_register_pytree_node call with a `serialized_type_name` kwarg.")
    if node_def.to_dumpable_context is None:
        try:
            context = json.dumps(treespec._context, cls=EnumEncoder)
        except TypeError as e:
            raise TypeError("Unable to serialize context. Please make the context json "
                            "dump-able, or register a custom serializer using "
                            "_register_pytree_node.") from e
    else:
        context = node_def.to_dumpable_context(treespec._context)
    return _TreeSpecSchema(node_def.serialized_type_name, context,
                           [_treespec_to_json(c) for c in treespec._children])


def _json_to_treespec(json_schema):
    if json_schema["type"] is None and json_schema["context"] is None \
            and len(json_schema["children_spec"]) == 0:
        return _LEAF_SPEC
    if json_schema["type"] not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(
            f"Deserializing {json_schema['type']} in pytree is not registered.")
    typ = SERIALIZED_TYPE_TO_PYTHON_TYPE[json_schema["type"]]
    node_def = SUPPORTED_SERIALIZED_TYPES[typ]
    if node_def.from_dumpable_context is None:
        try:
            context = json.loads(json_schema["context"], object_hook=enum_object_hook)
        except TypeError as e:
            raise TypeError("Unable to deserialize context. Please make the context json "
                            "load-able, or register a custom serializer using "
                            "_register_pytree_node.") from e
    else:
        context = node_def.from_dumpable_context(json_schema["context"])
    return TreeSpec(typ, context, [_json_to_treespec(c) for c in json_schema["children_spec"]])


_SUPPORTED_PROTOCOLS = {1: _ProtocolFn(_treespec_to_json, _json_to_treespec)}


def treespec_dumps(treespec, protocol=None):
    """``treespec`` as a JSON string: ``[protocol, {"type", "context", "children_spec"}]``."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError("Expected `treespec` to be an instance of PyTreeSpec but got item of "
                        f"type {type(treespec)}.")
    if protocol is None:
        protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL
    if protocol not in _SUPPORTED_PROTOCOLS:
        raise ValueError(f"Unknown protocol {protocol}. "
                         f"Available protocols: {list(_SUPPORTED_PROTOCOLS.keys())}")
    json_spec = _SUPPORTED_PROTOCOLS[protocol].treespec_to_json(treespec)
    return json.dumps((protocol, dataclasses.asdict(json_spec)), cls=EnumEncoder)


@functools.lru_cache
def treespec_loads(serialized):
    protocol, json_schema = json.loads(serialized)
    if protocol not in _SUPPORTED_PROTOCOLS:
        raise ValueError(f"Unknown protocol {protocol}. "
                         f"Available protocols: {list(_SUPPORTED_PROTOCOLS.keys())}")
    return _SUPPORTED_PROTOCOLS[protocol].json_to_treespec(json_schema)


class _Asterisk(str):
    """``*`` printed without quotes: the leaves of ``treespec_pprint``'s dummy tree."""
    __slots__ = ()

    def __new__(cls):
        return super().__new__(cls, "*")

    def __repr__(self):
        return "*"


_asterisk = _Asterisk()


def treespec_pprint(treespec):
    """The spec's tree with ``*`` at its leaves, as Python prints it: ``([*, *], {'a': *})``."""
    return repr(tree_unflatten([_asterisk] * treespec.num_leaves, treespec))

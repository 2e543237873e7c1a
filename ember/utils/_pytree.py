"""``ember.utils._pytree``: nested containers as (leaves, structure) pairs, PyTorch's Python pytree.

A pytree is a tree of registered containers (tuple, list, dict, OrderedDict, defaultdict, deque,
namedtuple, and anything added with :func:`register_pytree_node`) whose non-container values are
the leaves. ``tree_flatten`` returns the leaves left to right plus a :class:`TreeSpec`;
``tree_unflatten`` rebuilds the same structure around new leaves. ``__torch_dispatch__`` handlers
use ``tree_map`` to unwrap and re-wrap every tensor in ``args``/``kwargs``.
"""
import collections
import dataclasses
from typing import Any, Callable, NamedTuple

__all__ = ["PyTree", "TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten",
           "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_map_",
           "tree_map_only", "tree_all", "tree_any", "tree_all_only", "tree_any_only",
           "treespec_pprint", "SUPPORTED_NODES"]

PyTree = Any


class NodeDef(NamedTuple):
    type: type
    flatten_fn: Callable  # node -> (children, context)
    unflatten_fn: Callable  # (children, context) -> node


SUPPORTED_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Make ``cls`` a container: ``flatten_fn(node) -> (children, context)`` and
    ``unflatten_fn(children, context) -> node``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_unflatten(values, context):
    return dict(zip(context, values))


def _ordered_dict_unflatten(values, context):
    return collections.OrderedDict(zip(context, values))


def _defaultdict_flatten(d):
    return list(d.values()), [d.default_factory, list(d.keys())]


def _defaultdict_unflatten(values, context):
    factory, keys = context
    return collections.defaultdict(factory, dict(zip(keys, values)))


def _namedtuple_unflatten(values, context):
    return context(*values)


register_pytree_node(tuple, lambda t: (list(t), None), lambda v, c: tuple(v))
register_pytree_node(list, lambda t: (list(t), None), lambda v, c: list(v))
register_pytree_node(dict, _dict_flatten, _dict_unflatten)
register_pytree_node(collections.OrderedDict, _dict_flatten, _ordered_dict_unflatten)
register_pytree_node(collections.defaultdict, _defaultdict_flatten, _defaultdict_unflatten)
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen),
                     lambda v, c: collections.deque(v, maxlen=c))


class _NamedTupleKind:
    """Stands for "any namedtuple class" in a TreeSpec (the class itself is the context)."""
    __name__ = "namedtuple"


namedtuple = _NamedTupleKind()


def _is_namedtuple_instance(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields") and type(x) is not tuple


def _node_type(x):
    t = type(x)
    if t in SUPPORTED_NODES:
        return t
    if _is_namedtuple_instance(x):
        return namedtuple
    return None


def _flatten_node(kind, x):
    if kind is namedtuple:
        return list(x), type(x)
    return SUPPORTED_NODES[kind].flatten_fn(x)


def _unflatten_node(kind, children, context):
    if kind is namedtuple:
        return _namedtuple_unflatten(children, context)
    return SUPPORTED_NODES[kind].unflatten_fn(children, context)


@dataclasses.dataclass(eq=True)
class TreeSpec:
    """The structure of a pytree: container type, its context (dict keys, namedtuple class) and
    one child spec per child."""
    type: Any
    context: Any
    children_specs: list

    def __post_init__(self):
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self):
        return False

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __repr__(self, indent=0):
        prefix = f"TreeSpec({self.type.__name__}, {self.context}, ["
        children = ""
        if self.num_children:
            indent += 2
            children += self.children_specs[0].__repr__(indent)
            children += "," if self.num_children > 1 else ""
            children += ",".join("\n" + " " * indent + c.__repr__(indent)
                                 for c in self.children_specs[1:])
        return prefix + children + "])"


class LeafSpec(TreeSpec):
    def __init__(self):
        super().__init__(None, None, [])
        self.num_nodes = 1
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __repr__(self, indent=0):
        return "*"


_LEAF = LeafSpec()


def _is_leaf(x, is_leaf):
    return (is_leaf is not None and is_leaf(x)) or _node_type(x) is None


def tree_flatten(tree, is_leaf=None):
    """(leaves left to right, TreeSpec)."""
    leaves = []
    spec = _walk(tree, is_leaf, leaves)
    return leaves, spec


def _walk(node, is_leaf, leaves):
    """The TreeSpec of ``node``, its leaves appended to ``leaves`` (module-level: see
    :func:`_build`)."""
    if _is_leaf(node, is_leaf):
        leaves.append(node)
        return _LEAF
    kind = _node_type(node)
    children, context = _flatten_node(kind, node)
    return TreeSpec(kind, context, [_walk(c, is_leaf, leaves) for c in children])


def tree_unflatten(leaves, treespec):
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the "
                         f"spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    return _build(treespec, iter(leaves))


def _build(spec, leaves):
    """The tree of ``spec`` with its leaves taken from the iterator ``leaves``. (A module-level
    function: a nested one calling itself would sit in a reference cycle with its closure and
    keep the leaves, a compiled graph's output tensors among them, alive until the cyclic
    garbage collector ran, and their memory out of the caching allocator's reach.)"""
    if spec.is_leaf():
        return next(leaves)
    return _unflatten_node(spec.type, [_build(c, leaves) for c in spec.children_specs],
                           spec.context)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """Apply ``func`` to every leaf (and the matching leaves of ``rests``), keep the structure."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func, tree, *rests, is_leaf=None):
    """``tree_map`` for its side effects; returns ``tree`` itself."""
    leaves = tree_leaves(tree, is_leaf)
    others = [tree_leaves(r) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _only(type_or_types, func):
    def wrapped(x):
        return func(x) if isinstance(x, type_or_types) else x
    return wrapped


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """``tree_map`` applied only to leaves of the given type(s); other leaves pass through."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def treespec_pprint(treespec):
    return repr(treespec)

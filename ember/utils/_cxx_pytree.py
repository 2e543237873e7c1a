"""``ember.utils._cxx_pytree``: PyTorch's optree-backed pytree module, importable exactly when
PyTorch's is (``optree>=0.13`` installed; otherwise the same ImportError).

ember keeps one pytree registry, the Python one: this module is :mod:`ember.utils._pytree`'s API
under the C++ module's name, so a node registered through either is known to both. Its specs are
``_pytree.TreeSpec`` values, and ``None`` is a leaf as there (optree's treespecs count ``None`` as
a node with no children).
"""
from . import _pytree as python_pytree

if not python_pytree._cxx_pytree_dynamo_traceable:
    raise ImportError(
        "torch.utils._cxx_pytree depends on "
        f"`optree>={python_pytree._optree_minimum_version}`, which is an optional dependency of "
        "PyTorch. To use it, please upgrade your optree package via "
        "`python3 -m pip install --upgrade optree`")

from ._pytree import (  # noqa: E402  (only once optree is known present)
    Context, DumpableContext, FlattenFn, FromDumpableContextFn, LeafSpec, PyTree, PyTreeSpec,
    ToDumpableContextFn, TreeSpec, UnflattenFn, is_namedtuple, is_namedtuple_class,
    is_namedtuple_instance, is_structseq, is_structseq_class, is_structseq_instance, key_get,
    keystr, register_pytree_node, tree_all, tree_all_only, tree_any, tree_any_only, tree_flatten,
    tree_flatten_with_path, tree_is_leaf, tree_iter, tree_leaves, tree_leaves_with_path, tree_map,
    tree_map_, tree_map_only, tree_map_only_, tree_map_with_path, tree_structure, tree_unflatten,
    treespec_dumps, treespec_loads, treespec_pprint)

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext",
           "ToDumpableContextFn", "FromDumpableContextFn", "PyTreeSpec", "TreeSpec", "LeafSpec",
           "keystr", "key_get", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "treespec_dumps", "treespec_loads",
           "treespec_pprint", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
           "is_structseq", "is_structseq_class", "is_structseq_instance"]

# the other names PyTorch's module defines
KeyPath = python_pytree.KeyPath
FlattenWithKeysFn = python_pytree.FlattenWithKeysFn
map_only = python_pytree.map_only
treespec_leaf = python_pytree.treespec_leaf
treespec_tuple = python_pytree.treespec_tuple
treespec_dict = python_pytree.treespec_dict
_register_pytree_node = python_pytree._register_pytree_node
_private_register_pytree_node = python_pytree._private_register_pytree_node
_is_pytreespec_instance = python_pytree._is_pytreespec_instance
_broadcast_to_and_flatten = python_pytree._broadcast_to_and_flatten

"""``ember.fx._pytree``: flatten a value by a TreeSpec it is expected to match, PyTorch's
``torch.fx._pytree``.

A graph module generated with a pytree input spec flattens its arguments with
:func:`tree_flatten_spec`: the spec's own keys and arity pick the children (a dict is read by the
spec's keys, a sequence by its first ``num_children`` items), so extra keys or trailing items of
the value are ignored. Node types with no spec flattener here must flatten to exactly ``spec``.
"""
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from ..utils._pytree import PyTree, TreeSpec, tree_flatten

FlattenFnSpec = Callable[[PyTree, TreeSpec], list[Any]]
FlattenFnExactMatchSpec = Callable[[PyTree, TreeSpec], bool]
FlattenFuncSpec, FlattenFuncExactMatchSpec = FlattenFnSpec, FlattenFnExactMatchSpec

SUPPORTED_NODES: dict[type, FlattenFnSpec] = {}
SUPPORTED_NODES_EXACT_MATCH: dict[type, FlattenFnExactMatchSpec | None] = {}


def register_pytree_flatten_spec(cls, flatten_fn_spec, flatten_fn_exact_match_spec=None):
    """``flatten_fn_spec(value, spec)`` gives the children of a ``cls`` value as ``spec`` reads
    them; ``flatten_fn_exact_match_spec(value, spec)`` says whether nothing was left out."""
    SUPPORTED_NODES[cls] = flatten_fn_spec
    SUPPORTED_NODES_EXACT_MATCH[cls] = flatten_fn_exact_match_spec


def _deregister_pytree_flatten_spec(cls):
    del SUPPORTED_NODES[cls]
    del SUPPORTED_NODES_EXACT_MATCH[cls]


def tree_flatten_spec(pytree, spec):
    """The leaves of ``pytree`` read by the structure ``spec``."""
    if spec.is_leaf():
        return [pytree]
    if spec.type in SUPPORTED_NODES:
        result = []
        for child, child_spec in zip(SUPPORTED_NODES[spec.type](pytree, spec), spec.children()):
            result += tree_flatten_spec(child, child_spec)
        return result
    flat_result, real_spec = tree_flatten(pytree)
    if spec != real_spec:
        raise RuntimeError(
            f"Real spec {real_spec} of object {pytree} is different from expected spec {spec}. "
            "Please file an issue at "
            "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml")
    return flat_result


def _dict_flatten_spec(d, spec):
    return [d[k] for k in spec.context]


def _list_flatten_spec(d, spec):
    return [d[i] for i in range(spec.num_children)]


def _tuple_flatten_spec(d, spec):
    return [d[i] for i in range(spec.num_children)]


def _namedtuple_flatten_spec(d, spec):
    return [d[i] for i in range(spec.num_children)]


def _dict_flatten_spec_exact_match(d, spec):
    return len(d) == spec.num_children


def _list_flatten_spec_exact_match(d, spec):
    return len(d) == spec.num_children


def _tuple_flatten_spec_exact_match(d, spec):
    return len(d) == spec.num_children


def _namedtuple_flatten_spec_exact_match(d, spec):
    return len(d) == spec.num_children


register_pytree_flatten_spec(dict, _dict_flatten_spec, _dict_flatten_spec_exact_match)
register_pytree_flatten_spec(list, _list_flatten_spec, _list_flatten_spec_exact_match)
register_pytree_flatten_spec(tuple, _tuple_flatten_spec, _tuple_flatten_spec_exact_match)
# ember's return types (torch.return_types) are namedtuples: this entry covers them too
register_pytree_flatten_spec(namedtuple, _namedtuple_flatten_spec,
                             _namedtuple_flatten_spec_exact_match)

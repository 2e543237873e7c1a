"""``immutable_list`` / ``immutable_dict``: the containers a Node keeps its arguments in, so that
arguments are only changed through the Node (which keeps the use lists right)."""
from ..utils._pytree import _dict_flatten_with_keys, _list_flatten_with_keys, register_pytree_node

__all__ = ["immutable_list", "immutable_dict"]


def _no_mutation(self, *args, **kwargs):
    raise NotImplementedError(f"'{type(self).__name__}' object does not support mutation. "
                              f"If you are attempting to modify the kwargs or args of a "
                              f"torch.fx.Node object,\ninstead create a new copy of it and "
                              f"assign the copy to the node:\n    new_args = ... # copy and "
                              f"mutate args\n    node.args = new_args\n")


class immutable_list(list):
    __delitem__ = __iadd__ = __imul__ = __setitem__ = append = clear = extend = insert = \
        pop = remove = reverse = sort = _no_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (tuple(iter(self)),))


class immutable_dict(dict):
    __delitem__ = __setitem__ = clear = pop = popitem = setdefault = update = __ior__ = \
        _no_mutation

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (iter(self.items()),))


register_pytree_node(immutable_list, lambda x: (list(x), None),
                     lambda values, ctx: immutable_list(values),
                     serialized_type_name="torch.fx.immutable_collections.immutable_list",
                     flatten_with_keys_fn=_list_flatten_with_keys)
register_pytree_node(immutable_dict, lambda d: (list(d.values()), list(d.keys())),
                     lambda values, keys: immutable_dict(zip(keys, values)),
                     serialized_type_name="torch.fx.immutable_collections.immutable_dict",
                     flatten_with_keys_fn=_dict_flatten_with_keys)

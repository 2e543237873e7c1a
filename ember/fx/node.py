"""``Node``: one instruction of an FX graph, and ``map_arg`` / ``map_aggregate`` over arguments.

A node is an op (``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
``call_module``, ``output``), a target and arguments in which other nodes appear. Nodes form a
doubly linked list owned by their :class:`~ember.fx.Graph`; each node keeps the nodes it reads
(``all_input_nodes``) and the nodes that read it (``users``), updated whenever its arguments
are assigned, so the graph's def-use chains are always exact.
"""
import builtins
import operator
import types

from .._core.api_name import as_ember
from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Argument = object
Target = object

_side_effectful_functions = set()


def has_side_effect(fn):
    """Mark ``fn`` as side-effectful: dead-code elimination keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


# aten ops that do something besides computing their result (PyTorch's _side_effectful_ops)
_SIDE_EFFECT_OPNAMES = {"_assert_async", "_assert_scalar", "_assert_tensor_metadata",
                        "sym_constrain_range", "sym_constrain_range_for_size", "_print",
                        "record_stream"}


def _qualified_name(func):
    """``module.name`` for a callable, with ember's op overloads as ``ember.ops.ns.op.overload``."""
    from .._ops.overload import OpOverload, OpOverloadPacket
    if isinstance(func, OpOverload):
        return f"ember.ops.{func._ns}.{func._opname}.{func._overloadname}"
    if isinstance(func, OpOverloadPacket):
        return f"ember.ops.{func._ns}.{func.__name__}"
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return f"builtins.{func.__name__}"
    if isinstance(func, (types.MethodDescriptorType, types.WrapperDescriptorType)) and \
            func is getattr(getattr(func, "__objclass__", None), func.__name__, None):
        return f"{as_ember(func.__objclass__.__module__)}.{func.__objclass__.__name__}.{func.__name__}"
    name = func.__name__
    if name == "<lambda>":
        # a lambda has no importable name: the source names it (or the object id)
        raise RuntimeError("Unable to represent lambda")
    module = _find_module_of(func)
    return f"{module}.{name}"


def _find_module_of(func):
    module = as_ember(getattr(func, "__module__", None))
    if module is None:
        self_ = getattr(func, "__self__", None)
        module = getattr(self_, "__name__", None) if isinstance(self_, types.ModuleType) else None
    if module is None:
        for guess in (operator, builtins):
            if getattr(guess, func.__name__, None) is func:
                return guess.__name__
    return module.replace("ember._ops", "ember.ops") if module else "builtins"


def _type_repr(obj):
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return f"{as_ember(obj.__module__)}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _format_arg(arg, max_list_len=float("inf")):
    if hasattr(arg, "_custom_fx_repr_fn"):
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{maybe_len}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        maybe_comma = "," if len(arg) == 1 else ""
        return f"({items}{maybe_comma}{maybe_len})"
    if isinstance(arg, dict):
        items = ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items())
        return f"{{{items}}}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One instruction; see the module docstring. Create nodes through :class:`Graph`."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in ("placeholder", "call_method", "call_module", "call_function",
                      "get_attr", "output", "root"):
            raise ValueError(f"Unexpected op {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}  # insertion-ordered set of the nodes read
        self._args = ()
        self._kwargs = {}
        self.users = {}  # insertion-ordered set of the nodes reading this one
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._sort_key = ()
        self._repr_fn = None
        self.meta = {}
        self.__update_args_kwargs(args, kwargs)

    # -- the linked list --------------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Move/insert node ``x`` just before this one."""
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Move/insert node ``x`` just after this one."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        # the node keeps its own links, so an iteration standing on it can go on
        p._next, n._prev = n, p

    # -- arguments and uses -----------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        self.args = self.args[:idx] + (arg,) + self.args[idx:]

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def __update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}

        def register(n):
            if n.graph is not self.graph and self.graph is not None:
                raise AssertionError(f"Node {n} is in a different graph from {self}")
            self._input_nodes.setdefault(n)
            n.users.setdefault(self)
            return n
        self._args = map_aggregate(new_args, lambda x: register(x) if isinstance(x, Node) else x)
        self._kwargs = map_aggregate(new_kwargs,
                                     lambda x: register(x) if isinstance(x, Node) else x)

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make every user read ``replace_with`` instead; returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     ".meta keys")
            replace_with.meta.update(self.meta)
        to_process = list(self.users)
        skipped = []
        for user in to_process:
            if not delete_user_cb(user):
                skipped.append(user)
                continue
            user.replace_input_with(self, replace_with)
        return [u for u in to_process if u not in skipped]

    def replace_input_with(self, old_input, new_input):
        """Swap every appearance of ``old_input`` in this node's arguments for ``new_input``."""
        def swap(n):
            return new_input if n is old_input else n
        self.__update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- metadata ---------------------------------------------------------------------------
    @property
    def stack_trace(self):
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random=True):
        """Whether dead-code elimination must keep this node although nobody reads it."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            if self.target in _side_effectful_functions:
                return True
            from .._ops.overload import OpOverload
            if isinstance(self.target, OpOverload):
                if self.target._schema.is_mutable:
                    return True  # writes one of its arguments
                if impure_random and "nondeterministic_seeded" in self.target.tags:
                    return True
                return self.target._opname in _SIDE_EFFECT_OPNAMES
            return False
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is None:
                return False
            target_mod = mod.get_submodule(self.target)
            return getattr(target_mod, "_is_impure", False)
        return False

    # -- printing ---------------------------------------------------------------------------
    def __repr__(self):
        if self._repr_fn:
            return self._repr_fn(self)
        return self.name

    def _pretty_print_target(self, target):
        if isinstance(target, str):
            return target
        if hasattr(target, "__module__"):
            name = getattr(target, "__name__", None)
            if name is None:
                return _qualified_name(target)
            if target.__module__ == "builtins":
                return f"builtins.{name}"
            if target.__module__ == "_operator":
                return f"operator.{name}"
        return _qualified_name(target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None, *,
                    include_tensor_metadata=False):
        """The node as one line of ``print(graph)``."""
        if self.op == "placeholder":
            arg_str = str(self.target)
            default = f"(default={self.args[0]})" if self.args else ""
            if placeholder_names is not None:
                placeholder_names.append(arg_str + default)
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={arg_str}]{default}")
        if self.op == "get_attr":
            typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def _rename(self, candidate):
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace._rename_object(self, name)


def map_arg(a, fn):
    """Apply ``fn`` to every Node in the argument structure ``a``."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of ``a`` (tuples, lists, dicts and slices are walked)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        # a namedtuple is rebuilt field by field
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)

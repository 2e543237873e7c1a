"""ember.utils._pytree (with ember.fx._pytree and ember.utils._cxx_pytree) against PyTorch's: the
leaves, specs (repr, hash, sizes), key paths, pprint and JSON of a set of trees, specs written by
one library read by the other, the registration helpers, and the errors for bad input."""
import collections
import dataclasses
import enum
import importlib
import os
import sys
import time
import warnings

import pytest

import ember.fx._pytree as fx_pytree
from ember.utils import _pytree as pytree

P = collections.namedtuple("P", "x y")


@dataclasses.dataclass
class Point:
    x: object
    y: object
    tag: object = None


@dataclasses.dataclass(frozen=True)
class Config:
    norm: str


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Box:
    """A custom node registered the way HuggingFace registers its ModelOutput: its own
    flatten/unflatten and the library's ``_dict_flatten_with_keys``."""
    def __init__(self, d):
        self.d = d

    def __getitem__(self, key):
        return self.d[key]

    def __eq__(self, other):
        return type(other) is Box and self.d == other.d

    def __repr__(self):
        return f"Box({self.d!r})"


class Tagged:
    """A custom node whose context is an Enum (written by PyTorch's EnumEncoder)."""
    def __init__(self, kind, value):
        self.kind, self.value = kind, value

    def __eq__(self, other):
        return type(other) is Tagged and (self.kind, self.value) == (other.kind, other.value)

    def __repr__(self):
        return f"Tagged({self.kind}, {self.value!r})"


class Unkeyed(list):
    """A node registered without a flatten_with_keys_fn."""


def _register(lib):
    lib.register_pytree_node(Box, lambda b: (list(b.d.values()), list(b.d.keys())),
                             lambda values, keys: Box(dict(zip(keys, values))),
                             serialized_type_name="test_pytree.Box",
                             flatten_with_keys_fn=lambda b: lib._dict_flatten_with_keys(b.d))
    lib.register_pytree_node(Tagged, lambda t: ([t.value], t.kind),
                             lambda values, kind: Tagged(kind, values[0]),
                             serialized_type_name="test_pytree.Tagged",
                             flatten_with_keys_fn=lambda t: ([(lib.GetAttrKey("value"),
                                                               t.value)], t.kind))
    lib.register_pytree_node(Unkeyed, lambda u: (list(u), None), lambda v, c: Unkeyed(v))
    lib.register_dataclass(Point, serialized_type_name="test_pytree.Point")
    lib.register_constant(Config)
    lib._register_namedtuple(P, serialized_type_name="test_pytree.P")


def _forget(lib, cls):
    """Undo a registration (``_deregister_pytree_node`` fails for a second class with no
    serialized name, in both libraries)."""
    lib.SUPPORTED_NODES.pop(cls, None)
    node_def = lib.SUPPORTED_SERIALIZED_TYPES.pop(cls, None)
    if node_def and lib.SERIALIZED_TYPE_TO_PYTHON_TYPE.get(node_def.serialized_type_name) is cls:
        del lib.SERIALIZED_TYPE_TO_PYTHON_TYPE[node_def.serialized_type_name]
    lib.CONSTANT_NODES.discard(cls)


@pytest.fixture(scope="module")
def tp(torch):
    """PyTorch's _pytree, both registries holding this file's node types for the module."""
    import torch.utils._pytree as tp
    for lib in (pytree, tp):
        _register(lib)
    yield tp
    for lib in (pytree, tp):
        for cls in (Box, Tagged, Unkeyed, Point, Config, P):
            _forget(lib, cls)


def trees():
    od = collections.OrderedDict(z=4, y=[5])
    return [
        {"b": [1, (2, None)], "a": P(3, od)},
        collections.defaultdict(list, {"k": [1, 2], "j": {}}),
        collections.deque([1, [2]], maxlen=4),
        [Point(1, [2, 3]), Point(4, None, tag="t")],
        {"box": Box({"u": 1, "v": (2,)}), "tag": Tagged(Color.RED, [7])},
        (Config("l2"), 8),
        None, 7, (), [], {},
    ]


def _errors(fn):
    """(exception type, message) of ``fn()``, or ("ok", result)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001  (the error is what is compared)
        return type(e), str(e)


@pytest.mark.parametrize("i", range(len(trees())))
def test_flatten_paths_and_specs_match_pytorch(tp, i):
    tree = trees()[i]
    e_leaves, e_spec = pytree.tree_flatten(tree)
    t_leaves, t_spec = tp.tree_flatten(tree)
    assert e_leaves == t_leaves
    assert repr(e_spec) == repr(t_spec)
    assert str(e_spec) == str(t_spec)
    assert hash(e_spec) == hash(t_spec)
    for attr in ("num_nodes", "num_leaves", "num_children"):
        assert getattr(e_spec, attr) == getattr(t_spec, attr)
    assert e_spec.is_leaf() == t_spec.is_leaf()
    assert [repr(c) for c in e_spec.children()] == [repr(c) for c in t_spec.children()]
    assert pytree.tree_unflatten(e_leaves, e_spec) == tree
    assert pytree.tree_unflatten(e_spec, e_leaves) == tree  # the two arguments swapped
    assert list(pytree.tree_iter(tree)) == list(tp.tree_iter(tree))
    assert pytree.treespec_pprint(e_spec) == tp.treespec_pprint(t_spec)
    assert pytree.tree_structure(tree) == e_spec

    e_paths, e_spec2 = pytree.tree_flatten_with_path(tree)
    t_paths, _ = tp.tree_flatten_with_path(tree)
    assert e_spec2 == e_spec
    assert [(repr(k), v) for k, v in e_paths] == [(repr(k), v) for k, v in t_paths]
    assert [pytree.keystr(k) for k, _ in e_paths] == [tp.keystr(k) for k, _ in t_paths]
    assert all(pytree.key_get(tree, k) is v for k, v in e_paths)
    assert [k for k, _ in pytree.tree_leaves_with_path(tree)] == [k for k, _ in e_paths]

    def f(path, x):
        return (pytree.keystr(path), x)

    def g(path, x):
        return (tp.keystr(path), x)
    assert pytree.tree_map_with_path(f, tree) == tp.tree_map_with_path(g, tree)

    def double(x):
        return x if x is None else x * 2
    assert pytree.tree_map(double, tree) == tp.tree_map(double, tree)

    # JSON: the same text, and each library reads the other's
    e_json, t_json = _errors(lambda: pytree.treespec_dumps(e_spec)), \
        _errors(lambda: tp.treespec_dumps(t_spec))
    assert e_json == t_json
    if e_json[0] == "ok":
        assert pytree.treespec_loads(t_json[1]) == e_spec
        assert tp.treespec_loads(e_json[1]) == t_spec
        assert repr(pytree.treespec_loads(e_json[1])) == repr(t_spec)


def test_deque_and_dict_order_and_none(tp):
    for tree in ({"b": 1, "a": 2}, collections.OrderedDict(b=1, a=2), {"a": None, "b": [None]}):
        assert pytree.tree_flatten(tree)[0] == tp.tree_flatten(tree)[0]
        assert repr(pytree.tree_structure(tree)) == repr(tp.tree_structure(tree))
    assert pytree.tree_flatten(None)[0] == tp.tree_flatten(None)[0] == [None]
    assert pytree.tree_is_leaf(None) and tp.tree_is_leaf(None)
    assert pytree.tree_is_leaf((1,), is_leaf=lambda x: isinstance(x, tuple))
    assert not pytree.tree_is_leaf({"c": None})


def test_is_leaf_and_only_helpers(tp):
    tree = {"a": (1, 2.0), "b": [3, "s", (4,)]}

    def leafy(x):
        return isinstance(x, tuple)
    for lib in (pytree, tp):
        assert lib.tree_flatten(tree, is_leaf=leafy)[0] == [(1, 2.0), 3, "s", (4,)]
    assert repr(pytree.tree_structure(tree, leafy)) == repr(tp.tree_structure(tree, leafy))
    assert pytree.tree_map_only(int, str, tree) == tp.tree_map_only(int, str, tree)
    assert pytree.tree_map_only((int, float), lambda x: -x, tree) == \
        tp.tree_map_only((int, float), lambda x: -x, tree)
    assert pytree.tree_map_only(lambda x: x == 3, str, tree) == \
        tp.tree_map_only(lambda x: x == 3, str, tree)
    assert pytree.tree_map_only(int | str, type, tree) == tp.tree_map_only(int | str, type, tree)
    seen = []
    assert pytree.tree_map_only_(int, seen.append, tree) is tree
    assert seen == [1, 3, 4]
    out = []
    assert pytree.tree_map_(lambda x, y: out.append((x, y)), [1, 2], [[10], 20]) == [1, 2]
    assert out == [(1, [10]), (2, 20)]
    for pred in (lambda x: x != "s", lambda x: isinstance(x, int)):
        assert pytree.tree_all(pred, tree) == tp.tree_all(pred, tree)
        assert pytree.tree_any(pred, tree) == tp.tree_any(pred, tree)
        assert pytree.tree_all_only(int, lambda x: x > 0, tree) == \
            tp.tree_all_only(int, lambda x: x > 0, tree)
        assert pytree.tree_any_only(str, lambda x: x == "t", tree) == \
            tp.tree_any_only(str, lambda x: x == "t", tree)
    assert pytree.arg_tree_leaves(1, [2, (3,)], k={"a": 4}) == \
        tp.arg_tree_leaves(1, [2, (3,)], k={"a": 4})
    with pytest.raises(TypeError, match="Argument must be a type"):
        pytree.map_only(3)


def test_tree_map_with_prefix_trees(tp):
    cases = [([5, 6], [[7, 9], [1, 2]]),
             ({"a": 1, "b": 2}, collections.OrderedDict(b=[3], a=4)),
             ({"a": 1}, collections.defaultdict(int, {"a": (2, 3)})),
             (collections.deque([1]), collections.deque([2], maxlen=9))]
    for tree, rest in cases:
        assert pytree.tree_map(lambda x, y: (x, y), tree, rest) == \
            tp.tree_map(lambda x, y: (x, y), tree, rest)
        e_spec, t_spec = pytree.tree_structure(tree), tp.tree_structure(tree)
        assert e_spec.flatten_up_to(rest) == t_spec.flatten_up_to(rest)
    spec = pytree.tree_structure({"a": [1, 2], "b": 3})
    assert pytree._broadcast_to_and_flatten({"a": 0, "b": 1}, spec) == \
        tp._broadcast_to_and_flatten({"a": 0, "b": 1}, tp.tree_structure({"a": [1, 2], "b": 3}))
    assert pytree._broadcast_to_and_flatten({"a": 0, "b": 1}, spec) == [0, 0, 1]
    assert pytree._broadcast_to_and_flatten(5, spec) == [5, 5, 5]
    assert pytree._broadcast_to_and_flatten([0, 1], spec) is None


MISMATCHES = [
    ([1, 2], (1, 2)),  # node type
    ([1, 2], [1]),  # arity
    ({"a": 1, "b": 2}, {"a": 1, "c": 2}),  # keys
    (P(1, 2), collections.namedtuple("Q", "x y")(1, 2)),  # namedtuple class (the context)
    (Point(1, 2), [1, 2]),  # custom type
    (Box({"a": 1}), Box({"b": 1})),  # custom context
    (Box({"a": 1}), Box({"a": 1, "b": 2})),  # custom arity
]


@pytest.mark.parametrize("tree,other", MISMATCHES)
def test_structure_mismatch_errors_match_pytorch(tp, tree, other):
    e = _errors(lambda: pytree.tree_map(lambda x, y: x, tree, other))
    t = _errors(lambda: tp.tree_map(lambda x, y: x, tree, other))
    assert e == t and e[0] is ValueError
    assert _errors(lambda: pytree.tree_structure(tree).flatten_up_to(other)) == \
        _errors(lambda: tp.tree_structure(tree).flatten_up_to(other))


def test_registration_errors_and_warnings(tp):
    def first(lib, **kw):
        lib.register_pytree_node(Box, lambda b: ([], None), lambda v, c: Box({}), **kw)
    assert _errors(lambda: first(pytree)) == _errors(lambda: first(tp))
    assert _errors(lambda: first(pytree))[0] is ValueError

    class Fresh:
        pass
    for lib in (pytree, tp):
        with pytest.raises(ValueError, match="Both to_dumpable_context and from_dumpable_context"):
            lib.register_pytree_node(Fresh, lambda x: ([], None), lambda v, c: Fresh(),
                                     to_dumpable_context=str)
        _forget(lib, Fresh)
    messages = []
    for lib in (pytree, tp):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib._private_register_pytree_node(Fresh, lambda x: ([], None), lambda v, c: Fresh())
            lib._private_register_pytree_node(Fresh, lambda x: ([], None), lambda v, c: Fresh())
            _forget(lib, Fresh)
            lib._register_pytree_node(Fresh, lambda x: ([], None), lambda v, c: Fresh())
            _forget(lib, Fresh)
        messages.append([(x.category, str(x.message)) for x in w])
    assert messages[0] == messages[1] and len(messages[0]) == 2
    assert messages[0][1][0] is FutureWarning

    @dataclasses.dataclass
    class D:
        a: int
        b: int
    for kw in (dict(field_names=["a"]), dict(field_names=["a", "b", "c"]),
               dict(field_names=["a"], drop_field_names=["b"])):
        assert _errors(lambda: pytree.register_dataclass(D, **kw)) == \
            _errors(lambda: tp.register_dataclass(D, **kw))
        if D in pytree.SUPPORTED_NODES:
            _forget(pytree, D)
            _forget(tp, D)
    assert _errors(lambda: pytree.register_dataclass(Box)) == \
        _errors(lambda: tp.register_dataclass(Box))

    class NoEq:
        pass

    class NoHash:
        def __eq__(self, other):
            return True
    for cls in (NoEq, NoHash):
        e = _errors(lambda: pytree.register_constant(cls))
        assert e == _errors(lambda: tp.register_constant(cls)) and e[0] is TypeError
    assert pytree.is_constant_class(Config) and not pytree.is_constant_class(Point)
    spec = pytree.tree_structure(Config("l1"))
    assert pytree._is_constant_holder(spec) and pytree._retrieve_constant(spec) == Config("l1")
    assert pytree.tree_leaves(Config("l1")) == []


def test_dropped_and_none_dataclass_fields(tp):
    @dataclasses.dataclass
    class E:
        a: object
        b: object = None
        c: object = 0
    for lib in (pytree, tp):
        lib.register_dataclass(E, field_names=["a", "b"], drop_field_names=["c"])
    try:
        tree = E([1], None, 5)
        assert pytree.tree_leaves(tree) == tp.tree_leaves(tree) == [1]
        assert repr(pytree.tree_structure(tree)) == repr(tp.tree_structure(tree))
        assert pytree.tree_map(lambda x: x, tree) == E([1], None, 0)
    finally:
        for lib in (pytree, tp):
            _forget(lib, E)


def test_serialization_errors_match_pytorch(tp):
    def both(fn):
        e, t = _errors(lambda: fn(pytree)), _errors(lambda: fn(tp))
        assert e == t and e[0] != "ok"
        return e[0]
    Q = collections.namedtuple("Q", "a")
    assert both(lambda lib: lib.treespec_dumps(lib.tree_structure(Q(1)))) is NotImplementedError
    assert both(lambda lib: lib.treespec_dumps(lib.tree_structure(Unkeyed([1])))) \
        is NotImplementedError
    assert both(lambda lib: lib.treespec_dumps(lib.tree_structure({b"k": 3}))) is TypeError
    assert both(lambda lib: lib.treespec_dumps([1])) is TypeError
    assert both(lambda lib: lib.treespec_dumps(lib.tree_structure([1]), protocol=7)) is ValueError
    assert both(lambda lib: lib.treespec_loads('[9, {"type": null}]')) is ValueError
    assert both(lambda lib: lib.treespec_loads(
        '[1, {"type": "no.such.Type", "context": "null", "children_spec": []}]')) \
        is NotImplementedError
    assert both(lambda lib: lib.tree_flatten_with_path(Unkeyed([1]))) is ValueError
    assert both(lambda lib: lib.tree_unflatten([1], lib.tree_structure((1, 2)))) is ValueError
    assert both(lambda lib: lib.tree_unflatten([1], [2])) is TypeError


def test_treespec_api(tp):
    spec = pytree.tree_structure({"a": [1, 2], "b": 3})
    assert spec.context == ["a", "b"] and spec.type is dict
    assert spec.child(0).type is list and spec.children()[1].is_leaf()
    with pytest.warns(FutureWarning, match="children_specs` is deprecated"):
        assert spec.children_specs == spec.children()
    with pytest.warns(FutureWarning, match="LeafSpec"):
        leaf = pytree.LeafSpec()
    assert leaf == pytree.treespec_leaf() and isinstance(leaf, pytree.TreeSpec) and \
        repr(leaf) == "*"
    with pytest.warns(FutureWarning, match="is_namedtuple_instance instead"):
        assert pytree._is_namedtuple_instance(P(1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.type = list
    built = pytree.treespec_dict(a=pytree.treespec_tuple([pytree.treespec_leaf()] * 2),
                                 b=pytree.treespec_leaf())
    assert repr(built) == repr(tp.treespec_dict(
        a=tp.treespec_tuple([tp.treespec_leaf()] * 2), b=tp.treespec_leaf()))
    assert {spec: 1}[pytree.tree_structure({"a": [5, 6], "b": 7})] == 1
    assert spec != pytree.tree_structure({"b": 3, "a": [1, 2]})
    assert pytree.PyTreeSpec is pytree.TreeSpec
    assert set(pytree.__all__) == set(tp.__all__)
    for name in ("_dict_flatten_with_keys", "_list_flatten_with_keys", "_tuple_flatten_with_keys",
                 "_namedtuple_flatten_with_keys", "_ordereddict_flatten_with_keys",
                 "_defaultdict_flatten_with_keys", "SUPPORTED_SERIALIZED_TYPES",
                 "MappingKey", "SequenceKey", "GetAttrKey", "ConstantNode", "map_only"):
        assert hasattr(pytree, name), name
    assert pytree._dict_flatten_with_keys({"a": 1}) == \
        ([(pytree.MappingKey("a"), 1)], ["a"])


def test_namedtuple_and_structseq_predicates(tp):
    values = [P, P(1, 2), (1, 2), tuple, os.stat_result, os.stat("."), time.gmtime(),
              sys.float_info, Point, 3]
    for fn in ("is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance", "is_structseq",
               "is_structseq_class", "is_structseq_instance"):
        assert [getattr(pytree, fn)(v) for v in values] == [getattr(tp, fn)(v) for v in values]
    assert pytree.is_structseq(os.stat_result) and pytree.is_namedtuple(P(1, 2))


def test_fx_tree_flatten_spec(tp):
    import torch.fx._pytree as t_fx
    spec = pytree.tree_structure({"a": (1, [2]), "b": P(3, 4)})
    t_spec = tp.tree_structure({"a": (1, [2]), "b": P(3, 4)})
    value = {"b": P(30, 40), "a": (10, [20, 99], 98), "extra": 0}
    assert fx_pytree.tree_flatten_spec(value, spec) == t_fx.tree_flatten_spec(value, t_spec) == \
        [10, 20, 30, 40]
    assert fx_pytree.SUPPORTED_NODES_EXACT_MATCH[dict](value, spec) is False
    box_spec, t_box_spec = pytree.tree_structure(Box({"a": 1})), tp.tree_structure(Box({"a": 1}))
    assert fx_pytree.tree_flatten_spec(Box({"a": 5}), box_spec) == [5]
    e = _errors(lambda: fx_pytree.tree_flatten_spec(Box({"b": 5}), box_spec))
    assert e == _errors(lambda: t_fx.tree_flatten_spec(Box({"b": 5}), t_box_spec))
    assert e[0] is RuntimeError
    fx_pytree.register_pytree_flatten_spec(Box, lambda b, s: [b.d[k] for k in s.context])
    try:
        assert fx_pytree.tree_flatten_spec(Box({"b": 1, "a": 5}), box_spec) == [5]
    finally:
        fx_pytree._deregister_pytree_flatten_spec(Box)


def test_cxx_pytree_imports_as_pytorch(tp):
    sys.modules.pop("ember.utils._cxx_pytree", None)
    e = _errors(lambda: importlib.import_module("ember.utils._cxx_pytree"))
    t = _errors(lambda: importlib.import_module("torch.utils._cxx_pytree"))
    assert e == t or (t[0] == "ok") == (e[0] == "ok")
    if e[0] == "ok":
        assert set(e[1].__all__) == set(t[1].__all__)
    # with optree present, the module is _pytree's API over the one registry
    saved = pytree._cxx_pytree_dynamo_traceable
    pytree._cxx_pytree_dynamo_traceable = True
    try:
        sys.modules.pop("ember.utils._cxx_pytree", None)
        cxx = importlib.import_module("ember.utils._cxx_pytree")
        assert set(cxx.__all__) == set(tp.__all__)
        assert cxx.tree_flatten(Box({"a": 1})) == pytree.tree_flatten(Box({"a": 1}))
    finally:
        pytree._cxx_pytree_dynamo_traceable = saved
        sys.modules.pop("ember.utils._cxx_pytree", None)

"""The DataPipe metaclasses and the type-checking helpers behind ``argument_validation`` and
``runtime_validation``: ``issubtype`` (is one annotation a subtype of another, unions and
bounded TypeVars expanded), ``issubinstance`` (does a value fit an annotation, containers
checked element-wise) and ``_DataPipeType`` (a datapipe's element type).

As in PyTorch 2.x the metaclass does not give classes a ``type`` attribute (``IterDataPipe[int]``
is ordinary ``Generic`` subscription), so the validators find one only on a class that sets it;
the metaclass's real work is wrapping ``__iter__`` and ``reset`` of IterDataPipe classes."""
import collections
import functools
import numbers
import sys
from abc import ABCMeta
from collections.abc import Iterator
from typing import (Any, ForwardRef, Generic, TypeVar, Union, _eval_type, _GenericAlias,
                    _type_check, _type_repr, get_args, get_type_hints)

from ._hook_iterator import _SnapshotState, hook_iterator


class GenericMeta(ABCMeta):
    pass


class Integer(numbers.Integral):
    pass


class Boolean(numbers.Integral):
    pass


# builtin types -> the ABCs the checks compare (so bool is not taken for an int)
TYPE2ABC = {bool: Boolean, int: Integer, float: numbers.Real, complex: numbers.Complex,
            dict: dict, list: list, set: set, tuple: tuple, None: type(None)}


def issubtype(left, right, recursive=True):
    """Whether type ``left`` is a subtype of ``right``: every variant of ``left`` (a Union or
    bounded TypeVar expands) must fit one of ``right``'s."""
    left = TYPE2ABC.get(left, left)
    right = TYPE2ABC.get(right, right)
    if right is Any or left == right:
        return True
    if isinstance(right, _GenericAlias) and getattr(right, "__origin__", None) is Generic:
        return True
    if right is type(None):
        return False
    constraints = _decompose_type(right)
    if len(constraints) == 0 or Any in constraints:
        return True
    if left is Any:
        return False
    variants = _decompose_type(left)
    if len(variants) == 0:
        return False
    return all(_issubtype_with_constraints(v, constraints, recursive) for v in variants)


def _decompose_type(t, to_list=True):
    if isinstance(t, TypeVar):
        ts = [t.__bound__] if t.__bound__ is not None else list(t.__constraints__)
    elif hasattr(t, "__origin__") and t.__origin__ == Union:
        ts = get_args(t)
    else:
        if not to_list:
            return None
        ts = [t]
    return [TYPE2ABC.get(_t, _t) for _t in ts]


def _issubtype_with_constraints(variant, constraints, recursive=True):
    if variant in constraints:
        return True
    # a variant that is itself a Union/TypeVar: each of its members must fit
    vs = _decompose_type(variant, to_list=False)
    if vs is not None:
        return all(_issubtype_with_constraints(v, constraints, recursive) for v in vs)
    if hasattr(variant, "__origin__") and variant.__origin__ is not None:
        v_origin, v_args = variant.__origin__, get_args(variant) or None
    else:
        v_origin, v_args = variant, None
    for constraint in constraints:
        cs = _decompose_type(constraint, to_list=False)
        if cs is not None:
            if _issubtype_with_constraints(variant, cs, recursive):
                return True
        elif hasattr(constraint, "__origin__") and constraint.__origin__ is not None:
            if v_origin == constraint.__origin__:
                if not recursive:
                    return True
                c_args = get_args(constraint) or None
                if c_args is None or len(c_args) == 0:
                    return True
                if (v_args is not None and len(v_args) == len(c_args)
                        and all(issubtype(va, ca) for va, ca in zip(v_args, c_args))):
                    return True
        elif v_origin == constraint:  # Tuple[int] fits Tuple
            return True
    return False


def issubinstance(data, data_type):
    """Whether the value ``data`` fits the annotation ``data_type`` (tuples, lists, sets and
    dicts checked element by element)."""
    if not issubtype(type(data), data_type, recursive=False):
        return False
    dt_args = get_args(data_type) or None
    if isinstance(data, tuple):
        if dt_args is None or len(dt_args) == 0:
            return True
        if len(dt_args) != len(data):
            return False
        return all(issubinstance(d, t) for d, t in zip(data, dt_args))
    if isinstance(data, (list, set)):
        if dt_args is None or len(dt_args) == 0:
            return True
        return all(issubinstance(d, dt_args[0]) for d in data)
    if isinstance(data, dict):
        if dt_args is None or len(dt_args) == 0:
            return True
        kt, vt = dt_args
        return all(issubinstance(k, kt) and issubinstance(v, vt) for k, v in data.items())
    return True


class _DataPipeType:
    """A datapipe's element type annotation, in ``param``."""

    def __init__(self, param):
        self.param = param

    def __repr__(self):
        return _type_repr(self.param)

    def __eq__(self, other):
        if isinstance(other, _DataPipeType):
            return self.param == other.param
        return NotImplemented

    def __hash__(self):
        return hash(self.param)

    def issubtype(self, other):
        if isinstance(other.param, _GenericAlias):
            if getattr(other.param, "__origin__", None) is Generic:
                return True
        if isinstance(other, _DataPipeType):
            return issubtype(self.param, other.param)
        if isinstance(other, type):
            return issubtype(self.param, other)
        raise TypeError(f"Expected '_DataPipeType' or 'type', but found {type(other)}")

    def issubtype_of_instance(self, other):
        return issubinstance(other, self.param)


_T_co = TypeVar("_T_co", covariant=True)
_DEFAULT_TYPE = _DataPipeType(Generic[_T_co])


class _DataPipeMeta(GenericMeta):
    """Metaclass of DataPipes (an ABCMeta, as ``Iterable`` below ``IterableDataset`` needs)."""

    type: _DataPipeType


class _IterDataPipeMeta(_DataPipeMeta):
    """Metaclass of IterDataPipes: hooks ``__iter__`` (:func:`hook_iterator`) and makes
    ``reset`` skip a datapipe just restored from a snapshot."""

    def __new__(cls, name, bases, namespace, **kwargs):
        if "reset" in namespace:
            reset_func = namespace["reset"]

            @functools.wraps(reset_func)
            def conditional_reset(*args, **kwargs):
                datapipe = args[0]
                if datapipe._snapshot_state in (_SnapshotState.Iterating,
                                                _SnapshotState.NotStarted):
                    # NotStarted resets too: its source may already have been iterated
                    datapipe._number_of_samples_yielded = 0
                    datapipe._fast_forward_iterator = None
                    reset_func(*args, **kwargs)
                datapipe._snapshot_state = _SnapshotState.Iterating

            namespace["reset"] = conditional_reset
        if "__iter__" in namespace:
            hook_iterator(namespace)
        return super().__new__(cls, name, bases, namespace, **kwargs)


def _dp_init_subclass(sub_cls, *args, **kwargs):
    """Check a typed subclass: its string type resolves, and ``__iter__``'s return hint is an
    ``Iterator`` of a subtype of the class's type."""
    sub_cls.reinforce_type = reinforce_type
    if getattr(sub_cls, "__type_class__", False):
        return
    if isinstance(sub_cls.type.param, ForwardRef):
        base_globals = sys.modules[sub_cls.__module__].__dict__
        try:
            sub_cls.type.param = _eval_type(sub_cls.type.param, base_globals, locals())
        except TypeError as e:
            raise TypeError(f"{sub_cls.type.param.__forward_arg__} is not supported by Python "
                            "typing") from e
    if "__iter__" in sub_cls.__dict__:
        hints = get_type_hints(sub_cls.__dict__["__iter__"])
        if "return" in hints:
            return_hint = hints["return"]
            if return_hint == Iterator:
                return
            if not (hasattr(return_hint, "__origin__")
                    and return_hint.__origin__ in (Iterator, collections.abc.Iterator)):
                raise TypeError("Expected 'Iterator' as the return annotation for `__iter__` of "
                                f"{sub_cls.__name__}, but found {_type_repr(hints['return'])}")
            data_type = get_args(return_hint)[0]
            if not issubtype(data_type, sub_cls.type.param):
                raise TypeError(f"Expected return type of '__iter__' as a subtype of "
                                f"{sub_cls.type}, but found {_type_repr(data_type)} for "
                                f"{sub_cls.__name__}")


def reinforce_type(self, expected_type):
    """Narrow a datapipe instance's ``type`` to ``expected_type`` (a subtype of it)."""
    if isinstance(expected_type, tuple):
        expected_type = tuple[expected_type]
    _type_check(expected_type, msg="'expected_type' must be a type")
    if not issubtype(expected_type, self.type.param):
        raise TypeError(f"Expected 'expected_type' as subtype of {self.type}, but found "
                        f"{_type_repr(expected_type)}")
    self.type = _DataPipeType(expected_type)
    return self

"""TorchScript's type objects as PyTorch exposes them from ``torch._C`` (``torch.TensorType``,
``torch.ListType(torch.IntType.get())`` ...): their names, kinds, contained types, equality and
subtyping. ember compiles no TorchScript, so here they are what Python code uses them for:
annotations (open_clip's ``x: TensorType``) and descriptions of schema types."""

__all__ = ["Type", "AnyType", "BoolType", "ComplexType", "DeviceObjType", "FloatType", "IntType",
           "NoneType", "NumberType", "PyObjectType", "StreamObjType", "StringType", "SymBoolType",
           "SymIntType", "TensorType", "ListType", "OptionalType", "TupleType", "DictType",
           "UnionType", "FutureType", "AwaitType"]


def _incompatible(method, self, other):
    """pybind11's message for a method of a Type given something else."""
    return (f"{method}(): incompatible function arguments. The following argument types are "
            f"supported:\n    1. (self: torch._C.Type, arg0: torch._C.Type) -> bool\n\n"
            f"Invoked with: {self!r}, {other!r}")


class Type:
    """``torch._C.Type``: the base of every TorchScript type."""
    _name = None

    def __init__(self, *args, **kwargs):
        raise TypeError(f"torch._C.{type(self).__name__}: No constructor defined!")

    def kind(self):
        return type(self).__name__

    def str(self):
        return self._name

    @property
    def annotation_str(self):
        return str(self)

    def containedTypes(self):
        return []

    def is_interface_type(self):
        return False

    def isSubtypeOf(self, other):
        if not isinstance(other, Type):
            raise TypeError(_incompatible("isSubtypeOf", self, other))
        if isinstance(other, AnyType) or other == self:
            return True
        if isinstance(self, (OptionalType, UnionType)):  # every member must be
            members = self.containedTypes() + ([NoneType.get()]
                                               if isinstance(self, OptionalType) else [])
            return all(t.isSubtypeOf(other) for t in members)
        if isinstance(other, NumberType):
            return isinstance(self, (IntType, FloatType, ComplexType))
        if isinstance(other, OptionalType):
            return isinstance(self, NoneType) or self.isSubtypeOf(other.getElementType())
        if isinstance(other, UnionType):
            return any(self.isSubtypeOf(t) for t in other.containedTypes())
        # tuples and futures are covariant, lists and dicts invariant (mutable)
        if type(self) is type(other) and isinstance(self, (TupleType, FutureType, AwaitType)):
            mine, theirs = self.containedTypes(), other.containedTypes()
            return len(mine) == len(theirs) and all(a.isSubtypeOf(b)
                                                    for a, b in zip(mine, theirs))
        return False

    def __str__(self):
        return self.str()

    __repr__ = __str__

    def __eq__(self, other):
        if not isinstance(other, Type):
            raise TypeError(_incompatible("__eq__", self, other))
        return type(other) is type(self) and other.containedTypes() == self.containedTypes()

    __hash__ = None  # (pybind11's, as PyTorch's: __eq__ without __hash__)


def _singleton(name, text):
    """A type without parameters: ``X.get()`` is its one instance, as in PyTorch."""
    cls = type(name, (Type,), {"_name": text, "__module__": "torch", "__doc__":
                               f"``torch.{name}``: TorchScript's ``{text}``."})
    instance = object.__new__(cls)
    cls.get = staticmethod(lambda: instance)
    return cls


AnyType = _singleton("AnyType", "Any")
BoolType = _singleton("BoolType", "bool")
ComplexType = _singleton("ComplexType", "complex")
DeviceObjType = _singleton("DeviceObjType", "Device")
FloatType = _singleton("FloatType", "float")
IntType = _singleton("IntType", "int")
NoneType = _singleton("NoneType", "NoneType")
NumberType = _singleton("NumberType", "number")
PyObjectType = _singleton("PyObjectType", "PyObject")
StreamObjType = _singleton("StreamObjType", "Stream")
StringType = _singleton("StringType", "str")
SymBoolType = _singleton("SymBoolType", "bool")
SymIntType = _singleton("SymIntType", "int")
TensorType = _singleton("TensorType", "Tensor")
# (a Tensor type TorchScript inferred for an unannotated argument: equal to Tensor, kept apart)
_INFERRED_TENSOR = object.__new__(TensorType)
TensorType.getInferred = staticmethod(lambda: _INFERRED_TENSOR)


def _check_types(cls, types, given, sig):
    """``types`` as a list; pybind11's error when one is not a Type."""
    if not all(isinstance(t, Type) for t in types):
        got = ", ".join(repr(t) for t in given)
        raise TypeError(f"__init__(): incompatible constructor arguments. The following argument "
                        f"types are supported:\n    1. torch._C.{cls.__name__}({sig})\n\n"
                        f"Invoked with: {got}")
    return list(types)


class _Parametric(Type):
    """A type made of element types: ``List[int]``, ``Optional[Tensor]`` ..."""
    _template = None

    def __init__(self, *types):
        sig = ", ".join(f"arg{i}: torch._C.Type" for i in range(len(types)))
        self._contained = _check_types(type(self), types, types, sig)

    def containedTypes(self):
        return list(self._contained)

    def getElementType(self):
        return self._contained[0]

    def str(self):
        return self._template.format(*self._contained)


class ListType(_Parametric):
    _template = "List[{}]"

    @staticmethod
    def ofInts():
        return ListType(IntType.get())

    @staticmethod
    def ofTensors():
        return ListType(TensorType.get())


class OptionalType(_Parametric):
    _template = "Optional[{}]"


class FutureType(_Parametric):
    _template = "Future[{}]"


class AwaitType(_Parametric):
    _template = "Await[{}]"


class DictType(_Parametric):
    _template = "Dict[{}, {}]"

    def __init__(self, key, value):
        super().__init__(key, value)

    def getKeyType(self):
        return self._contained[0]

    def getValueType(self):
        return self._contained[1]


class _Sequence(Type):
    """A type of a list of element types: ``Tuple[int, float]``, ``Union[int, str]``."""
    _prefix = None

    def __init__(self, types):
        types = list(types) if isinstance(types, (list, tuple)) else [types]
        self._contained = _check_types(type(self), types, [types],
                                       "arg0: collections.abc.Sequence[torch._C.Type]")

    def containedTypes(self):
        return list(self._contained)

    def str(self):
        return f"{self._prefix}[{', '.join(str(t) for t in self._contained)}]"


class TupleType(_Sequence):
    _prefix = "Tuple"

    def elements(self):
        return list(self._contained)


class UnionType(_Sequence):
    _prefix = "Union"


for _cls in (Type, _Parametric, _Sequence, ListType, OptionalType, FutureType, AwaitType,
             DictType, TupleType, UnionType):
    _cls.__module__ = "torch"

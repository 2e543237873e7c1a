"""``ember.device``, ``ember.layout`` and the memory formats."""
import re

from . import api_name

# PyTorch's device string: a type, then optionally ":" and an index without leading zeros
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9]\d*|0))?\Z")

# (the arguments, index) -> device: the devices made so far, built once (kernels and factories
# make one per call). Bounded: a program naming many indices or spellings still gets correct,
# fresh objects past the bound.
_interned = {}


class device:
    """A device type with an optional index: ``device('cuda:1')``, ``device('cpu')``,
    ``device('cuda', 0)``. Hashable, compares by (type, index), prints as PyTorch does."""

    __slots__ = ("type", "index")
    _types = {"cpu", "cuda", "mps", "meta", "privateuseone"}

    def __new__(cls, type, index=None):
        if cls is device and type.__class__ is str and (index is None
                                                         or index.__class__ is int):
            self = _interned.get((type, index))
            if self is not None:
                return self
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): a device object cannot take an index")
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type  # PyTorch treats a bare int as a CUDA ordinal
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__}), but expected one of:\n"
                            " * (str type, int index = -1)\n * (int device)")
        if ":" in type and index is not None:
            raise RuntimeError(f"type (string) must not include an index because index was "
                               f"passed explicitly: {type}")
        m = _DEVICE_STRING.match(type)
        if m is None:
            raise RuntimeError(f"Invalid device string: '{type}'")
        name, idx = m.groups()
        if idx is not None:
            index = int(idx)
        if name not in cls._types:
            raise RuntimeError(
                "Expected one of cpu, cuda, meta, " + ", ".join(sorted(cls._types - {"cpu", "cuda", "meta"}))
                + f" device type at start of device string: {type}")
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)
        if cls is device and len(_interned) < 256:
            _interned[(type, index)] = self
        return self

    def __setattr__(self, k, v):
        raise AttributeError("device objects are immutable")

    def __eq__(self, other):
        # a device equals devices only: PyTorch's device("cpu") == "cpu" is False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):  # PyTorch's "with torch.device(...)" sets the default factory device
        from . import factory_defaults
        factory_defaults.push_device(self)
        return self

    def __exit__(self, *exc):
        from . import factory_defaults
        factory_defaults.pop_device()


def register_device_type(name):
    device._types.add(name)


def unregister_device_type(name):
    device._types.discard(name)


class _Named:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return api_name.name + "." + self._name

    def __reduce__(self):
        return self._name


class layout(_Named):
    """Tensor layout: ``strided``, ``sparse_coo``, the compressed ``sparse_csr``,
    ``sparse_csc``, ``sparse_bsr``, ``sparse_bsc`` and ``jagged`` (nested tensors)."""


class memory_format(_Named):
    """How a 4-d (or 5-d) tensor's strides are laid out."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
jagged = layout("jagged")  # ember.nested's jagged nested tensors
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

CPU = device("cpu")
META = device("meta")

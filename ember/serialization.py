"""``ember.save`` / ``ember.load``: checkpoints in PyTorch's zip format, and the rest of
``torch.serialization``.

A file is a zip archive ``<name>/data.pkl`` + ``<name>/data/<key>`` (one raw storage each, in the
byte order ``<name>/byteorder`` names) + ``<name>/version`` and PyTorch's bookkeeping records.
Tensors are pickled as PyTorch pickles them (``torch._utils._rebuild_tensor_v2`` over a
persistent storage id ``('storage', torch.<Type>Storage, key, location, numel)``), so PyTorch
reads ember's files and ember reads PyTorch's, neither importing the other: the ``torch.*``
names are written as pickle GLOBAL opcodes and mapped to ember objects on load. The archive is
laid out as PyTorch's writer lays it out (:class:`_ZipWriter`), so PyTorch can map it and
compute where each storage starts.

Where a storage lives is PyTorch's registry (:func:`register_package`): :func:`location_tag`
names it when saving (``"cpu"``, ``"cuda:0"``), :func:`default_restore_location` puts a loaded
storage back there, and ``map_location`` redirects it. ``skip_data`` writes and reads the
records without their bytes; ``set_crc32_options``, ``set_default_load_endianness`` and
``set_default_mmap_options`` are the writer's checksums, the byte order assumed for a file that
records none, and how ``load(mmap=True)`` maps the file.

Loading is safe by default (``weights_only=True``): the unpickler resolves only an allow-list
of globals (tensor/parameter rebuilders, storages, dtypes, ``Size``, ``device``, ``OrderedDict``
and plain containers), so a file cannot make ``load`` run arbitrary code. ``add_safe_globals``
extends the list; ``weights_only=False`` is the trusting full unpickler;
``get_unsafe_globals_in_checkpoint`` lists what a file would need allowed.

Also read: PyTorch's legacy (pre-1.6) format, a stream of pickles (magic number, protocol
version, system info, the object, the storage keys) followed by each storage's element count and
bytes. Every tensor is checked against its storage's size before it is built, as PyTorch does;
a damaged zip says so. ``save`` writes a temporary file beside the target and renames it into
place, so a failed save never destroys the previous checkpoint.
"""
import _compat_pickle
import collections
import contextlib
import functools
import io
import os
import pickle
import re
import shutil
import struct
import sys
import tempfile
import threading
import warnings
import zipfile
import zlib
from enum import Enum
from types import SimpleNamespace
from typing import Callable, TypeAlias, Union

import numpy as np

from ._core import dtype as D
from ._core import strides as _st
from ._core import device as _device_module
from ._core.device import device as _device, layout, sparse_coo, sparse_csr
from ._core.device import sparse_bsc, sparse_bsr, sparse_csc
from ._core.size import Size
from ._core.storage import UntypedStorage, from_array, meta_storage
from ._core.tensor_impl import set_tensor_metadata, tensor_metadata
from ._core.quantizer import (per_channel_affine, per_channel_affine_float_qparams,
                              per_channel_symmetric, per_tensor_affine, per_tensor_symmetric,
                              qscheme)
from ._tensor import Tensor, _rebuild_from_type_v2, make_tensor
from .types import FileLike, Storage
from .utils.hooks import warn_if_has_hooks

# what ``load``'s ``map_location`` accepts; libraries annotate their own loaders with it
# (``from torch.serialization import MAP_LOCATION``)
MAP_LOCATION: TypeAlias = Union[Callable[[Storage, str], Storage], _device, str, dict[str, str],
                                None]

IS_WINDOWS = sys.platform == "win32"
if IS_WINDOWS:
    MAP_SHARED = MAP_PRIVATE = None
else:
    from mmap import MAP_PRIVATE, MAP_SHARED

__all__ = ["SourceChangeWarning", "mkdtemp", "register_package",
           "check_module_version_greater_or_equal", "validate_cuda_device",
           "validate_hpu_device", "location_tag", "default_restore_location",
           "normalize_storage_type", "storage_to_tensor_type", "save", "load", "StorageType",
           "LoadEndianness", "get_crc32_options", "set_crc32_options",
           "get_default_load_endianness", "set_default_load_endianness",
           "get_default_mmap_options", "set_default_mmap_options", "clear_safe_globals",
           "get_safe_globals", "add_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint", "skip_data"]

DEFAULT_PROTOCOL = 2

# PyTorch's storage class name per dtype (what the persistent id names).
_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
    "quint8": "QUInt8Storage", "qint8": "QInt8Storage", "qint32": "QInt32Storage",
}
_STORAGE_DTYPES = {v: D.ALIASES[k] for k, v in _STORAGE_NAMES.items()}

# The settings that the option functions below read and change (PyTorch keeps them in
# torch.utils.serialization.config).
_config = SimpleNamespace(
    load_endianness=None,  # the byte order of a file without a byteorder record; None: little
    mmap_flags=None if IS_WINDOWS else MAP_PRIVATE,
    compute_crc32=True,
)


class _SerializationLocal(threading.local):
    """This thread's ``skip_data`` state, which save's pickler and load read."""

    def __init__(self):
        super().__init__()
        self.skip_data = False
        self.materialize_fake_tensors = False


_serialization_tls = _SerializationLocal()


class SourceChangeWarning(Warning):
    """The category of the warning that a pickled class's source code has changed since it was
    saved."""


@contextlib.contextmanager
def mkdtemp():
    """A fresh temporary directory's path for the block, removed with its contents after it."""
    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path)


class LoadEndianness(Enum):
    """The byte order ``load`` assumes for a file that records none."""
    NATIVE = 1
    LITTLE = 2
    BIG = 3


def get_default_load_endianness():
    """The byte order assumed for files without a byteorder record (None: little-endian)."""
    return _config.load_endianness


def set_default_load_endianness(endianness):
    """Set the byte order assumed for files without a byteorder record: a
    :class:`LoadEndianness`, or None for little-endian."""
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _config.load_endianness = endianness


def get_crc32_options():
    """Whether ``save`` computes a crc32 for each record of the archive (default True)."""
    return _config.compute_crc32


def set_crc32_options(compute_crc32):
    """Set whether ``save`` computes a crc32 for each record. Without them zip tools report
    the records as corrupt; ``load`` reads them all the same."""
    _config.compute_crc32 = compute_crc32


def get_default_mmap_options():
    """The flags ``load(mmap=True)`` maps files with: ``mmap.MAP_PRIVATE`` (the default: writes
    to the loaded tensors stay in the process) or ``mmap.MAP_SHARED`` (they reach the file)."""
    return _config.mmap_flags


class set_default_mmap_options:  # noqa: N801  (PyTorch's name)
    """Set the flags ``load(mmap=True)`` maps files with (``mmap.MAP_PRIVATE`` or
    ``mmap.MAP_SHARED``), from now on or, used as a context manager, until the block ends."""

    def __init__(self, flags):
        if IS_WINDOWS:
            raise RuntimeError("Changing the default mmap options is currently not supported "
                               "for Windows")
        if flags != MAP_PRIVATE and flags != MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, expected "
                             f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _config.mmap_flags
        _config.mmap_flags = flags

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        _config.mmap_flags = self.prev


class skip_data:  # noqa: N801  (PyTorch's name)
    """Context manager under which ``save`` writes each storage's record without its bytes
    (the space is left for a later pass to fill) and ``load`` gives tensors over storages it
    does not fill. ``materialize_fake_tensors``: save FakeTensors as the plain tensors they stand
    for, on the device they claim."""

    def __init__(self, materialize_fake_tensors=False):
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        self._old_skip_data = _serialization_tls.skip_data
        self._old_materialize_fake_tensors = _serialization_tls.materialize_fake_tensors
        _serialization_tls.skip_data = True
        _serialization_tls.materialize_fake_tensors = self.materialize_fake_tensors

    def __exit__(self, exc_type, exc_value, traceback):
        _serialization_tls.skip_data = self._old_skip_data
        _serialization_tls.materialize_fake_tensors = self._old_materialize_fake_tensors


# ---------------------------------------------------------------------------------------------
# Where storages live: the registry of taggers (save) and deserializers (load)

_package_registry = []


def register_package(priority, tagger, deserializer):
    """Register ``tagger(storage)`` (a location string such as ``"cuda:0"``, or None) and
    ``deserializer(storage, location)`` (the CPU storage moved there, or None). Save and load
    try the registered pairs in order of ``priority``, lowest first, until one answers."""
    _package_registry.append((priority, tagger, deserializer))
    _package_registry.sort()


def check_module_version_greater_or_equal(module, req_version_tuple, error_if_malformed=True):
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (compared field by field,
    each cast to the type of the required one). A version that cannot be compared raises
    RuntimeError, or with ``error_if_malformed=False`` warns and counts as met."""
    try:
        version_strs = module.__version__.split(".")
        module_version = tuple(type(req_field)(version_strs[idx])
                               for idx, req_field in enumerate(req_version_tuple))
        requirement_is_met = module_version >= req_version_tuple
    except Exception as e:
        message = (f"'{module.__name__}' module version string is malformed "
                   f"'{module.__version__}' and cannot be compared with tuple "
                   f"{str(req_version_tuple)}")
        if error_if_malformed:
            raise RuntimeError(message) from e
        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        requirement_is_met = True
    return requirement_is_met


def _privateuse1_name():
    from .utils.backend_registration import _get_privateuse1_backend_name
    return _get_privateuse1_backend_name()


def _cpu_tag(obj):
    if obj.device.type == "cpu":
        return "cpu"


def _mps_tag(obj):
    if obj.device.type == "mps":
        return "mps"


def _meta_tag(obj):
    if obj.device.type == "meta":
        return "meta"


def _backend_tag(backend_name, obj):
    if backend_name == "privateuse1":
        backend_name = _privateuse1_name()
    if obj.device.type == backend_name:
        if obj.device.index is None:
            return backend_name
        return f"{backend_name}:{obj.device.index}"


def _cpu_deserialize(obj, location):
    if location == "cpu":
        return obj


def _mps_deserialize(obj, location):
    if location.startswith("mps"):
        return obj.to(device="mps")


def _meta_deserialize(obj, location):
    if location == "meta":
        return UntypedStorage(obj.nbytes(), device="meta")


def _is_meta_location(map_location):
    """Whether ``map_location`` sends every storage to the meta device (their bytes are then
    never read)."""
    if isinstance(map_location, str):
        return map_location == "meta"
    if isinstance(map_location, _device):
        return map_location.type == "meta"
    return False


def _validate_device(location, backend_name):
    """The device of ``backend_name`` that ``location`` names, checked to exist here."""
    import ember
    device_module = getattr(ember, backend_name, None)
    if device_module is None:
        raise RuntimeError(f"The {backend_name.upper()} device module is not registered. If you "
                           "are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    device_index_of = getattr(device_module, "_get_device_index", None)
    if device_index_of is not None:
        device_index = device_index_of(location, True)
        device = _device(backend_name, device_index)
    else:
        device = _device(location)
        device_index = device.index if device.index else 0
    if hasattr(device_module, "is_available") and not device_module.is_available():
        raise RuntimeError(f"Attempting to deserialize object on a {backend_name.upper()} "
                           f"device but torch.{backend_name}.is_available() is False. If you "
                           "are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    if hasattr(device_module, "device_count"):
        device_count = device_module.device_count()
        if device_index >= device_count:
            raise RuntimeError(f"Attempting to deserialize object on {backend_name.upper()} "
                               f"device {device_index} but torch.{backend_name}.device_count() "
                               f"is {device_count}. Please use torch.load with map_location to "
                               "map your storages to an existing device.")
    return device


def validate_cuda_device(location):
    """The index of the CUDA device ``location`` names, which must exist here."""
    return _validate_device(location, "cuda").index


def validate_hpu_device(location):
    """The index of the HPU device ``location`` names, which must exist here."""
    return _validate_device(location, "hpu").index


def _deserialize(backend_name, obj, location):
    if backend_name == "privateuse1":
        backend_name = _privateuse1_name()
    if location == backend_name or re.match(f"{backend_name}(:|[0-9]+)", location):
        return obj.to(device=_validate_device(location, backend_name))


register_package(10, _cpu_tag, _cpu_deserialize)
register_package(20, functools.partial(_backend_tag, "cuda"),
                 functools.partial(_deserialize, "cuda"))
register_package(21, _mps_tag, _mps_deserialize)
register_package(22, _meta_tag, _meta_deserialize)
register_package(23, functools.partial(_backend_tag, "privateuse1"),
                 functools.partial(_deserialize, "privateuse1"))
register_package(24, functools.partial(_backend_tag, "hpu"),
                 functools.partial(_deserialize, "hpu"))
register_package(25, functools.partial(_backend_tag, "xpu"),
                 functools.partial(_deserialize, "xpu"))
register_package(26, functools.partial(_backend_tag, "mtia"),
                 functools.partial(_deserialize, "mtia"))


def _typename(obj):
    from ._functional_ops import typename
    return typename(obj)


def location_tag(storage: Storage):
    """Where ``storage`` lives, as the registered taggers name it (``"cpu"``, ``"cuda:0"``)."""
    for _, tagger, _ in _package_registry:
        location = tagger(storage)
        if location:
            return location
    raise RuntimeError("don't know how to determine data location of " + _typename(storage))


def default_restore_location(storage, location):
    """``storage`` (as loaded, on the CPU) moved to ``location`` by the first registered
    deserializer that takes it."""
    for _, _, fn in _package_registry:
        result = fn(storage, location)
        if result is not None:
            return result
    raise RuntimeError("don't know how to restore data location of " + _typename(storage)
                       + " (tagged with " + location + ")")


def normalize_storage_type(storage_type):
    """The top-level class of the same name as ``storage_type`` (``ember.FloatStorage``)."""
    import ember
    return getattr(ember, storage_type.__name__)


def storage_to_tensor_type(storage):
    """The tensor class that goes with ``storage``'s class: ``XTensor`` beside ``XStorage`` in
    its module."""
    import importlib
    storage_type = type(storage)
    module = importlib.import_module(storage_type.__module__)
    return getattr(module, storage_type.__name__.replace("Storage", "Tensor"))


def _restore_location_fn(map_location):
    """``restore(storage, location)`` as ``map_location`` directs: a callable first (its None
    falls back to the registry), a dict renaming locations, or one device for all."""
    if map_location is None:
        return default_restore_location
    if isinstance(map_location, dict):
        return lambda storage, location: default_restore_location(
            storage, map_location.get(location, location))
    if isinstance(map_location, (str, bytes)):
        return lambda storage, location: default_restore_location(storage, map_location)
    if isinstance(map_location, _device):
        return lambda storage, location: default_restore_location(storage, str(map_location))

    def restore(storage, location):
        result = map_location(storage, location)
        return default_restore_location(storage, location) if result is None else result
    return restore


class StorageType:
    """What a legacy storage class named in a checkpoint (``torch.FloatStorage``) loads as:
    the dtype of its elements."""

    def __init__(self, name):
        try:
            self._dtype = _STORAGE_DTYPES[name]
        except KeyError:
            raise KeyError(f'pickle storage type "{name}" is not recognized') from None

    @property
    def dtype(self):
        return self._dtype

    def __str__(self):
        return f"StorageType(dtype={self.dtype})"


def _storage_dtype(storage_type):
    """The element dtype a persistent id's storage class stands for (bytes for
    UntypedStorage)."""
    return D.ALIASES["uint8"] if storage_type is UntypedStorage else storage_type.dtype


class _Global:
    """A ``module.name`` to write as a pickle GLOBAL opcode (the object need not exist here)."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args):
        # Callable only so that pickle accepts it as a reduce function; never called here.
        raise TypeError(f"{self.module}.{self.name} is a reference written into a pickle")


class _StorageRef:
    """A storage met while pickling: written once to ``data/<key>``."""

    __slots__ = ("storage", "dtype", "location")

    def __init__(self, storage, dtype, location):
        self.storage = storage
        self.dtype = dtype
        self.location = location  # where the tensor lived: load puts it back there

    def pickled_dtype(self):
        """The dtype its persistent id records: the element type of a typed storage class,
        bytes for an untyped one (uint16/32/64)."""
        return self.dtype if self.dtype.name in _STORAGE_NAMES else D.ALIASES["uint8"]


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
# dtypes without a typed storage class (uint16/32/64): an untyped storage and the dtype
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
# a tensor or parameter with attributes set on it (its __dict__: PyTorch's object state)
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_PARAMETER_WITH_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_TENSOR_TYPE = _Global("torch", "Tensor")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")
_COMPRESSED = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
_REBUILD_META = _Global("torch._utils", "_rebuild_meta_tensor_no_storage")
_REBUILD_QTENSOR = _Global("torch._utils", "_rebuild_qtensor")


def _is_fake_tensor(t):
    from ._subclasses.fake_tensor import FakeTensor
    return isinstance(t, FakeTensor)


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, taught to write :class:`_Global` and ember's objects the way
    PyTorch writes the corresponding torch objects."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}  # id(storage) -> (key, _StorageRef)
        self.legacy = False  # the pre-zip format's storage ids (see _legacy_save)
        self.host_copies = {}  # id(device storage) -> (device storage, host storage)
        self.dispatch = dict(pickle._Pickler.dispatch)
        self.dispatch[_Global] = _Pickler._save_global_ref

    def _host_copy(self, storage):
        """A device storage's bytes in host memory (one copy per storage, so views stay views)."""
        copies = self.host_copies
        entry = copies.get(id(storage))
        if entry is None:
            from .cuda import _lazy_init
            buf = np.empty(storage.nbytes(), np.uint8)
            if buf.nbytes:
                _lazy_init().memcpy_dtoh(buf, storage.data_ptr(), 0)
            entry = copies[id(storage)] = (storage, from_array(buf))
        return entry[1]

    def _save_global_ref(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            known = self.storages.get(id(obj.storage))
            if known is None:
                key = str(len(self.storages))
                self.storages[id(obj.storage)] = (key, obj)
            else:
                key = known[0]
                # one record holds the bytes: the loader reads them as one dtype
                if obj.storage.device.type != "meta" and \
                        known[1].pickled_dtype() is not obj.pickled_dtype():
                    raise RuntimeError("Cannot save multiple tensors or storages that view the "
                                       "same data as different types")
            nbytes = obj.storage.nbytes()
            if obj.dtype.name not in _STORAGE_NAMES:
                if self.legacy:
                    raise RuntimeError(f"save(_use_new_zipfile_serialization=False): the legacy "
                                       f"format has no storage type for {obj.dtype}")
                return ("storage", _Global("torch.storage", "UntypedStorage"), key,
                        obj.location, nbytes)
            saved = ("storage", _Global("torch", _STORAGE_NAMES[obj.dtype.name]), key,
                     obj.location, nbytes // obj.dtype.itemsize)
            return saved + (None,) if self.legacy else saved  # (the legacy view metadata)
        return None

    def reducer_override(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            args = (obj.detach(), obj.requires_grad, collections.OrderedDict())
            if obj.__dict__:
                return (_REBUILD_PARAMETER_WITH_STATE, args + (obj.__dict__,))
            return (_REBUILD_PARAMETER, args)
        if isinstance(obj, Tensor):
            warn_if_has_hooks(obj)  # hooks are never saved (PyTorch's _reduce_ex_internal)
        if isinstance(obj, Tensor) and obj.is_sparse:  # its parts, pickled as tensors
            return (_REBUILD_SPARSE, (obj.layout, (
                obj._indices(), obj._values(), Size(obj.shape), obj.is_coalesced())))
        if isinstance(obj, Tensor) and obj._storage_ is None and obj.layout in _COMPRESSED:
            # (crow_indices and col_indices for CSR/BSR, ccol_indices and row_indices otherwise)
            return (_REBUILD_SPARSE, (obj.layout, (
                obj._sparse.compressed_indices, obj._sparse.plain_indices, obj.values(),
                Size(obj.shape))))
        if isinstance(obj, Tensor) and obj.is_quantized:  # its integers and its quantizer
            storage = obj._storage
            args = (_StorageRef(storage, obj.dtype, location_tag(storage)), obj.storage_offset(),
                    tuple(obj.shape), tuple(obj.stride()), _quantizer_params(obj),
                    obj.requires_grad, collections.OrderedDict())
            return (_REBUILD_QTENSOR, args)
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, layout):
            return (_Global("torch.serialization", "_get_layout"), (f"torch.{obj._name}",))
        if isinstance(obj, D.dtype):
            return _Global("torch", obj.name)
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, obj):
        skip = _serialization_tls.skip_data
        # a FakeTensor saved as the tensor it stands for: its storage's size, its claimed
        # device, none of its own state (the fake mode)
        fake = _serialization_tls.materialize_fake_tensors and _is_fake_tensor(obj)
        if obj.device.type == "meta" and not fake:
            if skip:
                warnings.warn("Serializing tensors on the meta device under skip_data context "
                              "manager is a no-op", stacklevel=2)
            # no storage: the file records the tensor's metadata only
            rebuild, args = _REBUILD_META, (obj.dtype, tuple(obj.shape), obj.stride(),
                                            obj.requires_grad)
        else:
            storage = obj._storage
            location = str(obj.device) if fake else location_tag(storage)
            if storage.device.type == "cuda" and not skip:  # its bytes, copied once
                storage = self._host_copy(storage)
            args = (_StorageRef(storage, obj.dtype, location), obj.storage_offset(),
                    Size(obj.shape), tuple(obj.stride()), obj.requires_grad,
                    collections.OrderedDict())
            rebuild = _REBUILD_TENSOR
            if obj.dtype.name not in _STORAGE_NAMES:
                rebuild, args = _REBUILD_TENSOR_V3, args + (obj.dtype,)
            metadata = tensor_metadata(obj)
            if metadata:  # the conjugate or negative bit, as PyTorch records it
                args = args + (metadata,)
        if obj.__dict__ and not fake:
            return (_REBUILD_FROM_TYPE, (rebuild, _TENSOR_TYPE, args, obj.__dict__))
        return (rebuild, args)

    def save(self, obj, save_persistent_id=True):
        # dtypes and qschemes reduce to a bare GLOBAL: emit it directly.
        if isinstance(obj, (D.dtype, qscheme)):
            return self._save_global_ref(_Global("torch", obj.name))
        return super().save(obj, save_persistent_id)


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


@contextlib.contextmanager
def _atomic_write(path):
    """A binary file object whose contents replace ``path`` only once everything is written
    (same directory, so the final rename is atomic); the new file keeps the old one's mode."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Write ``obj`` (tensors, state dicts, nested containers) to ``f`` in PyTorch's format."""
    skip = _serialization_tls.skip_data
    if skip and not _use_new_zipfile_serialization:
        raise RuntimeError("Cannot use skip_data=True with _use_new_zipfile_serialization=False")
    name = "archive"
    if _is_path(f):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    buf = io.BytesIO()
    pickler = _Pickler(buf, pickle_protocol)
    pickler.legacy = not _use_new_zipfile_serialization
    pickler.dump(obj)
    with contextlib.ExitStack() as stack:
        target = stack.enter_context(_atomic_write(f)) if _is_path(f) else f
        if pickler.legacy:
            return _legacy_save(pickler, buf.getvalue(), target, pickle_protocol)
        zf = _ZipWriter(target, name, bool(get_crc32_options()))
        zf.write_record("data.pkl", buf.getbuffer())
        # .format_version 1: storages numbered in the order they are written, which lets
        # PyTorch compute their offsets
        zf.write_record(".format_version", b"1")
        zf.write_record(".storage_alignment", str(_ALIGNMENT).encode())
        if not _disable_byteorder_record:
            zf.write_record("byteorder", sys.byteorder.encode())
        for key, ref in pickler.storages.values():
            if skip:
                zf.write_record_metadata(f"data/{key}", ref.storage.nbytes())
            else:
                zf.write_record(f"data/{key}", ref.storage._data())
        zf.write_record("version", b"3\n")
        zf.write_record(".data/serialization_id", b"0" * 40)
        zf.finish()
        if not _is_path(f) and hasattr(target, "flush"):
            target.flush()


def _legacy_save(pickler, pickled, f, protocol):
    """PyTorch's pre-zip format (``save(..., _use_new_zipfile_serialization=False)``), which
    :func:`_legacy_load` reads: the magic number, protocol version and system information, the
    object, the storage keys, then per storage its element count (int64) and bytes."""
    sys_info = dict(protocol_version=LEGACY_PROTOCOL_VERSION, little_endian=True,
                    type_sizes=dict(short=2, int=4, long=4))
    for value in (LEGACY_MAGIC_NUMBER, LEGACY_PROTOCOL_VERSION, sys_info):
        pickle.dump(value, f, protocol)
    f.write(pickled)
    refs = sorted(pickler.storages.values(), key=lambda kv: kv[0])
    pickle.dump([key for key, _ in refs], f, protocol)
    for _, ref in refs:
        data = bytes(ref.storage._data())
        f.write(struct.pack("<q", len(data) // ref.dtype.itemsize))
        f.write(data)


# PyTorch starts each record's bytes at a multiple of 64 in the archive (so storages can be
# mapped and read in place: ``load(mmap=True)``), padding the record's local header with an
# extra field of id "FB".
_ALIGNMENT = 64
_LOCAL_HEADER = 30
# At or above this a record's size or offset takes zip64 fields (miniz's MZ_UINT32_MAX).
_ZIP64_LIMIT = 0xFFFFFFFF
_UTF8_NAME = 0x0800
_DATA_DESCRIPTOR = 0x0008  # crc and sizes follow the bytes, not in the local header


class _ZipWriter:
    """A checkpoint archive laid out as PyTorch's writer (miniz, as ``PyTorchFileWriter``
    drives it) lays it out, written front to back: a local header without crc or sizes, whose
    extra field pads the record's bytes to a 64-byte boundary; the bytes; a data descriptor
    with the crc (0 when crcs are off, or for bytes not written) and sizes; then the central
    directory and a zip64 end record. PyTorch computes storage offsets from this layout
    (``torch.utils.serialization.config.load.calculate_storage_offsets``)."""

    def __init__(self, fp, name, compute_crc32):
        self.fp = fp
        self.name = name
        self.compute_crc32 = compute_crc32
        self.offset = 0  # from the archive's start, where PyTorch's alignment is counted
        self.entries = []  # (name, flags, crc, size, local header offset)

    def _write(self, data):
        self.fp.write(data)
        self.offset += memoryview(data).nbytes

    def _skip(self, nbytes):
        """Leave ``nbytes`` unwritten: a hole in a seekable file, zeros in a stream."""
        if getattr(self.fp, "seekable", lambda: False)():
            self.fp.seek(nbytes, os.SEEK_CUR)
        else:
            zeros = memoryview(bytes(min(nbytes, 1 << 20)))
            for done in range(0, nbytes, max(len(zeros), 1)):
                self.fp.write(zeros[:nbytes - done])
        self.offset += nbytes

    @staticmethod
    def _zip64_fields(size, offset):
        """The zip64 extra field for a record whose size or offset does not fit 32 bits."""
        fields = struct.pack("<QQ", size, size) if size >= _ZIP64_LIMIT else b""
        if offset >= _ZIP64_LIMIT:
            fields += struct.pack("<Q", offset)
        return struct.pack("<HH", 1, len(fields)) + fields if fields else b""

    def _record(self, name, size, data):
        arcname = f"{self.name}/{name}".encode()
        offset = self.offset
        zip64 = self._zip64_fields(size, offset)
        pad = -(offset + _LOCAL_HEADER + len(arcname) + len(zip64) + 4) % _ALIGNMENT
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        flags = _UTF8_NAME | (_DATA_DESCRIPTOR if size else 0)
        self._write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 0, flags, 0, 0, 0, 0, 0, 0,
                                len(arcname), len(extra)) + arcname + extra)
        if data is None:
            crc = 0
            self._skip(size)
        else:
            crc = zlib.crc32(data) if self.compute_crc32 else 0
            self._write(data)
        if size:
            self._write(struct.pack("<4sLQQ" if zip64 else "<4s3L", b"PK\x07\x08", crc, size,
                                    size))
        self.entries.append((arcname, flags, crc, size, offset))

    def write_record(self, name, data):
        """Record ``<archive>/<name>`` holding ``data`` (bytes-like)."""
        self._record(name, memoryview(data).nbytes, data)

    def write_record_metadata(self, name, nbytes):
        """Record ``<archive>/<name>`` of ``nbytes`` whose bytes are left unwritten."""
        self._record(name, nbytes, None)

    def finish(self):
        """Write the central directory and the end records."""
        start = self.offset
        for arcname, flags, crc, size, offset in self.entries:
            extra = self._zip64_fields(size, offset)
            self._write(struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 0, 0, flags, 0, 0, 0, crc, _field32(size),
                _field32(size), len(arcname), len(extra), 0, 0, 0, 0, _field32(offset))
                + arcname + extra)
        size, count, end64 = self.offset - start, len(self.entries), self.offset
        self._write(struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 0x031E, 0x2D, 0, 0, count,
                                count, size, start))
        self._write(struct.pack("<4sLQL", b"PK\x06\x07", 0, end64, 1))
        self._write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF),
                                min(count, 0xFFFF), _field32(size), _field32(start), 0))


def _field32(value):
    """A size or offset's 32-bit field: the value, or all ones where a zip64 field holds it."""
    return 0xFFFFFFFF if value >= _ZIP64_LIMIT else value


_MINIZ_ERROR = ("PytorchStreamReader failed reading zip archive: {}. This is an internal miniz "
                "error. If you are seeing this error, there is a high likelihood that your "
                "checkpoint file is corrupted. This can happen if the checkpoint was not saved "
                "properly, was transferred incorrectly, or the file was modified after saving.")
_END_RECORD = 22  # the shortest zip: its end of central directory record


def _is_zipfile(f):
    """Whether ``f`` starts, where it stands, with a zip record (as PyTorch tells a zip
    checkpoint from a legacy one)."""
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    return magic == b"PK\x03\x04"


def _zip_reader(f):
    """The directory of zip checkpoint ``f`` (a path or a file), or PyTorch's error for a
    damaged one."""
    start = 0 if _is_path(f) else f.tell()
    try:
        return zipfile.ZipFile(f)
    except zipfile.BadZipFile:
        if _is_path(f):
            size = os.path.getsize(f)
        else:
            size = f.seek(0, os.SEEK_END) - start
            f.seek(start)
        reason = ("not a ZIP archive" if size < _END_RECORD
                  else "failed finding central directory")
        raise RuntimeError(_MINIZ_ERROR.format(reason)) from None


def _data_offset(f, info):
    """Where record ``info``'s bytes start in ``f`` (after its local header)."""
    f.seek(info.header_offset)
    name_len, extra_len = struct.unpack("<HH", f.read(_LOCAL_HEADER)[26:30])
    return info.header_offset + _LOCAL_HEADER + name_len + extra_len


def _read_record(f, zf, info):
    """A record's bytes, fresh and writable. Stored records are read in place without checking
    their crc, as PyTorch's reader does (its files may record none)."""
    if info.compress_type != zipfile.ZIP_STORED:
        return bytearray(zf.read(info))
    f.seek(_data_offset(f, info))
    out = bytearray(info.file_size)
    got = f.readinto(out) if hasattr(f, "readinto") else None
    if got is None:
        data = f.read(info.file_size)
        got = len(data)
        out[:got] = data
    if got != info.file_size:
        raise RuntimeError(f"PytorchStreamReader failed reading file {info.filename}: file read "
                           f"failed")
    return out


def _mapped_record(path, zf, arcname, shared):
    """The bytes of stored record ``arcname`` of zip ``path``, mapped from the file: shared
    (writes reach the file) or copy-on-write (PyTorch's default MAP_PRIVATE: writes stay in
    this process)."""
    info = zf.getinfo(arcname)
    if info.compress_type != zipfile.ZIP_STORED:
        raise RuntimeError(f"load(mmap=True): record {arcname} is compressed and cannot be "
                           f"mapped")
    with open(path, "rb") as fh:
        offset = _data_offset(fh, info)
    if info.file_size == 0:
        return np.empty(0, np.uint8)
    return np.memmap(path, np.uint8, mode="r+" if shared else "c", offset=offset,
                     shape=(info.file_size,))


class PyTorchFileReader:
    """The records of a checkpoint's zip archive by name relative to its top folder
    (``"data.pkl"``, ``"data/0"``): PyTorch's ``torch.PyTorchFileReader``, which libraries use
    to read a checkpoint's pickle and storages themselves (Lightning's lazy loading)."""

    def __init__(self, file):
        if isinstance(file, (str, os.PathLike)) and not os.path.exists(file):
            raise RuntimeError(f"open file failed because of errno 2 on fopen: No such file "
                               f"or directory, file path: {os.fspath(file)}")
        self._zf = _zip_reader(file)
        names = self._zf.namelist()
        self._prefix = names[0].split("/", 1)[0] + "/" if names else ""

    def _info(self, name):
        try:
            return self._zf.getinfo(self._prefix + name)
        except KeyError:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               f"found") from None

    def get_all_records(self):
        return [n[len(self._prefix):] for n in self._zf.namelist()]

    def has_record(self, name):
        return self._prefix + name in self._zf.namelist()

    def get_record(self, name):
        return bytes(_read_record(self._zf.fp, self._zf, self._info(name)))

    def get_record_size(self, name):
        return self._info(name).file_size

    def get_record_offset(self, name):
        """Where the record's bytes start in the file (after its local header)."""
        return _data_offset(self._zf.fp, self._info(name))

    def get_storage_from_record(self, name, numel, dtype):
        """The record's first ``numel`` bytes as a uint8 tensor over a storage of its own
        (``dtype`` is ``UntypedStorage`` in PyTorch's callers: bytes, whatever they hold)."""
        data = np.frombuffer(bytearray(self.get_record(name)[:numel]), np.uint8)
        return make_tensor(from_array(data), (data.size,), (1,), 0, D.uint8, _device("cpu"))

    def serialization_id(self):
        return (self.get_record(".data/serialization_id").decode()
                if self.has_record(".data/serialization_id") else "")


# ---------------------------------------------------------------------------------------------
# Loading

def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    from .storage import TypedStorage
    if isinstance(storage, TypedStorage):
        # called as torch._utils._rebuild_tensor_v2 by a library's own unpickler (Lightning's
        # lazy loading, on meta storages): PyTorch's set_ onto the storage, which may grow it
        import ember
        t = ember.empty((0,), dtype=storage.dtype, device=storage._untyped_storage.device)
        t.set_(storage._untyped_storage, storage_offset, tuple(size), tuple(stride))
        set_tensor_metadata(t, metadata)
        if requires_grad:
            t.requires_grad_(True)
        return t
    untyped, dtype, *view_offset = storage  # a legacy storage view adds its element offset
    if view_offset:
        storage_offset += view_offset[0]
    size, stride = tuple(size), tuple(stride)
    needed = _st.storage_extent(size, stride, storage_offset) * dtype.itemsize
    if _st.numel(size) and needed > untyped.nbytes():
        # PyTorch's set_ would have to grow the loaded storage, which it refuses: a crafted
        # file cannot make a tensor read memory outside its own bytes
        raise RuntimeError("Trying to resize storage that is not resizable")
    t = make_tensor(untyped, size, stride, storage_offset, dtype, untyped.device)
    set_tensor_metadata(t, metadata)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    """A tensor over an untyped storage, its dtype given separately (uint16/32/64)."""
    untyped, _, *view_offset = storage
    return _rebuild_tensor_v2((untyped, dtype, *view_offset), storage_offset, size, stride,
                              requires_grad, backward_hooks, metadata)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """A meta tensor from its pickled metadata (a meta tensor has no bytes to save)."""
    from . import empty_strided
    return empty_strided(size, stride, dtype=dtype, device="meta", requires_grad=requires_grad)


def _get_layout(name):
    """A layout from its pickled name (``"torch.sparse_coo"``)."""
    found = getattr(_device_module, name.rpartition(".")[2], None)
    if not isinstance(found, layout):
        raise RuntimeError(f"Unknown layout {name!r}")
    return found


def _rebuild_sparse_tensor(layout, data):
    """A sparse COO or compressed tensor from its pickled parts (PyTorch's; older files have no
    ``is_coalesced``)."""
    from ._ops.overload import ops
    if layout in _COMPRESSED:
        compressed_indices, plain_indices, values, size = data
        return ops.aten._sparse_compressed_tensor_unsafe.default._call(
            compressed_indices, plain_indices, values, size, None, layout, None, None)
    if layout is not sparse_coo:
        raise NotImplementedError(f"rebuilding sparse tensor for layout {layout}")
    indices, values, size = data[:3]
    is_coalesced = data[3] if len(data) > 3 else None
    return ops.aten._sparse_coo_tensor_unsafe.default._call(indices, values, size, None, None,
                                                            None, None, is_coalesced)


def _quantizer_params(t):
    """What PyTorch pickles of a quantized tensor's quantizer (``Tensor._reduce_ex_internal``):
    ``(per_tensor_affine, scale, zero_point)`` or ``(per_channel_affine, scales, zero_points,
    axis)``."""
    if t.qscheme() is per_tensor_affine:
        return (per_tensor_affine, t.q_scale(), t.q_zero_point())
    return (per_channel_affine, t.q_per_channel_scales(), t.q_per_channel_zero_points(),
            t.q_per_channel_axis())


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad,
                     backward_hooks):
    """A quantized tensor over a loaded storage (``torch._utils._rebuild_qtensor``, with its
    checks of a per-channel quantizer against the size)."""
    from ._core.quantizer import PerChannelAffineQuantizer, PerTensorAffineQuantizer
    from ._core.tensor_impl import quantized_tensor_impl
    untyped, dtype, *view_offset = storage
    if view_offset:
        storage_offset += view_offset[0]
    size, stride = tuple(size), tuple(stride)
    scheme = quantizer_params[0]
    if scheme is per_tensor_affine:
        _, scale, zero_point = quantizer_params
        quantizer = PerTensorAffineQuantizer(dtype, scale, zero_point)
    elif scheme is per_channel_affine:
        _, scales, zero_points, axis = quantizer_params
        if not 0 <= axis < len(size):
            raise ValueError(f"_rebuild_qtensor: per_channel axis {axis} out of range for size "
                             f"{size}")
        expected = int(size[axis])
        n_scales = len(scales) if isinstance(scales, list) else scales.numel()
        n_zps = len(zero_points) if isinstance(zero_points, list) else zero_points.numel()
        if n_scales != expected or n_zps != expected:
            raise ValueError(f"_rebuild_qtensor: per_channel scales/zero_points length must "
                             f"equal size[axis]={expected}, got scales={n_scales}, "
                             f"zero_points={n_zps}")
        import ember
        scales = ember.as_tensor(scales, dtype=D.float64).contiguous()
        zero_points = ember.as_tensor(zero_points, dtype=D.int64).contiguous()
        quantizer = PerChannelAffineQuantizer(dtype, scales, zero_points, axis)
    else:
        raise RuntimeError(f"Can't deserialize quantized tensor with qscheme {scheme}")
    needed = _st.storage_extent(size, stride, storage_offset) * dtype.itemsize
    if _st.numel(size) and needed > untyped.nbytes():
        raise RuntimeError("Trying to resize storage that is not resizable")
    t = quantized_tensor_impl(untyped, size, stride, storage_offset, quantizer, untyped.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = _rebuild_parameter(data, requires_grad, backward_hooks)
    for k, v in state.items():
        setattr(param, k, v)
    return param


def _torch_globals():
    """The torch names a checkpoint may reference, mapped to ember objects."""
    table = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
             ("torch._utils", "_rebuild_meta_tensor_no_storage"):
                 _rebuild_meta_tensor_no_storage,
             ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
             ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
             ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
             ("torch.serialization", "_get_layout"): _get_layout,
             ("torch", "Tensor"): Tensor,
             ("torch", "Size"): Size,
             ("torch", "device"): _device,
             ("collections", "OrderedDict"): collections.OrderedDict,
             ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
             ("torch", "UntypedStorage"): UntypedStorage,
             ("torch.storage", "UntypedStorage"): UntypedStorage}
    for name in _STORAGE_DTYPES:
        table[("torch", name)] = StorageType(name)
    for name in D.ALIASES:
        table[("torch", name)] = D.ALIASES[name]
    for scheme in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                   per_channel_symmetric, per_channel_affine_float_qparams):
        table[("torch", scheme.name)] = scheme
    return table


_TORCH_GLOBALS = _torch_globals()
# What PyTorch's weights-only unpickler allows besides torch's own names
_DEFAULT_SAFE_GLOBALS = {("collections", "Counter"): collections.Counter,
                         ("builtins", "set"): set, ("builtins", "complex"): complex,
                         ("builtins", "bytearray"): bytearray,
                         ("_codecs", "encode"): __import__("_codecs").encode}
_safe_globals = {}


def add_safe_globals(safe_globals):
    """Allow these objects (or ``(obj, "module.name")`` pairs) in ``weights_only`` loads."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, full = g
        else:
            obj, full = g, f"{g.__module__}.{g.__qualname__}"
        module, _, name = full.rpartition(".")
        _safe_globals[(module, name)] = obj


def get_safe_globals():
    """The objects allowed in ``weights_only`` loads through :func:`add_safe_globals`."""
    return list(_safe_globals.values())


def clear_safe_globals():
    """Forget every object :func:`add_safe_globals` allowed."""
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(globals_list):
    """Allow these objects in ``weights_only`` loads for the block."""
    saved = dict(_safe_globals)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _safe_globals.clear()
        _safe_globals.update(saved)


def _pytorch_allowed_globals():
    """The names PyTorch's weights-only unpickler allows by default (its
    ``_get_allowed_globals``), those ember cannot build included (quantized and nested
    tensors): a checkpoint naming them needs nothing allowed, ember simply lacks them."""
    names = {"collections.OrderedDict", "collections.Counter", "torch.nn.parameter.Parameter",
             "torch.serialization._get_layout", "torch.Size", "torch.Tensor", "torch.device",
             "_codecs.encode", "builtins.bytearray", "builtins.set", "builtins.complex",
             "torch._tensor._rebuild_from_type_v2", "torch.storage.TypedStorage",
             "torch.storage.UntypedStorage"}
    dtypes = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
              "uint8", "bool", "complex64", "complex128", "complex32", "qint8", "quint8",
              "qint32", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8",
              "bits16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
              "float8_e8m0fnu", "float4_e2m1fn_x2", "uint16", "uint32", "uint64"]
    dtypes += [f"uint{n}" for n in range(1, 8)] + [f"int{n}" for n in range(1, 8)]
    names.update(f"torch.{d}" for d in dtypes)
    kinds = ["Double", "Float", "Long", "Int", "Short", "Char", "Byte", "BFloat16", "Half"]
    for module in ("torch", "torch.cuda"):
        names.update(f"{module}.{k}Tensor" for k in kinds + ["Bool"])
        names.update(f"{module}.sparse.{k}Tensor" for k in kinds)
        names.update(f"{module}.{name}" for name in _STORAGE_DTYPES)
    names.update(f"torch.{q}Storage" for q in ("QInt32", "QInt8", "QUInt2x4", "QUInt4x2",
                                               "QUInt8"))
    names.update(f"torch.{q}" for q in ("per_tensor_affine", "per_tensor_symmetric",
                                        "per_channel_affine", "per_channel_symmetric",
                                        "per_channel_affine_float_qparams"))
    names.update(f"torch._utils.{f}" for f in (
        "_rebuild_parameter", "_rebuild_parameter_with_state", "_rebuild_qtensor",
        "_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_sparse_tensor",
        "_rebuild_meta_tensor_no_storage", "_rebuild_nested_tensor", "_rebuild_wrapper_subclass",
        "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor"))
    return frozenset(names)


_PYTORCH_ALLOWED_GLOBALS = _pytorch_allowed_globals()


def _safe_global_names():
    """Every ``module.name`` a weights-only load accepts now: PyTorch's default allow-list,
    ember's own torch names, and what the user allowed (an ember class allowing its torch
    twin too)."""
    names = set(_PYTORCH_ALLOWED_GLOBALS)
    for module, name in [*_TORCH_GLOBALS, *_DEFAULT_SAFE_GLOBALS, *_safe_globals]:
        names.add(f"{module}.{name}")
        if module == "ember" or module.startswith("ember."):
            names.add(f"torch{module[5:]}.{name}")
    return names


# what follows each opcode of the protocol 2 pickles torch.save writes, by its size in bytes
# (the rest: a length first, a line, or unsupported)
_OPCODE_ARG_BYTES = {op[0]: n for op, n in (
    (pickle.NEWOBJ, 0), (pickle.REDUCE, 0), (pickle.BUILD, 0), (pickle.APPEND, 0),
    (pickle.APPENDS, 0), (pickle.SETITEM, 0), (pickle.SETITEMS, 0), (pickle.MARK, 0),
    (pickle.TUPLE, 0), (pickle.TUPLE1, 0), (pickle.TUPLE2, 0), (pickle.TUPLE3, 0),
    (pickle.NONE, 0), (pickle.NEWFALSE, 0), (pickle.NEWTRUE, 0), (pickle.EMPTY_TUPLE, 0),
    (pickle.EMPTY_LIST, 0), (pickle.EMPTY_DICT, 0), (pickle.EMPTY_SET, 0),
    (pickle.BINPERSID, 0), (pickle.BININT, 4), (pickle.BININT1, 1), (pickle.BININT2, 2),
    (pickle.BINFLOAT, 8), (pickle.BINGET, 1), (pickle.LONG_BINGET, 4), (pickle.BINPUT, 1),
    (pickle.LONG_BINPUT, 4), (pickle.PROTO, 1))}


def _globals_in_pickle(f):
    """The ``module.name`` of every GLOBAL opcode in the pickle ``f``, read without unpickling
    it; as PyTorch's reader, an opcode outside what ``torch.save`` writes is refused."""
    found = set()
    while True:
        key = f.read(1)
        if not key:
            raise EOFError
        op = key[0]
        if op == pickle.GLOBAL[0]:
            module = f.readline()[:-1].decode("utf-8")
            name = f.readline()[:-1].decode("utf-8")
            found.add("{}.{}".format(*_python3_name(module, name)))
        elif op in _OPCODE_ARG_BYTES:
            f.read(_OPCODE_ARG_BYTES[op])
        elif op == pickle.BINUNICODE[0]:
            f.read(struct.unpack("<I", f.read(4))[0])
        elif op in (pickle.SHORT_BINSTRING[0], pickle.LONG1[0]):
            f.read(f.read(1)[0])
        elif op == pickle.STOP[0]:
            return found
        else:
            raise pickle.UnpicklingError(f"Unsupported operand {op}")


def get_unsafe_globals_in_checkpoint(f: FileLike):
    """The ``module.name`` of each function or class a ``save`` checkpoint's pickle names that
    a weights-only load does not allow (by default or through :func:`add_safe_globals`). The
    pickle is read without being run, so a class only built while unpickling goes unseen."""
    with contextlib.ExitStack() as stack:
        fobj = stack.enter_context(open(f, "rb")) if _is_path(f) else f
        if not _is_zipfile(fobj):
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        reader = PyTorchFileReader(fobj)
        if "constants.pkl" in reader.get_all_records():
            raise ValueError("Expected input to be a checkpoint returned by torch.save but got "
                             "a torchscript checkpoint")
        found = _globals_in_pickle(io.BytesIO(reader.get_record("data.pkl")))
    return sorted(found - _safe_global_names())


_UNSAFE_MESSAGE = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, "
    "\x1b[1mdo those steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) "
    "Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can "
    "result in arbitrary code execution. Do it only if you got the file from a trusted source."
    "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps "
    "in the following error message.\n\tWeightsUnpickler error: {}")


class _Unpickler(pickle.Unpickler):
    """Resolves torch names to ember objects; with ``weights_only`` nothing else but plain
    containers and explicitly allowed globals."""

    def __init__(self, file, weights_only, load_storage):
        super().__init__(file)
        self.weights_only = weights_only
        self.load_storage = load_storage

    def find_class(self, module, name):
        module, name = _python3_name(module, name)
        key = (module, name)
        if key in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[key]
        if key in _DEFAULT_SAFE_GLOBALS:
            return _DEFAULT_SAFE_GLOBALS[key]
        if key in _safe_globals:
            return _safe_globals[key]
        twin = _ember_twin(module, name, self.weights_only)
        if twin is not None:
            return twin
        if self.weights_only:
            raise pickle.UnpicklingError(_UNSAFE_MESSAGE.format(
                f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by "
                f"default. Please use `ember.serialization.add_safe_globals([{name}])` or the "
                f"`ember.serialization.safe_globals([{name}])` context manager to allowlist "
                "this global if you trust this class/function."))
        if module.startswith("torch"):
            raise pickle.UnpicklingError(f"ember cannot load the PyTorch object {module}.{name}")
        return super().find_class(module, name)

    def persistent_load(self, saved_id):
        if saved_id[0] != "storage":
            raise pickle.UnpicklingError(f"Unknown typename for persistent_load, expected "
                                         f"'storage' but got '{saved_id[0]}'")
        return self.load_storage(saved_id)


def _python3_name(module, name):
    """``module.name`` as Python 3 spells it: a protocol 0-2 pickle names Python 2's modules
    (``__builtin__.set``), mapped as pickle's own Unpickler maps them."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _ember_twin(module, name, weights_only):
    """``torch.nn.modules.linear.Linear`` in a whole-module checkpoint is ember's class of the
    same path, when the user allowed it (or loads with ``weights_only=False``)."""
    if not module.startswith("torch.") and module != "torch":
        return None
    twin_module = "ember" + module[len("torch"):]
    if (twin_module, name) in _safe_globals:
        return _safe_globals[(twin_module, name)]
    if weights_only:
        return None
    import importlib
    try:
        return getattr(importlib.import_module(twin_module), name)
    except (ImportError, AttributeError):
        return None


def _no_storage(saved_id):
    raise pickle.UnpicklingError("bare pickle references a storage")


LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001


def _byteswap(buf, dtype):
    """Reverse, in place, the byte order of each element of ``dtype`` in byte array ``buf``
    (of each part of a complex number)."""
    size = dtype.itemsize // 2 if dtype.is_complex else dtype.itemsize
    if size > 1:
        buf.view(f"u{size}").byteswap(inplace=True)


def _untyped(storage):
    """The untyped storage under what a restore returned (map_location may give a typed one)."""
    from .storage import TypedStorage
    return storage.untyped() if isinstance(storage, TypedStorage) else storage


def _legacy_load(f, weights_only, restore):
    """PyTorch's pre-zip format, after its magic number: protocol version, system info, the
    object (storages as persistent ids), the storage keys, then per storage its element count
    (int64) and bytes. The bytes come after the object, so storages are read on the CPU and
    restored to their locations afterwards; when one moves, the object is unpickled again over
    the moved storages."""
    version = _Unpickler(f, weights_only, _no_storage).load()
    if version != LEGACY_PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info = _Unpickler(f, weights_only, _no_storage).load()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    storages = {}  # root key -> (bytes to fill, CPU storage, dtype, location)
    restored = {}  # root key -> the storage where it was restored to

    def load_storage(saved_id):
        _, storage_type, key, location, numel, *view = saved_id
        dtype = _storage_dtype(storage_type)
        if key not in storages:
            buf = np.zeros(numel * dtype.itemsize, np.uint8)
            storages[key] = (buf, from_array(buf), dtype, location)
        storage = restored.get(key, storages[key][1])
        if view and view[0] is not None:  # (view key, element offset, element count)
            return storage, dtype, view[0][1]
        return storage, dtype

    start = f.tell()
    result = _Unpickler(f, weights_only, load_storage).load()
    keys = _Unpickler(f, weights_only, _no_storage).load()
    if not _serialization_tls.skip_data:
        for key in keys:
            buf, _, dtype, _ = storages[key]
            _read_legacy_storage(f, buf, dtype, little)
    for key, (_, storage, _, location) in storages.items():
        restored[key] = _untyped(restore(storage, location))
    if any(restored[key] is not storages[key][1] for key in storages):
        f.seek(start)
        result = _Unpickler(f, weights_only, load_storage).load()
    return result


def _read_legacy_storage(f, buf, dtype, little):
    """Fill ``buf`` with the next storage of legacy file ``f``: its element count (checked
    against ``buf``), then its bytes, little-endian or not."""
    head = f.read(8)
    if len(head) < 8:
        raise RuntimeError(f"unexpected EOF, expected {8 - len(head)} more bytes. The file "
                           f"might be corrupted.")
    (numel,) = struct.unpack("<q" if little else ">q", head)
    if numel * dtype.itemsize != buf.size:
        raise RuntimeError(f"storage has wrong byte size: expected {buf.size} got "
                           f"{numel * dtype.itemsize}")
    data = f.read(buf.size)
    if len(data) < buf.size:
        raise RuntimeError(f"unexpected EOF, expected {buf.size - len(data)} more bytes. The "
                           f"file might be corrupted.")
    buf[:] = np.frombuffer(data, np.uint8)
    if little != (sys.byteorder == "little"):
        _byteswap(buf, dtype)


def _file_byteorder(f, zf, prefix):
    """The byte order of the storages in zip checkpoint ``f``: its byteorder record, else the
    default load endianness (None: native, nothing to swap)."""
    try:
        info = zf.getinfo(prefix + "byteorder")
    except KeyError:
        endianness = get_default_load_endianness()
        if endianness is None and sys.byteorder == "big":
            warnings.warn("The default load endianness for checkpoints without a byteorder mark "
                          "on big endian machines was changed from 'native' to 'little' endian, "
                          "to avoid this behavior please use "
                          "torch.serialization.set_default_load_endianness to set the desired "
                          "default load endianness", UserWarning, stacklevel=3)
        if endianness in (LoadEndianness.LITTLE, None):
            return "little"
        return "big" if endianness == LoadEndianness.BIG else None
    recorded = bytes(_read_record(f, zf, info))
    if recorded not in (b"little", b"big"):
        raise ValueError("Unknown endianness type: " + recorded.decode())
    return recorded.decode()


def _load_zip(fobj, zf, mmap_path, map_location, weights_only):
    """The object in zip checkpoint ``fobj``, each storage read (or mapped from
    ``mmap_path``), put in the file's byte order, and restored where ``map_location`` says."""
    names = zf.namelist()
    pkl = next((n for n in names if n.endswith("data.pkl")), None)
    if pkl is None:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    prefix = pkl[:-len("data.pkl")]
    byteorder = _file_byteorder(fobj, zf, prefix)
    swap = byteorder is not None and byteorder != sys.byteorder
    restore = _restore_location_fn(map_location)
    to_meta = _is_meta_location(map_location)
    skip = _serialization_tls.skip_data
    shared = get_default_mmap_options() == MAP_SHARED
    loaded = {}

    def load_storage(saved_id):
        _, storage_type, key, location, numel = saved_id
        dtype = _storage_dtype(storage_type)
        if key not in loaded:
            nbytes = numel * dtype.itemsize
            if to_meta:  # no bytes to read
                loaded[key] = (meta_storage(nbytes), dtype)
                return loaded[key]
            if skip:
                storage = UntypedStorage(nbytes)
            else:
                name = f"{prefix}data/{key}"
                # mapped bytes are the file's: ones to swap are read as a copy instead
                if mmap_path is not None and not swap:
                    arr = _mapped_record(mmap_path, zf, name, shared)
                    if arr.ctypes.data % np.dtype(dtype._np).alignment:  # (an unaligned file)
                        arr = arr.copy()
                else:
                    arr = np.frombuffer(_read_record(fobj, zf, zf.getinfo(name)), np.uint8)
                    if swap:
                        _byteswap(arr, dtype)
                storage = from_array(arr)
            loaded[key] = (_untyped(restore(storage, location)), dtype)
        return loaded[key]

    pickled = _read_record(fobj, zf, zf.getinfo(pkl))
    return _Unpickler(io.BytesIO(pickled), weights_only, load_storage).load()


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read an object written by ``ember.save`` or ``torch.save``."""
    if weights_only is None:
        weights_only = True
    with contextlib.ExitStack() as stack:
        fobj = stack.enter_context(open(f, "rb")) if _is_path(f) else f
        if _is_zipfile(fobj):
            zf = stack.enter_context(_zip_reader(fobj))
            if mmap and not _is_path(f):
                raise ValueError("f must be a file path in order to use the mmap argument")
            return _load_zip(fobj, zf, f if mmap else None, map_location, weights_only)
        if mmap:
            f_name = f"{f}, " if isinstance(f, str) else ""
            raise RuntimeError("mmap can only be used with files saved with "
                               f"`torch.save({f_name}_use_new_zipfile_serialization=True), "
                               "please torch.save your checkpoint with this option in order to "
                               "use mmap.")
        first = _Unpickler(fobj, weights_only, _no_storage).load()
        if first.__class__ is int and first == LEGACY_MAGIC_NUMBER:
            return _legacy_load(fobj, weights_only, _restore_location_fn(map_location))
        return first  # a bare pickle: no storages can be referenced

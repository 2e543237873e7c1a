"""``ember.save`` / ``ember.load``: checkpoints in PyTorch's zip format.

A file is a zip archive ``<name>/data.pkl`` + ``<name>/data/<key>`` (one raw little-endian
storage each) + ``<name>/version``, ``<name>/byteorder``. Tensors are pickled as PyTorch
pickles them (``torch._utils._rebuild_tensor_v2`` over a persistent storage id
``('storage', torch.<Type>Storage, key, 'cpu', numel)``), so PyTorch reads ember's files and
ember reads PyTorch's, neither importing the other: the ``torch.*`` names are written as pickle
GLOBAL opcodes and mapped to ember objects on load.

Loading is safe by default (``weights_only=True``): the unpickler resolves only an allow-list
of globals (tensor/parameter rebuilders, storages, dtypes, ``Size``, ``device``, ``OrderedDict``
and plain containers), so a file cannot make ``load`` run arbitrary code. ``add_safe_globals``
extends the list; ``weights_only=False`` is the trusting full unpickler.

Also read: PyTorch's legacy (pre-1.6) format, a stream of pickles (magic number, protocol
version, system info, the object, the storage keys) followed by each storage's element count and
bytes. Every tensor is checked against its storage's size before it is built, as PyTorch does;
a damaged zip says so. ``save`` writes a temporary file beside the target and renames it into
place, so a failed save never destroys the previous checkpoint.
"""
import _compat_pickle
import collections
import contextlib
import io
import os
import pickle
import struct
import tempfile
import zipfile

import numpy as np

from ._core import dtype as D
from ._core import strides as _st
from ._core import device as _device_module
from ._core.device import CPU, device as _device, layout, sparse_coo, sparse_csr
from ._core.size import Size
from ._core.storage import from_array
from ._tensor import Tensor, make_tensor

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

DEFAULT_PROTOCOL = 2

# PyTorch's storage class name per dtype (what the persistent id names).
_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_STORAGE_DTYPES = {v: D.ALIASES[k] for k, v in _STORAGE_NAMES.items()}
_STORAGE_DTYPES["UntypedStorage"] = D.ALIASES["uint8"]


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

    def __init__(self, storage, dtype, location="cpu"):
        self.storage = storage
        self.dtype = dtype
        self.location = location  # where the tensor lived: load puts it back there


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
# dtypes without a typed storage class (uint16/32/64): an untyped storage and the dtype
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
# a tensor or parameter with attributes set on it (its __dict__: PyTorch's object state)
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_PARAMETER_WITH_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_TENSOR_TYPE = _Global("torch", "Tensor")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")


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
            key, _ = self.storages.setdefault(id(obj.storage), (str(len(self.storages)), obj))
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
        if isinstance(obj, Tensor) and obj.is_sparse:  # its parts, pickled as tensors
            return (_REBUILD_SPARSE, (obj.layout, (
                obj._indices(), obj._values(), Size(obj.shape), obj.is_coalesced())))
        if isinstance(obj, Tensor) and obj.is_sparse_csr:
            return (_REBUILD_SPARSE, (obj.layout, (
                obj.crow_indices(), obj.col_indices(), obj.values(), Size(obj.shape))))
        if isinstance(obj, Tensor):
            if obj.device.type != "cpu":  # the bytes of its device storage, copied once
                ref = _StorageRef(self._host_copy(obj._storage), obj.dtype, str(obj.device))
            else:
                ref = _StorageRef(obj._storage, obj.dtype)
            args = (ref, obj.storage_offset(), Size(obj.shape), tuple(obj.stride()),
                    obj.requires_grad, collections.OrderedDict())
            rebuild = _REBUILD_TENSOR
            if obj.dtype.name not in _STORAGE_NAMES:
                rebuild, args = _REBUILD_TENSOR_V3, args + (obj.dtype,)
            if obj.__dict__:
                return (_REBUILD_FROM_TYPE, (rebuild, _TENSOR_TYPE, args, obj.__dict__))
            return (rebuild, args)
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, layout):
            return (_Global("torch.serialization", "_get_layout"), (f"torch.{obj._name}",))
        if isinstance(obj, D.dtype):
            return _Global("torch", obj.name)
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented

    def save(self, obj, save_persistent_id=True):
        # dtypes reduce to a bare GLOBAL: emit it directly.
        if isinstance(obj, D.dtype):
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
        with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr(f"{name}/data.pkl", buf.getvalue())
            if not _disable_byteorder_record:
                zf.writestr(f"{name}/byteorder", "little")
            for key, ref in pickler.storages.values():
                _write_aligned(zf, f"{name}/data/{key}", bytes(ref.storage._data()))
            zf.writestr(f"{name}/version", "3\n")
            zf.writestr(f"{name}/.data/serialization_id", "0" * 40)


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


# PyTorch starts each storage's bytes at a multiple of 64 in the file (so they can be mapped
# and read in place: ``load(mmap=True)``), padding the record's local header with an extra field
# of id "FB".
_ALIGNMENT = 64
_LOCAL_HEADER = 30


def _write_aligned(zf, arcname, data):
    info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    zip64 = 20 if len(data) > zipfile.ZIP64_LIMIT else 0  # the field zipfile appends then
    start = zf.fp.tell() + _LOCAL_HEADER + len(arcname.encode()) + zip64
    pad = (-(start + 4)) % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


def _mapped_record(path, zf, arcname):
    """The bytes of stored record ``arcname`` of zip ``path``, mapped copy-on-write (PyTorch's
    default MAP_PRIVATE): writes to them stay in this process, the file is untouched."""
    info = zf.getinfo(arcname)
    if info.compress_type != zipfile.ZIP_STORED:
        raise RuntimeError(f"load(mmap=True): record {arcname} is compressed and cannot be "
                           f"mapped")
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        header = fh.read(_LOCAL_HEADER)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    offset = info.header_offset + _LOCAL_HEADER + name_len + extra_len
    if info.file_size == 0:
        return np.empty(0, np.uint8)
    return np.memmap(path, np.uint8, mode="c", offset=offset, shape=(info.file_size,))


class PyTorchFileReader:
    """The records of a checkpoint's zip archive by name relative to its top folder
    (``"data.pkl"``, ``"data/0"``): PyTorch's ``torch.PyTorchFileReader``, which libraries use
    to read a checkpoint's pickle and storages themselves (Lightning's lazy loading)."""

    def __init__(self, file):
        if isinstance(file, (str, os.PathLike)) and not os.path.exists(file):
            raise RuntimeError(f"open file failed because of errno 2 on fopen: No such file "
                               f"or directory, file path: {os.fspath(file)}")
        self._zf = zipfile.ZipFile(file)
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
        return self._zf.read(self._info(name))

    def get_record_size(self, name):
        return self._info(name).file_size

    def get_record_offset(self, name):
        """Where the record's bytes start in the file (after its local header)."""
        info = self._info(name)
        self._zf.fp.seek(info.header_offset)
        name_len, extra_len = struct.unpack("<HH", self._zf.fp.read(_LOCAL_HEADER)[26:30])
        return info.header_offset + _LOCAL_HEADER + name_len + extra_len

    def serialization_id(self):
        return (self.get_record(".data/serialization_id").decode()
                if self.has_record(".data/serialization_id") else "")


# ---------------------------------------------------------------------------------------------
# Loading

def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    untyped, dtype, *view_offset = storage  # a legacy storage view adds its element offset
    if view_offset:
        storage_offset += view_offset[0]
    size, stride = tuple(size), tuple(stride)
    needed = _st.storage_extent(size, stride, storage_offset) * dtype.itemsize
    if _st.numel(size) and needed > untyped.nbytes():
        # PyTorch's set_ would have to grow the loaded storage, which it refuses: a crafted
        # file cannot make a tensor read memory outside its own bytes
        raise RuntimeError("Trying to resize storage that is not resizable")
    t = make_tensor(untyped, size, stride, storage_offset, dtype, CPU)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    """A tensor over an untyped storage, its dtype given separately (uint16/32/64)."""
    untyped, _, *view_offset = storage
    return _rebuild_tensor_v2((untyped, dtype, *view_offset), storage_offset, size, stride,
                              requires_grad, backward_hooks, metadata)


def _get_layout(name):
    """A layout from its pickled name (``"torch.sparse_coo"``)."""
    found = getattr(_device_module, name.rpartition(".")[2], None)
    if not isinstance(found, layout):
        raise RuntimeError(f"Unknown layout {name!r}")
    return found


def _rebuild_sparse_tensor(layout, data):
    """A sparse COO tensor from its pickled parts (PyTorch's; older files have no
    ``is_coalesced``)."""
    from ._ops.overload import ops
    if layout is sparse_csr:
        crow_indices, col_indices, values, size = data
        return ops.aten._sparse_csr_tensor_unsafe.default._call(
            crow_indices, col_indices, values, size, None, None, None, None)
    if layout is not sparse_coo:
        raise NotImplementedError(f"rebuilding sparse tensor for layout {layout}: ember has "
                                  f"sparse COO and CSR tensors only")
    indices, values, size = data[:3]
    is_coalesced = data[3] if len(data) > 3 else None
    return ops.aten._sparse_coo_tensor_unsafe.default._call(indices, values, size, None, None,
                                                            None, None, is_coalesced)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = _rebuild_parameter(data, requires_grad, backward_hooks)
    for k, v in state.items():
        setattr(param, k, v)
    return param


def _rebuild_from_type_v2(func, new_type, args, state):
    """PyTorch's rebuild of a tensor with Python state: the tensor, then its attributes (a
    dict, or a (dict, slots) pair)."""
    t = func(*args)
    if new_type is not Tensor:
        raise pickle.UnpicklingError(f"a tensor of type {new_type!r} cannot be loaded")
    if isinstance(state, tuple):
        state, slots = state
        for k, v in (slots or {}).items():
            setattr(t, k, v)
    for k, v in (state or {}).items():
        setattr(t, k, v)
    return t


class _StorageType:
    """What ``torch.<Type>Storage`` unpickles to: it carries the element dtype."""

    def __init__(self, dtype):
        self.dtype = dtype


def _torch_globals():
    """The torch names a checkpoint may reference, mapped to ember objects."""
    table = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
             ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
             ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
             ("torch.serialization", "_get_layout"): _get_layout,
             ("torch", "Tensor"): Tensor,
             ("torch", "Size"): Size,
             ("torch", "device"): _device,
             ("collections", "OrderedDict"): collections.OrderedDict,
             ("torch.nn.parameter", "Parameter"): _rebuild_parameter}
    for name, dtype in _STORAGE_DTYPES.items():
        table[("torch", name)] = _StorageType(dtype)
    table[("torch.storage", "UntypedStorage")] = _StorageType(D.ALIASES["uint8"])
    for name in D.ALIASES:
        table[("torch", name)] = D.ALIASES[name]
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
    return list(_safe_globals.values())


def clear_safe_globals():
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(globals_list):
    saved = dict(_safe_globals)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _safe_globals.clear()
        _safe_globals.update(saved)


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
        # a protocol 0-2 pickle names Python 2's modules (__builtin__.set): map them as
        # pickle's own Unpickler does
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
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


_ZIP_MAGIC = b"PK\x03\x04"
_CORRUPT_ZIP = ("PytorchStreamReader failed reading zip archive: failed finding central "
                "directory. This is an internal miniz error. If you are seeing this error, there "
                "is a high likelihood that your checkpoint file is corrupted. This can happen if "
                "the checkpoint was not saved properly, was transferred incorrectly, or the file "
                "was modified after saving.")
LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001


def _legacy_load(f, weights_only):
    """PyTorch's pre-zip format, after its magic number: protocol version, system info, the
    object (storages as persistent ids), the storage keys, then per storage its element count
    (int64) and bytes."""
    version = _Unpickler(f, weights_only, _no_storage).load()
    if version != LEGACY_PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info = _Unpickler(f, weights_only, _no_storage).load()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    storages = {}  # root key -> (bytearray to fill, storage, dtype)

    def load_storage(saved_id):
        _, storage_type, key, location, numel, *view = saved_id
        dtype = storage_type.dtype
        if key not in storages:
            buf = np.zeros(numel * dtype.itemsize, np.uint8)
            storages[key] = (buf, from_array(buf), dtype)
        _, storage, _ = storages[key]
        if view and view[0] is not None:  # (view key, element offset, element count)
            return storage, dtype, view[0][1]
        return storage, dtype

    result = _Unpickler(f, weights_only, load_storage).load()
    keys = _Unpickler(f, weights_only, _no_storage).load()
    for key in keys:
        buf, _, dtype = storages[key]
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
        arr = np.frombuffer(data, np.dtype(dtype._np).newbyteorder("<" if little else ">"))
        buf[:] = arr.astype(dtype._np).view(np.uint8)
    return result


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read an object written by ``ember.save`` or ``torch.save``."""
    if weights_only is None:
        weights_only = True
    if mmap and not _is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    with contextlib.ExitStack() as stack:
        fobj = stack.enter_context(open(f, "rb")) if _is_path(f) else f
        start = fobj.tell()
        if not zipfile.is_zipfile(fobj):
            fobj.seek(start)
            if fobj.read(4) == _ZIP_MAGIC:  # a zip's first bytes, but no central directory
                raise RuntimeError(_CORRUPT_ZIP)
            fobj.seek(start)
            first = _Unpickler(fobj, weights_only, _no_storage).load()
            if first.__class__ is int and first == LEGACY_MAGIC_NUMBER:
                return _map_location(_legacy_load(fobj, weights_only), map_location)
            return first  # a bare pickle: no storages can be referenced
        fobj.seek(0)
        zf = stack.enter_context(zipfile.ZipFile(fobj))
        names = zf.namelist()
        pkl = next((n for n in names if n.endswith("data.pkl")), None)
        if pkl is None:
            raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
        prefix = pkl[:-len("data.pkl")]
        byteorder = "little"
        if prefix + "byteorder" in names:
            byteorder = zf.read(prefix + "byteorder").decode().strip()
        loaded = {}

        def load_storage(saved_id):
            _, storage_type, key, location, numel = saved_id
            dtype = storage_type.dtype
            if key not in loaded:
                npdt = np.dtype(dtype._np)
                if byteorder == "big" and npdt.itemsize > 1:
                    npdt = npdt.newbyteorder(">")
                if mmap and npdt.isnative:  # the file's bytes, read in place
                    arr = _mapped_record(f, zf, f"{prefix}data/{key}")
                    if arr.ctypes.data % npdt.alignment:  # (an unaligned writer's file)
                        arr = arr.copy()
                else:
                    raw = zf.read(f"{prefix}data/{key}")
                    arr = np.frombuffer(raw, npdt).astype(dtype._np, copy=True)
                loaded[key] = (from_array(arr.view(np.uint8).reshape(-1)), dtype)
                locations[id(loaded[key][0])] = location
            return loaded[key]

        locations = {}  # id(loaded storage) -> the location it was saved from
        result = _Unpickler(io.BytesIO(zf.read(pkl)), weights_only, load_storage).load()
    return _map_location(result, map_location, locations)


def _map_location(obj, map_location, locations=None):
    """Put loaded tensors where ``map_location`` says, by default back where they were saved
    from (``"cuda:0"``...), as PyTorch's ``default_restore_location``."""
    locations = locations or {}
    if map_location is None and all(loc == "cpu" for loc in locations.values()):
        return obj
    if callable(map_location) and not isinstance(map_location, (str, _device)):
        return _walk(obj, lambda t: map_location(t, locations.get(id(t._storage), "cpu")))

    def restore(t):
        loc = locations.get(id(t._storage), "cpu")
        if map_location is None:
            target = loc
        elif isinstance(map_location, dict):
            target = map_location.get(loc, loc)
        else:
            target = map_location
        target = _device(target)
        if target.type == "cuda":
            from . import cuda
            if not cuda.is_available():
                raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                                   "torch.cuda.is_available() is False. If you are running on a "
                                   "CPU-only machine, please use torch.load with "
                                   "map_location=torch.device('cpu') to map your storages to "
                                   "the CPU.")
        if t.device == target:
            return t
        moved = t.detach().to(target)
        from .nn.parameter import Parameter
        if isinstance(t, Parameter):
            return Parameter(moved, t.requires_grad)
        return moved.requires_grad_(t.requires_grad) if t.requires_grad else moved
    return _walk(obj, restore)


def _walk(obj, fn):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        out = type(obj)() if isinstance(obj, collections.OrderedDict) else {}
        for k, v in obj.items():
            out[k] = _walk(v, fn)
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_walk(v, fn) for v in obj)
    return obj

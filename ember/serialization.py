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
"""
import collections
import contextlib
import io
import os
import pickle
import zipfile

import numpy as np

from ._core import dtype as _dt
from ._core.device import CPU, device as _device
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
_STORAGE_DTYPES = {v: _dt.ALIASES[k] for k, v in _STORAGE_NAMES.items()}
_STORAGE_DTYPES["UntypedStorage"] = _dt.ALIASES["uint8"]


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

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage = storage
        self.dtype = dtype


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, taught to write :class:`_Global` and ember's objects the way
    PyTorch writes the corresponding torch objects."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}  # id(storage) -> (key, _StorageRef)
        self.dispatch = dict(pickle._Pickler.dispatch)
        self.dispatch[_Global] = _Pickler._save_global_ref

    def _save_global_ref(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            key, _ = self.storages.setdefault(id(obj.storage), (str(len(self.storages)), obj))
            nbytes = obj.storage.nbytes()
            return ("storage", _Global("torch", _STORAGE_NAMES[obj.dtype.name]), key, "cpu",
                    nbytes // obj.dtype.itemsize)
        return None

    def reducer_override(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return (_REBUILD_PARAMETER, (obj.detach(), obj.requires_grad,
                                         collections.OrderedDict()))
        if isinstance(obj, Tensor):
            if obj.device.type != "cpu":
                obj = obj.cpu()
            ref = _StorageRef(obj._storage, obj.dtype)
            return (_REBUILD_TENSOR, (ref, obj.storage_offset(), Size(obj.shape),
                                      tuple(obj.stride()), obj.requires_grad,
                                      collections.OrderedDict()))
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, _dt.dtype):
            return _Global("torch", obj.name)
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented

    def save(self, obj, save_persistent_id=True):
        # dtypes reduce to a bare GLOBAL: emit it directly.
        if isinstance(obj, _dt.dtype):
            return self._save_global_ref(_Global("torch", obj.name))
        return super().save(obj, save_persistent_id)


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Write ``obj`` (tensors, state dicts, nested containers) to ``f`` in PyTorch's format."""
    name = "archive"
    if _is_path(f):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    buf = io.BytesIO()
    pickler = _Pickler(buf, pickle_protocol)
    pickler.dump(obj)
    with contextlib.ExitStack() as stack:
        target = stack.enter_context(open(f, "wb")) if _is_path(f) else f
        with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr(f"{name}/data.pkl", buf.getvalue())
            if not _disable_byteorder_record:
                zf.writestr(f"{name}/byteorder", "little")
            for key, ref in pickler.storages.values():
                zf.writestr(f"{name}/data/{key}", bytes(ref.storage._data()))
            zf.writestr(f"{name}/version", "3\n")
            zf.writestr(f"{name}/.data/serialization_id", "0" * 40)


# ---------------------------------------------------------------------------------------------
# Loading

def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    untyped, dtype = storage
    t = make_tensor(untyped, tuple(size), tuple(stride), storage_offset, dtype, CPU)
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


class _StorageType:
    """What ``torch.<Type>Storage`` unpickles to: it carries the element dtype."""

    def __init__(self, dtype):
        self.dtype = dtype


def _torch_globals():
    """The torch names a checkpoint may reference, mapped to ember objects."""
    table = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
             ("torch", "Size"): Size,
             ("torch", "device"): _device,
             ("collections", "OrderedDict"): collections.OrderedDict,
             ("torch.nn.parameter", "Parameter"): _rebuild_parameter}
    for name, dtype in _STORAGE_DTYPES.items():
        table[("torch", name)] = _StorageType(dtype)
    table[("torch.storage", "UntypedStorage")] = _StorageType(_dt.ALIASES["uint8"])
    for name in _dt.ALIASES:
        table[("torch", name)] = _dt.ALIASES[name]
    return table


_TORCH_GLOBALS = _torch_globals()
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
        key = (module, name)
        if key in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[key]
        if key in _safe_globals:
            return _safe_globals[key]
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
        typename, storage_type, key, location, numel = saved_id
        if typename != "storage":
            raise pickle.UnpicklingError(f"Unknown typename for persistent_load, expected "
                                         f"'storage' but got '{typename}'")
        return self.load_storage(key, storage_type.dtype, numel)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read an object written by ``ember.save`` or ``torch.save``."""
    if weights_only is None:
        weights_only = True
    with contextlib.ExitStack() as stack:
        fobj = stack.enter_context(open(f, "rb")) if _is_path(f) else f
        if not zipfile.is_zipfile(fobj):
            fobj.seek(0)
            # A bare pickle: no storages can be referenced.
            def no_storage(*args):
                raise pickle.UnpicklingError("bare pickle references a storage")
            return _Unpickler(fobj, weights_only, no_storage).load()
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

        def load_storage(key, dtype, numel):
            if key not in loaded:
                raw = zf.read(f"{prefix}data/{key}")
                npdt = np.dtype(dtype._np)
                if byteorder == "big" and npdt.itemsize > 1:
                    npdt = npdt.newbyteorder(">")
                arr = np.frombuffer(raw, npdt).astype(dtype._np, copy=True)
                loaded[key] = (from_array(arr.view(np.uint8).reshape(-1)), dtype)
            return loaded[key]

        result = _Unpickler(io.BytesIO(zf.read(pkl)), weights_only, load_storage).load()
    return _map_location(result, map_location)


def _map_location(obj, map_location):
    if map_location is None:
        return obj
    if callable(map_location) and not isinstance(map_location, (str, _device)):
        return _walk(obj, lambda t: map_location(t, "cpu"))
    if isinstance(map_location, dict):
        target = map_location.get("cpu", "cpu")
    else:
        target = map_location
    return _walk(obj, lambda t: t.to(target))


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

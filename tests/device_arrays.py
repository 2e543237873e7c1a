"""Stand-in device arrays: NumPy arrays behind CuPy's rules, for running on the CPU the kernel
bodies that the CUDA key runs on CuPy arrays on a GPU (``ember/_kernels/cuda/shared.py``).

CuPy takes part in NumPy's protocols (``__array_ufunc__``, ``__array_function__``), so a CPU
body written against them computes on the device unchanged; what CuPy refuses is what a body
must not do there:

* convert a device array to a NumPy one implicitly (``np.asarray``, ``np.ascontiguousarray``,
  ``np.array``, the buffer protocol): ``TypeError`` — on a GPU the op would then be staged
  through the host at every call;
* take a host array (of more than one element) as an operand: CuPy refuses it in its ufuncs
  and functions, and copies it to the device when it indexes — either way a host-to-device
  copy, which a CUDA graph capture refuses;
* read a value back (``bool``, ``int``, ``float``, ``item``, ``tolist``, iterating): a
  synchronisation with the device, which a capture refuses too.

:class:`DeviceArray` raises on the first and records the other two in :data:`events`. The
``cupy`` module stand-in that ``cpu/_util.array_module`` finds for them is :func:`install`ed
into ``sys.modules`` for the duration of a ``with installed():`` block.
"""
import contextlib
import sys
import types

import numpy as np

events = []  # ("h2d" | "sync", what) since the last clear


def _unwrap(x, what):
    if isinstance(x, DeviceArray):
        return x._a
    if isinstance(x, np.ndarray):
        if x.size > 1:
            events.append(("h2d", what))
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, what) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v, what) for k, v in x.items()}
    return x


def _wrap(r):
    if isinstance(r, np.ndarray):
        return DeviceArray(r)
    if isinstance(r, np.generic):  # CuPy's reductions give 0-dim arrays, not scalars
        return DeviceArray(np.asarray(r))
    if isinstance(r, (list, tuple)):
        return type(r)(_wrap(v) for v in r)
    return r


class DeviceArray(np.lib.mixins.NDArrayOperatorsMixin):
    """A NumPy array that behaves, as to the host, like a CuPy array (module docstring)."""

    __slots__ = ("_a",)
    __module__ = "cupy"  # where cpu/_util.array_module looks for its array module

    def __init__(self, a):
        self._a = a

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        what = f"{ufunc.__name__}.{method}"
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs, what), **_unwrap(kwargs, what)))

    def __array_function__(self, func, types, args, kwargs):
        what = func.__name__
        return _wrap(func(*_unwrap(args, what), **_unwrap(kwargs, what)))

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def _read(self, what):
        events.append(("sync", what))
        return self._a

    def __bool__(self):
        return bool(self._read("bool"))

    def __int__(self):
        return int(self._read("int"))

    def __float__(self):
        return float(self._read("float"))

    def __index__(self):
        return self._read("index").__index__()

    def item(self, *args):
        return self._read("item").item(*args)

    def tolist(self):
        return self._read("tolist").tolist()

    def __iter__(self):
        return iter(_wrap(list(self._read("iteration"))))

    def __len__(self):
        return len(self._a)

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key, "indexing")])

    def __setitem__(self, key, value):
        self._a[_unwrap(key, "indexing")] = _unwrap(value, "assignment")

    def _part(name):  # noqa: N805  (a property factory, called in the class body)
        """The ``real``/``imag`` property, settable as CuPy's (``a.real = values``)."""
        return property(lambda self: _wrap(getattr(self._a, name)),
                        lambda self, value: setattr(self._a, name, _unwrap(value, "assignment")))
    real, imag = _part("real"), _part("imag")
    del _part

    def get(self):
        """The host copy (CuPy's explicit device-to-host copy)."""
        return self._read("get").copy()

    def __getattr__(self, name):
        if name.startswith("__array_") or name == "ctypes":
            raise AttributeError(name)  # no host interfaces
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr)

        def method(*args, **kwargs):
            return _wrap(attr(*_unwrap(args, name), **_unwrap(kwargs, name)))
        return method

    def __repr__(self):
        return f"DeviceArray({self._a!r})"


def _module():
    """The ``cupy`` stand-in: NumPy's functions, their results device arrays (an argument
    that is a host array counts as a host-to-device copy, as ``cupy.asarray`` makes one)."""
    cupy = types.ModuleType("cupy")

    def attribute(name):
        f = getattr(np, name)
        if not callable(f) or isinstance(f, type):
            return f

        def function(*args, **kwargs):
            return _wrap(f(*_unwrap(args, f"cupy.{name}"), **_unwrap(kwargs, f"cupy.{name}")))
        return function
    cupy.__getattr__ = attribute
    cupy.ndarray = DeviceArray
    cupy.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=lambda a, shape=None, strides=None: DeviceArray(
            np.lib.stride_tricks.as_strided(a._a, shape, strides))))
    return cupy


def _cupyx():
    """The ``cupyx`` stand-in: its ``scatter_add`` (unbuffered ``a[slices] += value``)."""
    cupyx = types.ModuleType("cupyx")

    def scatter_add(a, slices, value):
        np.add.at(a._a, _unwrap(slices, "cupyx.scatter_add"), _unwrap(value, "cupyx.scatter_add"))
    cupyx.scatter_add = scatter_add
    return cupyx


@contextlib.contextmanager
def installed():
    """``cupy`` and ``cupyx`` in ``sys.modules`` are the stand-ins, and results the CPU kernels
    ``wrap`` from device arrays come back as CPU tensors, for the block."""
    from ember._core.tensor_impl import DEVICE_ARRAY_ADOPTERS
    from ember import from_numpy
    saved = {name: sys.modules.get(name) for name in ("cupy", "cupyx")}
    sys.modules["cupy"], sys.modules["cupyx"] = _module(), _cupyx()
    DEVICE_ARRAY_ADOPTERS[DeviceArray] = lambda a: from_numpy(np.ascontiguousarray(a._a))
    try:
        yield
    finally:
        del DEVICE_ARRAY_ADOPTERS[DeviceArray]
        for name, module in saved.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module

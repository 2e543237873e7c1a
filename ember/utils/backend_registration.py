"""Out-of-tree backends through the ``PrivateUse1`` dispatch key.

PyTorch reserves ``PrivateUse1`` (and its Autograd/Autocast twins) for a backend that lives
outside the core. A backend package: names it (:func:`rename_privateuse1_backend`, after which
``ember.device("<name>")`` works and tensors on it carry the PrivateUse1 keys), brings memory
(``ember._core.storage.set_allocator("<name>", allocator)``), registers kernels on the
``PrivateUse1`` key with :class:`ember.library.Library` (or a boxed fallback for the ops it does
not implement), optionally a device module (:func:`_register_device_module`, ``ember.<name>``),
and generates the convenience methods (:func:`generate_methods_for_privateuse1_backend`:
``Tensor.<name>()``, ``Tensor.is_<name>``, ``Module.<name>()``).
``examples/privateuse1_backend.py`` is a complete one.
"""
import sys

from .._core.device import device as _device, register_device_type
from .._dispatch.keys import DEVICE_TO_BACKEND, K

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]

_privateuse1_backend_name = ["privateuseone"]


def _get_privateuse1_backend_name():
    return _privateuse1_backend_name[0]


def rename_privateuse1_backend(backend_name):
    """Name the PrivateUse1 backend: ``ember.device(backend_name)`` becomes valid and maps to
    the PrivateUse1 dispatch keys. It can be set once (again with the same name is a no-op)."""
    current = _privateuse1_backend_name[0]
    if current == backend_name:
        return
    if current != "privateuseone":
        raise RuntimeError(f"torch.register_privateuse1_backend() has already been set! Current "
                           f"backend: {current}")
    _privateuse1_backend_name[0] = backend_name
    DEVICE_TO_BACKEND[backend_name] = K.PrivateUse1
    register_device_type(backend_name)


def _register_device_module(device_type, module):
    """Make ``module`` available as ``ember.<device_type>`` (is_available, device_count, ...)."""
    import ember
    if hasattr(ember, device_type):
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered "
                           f"with '{getattr(ember, device_type)}'")
    setattr(ember, device_type, module)
    sys.modules[f"ember.{device_type}"] = module


def generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                             for_packed_sequence=True, for_storage=False,
                                             unsupported_dtype=None):
    """Add ``Tensor.<name>()``, ``Tensor.is_<name>`` and ``Module.<name>()`` for the renamed
    backend (PyTorch generates the same names)."""
    name = _get_privateuse1_backend_name()
    if name == "privateuseone":
        raise RuntimeError("rename_privateuse1_backend() must be called first")
    from .._tensor import Tensor

    def _device_of(dev):
        if dev is None:
            return _device(name, 0)
        if isinstance(dev, int):
            return _device(name, dev)
        dev = _device(dev)
        if dev.type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        return dev

    def to_backend(self, device=None, non_blocking=False, **kwargs):
        if unsupported_dtype and self.dtype in unsupported_dtype:
            raise RuntimeError(f"Can not support the dtype {self.dtype} for {name} device")
        return self.to(_device_of(device), non_blocking=non_blocking, **kwargs)

    def is_backend(self):
        return self.device.type == name

    if for_tensor:
        _check_free(Tensor, name)
        _check_free(Tensor, f"is_{name}")
        to_backend.__name__ = name
        setattr(Tensor, name, to_backend)
        setattr(Tensor, f"is_{name}", property(is_backend))
    if for_module:
        try:
            from ..nn import Module
        except ImportError:
            Module = None
        if Module is not None:
            _check_free(Module, name)

            def module_to_backend(self, device=None):
                return self._apply(lambda t: to_backend(t, device))
            module_to_backend.__name__ = name
            setattr(Module, name, module_to_backend)


def _check_free(cls, attr):
    if hasattr(cls, attr):
        raise RuntimeError(f"The custom device module of {cls} has already been registered "
                           f"with {attr}")

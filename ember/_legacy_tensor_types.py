"""PyTorch's legacy tensor types: ``torch.FloatTensor``, ``torch.LongTensor``, ...,
``torch.cuda.FloatTensor``. Each is an instance of the metaclass :class:`tensortype` naming a
dtype and a device type, not a subclass of ``Tensor``: calling it is the legacy constructor in
that dtype (``FloatTensor(2, 3)`` uninitialized, ``LongTensor([1, 2])`` from data,
``FloatTensor(t)`` an alias of a float32 tensor), ``isinstance(t, torch.FloatTensor)`` asks for
that dtype and device, and ``t.type(torch.DoubleTensor)`` converts to them.
"""
from ._core import dtype as D
from ._core.device import strided

# legacy name -> dtype
LEGACY = {"Double": D.float64, "Float": D.float32, "BFloat16": D.bfloat16, "Half": D.float16,
          "Long": D.int64, "Int": D.int32, "Short": D.int16, "Char": D.int8, "Byte": D.uint8,
          "Bool": D.bool_}


def _options(dtype, device_type):
    name = D.C10_NAMES.get(dtype, dtype.name)
    return (f"TensorOptions(dtype={name}, device={device_type}, layout=Strided, "
            f"requires_grad=false (default), pinned_memory=false (default), "
            f"memory_format=(nullopt))")


class tensortype(type):  # noqa: N801 (PyTorch's name)
    """The metaclass of the legacy tensor types: ``dtype``, ``is_cuda``, ``is_sparse``."""

    def __instancecheck__(cls, obj):
        from ._tensor import Tensor
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.device.type == cls._device_type and not obj.is_sparse)

    def __call__(cls, *args, device=None):
        return construct(cls.dtype, cls._device_type, args, device)

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def construct(dtype, device_type, args, device=None):
    """The legacy constructor of a tensor type (``torch.FloatTensor(...)``, ``t.new(...)``):
    a tensor argument must already have the type, as it is aliased."""
    from ._factories import legacy_new
    from ._tensor import Tensor
    if len(args) == 1 and isinstance(args[0], Tensor) and (
            args[0].dtype is not dtype or args[0].device.type != device_type):
        raise TypeError(f"expected {_options(dtype, device_type)} (got "
                        f"{_options(args[0].dtype, args[0].device.type)})")
    return legacy_new(None, args, device, dtype=dtype, device_type=device_type)


def _make(name, dtype, device_type, module):
    return tensortype(f"{name}Tensor", (), {
        "dtype": dtype, "is_cuda": device_type == "cuda", "is_sparse": False,
        "layout": strided, "_device_type": device_type, "__module__": module})


def types(device_type, module):
    """``{"FloatTensor": <class>, ...}`` for ``device_type`` ("cpu" or "cuda")."""
    return {f"{name}Tensor": _make(name, dtype, device_type, module)
            for name, dtype in LEGACY.items()}


def set_default_tensor_type(t):
    """Deprecated ``torch.set_default_tensor_type``: the default dtype (and, for a
    ``torch.cuda`` type, the default device) from a legacy type or its name."""
    import warnings
    from ._core import factory_defaults
    from ._core.device import device
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        prefix, _, name = t.rpartition(".")
        dtype = LEGACY.get(name[:-len("Tensor")] if name.endswith("Tensor") else None)
        if dtype is None or prefix not in ("torch", "torch.cuda"):
            raise TypeError(f"invalid type: '{t}'")
        device_type = "cuda" if prefix == "torch.cuda" else "cpu"
    elif isinstance(t, tensortype):
        dtype, device_type = t.dtype, t._device_type
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    D.set_default_dtype(dtype)
    factory_defaults.set_default_device(device("cuda") if device_type == "cuda" else None)

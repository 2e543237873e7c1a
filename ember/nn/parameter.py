"""``Parameter`` (a Tensor subclass that Modules register as parameters), ``Buffer``, and the
uninitialized placeholders used by the Lazy* modules."""
from collections import OrderedDict

from .._tensor import Tensor, make_tensor, requires_grad_of_factory
from ..overrides import _disabled_torch_function_impl

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]


def _make_subclass(cls, data, requires_grad):
    """PyTorch's ``Tensor._make_subclass``: a ``cls`` instance sharing ``data``'s storage and
    version counter (a detached alias), with ``requires_grad`` set."""
    t = make_tensor(data._storage, data._size, data._stride, data._offset, data._dtype,
                    data._device, cls=cls)
    t._vc = data._vc
    t._keyset = data._keyset
    return requires_grad_of_factory(t, requires_grad)


class _ParameterMeta(type):
    # A tensor flagged ``_is_param`` counts as a Parameter (PyTorch's custom-tensor path).
    def __instancecheck__(self, instance):
        if self is Parameter and isinstance(instance, Tensor) and getattr(instance, "_is_param",
                                                                          False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that, assigned as a Module attribute, becomes one of the Module's parameters."""

    # as in PyTorch: ops on Parameters return plain Tensors, and bindings stay on the fast path
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .. import empty
            data = empty(0)
        if type(data) is Tensor or type(data) is Parameter:
            return _make_subclass(cls, data, requires_grad)
        t = data.detach().requires_grad_(requires_grad)
        t._is_param = True
        return t

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict()))


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad)


class UninitializedTensorMixin:
    """Shared behaviour of the placeholders: no shape until ``materialize``."""

    def materialize(self, shape, device=None, dtype=None):
        from .. import empty
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (Lazy* modules materialize it on first call)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from .. import empty
        return _make_subclass(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


class _BufferMeta(type):
    def __instancecheck__(self, instance):
        if self is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer",
                                                                       False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor, assigned as a Module attribute, as one of the Module's buffers."""

    __torch_function__ = _disabled_torch_function_impl  # PyTorch's Buffer gives plain Tensors

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .. import empty
            data = empty(0)
        # PyTorch flags a plain Tensor; ember's Tensor has slots, so the flag needs a subclass.
        t = _make_subclass(cls, data.detach(), data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from .. import empty
        ret = _make_subclass(cls, empty(0, device=device, dtype=dtype), requires_grad)
        ret.persistent = persistent
        ret._is_buffer = True
        return ret

"""The base of functorch's wrapper tensors (``BatchedTensor``, ``FunctionalTensorWrapper``): a
Tensor subclass over an inner ``_value`` at a transform ``_level``. Its autograd state lives on
the value, since the kernels compute on values; ``__torch_function__`` is off, because the
wrappers are made by kernels, never by subclass conversions."""
from .._tensor import Tensor, _new
from ..overrides import _disabled_torch_function_impl


class WrapperTensor(Tensor):
    __slots__ = ("_value", "_level")
    __torch_function__ = _disabled_torch_function_impl

    @property
    def requires_grad(self):
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self._value.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self):
        return self._value.is_leaf


def new_wrapper(cls, level):
    """A fresh ``cls`` instance at ``level`` with a plain tensor's autograd fields (no grad, no
    history, no base); the caller points it at its value."""
    t = _new(cls)
    t._level = level
    t._base_ = None
    t._np = None
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._autograd = None
    return t

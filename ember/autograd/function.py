"""Custom differentiable functions: ``ember.autograd.Function`` (PyTorch's
``torch/autograd/function.py`` and ``python_function.cpp``).

A subclass defines ``forward`` and ``backward`` as static methods. ``apply`` runs ``forward``
with grad mode off, then, if any tensor input requires grad, makes the subclass's node class
(``<Name>Backward``, which is also the ``ctx`` object) the ``grad_fn`` of the outputs. Both the
classic form ``forward(ctx, *args)`` and the ``forward(*args)`` + ``setup_context(ctx, inputs,
output)`` form are supported.
"""
import functools

from .._dispatch import tls as _tls
from .graph import Node, SavedTensor, _FREED, gradient_edge

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]

_state = _tls.state


def _is_tensor(x):
    return hasattr(x, "_keyset")


class FunctionCtx:
    """What ``forward`` / ``setup_context`` see as ``ctx``."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node recorded for one ``Function.apply`` call; it doubles as the ``ctx``."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self)
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved = None
        self._input_is_tensor = ()

    @property
    def saved_tensors(self):
        if self._saved is None:
            return tuple(self.to_save)  # forward/setup_context still running
        if self._released:
            raise RuntimeError(_FREED)
        return tuple(s.unpack(self) if isinstance(s, SavedTensor) else s for s in self._saved)

    @property
    def saved_variables(self):
        return self.saved_tensors

    def release_variables(self):
        if self._saved is not None:
            for s in self._saved:
                if isinstance(s, SavedTensor):
                    s.release()
        self._released = True

    def apply(self, grads):
        cls = self._forward_cls
        if self.materialize_grads:
            from ._formulas import zeros_from_meta
            grads = [g if g is not None or m is None else zeros_from_meta(m)
                     for g, m in zip(grads, self._out_meta)]
        res = cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n_in = len(self._input_is_tensor)
        if len(res) != n_in:
            if len(res) > n_in and all(r is None for r in res[n_in:]):
                res = res[:n_in]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_in}, got {len(res)})")
        out = []
        for i, (g, is_t) in enumerate(zip(res, self._input_is_tensor)):
            if not is_t:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than "
                                       f"None at position {i + 1}, but the corresponding forward "
                                       f"input was not a Variable")
                continue
            out.append(g)
        return out


class FunctionMeta(type):
    """Gives every Function subclass its own node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_fn = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_fn
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom autograd functions; call them with ``MyFn.apply(*args)``."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method. "
                           "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function "
                                  "to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        is_tensor = tuple(_is_tensor(a) for a in args)
        ctx._input_is_tensor = is_tensor
        requires = _state.grad_enabled and any(t and a._requires_grad for a, t in zip(args, is_tensor))
        ctx.needs_input_grad = tuple(bool(t and a._requires_grad and _state.grad_enabled)
                                     for a, t in zip(args, is_tensor))
        uses_setup = cls.setup_context is not Function.setup_context
        prev = _state.grad_enabled
        _state.grad_enabled = False
        try:
            if uses_setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.grad_enabled = prev
        is_tuple = isinstance(out, tuple)
        outs = list(out) if is_tuple else [out]
        if requires:
            _record(ctx, args, is_tensor, outs)
        else:
            ctx._saved = tuple(ctx.to_save)
        return tuple(outs) if is_tuple else outs[0]


def _record(ctx, args, is_tensor, outs):
    from .derivatives import _check_inplace
    tensor_inputs = [a for a, t in zip(args, is_tensor) if t]
    ctx._next = tuple(gradient_edge(a) for a in tensor_inputs)
    ctx._edge_meta = tuple((a._size, a._dtype) for a in tensor_inputs)
    dirty = {id(t) for t in ctx.dirty_tensors}
    non_diff = {id(t) for t in ctx.non_differentiable}
    input_ids = {id(a) for a in tensor_inputs}
    metas = []
    for i, o in enumerate(outs):
        if not _is_tensor(o):
            metas.append(None)
            continue
        if id(o) in dirty:
            _check_inplace(o, "custom Function")
        elif id(o) in input_ids:
            # Returning an input unchanged: the output is a new alias of it (PyTorch does the same).
            from .._tensor import _alias
            o = outs[i] = _alias(o, o._size, o._stride, o._offset)
        metas.append((o._size, o._dtype, o._device))
        if id(o) in non_diff or not (o._dtype.is_floating_point or o._dtype.is_complex):
            continue
        o._grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
    ctx._out_meta = tuple(metas)
    out_ids = {id(o) for o in outs}
    ctx._saved = tuple(SavedTensor(t, id(t) in out_ids, ctx.name()) if t is not None else None
                       for t in ctx.to_save)
    ctx.to_save = ()


def once_differentiable(fn):
    """Run a ``backward`` with grad mode off: its result cannot be differentiated again."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _state.grad_enabled
        _state.grad_enabled = False
        try:
            return fn(ctx, *args)
        finally:
            _state.grad_enabled = prev
    return wrapper

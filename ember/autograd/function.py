"""Custom differentiable functions: ``ember.autograd.Function`` (PyTorch's
``torch/autograd/function.py`` and ``python_function.cpp``).

A subclass defines ``forward`` and ``backward`` as static methods. ``apply`` runs ``forward``
with grad mode off, then, if any tensor input requires grad, makes the subclass's node class
(``<Name>Backward``, which is also the ``ctx`` object) the ``grad_fn`` of the outputs. Both the
classic form ``forward(ctx, *args)`` and the ``forward(*args)`` + ``setup_context(ctx, inputs,
output)`` form are supported.

``InplaceFunction`` and ``NestedIOFunction`` are PyTorch's legacy bases, kept for old code: the
first only records an ``inplace`` flag; the second flattens nested (list / tuple / dict)
arguments and results around user ``forward_extended`` / ``backward_extended`` methods.
"""
import functools
import warnings

from .._dispatch import tls as _tls
from .graph import Node, SavedTensor, _FREED, gradient_edge

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]

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
    # the ctx's state starts as these class-level defaults (Node's rule: immutable values, so
    # setting one makes an instance attribute); a node is made on every apply
    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    materialize_grads = True
    needs_input_grad = ()
    _saved = None
    _input_is_tensor = ()

    @property
    def saved_tensors(self):
        if getattr(self, "_in_jvp", False):  # jvp sees what save_for_forward saved
            return tuple(getattr(self, "saved_for_forward", ()))
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
        if self.materialize_grads and any(g is None for g in grads):
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
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future version "
                      "of PyTorch.", DeprecationWarning, stacklevel=2)

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

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if _BatchedTensor is None:
            _import_lazily()
        for a in args:
            if a.__class__ is _BatchedTensor:
                handled, out = _apply_under_vmap(cls, args, kwargs)
                if handled:
                    return out
                break
        # no forward-AD level visible: no input has a tangent to propagate
        levels = _fw.visible and sorted({lv for a in args if _is_tensor(a)
                                         for lv in _fw.tangent_levels(a)})
        if not levels:
            return cls._apply(*args, **kwargs)
        # forward mode: forward runs without tangents, then jvp gives the outputs' tangents
        with _fw._set_fwd_grad_enabled(False):
            ctx_box = []
            out = cls._apply(*args, _ctx_box=ctx_box, **kwargs)
        ctx = ctx_box[0]
        outs = out if isinstance(out, tuple) else (out,)
        from ._forward import _fit
        for level in levels:
            with _fw._only_below(level):
                tans = [None if not _is_tensor(a) else (
                    _fw.get_tangent(a, level) if _fw.get_tangent(a, level) is not None
                    else _zeros_like(a)) for a in args]
                ctx._in_jvp = True
                try:
                    res = cls.jvp(ctx, *tans)
                finally:
                    ctx._in_jvp = False
                res = res if isinstance(res, tuple) else (res,)
                if len(res) != len(outs):
                    raise RuntimeError(f"jvp function {cls.__name__}Backward returned an "
                                       f"incorrect number of forward gradients (expected "
                                       f"{len(outs)}, got {len(res)})")
                for o, t in zip(outs, res):
                    if t is not None and _is_tensor(o) and (o._dtype.is_floating_point or
                                                            o._dtype.is_complex):
                        _fw.set_tangent(o, level, _fit(t, o))
        return out

    @classmethod
    def _apply(cls, *args, _ctx_box=None, **kwargs):
        ctx = cls._backward_cls()
        if _ctx_box is not None:
            _ctx_box.append(ctx)
        is_tensor = ctx._input_is_tensor = tuple(map(_is_tensor, args))
        prev = _state.grad_enabled
        needs = tuple([t and a._requires_grad for a, t in zip(args, is_tensor)] if prev else
                      [False] * len(args))
        ctx.needs_input_grad = needs
        requires = True in needs
        _state.grad_enabled = False
        try:
            if cls.setup_context is not Function.setup_context:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.grad_enabled = prev
        for t in ctx.dirty_tensors:  # PyTorch's _mark_dirty bumps each one's version
            t._bump_version()
        is_tuple = isinstance(out, tuple)
        outs = list(out) if is_tuple else [out]
        if requires:
            _record(ctx, args, is_tensor, outs)
        else:
            ctx._saved = tuple(ctx.to_save)
        return tuple(outs) if is_tuple else outs[0]


def _zeros_like(t):
    import ember
    return ember.zeros_like(t)


def _apply_under_vmap(cls, args, kwargs):
    """A Function called on BatchedTensors: its ``vmap`` staticmethod gets the values and their
    batch dims at the innermost level (PyTorch's custom_function_call under vmap). With
    ``generate_vmap_rule=True`` forward and backward run on the batched tensors themselves.
    Returns (handled, output)."""
    from .._functorch.user_rules import run_vmap_rule
    if cls.setup_context is Function.setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                           "(vmap, grad, jvp, jacrev, ...), it must override the setup_context "
                           "staticmethod. For more details, please see "
                           "https://pytorch.org/docs/main/notes/extending.func.html")
    if cls.generate_vmap_rule:
        if cls.vmap is not Function.vmap:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                               f"generate_vmap_rule=True and an overriden vmap staticmethod. "
                               f"Please set generate_vmap_rule=False or delete the overriden "
                               f"vmap staticmethod to avoid ambiguity. For more details, please "
                               f"see https://pytorch.org/docs/main/notes/extending.func.html")
        return False, None
    if cls.vmap is Function.vmap:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap "
                           f"support. Please override and implement the vmap staticmethod or "
                           f"set generate_vmap_rule=True. For more details, please see "
                           f"https://pytorch.org/docs/main/notes/extending.func.html")
    return True, run_vmap_rule(cls.vmap, args, kwargs)


def _record(ctx, args, is_tensor, outs):
    tensor_inputs = [a for a, t in zip(args, is_tensor) if t]
    ctx._next = tuple(map(gradient_edge, tensor_inputs))
    ctx._edge_meta = tuple([(a._size, a._dtype) for a in tensor_inputs])
    # (the sets are built only when used: this runs for every compiled graph's forward)
    dirty = {id(t) for t in ctx.dirty_tensors} if ctx.dirty_tensors else ()
    non_diff = {id(t) for t in ctx.non_differentiable} if ctx.non_differentiable else ()
    input_ids = {id(a) for a in tensor_inputs}
    metas = []
    for i, o in enumerate(outs):
        if not _is_tensor(o):
            metas.append(None)
            continue
        if id(o) in dirty:
            if _check_inplace is None:
                _import_lazily()
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
    name = ctx.name()
    ctx._saved = tuple([SavedTensor(t, id(t) in out_ids, name) if t is not None else None
                        for t in ctx.to_save])
    ctx.to_save = ()


# imported on first use: both import this module
_BatchedTensor = _fw = _check_inplace = None


def _import_lazily():
    global _BatchedTensor, _fw, _check_inplace
    from .._functorch.batched_tensor import BatchedTensor
    from . import forward_ad
    from .derivatives import _check_inplace as check
    _BatchedTensor, _fw, _check_inplace = BatchedTensor, forward_ad, check


class InplaceFunction(Function):
    """Legacy base of Functions that may work in place; use :class:`Function` instead."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


def _nesting_error(obj, condition_msg):
    from .._functional_ops import typename  # (ember's top level imports this package)
    return ValueError("Auto nesting doesn't know how to process an input object of type "
                      + typename(obj)
                      + (". Accepted types: " + condition_msg + ", or lists/tuples of them"
                         if condition_msg else ""))


def _nested_map(condition, fn, condition_msg=None):
    """``fn`` applied to every leaf meeting ``condition`` in a nest of lists, tuples
    (namedtuples too) and dicts; None stays None, anything else is refused."""
    def _map(obj):
        if condition(obj):
            return fn(obj)
        if obj is None:
            return None
        if isinstance(obj, (list, tuple)):
            mapped = (_map(x) for x in obj)
            if hasattr(obj, "_fields"):
                return type(obj)(*mapped)
            return type(obj)(mapped)
        if isinstance(obj, dict):
            return {x: _map(obj[x]) for x in obj}
        raise _nesting_error(obj, condition_msg)
    return _map


def _iter_filter(condition, condition_msg=None):
    """The leaves meeting ``condition`` in a nest of lists, tuples and dicts (values), in
    order; None is skipped, anything else refused."""
    def _iter(obj):
        if condition(obj):
            yield obj
        elif obj is None:
            return
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                yield from _iter(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                yield from _iter(o)
        else:
            raise _nesting_error(obj, condition_msg)
    return _iter


def _unflatten(input, proto):
    """The flat sequence ``input`` poured back into the nesting of lists / tuples of ``proto``
    (a None in ``proto`` stays None and takes no element)."""
    def unflatten_helper(input, proto):
        if not isinstance(proto, (list, tuple)):
            return input[0], input[1:]
        res = []
        for e in proto:
            if e is None:
                res.append(e)
            else:
                res_e, input = unflatten_helper(input, e)
                res.append(res_e)
        return type(proto)(res), input
    return unflatten_helper(input, proto)[0]


_iter_tensors = _iter_filter(_is_tensor, condition_msg="Tensors")
_iter_None_tensors = _iter_filter(lambda o: o is None or _is_tensor(o),
                                  condition_msg="Tensors or None")
_map_tensor_data = _nested_map(_is_tensor, lambda o: o.data, condition_msg="Tensors")


class NestedIOFunction(Function):
    """Legacy base of Functions with nested inputs and outputs; use :class:`Function` instead.

    Subclasses write ``forward_extended(*nested_inputs)`` and ``backward_extended(*nested_grads)``
    as instance methods; ``forward`` and ``backward`` flatten around them."""

    def _do_forward(self, *input):
        self._nested_input = input
        flat_input = tuple(_iter_tensors(input))
        # The legacy engine's entry points (Function._do_forward / _do_backward) are gone, in
        # PyTorch too: calling an instance raises AttributeError here, as it does there.
        flat_output = super()._do_forward(*flat_input)
        return _unflatten(flat_output, self._nested_output)

    def _do_backward(self, gradients, retain_variables):
        self.retain_variables = retain_variables
        result = super()._do_backward(gradients, retain_variables)
        if not retain_variables:
            del self._nested_output
            del self._to_save_nested
        return result

    __call__ = _do_forward

    def forward(self, *args):
        """``forward_extended`` on the data of the nested inputs set as ``_nested_input``; the
        nested result is kept as ``_nested_output`` and returned flat."""
        nested_tensors = _map_tensor_data(self._nested_input)
        result = self.forward_extended(*nested_tensors)
        del self._nested_input
        self._nested_output = result
        return tuple(_iter_tensors(result))

    def backward(self, *gradients):
        """``backward_extended`` on the gradients nested as the forward's result; returns its
        gradients flat (None kept)."""
        nested_gradients = _unflatten(gradients, self._nested_output)
        result = self.backward_extended(*nested_gradients)
        return tuple(_iter_None_tensors(result))

    def save_for_backward(self, *args):
        self.to_save = tuple(_iter_tensors(args))
        self._to_save_nested = args

    @property
    def saved_tensors(self):
        # PyTorch unflattens the tensors saved on the C node behind the object, which only a
        # recorded graph node has; an instance never is one (apply records a separate ctx), so
        # there are none to unflatten, there as here
        return _unflatten((), self._to_save_nested)

    def mark_dirty(self, *args, **kwargs):
        self.dirty_tensors = tuple(_iter_tensors((args, kwargs)))

    def mark_non_differentiable(self, *args, **kwargs):
        self.non_differentiable = tuple(_iter_tensors((args, kwargs)))

    def forward_extended(self, *input):
        """User defined forward."""
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        """User defined backward."""
        raise NotImplementedError


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

"""``torch._prims_common.wrappers``: decorators that give a Python reference implementation
PyTorch's calling conventions — elementwise type promotion of named arguments
(``elementwise_type_promotion_wrapper``), the ``out=`` parameter with its resizing and
safe-cast rules (``out_wrapper``), Python numbers as the input of a unary op
(``elementwise_unary_scalar_wrapper``) and a refusal to differentiate
(``backwards_not_supported``)."""
import inspect
import types
import typing
import warnings
from collections.abc import Callable, Sequence
from functools import wraps
from types import GenericAlias
from typing import NamedTuple, TypeVar

import ember
from .. import _prims_common as utils
from .._dispatch.keys import AUTOGRAD_BITS
from .._dispatch.tls import ExcludeDispatchKeyGuard
from ..utils import _pytree as pytree
from ..utils._pytree import tree_flatten, tree_unflatten
from . import CustomOutParamAnnotation, Number, TensorLike, TensorLikeType


def _maybe_convert_to_dtype(a, dtype):
    """``a`` (a tensor, number, sequence of them, or None) in ``dtype`` (numbers: its Python
    type)."""
    if isinstance(a, TensorLike):
        if a.dtype != dtype:
            return a.to(dtype)
        return a
    if isinstance(a, Number):
        return utils.dtype_to_type_ctor(dtype)(a)
    if isinstance(a, Sequence):
        return tuple(_maybe_convert_to_dtype(x, dtype) for x in a)
    # (optional arguments of a wrapped function pass through)
    if a is None:
        return None
    raise ValueError(f"Received unsupported type {type(a)}. Expected TensorLike, Number, or "
                     f"Sequence.")


def _maybe_convert_to_type(a, typ):
    if not isinstance(a, Number):
        raise ValueError(f"Found unknown type {type(a)} when trying to convert scalars!")
    if not utils.is_weakly_lesser_type(type(a), typ):
        raise ValueError(f"Scalar {a} of type {type(a)} cannot be safely cast to type {typ}!")
    return typ(a)


def _annotation_has_type(*, typ, annotation):
    args = typing.get_args(annotation)
    if args:
        return any(_annotation_has_type(typ=typ, annotation=a) for a in args)
    return typ is annotation


def _disable_dynamo(fn):
    """``fn`` never captured by ``ember.compile`` (PyTorch's ``torch._disable_dynamo``:
    binding a signature is not worth tracing); the compiler loads on the first call."""
    disabled = []

    @wraps(fn)
    def inner(*args, **kwargs):
        if not disabled:
            from ..compiler import disable
            disabled.append(disable(fn, recursive=True))
        return disabled[0](*args, **kwargs)

    return inner


class elementwise_type_promotion_wrapper:
    """Adds elementwise type promotion to a Python reference implementation.

    ``type_promoting_args`` names the arguments that take part in type promotion (and are
    converted to the computation dtype; a sequence argument takes part element by element);
    ``type_promotion_kind`` is one of ``ELEMENTWISE_TYPE_PROMOTION_KIND``. The result is
    converted to the result dtype, or to the wrapped function's ``dtype`` argument when that is
    given. Other checks of scalar arguments are the wrapped function's own.
    """

    def __init__(self, *, type_promotion_kind, type_promoting_args=None):
        self.type_promoting_arg_names = type_promoting_args
        self.type_promotion_kind = type_promotion_kind

    def __call__(self, fn):
        sig = inspect.signature(fn)

        @_disable_dynamo
        @wraps(fn)
        def _fn(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            type_promoting_args = tuple(bound.arguments[x] for x in self.type_promoting_arg_names
                                        if x in bound.arguments)
            flattened = pytree.arg_tree_leaves(*type_promoting_args)
            compute_dtype, result_dtype = utils.elementwise_dtypes(
                *flattened, type_promotion_kind=self.type_promotion_kind)
            promoted_args = {x: _maybe_convert_to_dtype(bound.arguments[x], compute_dtype)
                             for x in self.type_promoting_arg_names if x in bound.arguments}
            bound.arguments.update(promoted_args)

            result = fn(**bound.arguments)

            # a dtype argument, when given, is the result's dtype
            if "dtype" in bound.arguments:
                maybe_dtype = bound.arguments["dtype"]
                if maybe_dtype:
                    result_dtype = maybe_dtype

            if isinstance(result, TensorLike):
                return _maybe_convert_to_dtype(result, result_dtype)
            if isinstance(result, Sequence):
                return tuple(_maybe_convert_to_dtype(x, result_dtype) for x in result)
            raise AssertionError(f"Unhandled result type: {type(result)}")

        _fn.__signature__ = sig
        return _fn


def _resize_output_check(out, shape):
    """Whether ``out`` needs resizing to ``shape``; warns (deprecated behaviour) when ``out``
    has elements."""
    if utils.same_shape(out.shape, shape):
        return False
    if out.numel() != 0:
        # (PyTorch's message prints the second shape's placeholder literally)
        msg = (f"An output with one or more elements was resized since it had shape "
               f"{str(out.shape)} "
               "which does not match the required output shape {str(shape)}. "
               "This behavior is deprecated, and in a future PyTorch release outputs will not "
               "be resized unless they have zero elements. "
               "You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
               "elements with t.resize_(0).")
        warnings.warn(msg, stacklevel=2)
    return True


def _maybe_resize_out(out, shape, memory_format=None):
    if _resize_output_check(out, shape):
        return out.resize_(shape, memory_format=memory_format)
    return out


def is_cpu_scalar(x):
    return x.dim() == 0 and x.device.type == "cpu"


def check_copy_devices(*, copy_from, copy_to):
    if copy_from.device != copy_to.device:
        raise RuntimeError(f"Attempting to copy from device {copy_from.device} to device "
                           f"{copy_to.device}, but cross-device copies are not allowed!")


def _safe_copy_out(*, copy_from, copy_to, exact_dtype=False):
    """Copies ``copy_from`` into ``copy_to`` after checking devices (a CPU scalar may cross)
    and that the cast is safe (or, with ``exact_dtype``, that the dtypes are equal)."""
    if not is_cpu_scalar(copy_from):
        check_copy_devices(copy_from=copy_from, copy_to=copy_to)
    if exact_dtype:
        ember._check(copy_from.dtype == copy_to.dtype,
                     lambda: f"Expected out tensor to have dtype {copy_from.dtype} "
                             f"but got {copy_to.dtype} instead")
    else:
        ember._check(utils.can_safe_cast_to(cast_from=copy_from.dtype, cast_to=copy_to.dtype),
                     lambda: f"Attempting to cast from {copy_from.dtype} to out tensor with "
                             f"dtype {copy_to.dtype}, but this can't be cast because it is not "
                             f"safe!")
    return copy_to.copy_(copy_from)


def out_wrapper(*out_names, exact_dtype=False, pass_is_out=False, preserve_memory_format=False):
    """Adds a keyword-only ``out`` parameter to a Python reference: the result is copied into
    ``out`` (resized when its shape differs, with PyTorch's deprecation warning if it had
    elements; its dtype must be a safe cast, or equal with ``exact_dtype``) and ``out`` is
    returned. Several ``out_names`` make ``out`` a tuple and the result a named tuple."""
    default_out_names = ("out",)
    if len(out_names) == 0:
        out_names = default_out_names
    is_tensor = len(out_names) == 1

    def maybe_compute_memory_format(t):
        return utils.suggest_memory_format(t) if preserve_memory_format else None

    def _out_wrapper(fn):
        out_type = (TensorLikeType if is_tensor
                    else GenericAlias(tuple, tuple(TensorLikeType for _ in range(len(out_names)))))
        bc_out_type = (TensorLikeType if is_tensor
                       else types.GenericAlias(tuple, tuple(TensorLikeType
                                                            for _ in range(len(out_names)))))
        return_type = (TensorLikeType if is_tensor
                       else NamedTuple(f"return_types_{fn.__name__}",
                                       [(o, TensorLikeType) for o in out_names]))
        sig = inspect.signature(fn)
        factory_kwargs = ("device", "dtype")
        is_factory_fn = all(p in sig.parameters for p in factory_kwargs)

        @wraps(fn)
        def _fn(*args, **kwargs):
            out = kwargs.pop("out", None)
            if is_factory_fn and out is not None:
                for k in factory_kwargs:
                    if k not in kwargs:
                        kwargs[k] = getattr(out, k)

            def maybe_check_copy_devices(out):
                if isinstance(out, TensorLike) and isinstance(args[0], TensorLike):
                    check_copy_devices(copy_from=args[0], copy_to=out)

            if isinstance(out, (tuple, list)):
                for o in out:
                    maybe_check_copy_devices(o)
            else:
                maybe_check_copy_devices(out)

            if pass_is_out:
                result = fn(*args, is_out=(out is not None), **kwargs)
            else:
                result = fn(*args, **kwargs)
            if result is NotImplemented:
                return NotImplemented
            if not ((isinstance(result, TensorLike) and is_tensor)
                    or (isinstance(result, tuple) and len(result) == len(out_names))
                    or (fn.__name__ == "unbind" and isinstance(result, (list, tuple)))):
                raise AssertionError(f"Unexpected result type: {type(result)}, "
                                     f"is_tensor={is_tensor}, out_names={out_names}")
            if out is not None:
                # (out may be a subclass, say a FakeTensor, where the result is a plain tensor)
                if is_tensor and fn.__name__ != "unbind":
                    if not isinstance(out, TensorLike):
                        raise AssertionError(f"out must be TensorLike, got {type(out)}")
                    _maybe_resize_out(out, result.shape, maybe_compute_memory_format(result))
                    _safe_copy_out(copy_from=result, copy_to=out, exact_dtype=exact_dtype)
                else:
                    if fn.__name__ != "unbind":
                        if not isinstance(out, tuple):
                            raise AssertionError(f"out must be tuple, got {type(out)}")
                    elif not isinstance(out, (list, tuple)):
                        raise AssertionError(f"out must be list or tuple, got {type(out)}")
                    ember._check_type(len(out) == len(result),
                                      lambda: f"expected tuple of {len(result)} elements but "
                                              f"got {len(out)}")
                    for r, o in zip(result, out):
                        _maybe_resize_out(o, r.shape, maybe_compute_memory_format(r))
                        _safe_copy_out(copy_from=r, copy_to=o, exact_dtype=exact_dtype)
            else:
                out = result
            return out if is_tensor else return_type(*out)

        out_param = inspect.Parameter("out", kind=inspect.Parameter.KEYWORD_ONLY, default=None,
                                      annotation=out_type)
        if not (isinstance(sig.return_annotation, (str, TypeVar))
                or sig.return_annotation in (sig.empty, out_type, bc_out_type)):
            raise AssertionError(f"Unexpected return annotation: {sig.return_annotation}, "
                                 f"expected str, TypeVar, empty, {out_type}, or {bc_out_type}")
        # (a **kwargs parameter must come after the keyword-only out=)
        params = sorted((*sig.parameters.values(), out_param), key=lambda p: p.kind)
        _fn.__signature__ = inspect.Signature(parameters=params, return_annotation=return_type)
        _fn.__annotations__ = dict(getattr(fn, "__annotations__", {}))
        _fn.__annotations__["out"] = out_type
        _fn.__annotations__["return"] = return_type
        # a single out parameter named otherwise than out is named here
        if is_tensor and out_names != default_out_names:
            _fn.__annotations__[CustomOutParamAnnotation] = out_names[0]
        # (for callers that must not see the wrapper, e.g. scripting)
        _fn._torch_decompositions_out_wrapper = (
            f"This function is wrapped by {out_wrapper.__module__}.out_wrapper")
        return _fn

    return _out_wrapper


def _maybe_remove_out_wrapper(fn):
    return inspect.unwrap(fn, stop=lambda f: not hasattr(f, "_torch_decompositions_out_wrapper"))


def backwards_not_supported(prim):
    """``prim`` run below autograd: with inputs that require grad its result records a node
    whose backward raises "backwards not supported on prim"."""
    def redispatch_prim(args, kwargs):
        with ExcludeDispatchKeyGuard(AUTOGRAD_BITS):
            return prim(*args, **kwargs)

    class BackwardsNotSupported(ember.autograd.Function):
        @staticmethod
        def forward(ctx, args_spec, *flat_args):
            args, kwargs = tree_unflatten(flat_args, args_spec)
            return redispatch_prim(args, kwargs)

        @staticmethod
        def backward(ctx, *args):
            raise RuntimeError("backwards not supported on prim")

    @wraps(prim)
    def _autograd_impl(*args, **kwargs):
        flat_args, args_spec = tree_flatten((args, kwargs))
        if ember.is_grad_enabled() and any(a.requires_grad for a in flat_args
                                           if isinstance(a, ember.Tensor)):
            return BackwardsNotSupported.apply(args_spec, *flat_args)
        return redispatch_prim(args, kwargs)

    return _autograd_impl


def elementwise_unary_scalar_wrapper(fn: Callable) -> Callable:
    """Lets a unary op that takes tensors take a Python number: it runs on a 0-dim tensor of
    the number's dtype and returns a number."""
    sig = inspect.signature(fn)

    @wraps(fn)
    def _fn(*args, **kwargs):
        if len(args) > 0 and isinstance(args[0], Number):
            dtype = utils.type_to_dtype(type(args[0]))
            args_ = list(args)
            args_[0] = ember.tensor(args[0], dtype=dtype)
            result = fn(*args_, **kwargs)
            if not isinstance(result, ember.Tensor):
                raise AssertionError(f"Expected torch.Tensor, got {type(result)}")
            return result.item()
        return fn(*args, **kwargs)

    _fn.__signature__ = sig
    return _fn

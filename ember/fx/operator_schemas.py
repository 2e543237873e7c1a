"""PyTorch's ``torch.fx.operator_schemas``: Python signatures of ops from their schemas
(``get_signature_for_torch_op``), and the normalization of a call's arguments to one signature
(``normalize_function`` for functions and ops, ``normalize_module`` for ``nn`` modules), as FX
passes use them to read a node's arguments by name."""
import enum
import inspect
import numbers
import re
import typing
import warnings
from typing import Any, NamedTuple, Optional

import ember

__all__ = ["ArgsKwargsPair", "check_for_mutable_operation", "get_signature_for_torch_op",
           "create_type_hint", "type_matches", "normalize_function", "normalize_module"]


class ArgsKwargsPair(NamedTuple):
    """Simple named tuple for wrapping args/kwargs pairs."""
    args: tuple
    kwargs: dict


def _nonzero_schemas():
    # torch.nonzero's as_tuple is Python-level: its schema does not say it
    def nonzero(self: ember.Tensor) -> None:
        pass

    signatures = [inspect.signature(nonzero)]

    def nonzero(self: ember.Tensor, *, as_tuple: bool) -> None:  # noqa: F811
        pass

    signatures.append(inspect.signature(nonzero))
    return signatures


_manual_overrides = {ember.nonzero: _nonzero_schemas()}

# schema type names -> the Python types TorchScript's annotation strings evaluate to
_SCALAR_TYPES = {
    "Tensor": ember.Tensor, "int": int, "SymInt": int, "float": float, "bool": bool,
    "str": str, "Scalar": numbers.Number, "ScalarType": int, "Layout": int,
    "MemoryFormat": int, "Device": ember.device, "Dimname": str, "Generator": typing.Generator,
    "Storage": ember.UntypedStorage, "AnyEnumType": enum.Enum, "Any": Any,
}


def _schema_type_to_python_type(t):
    t = re.sub(r"\([^)]*\)", "", t).strip()  # alias annotations: Tensor(a!) is a Tensor
    if t.endswith("?"):
        return Optional[_schema_type_to_python_type(t[:-1])]
    m = re.fullmatch(r"(.+)\[\d*\]", t)
    if m:
        return typing.List[_schema_type_to_python_type(m.group(1))]
    return _SCALAR_TYPES.get(t, Any)


_SCHEMA_TO_SIGNATURE_CACHE = {}


def _schema_to_signature(schema):
    key = (schema.name, schema.overload_name)
    sig = _SCHEMA_TO_SIGNATURE_CACHE.get(key)
    if sig is not None:
        return sig
    from inspect import Parameter
    parameters = []
    for arg in schema.arguments:
        arg_type = _schema_type_to_python_type(arg.type)
        default = arg.default_value if arg.has_default() else Parameter.empty
        name = arg.name if arg.name != "self" else "input"
        kind = Parameter.KEYWORD_ONLY if arg.kwarg_only else Parameter.POSITIONAL_OR_KEYWORD
        # "from" is a Python keyword: it and every parameter before it become positional-only
        if name == "from":
            kind = Parameter.POSITIONAL_ONLY
            parameters = [Parameter(p.name, Parameter.POSITIONAL_ONLY, default=p.default,
                                    annotation=p.annotation) for p in parameters]
        parameters.append(Parameter(name=name, kind=kind, default=default, annotation=arg_type))
    return_types = [_schema_type_to_python_type(r.type) for r in schema.returns]
    return_type = (None if not return_types else return_types[0] if len(return_types) == 1
                   else tuple(return_types))
    sig = _SCHEMA_TO_SIGNATURE_CACHE[key] = inspect.Signature(parameters,
                                                              return_annotation=return_type)
    return sig


def _aten_packet_of(op):
    """The ``ember.ops.aten`` packet a generated ``ember.<name>`` binding calls (PyTorch's
    ``torch.jit._builtins._find_builtin``), or None."""
    code = getattr(op, "__code__", None)
    if code is None or not code.co_filename.startswith("<ember binding ember."):
        return None
    return getattr(ember.ops.aten, op.__name__, None)


def _is_op(target):
    from .._ops.overload import OpOverload, OpOverloadPacket
    return isinstance(target, (OpOverload, OpOverloadPacket))


def get_signature_for_torch_op(op, return_schemas=False):
    """The ``inspect.Signature`` of each overload of an op (an ``ember.<name>`` function, an
    OpOverloadPacket or an OpOverload); None when it has no schema. With ``return_schemas``:
    ``(signatures, schemas)``."""
    from .._ops.overload import OpOverload, OpOverloadPacket
    if isinstance(op, OpOverload):
        schemas = [op._schema]
    elif isinstance(op, OpOverloadPacket):
        schemas = [getattr(op, o)._schema for o in op.overloads()]
    else:
        override = _manual_overrides.get(op)
        if override:
            return (override, None) if return_schemas else None
        packet = _aten_packet_of(op)
        if packet is None:
            return (None, None) if return_schemas else None
        schemas = [getattr(packet, o)._schema for o in packet.overloads()]
    signatures = [_schema_to_signature(schema) for schema in schemas]
    return (signatures, schemas) if return_schemas else signatures


def check_for_mutable_operation(target, args, kwargs):
    """RuntimeError when the one schema the call binds to mutates an operand."""
    signatures, schemas = get_signature_for_torch_op(target, return_schemas=True)
    if signatures and schemas:
        matched = []
        for candidate_signature, schema in zip(signatures, schemas):
            try:
                candidate_signature.bind(*args, **kwargs)
                matched.append(schema)
            except TypeError:
                continue
        # several matches: which one runs is not known here, so nothing is said
        if len(matched) == 1 and matched[0].is_mutable:
            raise RuntimeError(
                f"Tried to trace mutable operation {matched[0]}. FX only supports functional "
                f"code, so operations that mutate operands in-place (e.g. via `out` arguments) "
                f"are not supported")


def create_type_hint(x):
    """A type hint for a list or tuple of types: ``list[T]``/``tuple[T, ...]`` of the common base
    type of its elements (``Any`` when none); any other ``x`` unchanged."""
    try:
        if isinstance(x, (list, tuple)):
            if isinstance(x, list):
                def ret_type(x):
                    return list[x]
            else:
                def ret_type(x):
                    return tuple[x, ...]
            if len(x) == 0:
                return ret_type(Any)
            base_type = x[0]
            for t in x:
                if issubclass(t, base_type):
                    continue
                elif issubclass(base_type, t):
                    base_type = t
                else:
                    return ret_type(Any)
            return ret_type(base_type)
    except Exception:
        warnings.warn(f"We were not able to successfully create type hint from the type {x}")
    return x


def type_matches(signature_type, argument_type):
    """Whether an argument of ``argument_type`` may bind to a parameter of ``signature_type``."""
    sig_origin_type = getattr(signature_type, "__origin__", signature_type)
    if signature_type is argument_type:
        return True
    if sig_origin_type is typing.Union and signature_type != argument_type:
        return any(type_matches(c, argument_type) for c in typing.get_args(signature_type))
    if getattr(signature_type, "__origin__", None) is list:
        sig_el_type = typing.get_args(signature_type)[0]
        # an int where int[] is wanted broadcasts
        if argument_type is int and sig_el_type is int:
            return True
        if not inspect.isclass(sig_el_type):
            warnings.warn(f"Does not support nested parametric types, got {signature_type}. "
                          "Please file a bug.")
            return False
        if getattr(argument_type, "__origin__", None) is list:
            return issubclass(typing.get_args(argument_type)[0], sig_el_type)

        def is_homogeneous_tuple(t):
            if typing.get_origin(t) is not tuple:
                return False
            contained = typing.get_args(t)
            if contained == ((),):
                return True
            return all((c is Ellipsis) or issubclass(c, sig_el_type) for c in contained)

        return is_homogeneous_tuple(argument_type)
    # a dtype stands where the schema says ScalarType (an int in the signature)
    if signature_type is int and argument_type is ember.dtype:
        return True
    if signature_type is numbers.Number and argument_type in {int, float}:
        return True
    if inspect.isclass(argument_type) and inspect.isclass(signature_type):
        return issubclass(argument_type, signature_type)
    return False


def _normalize_function_or_error(target, args, kwargs=None, arg_types=None, kwarg_types=None,
                                 normalize_to_only_use_kwargs=False):
    res = normalize_function(target, args, kwargs, arg_types, kwarg_types,
                             normalize_to_only_use_kwargs)
    if res is None:
        raise RuntimeError(
            f"Failed to normalize function {target} with args {args} and kwargs {kwargs}")
    return res


def normalize_function(target, args, kwargs=None, arg_types=None, kwarg_types=None,
                       normalize_to_only_use_kwargs=False):
    """``target``'s call arguments bound to its signature, defaults filled in: an
    :class:`ArgsKwargsPair` (all keywords with ``normalize_to_only_use_kwargs``), or None when
    the call does not bind. An op with several overloads that the call binds to needs
    ``arg_types``/``kwarg_types`` to pick one (RuntimeError without them)."""
    if kwargs is None:
        kwargs = {}
    new_args_and_kwargs = None
    if not _is_op(target) and hasattr(target, "_op"):
        target = target._op  # an OpOverload-like wrapper
    if not _is_op(target) and _aten_packet_of(target) is None and \
            target not in _manual_overrides:
        if not callable(target):
            raise AssertionError(f"target_for_analysis must be callable, got {type(target)}")
        sig = inspect.signature(inspect.unwrap(target))
        return _args_kwargs_to_normalized_args_kwargs(sig, args, kwargs,
                                                      normalize_to_only_use_kwargs)
    torch_op_schemas = get_signature_for_torch_op(target)
    matched_schemas = []
    if torch_op_schemas:
        for candidate_signature in torch_op_schemas:
            try:
                candidate_signature.bind(*args, **kwargs)
                matched_schemas.append(candidate_signature)
            except TypeError:
                continue
        if len(matched_schemas) == 1:
            new_args_and_kwargs = _args_kwargs_to_normalized_args_kwargs(
                matched_schemas[0], args, kwargs, normalize_to_only_use_kwargs)
        elif len(matched_schemas) > 1:
            if arg_types is not None or kwarg_types is not None:
                arg_types = arg_types if arg_types else ()
                kwarg_types = kwarg_types if kwarg_types else {}
                for candidate_signature in torch_op_schemas:
                    sig_matches = True
                    try:
                        bound_types = candidate_signature.bind(*arg_types, **kwarg_types)
                        for arg_name, arg_type in bound_types.arguments.items():
                            param = candidate_signature.parameters[arg_name]
                            sig_matches = sig_matches and type_matches(param.annotation, arg_type)
                    except TypeError:
                        sig_matches = False
                    if sig_matches:
                        new_args_and_kwargs = _args_kwargs_to_normalized_args_kwargs(
                            candidate_signature, args, kwargs, normalize_to_only_use_kwargs)
                        break
            else:
                schema_printouts = "\n".join(str(schema) for schema in matched_schemas)
                raise RuntimeError(
                    f"Tried to normalize arguments to {ember.typename(target)} but "
                    f"the schema match was ambiguous! Please provide argument types to "
                    f"the normalize_arguments() call. Available schemas:\n{schema_printouts}")
    return new_args_and_kwargs


def normalize_module(root, target, args, kwargs=None, normalize_to_only_use_kwargs=False):
    """The call arguments of ``root``'s submodule ``target`` (an ``nn`` module class) bound to
    its forward's signature, as :func:`normalize_function`; None for other modules."""
    try:
        submod = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not "
                           f"have that target!") from e
    if hasattr(submod.__class__, "__name__"):
        classname = submod.__class__.__name__
        if getattr(ember.nn, classname, None) == submod.__class__:
            sig = inspect.signature(inspect.unwrap(submod.forward))
            if kwargs is None:
                kwargs = {}
            return _args_kwargs_to_normalized_args_kwargs(sig, args, kwargs,
                                                          normalize_to_only_use_kwargs)
    return None


def _args_kwargs_to_normalized_args_kwargs(sig, args, kwargs, normalize_to_only_use_kwargs):
    supported_parameter_types = {inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 inspect.Parameter.KEYWORD_ONLY}
    if any(p.kind not in supported_parameter_types for p in sig.parameters.values()):
        # random_'s "from" is positional-only; it is the one such signature allowed
        if list(sig.parameters.keys()) != ["input", "from", "to", "generator"]:
            return None
    bound_args = sig.bind(*args, **kwargs)
    bound_args.apply_defaults()
    new_kwargs = {}
    new_args = []
    for i, param in enumerate(sig.parameters):
        if not normalize_to_only_use_kwargs and i < len(args):
            new_args.append(bound_args.arguments[param])
        else:
            new_kwargs[param] = bound_args.arguments[param]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)

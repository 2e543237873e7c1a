"""Python bindings generated from the schemas: ``ember.add``, ``Tensor.add``, ``Tensor.add_``.

For each op name the generator writes a small Python function (see :func:`source`) that binds the
caller's arguments with Python's own machinery, checks their types as PyTorch's argument parser
does before anything runs, converts the few that need it (devices, dtypes, ``int[N]``, a 0-dim
tensor for a number), routes ``out=`` to the out overload, and calls the overload's dispatcher
entry with every argument positional. A single signature's function takes its parameters
positionally only, with keywords collected apart, so that its TypeErrors say what the parser's
say: the position of an argument given positionally only, its own wording for a missing, extra
or unexpected one (:func:`rebind`). When an op name has several overloads (``max(input)``,
``max(input, dim)``, ``max(input, other)``) the candidates are tried in order, each checking
its argument types, and a call that fits none raises PyTorch's "received an invalid combination
of arguments" TypeError quoting the signatures tried (or, when the number of arguments fits one
signature only, that signature's own TypeError).

Out= overloads pair with the overload whose Python signature they repeat, and those PyTorch's
codegen autogenerates (``generated:`` in native_functions.yaml) have no binding, as there.

Overloads that only differ from another by ``Scalar`` in place of ``Tensor`` (``add.Scalar``)
get no Python binding: as in PyTorch, numbers passed to the Tensor form become wrapped numbers.
"""
import collections
import functools
import importlib
import numbers
import operator
import os
import re
import textwrap
import warnings

import numpy as np

from .._core import api_name as _api_name
from .._core import dtype as D
from .._core import promotion as _promotion
from .._core.symint import SymFloat, SymInt
from .._core.device import device as _device, layout as _layout, memory_format as _memory_format
from .. import overrides as _overrides
from .._tensor import requires_grad_of_factory
from .overload import default_value, ops, py_name
from .registry import FACTORY_CATEGORY
from .._core.codegen import compile_source
from .._dispatch.keys import AUTOGRAD_BITS, K, bit
from .._dispatch.tls import state as _tls_state

_declared = []  # (qualname-without-ns, variants)
_sources = {}
_bound = {}
NUMBER_TYPES = (int, float, bool, complex)
# NumPy's scalar types: PyTorch's argument parser takes them as the Python number of their kind
# (np.float32(2) * t is a float32 tensor, np.bool_ a bool), so bindings pass on ``.item()``
NUMPY_SCALARS = frozenset(t for t in set(np.sctypeDict.values())
                          if issubclass(t, (np.number, np.bool_)))


class NoMatch(Exception):
    pass


def declare(name, variants, python=True, python_module=None, tags=()):
    """Record an overload for binding. ``python_module`` (PyTorch's field: nn, linalg, fft,
    special) puts its function in ``ember._C._<module>`` instead of the ``ember`` namespace.
    An overload tagged ``generated`` (autogen'd) gets none, view copies aside, as in
    gen_python_functions.py's should_generate_py_binding."""
    if python and ("generated" not in tags or "view_copy" in tags):
        _declared.append((name, tuple(variants), python_module))


# python_module -> {name: function}: what ember._C._nn, _linalg, _fft, _special hold
python_modules = collections.defaultdict(dict)


# ---------------------------------------------------------------------------------------------
# Argument conversion and checks used by generated code.

_PY_TYPE_DTYPES = {float: D.float64, int: D.int64, bool: D.bool_, complex: D.complex128}


def to_dtype(v, arg="dtype", fname="op"):
    if isinstance(v, D.dtype):
        return v
    d = _PY_TYPE_DTYPES.get(v)
    if d is not None:
        return d
    raise TypeError(f"{fname}(): argument '{arg}' must be torch.dtype, not {type(v).__name__}")


def is_number(v):
    return v.__class__ in NUMBER_TYPES or v.__class__ is SymInt or \
        v.__class__ is np.bool_ or (isinstance(v, numbers.Number) and not hasattr(v, "_keyset"))


_INTEGRAL = D.INTEGRAL


def scalar_tensor(v):
    """A 0-dim tensor that needs no grad: what PyTorch's parser accepts for a Scalar."""
    return hasattr(v, "_keyset") and v.dim() == 0 and not v.requires_grad


def wrapped_number(v, others):
    """The tensor PyTorch's parser makes of a number passed as a Tensor (for the ops that allow
    it): 0-dim, on the CPU, of the dtype the op gives it beside the tensors ``others``, so that
    type promotion ranks it as the wrapped number it stands for, below 0-dim tensors."""
    from .. import tensor
    if v.__class__ in NUMPY_SCALARS:
        v = v.item()
    return tensor(v, dtype=_promotion.result_type_of((*others, v)))


def is_int(v):
    if v.__class__ is int:
        return True
    if v.__class__ is bool:
        return False
    if v.__class__ is SymInt:  # a symbolic size: an int that must not be evaluated here
        return True
    try:
        operator.index(v)
        # a one-element tensor counts only if integral (not bool, float or complex), as PyTorch
        return not hasattr(v, "_keyset") or (v.numel() == 1 and v._dtype._category == _INTEGRAL)
    except TypeError:
        return False


def int_list(v, n=None):
    """An int[]/SymInt[] argument as a tuple: NoMatch when PyTorch's parser would not take it
    (it checks only the first element), _Unpack when a later element is no int."""
    if v.__class__ is tuple and all(x.__class__ is int for x in v):  # the usual case
        return v
    if v.__class__ is int or (n is not None and is_int(v) and not isinstance(v, (list, tuple))):
        if n is None:
            raise NoMatch
        return (int(operator.index(v)),) * n
    if not isinstance(v, (list, tuple)) or v and not is_int(v[0]):
        raise NoMatch
    out = []
    for i, x in enumerate(v):
        try:
            x = _index(x)
        except TypeError:
            raise _Unpack(i + 1, f"type must be tuple of ints,but got {tp_name(x)}") from None
        if x.__class__ is int and not -2 ** 63 <= x < 2 ** 63:
            raise _Unpack(i + 1, "Overflow when unpacking long long")
        out.append(x)
    return tuple(out)


class _Unpack(Exception):
    """An int-list element that is no int (pos counted from 1, as PyTorch's message does)."""

    def __init__(self, pos, error):
        super().__init__(pos, error)
        self.pos, self.error = pos, error

    def type_error(self, fname, name):
        return TypeError(f"{fname}(): argument '{name}' failed to unpack the object at pos "
                         f"{self.pos} with error \"{self.error}\"")


def tp_name(v):
    """The type's name as CPython's tp_name spells it in PyTorch's messages: a class defined
    in Python by its name, a C type with its module (numpy.float32)."""
    t = type(v)
    if t.__flags__ & (1 << 9) or t.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE
        return t.__name__
    return f"{t.__module__}.{t.__name__}"


def int_list_arg(v, n, fname, name, pos, single, kw=()):
    """A generated binding's int[] argument: the tuple, NoMatch for the next overload, or
    PyTorch's TypeError for it (naming the position of a positional argument only, and the bad
    element's type only there too, as FunctionSignature::parse does)."""
    try:
        return int_list(v, n)
    except _Unpack as e:
        raise e.type_error(fname, name) from None
    except NoMatch:
        if not single:
            raise
    if pos is None or _by_keyword(name, kw):
        raise TypeError(f"{fname}(): argument '{name}' must be tuple of ints, not {tp_name(v)}")
    if isinstance(v, (list, tuple)) and v:
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be tuple of ints, "
                        f"but found element of type {tp_name(v[0])} at pos 0")
    raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be tuple of ints, "
                    f"not {tp_name(v)}")


def _index(v):
    """``operator.index``, keeping a SymInt symbolic."""
    return v if v.__class__ is SymInt else operator.index(v)


def got(args, kwargs):
    """PyTorch's "got (...)": the arguments' type names, the keywords last and in reverse
    order, and a trailing ", " kept when there are keywords only."""
    text = "".join(f"{tp_name(a)}, " for a in args) \
        + "".join(f"{k}={tp_name(v)}, " for k, v in reversed(kwargs.items()))
    return f"({text[:-2] if args else text})"


def invalid_combination(fname, sigs, args, kwargs):
    """PyTorch's format_invalid_args (torch/csrc/utils/invalid_arguments.cpp) for several
    signatures: each one, and under those whose parameter count fits the call, why it did not
    match."""
    lines = []
    for s in sigs:
        lines.append(f" * {s}\n")
        # the C++ splits the text back on ", ": "*" counts as a parameter, and a parameter's
        # name is its last word (a default's value where it has one), as there
        params = s[1:-1].split(", ")
        if len(args) + len(kwargs) != len(params):
            continue
        names = [p.rpartition(" ")[2] for p in params]
        start = max(len(params) - len(kwargs), 0)
        unmatched = [k for k in reversed(kwargs) if k not in names[start:]]
        if unmatched:
            lines.append("      didn't match because some of the keywords were incorrect: "
                         + ", ".join(unmatched) + "\n")
        else:
            lines.append("      didn't match because some of the arguments have invalid types: "
                         + _formatted_arg_desc(params, names, args, kwargs) + "\n")
    return TypeError(f"{fname}() received an invalid combination of arguments - got "
                     f"{got(args, kwargs)}, but expected one of:\n" + "".join(lines))


# invalid_arguments.cpp's type test: a parameter's type is the text before its last space
# ("bool keepdim =" for one with a default, which then matches nothing), matched against the
# argument's type name; float and int also take these.
_ACCEPTED_TYPE_NAMES = {"float": ("float", "int", "long"), "int": ("int", "long")}


def _formatted_arg_desc(params, names, args, kwargs):
    """The arguments' type names with the mismatched ones marked: red on a terminal, else
    between "!"s (invalid_arguments.cpp's _formattedArgDesc)."""
    if os.isatty(1) and os.isatty(2):
        red, reset_red, green, reset_green = "\33[31;1m", "\33[0m", "\33[32;1m", "\33[0m"
    else:
        red, reset_red, green, reset_green = "!", "!", "", ""
    out = "("
    for i in range(len(args) + len(kwargs)):
        is_kwarg = i >= len(args)
        v = kwargs[names[i]] if is_kwarg else args[i]
        type_name = params[i].rpartition(" ")[0] or params[i]
        matching = tp_name(v) in _ACCEPTED_TYPE_NAMES.get(type_name, (type_name,))
        out += green if matching else red
        if is_kwarg:
            out += names[i] + "="
        if isinstance(v, (tuple, list)):
            elems = ", ".join(tp_name(x) for x in v)
            out += f"{tp_name(v)} of " + (f"({elems}{',' if len(v) == 1 else ''})"
                                          if isinstance(v, tuple) else f"[{elems}]")
        else:
            out += tp_name(v)
        out += (reset_green if matching else reset_red) + ", "
    if args:
        out = out[:-2]
    return out + ")"


def arg_error(fname, pname, pos, expected, v):
    where = "" if pos is None else f" (position {pos})"
    return TypeError(f"{fname}(): argument '{pname}'{where} must be {expected}, "
                     f"not {tp_name(v)}")


def _by_keyword(name, kw):
    """Whether a single-signature binding's argument ``name`` came by keyword (its name, or
    its NumPy alias, is among the keywords the binding collected in ``kw``)."""
    return bool(kw) and (name in kw or NUMPY_ALIASES.get(name) in kw)


# The argument types PythonArgParser checks before the call (FunctionParameter::check), for
# the values that are not already of the usual class. Each returns the value the kernel gets
# (an int for an integral 0-dim tensor, a Python number for a NumPy scalar) or raises
# ``bad(...)``: a TypeError for a single signature, NoMatch for one of several.

def int_arg(v, bad, pos, name, kw):
    """int: an int (not a bool), an integral 0-dim tensor that needs no grad, a NumPy int."""
    if v.__class__ is SymInt:
        return v
    if hasattr(v, "_keyset"):
        if v.dim() == 0 and not v.requires_grad and v._dtype._category == _INTEGRAL:
            return operator.index(v)
    elif v.__class__ is not bool:
        try:
            return operator.index(v)
        except TypeError:
            pass
    raise bad(pos, name, "int", v, kw)


def float_arg(v, bad, pos, name, kw):
    """float: a Python or NumPy real number (bools and ints too), a 0-dim tensor that needs no
    grad."""
    if v.__class__ in (int, float, bool, SymFloat, SymInt):
        return v
    if hasattr(v, "_keyset"):
        if v.dim() == 0 and not v.requires_grad:
            return v.item()
    elif v.__class__ in NUMPY_SCALARS:
        return v.item()
    raise bad(pos, name, "float", v, kw)


def scalar_arg(v, bad, pos, name, kw):
    """Number: any number, a 0-dim tensor that needs no grad (its value)."""
    if hasattr(v, "_keyset"):
        if v.dim() == 0 and not v.requires_grad:
            return v.item()
    elif is_number(v):
        return v.item() if v.__class__ in NUMPY_SCALARS else v
    raise bad(pos, name, "Number", v, kw)


def dtype_arg(v, bad, pos, name, kw):
    """torch.dtype: a dtype (the quantized and bits ones are of a subclass), or a Python
    number type standing for one."""
    if isinstance(v, D.dtype):
        return v
    d = _PY_TYPE_DTYPES.get(v) if v.__class__ is type else None
    if d is None:
        raise bad(pos, name, "torch.dtype", v, kw)
    return d


def device_arg(v, bad, pos, name, kw):
    """torch.device: a device, its string, or a CUDA device's index."""
    if isinstance(v, str) or v.__class__ is not bool and isinstance(v, int):
        return _device(v)  # (a bad string is its RuntimeError)
    raise bad(pos, name, "torch.device", v, kw)


def rebind(fname, names, required, kwonly_required):
    """The slow path of a single-signature binding, taken when a positional-or-keyword
    argument came by keyword (the binding's parameters are positional-only, so such keywords
    land in ``kw``), came not at all, or too many came: a function of (values, extra, kw)
    giving ``values`` with the keywords in their places, or raising PyTorch's TypeError for the
    call (FunctionSignature::parse's extra_args, missing_args and extra_kwargs). ``names`` are
    the positional parameters' names, ``required`` whether each has no default."""
    index = {n: i for i, n in enumerate(names)}
    index.update((alias, index[n]) for n, alias in NUMPY_ALIASES.items() if n in index)
    n_pos, low = len(names), sum(required)
    required_at = [i for i, r in enumerate(required) if r]

    def fill(values, extra, kw):
        if extra:
            given = n_pos + len(extra)
            if low != n_pos:
                raise TypeError(f"{fname}() takes from {low} to {n_pos} positional arguments "
                                f"but {given} were given")
            raise TypeError(f"{fname}() takes {n_pos} positional argument"
                            f"{'' if n_pos == 1 else 's'} but {given} "
                            f"{'was' if given == 1 else 'were'} given")
        values = list(values)
        leftover = None  # (the first keyword fitting no free parameter: reported last, there)
        for key in kw:
            i = index.get(key)
            if i is None:
                leftover = leftover or f"got an unexpected keyword argument '{key}'"
            elif required[i] and values[i] is not _NODEFAULT:
                leftover = leftover or f"got multiple values for argument '{names[i]}'"
            else:
                values[i] = kw[key]
        for i in required_at:
            if values[i] is _NODEFAULT:
                # (every parameter without a default from the first missing one, as PyTorch
                # lists them)
                missing = [n for n, r in zip(names[i:], required[i:]) if r] + kwonly_required
                s = "s" if len(missing) == 1 else ""  # (sic: PyTorch's plural)
                raise TypeError(f"{fname}() missing {len(missing)} required positional "
                                f"argument{s}: " + ", ".join(f'"{n}"' for n in missing))
        if leftover:
            raise TypeError(f"{fname}() {leftover}")
        return values
    return fill


def tensor_list(v, pos, single):
    """Check a ``Tensor[]`` argument's elements with PythonArgParser's message (the argument
    index counted from 0, as PyTorch prints it)."""
    for i, t in enumerate(v):
        if not hasattr(t, "_keyset"):
            if not single:
                raise NoMatch
            raise TypeError(f"expected Tensor as element {i} in argument {pos - 1}, "
                            f"but got {tp_name(t)}")
    return v


# PyTorch's Python binding of cat refuses an empty list itself; stack's check lives in its
# CompositeExplicitAutograd kernel, which PyTorch reaches with no tensors but ember's dispatcher,
# finding no dispatch key, does not.
EMPTY_TENSOR_LIST = {
    "cat": (ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    "concat": (ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    "concatenate": (ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    "stack": (RuntimeError, "stack expects a non-empty TensorList"),
}


def empty_tensor_list(fname):
    exc, msg = EMPTY_TENSOR_LIST[fname]
    return exc(msg)


_CHECKS = {"int": is_int, "str": lambda v: isinstance(v, str),
           "bool": lambda v: isinstance(v, (bool, np.bool_))}


def check_numbers(fname, args):
    """After a failed call: a Scalar/float/int/str/bool argument of another type is PyTorch's
    TypeError, not whatever the kernel raised using it. ``args`` holds (position or None, name,
    value, the type's name in PyTorch's messages: int, float, Number, str or bool)."""
    for pos, name, v, expected in args:
        if v is None:
            continue
        fits = _CHECKS.get(expected)
        if not (fits(v) if fits else is_number(v) or hasattr(v, "_keyset")):
            raise arg_error(fname, name, pos, expected, v) from None


# ---------------------------------------------------------------------------------------------
# Code generation.

# The Python signatures PyTorch's argument parser prints in "invalid combination" errors, as
# tools/autograd's gen_python_functions.py writes them (torchgen/api/python.py) and
# python_arg_parser.cpp's FunctionSignature::toString prints them back. Built on the first
# error an op raises, never at import.

_TENSOR_OPTION_NAMES = ("dtype", "layout", "device", "pin_memory")
# a factory's TensorOptions as its Python signature has them (type, name, default)
_PY_TENSOR_OPTIONS = (("ScalarType?", "dtype", "None"), ("Layout?", "layout", "None"),
                      ("Device?", "device", "None"), ("bool?", "pin_memory", "False"),
                      ("bool?", "requires_grad", "False"))
# python.py's argument_type_str: the C++ type names the signature strings carry (and sort by)
_CPP_TYPES = {"int": "int64_t", "float": "double", "str": "c10::string_view"}
_CPP_LIST_TYPES = {"int": "IntArrayRef", "SymInt": "SymIntArrayRef", "Tensor": "TensorList",
                   "Scalar": "ScalarList", "Dimname": "DimnameList"}
# FunctionParameter::type_name, from the C++ type (python_arg_parser.cpp's type_map)
_PRINTED_TYPES = {
    "Tensor": "Tensor", "Scalar": "Number", "int64_t": "int", "SymInt": "int",
    "DeviceIndex": "int", "double": "float", "complex": "complex", "bool": "bool",
    "TensorList": "tuple of Tensors", "c10::List<::std::optional<Tensor>>": "tuple of Tensors",
    "IntArrayRef": "tuple of ints", "SymIntArrayRef": "tuple of ints",
    "ArrayRef<double>": "tuple of floats", "Generator": "torch.Generator",
    "Storage": "torch.Storage", "ScalarType": "torch.dtype", "Layout": "torch.layout",
    "MemoryFormat": "torch.memory_format", "QScheme": "torch.qscheme", "Device": "torch.device",
    "c10::string_view": "str", "Dimname": "name", "DimnameList": "tuple of names",
    "ScalarList": "tuple of Scalars", "DispatchKeySet": "DispatchKeySet", "Stream": "Stream"}
# cpp.default_expr's JIT_TO_CPP_DEFAULT, for the identifiers the schemas use as defaults
_CPP_DEFAULTS = {"False": "false", "True": "true", "None": "::std::nullopt",
                 "Mean": "at::Reduction::Mean", "contiguous_format": "MemoryFormat::Contiguous",
                 "long": "at::kLong"}
_raw_defaults = None


def _yaml_defaults():
    """{"name.overload": {argument: default as written}} from native_functions.yaml: the text
    PyTorch's signatures print (``2.``, ``1e-08``, ``[-2,-1]``), which the parsed schema's
    values no longer spell."""
    global _raw_defaults
    if _raw_defaults is None:
        _raw_defaults = {}
        path = os.path.join(os.path.dirname(__file__), "native_functions.yaml")
        with open(path) as f:
            for m in re.finditer(r"^- func: ([\w.]+)\((.*)\) ->", f.read(), re.M):
                name = m[1] if "." in m[1] else m[1] + "."
                defaults = {}
                for arg in _split_params(m[2]):
                    decl, eq, default = arg.partition("=")
                    if eq:
                        defaults[decl.split()[-1]] = default.strip()
                _raw_defaults[name] = defaults
    return _raw_defaults


def _split_params(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "([") - (ch in ")]")
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return parts + [cur.strip()] if cur.strip() else parts


def _schema_default_text(a):
    """A default as the schema would spell it, from its parsed value (for an op that is not in
    native_functions.yaml)."""
    d = a.default
    if d is None or d is True or d is False:
        return str(d)
    if isinstance(d, tuple):
        return "[" + ",".join(_schema_default_text_of(x) for x in d) + "]"
    if isinstance(d, str) and a.base == "str":
        return "'" + d.replace("'", "\\'") + "'"
    return _schema_default_text_of(d)


def _schema_default_text_of(v):
    return repr(v) if isinstance(v, float) else str(v)


def _normalize_default(a, text):
    """ember's yaml spells some defaults as PyTorch prints a schema (``stride=[1, 1]``,
    ``eps=1.0000000000000001e-05``, ``p=2.``), not as PyTorch's native_functions.yaml writes
    them, which is what its signatures show (``1``, ``1e-05``, ``2``)."""
    if a.is_list and a.list_size and text.startswith("[") and text.endswith("]"):
        items = [x.strip() for x in text[1:-1].split(",")]
        if len(items) == a.list_size and len(set(items)) == 1:
            return items[0]  # (int[2] dilation=1: one number for every element)
    elif a.base in ("float", "Scalar") and not a.is_list:
        if text.endswith(".") and text[:-1].lstrip("-").isdigit():
            return text[:-1]
        if sum(ch.isdigit() for ch in text.partition("e")[0]) >= 16:
            return repr(float(text))  # c10's 17 significant digits back to the short form
    return text


def _cpp_default(a, text):
    """cpp.default_expr then python.py's argument_str: the default as the signature prints it."""
    text = _normalize_default(a, text)
    if a.name == "reduction" and a.base == "int" and text == "1":
        text = "Mean"  # (ember's yaml spells at::Reduction::Mean as its value)
    if a.base == "str" and not a.is_list and len(text) >= 2 and text[0] == text[-1] == "'":
        out, i = "", 1
        while i + 1 < len(text):
            if text[i] != "\\":
                out += '\\"' if text[i] == '"' else text[i]
                i += 1
            else:
                out += "'" if text[i + 1] == "'" else text[i:i + 2]
                i += 2
        text = f'"{out}"'
    elif a.is_list and text.startswith("[") and text.endswith("]"):
        text = "{" + text[1:-1] + "}"
    else:
        text = _CPP_DEFAULTS.get(text, text)
    text = {"true": "True", "false": "False"}.get(text, text)  # pythonify_default
    return "None" if text in ("::std::nullopt", "{}") else text


def _cpp_type(a):
    if not a.is_list:
        t = _CPP_TYPES.get(a.base, a.base)
    elif a.elem_optional and a.base == "Tensor":
        t = "c10::List<::std::optional<Tensor>>"
    elif a.base == "bool":
        t = f"::std::array<bool,{a.list_size}>"
    else:
        t = _CPP_LIST_TYPES.get(a.base)
        t = f"ArrayRef<{_CPP_TYPES.get(a.base, a.base)}>" if t is None else t
        if a.list_size:
            t += f"[{a.list_size}]"
    return t + "?" if a.optional else t


def _schema_type(a):
    """The argument's type as torchgen's str(Type) writes it (what sort_overloads compares)."""
    t = a.base + ("?" if a.elem_optional else "")
    if a.is_list:
        t += f"[{a.list_size}]" if a.list_size else "[]"
    return t + "?" if a.optional else t


class _PySignature:
    """One Python signature: its formals (C++ type, name, default or None), how many are
    positional, and the schema types that order it among its op's others."""

    def __init__(self, fname, schema, out_schema, method, factory):
        # (out= shown where the binding takes it: PyTorch pairs an overload only with the out=
        # one repeating its inputs exactly, ember's bindings sometimes more widely, linspace's
        # Tensor overloads with linspace.out, so the text says what ember accepts)
        formals, types, self.positional = self._inputs(schema, method, factory)
        if out_schema is not None:
            outs = [a for a in out_schema.arguments if a.is_write and a.kwarg_only]
            if len(outs) == 1:
                formals.append((_cpp_type(outs[0]).rstrip("?"), outs[0].name, "None"))
            else:
                formals.append((f"TensorList[{len(outs)}]", "out", "None"))
        if factory:
            formals.extend(_PY_TENSOR_OPTIONS)
            types.extend(t for t, _, _ in _PY_TENSOR_OPTIONS)
        self.formals, self.types = formals, types
        parts = [f"{t} {n}" + ("" if d is None else f"={d}") for t, n, d in formals]
        if len(parts) > self.positional:
            parts.insert(self.positional, "*")
        self.key = f"{fname}({', '.join(parts)})"  # signature_str: the first sort's key

    @staticmethod
    def _inputs(schema, method, factory):
        raw = _yaml_defaults().get(f"{schema.base_name}.{schema.overload_name}")
        names = {a.name for a in schema.arguments}
        grouped = factory or all(n in names for n in _TENSOR_OPTION_NAMES)
        formals, types, positional = [], [], 0
        for a in schema.arguments:
            if a.is_write and a.kwarg_only or method and a.name == "self" \
                    or grouped and a.name in _TENSOR_OPTION_NAMES:
                continue  # (TensorOptions are the factory's own five, or none at all)
            t = _cpp_type(a)
            default = None
            if a.has_default():
                text = raw.get(a.name) if raw else None
                default = _cpp_default(a, _schema_default_text(a) if text is None else text)
            name = "input" if a.name == "self" and t == "Tensor" else a.name
            formals.append((t, name, default))
            types.append(_schema_type(a))
            positional += not a.kwarg_only
        return formals, types, positional

    def __str__(self):
        parts = []
        for i, (t, n, d) in enumerate(self.formals):
            base = t.rstrip("?")
            base = base[:base.index("[")] if base.endswith("]") and "[" in base \
                and not base.startswith("::") else base
            text = f"{_PRINTED_TYPES.get(base, base)} {n}" + ("" if d is None else f" = {d}")
            parts.append(("*, " if i == self.positional else "") + text)
        return "(" + ", ".join(parts) + ")"


def _is_arg_smaller(t1, t2):
    """gen_python_functions.py's sort_overloads: the parameter type that yields to another."""
    return (t1 == "Scalar" and t2 == "Tensor" or t1 == "Scalar?" and t2 == "Tensor?"
            or "Dimname" in t1 and "Dimname" not in t2
            or t1 == "int[]" and t2 in ("int", "int?")
            or t1 == "Tensor[]" and "[]" in t2
            or t1 == "SymInt[]" and t2 == "int[]"
            or t1 in ("SymInt", "int") and t2 == "Tensor")


def _is_smaller(s1, s2):
    if len(s1.types) != len(s2.types):
        return False
    return s1.types != s2.types and all(
        a == b or _is_arg_smaller(a, b) for a, b in zip(s1.types, s2.types))


def sort_signatures(sigs):
    """PyTorch's order: by signature text, then topologically so that a signature comes after
    the ones it yields to (a Scalar parameter after the same one taking a Tensor)."""
    sigs = sorted(sigs, key=lambda s: s.key)
    larger_than = {}
    for i1, s1 in enumerate(sigs):
        for i2, s2 in enumerate(sigs):
            if _is_smaller(s1, s2):
                larger_than.setdefault(i1, set()).add(i2)
    if not larger_than:
        return sigs
    order = [i for i in range(len(sigs)) if i not in larger_than]
    for idx in range(len(sigs)):
        i = order[idx]
        for j in sorted(larger_than):
            larger_than[j].discard(i)
            if not larger_than[j]:
                del larger_than[j]
                order.append(j)
    return [sigs[i] for i in order]


class Signatures:
    """An op's signature lines, made on first use: an error path, so the bindings' import
    builds none of them."""

    def __init__(self, fname, cands, method):
        self._args = (fname, cands, method)
        self._lines = None

    def _make(self):
        if self._lines is None:
            fname, cands, method = self._args
            self._lines = [str(s) for s in sort_signatures(
                [_PySignature(fname, c.ov._schema, c.out_ov._schema if c.out_ov else None,
                              method, _is_factory(c.ov._schema)) for c in cands])]
        return self._lines

    def __iter__(self):
        return iter(self._make())

    def __len__(self):
        return len(self._make())


class _Cand:
    def __init__(self, ov, out_ov, allow_numbers):
        self.ov = ov
        self.out_ov = out_ov
        self.allow_numbers = allow_numbers


def _is_out(schema):
    return any(a.is_write and a.kwarg_only for a in schema.arguments)


# PyTorch gives these Scalar overloads no Python binding (gen_python_functions.py's
# SKIP_PYTHON_BINDINGS_SIGNATURES): the Tensor overload takes the number as a wrapped number.
SKIP_PYTHON_BINDINGS = {"add.Scalar", "add_.Scalar", "sub.Scalar", "sub_.Scalar", "mul.Scalar",
                        "mul_.Scalar", "div.Scalar", "div_.Scalar", "div.Scalar_mode",
                        "div_.Scalar_mode"}
# Ops whose Tensor parameters accept Python numbers (PythonArgParser's
# should_allow_numbers_as_tensors); every other op needs a Scalar overload to take a number.
ALLOW_NUMBERS_AS_TENSORS = {"add", "add_", "div", "div_", "divide", "divide_", "mul", "mul_",
                            "multiply", "multiply_", "sub", "sub_", "subtract", "subtract_",
                            "true_divide", "true_divide_", "to", "_to_copy", "copy_",
                            "floor_divide", "floor_divide_", "_conj"}
# PyTorch's deprecated Python signatures (tools/autograd/deprecated.yaml), which take the
# scalar multipliers positionally, before the tensors they scale: base name -> the parameter
# orders accepted besides the current one (alpha, beta and value are Numbers, the rest Tensors,
# in the current signature's order). They warn once per process, as TORCH_WARN_ONCE does.
DEPRECATED_SIGNATURES = {
    "add": [("self", "alpha", "other")], "sub": [("self", "alpha", "other")],
    "addcmul": [("self", "value", "tensor1", "tensor2")],
    "addcdiv": [("self", "value", "tensor1", "tensor2")],
    **{name: [("beta", "self", "alpha", a, b), ("beta", "self", a, b)]
       for name, a, b in [("addmm", "mat1", "mat2"), ("addmv", "mat", "vec"),
                          ("addr", "vec1", "vec2"), ("addbmm", "batch1", "batch2"),
                          ("baddbmm", "batch1", "batch2")]}}
_SCALAR_PARAMS = {"alpha", "beta", "value"}
_deprecated_warned = False


def _deprecated_call(binding, fname, method, args, kwargs, sigs, has_out, positional):
    """Call ``binding`` for ``args`` given in one of ``fname``'s deprecated parameter orders;
    a TypeError when they fit none (``binding`` takes ``positional`` arguments)."""
    global _deprecated_warned
    numbers = fname.rstrip("_") in ALLOW_NUMBERS_AS_TENSORS
    n = positional - (1 if method else 0)
    too_many = TypeError(f"{fname}() takes {n} positional argument{'s' if n != 1 else ''} but "
                         f"{len(args) - (1 if method else 0)} were given")
    # the keyword scalars (all default to 1) have no place beside a deprecated order
    if any(kwargs.pop(name, 1) != 1 for name in _SCALAR_PARAMS):
        raise too_many
    for form in DEPRECATED_SIGNATURES[fname.rstrip("_")]:
        params = [n for n in form if not (method and n == "self")]
        given = args[1:] if method else args
        if len(given) != len(params):
            continue
        tensors = [args[0]] if method else []
        scalars = {}
        for name, value in zip(params, given):
            if name in _SCALAR_PARAMS:
                if not (is_number(value) or scalar_tensor(value)):
                    break
                scalars[name] = value
            elif hasattr(value, "_keyset") or numbers and name != "self" \
                    and is_number(value):
                tensors.append(value)
            else:
                break
        else:
            if not _deprecated_warned:
                _deprecated_warned = True
                sig = ", ".join(f"Number {n}" if n in _SCALAR_PARAMS else
                                f"Tensor {'input' if n == 'self' else n}" for n in params)
                sig += ", *, Tensor out = None" if has_out else ""
                warnings.warn(f"This overload of {fname} is deprecated:\n\t{fname}({sig})\n"
                              "Consider using one of the following signatures instead:"
                              + "".join(f"\n\t{fname}{s}" for s in sigs), stacklevel=4)
            return binding(*tensors, **scalars, **kwargs)
    raise too_many


def _candidates(overloads, method):
    funcs = [o for o in overloads if not _is_out(o._schema)
             and f"{o._schema.base_name}.{o._schema.overload_name}" not in SKIP_PYTHON_BINDINGS]
    outs = [o for o in overloads if _is_out(o._schema)]
    cands = []
    for o in funcs:
        # gen_python_functions.py's group_overloads: an out= overload serves the one whose
        # Python signature it repeats, names and whole types (list-ness too: all.dim's out= is
        # all.out, not all.dims_out; bitwise_and.Scalar_Tensor's is none, its autogen'd
        # Scalar_Tensor_out having no binding)
        args = [(a.name, _schema_type(a)) for a in o._schema.arguments]
        out_ov = out_idx = None
        for oo in outs:
            oargs = [(a.name, _schema_type(a)) for a in oo._schema.arguments
                     if not (a.is_write and a.kwarg_only)]
            if oargs == args:
                out_ov, out_idx = oo, None
                break
            if _is_factory(o._schema) and oargs == [a for a in args if a in oargs] \
                    and {n for n, _ in args} - {n for n, _ in oargs} <= _TENSOR_OPTIONS:
                # a factory's out= form drops the TensorOptions (zeros.out(size, *, out)),
                # which its Python signature has again
                out_ov, out_idx = oo, [args.index(a) for a in oargs]
                break
        c = _Cand(o, out_ov, o._schema.base_name in ALLOW_NUMBERS_AS_TENSORS)
        c.out_idx = out_idx
        cands.append(c)
    # A number matches a Scalar parameter only: keep Tensor overloads first so a tensor argument
    # never lands in a Scalar slot, as PyTorch's signature order does.
    cands.sort(key=lambda c: sum(a.base == "Scalar" for a in c.ov._schema.arguments))
    return cands


def _py_arg_name(a):
    """An argument's name in PyTorch's Python signature (and messages): ``self`` is ``input``
    where it is a Tensor (python.py's argument_str), ``self`` where it is a Tensor[] or a
    number (``_foreach_abs(self)``)."""
    return "input" if a.name == "self" and a.base == "Tensor" and not a.is_list \
        and not a.optional else a.name


def _convert_lines(a, var, fname, pos, strict, scalar_tensors=False, kw="()"):
    """Lines converting/checking one argument inside a generated function. ``strict`` is True
    for one of several signatures (a misfit is NoMatch), else False or "numbers" (a Tensor
    parameter that takes numbers); ``kw`` the expression of the keywords a single-signature
    binding collected (its TypeErrors name the position of a positional argument only)."""
    lines = []
    name = _py_arg_name(a)
    opt = a.optional
    guard = f"{var} is not None and " if opt else ""
    b = a.base
    tpos = pos  # (_tensor_list counts Tensor[] arguments by position, keyword-only ones too)
    pos = None if a.kwarg_only else pos  # (a keyword-only argument's message has no position)
    bad = f"_bad({pos}, {name!r}, {{}}, {var}, {kw})"
    if b == "Tensor" and not a.is_list:
        if opt:
            lines.append(f"if {var} is not None and not isinstance({var}, Tensor): raise {bad.format(repr('Tensor'))}")
        elif strict == "numbers":
            # (a NumPy scalar is taken as the Python number of its kind, off the tensor path)
            lines.append(f"if not isinstance({var}, Tensor):")
            lines.append(f"    if not _is_number({var}): raise {bad.format(repr('Tensor'))}")
            lines.append(f"    if {var}.__class__ in _np_scalars: {var} = {var}.item()")
        else:
            lines.append(f"if not isinstance({var}, Tensor): raise {bad.format(repr('Tensor'))}")
    elif b == "Tensor":
        lines.append(f"if not isinstance({var}, (list, tuple)): raise {bad.format(repr('tuple of Tensors'))}")
        if fname in EMPTY_TENSOR_LIST:
            lines.append(f"if not {var}: raise _empty_list({fname!r})")
        if not a.elem_optional:
            lines.append(f"_tensor_list({var}, {tpos}, {strict is not True})")
    elif b in ("int", "SymInt") and a.is_list:
        if not opt and a.has_default() and isinstance(a.default, (list, tuple)) and not a.default:
            # PyTorch's Python signature shows an empty default as None and takes None for it
            # (avg_pool2d(x, 2, None): the stride defaults to the kernel size)
            lines.append(f"if {var} is None: {var} = ()")
        convert = (f"{var} = _int_list_arg({var}, {a.list_size}, {fname!r}, {a.name!r}, {pos}, "
                   f"{strict is not True}, {kw})")
        lines.append(f"if {var} is not None: {convert}" if opt else convert)
    elif b in ("int", "SymInt"):
        if strict is True:
            lines.append(f"if {guard}not _is_int({var}): raise _NoMatch")
            # a 0-d integer tensor passes as an int: the kernel gets the Python int
            lines.append(f"if {guard}{var}.__class__ is not int: {var} = _index({var})")
        else:
            lines.append(f"if {guard}{var}.__class__ is not int: "
                         f"{var} = _int_arg({var}, _bad, {pos}, {name!r}, {kw})")
    elif b in ("ScalarType", "Device"):
        cls, conv = ("_dtype_cls", "_dtype_arg") if b == "ScalarType" else ("_device_cls", "_device_arg")
        lines.append(f"if {guard}{var}.__class__ is not {cls}: "
                     f"{var} = {conv}({var}, _bad, {pos}, {name!r}, {kw})")
    elif strict is True:
        check = {"float": "isinstance({v}, (int, float)) and not isinstance({v}, bool) or _is_number({v}) and not isinstance({v}, complex)",
                 "Scalar": "_is_number({v})",
                 "bool": "isinstance({v}, bool)",
                 "str": "isinstance({v}, str)",
                 "Layout": "isinstance({v}, _layout_cls)",
                 "MemoryFormat": "isinstance({v}, _mf_cls)",
                 # (a Tensor goes to the Tensor-source overload: set_(source))
                 "Storage": "not isinstance({v}, Tensor)"}.get(b)
        if b == "Scalar" and not a.is_list and scalar_tensors:
            # PyTorch's parser takes a 0-dim tensor that needs no grad as a Scalar (its value)
            lines.append(f"if {guard}not ({check.format(v=var)}):")
            lines.append(f"    if not _scalar_tensor({var}): raise _NoMatch")
            lines.append(f"    {var} = {var}.item()")
            lines.append(f"elif {var}.__class__ in _np_scalars: {var} = {var}.item()")
        elif check and not a.is_list:
            lines.append(f"if {guard}not ({check.format(v=var)}): raise _NoMatch")
            if b in ("Scalar", "float"):
                lines.append(f"if {var}.__class__ in _np_scalars: {var} = {var}.item()")
        elif b == "float" and a.is_list:  # (upsample_nearest2d(x, None, ['a']) fits no overload)
            lines.append(f"if {guard}not (isinstance({var}, (list, tuple)) and all("
                         f"_is_number(x) and not isinstance(x, complex) for x in {var})): "
                         f"raise _NoMatch")
        elif b == "Scalar" and a.is_list:  # numbers in a sequence: a Tensor is another overload
            lines.append(f"if {guard}not (isinstance({var}, (list, tuple)) and "
                         f"all(_is_number(x) for x in {var})): raise _NoMatch")
    elif not a.is_list:
        # a single signature: the type checks PyTorch's parser makes before the call, a
        # class test first (the usual value passes with no call)
        if b == "float":
            lines.append(f"if {guard}{var}.__class__ is not float: "
                         f"{var} = _float_arg({var}, _bad, {pos}, {name!r}, {kw})")
        elif b == "Scalar":
            # (an int first: the usual default, alpha=1)
            lines.append(f"if {guard}{var}.__class__ is not int and {var}.__class__ not in "
                         f"_py_numbers: {var} = _scalar_arg({var}, _bad, {pos}, {name!r}, {kw})")
        else:
            check = {"bool": "{v}.__class__ is not bool",
                     "str": "not isinstance({v}, str)",
                     "Layout": "not isinstance({v}, _layout_cls)",
                     "MemoryFormat": "not isinstance({v}, _mf_cls)",
                     "Generator": "not isinstance({v}, _generator_cls)"}.get(b)
            if check:
                lines.append(f"if {guard}{check.format(v=var)}: "
                             f"raise {bad.format(repr(_PY_TYPE_NAMES_CHECKED[b]))}")
    return lines


# FunctionParameter::type_name of the types a single signature's bindings check
_PY_TYPE_NAMES_CHECKED = {"bool": "bool", "str": "str", "Layout": "torch.layout",
                          "MemoryFormat": "torch.memory_format", "Generator": "torch.Generator"}


# NumPy's names that PyTorch's argument parser also accepts for these parameters
# (python_arg_parser.cpp's numpy_compatibility_arg_names): ``x.sum(axis=0, keepdims=True)``.
# (PyTorch also takes x/a/x1 for ``input`` and x2 for ``other``; ember does not: every
# unary and binary op would pay for the checks, and Python's TypeError names the parameter.)
NUMPY_ALIASES = {"dim": "axis", "keepdim": "keepdims"}


def _numpy_alias_lines(params, call_args):
    """Keyword-only parameters for the NumPy names of ``call_args`` (added to ``params``) and
    the lines that move an alias's value to its parameter, for one of several signatures (a
    single signature's rebind takes the names). A required parameter with an alias
    (``all(input, dim)``) may then be missing, and so may the required ones after it: they
    default to ``_NA`` and a line checks that they were given."""
    aliased = [v for v in call_args if v in NUMPY_ALIASES and NUMPY_ALIASES[v] not in call_args]
    if not aliased:
        return []
    lines = [f"if {NUMPY_ALIASES[v]} is not _NA: {v} = {NUMPY_ALIASES[v]}" for v in aliased]
    optional_from = None
    for i, p in enumerate(params):
        if p == "*" or p.startswith("*"):
            break
        if "=" not in p and p != "self" and (p in aliased or optional_from is not None):
            optional_from = i if optional_from is None else optional_from
            params[i] = f"{p}=_NA"
            lines.append(f"if {p} is _NA: raise _NoMatch")
    if not any(p == "*" or p.startswith("*") for p in params):
        params.append("*")
    params.extend(f"{NUMPY_ALIASES[v]}=_NA" for v in aliased)
    return lines


def _params(schema, method, out_overload, varargs):
    """The generated function's parameter list and the positional argument expression."""
    params, call_args = [], []
    star = False
    for i, a in enumerate(schema.arguments):
        var = py_name(a.name)
        if a.name == "self":
            var = "self" if method else "input"
        call_args.append(var)
        if method and a.name == "self":
            params.insert(0, "self")  # the bound tensor, wherever the schema puts it (polygamma)
            continue
        if varargs is a:
            params.append(f"*{var}")
            star = True
            continue
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        if a.has_default():
            params.append(f"{var}=_D[{i}]")
        else:
            params.append(var)
    if out_overload is not None:
        if not star:
            params.append("*")
        params.append(f"{out_name(out_overload._schema)}=None")
    return params, call_args


def out_name(out_schema):
    """The keyword of an out= overload's outputs in Python (PythonOutArgument): the output's
    own name where there is one (``grad_input=``), ``out`` for several."""
    outs = [a.name for a in out_schema.arguments if a.is_write and a.kwarg_only]
    return outs[0] if len(outs) == 1 else "out"


def _varargs_param(schema, method):
    positional = [a for a in schema.arguments if not a.kwarg_only and not (method and a.name == "self")]
    if len(positional) == 1 and positional[0].base in ("int", "SymInt") and positional[0].is_list \
            and not positional[0].has_default():
        return positional[0]
    return None


_FACTORY_ARGS = {"dtype", "layout", "device", "pin_memory"}


def _is_factory(sch):
    """Whether PyTorch's Python binding takes TensorOptions (and requires_grad=) for it."""
    return _FACTORY_ARGS <= {a.name for a in sch.arguments} and (
        not any(a.base == "Tensor" for a in sch.arguments)
        or sch.base_name.endswith("_like") or sch.base_name.startswith("new_")
        or f"aten::{sch.base_name}.{sch.overload_name}" in FACTORY_CATEGORY)


def _gen(fname, cands, method):
    """Source of one binding function plus the namespace it needs."""
    ns = {}
    single = len(cands) == 1
    sigs = Signatures(fname, cands, method)
    ns["_SIGS"] = sigs
    body = []
    # overloads taking a Scalar are tried again after all the others, with a 0-dim tensor
    # passing for the Scalar (PyTorch's parser accepts it where no overload takes the tensor)
    second = [] if single else [ci for ci, c in enumerate(cands) if any(
        a.base == "Scalar" and not a.is_list for a in c.ov._schema.arguments)]
    capacity = {}  # candidate -> how many positional arguments it takes (None: any number)
    for ci, c in [(ci, c) for ci, c in enumerate(cands)] + \
            [(f"{ci}t", cands[ci]) for ci in second]:
        scalar_tensors = isinstance(ci, str)
        sch = c.ov._schema
        varargs = _varargs_param(sch, method)
        params, call_args = _params(sch, method, c.out_ov, varargs)
        # A single signature's binding takes its positional-or-keyword parameters positionally
        # only and collects keywords in **_kw, so that its TypeErrors know how an argument came
        # (and PyTorch's messages for a missing or extra one); with varargs (zeros(*size)) it
        # takes keywords as they are.
        posonly = single and varargs is None
        kwv = "_kw" if single else "()"
        ns[f"_D{ci}"] = {i: default_value(a) for i, a in enumerate(sch.arguments) if a.has_default()}
        ns[f"_c{ci}"] = c.ov._call
        if c.out_ov is not None:
            ns[f"_o{ci}"] = c.out_ov._call
        # factories take requires_grad= (PyTorch's Python binding adds it), *_like and new_* too
        factory = _is_factory(sch)
        if factory:
            params.append("requires_grad=False")
        named = [r.name for r in sch.returns]
        if len(sch.returns) > 1 and all(named):
            tname = sch.base_name.rstrip("_")
            ns[f"_rt{ci}"] = return_type(tname, tuple(named))
        conv = []
        for pos, a in enumerate(sch.arguments):
            if method and a.name == "self" or a is varargs:  # (_varargs converts that one)
                continue
            var = call_args[pos]
            if c.allow_numbers and not method and pos == 0 and a.base == "Tensor" \
                    and not a.is_list and not a.optional:
                # torch.div(1.0, t): PyTorch's parser wraps a number given as ``input`` too
                others = "".join(f"{call_args[i]}, " for i, o in enumerate(sch.arguments)
                                 if i and o.base == "Tensor" and not o.is_list)
                conv += [f"if not isinstance({var}, Tensor):",
                         f"    if not _is_number({var}): raise _bad(1, {var!r}, 'Tensor', {var}, {kwv})",
                         f"    {var} = _wrapped_number({var}, ({others}))"]
                continue
            strict = True if not single else ("numbers" if c.allow_numbers and pos > 0 else False)
            if c.allow_numbers and not single and a.base == "Tensor" and pos > 0:
                strict = "numbers"
            conv.extend(_convert_lines(a, var, fname, pos + 1 - (1 if method else 0), strict,
                                       scalar_tensors, kwv))
        if c.out_ov is not None:
            oname = out_name(c.out_ov._schema)
            if oname != "out":
                conv.insert(0, f"out = {oname}")
            n_out = sum(a.is_write and a.kwarg_only for a in c.out_ov._schema.arguments)
            if n_out == 1:
                conv.append(f"if out is not None and not isinstance(out, Tensor): "
                            f"raise _bad(None, {oname!r}, 'Tensor', out, {kwv})")
            else:  # (its index among the Python signature's parameters, for the message)
                index = len(c.out_ov._schema.arguments) - n_out - (1 if method else 0)
                conv.append(f"if out is not None: _out_tensors(out, {n_out}, {index}, _bad, {kwv})")
        alias_lines = [] if single else _numpy_alias_lines(params, call_args)
        if single and fname.rstrip("_") in DEPRECATED_SIGNATURES:
            # extra positionals: one of the deprecated orders (scalars first)
            positional = [p.partition("=")[0] for p in params[:params.index("*")]]
            params[params.index("*")] = "*_extra"
            # (the keyword scalars too: given beside a deprecated order, PyTorch refuses them)
            kw = "{" + "".join(f"{n!r}: {n}, " for n in ("alpha", "beta", "value", "out")
                               if any(p.partition("=")[0] == n for p in params)) + "}"
            fn_dep = (f"if _extra: return _deprecated(_b{ci}, {fname!r}, {method}, "
                      f"({''.join(p + ', ' for p in positional)}*_extra), {kw})")
        else:
            fn_dep = None
        rebind_line = _posonly(params, sch, method, call_args, fname, ci, ns,
                               extra=fn_dep is None) if posonly else None
        params_src = ", ".join(p.replace("_D[", f"_D{ci}[") for p in params)
        capacity[ci] = _positional_capacity(params, method)
        if varargs is not None:
            v = call_args[sch.arguments.index(varargs)]
            params_src += ", **_kw"
            conv.insert(0, f"{v} = _varargs({v}, _kw, {v!r}, {single}, {fname!r})")
        args_src = ", ".join(call_args)
        call = f"_c{ci}({args_src})"
        if c.out_ov is not None and c.out_idx is not None:
            sub = "".join(f"{call_args[i]}, " for i in c.out_idx)
            dt = call_args[[a.name for a in sch.arguments].index("dtype")] \
                if "dtype" in [a.name for a in sch.arguments] else "None"
            call = f"(_c{ci}({args_src}) if out is None else _factory_out(_o{ci}, ({sub}), out, {dt}, {fname!r}))"
        elif c.out_ov is not None:
            call = f"(_c{ci}({args_src}) if out is None else _out(_o{ci}, ({args_src}{',' if len(call_args) == 1 else ''}), out))"
        if f"_rt{ci}" in ns:
            call = f"_rt{ci}(*{call})"
        elif len(sch.returns) == 1 and sch.returns[0].is_list:
            call = f"tuple({call})"  # PyTorch returns a Tensor[] as a tuple
        fn_lines = [f"def _b{ci}({params_src}):"] + ["    " + ln for ln in alias_lines]
        if fn_dep:
            fn_lines.append("    " + fn_dep)
            ns["_deprecated"] = functools.partial(_deprecated_call, sigs=sigs,
                                                  has_out=c.out_ov is not None,
                                                  positional=len(positional))
        if rebind_line:
            fn_lines.append("    " + rebind_line)
        if single:
            fn_lines.append("    " + _torch_function_line(
                sch, method, call_args, varargs, ci,
                out_name(c.out_ov._schema) if c.out_ov else None, factory, ns))
        fn_lines += ["    " + ln for ln in conv]
        if factory:
            # PyTorch's Python factories are its torch:: variable factories, which run below
            # Autograd and ADInplaceOrView: the fill or sampler inside (randn's normal_) leaves
            # the new tensor at version 0
            fn_lines += ["    _ex = _tls.excluded",
                         "    _tls.excluded = _ex | _BELOW_AD_VIEW",
                         "    try:",
                         f"        r = {call}",
                         "    finally:",
                         "        _tls.excluded = _ex",
                         # (the call only when asked: factories are on the hot path)
                         "    return _factory_grad(r, True) if requires_grad else r"]
        else:
            fn_lines.append(f"    return {call}")
        body.append("\n".join(fn_lines))
    src = "\n\n".join(body) + "\n\n"
    if single:
        src += f"{fname} = _b0\n"
        ns["_bad"] = _bad_factory(fname)
    else:
        ns["_bad"] = lambda *a: NoMatch()
        self_p = "self, " if method else ""
        # a candidate that cannot take so many positional arguments is skipped before its call
        # raises Python's TypeError for them (PyTorch's parser compares the counts too)
        tries = []
        for ci in list(range(len(cands))) + [f"{ci}t" for ci in second]:
            attempt = (f"try:\n    return _b{ci}({self_p}*args, **kwargs)\n"
                       f"except (_NoMatch, TypeError) as e:\n    if not _binding_error(e): raise")
            if capacity[ci] is not None:
                attempt = f"if len(args) <= {capacity[ci]}:\n" + textwrap.indent(attempt, "    ")
            tries.append(textwrap.indent(attempt, "    "))
        tries = "\n".join(tries)
        tf_args = "(self,) + args" if method else "args"
        src += (f"def {fname}({self_p}*args, **kwargs):\n"
                f"    if _TF_ON and _tf_check({tf_args} + tuple(kwargs.values())):\n"
                f"        return _tf_bound({fname}, {tf_args}, kwargs)\n{tries}\n"
                f"    _plausible({'self' if method else 'None'}, args, kwargs)\n"
                f"    raise _invalid({fname!r}, _SIGS, args, kwargs)\n")
        ns["_plausible"] = functools.partial(plausible_error, fname, cands, method)
    return src, ns


def _positional_capacity(params, method):
    """How many positional arguments (after ``self`` for a method) a generated function with
    ``params`` takes; None for any number (a ``*size`` or ``*_extra`` parameter)."""
    n = 0
    for p in params:
        if p.startswith("*"):
            return n if p == "*" else None
        if p != "/" and not (method and p == "self"):
            n += 1
    return n


_NODEFAULT = object()


class _Parsed(Exception):
    pass


def _parsed(*args):
    raise _Parsed


def plausible_error(fname, cands, method, self, args, kwargs):
    """PythonArgParser::print_error's first step, for a call no signature took: when the
    number of arguments fits just one signature, that signature's own TypeError (arange("a"):
    "argument 'end' (position 1) must be Number"). Its single-signature binding parses the
    call again, compiled now, with a stub in place of the op that ends a call it takes."""
    n = len(args) + len(kwargs)
    fitting = []
    for c in cands:
        sig = _PySignature(fname, c.ov._schema, c.out_ov._schema if c.out_ov else None,
                           method, _is_factory(c.ov._schema))
        if sum(d is None for _, _, d in sig.formals) <= n <= len(sig.formals):
            fitting.append(c)
    if len(fitting) != 1:
        return
    src, ns = _gen(fname, fitting, method)
    ns.update(_common, _c0=_parsed, _o0=_parsed, _TF_ON=[])
    compile_source(src, f"<ember binding check {fname}>", ns)
    try:
        ns[fname](*((self,) if method else ()), *args, **kwargs)
    except _Parsed:
        pass


def _first_rebind(ns, key, fname, names, required, kwonly_required):
    """``rebind`` for a binding, compiled on its first call into straight-line code for the
    usual case (every keyword names a free parameter, none missing) in front of ``rebind``
    itself: a call with keywords costs little more than Python's own binding of them, and no
    binding pays for it at import."""
    def first(values, extra, kw):
        lines = [f"def {key}(values, extra, kw):", "    if not extra:",
                 f"        {''.join(f'_v{i}, ' for i in range(len(names)))}= values",
                 "        n = len(kw)"]
        for i, (name, req) in enumerate(zip(names, required)):
            free = f" and _v{i} is _NA" if req else ""
            lines += [f"        if {name!r} in kw{free}:",
                      f"            _v{i} = kw[{name!r}]", "            n -= 1"]
        given = "".join(f" and _v{i} is not _NA" for i, r in enumerate(required) if r)
        lines += [f"        if not n{given}:",
                  f"            return {''.join(f'_v{i}, ' for i in range(len(names)))}",
                  "    return _fill(values, extra, kw)"]
        code = {"_NA": _NODEFAULT, "_fill": rebind(fname, names, required, kwonly_required)}
        compile_source("\n".join(lines), f"<ember binding rebind {fname}>", code)
        ns[key] = code[key]
        return ns[key](values, extra, kw)
    return first


def _posonly(params, sch, method, call_args, fname, ci, ns, extra=True):
    """Make ``params`` (a single signature's) positional-only up to the keyword-only ones,
    ``*_extra`` and ``**_kw`` added, and return the line that sends a call with keywords for
    them, too few or too many positional arguments (unless ``extra`` is False: a deprecated
    signature's line before it took those) to ``rebind``."""
    star = next((i for i, p in enumerate(params) if p in ("*", "*_extra")), len(params))
    params[star:star + (star < len(params))] = ["/", "*_extra"]
    params.append("**_kw")
    names, variables, required = [], [], []
    for a, var in zip(sch.arguments, call_args):
        if a.kwarg_only or method and a.name == "self":
            continue
        names.append(_py_arg_name(a))
        variables.append(var)
        required.append(not a.has_default())
    for i, p in enumerate(params):  # (a required one is missing when still _NA)
        if p in variables and required[variables.index(p)]:
            params[i] = f"{p}=_NA"
    kwonly_required = [a.name for a in sch.arguments
                       if a.kwarg_only and not a.has_default() and not a.is_write]
    ns[f"_rebind{ci}"] = _first_rebind(ns, f"_rebind{ci}", fname, names, required,
                                       kwonly_required)
    last = [v for v, r in zip(variables, required) if r][-1:]
    cond = "_kw" + (" or _extra" if extra else "") + "".join(f" or {v} is _NA" for v in last)
    values = "".join(f"{v}, " for v in variables)
    target = f"{values} = " if variables else ""
    return f"if {cond}: {target}_rebind{ci}(({values}), _extra, _kw)"


def _torch_function_line(sch, method, call_args, varargs, ci, out_kw, factory, ns):
    """The first line of a binding: hand the call to ``__torch_function__`` when a Tensor
    subclass or a TorchFunctionMode asks for it. With neither in the process, ``_TF_ON`` is an
    empty list and this line costs one global lookup."""
    tensors, pos, pos_defaults, kw_names, kw_vals, kw_defaults = [], [], [], [], [], []
    for i, (a, var) in enumerate(zip(sch.arguments, call_args)):
        if a.base == "Tensor":
            tensors.append(var)
        default = f"_D{ci}[{i}]" if a.has_default() else "_NODEF"
        if a is varargs:
            pos.append(f"*{var}")
            continue
        if a.kwarg_only:
            kw_names.append(repr(a.name))
            kw_vals.append(var)
            kw_defaults.append(default)
        else:
            pos.append(var)
            pos_defaults.append(default)
    for extra, default in ((out_kw, "None"), ("requires_grad", "False")):
        if extra == out_kw and out_kw or extra == "requires_grad" and factory:
            kw_names.append(repr(extra))
            kw_vals.append(extra)
            kw_defaults.append(default)
            if extra == out_kw:
                tensors.append(out_kw)
    if varargs is not None:
        pos_defaults = ["_NODEF"] * len(pos)  # keep every vararg
        kw_names.append("*_kw")
        kw_vals.append("*_kw.values()")
        kw_defaults.append("*[_NODEF] * len(_kw)")
    if not tensors:
        tensors = ["*(" + ", ".join(pos + kw_vals) + ",)"] if pos or kw_vals else []

    def tup(items):
        return "(" + ", ".join(items) + ("," if items else "") + ")"
    if varargs is not None:
        pos_src = "(" + ", ".join(pos) + ("," if len(pos) == 1 else "") + ")"
        pos_defaults_src = f"(_NODEF,) * len({pos_src})"
    else:
        pos_src, pos_defaults_src = tup(pos), tup(pos_defaults)
    ns["_NODEF"] = _NODEFAULT
    return (f"if _TF_ON and _tf_check({tup(tensors)}): return _tf_named(_b{ci}, {pos_src}, "
            f"{pos_defaults_src}, ({tup(kw_names)}, {tup(kw_vals)}), {tup(kw_defaults)})")


def _bad_factory(fname):
    def bad(pos, pname, expected, v, kw=()):
        return arg_error(fname, pname, None if _by_keyword(pname, kw) else pos, expected, v)
    return bad


def _binding_error(e):
    """True when a TypeError came from binding the arguments (try the next candidate)."""
    if isinstance(e, NoMatch):
        return True
    tb = e.__traceback__
    # an error raised by Python's argument binding has no frame inside the binder itself
    depth = 0
    while tb is not None:
        depth += 1
        tb = tb.tb_next
    return depth <= 1


def _varargs(v, kw, name, single=True, fname="op"):
    if kw:
        if name in kw and not v and len(kw) == 1:
            v = (kw[name],)
        elif not single:  # another overload may take this keyword (rand(2, generator=g))
            raise NoMatch
        else:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kw))}'")
    try:
        if len(v) == 1 and not is_int(v[0]):
            return int_list(v[0])
        return int_list(v)
    except _Unpack as e:
        raise e.type_error(fname, name) from None
    except NoMatch:
        if not single:
            raise
    if len(v) > 1:  # sizes given one by one only when the first is an int
        raise TypeError(f"{fname}() takes 1 positional argument but {len(v)} were given")
    bad = v[0]
    where = "" if kw else " (position 1)"  # PyTorch names the position only if positional
    if isinstance(bad, (list, tuple)) and bad and not kw:
        raise TypeError(f"{fname}(): argument '{name}'{where} must be tuple of ints, but found "
                        f"element of type {tp_name(bad[0])} at pos 0")
    raise TypeError(f"{fname}(): argument '{name}'{where} must be tuple of ints, "
                    f"not {tp_name(bad)}")


_TENSOR_OPTIONS = {"dtype", "layout", "device", "pin_memory", "memory_format"}


def _factory_out(call, args, out, dtype, fname):
    """A factory called with out=: the out tensor decides dtype and device (PyTorch checks that
    an explicit dtype agrees with it)."""
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {dtype._short} does not match dtype of out parameter "
                           f"({out.dtype._short})")
    return call(*args, out)


def _out_tensors(out, n, index, bad, kw):
    """Check the out= of an op with ``n`` outputs, PythonArgParser's TensorList[n]: PyTorch's
    TypeError for a wrong length or element whichever the signatures, ``bad``'s otherwise."""
    if not isinstance(out, (list, tuple)):
        raise bad(None, "out", "tuple of Tensors", out, kw)
    if len(out) != n:
        raise TypeError(f"expected tuple of {n} elements but got {len(out)}")
    for i, t in enumerate(out):
        if not hasattr(t, "_keyset"):
            raise TypeError(f"expected Tensor as element {i} in argument {index}, "
                            f"but got {tp_name(t)}")


def _out(call, args, out):
    if isinstance(out, (list, tuple)):
        return call(*args, *out)
    return call(*args, out)


# the names every generated binding's code refers to (filled by generate)
_common = {}
_return_types = {}
_return_types_module = importlib.import_module("ember.return_types")


def _return_type_repr(self):
    # PyTorch's structseq form: one field a line
    fields = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"{_api_name.name}.return_types.{type(self).__name__}(\n{fields})"


def return_type(name, fields):
    key = (name, fields)
    t = _return_types.get(key)
    if t is None:
        t = collections.namedtuple(name, fields)
        t.__module__ = "ember.return_types"
        t.__repr__ = _return_type_repr
        _return_types[key] = t
        setattr(_return_types_module, name, t)
    return t


def generate(tensor_cls):
    """Build every binding: returns {name: function} for the ember namespace and installs
    methods on ``tensor_cls``."""
    by_name = collections.OrderedDict()
    module_of = {}
    for name, variants, pymod in _declared:
        base, _, overload = name.partition(".")
        by_name.setdefault(base, []).append((overload or "default", variants))
        if pymod:
            module_of[base] = pymod
    functions = {}
    from ..random import Generator
    common = _common
    common.update({"Tensor": tensor_cls, "_NoMatch": NoMatch, "_is_number": is_number,
              "_scalar_tensor": scalar_tensor, "_is_int": is_int, "_wrapped_number": wrapped_number,
              "_int_list_arg": int_list_arg, "_np_scalars": NUMPY_SCALARS,
              "_dtype_cls": D.dtype, "_device_cls": _device, "_layout_cls": _layout,
              "_mf_cls": _memory_format, "_invalid": invalid_combination, "_out": _out,
              "_varargs": _varargs, "_index": _index, "_tensor_list": tensor_list, "_empty_list": empty_tensor_list,
              "_binding_error": _binding_error, "_factory_out": _factory_out,
              "_NA": _NODEFAULT, "_factory_grad": requires_grad_of_factory,
              "_tls": _tls_state, "_BELOW_AD_VIEW": AUTOGRAD_BITS | bit(K.ADInplaceOrView),
              "_out_tensors": _out_tensors, "_int_arg": int_arg, "_generator_cls": Generator, "_float_arg": float_arg, "_scalar_arg": scalar_arg,
              "_dtype_arg": dtype_arg, "_device_arg": device_arg,
              "_py_numbers": frozenset(NUMBER_TYPES),
              "_TF_ON": _overrides._TF_ON, "_tf_check": _overrides._check,
              "_tf_bound": _overrides._dispatch_bound, "_tf_named": _overrides._dispatch_named})
    for base, items in by_name.items():
        packet = getattr(ops.aten, base)
        all_ovs = [getattr(packet, ov) for ov, _ in items]
        for method in (False, True):
            want = "method" if method else "function"
            chosen = [getattr(packet, ov) for ov, variants in items if want in variants]
            if not chosen:
                continue
            outs = [o for o in all_ovs if _is_out(o._schema)] if not method else []
            cands = _candidates(chosen + [o for o in outs if o not in chosen], method)
            if not cands:
                continue
            src, ns = _gen(base, cands, method)
            ns.update(common)
            compile_source(src, f"<ember binding {'Tensor.' if method else 'ember.'}{base}>", ns)
            fn = ns[base]
            fn.__name__ = fn.__qualname__ = base
            fn.__doc__ = "\n".join(str(c.ov._schema) for c in cands)
            _sources[("method" if method else "function", base)] = src
            _bound[("method" if method else "function", base)] = [(c.ov, c.out_ov) for c in cands]
            if method:
                setattr(tensor_cls, base, fn)
            else:
                pymod = module_of.get(base)
                if pymod:
                    fn.__module__ = f"ember._C._{pymod}"
                    python_modules[pymod][base] = fn
                else:
                    fn.__module__ = "ember"
                    functions[base] = fn
    return functions


def source(name, method=False):
    """The generated source of ``ember.<name>`` (or ``Tensor.<name>`` with method=True)."""
    return _sources[("method" if method else "function", name)]


def bound_overloads(name, method=False):
    """(overload, its out= overload or None) for each signature ``ember.<name>`` (or
    ``Tensor.<name>``) binds, in the order tried."""
    return _bound[("method" if method else "function", name)]

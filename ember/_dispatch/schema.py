"""Parser for PyTorch's operator schema language.

``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`` becomes a
:class:`FunctionSchema` of :class:`Argument` s: base type, optionality (``?``), list-ness
(``[]``/``[2]``), alias annotations (``(a)``, ``(a!)``, ``(a -> *)``), keyword-only-ness and the
parsed default value. ``str(schema)`` prints it back the way PyTorch prints ``op._schema``.
"""
import re


class _NoDefault:
    def __repr__(self):
        return "<no default>"


NO_DEFAULT = _NoDefault()

_TYPE_RE = re.compile(
    # (a dotted base names a custom class: __torch__.torch.classes.quantized.LinearPackedParamsBase
    # is quantized::linear's prepacked weight)
    r"^(?P<base>[A-Za-z_][A-Za-z0-9_.]*)"
    r"(?:\((?P<alias>[a-z0-9_]+)(?P<write>!)?(?:\s*->\s*\*)?\))?"
    r"(?P<opt1>\?)?"
    r"(?:\[(?P<n>\d*)\])?"
    r"(?P<opt2>\?)?$")


class Argument:
    __slots__ = ("name", "type", "base", "optional", "is_list", "list_size", "alias", "is_write",
                 "default", "kwarg_only", "elem_optional")

    def __init__(self, name, type_str, default, kwarg_only):
        m = _TYPE_RE.match(type_str.replace(" ", ""))
        if not m:
            raise RuntimeError(f"schema parse error: bad type {type_str!r}")
        self.name = name
        self.type = type_str
        self.base = m["base"]
        self.is_list = m["n"] is not None
        self.list_size = int(m["n"]) if m["n"] else None
        # "Tensor?[]" is a list of optional tensors; "int[]?" is an optional list.
        self.elem_optional = bool(m["opt1"]) and self.is_list
        self.optional = bool(m["opt2"]) or (bool(m["opt1"]) and not self.is_list)
        self.alias = m["alias"]
        self.is_write = bool(m["write"])
        self.default = default
        self.kwarg_only = kwarg_only

    @property
    def is_tensor(self):
        return self.base == "Tensor"

    @property
    def is_tensor_like(self):
        return self.base == "Tensor"

    @property
    def default_value(self):
        """The parsed default, None when there is none (PyTorch's ``Argument.default_value``:
        a list default as a list, a number given for ``int[2]`` repeated)."""
        d = self.default
        if d is NO_DEFAULT:
            return None
        if self.is_list and isinstance(d, tuple):
            return list(d)
        if self.is_list and self.list_size and d is not None:
            return [d] * self.list_size
        return d

    @property
    def N(self):
        """A fixed-size list's length (``int[2]``), else None."""
        return self.list_size

    def has_default(self):
        return self.default is not NO_DEFAULT

    def __str__(self):
        s = f"{self.type} {self.name}" if self.name else self.type
        if self.default is not NO_DEFAULT:
            s += "=" + _fmt_default(self.default, self)
        return s

    def __repr__(self):
        return f"Argument({self})"


class FunctionSchema:
    __slots__ = ("base_name", "overload_name", "arguments", "returns", "namespace", "_str")

    def __init__(self, name, overload_name, arguments, returns, namespace=None):
        self.namespace = namespace  # "aten"; printed as "aten::name", as PyTorch prints _schema
        self.base_name = name  # "add": the name without its namespace
        self.overload_name = overload_name
        self.arguments = arguments
        self.returns = returns
        self._str = None

    @property
    def name(self):
        """The qualified name, ``aten::add``, as PyTorch's ``FunctionSchema.name`` (ember's own
        code uses ``base_name``, ``add``)."""
        return f"{self.namespace}::{self.base_name}" if self.namespace else self.base_name

    @property
    def is_mutable(self):
        return any(a.is_write for a in self.arguments)

    @property
    def kind_is_out(self):
        return any(a.is_write and a.kwarg_only for a in self.arguments)

    def mutated_args(self):
        return [a for a in self.arguments if a.is_write]

    def __str__(self):
        if self._str is None:
            args = []
            star = False
            for a in self.arguments:
                if a.kwarg_only and not star:
                    args.append("*")
                    star = True
                args.append(str(a))
            name = self.base_name + (f".{self.overload_name}" if self.overload_name else "")
            if self.namespace:
                name = f"{self.namespace}::{name}"
            if len(self.returns) == 1:  # named or not, as PyTorch prints "-> Tensor[] self_out"
                rets = str(self.returns[0])
            else:
                rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
            self._str = f"{name}({', '.join(args)}) -> {rets}"
        return self._str

    def __repr__(self):
        return str(self)


def _split_top(s):
    """Split on commas that are not inside brackets or parentheses."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


_IDENT_DEFAULTS = {"None": None, "True": True, "False": False, "Mean": 1, "Sum": 2,
                   "contiguous_format": "contiguous_format", "long": "int64"}


def _parse_default(text, base):
    text = text.strip()
    if text in _IDENT_DEFAULTS:
        return _IDENT_DEFAULTS[text]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return tuple(_parse_default(x, base) for x in _split_top(inner)) if inner else ()
    if text[0] in "\"'":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    return text


# PyTorch prints enum defaults by value: ScalarType (dtype=long -> 4) and MemoryFormat.
_ENUM_DEFAULTS = {
    "ScalarType": {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                   "float32": 6, "float64": 7, "complex64": 9, "complex128": 10, "bool": 11,
                   "bfloat16": 15},
    "MemoryFormat": {"contiguous_format": 0, "preserve_format": 1, "channels_last": 2,
                     "channels_last_3d": 3},
}


def _fmt_default(v, arg):
    if isinstance(v, float) or (arg.base == "float" and v.__class__ is int):
        s = "%.17g" % v  # c10 prints doubles with 17 digits and marks integral ones with "."
        return s + "." if s.lstrip("-").isdigit() else s
    if v is None:
        return "None"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, tuple):
        return "[" + ", ".join(_fmt_default(x, arg) for x in v) + "]"
    if isinstance(v, str):
        if arg.base in _ENUM_DEFAULTS:
            return str(_ENUM_DEFAULTS[arg.base].get(v, v))
        return f'"{v}"'
    return repr(v)


def _parse_arg(text, kwarg_only):
    if "=" in text:
        decl, default_text = text.split("=", 1)
    else:
        decl, default_text = text, None
    decl = decl.strip()
    # the type may contain spaces inside an alias annotation "(a -> *)"
    type_str, _, name = decl.rpartition(" ")
    if not type_str:
        raise RuntimeError(f"schema parse error: argument {text!r} has no name")
    default = NO_DEFAULT if default_text is None else _parse_default(default_text, None)
    return Argument(name, type_str.strip(), default, kwarg_only)


def _parse_return(text):
    text = text.strip()
    type_str, name = text, None
    if " " in text and not text.endswith(")") and not text.endswith("]"):
        type_str, _, name = text.rpartition(" ")
        if "->" in name:
            type_str, name = text, None
    return Argument(name, type_str.strip(), NO_DEFAULT, False)


def parse_schema(text):
    """Parse ``[ns::]name[.overload](args) -> returns``."""
    text = text.strip()
    if "(" not in text:
        raise RuntimeError("Tried to parse a function schema but only the operator name was "
                           "given")
    namespace = None
    head = text[: text.index("(")]
    if "::" in head:
        namespace, _, text = text.partition("::")
    lp = text.index("(")
    full = text[:lp].strip()
    depth = 0
    for i in range(lp, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                rp = i
                break
    else:
        raise RuntimeError(f"schema parse error: unbalanced parentheses in {text!r}")
    arg_text = text[lp + 1:rp]
    rest = text[rp + 1:].strip()
    if not rest.startswith("->"):
        raise RuntimeError(f"schema parse error: expected '->' in {text!r}")
    ret_text = rest[2:].strip()
    name, _, overload = full.partition(".")
    args = []
    kwarg_only = False
    for part in _split_top(arg_text):
        if part == "*":
            kwarg_only = True
            continue
        args.append(_parse_arg(part, kwarg_only))
    if ret_text == "()":
        returns = []
    elif ret_text.startswith("(") and ret_text.endswith(")") and not re.match(r"^\(\w+!?\)", ret_text):
        returns = [_parse_return(r) for r in _split_top(ret_text[1:-1])]
    else:
        returns = [_parse_return(ret_text)]
    return FunctionSchema(name, overload, args, returns, namespace)

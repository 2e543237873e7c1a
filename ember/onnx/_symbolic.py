"""Custom symbolic functions: how ``export(..., dynamo=False)`` writes a custom operator.

PyTorch's TorchScript exporter lets a library register, per operator and opset, a function
``symbolic(g, *inputs)`` that emits ONNX nodes with ``g.op("Name", *values, attr_i=...)``
(torchvision does so for its detection ops when it is imported). ember's exporter (one capture for
both ``dynamo`` settings, see ``ember.onnx.export``) calls the registered function when
``dynamo=False`` meets a custom op in the captured graph, with a :class:`GraphContext` over its own
graph builder. Tensor inputs arrive as :class:`SymbolicValue` objects and constants as Python
values, which is what ``symbolic_helper.parse_args`` would have turned them into. PyTorch's own
per-opset symbolic library (``symbolic_opset11.unsqueeze`` ...) is TorchScript-specific and not
provided: ember lowers aten ops through ``_lowering.LOWERINGS``.
"""
import enum
import re

from .errors import OnnxExporterError

__all__ = ["register_custom_op_symbolic", "unregister_custom_op_symbolic", "GraphContext",
           "SymbolicValue", "TensorProtoDataType"]

# "domain::op" -> {opset version: symbolic function}
_registry = {}


def _verify_name(symbolic_name):
    if not re.match(r"^[a-zA-Z0-9-_]+::[a-zA-Z-_]+[a-zA-Z0-9-_]*$", symbolic_name):
        raise OnnxExporterError(f"Failed to register operator {symbolic_name}. The symbolic "
                                f"name must match the format domain::name, and should start "
                                f"with a letter and contain only alphanumeric characters")
    ns = symbolic_name.split("::")[0]
    if ns == "onnx":
        raise ValueError(f"Failed to register operator {symbolic_name}. {ns} domain cannot be "
                         f"modified.")


def _qualified(symbolic_name):
    return f"aten{symbolic_name}" if symbolic_name.startswith("::") else symbolic_name


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Use ``symbolic_fn(g, *inputs)`` for the operator ``symbolic_name`` ("domain::op") in
    exports at ``opset_version`` and above (until another registration's opset)."""
    symbolic_name = _qualified(symbolic_name)
    _verify_name(symbolic_name)
    _registry.setdefault(symbolic_name, {})[opset_version] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    symbolic_name = _qualified(symbolic_name)
    _verify_name(symbolic_name)
    _registry.get(symbolic_name, {}).pop(opset_version, None)


def lookup(qualname, opset):
    """The function registered for ``qualname`` at the highest opset <= ``opset``, or None."""
    versions = [v for v in _registry.get(qualname, ()) if v <= opset]
    return _registry[qualname][max(versions)] if versions else None


class TensorProtoDataType(enum.IntEnum):
    """ONNX's ``TensorProto`` element types (what ``to_i=`` of a Cast names)."""
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20


class SymbolicValue:
    """An ONNX value of the graph being built, as a symbolic function sees it."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"SymbolicValue({self.name!r})"


# PyTorch's attribute keys: a name, "_" and the kind (i int, f float, s string, t/z tensor; a list
# value makes a list attribute of that kind)
_ATTR_PATTERN = re.compile("^(.+)_(([ifstgz])|(ty))$")
_KINDS = {"i": int, "f": float, "s": str}


class GraphContext:
    """The ``g`` a symbolic function gets: ``g.op`` appends a node and returns its value(s);
    ``g.opset`` is the export's opset."""

    def __init__(self, builder, opset):
        self._builder = builder
        self.opset = opset
        self.domains = set()  # custom domains the nodes used (the model imports them)

    def _input(self, x):
        if x is None or isinstance(x, SymbolicValue):
            return x
        # a constant operand becomes a Constant node, as PyTorch's g.op makes it
        return self.op("Constant", value_z=x)

    def _attribute(self, key, value):
        m = _ATTR_PATTERN.match(key)
        if m is None:
            raise ValueError(f"Invalid attribute specifier '{key}' names must be suffixed with "
                             f"type, e.g. 'dim_i' or 'dims_i'")
        name, kind = m.group(1), m.group(2)
        if kind in ("t", "z"):
            from .. import as_tensor
            onnx = self._builder.onnx
            return name, onnx.numpy_helper.from_array(as_tensor(value).detach().cpu().numpy())
        if kind not in _KINDS:
            raise OnnxExporterError(f"attribute '{key}': ember's exporter writes int, float, "
                                    f"string and tensor attributes (not graphs or types)")
        convert = _KINDS[kind]
        if isinstance(value, (list, tuple)):
            return name, [convert(v) for v in value]
        return name, convert(value)

    def op(self, opname, *raw_args, outputs=1, **kwargs):
        domain, sep, op_type = opname.rpartition("::")
        if domain == "onnx":
            domain = ""
        inputs = [self._input(a) for a in raw_args]
        attrs = dict(self._attribute(k, v) for k, v in kwargs.items() if v is not None)
        if domain:
            attrs["domain"] = domain
            self.domains.add(domain)
        out = self._builder.op(op_type, *[None if i is None else i.name for i in inputs],
                               outputs=outputs, **attrs)
        if outputs == 1:
            return SymbolicValue(out)
        return tuple(SymbolicValue(o) for o in out)


def lower_custom_op(g, node, fn, ctx):
    """The ONNX value(s) of FX ``node`` (a custom op call) through symbolic ``fn``."""
    def value(a):
        if hasattr(a, "op") and hasattr(a, "meta"):  # an FX node: its ONNX value
            return SymbolicValue(g[a])
        if isinstance(a, (list, tuple)):
            return type(a)(value(x) for x in a)
        return a
    out = fn(ctx, *[value(a) for a in node.args],
             **{k: value(v) for k, v in node.kwargs.items()})
    if isinstance(out, (tuple, list)):
        return [None if o is None else o.name for o in out]
    return out.name

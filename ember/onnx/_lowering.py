"""The lowering of a captured graph's aten ops to ONNX nodes: ``LOWERINGS``, keyed by op.

Each entry is a function ``(g, node, a)``: ``g`` the :class:`GraphBuilder` being filled, ``node``
the FX node (its ``meta['val']`` gives the result's dtype and shape), ``a`` the op's arguments
by schema name with the defaults filled in (FX nodes stay nodes: ``g[x]`` is the ONNX value of
one). It emits nodes with ``g.op`` and returns the ONNX value name (a list for an op with several
results, None where a result has no ONNX value). The nodes are ONNX opset ``OPSET``'s; the
exporter converts the finished model to another opset when asked.

Sizes the capture made symbolic arrive as FX nodes too (``sym_size.int`` and the ``operator``
arithmetic on it): their ONNX values are int64 tensors of shape [1], so a size list becomes a
Concat of its pieces and no size of a dynamic axis is baked into a constant.
"""
import math
import operator

import numpy as np

from .._core.symint import SymInt
from .._tensor import Tensor
from .. import ops
from .errors import OnnxExporterError

aten = ops.aten

OPSET = 18
_INT64_MAX = 2 ** 63 - 1

# ember dtype name -> TensorProto data type name
_DTYPES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
           "int64": "INT64", "int32": "INT32", "int16": "INT16", "int8": "INT8",
           "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
           "bool": "BOOL", "complex64": "COMPLEX64", "complex128": "COMPLEX128"}


def onnx_dtype(onnx, dtype):
    """The ``TensorProto`` data type of an ember dtype."""
    name = repr(dtype).split(".")[-1]
    if name not in _DTYPES:
        raise OnnxExporterError(f"ONNX has no data type for {dtype}")
    return getattr(onnx.TensorProto, _DTYPES[name])


def _is_float(dtype):
    return dtype.is_floating_point


class GraphBuilder:
    """The ONNX nodes and initializers of one graph, and the ONNX value of each FX node."""

    def __init__(self, onnx):
        self.onnx = onnx
        self.nodes = []
        self.initializers = []
        self.values = {}  # FX node -> value name (a list for a tuple result)
        self.taken = set()  # value and node names in use

    def fresh(self, hint):
        name, i = hint, 0
        while name in self.taken:
            i += 1
            name = f"{hint}_{i}"
        self.taken.add(name)
        return name

    def op(self, op_type, *inputs, outputs=1, **attrs):
        """Append an ``op_type`` node; a None input is an omitted optional one."""
        inputs = list(inputs)
        while inputs and inputs[-1] is None:  # trailing ones are left out, not named ""
            inputs.pop()
        outs = [self.fresh(f"val_{op_type.lower()}") for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(
            op_type, ["" if i is None else i for i in inputs], outs,
            name=self.fresh(f"node_{op_type}"), **attrs))
        return outs[0] if outputs == 1 else outs

    def initializer(self, array, name):
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def const(self, value, dtype):
        """A constant tensor of ember ``dtype`` holding ``value`` (a number or nested list)."""
        np_dtype = self.onnx.helper.tensor_dtype_to_np_dtype(onnx_dtype(self.onnx, dtype))
        return self.initializer(np.asarray(value, dtype=np_dtype), self.fresh("const"))

    def __getitem__(self, x):
        return self.values[x]

    # ---- the operands of a lowering -------------------------------------------------------

    def val(self, x):
        """What the capture computed for an FX node (a FakeTensor or SymInt), or ``x``."""
        return x.meta.get("val") if hasattr(x, "meta") else x

    def dtype(self, x):
        return self.val(x).dtype

    def cast(self, name, src, dst):
        return name if src == dst else self.op("Cast", name, to=onnx_dtype(self.onnx, dst))

    def tensor(self, x, dtype):
        """``x`` (an FX node, a Python number or a symbolic size) as a tensor of ``dtype``."""
        v = self.val(x)
        if isinstance(v, Tensor):
            return self.cast(self[x], v.dtype, dtype)
        if isinstance(v, SymInt):
            from .. import int64
            return self.cast(self.op("Reshape", self[x], self.ints([])), int64, dtype)
        return self.const(v, dtype)

    def ints(self, values):
        """A list of sizes (ints and symbolic sizes) as an int64 1-D tensor."""
        from .. import int64
        values = list(values)
        if all(isinstance(v, int) for v in values):
            return self.const(values, int64)
        return self.op("Concat", *[self.const([v], int64) if isinstance(v, int) else self[v]
                                   for v in values], axis=0)

    def scalar_int(self, x):
        """An int or symbolic size as an int64 0-d tensor."""
        from .. import int64
        return self.const(x, int64) if isinstance(x, int) else \
            self.op("Reshape", self[x], self.ints([]))

    def rank(self, x):
        return self.val(x).dim()


def _out(node):
    return node.meta["val"]


def _out_dtype(node):
    v = _out(node)
    return (v[0] if isinstance(v, (tuple, list)) else v).dtype


def _dim(d, rank):
    return d + rank if d < 0 else d


def _seq(v, n):
    return list(v) * (n if len(v) == 1 else 1) if isinstance(v, (list, tuple)) else [v] * n


def _promoted(g, a, b):
    from .. import result_type
    va, vb = g.val(a), g.val(b)
    if isinstance(va, SymInt):
        va = 0
    if isinstance(vb, SymInt):
        vb = 0
    return result_type(va, vb)


# ---- pointwise ---------------------------------------------------------------------------------

UNARY = {
    aten.abs.default: "Abs", aten.neg.default: "Neg", aten.sqrt.default: "Sqrt",
    aten.exp.default: "Exp", aten.log.default: "Log", aten.relu.default: "Relu",
    aten.sigmoid.default: "Sigmoid", aten.tanh.default: "Tanh", aten.erf.default: "Erf",
    aten.floor.default: "Floor", aten.ceil.default: "Ceil", aten.round.default: "Round",
    aten.sin.default: "Sin", aten.cos.default: "Cos", aten.tan.default: "Tan",
    aten.asin.default: "Asin", aten.acos.default: "Acos", aten.atan.default: "Atan",
    aten.sinh.default: "Sinh", aten.cosh.default: "Cosh", aten.asinh.default: "Asinh",
    aten.acosh.default: "Acosh", aten.atanh.default: "Atanh", aten.sign.default: "Sign",
    aten.reciprocal.default: "Reciprocal", aten.logical_not.default: "Not",
}

# op -> (ONNX op, whether the result is bool: the operands then take their promoted dtype)
BINARY = {
    aten.add.Tensor: ("Add", False), aten.add.Scalar: ("Add", False),
    aten.sub.Tensor: ("Sub", False), aten.sub.Scalar: ("Sub", False),
    aten.mul.Tensor: ("Mul", False), aten.mul.Scalar: ("Mul", False),
    aten.div.Tensor: ("Div", False), aten.div.Scalar: ("Div", False),
    aten.pow.Tensor_Tensor: ("Pow", False), aten.pow.Tensor_Scalar: ("Pow", False),
    aten.pow.Scalar: ("Pow", False),
    aten.maximum.default: ("Max", False), aten.minimum.default: ("Min", False),
    aten.eq.Tensor: ("Equal", True), aten.eq.Scalar: ("Equal", True),
    aten.lt.Tensor: ("Less", True), aten.lt.Scalar: ("Less", True),
    aten.gt.Tensor: ("Greater", True), aten.gt.Scalar: ("Greater", True),
    aten.le.Tensor: ("LessOrEqual", True), aten.le.Scalar: ("LessOrEqual", True),
    aten.ge.Tensor: ("GreaterOrEqual", True), aten.ge.Scalar: ("GreaterOrEqual", True),
    aten.logical_and.default: ("And", True), aten.logical_or.default: ("Or", True),
    aten.logical_xor.default: ("Xor", True),
    aten.fmod.Tensor: ("Mod", False), aten.fmod.Scalar: ("Mod", False),
}

# bitwise ops: the logical ONNX op on bool, the bitwise one on integers
BITWISE = {
    aten.bitwise_and.Tensor: ("And", "BitwiseAnd"), aten.bitwise_and.Scalar: ("And", "BitwiseAnd"),
    aten.bitwise_or.Tensor: ("Or", "BitwiseOr"), aten.bitwise_or.Scalar: ("Or", "BitwiseOr"),
    aten.bitwise_xor.Tensor: ("Xor", "BitwiseXor"), aten.bitwise_xor.Scalar: ("Xor", "BitwiseXor"),
}


def _operands(g, node, a):
    """The two operands of a binary op, cast to the dtype the op computes in."""
    first, second = list(a.values())[:2]
    out = _out_dtype(node)
    from .. import bool as bool_
    compute = _promoted(g, first, second) if out == bool_ else out
    return g.tensor(first, compute), g.tensor(second, compute), compute


def _unary(op_type):
    def lower(g, node, a):
        return g.op(op_type, g.tensor(a["self"], _out_dtype(node)))
    return lower


def _binary(op_type):
    def lower(g, node, a):
        x, y, compute = _operands(g, node, a)
        if a.get("alpha", 1) != 1:
            y = g.op("Mul", y, g.const(a["alpha"], compute))
        if op_type == "Mod":
            return g.op("Mod", x, y, fmod=1)
        return g.op(op_type, x, y)
    return lower


def _bitwise(logical, bitwise):
    def lower(g, node, a):
        x, y, compute = _operands(g, node, a)
        from .. import bool as bool_
        return g.op(logical if compute == bool_ else bitwise, x, y)
    return lower


def _ne(g, node, a):
    x, y, _ = _operands(g, node, a)
    return g.op("Not", g.op("Equal", x, y))


def _div_mode(g, node, a):
    x, y, compute = _operands(g, node, a)
    mode = a["rounding_mode"]
    if mode is None or (mode == "trunc" and not _is_float(compute)):
        return g.op("Div", x, y)  # ONNX's integer Div truncates
    from .. import float64
    if not _is_float(compute):  # floor of an integer quotient, exact in double below 2**53
        q = g.op("Floor", g.op("Div", g.cast(x, compute, float64), g.cast(y, compute, float64)))
        return g.cast(q, float64, compute)
    q = g.op("Div", x, y)
    if mode == "floor":
        return g.op("Floor", q)
    return g.op("Where", g.op("Less", q, g.const(0, compute)), g.op("Ceil", q), g.op("Floor", q))


def _remainder(g, node, a):
    x, y, compute = _operands(g, node, a)
    if not _is_float(compute):
        return g.op("Mod", x, y, fmod=0)  # Python's sign convention, as aten's
    return g.op("Sub", x, g.op("Mul", g.op("Floor", g.op("Div", x, y)), y))


def _bitwise_not(g, node, a):
    from .. import bool as bool_
    return g.op("Not" if _out_dtype(node) == bool_ else "BitwiseNot", g[a["self"]])


def _rsqrt(g, node, a):
    return g.op("Reciprocal", g.op("Sqrt", g.tensor(a["self"], _out_dtype(node))))


def _is(op_type):
    def lower(g, node, a):
        return g.op(op_type, g[a["self"]])
    return lower


def _log_base(base):
    def lower(g, node, a):
        dt = _out_dtype(node)
        return g.op("Div", g.op("Log", g.tensor(a["self"], dt)), g.const(math.log(base), dt))
    return lower


def _log1p(g, node, a):
    dt = _out_dtype(node)
    return g.op("Log", g.op("Add", g.tensor(a["self"], dt), g.const(1, dt)))


def _expm1(g, node, a):
    dt = _out_dtype(node)
    return g.op("Sub", g.op("Exp", g.tensor(a["self"], dt)), g.const(1, dt))


def _trunc(g, node, a):
    x = g[a["self"]]
    dt = _out_dtype(node)
    if not _is_float(dt):
        return g.op("Identity", x)
    return g.op("Where", g.op("Less", x, g.const(0, dt)), g.op("Ceil", x), g.op("Floor", x))


def _where(g, node, a):
    dt = _out_dtype(node)
    from .. import bool as bool_, uint8
    # ONNX Runtime has no bool Where: choose among bytes
    compute = uint8 if dt == bool_ else dt
    out = g.op("Where", g.tensor(a["condition"], bool_), g.tensor(a["self"], compute),
               g.tensor(a["other"], compute))
    return g.cast(out, compute, dt)


def _clamp(g, node, a):
    dt = _out_dtype(node)
    x = g.tensor(a["self"], dt)
    lo, hi = a.get("min"), a.get("max")
    if lo is not None:
        x = g.op("Max", x, g.tensor(lo, dt))
    if hi is not None:
        x = g.op("Min", x, g.tensor(hi, dt))
    return x


def _hardtanh(g, node, a):
    dt = _out_dtype(node)
    return g.op("Clip", g[a["self"]], g.const(a["min_val"], dt), g.const(a["max_val"], dt))


def _gelu(g, node, a):
    # opset 18 has no Gelu: PyTorch's two formulas, written out
    dt = _out_dtype(node)
    x = g[a["self"]]
    if a["approximate"] == "tanh":
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, g.const(0.044715, dt)))
        t = g.op("Tanh", g.op("Mul", inner, g.const(math.sqrt(2 / math.pi), dt)))
    else:
        t = g.op("Erf", g.op("Mul", x, g.const(1 / math.sqrt(2), dt)))
    return g.op("Mul", g.op("Mul", x, g.const(0.5, dt)), g.op("Add", t, g.const(1, dt)))


def _leaky_relu(g, node, a):
    return g.op("LeakyRelu", g[a["self"]], alpha=float(a["negative_slope"]))


def _elu(g, node, a):
    dt = _out_dtype(node)
    x = g[a["self"]]
    if a["input_scale"] != 1:
        x = g.op("Mul", x, g.const(a["input_scale"], dt))
    y = g.op("Elu", x, alpha=float(a["alpha"]))
    return y if a["scale"] == 1 else g.op("Mul", y, g.const(a["scale"], dt))


def _softmax(op_type):
    def lower(g, node, a):
        return g.op(op_type, g.tensor(a["self"], _out_dtype(node)), axis=a["dim"])
    return lower


def _to_copy(g, node, a):
    return g.tensor(a["self"], _out_dtype(node))


def _identity(g, node, a):
    return g.op("Identity", g[a["self"]])


# ---- factories -----------------------------------------------------------------------------------

def _fill(g, shape, value, dtype):
    onnx = g.onnx
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(onnx_dtype(onnx, dtype))
    return g.op("ConstantOfShape", shape,
                value=onnx.numpy_helper.from_array(np.asarray([value], dtype=np_dtype)))


def _full(g, node, a):
    value = a["fill_value"]
    if not isinstance(value, (int, float, bool)):
        raise OnnxExporterError(f"{node.target}: a symbolic fill value is not supported")
    return _fill(g, g.ints(a["size"]), value, _out_dtype(node))


def _full_like(g, node, a):
    return _fill(g, g.op("Shape", g[a["self"]]), a["fill_value"], _out_dtype(node))


def _empty(g, node, a):
    return _fill(g, g.ints(a["size"]), 0, _out_dtype(node))


def _scalar_tensor(g, node, a):
    return g.const(a["s"], _out_dtype(node))


def _arange(g, node, a):
    dt = _out_dtype(node)
    return g.op("Range", *[g.tensor(a[k], dt) for k in ("start", "end", "step")])


# ---- linear algebra ------------------------------------------------------------------------------

def _matmul(g, node, a):
    return g.op("MatMul", g[a["self"]], g[a["mat2"]])


def _addmm(g, node, a):
    return g.op("Gemm", g[a["mat1"]], g[a["mat2"]], g[a["self"]],
                alpha=float(a["alpha"]), beta=float(a["beta"]))


def _convolution(g, node, a):
    n = g.rank(a["input"]) - 2
    attrs = dict(strides=_seq(a["stride"], n), pads=_seq(a["padding"], n) * 2,
                 dilations=_seq(a["dilation"], n), group=a["groups"])
    bias = g[a["bias"]] if a["bias"] is not None else None
    if a["transposed"]:
        return g.op("ConvTranspose", g[a["input"]], g[a["weight"]], bias,
                    output_padding=_seq(a["output_padding"], n), **attrs)
    return g.op("Conv", g[a["input"]], g[a["weight"]], bias, **attrs)


# ---- shapes and views ----------------------------------------------------------------------------

def _view(g, node, a):
    size = list(a["size"])
    return g.op("Reshape", g[a["self"]], g.ints(size),
                allowzero=int(any(isinstance(s, int) and s == 0 for s in size)))


def _permute(g, node, a):
    r = g.rank(a["self"])
    return g.op("Transpose", g[a["self"]], perm=[_dim(d, r) for d in a["dims"]])


def _expand(g, node, a):
    # ONNX's Expand broadcasts both ways, so a 1 keeps the input's size where aten writes -1
    size = [1 if isinstance(s, int) and s == -1 else s for s in a["size"]]
    return g.op("Expand", g[a["self"]], g.ints(size))


def _squeeze(g, node, a):
    shape = g.val(a["self"]).shape
    r = len(shape)
    dims = a.get("dim", range(r))  # squeeze.default: every dim
    dims = [dims] if isinstance(dims, int) else dims
    axes = [_dim(d, r) for d in dims if r and shape[_dim(d, r)] == 1]
    if not axes:
        return g.op("Identity", g[a["self"]])
    return g.op("Squeeze", g[a["self"]], g.ints(axes))


def _unsqueeze(g, node, a):
    return g.op("Unsqueeze", g[a["self"]], g.ints([_dim(a["dim"], g.rank(a["self"]) + 1)]))


def _cat(g, node, a):
    dt = _out_dtype(node)
    # a 1-d empty tensor is skipped by aten's cat (legacy behaviour)
    parts = [g.tensor(t, dt) for t in a["tensors"]
             if not (g.rank(t) == 1 and g.val(t).shape[0] == 0)]
    return g.op("Concat", *parts, axis=_dim(a["dim"], _out(node).dim()))


def _split_with_sizes(g, node, a):
    sizes = a["split_sizes"]
    return g.op("Split", g[a["self"]], g.ints(sizes), outputs=len(sizes),
                axis=_dim(a["dim"], g.rank(a["self"])))


def _slice(g, node, a):
    start = 0 if a["start"] is None else a["start"]
    end = _INT64_MAX if a["end"] is None else a["end"]
    return g.op("Slice", g[a["self"]], g.ints([start]), g.ints([end]),
                g.ints([_dim(a["dim"], g.rank(a["self"]))]), g.ints([a["step"]]))


def _select(g, node, a):
    return g.op("Gather", g[a["self"]], g.scalar_int(a["index"]),
                axis=_dim(a["dim"], g.rank(a["self"])))


def _index_select(g, node, a):
    return g.op("Gather", g[a["self"]], g[a["index"]], axis=_dim(a["dim"], g.rank(a["self"])))


def _gather(g, node, a):
    return g.op("GatherElements", g[a["self"]], g[a["index"]],
                axis=_dim(a["dim"], g.rank(a["self"])))


def _embedding(g, node, a):
    return g.op("Gather", g[a["weight"]], g[a["indices"]], axis=0)


def _index(g, node, a):
    # one integer index tensor, after any number of full slices: a Gather on that axis
    indices = list(a["indices"])
    while indices and indices[-1] is None:
        indices.pop()
    from .. import bool as bool_
    if not indices or any(i is not None for i in indices[:-1]) or \
            g.dtype(indices[-1]) == bool_:
        raise OnnxExporterError(
            f"{node.target}: only one integer index tensor (x[..., idx] after full slices) "
            "is supported; boolean masks and several index tensors are not")
    return g.op("Gather", g[a["self"]], g[indices[-1]], axis=len(indices) - 1)


def _constant_pad_nd(g, node, a):
    pad, r = list(a["pad"]), g.rank(a["self"])
    begin, end = [0] * r, [0] * r
    for i in range(len(pad) // 2):  # aten pads the last dim first
        begin[r - 1 - i], end[r - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return g.op("Pad", g[a["self"]], g.ints(begin + end),
                g.const(a["value"], _out_dtype(node)), mode="constant")


def _flip(g, node, a):
    r = g.rank(a["self"])
    dims = [_dim(d, r) for d in a["dims"]]
    return g.op("Slice", g[a["self"]], g.ints([-1] * len(dims)), g.ints([-_INT64_MAX] * len(dims)),
                g.ints(dims), g.ints([-1] * len(dims)))


def _repeat(g, node, a):
    reps, x = list(a["repeats"]), g[a["self"]]
    extra = len(reps) - g.rank(a["self"])
    if extra:
        x = g.op("Unsqueeze", x, g.ints(list(range(extra))))
    return g.op("Tile", x, g.ints(reps))


def _cumsum(g, node, a):
    dt = _out_dtype(node)
    axis = _dim(a["dim"], max(g.rank(a["self"]), 1))
    return g.op("CumSum", g.tensor(a["self"], dt), g.scalar_int(axis))


# ---- reductions ---------------------------------------------------------------------------------

def _reduce(op_type):
    def lower(g, node, a):
        # sums and means compute in the result dtype (an int sum is int64); max/min keep it
        x = g[a["self"]] if op_type in ("ReduceMax", "ReduceMin") else \
            g.tensor(a["self"], _out_dtype(node))
        dims = a.get("dim")
        keep = int(a.get("keepdim", False))
        if not dims:  # None or []: every dim
            return g.op(op_type, x, keepdims=keep)
        dims = [dims] if isinstance(dims, int) else dims
        return g.op(op_type, x, g.ints(dims), keepdims=keep)
    return lower


def _reduce_with_index(values_op, index_op):
    def lower(g, node, a):
        x, keep = g[a["self"]], int(a["keepdim"])
        axis = _dim(a["dim"], max(g.rank(a["self"]), 1))
        return [g.op(values_op, x, g.ints([axis]), keepdims=keep),
                g.op(index_op, x, axis=axis, keepdims=keep)]
    return lower


def _arg(index_op):
    def lower(g, node, a):
        if a["dim"] is None:
            flat = g.op("Reshape", g[a["self"]], g.ints([-1]))
            out = g.op(index_op, flat, axis=0, keepdims=0)
            return g.op("Reshape", out, g.ints([1] * g.rank(a["self"]))) if a["keepdim"] else out
        return g.op(index_op, g[a["self"]], axis=_dim(a["dim"], max(g.rank(a["self"]), 1)),
                    keepdims=int(a["keepdim"]))
    return lower


def _var(g, node, a):
    dt = _out_dtype(node)
    x, r = g[a["self"]], g.rank(a["self"])
    dims = a["dim"]
    dims = list(range(r)) if not dims else [_dim(d, r) for d in dims]
    axes = g.ints(dims)
    keep = int(a["keepdim"])
    centered = g.op("Sub", x, g.op("ReduceMean", x, axes, keepdims=1))
    total = g.op("ReduceSum", g.op("Mul", centered, centered), axes, keepdims=keep)
    count = g.op("ReduceProd", g.op("Gather", g.op("Shape", x), axes, axis=0), keepdims=0)
    correction = 1 if a.get("correction") is None else a["correction"]
    if "unbiased" in a:
        correction = int(a["unbiased"])
    denom = g.op("Max", g.op("Sub", g.cast(count, _int64(), dt), g.const(correction, dt)),
                 g.const(0, dt))
    return g.op("Div", total, denom)


def _int64():
    from .. import int64
    return int64


def _topk(g, node, a):
    r = g.rank(a["self"])
    return g.op("TopK", g[a["self"]], g.ints([a["k"]]), outputs=2,
                axis=_dim(a["dim"], max(r, 1)), largest=int(a["largest"]), sorted=1)


# ---- normalization ------------------------------------------------------------------------------

def _ones_like_shape(g, shape, dtype):
    return _fill(g, g.ints(shape), 1, dtype)


def _native_layer_norm(g, node, a):
    dt = _out_dtype(node)
    shape = list(a["normalized_shape"])
    w = g[a["weight"]] if a["weight"] is not None else _ones_like_shape(g, shape, dt)
    b = g[a["bias"]] if a["bias"] is not None else None
    return g.op("LayerNormalization", g[a["input"]], w, b, outputs=3, axis=-len(shape),
                epsilon=float(a["eps"]))


def _batch_norm_no_training(g, node, a):
    dt = _out_dtype(node)
    channels = [g.val(a["input"]).shape[1]]
    w = g[a["weight"]] if a["weight"] is not None else _ones_like_shape(g, channels, dt)
    b = g[a["bias"]] if a["bias"] is not None else _fill(g, g.ints(channels), 0, dt)
    out = g.op("BatchNormalization", g[a["input"]], w, b, g[a["running_mean"]],
               g[a["running_var"]], epsilon=float(a["eps"]))
    return [out, None, None]


def _native_group_norm(g, node, a):
    dt = _out_dtype(node)
    x, groups, r = g[a["input"]], a["group"], g.rank(a["input"])
    # (N, G, rest): 0 copies N, so a dynamic batch stays dynamic
    grouped = g.op("Reshape", x, g.ints([0, groups, -1]))
    axes = g.ints([2])
    mean = g.op("ReduceMean", grouped, axes, keepdims=1)
    centered = g.op("Sub", grouped, mean)
    var = g.op("ReduceMean", g.op("Mul", centered, centered), axes, keepdims=1)
    rstd = g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.const(a["eps"], dt))))
    y = g.op("Reshape", g.op("Mul", centered, rstd), g.op("Shape", x))
    per_channel = g.ints([-1] + [1] * (r - 2))
    if a["weight"] is not None:
        y = g.op("Mul", y, g.op("Reshape", g[a["weight"]], per_channel))
    if a["bias"] is not None:
        y = g.op("Add", y, g.op("Reshape", g[a["bias"]], per_channel))
    return [y, g.op("Squeeze", mean, axes), g.op("Squeeze", rstd, axes)]


def _native_dropout(g, node, a):
    dt = _out_dtype(node)
    from .. import bool as bool_
    train = a["train"] is None or a["train"]
    return g.op("Dropout", g[a["input"]], g.const(a["p"], dt), g.const(train, bool_), outputs=2)


# ---- pooling and resizing -----------------------------------------------------------------------

def _max_pool(g, node, a):
    n = g.rank(a["self"]) - 2
    kernel = _seq(a["kernel_size"], n)
    stride = _seq(a["stride"], n) if a["stride"] else kernel
    y = g.op("MaxPool", g[a["self"]], kernel_shape=kernel, strides=stride,
             pads=_seq(a["padding"], n) * 2, dilations=_seq(a["dilation"], n),
             ceil_mode=int(a["ceil_mode"]))
    return [y, None]  # ONNX's indices count over the whole tensor, PyTorch's per plane


def _avg_pool(g, node, a):
    if a.get("divisor_override") is not None:
        raise OnnxExporterError(f"{node.target}: divisor_override is not supported")
    n = g.rank(a["self"]) - 2
    kernel = _seq(a["kernel_size"], n)
    stride = _seq(a["stride"], n) if a["stride"] else kernel
    return g.op("AveragePool", g[a["self"]], kernel_shape=kernel, strides=stride,
                pads=_seq(a["padding"], n) * 2, ceil_mode=int(a["ceil_mode"]),
                count_include_pad=int(a["count_include_pad"]))


def _adaptive_avg_pool(g, node, a):
    x = a["self"]
    out = list(a["output_size"])
    if all(o == 1 for o in out):
        return g.op("GlobalAveragePool", g[x])
    spatial = list(g.val(x).shape[-len(out):])
    if any(not isinstance(s, int) or s % o for s, o in zip(spatial, out)):
        raise OnnxExporterError(
            f"{node.target}: only output size 1 or static input sizes divisible by the output "
            f"size are supported (input {spatial}, output {out})")
    kernel = [s // o for s, o in zip(spatial, out)]
    return g.op("AveragePool", g[x], kernel_shape=kernel, strides=kernel)


def _upsample(mode):
    def lower(g, node, a):
        # .vec: output_size or scale_factors; .default: output_size, and the scales that
        # map output to input pixels when the caller gave them
        x = g[a.get("input", a.get("self"))]
        factors = a.get("scale_factors")
        if factors is None and a.get("scales_h") is not None:
            factors = [a["scales_h"], a["scales_w"]]
        if factors is not None:
            from .. import float32
            sizes, scales = None, g.const([1.0, 1.0] + list(factors), float32)
        else:
            sizes = g.op("Concat", g.op("Shape", x, end=2), g.ints(a["output_size"]), axis=0)
            scales = None
        if mode == "nearest":
            attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                         nearest_mode="floor")
        else:
            attrs = dict(mode="linear", coordinate_transformation_mode="align_corners"
                         if a["align_corners"] else "pytorch_half_pixel")
        return g.op("Resize", x, None, scales, sizes, **attrs)
    return lower


# ---- attention and recurrent layers -------------------------------------------------------------

def _sdpa(g, node, a):
    """PyTorch's math attention: softmax(q @ k^T * scale + mask) @ v."""
    q, k, v = a["query"], a["key"], a["value"]
    dt = _out_dtype(node)
    r = g.rank(k)
    e = g.val(q).shape[-1]
    if a["scale"] is not None:
        scale = g.const(a["scale"], dt)
    elif isinstance(e, int):
        scale = g.const(1 / math.sqrt(e), dt)
    else:
        scale = g.op("Reciprocal", g.op("Sqrt", g.cast(
            g.op("Shape", g[q], start=-1), _int64(), dt)))
    kt = g.op("Transpose", g[k], perm=list(range(r - 2)) + [r - 1, r - 2])
    scores = g.op("Mul", g.op("MatMul", g[q], kt), scale)
    from .. import bool as bool_
    neg_inf = g.const(float("-inf"), dt)
    if a["is_causal"]:
        lq = g.op("Shape", g[q], start=-2, end=-1)
        lk = g.op("Shape", g[k], start=-2, end=-1)
        ones = _fill(g, g.op("Concat", lq, lk, axis=0), True, bool_)
        causal = g.op("Cast", g.op("Trilu", g.cast(ones, bool_, _int64()), upper=0),
                      to=onnx_dtype(g.onnx, bool_))
        scores = g.op("Where", causal, scores, neg_inf)
    mask = a.get("attn_mask")
    if mask is not None:
        scores = g.op("Where", g[mask], scores, neg_inf) if g.dtype(mask) == bool_ else \
            g.op("Add", scores, g.tensor(mask, dt))
    attn = g.op("Softmax", scores, axis=-1)
    if a["dropout_p"]:
        attn = g.op("Dropout", attn, g.const(a["dropout_p"], dt), g.const(True, bool_))
    return [g.op("MatMul", attn, g[v]), None]


# PyTorch's gate order -> ONNX's: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h
_GATES = {2: ("LSTM", 4, [0, 3, 1, 2]), 3: ("GRU", 3, [1, 0, 2])}


def _rnn_layer(g, node, a):
    if a["batch_sizes"]:
        raise OnnxExporterError(f"{node.target}: packed sequences are not supported")
    mode = a["mode"]
    op_type, n_gates, order = _GATES.get(mode, ("RNN", 1, [0]))
    hidden = g.val(a["weight_hh"]).shape[1]

    def reorder(w):  # a weight or bias with the gates stacked on dim 0, as one ONNX direction
        parts = g.op("Split", w, g.ints([hidden] * n_gates), outputs=n_gates, axis=0) \
            if n_gates > 1 else [w]
        parts = [parts[i] for i in order] if n_gates > 1 else parts
        joined = g.op("Concat", *parts, axis=0) if n_gates > 1 else parts[0]
        return g.op("Unsqueeze", joined, g.ints([0]))
    w, rw = reorder(g[a["weight_ih"]]), reorder(g[a["weight_hh"]])
    bias = None
    if a["bias_ih"] is not None:
        bias = g.op("Concat", reorder(g[a["bias_ih"]]), reorder(g[a["bias_hh"]]), axis=1)
    first = g.ints([0])
    inputs = [g[a["input"]], w, rw, bias, None, g.op("Unsqueeze", g[a["hx"]], first)]
    attrs = dict(hidden_size=hidden, direction="reverse" if a["reverse"] else "forward")
    if op_type == "LSTM":
        inputs.append(g.op("Unsqueeze", g[a["cx"]], first))
    elif op_type == "GRU":
        attrs["linear_before_reset"] = 1  # PyTorch applies r after the hidden matmul
    else:
        attrs["activations"] = ["Relu" if mode == 0 else "Tanh"]
    outs = g.op(op_type, *inputs, outputs=3 if op_type == "LSTM" else 2, **attrs)
    y = g.op("Squeeze", outs[0], g.ints([1]))
    h = g.op("Squeeze", outs[1], first)
    c = g.op("Squeeze", outs[2], first) if op_type == "LSTM" else None
    return [y, h, c, None]


# ---- symbolic sizes -----------------------------------------------------------------------------

def _sym_size(g, node, a):
    d = _dim(a["dim"], g.rank(a["self"]))
    return g.op("Shape", g[a["self"]], start=d, end=d + 1)


def _sym_numel(g, node, a):
    return g.op("ReduceProd", g.op("Shape", g[a["self"]]), keepdims=1)


# size arithmetic: operator function -> ONNX op on int64 [1] tensors (sizes are never negative,
# so ONNX's truncating Div is Python's floor division here)
SYM_OPS = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul",
           operator.floordiv: "Div", operator.mod: "Mod"}


def lower_sym_op(g, node):
    x, y = (g.const([v], _int64()) if isinstance(v, int) else g[v] for v in node.args)
    return g.op(SYM_OPS[node.target], x, y)


LOWERINGS = {
    **{op: _unary(t) for op, t in UNARY.items()},
    **{op: _binary(t) for op, (t, _) in BINARY.items()},
    **{op: _bitwise(*t) for op, t in BITWISE.items()},
    aten.ne.Tensor: _ne, aten.ne.Scalar: _ne,
    aten.div.Tensor_mode: _div_mode, aten.div.Scalar_mode: _div_mode,
    aten.remainder.Tensor: _remainder, aten.remainder.Scalar: _remainder,
    aten.bitwise_not.default: _bitwise_not, aten.rsqrt.default: _rsqrt,
    aten.isinf.default: _is("IsInf"), aten.isnan.default: _is("IsNaN"),
    aten.log1p.default: _log1p, aten.expm1.default: _expm1,
    aten.log2.default: _log_base(2), aten.log10.default: _log_base(10),
    aten.trunc.default: _trunc,
    aten.where.self: _where, aten.clamp.default: _clamp, aten.clamp.Tensor: _clamp,
    aten.hardtanh.default: _hardtanh, aten.gelu.default: _gelu,
    aten.leaky_relu.default: _leaky_relu, aten.elu.default: _elu,
    aten._softmax.default: _softmax("Softmax"), aten._log_softmax.default: _softmax("LogSoftmax"),
    aten._to_copy.default: _to_copy,
    aten.clone.default: _identity, aten.alias.default: _identity,
    aten.full.default: _full, aten.full_like.default: _full_like,
    aten.empty.memory_format: _empty, aten.scalar_tensor.default: _scalar_tensor,
    aten.arange.start_step: _arange,
    aten.mm.default: _matmul, aten.bmm.default: _matmul, aten.addmm.default: _addmm,
    aten.convolution.default: _convolution,
    aten.view.default: _view, aten._unsafe_view.default: _view,
    aten.permute.default: _permute, aten.expand.default: _expand,
    aten.squeeze.default: _squeeze, aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze,
    aten.unsqueeze.default: _unsqueeze, aten.cat.default: _cat,
    aten.split_with_sizes.default: _split_with_sizes, aten.slice.Tensor: _slice,
    aten.select.int: _select, aten.index_select.default: _index_select,
    aten.gather.default: _gather, aten.embedding.default: _embedding,
    aten.index.Tensor: _index, aten.constant_pad_nd.default: _constant_pad_nd,
    aten.flip.default: _flip, aten.repeat.default: _repeat, aten.cumsum.default: _cumsum,
    aten.sum.dim_IntList: _reduce("ReduceSum"), aten.sum.default: _reduce("ReduceSum"),
    aten.mean.dim: _reduce("ReduceMean"), aten.mean.default: _reduce("ReduceMean"),
    aten.amax.default: _reduce("ReduceMax"), aten.amin.default: _reduce("ReduceMin"),
    aten.prod.dim_int: _reduce("ReduceProd"), aten.prod.default: _reduce("ReduceProd"),
    aten.max.dim: _reduce_with_index("ReduceMax", "ArgMax"),
    aten.min.dim: _reduce_with_index("ReduceMin", "ArgMin"),
    aten.argmax.default: _arg("ArgMax"), aten.argmin.default: _arg("ArgMin"),
    aten.var.correction: _var, aten.var.dim: _var, aten.topk.default: _topk,
    aten.native_layer_norm.default: _native_layer_norm,
    aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training,
    aten.native_group_norm.default: _native_group_norm,
    aten.native_dropout.default: _native_dropout,
    aten.max_pool2d_with_indices.default: _max_pool,
    aten.max_pool3d_with_indices.default: _max_pool,
    aten.avg_pool1d.default: _avg_pool, aten.avg_pool2d.default: _avg_pool,
    aten.avg_pool3d.default: _avg_pool,
    aten._adaptive_avg_pool2d.default: _adaptive_avg_pool,
    aten.adaptive_avg_pool1d.default: _adaptive_avg_pool,
    aten.upsample_nearest2d.vec: _upsample("nearest"),
    aten.upsample_nearest2d.default: _upsample("nearest"),
    aten.upsample_bilinear2d.vec: _upsample("linear"),
    aten.upsample_bilinear2d.default: _upsample("linear"),
    aten._scaled_dot_product_flash_attention_for_cpu.default: _sdpa,
    aten._rnn_layer.default: _rnn_layer,
    aten.sym_size.int: _sym_size, aten.sym_numel.default: _sym_numel,
}


def bind(op, node):
    """The op's arguments in ``node`` by schema name, defaults filled in."""
    args = {}
    positional = list(node.args)
    for i, arg in enumerate(op._schema.arguments):
        if i < len(positional) and not arg.kwarg_only:
            args[arg.name] = positional[i]
        elif arg.name in node.kwargs:
            args[arg.name] = node.kwargs[arg.name]
        elif arg.has_default():
            args[arg.name] = arg.default
    return args

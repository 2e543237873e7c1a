"""Inductor's loop IR (PyTorch's ``torch._inductor.ir``).

A lowered graph is a list of *buffers*, each produced one of three ways:

- ``ComputedBuffer``: a loop nest, described by a ``Pointwise``, ``Reduction``, ``Scan`` or
  ``Scatter`` node whose ``inner_fn`` computes one element through the virtualised ``ops``
  handler;
- ``TemplateBuffer``: a generated kernel of its own (the C GEMM template ``max-autotune``
  picks for a matrix product), into which the scheduler fuses pointwise consumers;
- ``FallbackKernel``: an eager ember op called by the generated wrapper (matmul, convolution,
  LAPACK, random numbers, and every op without a lowering);
- ``InputBuffer``: a graph input.

Values flowing between lowerings are either such buffers, strided views of them
(``ReinterpretView``: a size, stride and offset over a buffer's storage), or *lazy* ``Pointwise``
nodes that have not been given memory: a consumer calls their ``inner_fn`` inside its own, which
is how chains of pointwise ops fuse before the scheduler sees them.

Indices are ``sympy`` expressions over the loop variables; with the strided layouts used here
they are linear (``offset + sum(index_k * stride_k)``), or use :class:`FloorDiv` (window ops).
"""
import sympy

import ember

from .virtualized import ops

__all__ = ["Layout", "IRNode", "Buffer", "InputBuffer", "ComputedBuffer", "TemplateBuffer",
           "FallbackKernel", "MultiOutput", "ReinterpretView", "Loops", "Pointwise", "Reduction",
           "WelfordReduction", "Scan", "Scatter", "index_vars", "FloorDiv"]


def index_vars(prefix, sizes):
    """One non-negative integer sympy symbol per loop dimension (``x0, x1...``)."""
    return [sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True)
            for i in range(len(sizes))]


class FloorDiv(sympy.Function):
    """``a // b`` of a non-negative index ``a`` and a positive int ``b``, printed as C integer
    division (sympy's own ``floor(a/b)`` prints floating-point code)."""
    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return a
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        return None

    def _ccode(self, printer):
        a, b = self.args
        return f"(({printer._print(a)}) / {printer._print(b)})"


class Layout:
    """Size, stride, storage offset and dtype of a buffer or of a view of one."""

    __slots__ = ("size", "stride", "offset", "dtype")

    def __init__(self, size, stride, dtype, offset=0):
        self.size = tuple(int(n) for n in size)
        self.stride = tuple(int(s) for s in stride)
        self.offset = int(offset)
        self.dtype = dtype

    def index(self, idx):
        """The storage position (in elements) of element ``idx``; size-1 dims add nothing."""
        return self.offset + sum((i * s for i, s, n in zip(idx, self.stride, self.size) if n != 1),
                                 sympy.Integer(0))

    def __repr__(self):
        return f"Layout({list(self.size)}, {list(self.stride)}, {self.dtype}, offset={self.offset})"


class IRNode:
    origins = ()  # the fx nodes this value was lowered from (kernel names and comments)

    def get_size(self):
        raise NotImplementedError

    def get_dtype(self):
        raise NotImplementedError

    def make_loader(self):
        """``fn(index) -> ops value``: element ``index`` of this value."""
        raise NotImplementedError


class Buffer(IRNode):
    """A named region of memory with a layout."""

    def __init__(self, name, layout):
        self.name = name
        self.layout = layout

    def get_name(self):
        return self.name

    def get_size(self):
        return self.layout.size

    def get_dtype(self):
        return self.layout.dtype

    def make_loader(self):
        # kernels get the buffer's data pointer, which already includes its storage offset
        name, layout = self.name, self.layout

        def load(idx):
            return ops.load(name, layout.index(idx) - layout.offset)
        return load

    def __repr__(self):
        return f"{type(self).__name__}({self.name}, {self.layout})"


class InputBuffer(Buffer):
    """A graph input (a placeholder of the fx graph)."""


class ComputedBuffer(Buffer):
    """A buffer filled by a loop nest (``data`` is a ``Pointwise`` or ``Reduction``)."""

    def __init__(self, name, layout, data):
        super().__init__(name, layout)
        self.data = data
        self.origins = data.origins

    def reads(self):
        """Names of the buffers the loop nest loads from."""
        return self.data.reads()


class TemplateBuffer(Buffer):
    """A buffer computed by a kernel template (``template``: a ``CppGemmTemplate`` and the
    ``GemmConfig`` autotuning chose) from the buffers or views ``inputs``."""

    def __init__(self, name, layout, inputs, template, config, origins=()):
        super().__init__(name, layout)
        self.inputs = inputs
        self.template = template
        self.config = config
        self.origins = origins

    def reads(self):
        return {a.get_name() for a in self.inputs}


class FallbackKernel(Buffer):
    """An eager ember op called from the wrapper: ``op(*args, **kwargs)`` where IR arguments
    are realized buffers or views of them. A tuple result is unpacked by ``MultiOutput``
    buffers; then this node's own ``layout`` is ``None``."""

    def __init__(self, name, layout, op, args, kwargs, origins=()):
        super().__init__(name, layout)
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.origins = origins

    def inputs(self):
        flat = list(self.args) + list(self.kwargs.values())
        out = []
        while flat:
            a = flat.pop(0)
            if isinstance(a, (list, tuple)):
                flat[:0] = list(a)
            elif isinstance(a, (Buffer, ReinterpretView)):
                out.append(a)
        return out

    def reads(self):
        return {a.get_name() for a in self.inputs()}


class MultiOutput(Buffer):
    """Element ``index`` (a path of tuple indices) of a ``FallbackKernel``'s tuple result."""

    def __init__(self, name, layout, parent, index):
        super().__init__(name, layout)
        self.parent = parent
        self.index = index
        self.origins = parent.origins

    def reads(self):
        return {self.parent.name}


class ReinterpretView(IRNode):
    """A strided view (size, stride, offset) of a buffer's storage."""

    def __init__(self, data, layout):
        assert isinstance(data, Buffer)
        self.data = data
        self.layout = layout
        self.origins = data.origins

    def get_name(self):
        return self.data.name

    def get_size(self):
        return self.layout.size

    def get_dtype(self):
        return self.layout.dtype

    def make_loader(self):
        name, layout, base = self.data.name, self.layout, self.data.layout.offset

        def load(idx):
            return ops.load(name, layout.index(idx) - base)
        return load

    def __repr__(self):
        return f"ReinterpretView({self.data.name}, {self.layout})"


class Loops(IRNode):
    """A loop nest over ``ranges`` computing ``inner_fn(index)`` in ``dtype``."""

    def __init__(self, ranges, inner_fn, dtype, origins=()):
        self.ranges = tuple(int(n) for n in ranges)
        self.inner_fn = inner_fn
        self.dtype = dtype
        self.origins = tuple(origins)

    def get_size(self):
        return self.ranges

    def get_dtype(self):
        return self.dtype

    def reads(self):
        """Names of the buffers ``inner_fn`` loads from."""
        return {name for name, _ in self.loads(index_vars("x", self.ranges),
                                                 index_vars("r", self._rranges()))}

    def loads(self, index, rindex=None):
        """``[(buffer, index)]`` that ``inner_fn`` loads for element ``index``."""
        return self._record(index, rindex).loads

    def op_count(self):
        """What ``inner_fn`` costs per element, in ops (loads excluded; a libm call counts as
        ``_EXPENSIVE_COST``)."""
        return self._record(index_vars("x", self.ranges), index_vars("r", self._rranges())).ops

    def fingerprint(self):
        """What this loop nest computes, as text (its ranges and every op of ``inner_fn``):
        equal fingerprints compute equal values, so the graph stores such a value once."""
        from .virtualized import V, set_ops_handler
        rec = _Fingerprint(V.graph.dtype_of)
        with set_ops_handler(rec):
            out = self._call(index_vars("x", self.ranges), index_vars("r", self._rranges()))
        head = (type(self).__name__, self.ranges, self._rranges(), self.dtype,
                getattr(self, "reduction_type", None), getattr(self, "scan_dim", None),
                getattr(self, "output_index", None))
        # the value returned too: two nodes may compute the same ops and keep different ones
        return repr(head) + ";".join(rec.lines) + f"->{out}"

    def _record(self, index, rindex):
        rec = _LoadRecorder()
        from .virtualized import V, set_ops_handler
        rec.dtype_of = V.graph.dtype_of
        with set_ops_handler(rec):
            self._call(index, rindex)
        return rec

    def _rranges(self):
        return ()

    def _call(self, index, rindex):
        return self.inner_fn(index)


class Pointwise(Loops):
    def make_loader(self):
        return self.inner_fn


class Reduction(Loops):
    """``reduction_type`` (``sum``, ``prod``, ``max``, ``min``, ``any``) of
    ``inner_fn(index, rindex)`` over ``reduction_ranges``, for every index in ``ranges``;
    ``src_dtype`` is the dtype accumulated in."""

    def __init__(self, ranges, reduction_ranges, reduction_type, inner_fn, dtype, src_dtype,
                 origins=()):
        super().__init__(ranges, inner_fn, dtype, origins)
        self.reduction_ranges = tuple(int(n) for n in reduction_ranges)
        self.reduction_type = reduction_type
        self.src_dtype = src_dtype

    def _rranges(self):
        return self.reduction_ranges

    def _call(self, index, rindex):
        return self.inner_fn(index, rindex)


class WelfordReduction(Reduction):
    """One pass of Welford's update over ``reduction_ranges`` (PyTorch's
    ``ir.WelfordReduction``, ``reduction_type="welford_reduce"``): the running mean, the sum of
    squared deviations from it (``m2``) and the count (``weight``); ``output_index`` (0, 1, 2)
    picks the one this buffer holds. Nodes of one lowering share ``group``, so that a kernel
    holding several of them runs the update once."""

    def __init__(self, ranges, reduction_ranges, inner_fn, dtype, output_index, group=None,
                 origins=()):
        super().__init__(ranges, reduction_ranges, "welford_reduce", inner_fn, dtype, dtype,
                         origins)
        self.output_index = output_index
        self.group = group if group is not None else object()


class Scan(Loops):
    """An inclusive scan along ``scan_dim`` of ``ranges`` (PyTorch's ``ir.Scan``): element
    ``i`` of the dim is ``combine_fn(carry, inner_fn(index))``, the carry being the combination
    of the elements before it, starting from ``inits``. Values are tuples (cummax carries its
    value and its index); ``output_index`` picks the one this buffer holds, and nodes of one
    lowering share ``group`` so that a kernel holding both computes the scan once."""

    def __init__(self, ranges, scan_dim, combine_fn, inner_fn, dtypes, inits, output_index=0,
                 group=None, origins=()):
        super().__init__(ranges, inner_fn, dtypes[output_index], origins)
        self.scan_dim = scan_dim
        self.combine_fn = combine_fn
        self.dtypes = tuple(dtypes)
        self.inits = tuple(inits)
        self.output_index = output_index
        self.group = group if group is not None else object()

    @property
    def outer_ranges(self):
        """The dims scanned independently (every dim but ``scan_dim``)."""
        return tuple(n for d, n in enumerate(self.ranges) if d != self.scan_dim)

    @property
    def scan_ranges(self):
        return (self.ranges[self.scan_dim],)

    def full_index(self, outer, scan):
        """The element index of position ``scan[0]`` along the dim in row ``outer``."""
        out = list(outer)
        out.insert(self.scan_dim, scan[0])
        return out

    def _call(self, index, rindex):
        # the combine is part of what the node computes (cumsum and cumprod load alike)
        carry = tuple(ops.constant(v, dt) for v, dt in zip(self.inits, self.dtypes))
        return self.combine_fn(carry, self.inner_fn(index))[self.output_index]


class Scatter(Loops):
    """A buffer built by accumulation (PyTorch's ``ir.Scatter`` with
    ``scatter_mode="atomic_add"``): it first holds ``init_fn`` over its own ``size`` (zeros, or
    ``self`` for index_add/scatter_add), then for every index of ``ranges``, ``inner_fn(index)``
    is added at the element ``output_indexer(index)`` names (a coordinate per dim, some read
    from index tensors: several indices may name one element)."""

    def __init__(self, size, init_fn, ranges, output_indexer, inner_fn, dtype, origins=()):
        super().__init__(ranges, inner_fn, dtype, origins)
        self.size = tuple(int(n) for n in size)
        self.init_fn = init_fn
        self.output_indexer = output_indexer

    def get_size(self):
        return self.size

    def fingerprint(self):
        # every scatter is its own buffer: the graph never shares one
        return f"Scatter@{id(self)}"

    def _rranges(self):
        # the init loop's index, so that the loads recorded include init_fn's
        return self.size

    def _call(self, index, rindex):
        self.init_fn(rindex)
        self.output_indexer(index)
        return self.inner_fn(index)


class _Value:
    """What the recording handlers return in place of a C local: a dtype (and a name when
    fingerprinting)."""

    __slots__ = ("dtype", "name")

    def __init__(self, dtype):
        self.dtype = dtype
        self.name = "?"

    def __str__(self):
        return self.name


_PREDICATES = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
               "logical_not", "isnan", "isinf", "isfinite", "signbit"}
# ops that cost about as much per element as a dozen adds (a libm call, vector or scalar), so
# a value computing one is worth storing rather than recomputing in several consumers
_EXPENSIVE = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
              "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
              "erf", "erfc", "erfinv", "pow", "sigmoid", "lgamma", "digamma", "hypot"}
_EXPENSIVE_COST = 10


class _LoadRecorder:
    """An ops handler that records loads and keeps track of dtypes, nothing else."""

    def __init__(self):
        self.loads = []
        self.ops = 0

    def load(self, name, index):
        self.loads.append((name, index))
        return _Value(self.dtype_of(name))

    def constant(self, value, dtype):
        return _Value(dtype)

    index_expr = constant

    def to_dtype(self, x, dtype):
        return _Value(dtype)

    def where(self, c, a, b):
        self.ops += 1
        return _Value(a.dtype)

    def indirect_indexing(self, value):
        self.ops += 1
        return sympy.Symbol(f"indirect{self.ops}", integer=True)

    def masked(self, mask, body, other):
        self.ops += 1
        return _Value(body().dtype)

    def __getattr__(self, name):
        cost = _EXPENSIVE_COST if name in _EXPENSIVE else 1

        def op(first, *rest):
            self.ops += cost
            return _Value(ember.bool if name in _PREDICATES else first.dtype)
        return op


class _Fingerprint:
    """An ops handler that writes each call down (``v3=add(v1, v2)``); dtypes as
    :class:`_LoadRecorder` works them out."""

    def __init__(self, dtype_of):
        self.lines = []
        self.types = _LoadRecorder()
        self.types.dtype_of = dtype_of

    def masked(self, mask, body, other):
        start = len(self.lines)
        value = body()
        token = f"v{len(self.lines)}"
        self.lines.append(f"{token}=masked({mask}, [{start}:{len(self.lines)}] -> {value}, "
                          f"{other})")
        out = _Value(value.dtype)
        out.name = token
        return out

    def __getattr__(self, name):
        def op(*args):
            out = getattr(self.types, name)(*args)
            token = f"v{len(self.lines)}"
            self.lines.append(f"{token}={name}({', '.join(map(str, args))})")
            if isinstance(out, sympy.Symbol):  # an index read from a tensor
                return sympy.Symbol(token, integer=True)
            out.name = token
            return out
        return op

"""Printing tensors in PyTorch's format: ``repr(t)`` and ``ember.set_printoptions``.

The text is exactly PyTorch's (``torch/_tensor_str.py``): one fixed-width format per tensor
chosen from its (summarized) values, nested rows indented under ``tensor(``, ``...`` past
``threshold`` elements, lines wrapped at ``linewidth``, then the suffixes (device, size, dtype,
grad_fn / requires_grad) in PyTorch's order. Unlike PyTorch, which slices, masks and stacks with
tensor operators to do this, values are read straight from the tensor's NumPy view, so printing
dispatches no operators (only a non-CPU, non-meta tensor is first copied with ``.cpu()``).
"""
import contextlib
import dataclasses
import math

import numpy as np

from ._core import complex32 as _complex32
from ._core import dtype as D
from ._core.tensor_impl import CONJUGATE, NEGATIVE


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

# set_printoptions(profile=...) presets; an unknown profile name is ignored, as in PyTorch.
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set the options used by ``repr(tensor)``. ``sci_mode`` is always set (None = automatic)."""
    for name, value in _PROFILES.get(profile, {}).items():
        setattr(PRINT_OPTS, name, value)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options as a dict that can be passed back to ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options (same arguments as ``set_printoptions``)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ---------------------------------------------------------------------------------------------
# Reading values

_MATH_BITS = CONJUGATE | NEGATIVE


def _host_array(t):
    """``t``'s values as a NumPy array that Python can format (bfloat16 and float8 widened to
    float32, exactly; a conjugate or negative view's bit applied)."""
    t = t if t._device.type == "cpu" else t.cpu()
    if t._keyset & _MATH_BITS:
        t = t.detach().resolve_conj().resolve_neg()
    a = t._nd()
    if t._dtype is D.bfloat16 or t._dtype in D.FLOAT8:
        a = a.astype(np.float32)
    return a


def _summarized(a):
    """The values that ``repr`` shows of a summarized array, flattened (PyTorch's
    ``get_summarized_data``; like it, a 1-d array with ``edgeitems=0`` keeps every value,
    because ``a[-0:]`` is the whole array)."""
    edge = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a.reshape(1)
    if a.ndim == 1:
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return a.reshape(-1)[:0]
    n = a.shape[0]
    rows = [*range(edge), *range(n - edge, n)] if n > 2 * edge else range(n)
    return np.concatenate([_summarized(a[i]) for i in rows])


# ---------------------------------------------------------------------------------------------
# Formatting numbers

class _Formatter:
    """One fixed-width format for every value of a real tensor (PyTorch's ``_Formatter``).

    Floats print as integers with a trailing ``.`` when every finite value is integral
    (int mode), in scientific notation when the nonzero finite magnitudes span more than
    1000x, exceed 1e8 or go below 1e-4 (or as ``sci_mode`` forces), else with ``precision``
    decimals. Widths are measured on nonzero finite values only, so nan/inf/0 never widen.
    """

    def __init__(self, values, floating, every_value=False):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            self.max_width = max([1, *(len(str(v)) for v in values.tolist())])
            return
        values = values.astype(np.float64)
        # float8_e8m0fnu: PyTorch's isfinite calls its NaN finite, and ``!= 0`` compares with 0
        # converted to e8m0 (2 ** -127): every other value counts, and a NaN among them makes
        # min/max NaN (so neither sci nor int mode)
        finite = values[values != 2.0 ** -127] if every_value else \
            values[np.isfinite(values) & (values != 0)]
        if finite.size == 0:
            return
        magnitude = np.abs(finite)
        lo, hi = float(magnitude.min()), float(magnitude.max())  # floats: overflow -> inf
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = bool(hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4)
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in finite.tolist())
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in finite.tolist())  # + 1 for the "."
        else:
            widths = (len(f"{v:.{p}f}") for v in finite.tolist())
        self.max_width = max(self.max_width, *widths)

    def width(self):
        return self.max_width

    def format(self, value):
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."  # marks a floating tensor; nan and inf need no mark
        else:
            text = f"{value:.{PRINT_OPTS.precision}f}"
        return text.rjust(self.max_width)


def _format_value(value, real_fmt, imag_fmt):
    """One element as text; complex values join their real and imaginary parts (``1.+2.j``)."""
    if imag_fmt is None:
        return real_fmt.format(value)
    real = real_fmt.format(value.real)
    imag = (imag_fmt.format(value.imag) + "j").lstrip()
    # The imaginary part carries its own sign when negative (or "-0."); otherwise add "+".
    return real + imag if imag[0] in "+-" else real + "+" + imag


# ---------------------------------------------------------------------------------------------
# Laying out rows

def _vector_str(a, indent, summarize, real_fmt, imag_fmt):
    edge = PRINT_OPTS.edgeitems
    element_length = real_fmt.width() + 2  # ", " between elements
    if imag_fmt is not None:
        element_length += imag_fmt.width() + 1  # the "j"
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))

    def fmt(part):
        return [_format_value(v, real_fmt, imag_fmt) for v in part.tolist()]

    if summarize and not edge:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        data = fmt(a[:edge]) + [" ..."] + fmt(a[-edge:])
    else:
        data = fmt(a)
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _array_str(a, indent, summarize, real_fmt, imag_fmt):
    """Nested brackets; rows of a k-d array are separated by k-1 blank-line breaks."""
    if a.ndim == 0:
        return _format_value(a.item(), real_fmt, imag_fmt)
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, real_fmt, imag_fmt)
    edge = PRINT_OPTS.edgeitems
    n = a.shape[0]

    def row(i):
        return _array_str(a[i], indent + 1, summarize, real_fmt, imag_fmt)

    if summarize and n > 2 * edge:
        rows = [row(i) for i in range(edge)] + ["..."] + [row(i) for i in range(n - edge, n)]
    else:
        rows = [row(i) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _tensor_str(t, indent):
    """The bracketed values of a non-empty strided tensor."""
    summarize = t.numel() > PRINT_OPTS.threshold
    a = _host_array(t)

    def formatter(part):
        return _Formatter(_summarized(part) if summarize else part.reshape(-1),
                          floating=t._dtype._category >= D.FLOATING,
                          every_value=t._dtype is D.float8_e8m0fnu)

    if t._dtype is D.complex32:  # (exact: the float16 parts widen to complex64)
        a = _complex32.to_complex64(a)
    if t._dtype.is_complex:
        return _array_str(a, indent, summarize, formatter(a.real), formatter(a.imag))
    return _array_str(a, indent, summarize, formatter(a), None)


# ---------------------------------------------------------------------------------------------
# The whole repr

def _add_suffixes(tensor_str, suffixes, indent, force_newline=False):
    """Append ``, suffix`` items, moving one to a new line when it would pass ``linewidth``
    (the first one always, with ``force_newline``: a sparse tensor's)."""
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1  # PyTorch's count, kept exact
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _grad_fn_name(t):
    """PyTorch prints ``type(grad_fn).__name__``; ember nodes may instead carry a ``name``."""
    try:
        grad_fn = t.grad_fn
    except RuntimeError:
        return "Invalid"  # as PyTorch, for views whose grad_fn cannot be rebuilt
    if grad_fn is None:
        return None
    name = getattr(grad_fn, "name", None)
    if callable(name):
        name = name()
    return (name or type(grad_fn).__name__).rsplit("::", 1)[-1]


def _is_plain(t):
    from ._tensor import Tensor
    cls = type(t)
    from .nn.parameter import Parameter
    return cls is Tensor or cls is Parameter


def _sparse_str(self, indent, suffixes, tensor_contents, default_dtype):
    """A sparse tensor's parts, ``indices=tensor(...), values=tensor(...)`` for COO and
    ``crow_indices=..., col_indices=..., values=...`` (``ccol_indices``, ``row_indices`` for
    CSC and BSC) for the compressed layouts (its size, nnz and dtype go to ``suffixes``), as
    PyTorch prints them."""
    suffixes.append(f"size={tuple(self._size)}")
    suffixes.append(f"nnz={self._nnz()}")
    if self._dtype not in (default_dtype, D.default_complex_dtype(), D.int64, D.bool_):
        suffixes.append(f"dtype={self._dtype}")
    if tensor_contents is not None:
        return tensor_contents
    texts = []
    if self.is_sparse:
        parts = (("indices", self._indices()), ("values", self._values()))
    else:  # a compressed layout: crow/col_indices (CSR, BSR) or ccol/row_indices (CSC, BSC)
        row = self.layout._name in ("sparse_csr", "sparse_bsr")
        names = ("crow_indices", "col_indices") if row else ("ccol_indices", "row_indices")
        parts = ((names[0], getattr(self, names[0])()), (names[1], getattr(self, names[1])()),
                 ("values", self.values()))
    for name, part in parts:
        prefix = f"{name}=tensor("
        if part.numel():
            text = _tensor_str(part.detach(), indent + len(prefix))
        else:
            text = f"[], size={tuple(part._size)}"
        texts.append(prefix + text + ")")
    return (",\n" + " " * indent).join(texts)


def _quantized_str(self, indent, suffixes):
    """A quantized tensor's dequantized values; its size, dtype and quantization parameters go
    to ``suffixes`` (always: no dtype is implied), as PyTorch prints them."""
    from ._core import quantizer as Q
    suffixes.append(f"size={tuple(self._size)}")
    suffixes.append(f"dtype={self._dtype}")
    scheme = self.qscheme()
    suffixes.append(f"quantization_scheme={scheme}")
    if scheme in (Q.per_tensor_affine, Q.per_tensor_symmetric):
        suffixes.append(f"scale={self.q_scale()}")
        suffixes.append(f"zero_point={self.q_zero_point()}")
    else:
        suffixes.append(f"scale={self.q_per_channel_scales()}")
        suffixes.append(f"zero_point={self.q_per_channel_zero_points()}")
        suffixes.append(f"axis={self.q_per_channel_axis()}")
    values = self.dequantize()
    return _tensor_str(values, indent) if values.numel() else "[]"


def _str(self, *, tensor_contents=None):
    prefix = "tensor(" if _is_plain(self) else f"{type(self).__name__}("
    indent = len(prefix)
    suffixes = []
    default_dtype = D.get_default_dtype()

    if self._device.type != "cpu":
        suffixes.append(f"device='{self._device}'")

    if self._storage_ is None:
        tensor_str = _sparse_str(self, indent, suffixes, tensor_contents, default_dtype)
    elif self.is_quantized:
        tensor_str = _quantized_str(self, indent, suffixes)
    elif self._device.type == "meta":
        suffixes.append(f"size={tuple(self._size)}")
        if self._dtype is not default_dtype:
            suffixes.append(f"dtype={self._dtype}")
        tensor_str = "..."
    elif self.numel() == 0:
        if len(self._size) != 1:  # NumPy-style: (0,) is implied by "[]"
            suffixes.append(f"size={tuple(self._size)}")
        if self._dtype is not default_dtype:  # no values to tell an int64 tensor by
            suffixes.append(f"dtype={self._dtype}")
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(self._size)}")
        # Values already show these dtypes: default float ("1."), int64 ("1"), bool, complex.
        implied = (default_dtype, D.default_complex_dtype(), D.int64, D.bool_)
        if self._dtype not in implied:
            suffixes.append(f"dtype={self._dtype}")
        tensor_str = None if tensor_contents is not None else _tensor_str(self, indent)
    if tensor_contents is not None:
        tensor_str = tensor_contents
    if self._storage_ is None:
        suffixes.append(f"layout={self.layout}")

    grad_fn_name = _grad_fn_name(self)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")

    # (PyTorch starts a COO tensor's suffixes on a line of their own, not a CSR's)
    return _add_suffixes(prefix + tensor_str, suffixes, indent, self.is_sparse)


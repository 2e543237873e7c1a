"""Scalar types (``ember.float32`` ...), their NumPy twins, ``finfo``/``iinfo`` and the default dtype.

bfloat16 and the float8 types come from ``ml_dtypes``; complex32 (NumPy has no complex-half type)
is a structured pair of float16 fields, see ``_core.complex32``; every other dtype is a plain NumPy
dtype.
"""
import ml_dtypes
import numpy as np

from . import api_name

# Category ranks used by type promotion: bool < integral < floating < complex.
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, e.g. ``ember.float32``. Instances are singletons; compare with ``is``."""

    __slots__ = ("name", "_np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "_category", "_short", "__weakref__")

    def __init__(self, name, np_dtype, category, signed, short):
        self.name = name
        self._np = np.dtype(np_dtype)
        self.itemsize = self._np.itemsize
        self._category = category
        self.is_floating_point = category == FLOATING
        self.is_complex = category == COMPLEX
        self.is_signed = signed
        self._short = short  # PyTorch's "Float", "Long" ... used in messages and Tensor.type()

    def __repr__(self):
        return api_name.name + "." + self.name

    def __reduce__(self):
        return (_dtype_from_name, (self.name,))

    def to_real(self):
        return {"complex64": float32, "complex128": float64, "complex32": float16}.get(
            self.name, self)

    @property
    def _cpp(self):
        """c10's (caffe2 TypeMeta) name for the type, as ATen's messages print it."""
        return _CPP_NAMES.get(self._short, self._short)

    def to_complex(self):
        if self._short.startswith("Float8"):
            raise RuntimeError(f"Unknown Complex ScalarType for {self._short}")
        return {"float32": complex64, "float64": complex128, "float16": complex32,
                "bfloat16": complex64}.get(self.name, self)


_CPP_NAMES = {"Bool": "bool", "Byte": "unsigned char", "Char": "signed char", "Short": "short int",
              "Int": "int", "Long": "long int", "UInt16": "short unsigned int",
              "UInt32": "unsigned int", "UInt64": "long unsigned int", "Half": "c10::Half",
              "BFloat16": "c10::BFloat16",
              "Float": "float", "Double": "double", "ComplexFloat": "c10::complex<float>",
              "ComplexDouble": "c10::complex<double>",
              "ComplexHalf": "c10::complex<c10::Half>", "Float8_e4m3fn": "c10::Float8_e4m3fn",
              "Float8_e5m2": "c10::Float8_e5m2", "Float8_e4m3fnuz": "c10::Float8_e4m3fnuz",
              "Float8_e5m2fnuz": "c10::Float8_e5m2fnuz", "Float8_e8m0fnu": "c10::Float8_e8m0fnu"}

bool_ = dtype("bool", np.bool_, BOOL, False, "Bool")
uint8 = dtype("uint8", np.uint8, INTEGRAL, False, "Byte")
int8 = dtype("int8", np.int8, INTEGRAL, True, "Char")
int16 = dtype("int16", np.int16, INTEGRAL, True, "Short")
int32 = dtype("int32", np.int32, INTEGRAL, True, "Int")
int64 = dtype("int64", np.int64, INTEGRAL, True, "Long")
float16 = dtype("float16", np.float16, FLOATING, True, "Half")
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOATING, True, "BFloat16")
float32 = dtype("float32", np.float32, FLOATING, True, "Float")
float64 = dtype("float64", np.float64, FLOATING, True, "Double")
complex64 = dtype("complex64", np.complex64, COMPLEX, True, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, COMPLEX, True, "ComplexDouble")
# PyTorch's "barebones" unsigned types: storage, copies, conversions and comparisons, but no
# arithmetic and no type promotion with other types (c10::isBarebonesUnsignedType)
uint16 = dtype("uint16", np.uint16, INTEGRAL, False, "UInt16")
uint32 = dtype("uint32", np.uint32, INTEGRAL, False, "UInt32")
uint64 = dtype("uint64", np.uint64, INTEGRAL, False, "UInt64")
BAREBONES_UNSIGNED = (uint16, uint32, uint64)
# PyTorch's 8-bit floats: storage, conversions (with c10's rounding, see ``_core.float8``),
# equality and a few ops, no promotion with any other type (c10::isFloat8Type)
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, FLOATING, True, "Float8_e4m3fn")
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, FLOATING, True, "Float8_e5m2")
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, FLOATING, True,
                        "Float8_e4m3fnuz")
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, FLOATING, True,
                        "Float8_e5m2fnuz")
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, FLOATING, False,
                       "Float8_e8m0fnu")
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
# PyTorch's complex-half: 4-byte elements, a (real, imag) pair of float16 fields. A structured
# NumPy dtype keeps ember's byte storage, strides and views (view_as_real is a float16 view of
# the same bytes) unchanged, and NumPy refuses arithmetic on it, so a kernel that does not know
# complex32 fails instead of silently computing in another type; the few ops PyTorch supports
# compute in complex64 and round each part back to float16 (``_core.complex32``).
complex32 = dtype("complex32", np.dtype([("real", np.float16), ("imag", np.float16)]), COMPLEX,
                  True, "ComplexHalf")


class _ShellDtype(dtype):
    """PyTorch's dtypes with no arithmetic: the quantized types (whose tensors carry a
    quantizer ember does not have), the ``bits`` types, the sub-byte integers and float4
    (storage for other libraries' kernels). Libraries list them in their tables of dtypes, so
    ember names them; their tensors hold bytes only, as PyTorch's bits types: ``empty``, views
    and copies between tensors of one dtype, no conversion and no arithmetic (NumPy's void
    type refuses it). ``is_signed`` raises where c10's ``isSignedType`` does."""

    __slots__ = ("_signed",)

    def __init__(self, name, itemsize, signed, short, floating=False):
        # (not dtype.__init__: ``is_signed`` is a property here, not the slot it sets)
        self.name, self._short, self._signed = name, short, signed
        self._np = np.dtype(f"V{itemsize}")  # (bytes NumPy will not compute with)
        self.itemsize = itemsize
        self._category = -1  # (below bool: no promotion category)
        self.is_floating_point, self.is_complex = floating, False

    @property
    def is_signed(self):
        if isinstance(self._signed, str):
            raise RuntimeError(self._signed)
        return self._signed


_QUANTIZED = "isSignedType not supported for quantized types"
SHELL_DTYPES = (
    *(_ShellDtype(n, size, _QUANTIZED, short) for n, size, short in (
        ("qint8", 1, "QInt8"), ("quint8", 1, "QUInt8"), ("qint32", 4, "QInt32"),
        ("quint4x2", 1, "QUInt4x2"), ("quint2x4", 1, "QUInt2x4"))),
    *(_ShellDtype(n, size, "Bits types are undefined", short) for n, size, short in (
        ("bits1x8", 1, "Bits1x8"), ("bits2x4", 1, "Bits2x4"), ("bits4x2", 1, "Bits4x2"),
        ("bits8", 1, "Bits8"), ("bits16", 2, "Bits16"))),
    *(_ShellDtype(f"uint{b}", 1, False, f"UInt{b}") for b in range(1, 8)),
    *(_ShellDtype(f"int{b}", 1, True, f"Int{b}") for b in range(1, 8)),
    _ShellDtype("float4_e2m1fn_x2", 1, True, "Float4_e2m1fn_x2", floating=True))
_SHELL_BY_NAME = {d.name: d for d in SHELL_DTYPES}

# (the new types last: distributed's dtype codes are positions in this tuple)
ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128, uint16, uint32, uint64) + FLOAT8 + (complex32,)

# c10's names of the dtypes, as PyTorch's messages print a TensorOptions
C10_NAMES = {float64: "double", float32: "float", bfloat16: "c10::BFloat16", float16: "c10::Half",
             int64: "long int", int32: "int", int16: "short int", int8: "signed char",
             uint8: "unsigned char", bool_: "bool", complex64: "c10::complex<float>",
             complex128: "c10::complex<double>"}

# PyTorch's public aliases, exported from ``ember`` as well.
ALIASES = {
    "bool": bool_, "uint8": uint8, "int8": int8, "int16": int16, "short": int16, "int32": int32,
    "int": int32, "int64": int64, "long": int64, "float16": float16, "half": float16,
    "bfloat16": bfloat16, "float32": float32, "float": float32, "float64": float64,
    "double": float64, "complex64": complex64, "cfloat": complex64, "complex128": complex128,
    "cdouble": complex128, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    **{d.name: d for d in FLOAT8}, "complex32": complex32, "chalf": complex32,
    **_SHELL_BY_NAME, "bit": _SHELL_BY_NAME["uint1"],
}

_BY_NP = {d._np: d for d in ALL_DTYPES}
# NumPy type number -> dtype: the fast lookup (not complex32: every structured dtype has one number)
_BY_NP_NUM = {d._np.num: d for d in ALL_DTYPES if d is not complex32}


def _dtype_from_name(name):
    return ALIASES[name]


def from_numpy_dtype(np_dtype):
    """The ember dtype of a NumPy dtype; TypeError for dtypes ember does not support."""
    try:
        d = _BY_NP[np.dtype(np_dtype)]
        if d is complex32:  # (a structured array, not a NumPy number type)
            raise KeyError(d)
        return d
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
            "uint32, uint16, uint8, and bool.") from None


def cast_values(values, dt):
    """``values`` (an array of NumPy or of a device array module, a NumPy scalar or a Python
    number) cast to ``dt``'s NumPy type as c10 rounds: a double becomes float16 through float
    (``c10::Half`` is built from a float, so a double lands on the nearest float first), where
    NumPy's own cast rounds once and differs at about one value in 10**4."""
    if not hasattr(values, "astype"):  # a Python number (arrays of any module cast themselves)
        values = np.asarray(values)
    if dt is not float16 and dt is not bfloat16:  # (the hot path: no errstate to enter)
        if dt._category < 0 and values.dtype != dt._np:
            raise NotImplementedError(f'"copy_" not implemented for \'{dt._short}\'')
        return values.astype(dt._np)
    with np.errstate(over="ignore"):  # (beyond the range is inf, silently)
        if dt is float16 and values.dtype == np.float64:
            return values.astype(np.float32).astype(np.float16)
        return values.astype(dt._np)


# ---------------------------------------------------------------------------------------------
# Default dtype (process-wide, as in PyTorch).

_default = {"dtype": float32}


def get_default_dtype():
    return _default["dtype"]


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    if d not in (float32, float64, float16, bfloat16):
        raise TypeError(f"invalid default dtype {d}")
    _default["dtype"] = d


def default_complex_dtype():
    return complex128 if _default["dtype"] is float64 else complex64


# ---------------------------------------------------------------------------------------------
# finfo / iinfo

class finfo:
    """Machine limits of a floating-point dtype, with PyTorch's field names."""

    def __init__(self, type=None):
        type = get_default_dtype() if type is None else type
        if not isinstance(type, dtype) or type._category < FLOATING:
            raise TypeError("torch.finfo() requires a floating point input type. "
                            "Use torch.iinfo to handle 'torch.finfo'")
        info = ml_dtypes.finfo(type.to_real()._np)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = float(10.0 ** -info.precision)
        if type in FLOAT8:
            # c10's numeric_limits: 10 ** -digits10 is 1 for 3 significand bits or fewer, and
            # Float8_e5m2fnuz's epsilon is c10's 2 ** -3 (ml_dtypes says 2 ** -2)
            self.resolution = 1.0
            if type is float8_e5m2fnuz:
                self.eps = 0.125
        self.dtype = type.to_real().name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


# the quantized types' limits (their underlying integers'); PyTorch's iinfo has no dtype name
# for them (reading it raises)
_QUANTIZED_LIMITS = {"qint8": (-128, 127, 8), "quint8": (0, 255, 8),
                     "qint32": (-2 ** 31, 2 ** 31 - 1, 32), "quint4x2": (0, 255, 8),
                     "quint2x4": (0, 255, 8)}


class iinfo:
    """Machine limits of an integer dtype, with PyTorch's field names."""

    def __init__(self, type):
        if isinstance(type, _ShellDtype) and type.name in _QUANTIZED_LIMITS:
            self.min, self.max, self.bits = _QUANTIZED_LIMITS[type.name]
            self._dtype, self._short = None, type._short
            return
        if not isinstance(type, dtype) or type._category != INTEGRAL:
            raise TypeError("torch.iinfo() requires an integer input type. "
                            "Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type._np)
        self.bits = info.bits
        self.max = int(info.max)
        self.min = int(info.min)
        self._dtype = type.name

    @property
    def dtype(self):
        if self._dtype is None:
            raise NotImplementedError(f'"dtype" not implemented for \'{self._short}\'')
        return self._dtype

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

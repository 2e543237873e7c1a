"""The Python-level names PyTorch defines in ``torch/__init__.py`` (and a few its C extension
puts at top level) that are not operator bindings: the ``torch._check*`` family and
``torch._assert``, the SymInt-aware helpers (``sym_float``, ``sym_int``, ``sym_not``,
``sym_ite``, ``sym_sum``, ``sym_sqrt``), the device-generic ``Stream`` and ``Event``,
``get_device_module``, the warn-always switch, the build facts, and the functions PyTorch
removed that now only say what replaced them.

ember has no ``SymFloat``: a float computed from a symbolic size is specialised (the ShapeEnv
records a guard and the float is the hint's), so ``sym_float``/``sym_sqrt`` of a SymInt return
a Python float, and ``sym_ite`` on a SymBool evaluates it (a guard) instead of building a
piecewise expression.
"""
import builtins
import math
import warnings

from ._core.symint import SymBool, SymInt
from . import overrides as _overrides

# ---------------------------------------------------------------------------------------------
# Error checks (TORCH_CHECK and friends, callable from Python and from compiled code)


def _check_with(error_type, cond, message):
    if not isinstance(cond, (builtins.bool, SymBool)):
        from ._tensor import Tensor
        if isinstance(cond, Tensor):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                            "torch._check_tensor_all() to assert that all elements are true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    from .fx.experimental.symbolic_shapes import expect_true
    if expect_true(cond):
        return
    if not issubclass(error_type, Exception) or issubclass(error_type, Warning):
        raise AssertionError(f"error_type must be a subclass of Exception but not Warning, got "
                             f"{error_type}")
    if message is None:
        message_evaluated = ("Expected cond to be True, but got False. (Could this error message "
                             "be improved? If so, please report an enhancement request to "
                             "PyTorch.)")
    else:
        if not callable(message):
            raise TypeError("message must be a callable")
        message_evaluated = str(message())
    raise error_type(message_evaluated)


def _check(cond, message=None):
    """Raise RuntimeError(message()) unless ``cond`` (a bool or SymBool) holds: TORCH_CHECK."""
    _check_with(RuntimeError, cond, message)


def _check_is_size(i, message=None, *, max=None):
    """``_check(0 <= i)`` (and ``i <= max``): deprecated in PyTorch, with its FutureWarning."""
    warnings.warn("_check_is_size will be removed in a future PyTorch release along with "
                  "guard_size_oblivious.     Use _check(i >= 0) instead.", FutureWarning,
                  stacklevel=2)
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _check_index(cond, message=None):
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    _check_with(NotImplementedError, cond, message)


def _check_tensor_all_with(error_type, cond, message=None):
    from ._tensor import Tensor
    from ._core.dtype import bool_
    if not isinstance(cond, Tensor):
        raise TypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond.dtype is not bool_:
        raise TypeError(f"cond tensor must have dtype torch.bool, but got {cond.dtype}")
    _check_with(error_type, cond.all().item(), message)


def _check_tensor_all(cond, message=None):
    """Raise RuntimeError(message()) unless every element of the bool tensor ``cond`` is True."""
    _check_tensor_all_with(RuntimeError, cond, message)


def _assert(condition, message):
    """Python's ``assert``, callable (so symbolic tracing records it)."""
    from ._tensor import Tensor
    if type(condition) is not Tensor and _overrides.has_torch_function((condition,)):
        return _overrides.handle_torch_function(_assert, (condition,), condition, message)
    assert condition, message


# ---------------------------------------------------------------------------------------------
# SymInt-aware helpers


def sym_not(a):
    """``not a`` that keeps a SymBool symbolic."""
    if _overrides.has_torch_function_unary(a):
        return _overrides.handle_torch_function(sym_not, (a,), a)
    if isinstance(a, SymBool):
        return ~a
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_float(a):
    """``float(a)``; a SymInt specialises (ember has no SymFloat)."""
    if _overrides.has_torch_function_unary(a):
        return _overrides.handle_torch_function(sym_float, (a,), a)
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


def sym_int(a):
    """``int(a)`` that keeps a SymInt symbolic."""
    if _overrides.has_torch_function_unary(a):
        return _overrides.handle_torch_function(sym_int, (a,), a)
    if isinstance(a, SymInt):
        return a
    return builtins.int(a)


def sym_sum(*args):
    """n-ary ``+`` (``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)``), keeping SymInts symbolic."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    if _overrides.has_torch_function(args):
        return _overrides.handle_torch_function(sym_sum, args, args)
    return builtins.sum(args)


def sym_sqrt(a):
    """``math.sqrt`` for ints, floats and SymInts (a SymInt specialises, as in sym_float)."""
    if _overrides.has_torch_function_unary(a):
        return _overrides.handle_torch_function(sym_sqrt, (a,), a)
    if isinstance(a, SymInt):
        a = sym_float(a)
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)


sym_sqrt.__name__ = sym_sqrt.__qualname__ = "_sym_sqrt"  # (PyTorch's name for it)


def sym_ite(b, t, f):
    """``t if b else f``; a SymBool condition is evaluated (a guard)."""
    if _overrides.has_torch_function((b, t, f)):
        return _overrides.handle_torch_function(sym_ite, (b, t, f), b, t, f)
    if not isinstance(b, (SymBool, builtins.bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_fresh_size(expr):
    """A fresh size from an int expression (PyTorch's: a new unbacked int under tracing)."""
    from . import tensor
    return tensor(expr).item()


# ---------------------------------------------------------------------------------------------
# Devices and streams


def get_device_module(device=None):
    """The ``ember.<type>`` module of ``device`` (default: the accelerator, else ``ember.cpu``)."""
    from ._core.device import device as _device
    if isinstance(device, _device):
        name = device.type
    elif isinstance(device, str):
        name = _device(device).type
    elif device is None:
        from .accelerator import _accelerator
        acc = _accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    from ._utils import _get_device_module
    return _get_device_module(name)


def _stream_device(device):
    """PyTorch's device for Stream/Event: None is the accelerator (else the CPU), an int an
    accelerator index."""
    from ._core.device import device as _device
    from .accelerator import _NONE, _accelerator, current_device_index
    if device is None or isinstance(device, builtins.int):
        acc = _accelerator()
        if acc is None:
            if device is not None:
                raise RuntimeError(_NONE)
            return _device("cpu")
        device = _device(acc.type, device)
    device = _device(device)
    if device.type != "cpu" and device.index is None:  # the current device of its type
        device = _device(device.type, current_device_index())
    return device


_CPU_EVENTS = "cpu backend doesn't support events."
_DEVICE_TYPE_CODES = {"cpu": 0, "cuda": 1}


class Stream:
    """``Stream(device=None, *, priority=0)``: an in-order queue of work on a device, for any
    device type. A CUDA one is an ``ember.cuda.Stream``'s queue; the CPU runs work as it is
    issued, so its one stream (id 0) is always idle and cannot record events."""

    def __init__(self, device=None, *, priority=0):
        self._device = _stream_device(device)
        self._cuda = None
        if self._device.type == "cuda":
            from .cuda import Stream as CudaStream
            self._cuda = CudaStream(self._device, priority)
        elif self._device.type != "cpu":
            raise RuntimeError(f"{self._device.type} backend doesn't support streams.")

    @classmethod
    def _wrap(cls, cuda_stream):
        s = cls.__new__(cls)
        s._device, s._cuda = cuda_stream.device, cuda_stream
        return s

    @property
    def device(self):
        return self._device if self._cuda is None else self._cuda.device

    @property
    def device_type(self):
        """c10's DeviceType code (0 the CPU, 1 CUDA), as PyTorch's Stream gives it."""
        return _DEVICE_TYPE_CODES[self._device.type]

    @property
    def device_index(self):
        return -1 if self._cuda is None else self._cuda.device_index

    @property
    def stream_id(self):
        return 0 if self._cuda is None else self._cuda.stream_id

    @property
    def native_handle(self):
        if self._cuda is None:
            raise RuntimeError("Backend doesn't support getting stream native handle.")
        return self._cuda.cuda_stream

    def query(self):
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()

    def is_capturing(self):
        """Whether this stream is capturing a CUDA graph."""
        if self._cuda is None:
            return False
        from .cuda.streams import _rt
        return _rt().stream_is_capturing(self._cuda.cuda_stream)

    def wait_event(self, event):
        if self._cuda is not None:
            event.wait(self)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if self._cuda is None:
            raise RuntimeError(_CPU_EVENTS)
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        if self._cuda is not None:
            self._cuda.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cuda is not None:
            self._cuda.__exit__(*exc)

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device_type, self.device_index,
                                              self.stream_id) == \
            (other.device_type, other.device_index, other.stream_id)

    def __hash__(self):
        return hash((self.device_type, self.device_index, self.stream_id))

    def __repr__(self):
        return (f"ember.Stream device_type={self._device.type}, device_index="
                f"{self.device_index}, stream_id={self.stream_id}")


class Event:
    """``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``: a
    marker in a stream's work, for any device type (a CUDA one is an ``ember.cuda.Event``; the
    CPU has none to record)."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self._device = _stream_device(device)
        self.enable_timing = enable_timing
        self._cuda = None
        if self._device.type == "cuda":
            from .cuda import Event as CudaEvent
            self._cuda = CudaEvent(enable_timing, blocking, interprocess)
        elif self._device.type != "cpu":
            raise RuntimeError(f"{self._device.type} backend doesn't support events.")

    @classmethod
    def from_ipc_handle(cls, *args, **kwargs):
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if "
                                  "you need this!")

    def ipc_handle(self):
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if "
                                  "you need this!")

    @property
    def device(self):
        if self._cuda is not None and self._cuda.device is not None:
            return self._cuda.device
        return self._device

    @property
    def event_id(self):
        return 0 if self._cuda is None else self._cuda.cuda_event

    def _stream(self, stream):
        """The CUDA stream under ``stream`` (an ember.Stream or ember.cuda.Stream)."""
        if stream is None:
            import ember
            return ember.cuda.current_stream(self._device.index)
        return stream._cuda if isinstance(stream, Stream) else stream

    def record(self, stream=None):
        if self._cuda is None:
            raise RuntimeError(_CPU_EVENTS)
        self._cuda.record(self._stream(stream))

    def wait(self, stream=None):
        if self._cuda is not None:
            self._cuda.wait(self._stream(stream))

    def query(self):
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._cuda is None or self._cuda._handle is None or end_event._cuda is None or \
                end_event._cuda._handle is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._cuda.elapsed_time(end_event._cuda)

    def __repr__(self):
        return (f"ember.Event device_type={self._device.type}, device_index="
                f"{-1 if self._cuda is None else self.device.index}, event_flag="
                f"{int(self.enable_timing)}, event_id={self.event_id}")


# ---------------------------------------------------------------------------------------------
# Switches and facts about this build


def set_warn_always(b, /):
    """While True, warnings PyTorch gives once per process (TORCH_WARN_ONCE) are given every
    time."""
    from . import _C
    _C._set_warnAlways(b)


def is_warn_always_enabled():
    from . import _C
    return _C._get_warnAlways()


def set_flush_denormal(mode):
    """Flush denormal floats to zero on the CPU (this thread); False where unsupported."""
    from . import _C
    return _C._set_flush_denormal(mode)


def compiled_with_cxx11_abi():
    """Whether C++ extensions must use _GLIBCXX_USE_CXX11_ABI=1 (PyTorch 2.13: always)."""
    return True


def is_distributed(input):
    """PyTorch's legacy query; no tensor is a distributed tensor."""
    return False


def init_num_threads():
    """Set up the calling thread's intra-op threads. ember's kernels read the process-wide
    ``get_num_threads()`` at every launch, so a new thread already uses it: nothing to do."""


def cudnn_is_acceptable(tensor):
    """Whether cuDNN could take this tensor: ember has no cuDNN, so never."""
    return False


def is_vulkan_available():
    """ember has no Vulkan backend."""
    return False


class _ClassPropertyDescriptor:
    def __init__(self, fget):
        self.fget = fget

    def __get__(self, instance, owner=None):
        return self.fget.__get__(instance, type(instance) if owner is None else owner)()


def classproperty(func):
    """A read-only property of the class (``torch.classproperty``)."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassPropertyDescriptor(func)


# ---------------------------------------------------------------------------------------------
# Functions PyTorch removed: they say what replaced them.


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed.\n"
                       "Please use the `torch.linalg.matrix_rank` function instead. The "
                       "parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to "
                       "'hermitian'.")


def solve(input, A, *, out=None):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                       "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
                       "`torch.linalg.solve` has its arguments reversed and does not return the "
                       "LU factorization.\n\nTo get the LU factorization see `torch.lu`, which "
                       "can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
                       "X = torch.solve(B, A).solution should be replaced with:\n"
                       "X = torch.linalg.solve(A, B)")


def lstsq(input, A, *, out=None):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                       "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
                       "`torch.linalg.lstsq` has reversed arguments and does not return the QR "
                       "decomposition in the returned tuple (although it returns other "
                       "information about the problem).\n\nTo get the QR decomposition consider "
                       "using `torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` "
                       "stored the residuals of the solution in the last m - n columns of the "
                       "returned value whenever m > n. In torch.linalg.lstsq, the residuals are "
                       "in the field 'residuals' of the returned named tuple.\n\nThe unpacking "
                       "of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
                       "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution")


def _symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. The "
                       "default behavior has changed from using the upper triangular portion of "
                       "the matrix by default to using the lower triangular portion.\n\n"
                       "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
                       "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
                       "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
                       "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


def eig(self, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                       "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` "
                       "rather than real tensors mimicking complex tensors.\n\nL, _ = "
                       "torch.eig(A) should be replaced with:\nL_complex = "
                       "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) "
                       "should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)")

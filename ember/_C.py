"""``ember._C``: the inspection entry points PyTorch exposes from its C extension."""
import enum

from ._dispatch import dispatcher as _d
from ._dispatch import tls as _tls
from ._dispatch.keys import DispatchKey, DispatchKeySet  # noqa: F401
from ._dispatch.schema import Argument, FunctionSchema, parse_schema  # noqa: F401
from ._dispatch.tls import (ExcludeDispatchKeyGuard as _ExcludeDispatchKeyGuard,  # noqa: F401
                            ForceDispatchKeyGuard as _ForceDispatchKeyGuard,
                            IncludeDispatchKeyGuard as _IncludeDispatchKeyGuard,
                            _dispatch_tls_is_dispatch_key_excluded,
                            _dispatch_tls_is_dispatch_key_included,
                            _dispatch_tls_local_exclude_set, _dispatch_tls_local_include_set,
                            _dispatch_tls_set_dispatch_key_excluded,
                            _dispatch_tls_set_dispatch_key_included)
from ._jit_types import *  # noqa: F401,F403  (TorchScript's type objects: torch._C.TensorType ...)


# ---------------------------------------------------------------------------------------------
# Operator tags, the warn-always flag and the CPU's denormal mode.

class Tag(str, enum.Enum):
    """PyTorch's operator tags (``tags.yaml``). ember's ``OpOverload.tags`` holds the tag names,
    which these members equal (``Tag.pointwise in ops.aten.add.Tensor.tags``)."""
    core = "core"
    cudagraph_unsafe = "cudagraph_unsafe"
    data_dependent_output = "data_dependent_output"
    dynamic_output_shape = "dynamic_output_shape"
    flexible_layout = "flexible_layout"
    generated = "generated"
    inplace = "inplace"
    inplace_view = "inplace_view"
    maybe_aliasing_or_mutating = "maybe_aliasing_or_mutating"
    needs_contiguous_strides = "needs_contiguous_strides"
    needs_exact_strides = "needs_exact_strides"
    needs_fixed_stride_order = "needs_fixed_stride_order"
    nondeterministic_bitwise = "nondeterministic_bitwise"
    nondeterministic_seeded = "nondeterministic_seeded"
    out = "out"
    out_variant = "out_variant"
    pointwise = "pointwise"
    pt2_compliant_tag = "pt2_compliant_tag"
    reduction = "reduction"
    view_copy = "view_copy"


_warn_always = [False]


def _set_warnAlways(enabled):
    """TORCH_WARN_ONCE warnings (``ember._kernels.cpu.linalg.warn_once``) repeat while set."""
    _warn_always[0] = bool(enabled)


def _get_warnAlways():
    return _warn_always[0]


_FLUSH_DENORMAL_SOURCE = r"""
#include <Python.h>
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <xmmintrin.h>
#define EMBER_HAVE_MXCSR 1
#endif

/* The calling thread's SSE control register: FTZ (bit 15) flushes denormal results to zero,
   DAZ (bit 6) reads denormal operands as zero. True where the CPU has them. */
static PyObject* set_flush_denormal(PyObject* self, PyObject* arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
#ifdef EMBER_HAVE_MXCSR
    unsigned int csr = _mm_getcsr();
    _mm_setcsr(on ? (csr | 0x8040u) : (csr & ~0x8040u));
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"set_flush_denormal", set_flush_denormal, METH_O, "set the thread's FTZ/DAZ bits"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_flush_denormal", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_ember_flush_denormal(void) { return PyModule_Create(&module); }
"""
_flush_denormal_module = []


def _set_flush_denormal(mode):
    """Set the calling thread's flush-to-zero and denormals-are-zero modes (x86 SSE), which
    NumPy's kernels and ember's compiled ones on this thread obey. False where the CPU or
    this machine (no C compiler) cannot: PyTorch's answer on CPUs without them."""
    if not _flush_denormal_module:
        from ._inductor.codecache import HandWrittenModule
        _flush_denormal_module.append(HandWrittenModule(
            "ember_flush_denormal", lambda: _FLUSH_DENORMAL_SOURCE,
            "set_flush_denormal returns False", parallel=False))
    module = _flush_denormal_module[0].get()
    return False if module is None else module.set_flush_denormal(bool(mode))


def _get_accelerator():
    """The device type of the accelerator ember was built with, else the CPU's (PyTorch's
    ``at::getAccelerator`` with the CPU fallback)."""
    from .accelerator import current_accelerator
    from ._core.device import device
    return current_accelerator() or device("cpu")


def _dispatch_dump(name):
    """Registrations of an operator: schema, then each kernel with where it was registered."""
    return _d.dump(name)


def _dispatch_dump_table(name):
    """The computed table: the kernel each runtime key resolves to, tagged as PyTorch tags it."""
    return _d.dump_table(name)


def _dispatch_keys(tensor):
    return DispatchKeySet(tensor._keyset)


def _dispatch_has_kernel_for_dispatch_key(name, key):
    from ._dispatch.keys import parse_key
    return _d._lookup(name).has_kernel(parse_key(key))


def _set_dispatch_trace(enabled, stream=None):
    _d.set_dispatch_trace(enabled, stream)


def _dispatch_find_schema_or_throw(name, overload=""):
    return _d._lookup(f"{name}.{overload}" if overload else name).schema


# ---------------------------------------------------------------------------------------------
# Extension points: __torch_function__ / __torch_dispatch__ guards and mode stacks.

from .overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: E402,F401
                        _disabled_torch_function_impl, _is_torch_function_enabled,
                        _is_torch_function_mode_enabled, _len_torch_function_stack)
from .utils import _python_dispatch as _pd  # noqa: E402
from .utils._python_dispatch import _DisableTorchDispatch, _len_torch_dispatch_stack  # noqa: E402,F401,E501
from ._tensor import Tensor as _Tensor  # noqa: E402

class ScriptModule:
    """``torch._C.ScriptModule`` (``torch.ScriptModule``): the C++ module object under a scripted
    module in PyTorch (its ``_c``), not ``torch.jit.ScriptModule``. ember's script modules are
    Python modules over exported programs with no such object below them, so nothing is an
    instance of it, as no Python module is in PyTorch; code names it in annotations."""

    def __init__(self, *args, **kwargs):
        raise TypeError("__init__(): incompatible constructor arguments: ember has no C++ "
                        "script module to build; use ember.jit.script or ember.jit.trace")


class ScriptMethod:
    """``torch._C.ScriptMethod``: a compiled TorchScript method of a ``ScriptModule``. ember
    compiles no TorchScript (a script module's methods are Python), so nothing is an instance
    of it; code names it in ``isinstance`` checks (torchview's recorder)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("torch._C.ScriptMethod: No constructor defined!")


# the metaclass of the tensor classes (``type(torch.Tensor)``): PyTorch's is a C type under its
# TensorBase; ember's Tensor is a Python class, so it is ``type``
_TensorMeta = type(_Tensor)

# Assigning this to a subclass's __torch_dispatch__ opts it out, like PyTorch's.
_disabled_torch_dispatch_impl = _Tensor.__torch_dispatch__


def _get_function_stack_at(i):
    from .overrides import _tls
    return _tls.modes[i]


def _get_dispatch_stack_at(i):
    return _pd._tls.stack[i]


def _push_on_torch_function_stack(mode):
    from .overrides import _push_mode
    _push_mode(mode)


def _pop_torch_function_stack():
    from .overrides import _pop_mode
    return _pop_mode()


def _push_on_torch_dispatch_stack(mode):
    _pd._push_mode(mode)


def _pop_torch_dispatch_stack(mode_key=None):
    return _pd._pop_mode()


_pd.install()
from . import overrides as _overrides  # noqa: E402
_overrides.install(_Tensor)


def _python_module(name):
    """``ember._C._nn`` / ``_linalg`` / ``_fft`` / ``_special``: the bindings of the ops that
    native_functions.yaml marks ``python_module: <name>``, as PyTorch groups them."""
    import types

    from ._ops import bindings
    mod = types.ModuleType(f"ember._C._{name}")
    mod.__dict__.update(bindings.python_modules.get(name, {}))
    return mod


_nn = _python_module("nn")


def _parse_to(*args, **kwargs):
    """``_nn._parse_to``: ``Module.to``'s reading of ``.to(...)`` arguments into (device, dtype,
    non_blocking, memory_format), which libraries call to read them as PyTorch does."""
    from .nn.modules.module import _parse_to as parse
    return parse(*args, **kwargs)


_nn._parse_to = _parse_to
_linalg = _python_module("linalg")
_fft = _python_module("fft")
_special = _python_module("special")


def _functorch_module():
    """``ember._C._functorch``: the function-transform entry points PyTorch exposes from its C
    extension (``torch/csrc/functorch/init.cpp``), which PyTorch's own ``torch._functorch.vmap``
    is written with and libraries (tensordict) call directly."""
    import types

    from ._functorch import batched_tensor, batching, interpreter, vmap
    mod = types.ModuleType("ember._C._functorch")

    def _set_vmap_fallback_enabled(enabled):
        """Let ops without a batching rule loop over the batch (True) or raise (False)."""
        batching.set_fallback_enabled(enabled)

    def maybe_get_level(tensor):
        return batched_tensor.maybe_level(tensor) or -1

    def maybe_get_bdim(tensor):
        return tensor._bdim if batched_tensor.is_batchedtensor(tensor) else -1

    def current_level():
        """The innermost live transform's level, or -1 outside every transform."""
        layers = interpreter.layers()
        return layers[-1].level if layers else -1

    mod.__dict__.update(
        _set_vmap_fallback_enabled=_set_vmap_fallback_enabled,
        _is_vmap_fallback_enabled=batching.get_fallback_enabled,
        is_batchedtensor=batched_tensor.is_batchedtensor,
        get_unwrapped=lambda tensor: tensor._value,
        maybe_get_level=maybe_get_level, maybe_get_bdim=maybe_get_bdim,
        current_level=current_level,
        _add_batch_dim=vmap._add_batch_dim, _remove_batch_dim=vmap._remove_batch_dim,
        _vmap_increment_nesting=interpreter.vmap_increment_nesting,
        _vmap_decrement_nesting=interpreter.vmap_decrement_nesting)
    return mod


_functorch = _functorch_module()


def _are_functorch_transforms_active():
    """Whether a function transform (vmap, grad/vjp, functionalize) is running in this
    thread."""
    from ._functorch import interpreter
    return bool(interpreter.layers())


def _set_grad_enabled(mode):
    """Set grad mode (PyTorch's ``torch._C._set_grad_enabled``; compiled graphs record it)."""
    from ._dispatch import tls
    tls.state.grad_enabled = bool(mode)


def _get_tracing_state():
    """The JIT tracer's state: truthy while ``ember.jit.trace`` records, else None."""
    from .jit import _internal
    return True if _internal.is_tracing() else None


_logged_api_usage = set()


def _log_api_usage_once(event):
    """PyTorch's API-usage log (libraries call it from constructors): each event once per
    process, to stderr when ``PYTORCH_API_USAGE_STDERR`` is set, as c10's default logger."""
    if event in _logged_api_usage:
        return
    _logged_api_usage.add(event)
    import os
    if os.environ.get("PYTORCH_API_USAGE_STDERR"):
        import sys
        print(f"PYTORCH_API_USAGE {event}", file=sys.stderr)


def _register_submodules():
    """``import ember._C._nn`` (and ``from torch._C._functorch import ...``) finds the
    submodules, which PyTorch puts in ``sys.modules`` for the same reason."""
    import sys
    import types
    for name, mod in list(globals().items()):
        if isinstance(mod, types.ModuleType) and mod.__name__ == f"{__name__}.{name}":
            sys.modules.setdefault(mod.__name__, mod)


_register_submodules()

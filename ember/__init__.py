"""ember: PyTorch's architecture, built in Python.

Importing ember builds the layer cake bottom-up: core types, the dispatcher, the operator
registry loaded from ``_ops/native_functions.yaml`` (kernels from ``_kernels``), then the Python
bindings generated from the schemas, which become the functions of this module and the methods
of :class:`Tensor`.
"""
from math import e, inf, nan, pi  # noqa: F401  (torch.e, torch.inf, torch.nan, torch.pi)

from .version import __version__  # noqa: F401  (torch.__version__)

newaxis = None  # torch.newaxis, NumPy's name for None in an index
from ._core.dtype import (ALIASES as _ALIASES, dtype, finfo, get_default_dtype, iinfo,  # noqa: F401
                          set_default_dtype)
from ._core.device import (channels_last, channels_last_3d, contiguous_format, device,  # noqa: F401
                           jagged, layout, memory_format, preserve_format, sparse_bsc,
                           sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided)
from ._core.promotion import can_cast, promote_types  # noqa: F401
from ._core.quantizer import (per_channel_affine, per_channel_affine_float_qparams,  # noqa: F401
                              per_channel_symmetric, per_tensor_affine, per_tensor_symmetric,
                              qscheme)
from ._core.size import Size  # noqa: F401
from ._core.storage import UntypedStorage  # noqa: F401
from ._tensor import Tensor  # noqa: F401

globals().update(_ALIASES)
bool = _ALIASES["bool"]  # noqa: A001  (PyTorch shadows the builtin too)
float = _ALIASES["float"]  # noqa: A001
int = _ALIASES["int"]  # noqa: A001

from ._ops import registry as _registry  # noqa: E402
from ._ops import bindings as _bindings  # noqa: E402
from ._ops.overload import ops  # noqa: E402,F401

_aten_lib = _registry.install()
from ._kernels import cuda as _cuda_kernels  # noqa: E402
_cuda_kernels.register()  # the CUDA key: the runtime's kernels and the host-kernel fallback
# the generated bindings of the op table (PyTorch's torch._C._VariableFunctions, which torch._VF
# names); some are replaced below by Python-level functions of the same name (einsum, split ...)
_variable_functions = _bindings.generate(Tensor)
globals().update(_variable_functions)
_segment_reduce = segment_reduce  # noqa: F821  (PyTorch's private name; the public one stays too)

from . import _C  # noqa: E402,F401
from ._factories import *  # noqa: E402,F401,F403
from ._factories import deprecated_range as range  # noqa: E402,A001  (torch.range)
from ._legacy_tensor_types import set_default_tensor_type, types as _legacy_types  # noqa: E402,F401
globals().update(_legacy_types("cpu", "torch"))  # torch.FloatTensor, torch.LongTensor, ...
from ._dlpack import from_dlpack  # noqa: E402,F401
from .random import *  # noqa: E402,F401,F403
from ._tensor_str import get_printoptions, set_printoptions  # noqa: E402,F401
from ._tensor_ops import install as _install_operators  # noqa: E402

_install_operators()
from .autograd.grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled  # noqa: E402,F401,E501
from ._functional_ops import *  # noqa: E402,F401,F403  (torch.unique, torch.norm, ...: Python-level ops)
from ._linalg_functional import *  # noqa: E402,F401,F403  (torch.lu, svd_lowrank, pca_lowrank)
from ._spectral import *  # noqa: E402,F401,F403  (torch.stft with center/pad_mode)

from .amp._top_level import *  # noqa: E402,F401,F403  (autocast, autocast state functions; amp, cpu, cuda, profiler)
from .amp import GradScaler  # noqa: E402,F401  (torch.GradScaler)
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: E402,F401
                                    set_anomaly_enabled)
from . import nn, optim, utils, safetensors; from .serialization import save, load  # noqa: E402,F401  (training: nn, optim, data, checkpoints)
from .serialization import PyTorchFileReader  # noqa: E402,F401  (torch.PyTorchFileReader)
from .cuda import OutOfMemoryError  # noqa: E402,F401  (torch.OutOfMemoryError)
from . import accelerator, backends, linalg  # noqa: E402,F401  (torch.accelerator, torch.backends, torch.linalg)
from . import fft  # noqa: E402,F401  (torch.fft)
from . import masked  # noqa: E402,F401  (torch.masked)
from . import sparse  # noqa: E402,F401  (torch.sparse)
from . import nested  # noqa: E402,F401  (torch.nested: jagged-layout nested tensors)
from . import storage  # noqa: E402,F401  (torch.storage)
from .storage import TypedStorage  # noqa: E402,F401
from . import mps, mtia, xpu  # noqa: E402,F401  (devices a PyTorch build may lack: none here)
from . import _utils, __config__  # noqa: E402,F401  (torch._utils, torch.__config__)
from .nn import attention as _nn_attention  # noqa: E402,F401  (torch.nn.attention, as after import torch)
from . import special  # noqa: E402,F401  (torch.special)
from . import signal  # noqa: E402,F401  (torch.signal.windows)
from . import func  # noqa: E402,F401  (torch.func: grad, grad_and_value, vjp, vmap)
from .func import vmap  # noqa: E402,F401  (torch.vmap)
from ._functorch.functional_wrapper import (  # noqa: E402,F401  (the Functionalize key's API)
    _disable_functionalization, _enable_functionalization, _from_functional_tensor,
    _functionalize_commit_update, _functionalize_has_data_mutation,
    _functionalize_has_metadata_mutation, _functionalize_replace, _functionalize_sync,
    _is_functional_tensor, _sync, _to_functional_tensor)
from . import testing  # noqa: E402,F401  (torch.testing)
from . import fx  # noqa: E402,F401  (torch.fx: graphs, symbolic_trace, make_fx)
from . import distributions  # noqa: E402,F401  (torch.distributions)
from . import quasirandom  # noqa: E402,F401  (torch.quasirandom: SobolEngine)


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None,
            options=None, disable=False):
    """Capture ``model`` (a function or ``nn.Module``) into graphs with guards and run them
    through ``backend`` (PyTorch's ``torch.compile``; see ``ember._dynamo``; None:
    ``ember.compiler.get_default_backend()``, "inductor" unless set). Usable as a decorator
    with or without arguments. ``dynamic``: None (automatic dynamic shapes), True (symbolic
    sizes from the start) or False (always specialise). ``options["guard_filter_fn"]`` filters
    the guards of each capture (``ember.compiler.skip_guard_on_*_unsafe``)."""
    from . import _dynamo
    if backend is None:
        backend = _dynamo.backends.registry.get_default_backend()
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in ("default", "reduce-overhead", "max-autotune",
                                         "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, "
                           f"reduce-overhead, max-autotune, max-autotune-no-cudagraphs")
    if model is None:
        def fn(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)
        return fn
    guard_filter_fn = None
    if options:
        options = dict(options)
        guard_filter_fn = options.pop("guard_filter_fn", None)
    if (mode not in (None, "default") and backend == "inductor") or options:
        # handed to the backend (Inductor reads the mode and its options)
        backend = _dynamo.backends.registry.with_options(
            backend, mode if backend == "inductor" else None, options)
    return _dynamo.optimize(backend, nopython=fullgraph, dynamic=dynamic,
                            disable=disable, guard_filter_fn=guard_filter_fn)(model)


from ._core.symint import SymInt, SymBool, SymFloat, sym_max, sym_min  # noqa: E402,F401
from . import compiler, _logging, _dynamo  # noqa: E402,F401  (torch.compiler, torch._logging, torch._dynamo)
from . import jit  # noqa: E402,F401  (torch.jit: trace, script, save/load on the compile pipeline)
from ._higher_order_ops import cond, while_loop  # noqa: E402,F401  (torch.cond, torch.while_loop)
from ._toplevel import (  # noqa: E402,F401  (the Python-level names of torch/__init__.py)
    Event, Stream, _assert, _check, _check_index, _check_is_size, _check_not_implemented,
    _check_tensor_all, _check_tensor_all_with, _check_type, _check_value, _check_with,
    _symeig as symeig, classproperty, compiled_with_cxx11_abi, cudnn_is_acceptable, eig,
    get_device_module, init_num_threads, is_distributed, is_vulkan_available,
    is_warn_always_enabled, lstsq, matrix_rank, set_flush_denormal, set_warn_always, solve,
    sym_float, sym_fresh_size, sym_int, sym_ite, sym_not, sym_sqrt, sym_sum)
from ._C import (Argument, DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: E402,F401
                 DispatchKey, DispatchKeySet, FunctionSchema, ScriptModule, Tag, parse_schema,
                 _ExcludeDispatchKeyGuard as ExcludeDispatchKeyGuard)
from ._jit_types import *  # noqa: E402,F401,F403  (torch.TensorType, torch.ListType ...)
from .storage import LEGACY_STORAGES as _LEGACY_STORAGES  # noqa: E402
globals().update(_LEGACY_STORAGES)  # torch.FloatStorage, torch.LongStorage, ...
StorageBase = UntypedStorage  # (torch's C base class of UntypedStorage: ember's has none)
from .futures import Future  # noqa: E402,F401  (torch.Future)
from .jit import fork, wait  # noqa: E402,F401  (torch.fork, torch.wait: torch.jit's)
from .jit import ScriptFunction  # noqa: E402,F401  (torch.ScriptFunction: torch.jit's)
from .utils.dlpack import to_dlpack  # noqa: E402,F401
from . import functional  # noqa: E402,F401  (torch.functional)
from . import _VF  # noqa: E402,F401  (torch._VF)
legacy_contiguous_format = contiguous_format
# the classes PyTorch defines in C and names by the package (torch.dtype.__module__ == "torch":
# MONAI tells a torch dtype from a NumPy one by it)
for _cls in (Tensor, dtype, device, Size, layout, memory_format, finfo, iinfo,  # noqa: F821
             SymInt, SymBool, SymFloat, Stream, Event, DispatchKey, DispatchKeySet,  # noqa: F821
             FunctionSchema, Argument):
    _cls.__module__ = "ember"
del _cls
has_openmp = backends.openmp.is_available()
has_mkl = backends.mkl.is_available()
has_lapack = True  # (NumPy's LAPACK runs ember.linalg)
has_spectral = True  # (ember.fft)
# PyTorch's Python-binding aliases of the (sparse) matrix products
dsmm = spmm = mm  # noqa: F821
hsmm = hspmm  # noqa: F821
saddmm = sspaddmm  # noqa: F821


def __getattr__(name):
    # ember.export, ember.multiprocessing, ember.hub, ember.onnx, ember.ao, ember.quantization,
    # ember.package, ember.monitor and ember._prims_common after `import ember`, as torch's after
    # `import torch`: imported on first use (export's symbolic shapes bring sympy, ~0.3 s)
    if name in ("export", "multiprocessing", "hub", "onnx", "__future__", "_prims_common", "ao",
                "quantization", "package", "monitor"):
        import importlib
        return importlib.import_module("." + name, __name__)
    if name == "Storage":  # follows the default dtype, as torch.Storage
        return storage.default_storage_class()
    if name == "torch":  # torch.torch is torch (its __init__ imports torch); kornia spells it
        import sys
        return sys.modules[__name__]
    raise AttributeError(f"module 'ember' has no attribute '{name}'")

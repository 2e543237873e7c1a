"""Python-level functions whose behaviour PyTorch defines in Python rather than in one aten
schema (``torch/functional.py``, ``torch/_tensor.py``): they pick an aten overload from their
arguments and shape the result. Exported from ``ember`` (and the matching ``Tensor`` methods)."""
import functools

from . import overrides as _overrides
from ._core.device import strided as _strided
from ._ops.overload import ops as _ops
from ._tensor import Tensor as _Tensor

__all__ = ["unique", "unique_consecutive", "norm"]


def _overridable(fn):
    """torch/functional.py's has_torch_function check: an argument whose type defines
    ``__torch_function__`` (an fx Proxy, a tensor subclass), or a TorchFunctionMode, gets the
    call, which symbolic tracing then records as this function."""
    @functools.wraps(fn)
    def public(*args, **kwargs):
        if _overrides._TF_ON and _overrides.has_torch_function(args):
            return _overrides.handle_torch_function(public, args, *args, **kwargs)
        return fn(*args, **kwargs)
    return public


def _unique_result(output, inverse, counts, return_inverse, return_counts):
    """torch.unique's return: the values alone, or a tuple with the inverse and/or counts."""
    if return_inverse and return_counts:
        return output, inverse, counts
    if return_inverse:
        return output, inverse
    if return_counts:
        return output, counts
    return output


@_overridable
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """torch.unique: aten ``_unique2`` over all elements, ``unique_dim`` over slices."""
    if dim is None:
        out = _ops.aten._unique2.default(input, sorted, return_inverse, return_counts)
    else:
        out = _ops.aten.unique_dim.default(input, dim, sorted, return_inverse, return_counts)
    return _unique_result(*out, return_inverse, return_counts)


@_overridable
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    out = _ops.aten.unique_consecutive.default(input, return_inverse, return_counts, dim)
    return _unique_result(*out, return_inverse, return_counts)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """torch.norm: 'fro' (over at most two dims) and numeric p are vector norms over ``dim``
    (every dim when None); 'nuc' and 'fro' over other dims are matrix norms."""
    if _overrides._TF_ON and _overrides.has_torch_function_unary(input):
        # (every argument passed on, as torch/functional.py's norm does)
        return _overrides.handle_torch_function(norm, (input,), input, p=p, dim=dim,
                                                keepdim=keepdim, out=out, dtype=dtype)
    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p != "fro" or (dims is not None and len(dims) > 2):
            from . import linalg
            mdims = list(range(input.dim())) if dims is None else dims
            kw = {} if out is None else {"out": out}
            return linalg.matrix_norm(input, p, mdims, keepdim, dtype=dtype, **kw)
        p = 2
    p = 2.0 if p is None else p
    if input.layout == _strided:  # PyTorch's dense tensors take linalg.vector_norm (its checks)
        from . import linalg
        kw = {} if out is None else {"out": out}
        return linalg.vector_norm(input, p, dims, keepdim, dtype=dtype, **kw)
    dims = [] if dims is None else list(dims)  # [] reduces every dim
    aten = _ops.aten
    if dtype is None:
        args, op = (input, p, dims, keepdim), aten.norm.ScalarOpt_dim
        out_op = aten.norm.out
    else:
        args, op = (input, p, dims, keepdim), aten.norm.ScalarOpt_dim_dtype
        out_op = aten.norm.dtype_out
    kwargs = {} if dtype is None else {"dtype": dtype}
    if out is not None:
        return out_op(*args, out=out, **kwargs)
    return op(*args, **kwargs)


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
                   dim=None):
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


def _tensor_norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    if _overrides._TF_ON and _overrides.has_torch_function_unary(self):
        return _overrides.handle_torch_function(_Tensor.norm, (self,), self, p=p, dim=dim,
                                                keepdim=keepdim, dtype=dtype)
    return norm(self, p, dim, keepdim, dtype=dtype)


_Tensor.unique = _tensor_unique
_Tensor.unique_consecutive = _tensor_unique_consecutive
_Tensor.norm = _tensor_norm


# -- shape and linear-algebra wrappers of torch/functional.py (issue 3) ----------------------------

__all__ += ["meshgrid", "einsum", "block_diag", "cartesian_prod", "chain_matmul", "tensordot",
            "nonzero"]


def _tensors(args):
    """PyTorch's functions taking ``*tensors`` also accept one list/tuple of tensors."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


@_overridable
def meshgrid(*tensors, indexing=None):
    """torch.meshgrid: ``indexing`` 'ij' (the default, with PyTorch's warning) or 'xy'."""
    ts = _tensors(tensors)
    if indexing is None:
        return tuple(_ops.aten.meshgrid.default(ts))
    return tuple(_ops.aten.meshgrid.indexing(ts, indexing=indexing))


def _sublist_letters(sublist):
    import string
    letters = string.ascii_letters
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and 0 <= s < len(letters):
            out.append(letters[s])
        else:
            raise ValueError("einsum(): subscript in subscript list is not within the valid range "
                             "[0, 52)")
    return "".join(out)


def einsum(*args):
    """torch.einsum(equation, *operands), (equation, [operands]) or the sublist form
    (op1, sublist1, op2, sublist2, ..., [sublist_out])."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
    else:  # sublist format
        operands = args[0::2][:len(args) // 2]
        subs = [_sublist_letters(s) for s in args[1::2][:len(operands)]]
        equation = ",".join(subs)
        if len(args) % 2 == 1:
            equation += "->" + _sublist_letters(args[-1])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])  # the old form: one sequence of operands
    if _overrides._TF_ON and _overrides.has_torch_function(operands):
        # (recorded by a trace in the (equation, *operands) form, as PyTorch's)
        return _overrides.handle_torch_function(einsum, operands, equation, *operands)
    return _ops.aten.einsum.default(equation, list(operands))


@_overridable
def block_diag(*tensors):
    return _ops.aten.block_diag.default(list(tensors))


@_overridable
def cartesian_prod(*tensors):
    return _ops.aten.cartesian_prod.default(list(tensors))


@_overridable
def chain_matmul(*matrices, out=None):
    if out is not None:
        return _ops.aten.chain_matmul.out(list(matrices), out=out)
    return _ops.aten.chain_matmul.default(list(matrices))


@_overridable
def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: ``dims`` an int (the last dims of a with the first of b), a pair of lists,
    or a 2-element tensor/list of ints."""
    if hasattr(dims, "_keyset"):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        ds, do = list(range(a.dim() - dims, a.dim())), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        ds, do = dims
        ds = [ds] if isinstance(ds, int) else list(ds)
        do = [do] if isinstance(do, int) else list(do)
    else:
        raise RuntimeError(f"tensordot expects dims to be a list or tuple of length 2, or an int, "
                           f"but got {dims}")
    if out is not None:
        return _ops.aten.tensordot.out(a, b, ds, do, out=out)
    return _ops.aten.tensordot.default(a, b, ds, do)


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002
    """torch.nonzero: an (n, ndim) index tensor, or with ``as_tuple`` one index tensor per dim."""
    if as_tuple:
        return tuple(_ops.aten.nonzero_numpy.default(input))
    if out is not None:
        return _ops.aten.nonzero.out(input, out=out)
    return _ops.aten.nonzero.default(input)


def _tensor_nonzero(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


_Tensor.nonzero = _tensor_nonzero


# -- API surface: torch/functional.py and torch/__init__.py functions (issue 3 follow-up) ---------

__all__ += ["broadcast_tensors", "broadcast_shapes", "atleast_1d", "atleast_2d", "atleast_3d",
            "cdist", "unravel_index", "is_tensor", "is_storage", "typename",
            "set_num_threads", "get_num_threads", "set_num_interop_threads",
            "get_num_interop_threads", "set_default_device", "get_default_device",
            "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
            "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
            "get_deterministic_debug_mode", "set_float32_matmul_precision",
            "get_float32_matmul_precision"]


@_overridable
def broadcast_tensors(*tensors):
    """torch.broadcast_tensors: varargs over aten ``broadcast_tensors``."""
    return tuple(_ops.aten.broadcast_tensors.default(list(tensors)))


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes (torch._refs._broadcast_shapes): ints count as 1-d shapes."""
    from ._core.size import Size
    shapes = tuple((s,) if isinstance(s, int) else s for s in shapes if s is not None)
    if not shapes:
        return Size([])
    for shape in shapes:
        if not isinstance(shape, (list, tuple)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list "
                               f"of ints, got {shape}")
    common = [1] * max(len(s) for s in shapes)
    for arg_idx, shape in enumerate(shapes):
        for idx in range(-1, -1 - len(shape), -1):
            if shape[idx] == common[idx]:
                continue
            if common[idx] == 1:
                if shape[idx] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = shape[idx]
            if shape[idx] != 1 and common[idx] != shape[idx]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[idx]} "
                                   f"at {idx}! Mismatching argument at index {arg_idx} had "
                                   f"{shape}; but expected shape should be broadcastable to "
                                   f"{common}")
    return Size(common)


def _atleast(op):
    @_overridable
    def fn(*tensors):
        # one tensor -> a tensor; several (or one sequence) -> a tuple, as torch/functional.py
        if len(tensors) == 1:
            tensors = tensors[0]
        if isinstance(tensors, _Tensor):
            return op.default(tensors)
        return tuple(op.Sequence(list(tensors)))
    return fn


atleast_1d = _atleast(_ops.aten.atleast_1d)
atleast_2d = _atleast(_ops.aten.atleast_2d)
atleast_3d = _atleast(_ops.aten.atleast_3d)
atleast_1d.__name__, atleast_2d.__name__, atleast_3d.__name__ = "atleast_1d", "atleast_2d", \
    "atleast_3d"

_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


@_overridable
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist: the compute_mode string picks aten ``cdist``'s integer mode."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _ops.aten.cdist.default(x1, x2, p, _CDIST_MODES[compute_mode])


@_overridable
def unravel_index(indices, shape):
    """torch.unravel_index: the coordinates of flat ``indices`` in ``shape``, one tensor per
    dimension (torch/functional.py's ``_unravel_index``)."""
    import itertools
    import operator
    from ._core import dtype as D
    from ._core.size import Size
    from ._factories import tensor
    dt = indices.dtype
    if dt.is_complex or dt.is_floating_point or dt is D.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {dt}")
    if isinstance(shape, int):
        shape = Size([shape])
    elif isinstance(shape, (list, tuple)):
        for dim in shape:
            if not isinstance(dim, int):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                                f"{type(dim)}")
        shape = Size(shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if not all(dim >= 0 for dim in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    coefs = list(reversed(list(itertools.accumulate(reversed(list(shape[1:]) + [1]),
                                                    func=operator.mul))))
    coefs = tensor(coefs, device=indices.device, dtype=D.int64)
    sizes = tensor(list(shape), device=indices.device, dtype=D.int64)
    return (indices.unsqueeze(-1).floor_divide(coefs) % sizes).unbind(-1)


def is_tensor(obj, /):
    return isinstance(obj, _Tensor)


def is_storage(obj, /):
    from ._core.storage import UntypedStorage
    return type(obj) is UntypedStorage


def typename(obj, /):
    """torch.typename: 'torch.FloatTensor' for tensors, else the qualified name."""
    if isinstance(obj, _Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in {"", "builtins"} else f"{module}.{qualname}"


# Threads. ember's parallelism is NumPy's BLAS: set_num_threads sets the BLAS pool size (OpenBLAS
# directly, see ember/_core/blas.py; another BLAS through threadpoolctl when it is installed;
# without either the value is only recorded and reported back).
def _default_threads():
    """PyTorch's default: OMP_NUM_THREADS when set (launchers such as
    ``ember.backends.xeon.run_cpu`` set it per instance), else the cores this process may use.
    Read once, on first use, as PyTorch sizes its pool once (the eager kernels ask for every
    call; the environment and the affinity syscall cost a microsecond)."""
    n = _threads["default"]
    if n is None:
        import os
        omp = os.environ.get("OMP_NUM_THREADS", "")
        if omp.isdigit() and int(omp) > 0:
            n = int(omp)
        else:
            try:
                n = len(os.sched_getaffinity(0))
            except AttributeError:
                n = os.cpu_count() or 1
        _threads["default"] = n
    return n


_threads = {"intra": None, "interop": None, "interop_set": False, "default": None}


def _positive_int(name, n):
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def set_num_threads(int):  # noqa: A002  (PyTorch's parameter name)
    _positive_int("set_num_threads", int)
    _threads["intra"] = int
    from ._core import blas
    if blas.set_threads(int):
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=int, user_api="blas")


def get_num_threads():
    return _threads["intra"] or _default_threads()


def set_num_interop_threads(int):  # noqa: A002
    _positive_int("set_num_interop_threads", int)
    if _threads["interop_set"]:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _threads["interop"], _threads["interop_set"] = int, True


def get_num_interop_threads():
    return _threads["interop"] or _default_threads()


def set_default_device(device):
    """torch.set_default_device: the device factories use when none is given (None: cpu);
    ``with ember.device(...)`` still takes precedence."""
    from ._core import factory_defaults
    from ._core.device import device as _device
    factory_defaults.set_default_device(None if device is None else _device(device))


def get_default_device():
    from ._core import factory_defaults
    from ._core.device import device as _device
    return factory_defaults.current_device() or _device("cpu")


# Determinism: the flags live in ember.backends._context, where kernels without a deterministic
# implementation (alert_not_deterministic) and the empty factories (fill_uninitialized) read
# them.
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Make ops without a deterministic implementation raise (or warn, with ``warn_only``), and
    fill fresh memory from empty factories (``ember.utils.deterministic``)."""
    from .backends._context import ctx
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    ctx.deterministic, ctx.deterministic_warn_only = mode, warn_only


def are_deterministic_algorithms_enabled():
    from .backends._context import ctx
    return ctx.deterministic


def is_deterministic_algorithms_warn_only_enabled():
    from .backends._context import ctx
    return ctx.deterministic_warn_only


def set_deterministic_debug_mode(debug_mode):
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


def set_float32_matmul_precision(precision):
    """The internal precision of float32 matmuls on devices that have a faster reduced mode
    (CUDA's TF32): "highest", "high" or "medium". Shared with
    ``ember.backends.cuda.matmul.allow_tf32`` (True is "high"), as in PyTorch. ember's CPU
    matmuls have no reduced mode and always compute in full float32."""
    from .backends._context import ctx
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.")
        return
    ctx.float32_matmul_precision = precision


def get_float32_matmul_precision():
    from .backends._context import ctx
    return ctx.float32_matmul_precision


__all__ += ["kl_div"]


def kl_div(input, target, reduction=0, *, log_target=False):  # noqa: A002
    """torch.kl_div: aten ``kl_div``, but PyTorch's Python binding defaults ``reduction`` to 0
    (none), not the schema's 1 (mean): ``torch.kl_div(a, b)`` is elementwise."""
    return _ops.aten.kl_div.default(input, target, reduction, log_target=log_target)


__all__ += ["adjoint", "get_device", "detach_"]


def adjoint(input):  # noqa: A002
    return input.adjoint()


def detach_(input):  # noqa: A002
    return input.detach_()


def get_device(input):  # noqa: A002
    """The CUDA device index of ``input``, -1 for a CPU tensor (``Tensor.get_device``)."""
    from ._tensor import Tensor
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.get_device()

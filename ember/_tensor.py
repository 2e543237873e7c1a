"""``ember.Tensor``: the Python face of a TensorImpl.

A tensor is (storage, sizes, strides, storage_offset, dtype, device) plus its dispatch key set and
a version counter shared with its views. No method here computes bytes: operator methods are
generated from ``native_functions.yaml`` (``ember._ops.bindings``) and enter the dispatcher;
what is defined here is metadata access and the Python protocols (``len``, ``iter``, ``bool``,
``repr``, numbers) built on those operators.
"""
import collections
import numbers
import copy
import warnings

import numpy as np

from . import _dlpack, _tensor_str, overrides
from ._core import complex32 as _complex32
from ._core.api_name import as_ember
from ._core import dtype as _dt
from ._core import strides as _st
from ._core.device import (CPU, contiguous_format, device as _device, preserve_format,
                           sparse_coo, sparse_csr, strided)
from ._core.size import Size
from ._core import tensor_impl as _impl
from ._core import storage as _storage
from ._core.storage import UntypedStorage
from ._core.tensor_impl import (  # noqa: F401  (re-exported: kernels and modules import them here)
    _PYTHON_KEYS, _adopt, _alias, _keyset_for, _new, empty_tensor, make_tensor, wrap_array)
from ._core.tensor_impl import data_ptr as _data_ptr
from ._dispatch import tls as _tls
from ._dispatch.keys import QUANTIZED_BITS, SPARSE_BITS, SPARSE_CSR_BITS, DispatchKeySet
from ._ops.overload import ops

# Methods import ember.autograd, _factories and _indexing when called: those modules import
# Tensor from here (the Tensor <-> ops cycle).


class Tensor:
    # ``_storage_`` holds the UntypedStorage, or, for a kernel result nobody has asked the storage
    # of yet, the fresh NumPy array it will adopt (see the ``_storage`` property and wrap_array).
    # (_fw_grad: forward_ad's tangents; __dict__: attributes a program sets on a tensor, as on
    # PyTorch's, created on the first such assignment)
    __slots__ = ("_storage_", "_size", "_stride", "_offset", "_dtype", "_device", "_keyset", "_vc",
                 "_base_", "_np", "_requires_grad", "_grad", "_grad_fn", "_output_nr",
                 "_autograd", "_fw_grad", "_sparse", "_quantizer", "__weakref__", "__dict__")

    # ember.Tensor(...) is PyTorch's legacy constructor: sizes or data, default dtype; a
    # subclass's constructor makes an instance of the subclass (whose __init__ then runs).
    def __new__(cls, *args, device=None):
        from . import _factories  # imports Tensor from here: a true cycle
        t = _factories.legacy_new(cls, args, device)
        return t if cls is Tensor else _rewrap(t, cls)

    def __init__(self, *args, **kwargs):
        pass

    # -- metadata -----------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._size)

    def size(self, dim=None):
        if dim is None:
            return Size(self._size)
        if not self._size:
            _scalar_size_error(dim)
        return self._size[_st.wrap_dim(dim, len(self._size))]

    def stride(self, dim=None):
        if dim is None:
            return tuple(self._stride)
        if not self._size:
            _scalar_size_error(dim)
        return self._stride[_st.wrap_dim(dim, len(self._size))]

    def dim(self):
        return len(self._size)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._size)

    def numel(self):
        return _st.numel(self._size)

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return _st.numel(self._size) * self._dtype.itemsize

    def storage_offset(self):
        return self._offset

    @property
    def _storage(self):
        s = self._storage_
        if s.__class__ is np.ndarray:  # built on first use: most op results are never asked
            s = self._storage_ = _adopt(s, self._device)
        return s

    @_storage.setter
    def _storage(self, storage):
        self._storage_ = storage

    def untyped_storage(self):
        if self._storage_ is None:
            raise NotImplementedError(f"Cannot access storage of {_impl_name(self)}")
        return self._storage

    def data_ptr(self):
        if self._storage_ is None:
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        return _data_ptr(self)

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def layout(self):
        if self._storage_ is not None:
            return strided
        return sparse_coo if self._keyset & SPARSE_BITS else self._sparse.layout

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_meta(self):
        return self._device.type == "meta"

    # Devices ember has no kernels for: a tensor can never live there, but programs test them.
    is_xpu = property(lambda self: self._device.type == "xpu", doc="Is on an XPU device.")
    is_mps = property(lambda self: self._device.type == "mps", doc="Is on an MPS device.")
    is_mtia = property(lambda self: self._device.type == "mtia", doc="Is on an MTIA device.")
    is_ipu = property(lambda self: self._device.type == "ipu", doc="Is on an IPU device.")
    is_maia = property(lambda self: self._device.type == "maia", doc="Is on a MAIA device.")
    is_xla = property(lambda self: self._device.type == "xla", doc="Is on an XLA device.")
    is_vulkan = property(lambda self: self._device.type == "vulkan", doc="Is a Vulkan tensor.")
    is_mkldnn = property(lambda self: False, doc="Is an MKL-DNN (opaque) tensor: never.")
    # (PyTorch's is_sparse_csr is the CSR layout's alone, not CSC/BSR/BSC's)
    is_sparse_csr = property(lambda self: bool(self._keyset & SPARSE_CSR_BITS)
                             and self._sparse.layout is sparse_csr,
                             doc="Has the sparse CSR layout.")
    is_nested = property(lambda self: False, doc="Is a nested tensor: never.")

    @property
    def is_sparse(self):
        return bool(self._keyset & SPARSE_BITS)

    def to_sparse_coo(self):
        """This tensor in the sparse COO layout (PyTorch's Python method: ``to_sparse()``)."""
        return self.to_sparse()

    @property
    def is_quantized(self):
        return bool(self._keyset & QUANTIZED_BITS)

    def get_device(self):
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.is_complex

    def is_signed(self):
        return self._dtype.is_signed

    def is_contiguous(self, memory_format=contiguous_format):
        if memory_format is contiguous_format:
            return _st.is_contiguous(self._size, self._stride)
        if memory_format.__class__.__name__ == "memory_format" and memory_format._name.startswith("channels_last"):
            if memory_format._name == "channels_last":
                return _st.is_channels_last_contiguous_2d(self._size, self._stride)
            return _st.is_channels_last_contiguous_3d(self._size, self._stride)
        raise RuntimeError(f"is_contiguous: unsupported memory format {memory_format}")

    def is_non_overlapping_and_dense(self):
        return _st.is_non_overlapping_and_dense(self._size, self._stride)

    def _dispatch_key_set(self):
        return DispatchKeySet(self._keyset)

    def is_inference(self):
        return self._vc is None

    # -- views and versions -------------------------------------------------------------------
    @property
    def _base(self):
        return self._base_

    def _is_view(self):
        return self._base_ is not None

    @property
    def _version(self):
        if self._vc is None:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    def _bump_version(self):
        vc = self._vc
        if vc is not None:
            vc[0] += 1
        elif not _tls.state.inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                               "allowed.You can make a clone to get a normal tensor before doing "
                               "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
                               "details.")

    def _resize_metadata(self, shape, memory_format=None):
        """Give this tensor a new contiguous shape, growing its storage if needed (resize_); the
        same shape without a memory format keeps its strides, as ATen's resize_impl."""
        shape = tuple(int(s) for s in shape)
        if memory_format is None and shape == self._size:
            return
        if any(s < 0 for s in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                               f"[{', '.join(map(str, shape))}]")
        if memory_format is not None and memory_format._name in ("channels_last",
                                                                 "channels_last_3d"):
            stride = _st.channels_last_strides(shape)
        else:
            stride = _st.contiguous_strides(shape)
        need = (self._offset + _st.numel(shape)) * self._dtype.itemsize
        if need > self._storage.nbytes():
            self._storage._resize_buffer(need)
        self._size, self._stride, self._np = shape, stride, None

    def _nd(self):
        """This tensor as a NumPy array over its storage (cached; CPU only)."""
        a = self._np
        if a is None:
            a = self._np = _np_view(self)
            if _storage._array_users:  # (a storage resized before: see _forget_cached_arrays)
                _storage.note_array_user(self._storage_, self)
        return a

    # -- autograd-facing attributes (behaviour lives in ember.autograd) ---------------------------
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self._grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and self._vc is None and not _tls.state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if self._grad_fn is None:
            self._requires_grad = bool(requires_grad)
            m = self._autograd
            if requires_grad and m is not None and m.views:  # its views made before follow
                from .autograd.views import views_follow_base  # imports Tensor: a true cycle
                views_follow_base(self)
        return self

    def detach_(self):
        """Leave the graph in place: no ``grad_fn``, ``requires_grad`` False, no forward-mode
        tangent (PyTorch's ``VariableTypeManual`` ``detach_``); a view cannot."""
        if self._base_ is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        if hasattr(self, "_fw_grad"):
            del self._fw_grad
        return self

    @property
    def grad(self):
        if self._grad_fn is not None and not (self._autograd is not None
                                              and self._autograd.retains_grad):
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
                "access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for "
                "more information.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._dtype is not self._dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if tuple(value._size) != tuple(self._size):
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def grad_fn(self):
        if self._base_ is not None and self._autograd is not None:  # a view: maybe regenerated
            from .autograd.graph import current_grad_fn  # imports Tensor from here: a true cycle
            return current_grad_fn(self)
        return self._grad_fn

    @property
    def is_leaf(self):
        return self._grad_fn is None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def data(self):
        t = _alias(self, self._size, self._stride, self._offset)
        t._vc = [0] if self._vc is not None else None
        t._base_ = None
        return t

    @data.setter
    def data(self, other):
        for s in ("_storage", "_size", "_stride", "_offset", "_dtype", "_device", "_keyset", "_np"):
            setattr(self, s, getattr(other, s))
        if self._np is not None and _storage._array_users:
            _storage.note_array_user(self._storage_, self)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from . import autograd  # imports Tensor from here: a true cycle
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        from .autograd import graph  # imports Tensor from here: a true cycle
        return graph.register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        from .autograd import graph  # imports Tensor from here: a true cycle
        return graph.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self):
        from .autograd import graph  # imports Tensor from here: a true cycle
        graph.retain_grad(self)

    @property
    def retains_grad(self):
        return self._grad_fn is not None and self._autograd is not None and \
            self._autograd.retains_grad

    @property
    def _backward_hooks(self):
        """The live dict of ``register_hook``'s hooks by handle id (None before the first)."""
        from .autograd import graph  # imports Tensor from here: a true cycle
        return graph.tensor_hooks(self)

    @_backward_hooks.setter
    def _backward_hooks(self, hooks):
        # PyTorch's setter: the tensor's hooks become exactly ``hooks`` (None: none)
        from .autograd import graph  # imports Tensor from here: a true cycle
        if self._grad_fn is not None:
            fn = self._grad_fn
            if fn._tensor_pre_hooks is None:
                fn._tensor_pre_hooks = {}
            fn._tensor_pre_hooks[self._output_nr] = hooks
        elif hooks is not None or self._autograd is not None:
            graph.autograd_meta(self).leaf_hooks = hooks

    @property
    def _post_accumulate_grad_hooks(self):
        """The live dict of ``register_post_accumulate_grad_hook``'s hooks (None before one)."""
        return None if self._autograd is None else self._autograd.post_acc_hooks

    @_post_accumulate_grad_hooks.setter
    def _post_accumulate_grad_hooks(self, hooks):
        from .autograd import graph  # imports Tensor from here: a true cycle
        if hooks is not None or self._autograd is not None:
            graph.autograd_meta(self).post_acc_hooks = hooks

    @property
    def name(self):
        """The autograd variable's name: None unless one was given (PyTorch's Variable name)."""
        return None if self._autograd is None else self._autograd.name

    def _is_zerotensor(self):
        return False  # ember has no ZeroTensor (PyTorch's lazily-zero gradients)

    def is_distributed(self):
        return False  # (PyTorch's THPVariable_is_distributed: always False too)

    # removed from PyTorch in 1.9; the methods stay to say what replaced them
    def eig(self, eigenvectors=False):
        from ._linalg_utils import eig
        return eig(self, eigenvectors=eigenvectors)

    def lstsq(self, other):
        from ._linalg_utils import lstsq
        return lstsq(self, other)

    def solve(self, other):
        from ._linalg_utils import solve
        return solve(self, other)

    def symeig(self, eigenvectors=False):
        from ._linalg_utils import _symeig
        return _symeig(self, eigenvectors=eigenvectors)

    # -- conversions to Python and NumPy --------------------------------------------------------
    def item(self):
        return ops.aten.item.default._call(self)

    def tolist(self):
        if self.is_quantized:  # (its elements are no numbers PyTorch's tolist knows)
            raise RuntimeError("load_scalar: invalid type")
        if self._device.type != "cpu":
            return self.cpu().tolist()
        if self._keyset & (_impl.CONJUGATE | _impl.NEGATIVE):  # the values, not the memory
            return self.detach().resolve_conj().resolve_neg().tolist()
        a = self._nd()
        if self._dtype is _dt.bfloat16 or self._dtype in _dt.FLOAT8:
            a = a.astype(np.float32)
        elif self._dtype is _dt.complex32:
            a = _complex32.to_complex64(a)
        return a.tolist()

    def numpy(self, *, force=False):
        if force:
            return self.detach().cpu().resolve_conj().resolve_neg()._nd()
        if self.is_quantized:
            raise TypeError(f"Got unsupported ScalarType {self._dtype._short}")
        if self._storage_ is None:
            kind = "Sparse" if self._keyset & SPARSE_BITS else \
                "Sparse" + self._sparse.layout._name[7:].capitalize()
            raise TypeError(f"can't convert {kind} layout tensor to numpy. Use "
                            f"Tensor.to_dense() first.")
        if self._device.type != "cpu":
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                            f"Tensor.cpu() to copy the tensor to host memory first.")
        # (c10's check: under no_grad a tensor that requires grad converts)
        if self._requires_grad and _tls.state.grad_enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._keyset & _impl.CONJUGATE:
            raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. Use "
                               "tensor.resolve_conj().numpy() instead.")
        if self._keyset & _impl.NEGATIVE:
            raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. Use "
                               "tensor.resolve_neg().numpy() instead.")
        if self._dtype in (_dt.bfloat16, _dt.complex32) or self._dtype in _dt.FLOAT8:
            raise TypeError(f"Got unsupported ScalarType {self._dtype._short}")
        return self._nd()

    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (``ember._dlpack``). ``stream``: the
        consumer's CUDA stream, made to wait for the current stream's work (-1: no wait)."""
        return _dlpack.tensor_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _dlpack.dl_device_of(self)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    # NumPy's binary operators defer to a higher priority: np.float64(2) * t is t.__rmul__
    # (a tensor, on the autograd graph), not an array made through __array__
    __array_priority__ = 1000

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A ufunc's result on a tensor (``np.sin(t)``) as a tensor sharing it, as PyTorch's;
        PyTorch turns a bool result into uint8, a workaround from before bool tensors, kept."""
        if overrides.has_torch_function_unary(self):
            return overrides.handle_torch_function(Tensor.__array_wrap__, (self,), self,
                                                   array=array)
        if array.dtype == bool:
            array = array.astype("uint8")
        from ._factories import from_numpy
        return from_numpy(array)

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def __iter__(self):
        if not self._size:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                               if n else "Boolean value of Tensor with no values is ambiguous")
        return bool(self.item())

    __nonzero__ = __bool__

    def __contains__(self, element):
        """``element in t``: whether any entry equals it (not Python's row-by-row scan)."""
        if isinstance(element, (Tensor, numbers.Number)):
            return bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed "
                           f"in a {type(element)}.")

    def __reversed__(self):
        return self if self.dim() == 0 else self.flip(0)

    def __int__(self):
        return int(_conversion_value(self, "int64_t"))

    __long__ = __int__

    def __float__(self):
        return float(_conversion_value(self, "double"))

    def __complex__(self):
        return complex(_conversion_value(self, None))

    def __index__(self):
        if self._dtype._category > _dt.INTEGRAL or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None):
        return _tensor_str._str(self, tensor_contents=tensor_contents)

    def __format__(self, spec):
        if not self._size:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            prefix = "torch." if self._device.type == "cpu" else f"torch.{self._device.type}."
            if self._keyset & SPARSE_BITS:
                prefix += "sparse."
            return f"{prefix}{self._dtype._short}Tensor"
        from ._legacy_tensor_types import tensortype
        if isinstance(dtype, tensortype):  # torch.DoubleTensor, torch.cuda.LongTensor
            return self.to(dtype._device_type, dtype.dtype)
        if isinstance(dtype, str):  # "torch.DoubleTensor", "torch.cuda.LongTensor"
            prefix, _, name = dtype.rpartition(".")
            dtype = next(d for d in _dt.ALL_DTYPES if d._short == name.replace("Tensor", ""))
            return self.to("cuda" if prefix.endswith(".cuda") else "cpu", dtype)
        return self.to(dtype)

    # -- device and dtype moves -----------------------------------------------------------------
    def to(self, *args, **kwargs):
        from . import _factories  # imports Tensor from here: a true cycle
        return _factories.tensor_to(self, *args, **kwargs)

    def cpu(self, memory_format=preserve_format):
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking=False, memory_format=preserve_format):
        dev = _device("cuda", device if isinstance(device, int) else None) if not isinstance(
            device, (str, _device)) else _device(device)
        return self.to(dev, non_blocking=non_blocking, memory_format=memory_format)

    def float(self, memory_format=preserve_format):
        return self.to(_dt.float32, memory_format=memory_format)

    def double(self, memory_format=preserve_format):
        return self.to(_dt.float64, memory_format=memory_format)

    def half(self, memory_format=preserve_format):
        return self.to(_dt.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=preserve_format):
        return self.to(_dt.bfloat16, memory_format=memory_format)

    def int(self, memory_format=preserve_format):
        return self.to(_dt.int32, memory_format=memory_format)

    def long(self, memory_format=preserve_format):
        return self.to(_dt.int64, memory_format=memory_format)

    def short(self, memory_format=preserve_format):
        return self.to(_dt.int16, memory_format=memory_format)

    def char(self, memory_format=preserve_format):
        return self.to(_dt.int8, memory_format=memory_format)

    def byte(self, memory_format=preserve_format):
        return self.to(_dt.uint8, memory_format=memory_format)

    def bool(self, memory_format=preserve_format):
        return self.to(_dt.bool_, memory_format=memory_format)

    def cfloat(self, memory_format=preserve_format):
        return self.to(_dt.complex64, memory_format=memory_format)

    def cdouble(self, memory_format=preserve_format):
        return self.to(_dt.complex128, memory_format=memory_format)

    # -- shape helpers that are Python-level in PyTorch too --------------------------------------
    @property
    def T(self):
        return self.permute(*range(self.dim() - 1, -1, -1))

    @property
    def mT(self):
        if self.dim() < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    def _conj_transpose(self, warn_name, error_name):
        """The conjugate transpose of the last two dimensions (``mH``, ``adjoint``), with the
        messages PyTorch gives each name for fewer than two dimensions."""
        if self.dim() == 0:
            warnings.warn(f"{warn_name} is deprecated on 0-D tensors. Consider using x.conj().")
            return self.conj()
        if self.dim() < 2:
            raise RuntimeError(f"tensor.{error_name} is only supported on matrices or batches of "
                               f"matrices. Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1).conj()

    @property
    def mH(self):
        return self._conj_transpose("Tensor.mH", "mH")

    def adjoint(self):
        return self._conj_transpose("adjoint()", "adjoint()")

    @property
    def H(self):
        if self.dim() == 0:
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
            return self.conj()
        if self.dim() != 2:
            extra = (". For batches of matrices, consider using tensor.mH" if self.dim() > 2
                     else ".")
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.dim()}-D tensor{extra}")
        return self.transpose(-2, -1).conj()

    # -- complex parts: views (aten::real / aten::imag); assigning writes through, as in PyTorch
    @property
    def real(self):
        return ops.aten.real.default(self)

    @real.setter
    def real(self, value):
        self.real.copy_(value)

    @property
    def imag(self):
        return ops.aten.imag.default(self)

    @imag.setter
    def imag(self, value):
        self.imag.copy_(value)

    def expand_as(self, other):
        return self.expand(other._size)

    def view_as(self, other):
        return self.view(other._size)

    def reshape_as(self, other):
        return self.reshape(other._size)

    def type_as(self, other):
        return self.to(other._dtype)

    def __getitem__(self, index):
        from . import _indexing  # imports Tensor from here: a true cycle
        return _indexing.getitem(self, index)

    def __setitem__(self, index, value):
        from . import _indexing  # imports Tensor from here: a true cycle
        _indexing.setitem(self, index, value)

    def __reduce_ex__(self, proto):
        from . import _factories  # imports Tensor from here: a true cycle
        from .utils.hooks import warn_if_has_hooks
        warn_if_has_hooks(self)  # hooks are never pickled (PyTorch's _reduce_ex_internal)
        if self.is_quantized:  # its storage and quantizer, rebuilt as torch.load rebuilds it
            from .serialization import _quantizer_params, _rebuild_qtensor
            return (_rebuild_qtensor, ((self._storage, self._dtype), self._offset,
                                       tuple(self._size), tuple(self._stride),
                                       _quantizer_params(self), self._requires_grad,
                                       collections.OrderedDict()))
        return _factories.reduce_tensor(self)

    def dim_order(self, *, ambiguity_check=False):
        """The dims from outermost to innermost in memory (by stride; ties keep their order):
        ``(0, 2, 3, 1)`` for a channels-last image batch. ``ambiguity_check`` raises when
        size-1 or equal strides make the order ambiguous."""
        if not isinstance(ambiguity_check, bool):
            raise TypeError("ambiguity_check must be bool")
        if ambiguity_check:
            strides = [s for s, n in zip(self._stride, self._size) if n != 1]
            if len(set(strides)) != len(strides) or any(n == 1 for n in self._size):
                raise RuntimeError("The tensor does not have unique dim order, or cannot map "
                                   "to exact one of the given memory formats.")
        return tuple(sorted(range(len(self._size)), key=lambda d: -self._stride[d]))

    def module_load(self, other, assign=False):
        """What ``Module.load_state_dict`` puts in place of this parameter or buffer:
        ``other`` itself with ``assign``, else this tensor with ``other``'s values."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def new(self, *args, device=None):
        """The legacy constructor of this tensor's type, on its device: ``x.new(2, 3)``
        uninitialized, ``x.new([1, 2])`` from data, ``x.new()`` empty, ``x.new(y)`` an alias of
        a tensor of the same type (see ``_legacy_tensor_types``)."""
        from ._legacy_tensor_types import construct
        return construct(self._dtype, self._device.type, args,
                         self._device if device is None else device)

    def resize(self, *sizes):
        """Deprecated: a tensor of ``sizes`` holding this tensor's elements (their number must
        not change), on the autograd graph."""
        if overrides.has_torch_function_unary(self):
            return overrides.handle_torch_function(Tensor.resize, (self,), self, *sizes)
        warnings.warn("non-inplace resize is deprecated")
        from .autograd._functions import Resize
        return Resize.apply(self, sizes)

    def resize_as(self, tensor):
        """Deprecated: :meth:`resize` to ``tensor``'s size."""
        if overrides.has_torch_function_variadic(self, tensor):
            return overrides.handle_torch_function(Tensor.resize_as, (self, tensor), self,
                                                   tensor)
        warnings.warn("non-inplace resize_as is deprecated")
        from .autograd._functions import Resize
        return Resize.apply(self, tensor.size())

    def const_data_ptr(self):
        return self.data_ptr()

    def is_set_to(self, tensor):
        """Whether both tensors view the same storage with the same offset, sizes and strides."""
        return (self.untyped_storage() is tensor.untyped_storage()
                and self._offset == tensor._offset and self._size == tensor._size
                and self._stride == tensor._stride)

    def storage_type(self):
        """The legacy storage class of this tensor's dtype (``ember.FloatStorage``)."""
        from .storage import _STORAGE_NAMES, LEGACY_STORAGES
        return LEGACY_STORAGES[_STORAGE_NAMES[self._dtype]]

    def storage(self):
        """The deprecated ``TypedStorage`` view of this tensor's storage (see
        ``ember/storage.py``); ``untyped_storage()`` is the storage itself."""
        from . import storage
        storage._warn_typed_storage_removal(stacklevel=2)
        return storage.TypedStorage(wrap_storage=self.untyped_storage(), dtype=self._dtype,
                                    _internal=True)

    def _typed_storage(self):
        """``storage()`` without its deprecation warning (what PyTorch's own code calls)."""
        from . import storage
        return storage.TypedStorage(wrap_storage=self.untyped_storage(), dtype=self._dtype,
                                    _internal=True)

    def apply_(self, callable):
        """Replace each element by ``callable(element)`` (CPU tensors only, as in PyTorch; a
        Python call per element)."""
        if self._device.type != "cpu":
            raise TypeError("apply_ is only implemented on CPU tensors")
        values = [callable(v) for v in self.detach().reshape(-1).tolist()]
        from ._factories import tensor
        return self.copy_(tensor(values, dtype=self._dtype).view(self._size))

    def map_(self, tensor, callable):
        """Replace each element by ``callable(element, other)``, ``other`` the element of
        ``tensor`` (broadcast to this shape) at the same place (CPU tensors only)."""
        if self._device.type != "cpu" or tensor._device.type != "cpu":
            raise TypeError("map_ is only implemented on CPU tensors")
        mine = self.detach().reshape(-1).tolist()
        theirs = tensor.detach().expand(self._size).reshape(-1).tolist()
        from ._factories import tensor as _tensor
        values = [callable(a, b) for a, b in zip(mine, theirs)]
        return self.copy_(_tensor(values, dtype=self._dtype).view(self._size))

    def share_memory_(self):
        """Move this tensor's storage into shared memory (see UntypedStorage.share_memory_);
        returns the tensor."""
        self._storage.share_memory_()
        return self

    def is_shared(self):
        return self._storage.is_shared()

    def __deepcopy__(self, memo):
        """A new leaf with a copy of the data, and, as PyTorch's, of ``requires_grad``, the
        gradient and the attributes set on this tensor."""
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                "be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        from . import autograd
        with autograd.no_grad():
            new = self.clone()
        memo[id(self)] = new
        if self._requires_grad:
            new.requires_grad_()
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        if self.__dict__:
            new.__dict__ = copy.deepcopy(self.__dict__, memo)
        return new

    # -- extension points: __torch_function__, __torch_dispatch__, subclass construction --------
    # (behaviour lives in ember/overrides.py and ember/utils/_python_dispatch.py)
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return overrides._default_torch_function(cls, func, types, args, kwargs)

    @staticmethod
    def __torch_dispatch__(func, types, args=(), kwargs=None):
        return NotImplemented

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        overrides._overrides_cache.clear()
        # From now on bindings check their arguments' types. ember's own subclasses opt out of
        # __torch_function__ (Parameter, Buffer) or turn the check on when instantiated.
        if not as_ember(cls.__module__).startswith("ember.") and overrides._type_overrides(cls):
            overrides._TF_ON.append(cls)

    def as_subclass(self, cls):
        """A ``cls`` instance sharing this tensor's data and staying on its autograd graph."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, "
                            f"not {type(cls).__name__}")
        if self._requires_grad and _tls.state.grad_enabled:
            with overrides.DisableTorchFunctionSubclass():
                src = ops.aten.alias.default._call(self)
        else:
            src = _alias(self, self._size, self._stride, self._offset)
            src._base_ = self._base_
        return _rewrap(src, cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None,
                       dispatch_device=False, dispatch_layout=False, _extra_dispatch_keys=None,
                       storage_size=None):
        """A ``cls`` instance aliasing ``data`` (detached: shares storage and version counter)."""
        src = _alias(data, data._size, data._stride, data._offset)
        src._base_ = data._base_
        t = _rewrap(src, cls)
        # (PyTorch sets the flag in C++, out of the new subclass's __torch_function__'s reach)
        with overrides.DisableTorchFunction():
            t.requires_grad_(require_grad)
        return t

    @staticmethod
    def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None,
                               dtype=None, layout=strided, device=None, pin_memory=False,
                               requires_grad=False, dispatch_sizes_strides_policy=None,
                               dispatch_device=False, dispatch_layout=False,
                               _extra_dispatch_keys=None, storage_size=None):
        """A ``cls`` instance with metadata only (no data): the outer tensor of a wrapper
        subclass whose ``__torch_dispatch__`` computes on the tensors it wraps."""
        dev = CPU if device is None else _device(device)
        dtype = _dt.get_default_dtype() if dtype is None else dtype
        size = tuple(int(s) for s in size)
        stride = _st.contiguous_strides(size) if strides is None else tuple(strides)
        offset = 0 if storage_offset is None else int(storage_offset)
        nbytes = _st.storage_extent(size, stride, offset) * dtype.itemsize
        storage = UntypedStorage.__new__(UntypedStorage)
        storage._buf = storage._bytes = None
        storage._nbytes = nbytes if storage_size is None else storage_size
        storage.device = dev
        storage._resizable = False
        storage._allocator = None
        t = make_tensor(storage, size, stride, offset, dtype, dev, cls=cls)
        _note_subclass(cls)
        if cls.__torch_dispatch__ is not Tensor.__torch_dispatch__:
            t._keyset |= _PYTHON_KEYS
        if requires_grad:
            t.requires_grad_(True)
        return t


# The slots that hold the TensorImpl's fields (what a new Python object over the same tensor
# copies): not the weak references nor the attributes of one Python object.
IMPL_SLOTS = tuple(n for n in Tensor.__slots__ if n not in ("__weakref__", "__dict__"))


def _set_obj_state(obj, state):
    """Set the attributes a pickled tensor carried (``torch._utils._set_obj_state``): a dict,
    or a ``(dict, slots)`` pair; Python 3.11+ pickles an unused ``__dict__`` as None."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for part in (dict_state, slots_state):
        for k, v in (part or {}).items():
            setattr(obj, k, v)
    return obj


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor with Python state (``torch._tensor._rebuild_from_type_v2``): ``func(*args)``
    as ``new_type``, then its state through the class's ``__setstate__`` or as attributes.
    Under ``weights_only`` the unpickler has already refused a ``new_type`` not allowed."""
    ret = func(*args)
    if type(ret) is not new_type:
        ret = ret.as_subclass(new_type)
    if getattr(ret.__class__, "__setstate__", None) is not None:
        ret.__setstate__(state)
        return ret
    return _set_obj_state(ret, state)


def requires_grad_of_factory(t, requires_grad):
    """``t``, set to require grad when a factory's (or ``nn.Parameter``'s) ``requires_grad`` asks:
    PyTorch's factories refuse a dtype that cannot in other words than ``requires_grad_``."""
    if not requires_grad:
        return t
    if not (t._dtype.is_floating_point or t._dtype.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    return t.requires_grad_()


def _rewrap(src, cls):
    """``src``'s TensorImpl (storage, metadata, autograd fields) as a ``cls`` instance; a class
    with a ``__torch_dispatch__`` gets the Python keys in its key set."""
    if cls is Tensor and src.__class__ is Tensor:
        return src
    t = _new(cls)
    src._storage  # noqa: B018  (materialize it: both tensors must share one storage object)
    for name in IMPL_SLOTS:
        if name not in ("_fw_grad", "_sparse", "_quantizer") or hasattr(src, name):
            setattr(t, name, getattr(src, name))
    if cls.__torch_dispatch__ is not Tensor.__torch_dispatch__:
        t._keyset |= _PYTHON_KEYS
    _note_subclass(cls)
    return t


def _note_subclass(cls):
    if cls not in overrides._TF_ON and overrides._type_overrides(cls):
        overrides._TF_ON.append(cls)


def _conversion_value(t, c_type):
    """The one value ``int()``/``float()``/``complex()`` convert. As in PyTorch, the tensor must
    have one element, and a nonzero imaginary part cannot be dropped (to C type ``c_type``)."""
    if t.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    value = t.item()
    if c_type is not None and isinstance(value, complex):
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
        value = value.real
    return value


def _scalar_size_error(dim):
    raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _impl_name(t):
    """PyTorch's TensorImpl class of a tensor without storage, as its errors name it."""
    return "SparseTensorImpl" if t._keyset & SPARSE_BITS else "SparseCsrTensorImpl"


def _np_view(t):
    if t._device.type != "cpu":
        raise RuntimeError(f"a tensor on {t._device} has no host memory to view")
    if 0 in t._size:  # no elements: the offset may lie past an empty storage (zeros(0, 3)[:, 1])
        return np.empty(t._size, t._dtype._np)
    if t._storage_ is None:  # a sparse tensor reached a dense kernel
        raise NotImplementedError(f"Cannot access storage of {_impl_name(t)}")
    isz = t._dtype.itemsize
    buf = t._storage._data()
    return np.ndarray(t._size, t._dtype._np, buf, t._offset * isz, tuple(s * isz for s in t._stride))


_impl.set_tensor_class(Tensor)

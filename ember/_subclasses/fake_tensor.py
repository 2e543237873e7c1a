"""``FakeTensor`` and ``FakeTensorMode``: tensors with metadata and no data.

A FakeTensor carries sizes, strides, dtype, a version counter and a *claimed* device (``cpu`` or
``cuda``, with or without a GPU); its storage is a meta storage. Under :class:`FakeTensorMode`
(a TorchDispatchMode) every operator is run on the Meta kernels: fake arguments are replaced by
meta tensors sharing their storage, a ``device=`` argument by ``meta``, and the meta results are
wrapped back as FakeTensors on the device PyTorch would pick (the ``device=`` argument, else the
common device of the tensor arguments). In-place and out= results are the argument objects
themselves; views keep their base. An op on a FakeTensor outside the mode re-enters its mode.

Ops whose output shape or value depends on the data cannot run: ``item`` raises
:class:`DataDependentOutputException`, ``nonzero`` (and boolean-mask indexing)
:class:`DynamicOutputShapeException`. Custom ops run their ``register_fake`` function instead
of a Meta kernel. Compile capture and ``opcheck`` run on this.
"""
import weakref

from .._core.device import META, device as _device
from .._core.tensor_impl import CONJUGATE, NEGATIVE
from .._tensor import Tensor, _keyset_for, _PYTHON_KEYS, _rewrap
from ..overrides import _disabled_torch_function_impl
from ..utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass
from ..utils._pytree import tree_map

__all__ = ["FakeTensor", "FakeTensorMode", "is_fake", "DataDependentOutputException",
           "DynamicOutputShapeException", "UnsupportedFakeTensorException"]


class UnsupportedFakeTensorException(RuntimeError):
    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class MetadataMismatchError(RuntimeError):
    """Two tensors' metadata differ (``torch._prims_common.compare_tensor_meta``)."""


class DynamicOutputShapeException(RuntimeError):
    """The op's output shape depends on the values (``nonzero``, boolean masks)."""

    def __init__(self, func):
        super().__init__(func)
        self.func = func


class DataDependentOutputException(RuntimeError):
    """The op's output is a Python value computed from the data (``item``)."""

    def __init__(self, func):
        super().__init__(func)
        self.func = func


# Ops PyTorch tags data_dependent_output / dynamic_output_shape (besides the yaml tags).
_DATA_DEPENDENT = {"_local_scalar_dense", "item", "equal", "is_nonzero", "allclose", "tolist"}
_DYNAMIC_SHAPE = {"nonzero", "argwhere", "masked_select", "unique", "_unique", "_unique2",
                  "unique_consecutive", "unique_dim", "repeat_interleave.Tensor",
                  "bincount"}


class FakeTensor(Tensor):
    """A tensor with metadata only, on a claimed device; see the module docstring."""

    __torch_function__ = _disabled_torch_function_impl

    @property
    def fake_device(self):
        return self._device

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Outside its mode: find the mode from the arguments and run the op under it.
        mode = None
        for a in _tensors(args, kwargs or {}):
            if isinstance(a, FakeTensor):
                mode = a.fake_mode
                break
        with mode:
            return func(*args, **(kwargs or {}))

    def __repr__(self, *, tensor_contents=None):
        from .._core.dtype import get_default_dtype
        parts = ["..."]
        if self._device.type != "cpu":
            parts.append(f"device='{self._device}'")
        parts.append(f"size={tuple(self._size)}")
        if self._dtype is not get_default_dtype():
            parts.append(f"dtype={self._dtype}")
        if self._requires_grad:
            parts.append("requires_grad=True")
        return f"FakeTensor({', '.join(parts)})"

    def tolist(self):
        raise DataDependentOutputException("tolist")


def is_fake(x):
    """Whether ``x`` is a FakeTensor or wraps one (a traceable wrapper subclass whose inner
    tensors are fake, a FunctionalTensor, a functionalization or functorch wrapper), as
    PyTorch's."""
    from .._functorch.wrapper_tensor import WrapperTensor
    from .functional_tensor import FunctionalTensor
    if isinstance(x, FakeTensor):
        return True
    if is_traceable_wrapper_subclass(x):
        attrs, _ = type(x).__tensor_flatten__(x)
        got_fake = None
        for attr in attrs:
            inner = getattr(x, attr)
            if isinstance(inner, Tensor):
                fake = is_fake(inner)
                if got_fake is None:
                    got_fake = fake
                elif got_fake != fake:
                    raise AssertionError("got mixed fake and real tensors!")
        return got_fake or False
    if isinstance(x, FunctionalTensor):
        return is_fake(x.elem)
    if isinstance(x, WrapperTensor):
        return is_fake(x._value)
    return False


def _tensors(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Tensor):
                    yield x
        elif isinstance(v, Tensor):
            yield v


def _claimed(dev):
    dev = _device(dev)
    if dev.type == "cuda" and dev.index is None:
        return _device("cuda", 0)  # FakeTensors name the current CUDA device, as PyTorch's do
    return dev


_MATH_BITS = CONJUGATE | NEGATIVE


def _wrap(mode, meta, dev):
    """A FakeTensor sharing ``meta``'s storage and metadata, claiming device ``dev``."""
    t = _rewrap(meta, FakeTensor)
    t._device = dev
    # (with the conjugate and negative bits, which the meta kernels' views keep)
    t._keyset = _keyset_for(dev, meta._vc is None) | _PYTHON_KEYS | (meta._keyset & _MATH_BITS)
    t.fake_mode = mode
    return t


def _meta_mirror(fake):
    """A plain meta tensor over the fake's storage (same TensorImpl fields, device meta)."""
    m = _plain_copy(fake)
    m._device = META
    m._keyset = _keyset_for(META, fake._vc is None) | (fake._keyset & _MATH_BITS)
    m._base_ = fake._base_ if fake._base_ is not None else fake
    return m


def _plain_copy(t):
    from .._tensor import IMPL_SLOTS, _new
    m = _new(Tensor)
    for name in IMPL_SLOTS:
        if hasattr(t, name):  # _fw_grad is set only on duals
            setattr(m, name, getattr(t, name))
    return m


class FakeTensorMode(TorchDispatchMode):
    """Inside ``with FakeTensorMode():`` every op computes metadata only; see module docstring."""

    def __init__(self, *, allow_fallback_kernels=True, allow_non_fake_inputs=False,
                 shape_env=None, static_shapes=None, export=False):
        super().__init__()
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.shape_env = shape_env
        # with a ShapeEnv, tensors get symbolic sizes unless static_shapes=True
        self.static_shapes = (shape_env is None) if static_shapes is None else static_shapes
        self._memo = {}  # id(real tensor) -> (weakref to it, its FakeTensor)

    # -- conversion -------------------------------------------------------------------------
    def from_tensor(self, t, *, static_shapes=None, source=None, symbolic_context=None,
                    trace=True):
        """The FakeTensor for a real tensor (the same one each time for the same tensor)."""
        hit = self._memo.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
        if isinstance(t, FakeTensor):
            if t.fake_mode is not self:
                raise UnsupportedFakeTensorException("FakeTensor from another FakeTensorMode")
            return t
        meta = _plain_copy(t)
        from .._core.storage import meta_storage
        meta._storage = meta_storage(t._storage.nbytes())
        meta._device = META
        meta._base_ = None
        meta._np = None
        meta._grad = None
        meta._grad_fn = None
        meta._autograd = None
        meta._requires_grad = False
        if self.shape_env is not None and t._size and not (
                static_shapes if static_shapes is not None else self.static_shapes):
            # symbolic sizes: PyTorch's default makes every dim dynamic (duck-sized)
            from ..fx.experimental.symbolic_shapes import DimDynamic
            dims = symbolic_context.dynamic_sizes if symbolic_context is not None \
                else [DimDynamic.DUCK] * len(t._size)
            ranges = symbolic_context.constraint_sizes if symbolic_context is not None \
                else None
            meta._size, meta._stride = self.shape_env.create_symbolic_sizes_strides(
                t, source, dims, ranges)
        fake = _wrap(self, meta, _claimed(t._device))
        fake._vc = [0] if t._vc is not None else None
        if t._requires_grad:
            fake.requires_grad_(True)
        self._memo[id(t)] = (weakref.ref(t), fake)
        return fake

    from_real_tensor = from_tensor

    # -- the handler ------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._opname
        if name == "lift_fresh":
            # torch.tensor's new constant (PyTorch's lift_fns): its FakeTensor
            return self.from_tensor(args[0])
        if name in _DATA_DEPENDENT or "data_dependent_output" in func.tags:
            raise DataDependentOutputException(func)
        if name in _DYNAMIC_SHAPE or f"{name}.{func._overloadname}" in _DYNAMIC_SHAPE or \
                (name == "index" and _has_mask_index(args)):
            raise DynamicOutputShapeException(func)
        for t in _tensors(args, kwargs):
            if not isinstance(t, FakeTensor):
                # 0-dim CPU tensors are constants (autograd formulas make them): converted
                if not self.allow_non_fake_inputs and (t._size or t._device.type != "cpu"):
                    raise AssertionError(
                        f"Please convert all Tensors to FakeTensors first or instantiate "
                        f"FakeTensorMode with 'allow_non_fake_inputs'. Found in {func}")
            elif t.fake_mode is not self:
                raise AssertionError("Mixing fake modes NYI")
        from .._library.custom_ops import fake_impl_for
        fake_fn = fake_impl_for(func)
        if fake_fn is not None:
            from .._library.fake_impl import FakeImplCtx, set_ctx_getter
            ctx = FakeImplCtx(self, func)
            # factories inside the fake impl make FakeTensors too
            with self, set_ctx_getter(lambda: ctx):
                return fake_fn(*args, **kwargs)
        return self._run_on_meta(func, args, kwargs)

    def _run_on_meta(self, func, args, kwargs):
        originals = {}  # id(meta mirror) -> the FakeTensor it stands for

        def to_meta(x):
            if isinstance(x, Tensor):
                fake = x if isinstance(x, FakeTensor) else self.from_tensor(x)
                m = _meta_mirror(fake)
                originals[id(m)] = fake
                return m
            return x
        meta_args = tree_map(to_meta, args)
        meta_kwargs = tree_map(to_meta, kwargs)
        dev = self._out_device(func, args, kwargs)
        for i, a in enumerate(func._schema.arguments):  # compute on meta, whatever the device
            if a.name == "device":
                if a.kwarg_only:
                    meta_kwargs["device"] = META
                elif i < len(meta_args) and meta_args[i] is not None:
                    meta_args = meta_args[:i] + (META,) + meta_args[i + 1:]
        out = func(*meta_args, **meta_kwargs)

        def to_fake(x):
            if isinstance(x, Tensor):
                orig = originals.get(id(x))
                if orig is not None:  # in-place / out=: the argument itself, with the metadata
                    for name in _GEOMETRY:  # an in-place view op (squeeze_, t_) gave it
                        setattr(orig, name, getattr(x, name))
                    return orig
                return _wrap(self, x, dev)
            return x
        return tree_map(to_fake, out)

    def _out_device(self, func, args, kwargs):
        """PyTorch's rule: an explicit ``device=``; else the common device of the tensor
        arguments (0-dim CPU tensors may mix with another device); else the default."""
        names = [a.name for a in func._schema.arguments]
        dev = kwargs.get("device")
        if dev is None and "device" in names and names.index("device") < len(args):
            dev = args[names.index("device")]
        if dev is not None:
            return _claimed(dev)
        common = None
        for t in _tensors(args, kwargs):
            d = t._device
            if common is None or (common.type == "cpu" and d.type != "cpu"):
                common = d
        if common is None:
            from .._core.factory_defaults import current_device
            common = current_device() or _device("cpu")
        return _claimed(common)


_GEOMETRY = ("_storage", "_size", "_stride", "_offset")


def _has_mask_index(args):
    from .._core import dtype as D
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, Tensor) and i._dtype in (D.bool_, D.uint8) for i in indices)

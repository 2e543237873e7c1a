"""CompositeExplicitAutograd factories built from ``empty`` plus a fill or a sampler, as PyTorch
builds them: the ``*_like`` and ``new_*`` families and the random factories (rand, randn,
randint, normal(float, float, size)). They serve every device, because the ops they call have a
kernel for each.
"""
from ..._core import strides as _st
from ..._core.dtype import int64
from ..._dispatch.keys import K, bit
from ..._dispatch.tls import state as _tls
from ..._ops.overload import ops

_AD_INPLACE_OR_VIEW = bit(K.ADInplaceOrView)


def fill_new(op, *args):
    """``op(*args)``: an in-place op writing a tensor this kernel has just allocated, run below
    ADInplaceOrView as ATen's kernels are (under their autograd layer's
    AutoDispatchBelowADInplaceOrView guard), so that the new tensor starts at version 0."""
    ex = _tls.excluded
    _tls.excluded = ex | _AD_INPLACE_OR_VIEW
    try:
        return op(*args)
    finally:
        _tls.excluded = ex


def _empty(size, dtype, layout, device, pin_memory, memory_format=None):
    return ops.aten.empty.memory_format._call(size, dtype, layout, device, pin_memory, memory_format)


def empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dtype = dtype or self._dtype
    device = device or self._device
    if memory_format is None or memory_format._name == "preserve_format":
        # a dense input keeps its exact strides; anything else gets the layout it resembles
        stride = _st.suggest_memory_format_strides(self._size, self._stride)
        return ops.aten.empty_strided.default._call(self._size, stride, dtype, layout, device,
                                                   pin_memory)
    return _empty(self._size, dtype, layout, device, pin_memory, memory_format)


def zeros_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    r = ops.aten.empty_like.default._call(self, dtype, layout, device, pin_memory, memory_format)
    return ops.aten.zero_.default._call(r)


def full_like(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
    r = ops.aten.empty_like.default._call(self, dtype, layout, device, pin_memory, memory_format)
    return ops.aten.fill_.Scalar._call(r, fill_value)


def ones_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return full_like(self, 1, dtype, layout, device, pin_memory, memory_format)


def rand_like_generator(self, generator, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    r = empty_like(self, dtype, layout, device, pin_memory, memory_format)
    return ops.aten.uniform_.default._call(r, 0.0, 1.0, generator)


def rand_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return rand_like_generator(self, None, dtype, layout, device, pin_memory, memory_format)


def randn_like_generator(self, generator, dtype=None, layout=None, device=None, pin_memory=None,
                         memory_format=None):
    r = empty_like(self, dtype, layout, device, pin_memory, memory_format)
    return ops.aten.normal_.default._call(r, 0.0, 1.0, generator)


def randn_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return randn_like_generator(self, None, dtype, layout, device, pin_memory, memory_format)


def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return _empty(size, dtype or self._dtype, layout, device or self._device, pin_memory)


def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return ops.aten.zero_.default._call(new_empty(self, size, dtype, layout, device, pin_memory))


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    r = new_empty(self, size, dtype, layout, device, pin_memory)
    return ops.aten.fill_.Scalar._call(r, fill_value)


def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return new_full(self, size, 1, dtype, layout, device, pin_memory)


def rand_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    r = _empty(size, dtype, layout, device, pin_memory)
    return ops.aten.uniform_.default._call(r, 0.0, 1.0, generator)


def rand(size, dtype=None, layout=None, device=None, pin_memory=None):
    return rand_generator(size, None, dtype, layout, device, pin_memory)


def randn_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    r = _empty(size, dtype, layout, device, pin_memory)
    return ops.aten.normal_.default._call(r, 0.0, 1.0, generator)


def randn(size, dtype=None, layout=None, device=None, pin_memory=None):
    return randn_generator(size, None, dtype, layout, device, pin_memory)


def randint_low_generator(low, high, size, generator, dtype=int64, layout=None, device=None,
                          pin_memory=None):
    if low >= high:  # checked here too so that meta tensors (whose random_ checks nothing) fail
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    r = _empty(size, dtype or int64, layout, device, pin_memory)
    return getattr(ops.aten.random_, "from")._call(r, low, high, generator)


def randint_low(low, high, size, dtype=int64, layout=None, device=None, pin_memory=None):
    return randint_low_generator(low, high, size, None, dtype, layout, device, pin_memory)


def randint_generator(high, size, generator, dtype=int64, layout=None, device=None,
                      pin_memory=None):
    return randint_low_generator(0, high, size, generator, dtype, layout, device, pin_memory)


def randint(high, size, dtype=int64, layout=None, device=None, pin_memory=None):
    return randint_low_generator(0, high, size, None, dtype, layout, device, pin_memory)


def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None,
                       pin_memory=None):
    r = _empty(size, dtype, layout, device, pin_memory)
    return ops.aten.normal_.default._call(r, mean, std, generator)


# ---------------------------------------------------------------------------------------------
# linspace/logspace with tensor bounds: the 0-dim tensors' values passed to the Scalar overload
# (RangeFactories.cpp's CompositeExplicitAutograd kernels, with their dimension checks).

def _bound_dims(name, start=None, end=None):
    if start is not None and end is not None:
        if start.dim() != 0 or end.dim() != 0:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                               f"start with {start.dim()} dimension(s) and end with {end.dim()} "
                               f"dimension(s).")
    elif start is not None and start.dim() != 0:
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                           f"start with {start.dim()} dimension(s).")
    elif end is not None and end.dim() != 0:
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                           f"end with {end.dim()} dimension(s).")


def _item(t):
    return ops.aten.item.default._call(t)


def linspace_tensor_tensor(start, end, steps, dtype=None, layout=None, device=None,
                           pin_memory=None):
    _bound_dims("linspace", start, end)
    return ops.aten.linspace.default._call(_item(start), _item(end), steps, dtype, layout, device,
                                           pin_memory)


def linspace_tensor_scalar(start, end, steps, dtype=None, layout=None, device=None,
                           pin_memory=None):
    _bound_dims("linspace", start=start)
    return ops.aten.linspace.default._call(_item(start), end, steps, dtype, layout, device,
                                           pin_memory)


def linspace_scalar_tensor(start, end, steps, dtype=None, layout=None, device=None,
                           pin_memory=None):
    _bound_dims("linspace", end=end)
    return ops.aten.linspace.default._call(start, _item(end), steps, dtype, layout, device,
                                           pin_memory)


def logspace_tensor_tensor(start, end, steps, base=10.0, dtype=None, layout=None, device=None,
                           pin_memory=None):
    _bound_dims("logspace", start, end)
    return ops.aten.logspace.default._call(_item(start), _item(end), steps, base, dtype, layout,
                                           device, pin_memory)


def logspace_tensor_scalar(start, end, steps, base=10.0, dtype=None, layout=None, device=None,
                           pin_memory=None):
    _bound_dims("logspace", start=start)
    return ops.aten.logspace.default._call(_item(start), end, steps, base, dtype, layout, device,
                                           pin_memory)


def logspace_scalar_tensor(start, end, steps, base=10.0, dtype=None, layout=None, device=None,
                           pin_memory=None):
    _bound_dims("logspace", end=end)
    return ops.aten.logspace.default._call(start, _item(end), steps, base, dtype, layout, device,
                                           pin_memory)

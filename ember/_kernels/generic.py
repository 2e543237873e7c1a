"""out= and in-place kernels derived from a functional op (what ``autogen`` registers).

Both compute the functional result first and check it against the destination before writing,
so a failing call leaves ``out``/``self`` untouched, as PyTorch guarantees.
"""
import warnings

from .._core import overlap as _overlap
from .._core.promotion import can_cast
from .._dispatch.keys import DEVICE_TO_BACKEND, bit
from .._core.tensor_impl import CONJUGATE, NEGATIVE, _alias
from .rules.out_dtype import OUT_GIVES_DTYPE, check_out_dtypes, out_rules


def _overload(qualname):
    from .._ops.overload import ops
    base, _, ov = qualname.partition(".")
    return getattr(getattr(ops.aten, base), ov or "default")


def _fmt(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def copy_into(dst, src):
    """Write ``src`` (a result of dst's shape) into ``dst`` with the backend copy kernel (no
    version bump, no autograd: callers are kernels that already sit below those layers).

    Where ``dst`` is expanded (an op PyTorch lets write an expanded tensor, like masked_fill_),
    each memory location keeps the last value written to it, as ATen's sequential loop leaves
    it: only the last slice along each stride-0 dim is copied, so copy_ sees no overlap."""
    from .._ops.overload import ops
    if 0 in dst._stride and dst._size == src._size:
        dst, src = _last_written(dst, src)
    ks = bit(DEVICE_TO_BACKEND[dst._device.type]) | bit(DEVICE_TO_BACKEND[src._device.type])
    # a conjugate or negative bit on either side: copy_'s kernel on that key applies it
    ks |= (dst._keyset | src._keyset) & (CONJUGATE | NEGATIVE)
    ops.aten.copy_.default._entry.redispatch(ks, dst, src, False)


def _last_written(dst, src):
    size, d_off, s_off = list(dst._size), dst._offset, src._offset
    for d, (sz, st) in enumerate(zip(dst._size, dst._stride)):
        if st == 0 and sz > 1:
            size[d] = 1
            s_off += (sz - 1) * src._stride[d]
    size = tuple(size)
    return _alias(dst, size, dst._stride, d_off), _alias(src, size, src._stride, s_off)


def check_out(opname, result, out):
    if not can_cast(result._dtype, out._dtype):
        raise RuntimeError(f"result type {result._dtype._short} can't be cast to the desired "
                           f"output type {out._dtype._short}")
    if out._device != result._device:
        raise RuntimeError(f"{opname}: Expected out tensor to have device {result._device}, but "
                           f"got {out._device} instead")


def resize_output(opname, out, shape):
    """PyTorch's at::native::resize_output: warn when a non-empty out of another shape is resized."""
    if tuple(out._size) == tuple(shape):
        return
    if out.numel() != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {_fmt(out._size)}, "
            f"which does not match the required output shape {_fmt(shape)}. This behavior is "
            f"deprecated, and in a future PyTorch release outputs will not be resized unless they "
            f"have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, "
            f"to zero elements with t.resize_(0).", UserWarning, stacklevel=4)
    out._resize_metadata(tuple(shape))


def write_out(opname, results, outs, rules=(), warn=True):
    """Resize each out to its result and copy the result in, once every out is checked: the
    device, and the dtype by TensorIterator's can_cast unless the op has its own rule. ``warn``:
    resize as at::native::resize_output does (a non-empty out warns), else as resize_ (silently),
    as the older ATen kernels do."""
    rules = tuple(rules) + (None,) * (len(outs) - len(rules))
    for r, o, rule in zip(results, outs, rules):
        if rule is None or o._device != r._device:
            check_out(opname, r, o)
    for r, o in zip(results, outs):
        if warn:
            resize_output(opname, o, r._size)
        elif tuple(o._size) != tuple(r._size):
            o._resize_metadata(tuple(r._size))
        copy_into(o, r)


def _check_overlap(outs, inputs):
    """TensorIterator's memory-overlap checks, which PyTorch runs for pointwise ops."""
    for o in outs:
        _overlap.check_write(o, inputs)


# ATen's own out= kernels of these ops refuse any overlap between an output and an input (they
# read inputs while writing), beyond TensorIterator's rule for pointwise ops
_OUT_NO_OVERLAP = {"gather", "index_select", "take", "masked_select", "kthvalue", "bernoulli"}
# ... of which these check after resizing out (ATen's gather meta function): an out that only
# overlaps an input once grown is refused too
_OUT_OVERLAP_AFTER_RESIZE = {"gather"}
# Ops whose ATen out= kernel resizes out with resize_ (no warning) instead of resize_output
_OUT_RESIZE_SILENTLY = {"addbmm", "col2im", "im2col", "max_unpool2d", "max_unpool3d",
                        "narrow_copy", "reflection_pad2d"}
# Ops whose out= must have self's dtype exactly (ATen checks it before anything else)
_OUT_SAME_DTYPE = {"gather"}


def write_checked(functional_qualname, args, results, outs, out_qualname=None):
    """write_out for a hand-written out= kernel: the out= dtype rules of ``functional_qualname``
    (applied to its arguments ``args``) or of ``out_qualname`` in place of TensorIterator's
    can_cast."""
    base = functional_qualname.partition(".")[0]
    rules = check_out_dtypes(out_rules(functional_qualname, out_qualname, base, len(outs)),
                              results, outs, args)
    write_out(base, results, outs, rules, warn=base not in _OUT_RESIZE_SILENTLY)


def _check_same_dtype(outs, inputs):
    self = inputs[0]
    for o in outs:
        if o._dtype is not self._dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {self._dtype._cpp}, but got "
                               f"{o._dtype._cpp} instead")


def _check_no_overlap(outs, inputs):
    for o in outs:
        _overlap.check_no_overlap(o, inputs)


def out_wrapper(functional_qualname, out_qualname=None, pointwise=False):
    """The out= kernel of a functional op. A factory's out= schema omits the TensorOptions
    (``zeros.out(size, *, out)``): those arguments are taken from ``out`` (dtype, device) or
    left at their defaults. A pointwise op's ``out`` may not overlap its inputs."""
    op = _overload(functional_qualname)
    nout = len(op._schema.returns)
    opname = op._schema.base_name
    fargs = op._schema.arguments
    late = opname in _OUT_OVERLAP_AFTER_RESIZE
    rules = out_rules(functional_qualname, out_qualname, opname, nout)
    dtype_at = [a.name for a in fargs].index("dtype") \
        if functional_qualname in OUT_GIVES_DTYPE else None
    checks = [_check_overlap] if pointwise else \
        [_check_same_dtype] * (opname in _OUT_SAME_DTYPE) + \
        [_check_no_overlap] * (opname in _OUT_NO_OVERLAP and not late)
    out_names = None
    if out_qualname is not None:
        out_names = [a.name for a in _overload(out_qualname)._schema.arguments][:-nout]
    if out_names is None or out_names == [a.name for a in fargs]:
        def out_kernel(*args):
            outs = args[-nout:]
            for check in checks:
                check(outs, args[:-nout])
            fargs_given = args[:-nout]
            if dtype_at is not None and fargs_given[dtype_at] is None:
                fargs_given = fargs_given[:dtype_at] + (outs[0]._dtype,) + \
                    fargs_given[dtype_at + 1:]
            result = op._call(*fargs_given)
            results = (result,) if nout == 1 else tuple(result)
            checked = check_out_dtypes(rules, results, outs, fargs_given)
            if late:
                for r, o in zip(results, outs):
                    check_out(opname, r, o)
                    resize_output(opname, o, r._size)
                _check_no_overlap(outs, args[:-nout])
            write_out(opname, results, outs, checked, warn=opname not in _OUT_RESIZE_SILENTLY)
            return outs[0] if nout == 1 else tuple(outs)
        return out_kernel

    from .._ops.overload import default_value
    where = [out_names.index(a.name) if a.name in out_names else None for a in fargs]

    def factory_out_kernel(*args):
        outs = args[-nout:]
        given = {"dtype": outs[0]._dtype, "device": outs[0]._device}
        full = [args[i] if i is not None else given.get(a.name, default_value(a))
                for a, i in zip(fargs, where)]
        result = op._call(*full)
        results = (result,) if nout == 1 else tuple(result)
        write_out(opname, results, outs)
        return outs[0] if nout == 1 else tuple(outs)
    return factory_out_kernel


# In-place ops PyTorch still lets write an expanded tensor, with a deprecation warning
_EXPANDED_WRITE_DEPRECATED = {
    "masked_fill_": "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the "
                    "tensor before performing this operation. This also applies to advanced "
                    "indexing e.g. tensor[mask] = scalar",
}


# In-place ops whose ATen kernel refuses a self with internal overlap (an expanded self): its
# meta function or kernel calls assert_no_internal_overlap on self
_INPLACE_NO_INTERNAL_OVERLAP = {"cumsum", "cumprod", "index_add", "index_copy", "put", "scatter",
                                "scatter_add", "scatter_reduce", "masked_scatter", "addmm",
                                "addbmm", "addr", "renorm"}
# In-place ops that ATen implements as their out= kernel with self as out: a self of another
# shape is resized (silently, by resize_) instead of refused
_INPLACE_AS_OUT = {"addbmm"}


def inplace_wrapper(functional_qualname, pointwise=False):
    op = _overload(functional_qualname)
    opname = op._schema.base_name

    deprecated = _EXPANDED_WRITE_DEPRECATED.get(opname + "_")
    no_internal_overlap = opname in _INPLACE_NO_INTERNAL_OVERLAP
    as_out = opname in _INPLACE_AS_OUT

    def inplace_kernel(self, *args):
        if deprecated and _overlap.has_internal_overlap(self) == _overlap.YES:
            warnings.warn(deprecated, UserWarning, stacklevel=3)
            for t in args:
                if hasattr(t, "_keyset"):
                    _overlap.assert_no_partial_overlap(self, t)
        elif pointwise:
            _overlap.check_write(self, args)
        elif no_internal_overlap:
            _overlap.assert_no_internal_overlap(self)
        result = op._call(self, *args)
        if as_out:
            write_out(opname, (result,), (self,), warn=False)
            return self
        check_inplace(opname, self, result, args)
        if opname in _WRITE_WHERE and 0 in self._stride:
            _write_where(opname, self, args)
        elif opname == "baddbmm" and _shared_dim0(self):
            from .._ops.overload import ops
            acc = accumulate_shared(self, ops.aten.bmm.default._call(args[0], args[1]), *args[2:])
            copy_into(_alias(self, acc._size, self._stride, self._offset), acc)
        else:
            copy_into(self, result)
        return self
    return inplace_kernel


# In-place ops that write only some elements of self (the masked ones, those off the kept
# triangle), which ATen lets write an expanded self: a location is overwritten when any of the
# elements that share it is written, whatever the element order
_WRITE_WHERE = {"masked_fill", "tril", "triu"}


def _shared_dim0(self):
    """Whether self's first dim, and only it, repeats one location (an expanded self)."""
    return self.dim() >= 1 and self._size[0] > 1 and self._stride[0] == 0 and \
        all(st or n <= 1 for n, st in zip(self._size[1:], self._stride[1:]))


def accumulate_shared(self, products, beta, alpha):
    """What ATen's addmv_/baddbmm_ kernels leave in the one location of an expanded self (all
    slices along dim 0 one location): BLAS's ``self = beta * self + alpha * product`` for each
    slice in turn, each reading what the previous one wrote (beta 0: self is not read). The
    value of self's first slice, in self's dtype."""
    from .._ops.overload import ops
    a = ops.aten
    acc = a.narrow.default._call(self, 0, 0, 1)
    for i in range(self._size[0]):
        term = a.mul.Scalar._call(a.narrow.default._call(products, 0, i, 1), alpha)
        acc = term if beta == 0 else a.add.Tensor._call(a.mul.Scalar._call(acc, beta), term, 1)
    return a._to_copy.default._call(acc, self._dtype, None, None, None, False, None)


def _write_where(opname, self, args):
    from .._core import dtype as D
    from .._ops.overload import ops
    a = ops.aten
    if opname == "masked_fill":
        written, value = a.expand.default._call(args[0], self._size, False), args[1]
    else:
        ones = a.ones_like.default._call(self, D.bool_, None, None, None, None)
        kept = getattr(a, opname).default._call(ones, *args)
        written, value = a.logical_not.default._call(kept), 0
    size, shared = list(self._size), []
    for d, (n, st) in enumerate(zip(self._size, self._stride)):
        if st == 0 and n > 1:
            size[d] = 1
            shared.append(d)
    if shared:
        written = a.any.dims._call(written, shared, True)
    dst = _alias(self, tuple(size), self._stride, self._offset)
    copy_into(dst, a.masked_fill.Scalar._call(dst, written, value) if not hasattr(value, "_keyset")
              else a.masked_fill.Tensor._call(dst, written, value))


def _bad_inplace_call(self, result, args):
    return (f"Bad in-place call: input tensor size {_fmt(self._size)} and output tensor size "
            f"{_fmt(result._size)} should match")


def _expand_mask_error(self, result, args):
    """masked_scatter_ expands its mask to self's shape: expand's error for the first size
    (from the last) the mask cannot take."""
    mask = args[0]
    if mask.dim() > self.dim():
        return None
    for i in range(self.dim() - 1, -1, -1):
        j = mask.dim() - self.dim() + i
        size = mask._size[j] if j >= 0 else 1
        if size != self._size[i] and size != 1:
            return (f"The expanded size of the tensor ({self._size[i]}) must match the existing "
                    f"size ({size}) at non-singleton dimension {i}.  Target sizes: "
                    f"{_fmt(self._size)}.  Tensor sizes: {_fmt(mask._size)}")
    return None


# In-place ops whose ATen kernel refuses a self of another shape than the result with its own
# message: op -> (self, result, the other arguments) -> the message (None: the usual one)
_INPLACE_SHAPE_ERRORS = {
    "addmm": _bad_inplace_call,
    "baddbmm": _bad_inplace_call,
    "addr": lambda self, result, args: (f"size mismatch, input: {_fmt(self._size)}, v1: "
                                        f"{_fmt(args[0]._size)}, v2: {_fmt(args[1]._size)}"),
    "masked_scatter": _expand_mask_error,
}


def check_inplace(opname, self, result, args=()):
    if tuple(result._size) != tuple(self._size):
        own = _INPLACE_SHAPE_ERRORS.get(opname)
        raise RuntimeError((own and own(self, result, args)) or
                           f"output with shape {_fmt(self._size)} doesn't match the broadcast "
                           f"shape {_fmt(result._size)}")
    if not can_cast(result._dtype, self._dtype):
        raise RuntimeError(f"result type {result._dtype._short} can't be cast to the desired output "
                           f"type {self._dtype._short}")

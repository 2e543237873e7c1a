"""The Conjugate and Negative keys' kernels: PyTorch's conjugate and negative bits, resolved where
an op needs values (ATen's ConjugateFallback.cpp, NegateFallback.cpp and MathBitsFallback.h).

``x.conj()`` of a complex tensor is a view whose memory holds the conjugates of its values (the
conjugate bit), ``x.conj().imag`` one whose memory holds the negatives (the negative bit). The
bits are keys of the tensor's key set, so every op on such a tensor reaches these kernels, below
autograd:

* views and metadata ops run on the tensor as it is (PyTorch's fall-through lists, and any op
  whose outputs alias inputs it does not write): a view keeps the bits;
* ``copy_`` writes values: it conjugates (negates) when source and destination differ in the
  bit, so ``clone`` (``empty_like`` + ``copy_``) resolves, and a write lands right in memory;
* every other op gets its inputs resolved (cloned); an in-place or out= argument with a bit is
  cloned, the op writes the clone, and ``copy_`` writes the result back through the bit.
"""
from .._core import tensor_impl as _ti
from .._dispatch import dispatcher as _d
from .._dispatch.keys import AUTOGRAD_BITS, K, below, bit
from .._dispatch.tls import state as _state
from .._ops.overload import ops
from .generic import resize_output

_aten = ops.aten
_BELOW = below(K.Conjugate)  # both keys (Negative is the higher one) and everything above them
# the keys between a backend and these: a tensor with one of them (a FakeTensor, a functional
# wrapper, a __torch_dispatch__ subclass) has no memory of its own to alias here; the layer
# below handles its bits (its values carry them)
_LAYERED = _BELOW & ~below(K.BackendSelect)
# the ops these kernels call run below autograd and ADInplaceOrView (PyTorch's
# AutoDispatchBelowADInplaceOrView): the op above has recorded its history and bumped versions
_INNER_EXCLUDED = AUTOGRAD_BITS | bit(K.ADInplaceOrView)

# PyTorch's MathBitFallThroughLists.h (views and their in-place forms, tensor utilities and
# constructors) plus the ops both keys' files let through: composites whose inner ops see the
# bits, and metadata queries. The linear-algebra ops PyTorch also lets through handle the bits
# in its BLAS calls; ember's kernels read plain memory, so those take the fallback.
_FALLTHROUGH = [
    "as_strided_", "detach", "detach_", "diagonal", "expand", "expand_as", "movedim.int",
    "movedim.intlist", "narrow", "permute", "select.int", "squeeze", "squeeze_", "transpose.int",
    "transpose_", "t", "t_", "real", "imag", "view_as_real", "unflatten.int", "unfold",
    "unsqueeze", "unsqueeze_", "view_as", "unbind.int", "split.Tensor", "split_with_sizes",
    "swapaxes", "swapdims", "chunk", "reshape", "alias", "hsplit.int", "hsplit.array",
    "dsplit.int", "dsplit.array", "vsplit.int", "vsplit.array", "conj", "_conj", "_unsafe_view",
    "resize_",
    "empty_like", "empty.memory_format", "empty.out", "empty_strided", "full_like", "stride.int",
    "size.int", "is_complex", "is_floating_point", "requires_grad_",
    "as_strided", "view",
    "set_.source_Storage_storage_offset", "set_.source_Tensor", "set_", "clone",
    "conj_physical_", "resolve_conj", "resolve_neg", "_has_same_storage_numel",
    "_new_zeros_with_same_feature_meta",
    # ember's addition: queries of the bits themselves (PyTorch binds them without a dispatch)
    "is_conj", "is_neg",
]

_NAMES = {K.Conjugate: "conjugate", K.Negative: "negation"}


def _resolve(t):
    return _aten.clone.default._call(t, None)


def _math_bit_fallback(key):
    flag = bit(key)
    op_name = _NAMES[key]

    def fallback(op, ks, *args, **kwargs):
        values = list(args) + list(kwargs.values()) if kwargs else list(args)
        schema = op._schema
        is_write = None
        for a in schema.arguments:
            if a.alias is not None:
                if is_write is None:
                    is_write = a.is_write
                elif is_write != a.is_write:
                    raise RuntimeError(
                        f"Unsupported operator for {op_name} fallback: {schema.name}{op_name} "
                        f"fallback doesn't work for operators with a mix mutable and non-mutable "
                        f"inputs that alias with outputs, this must be implemented manually.  If "
                        f"you got this error on a core op, please report a bug to PyTorch.")
        if is_write is False:  # a view: it keeps the bit
            return op._entry.redispatch(ks & (flag - 1), *values)
        saved = _state.excluded
        _state.excluded = saved | _INNER_EXCLUDED
        try:
            mutated = None
            for i, a in enumerate(schema.arguments):
                v = values[i]
                if a.base != "Tensor" or v is None:
                    continue
                if a.is_list:
                    if not any(getattr(t, "_keyset", 0) & flag for t in v):
                        continue
                    if a.is_write:
                        raise RuntimeError(
                            f" fallback doesn't currently support mutable TensorLists with "
                            f"{op_name} inputs. Please materialize all the {op_name} input "
                            f"tensor(s) in the mutable TensorList inputs before calling "
                            f"{schema.name}")
                    values[i] = [_resolve(t) if getattr(t, "_keyset", 0) & flag else t
                                 for t in v]
                elif getattr(v, "_keyset", 0) & flag:  # (a Python number may stand for one)
                    resolved = _resolve(v)
                    if a.is_write:
                        if mutated is not None:
                            raise RuntimeError(
                                f"{op_name} fallback does not support operators with more than "
                                f"one mutable tensors with {op_name}bit set to true.")
                        mutated = (v, resolved)
                    values[i] = resolved
            result = op._entry.redispatch(ks & (flag - 1), *values)
            if mutated is None:
                return result
            target, written = mutated
            resize_output(schema.base_name, target, written._size)
            _aten.copy_.default._call(target, written, False)
        finally:
            _state.excluded = saved
        if isinstance(result, (tuple, list)):
            return type(result)(target if r is written else r for r in result)
        return target if result is written else result
    fallback.__qualname__ = fallback.__name__ = f"{key.name.lower()}_fallback"
    return fallback


_FALLBACKS = {key: _math_bit_fallback(key) for key in (K.Conjugate, K.Negative)}
_conj_fallback = _FALLBACKS[K.Conjugate]


def _raw(t, neg=True):
    """An alias of ``t`` without its conjugate bit (and negative bit): its memory as values."""
    r = _ti._alias(t, t._size, t._stride, t._offset)
    _ti._set_conj(r, False)
    if neg:
        _ti._set_neg(r, False)
    return r


def copy_(ks, self, src, non_blocking=False):
    """``copy_`` with either bit on either side: self's memory gets the conjugate (negation) of
    src's wherever their bits differ (ATen's copy_impl), a plain copy where they agree."""
    conj = (self._keyset ^ src._keyset) & _ti.CONJUGATE and src._dtype.is_complex
    neg = (self._keyset ^ src._keyset) & _ti.NEGATIVE
    if (conj or neg) and not (self._keyset | src._keyset) & _LAYERED:
        saved = _state.excluded
        _state.excluded = saved | _INNER_EXCLUDED
        try:
            src = _raw(src)
            if conj:
                src = _aten._conj_physical.default._call(src)
            if neg:
                src = _aten.neg.default._call(src)
        finally:
            _state.excluded = saved
    return _aten.copy_.default.redispatch(ks & _BELOW, self, src, non_blocking)


def _conj_product(op, ks, self, other):
    """``dot``/``vdot`` with a conjugate operand, as ATen's kernels take it (without a copy):
    a conjugated operand of one turns it into the other, and the dot of two conjugates is the
    conjugate of the dot, returned with the conjugate bit set as PyTorch's is."""
    if not (self._dtype.is_complex and other._dtype.is_complex) or \
            (self._keyset | other._keyset) & _LAYERED:
        return _conj_fallback(op, ks, self, other)
    a, b = self._keyset & _ti.CONJUGATE, other._keyset & _ti.CONJUGATE
    vdot = op._entry is _aten.vdot.default._entry
    saved = _state.excluded
    _state.excluded = saved | _INNER_EXCLUDED
    try:
        if a and b:
            if vdot:
                return _aten.vdot.default._call(_raw(other, False), _raw(self, False))
            r = _aten.dot.default._call(_raw(self, False), _raw(other, False))
            _ti._set_conj(r, True)  # (a fresh result: its memory is the conjugate's)
            return r
        if a:
            inner = _aten.dot if vdot else _aten.vdot
            return inner.default._call(_raw(self, False), other)
        if vdot:
            r = _aten.dot.default._call(self, _raw(other, False))
            _ti._set_conj(r, True)
            return r
        return _aten.vdot.default._call(_raw(other, False), self)
    finally:
        _state.excluded = saved


def install(lib):
    """Register the two keys' fallbacks, their fall-through ops and ``copy_`` (once, at import)."""
    for key in (K.Conjugate, K.Negative):
        for name in _FALLTHROUGH:
            qualname = f"aten::{name}"
            if _d.get_entry(qualname) is not None:
                lib.impl(qualname, _d.FALLTHROUGH, key.name)
        lib.impl("aten::copy_", copy_, key.name, _kind=_d.KEYSET,
                 _debug="copy_ through the math bits (ember/_kernels/math_bits.py)")
        _d.register_fallback(key, _d.Kernel(
            _FALLBACKS[key], _d.BOXED_KEYSET, f"{key.name} fallback (ember/_kernels/math_bits.py)"))
    for name in ("dot", "vdot"):
        lib.impl(f"aten::{name}", _conj_product, "Conjugate", _kind=_d.BOXED_KEYSET,
                 _debug=f"{name} of conjugates (ember/_kernels/math_bits.py)")

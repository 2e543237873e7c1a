"""diff, trapezoid, cumulative_trapezoid, cov, corrcoef and vander: CompositeImplicitAutograd
kernels written in ember ops."""
from ..._core import dtype as D
from ..._core import strides as _st
from ..._ops.overload import ops

_aten = ops.aten
_BOOL = D.bool_


def _diff_input(self, n, dim, prepend, append):
    """PyTorch's diff checks, and self with prepend/append concatenated along ``dim``."""
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = _st.wrap_dim(dim, self.dim())
    parts = [self]
    for t, first in ((prepend, True), (append, False)):
        if t is None:
            continue
        if t.dim() != self.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for i in range(self.dim()):
            if i != dim and t.shape[i] != self.shape[i]:
                raise RuntimeError(
                    f"diff expects the shape of tensor to prepend or append to match that of "
                    f"input except along the differencing dimension; input.size({i}) = "
                    f"{self.shape[i]}, but got tensor.size({i}) = {t.shape[i]}")
        parts.insert(0 if first else len(parts), t)
    return (self if len(parts) == 1 else _aten.cat.default._call(parts, dim)), dim


def diff(self, n=1, dim=-1, prepend=None, append=None):
    x, dim = _diff_input(self, n, dim, prepend, append)
    if n == 0:  # PyTorch returns the input itself, without prepend and append
        return _aten.clone.default._call(self, None)
    length = x.shape[dim]
    narrow = _aten.narrow.default._call
    # bool differences are xor, as in PyTorch; n past the length leaves an empty dim
    step = _aten.logical_xor.default._call if (x.dtype is _BOOL) else \
        (lambda a, b: _aten.sub.Tensor._call(a, b, 1))
    for _ in range(min(n, length)):
        length -= 1
        x = step(narrow(x, dim, 1, length), narrow(x, dim, 0, length))
    return x


def _zeros_except(y, dim):
    shape = [s for i, s in enumerate(y.shape) if i != dim]
    return _aten.zeros.default._call(shape, y.dtype, None, y.device, None)


def _slices(y, dim):
    """(y[..., 1:], y[..., :-1]) along ``dim``."""
    sl = _aten.slice.Tensor._call
    return sl(y, dim, 1, None, 1), sl(y, dim, 0, -1, 1)


def _x_spacing(name, y, x, dim):
    """The differences of the sample points ``x``, viewed to broadcast against y's slices."""
    if (y.dtype is _BOOL) or (x.dtype is _BOOL):
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           f"supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        sizes = [1] * y.dim()
        sizes[dim] = x.shape[0]
        x = _aten.view.default._call(x, sizes)
    elif x.dim() < y.dim():
        x = _aten.view.default._call(x, [1] * (y.dim() - x.dim()) + list(x.shape))
    right, left = _slices(x, dim)
    return _aten.sub.Tensor._call(right, left, 1)


def _check_dx(name, y, dx):
    if (y.dtype is _BOOL):
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def trapezoid_x(y, x, dim=-1):
    dim = _st.wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return _zeros_except(y, dim)
    dx = _x_spacing("trapezoid", y, x, dim)
    right, left = _slices(y, dim)
    total = _aten.add.Tensor._call(left, right, 1)
    s = _aten.sum.dim_IntList._call(_aten.mul.Tensor._call(dx, total), [dim], False, None)
    return _aten.div.Tensor._call(s, 2.0)


def trapezoid_dx(y, dx=1, dim=-1):
    dim = _st.wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return _zeros_except(y, dim)
    _check_dx("trapezoid", y, dx)
    sel = _aten.select.int._call
    ends = _aten.add.Tensor._call(sel(y, dim, 0), sel(y, dim, -1), 1)
    s = _aten.sum.dim_IntList._call(y, [dim], False, None)
    inner = _aten.sub.Tensor._call(s, _aten.mul.Tensor._call(ends, 0.5), 1)
    return _aten.mul.Tensor._call(inner, float(dx))


def trapz_x(y, x, dim=-1):
    return trapezoid_x(y, x, dim)


def trapz_dx(y, dx=1.0, dim=-1):
    return trapezoid_dx(y, dx, dim)


def cumulative_trapezoid_x(y, x, dim=-1):
    dim = _st.wrap_dim(dim, y.dim())
    dx = _x_spacing("cumulative_trapezoid", y, x, dim)
    right, left = _slices(y, dim)
    total = _aten.mul.Tensor._call(_aten.add.Tensor._call(left, right, 1), dx)
    return _aten.div.Tensor._call(_aten.cumsum.default._call(total, dim, None), 2.0)


def cumulative_trapezoid_dx(y, dx=1, dim=-1):
    dim = _st.wrap_dim(dim, y.dim())
    _check_dx("cumulative_trapezoid", y, dx)
    right, left = _slices(y, dim)
    total = _aten.mul.Tensor._call(_aten.add.Tensor._call(left, right, 1), float(dx) / 2.0)
    return _aten.cumsum.default._call(total, dim, None)


def _is_true(t):
    """A one-element bool tensor's value; data-dependent, so Meta tensors raise (as PyTorch)."""
    if t.device.type == "meta":
        raise NotImplementedError("cov: a data-dependent check cannot run on Meta tensors")
    return bool(_aten.item.default._call(t))


def _check_weights(kind, w, n, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} "
                           f"with {w.dim()} dimensions")
    ok = (not w.dtype.is_floating_point and not w.dtype.is_complex and not (w.dtype is _BOOL)) \
        if integral else w.dtype.is_floating_point
    if not ok:
        want = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {kind} to have {want} dtype but got {kind} with "
                           f"{w.dtype._short} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if n and _is_true(_aten.lt.Scalar._call(_aten.min.default._call(w), 0)):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


def cov(self, correction=1, fweights=None, aweights=None):
    """ATen's cov (Correlation.cpp): rows are variables, columns observations."""
    if self.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {self.dim()} dimensions")
    if (self.dtype is _BOOL):
        raise RuntimeError("cov(): bool dtype is not supported for input")
    a = _aten
    x = a.view.default._call(self, [1, -1]) if self.dim() < 2 else self
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
        w = aweights if w is None else a.mul.Tensor._call(w, aweights)
    if w is None:
        w_sum = a.scalar_tensor.default._call(n, _long(), None,
                                              x.device, None)
    else:
        w_sum = a.sum.default._call(w, None)
        if not _is_true(a.ne.Scalar._call(w_sum, 0)):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    xw = x if w is None else a.mul.Tensor._call(x, w)
    avg = a.div.Tensor._call(a.sum.dim_IntList._call(xw, [1], False, None), w_sum)
    if w is not None and aweights is not None and correction != 0:
        corr = a.div.Tensor._call(a.mul.Tensor._call(a.sum.default._call(
            a.mul.Tensor._call(w, aweights), None), correction), w_sum)
        norm_factor = a.sub.Tensor._call(w_sum, corr, 1)
    else:
        norm_factor = a.sub.Tensor._call(w_sum, correction, 1)
    if _is_true(a.le.Scalar._call(norm_factor, 0)):
        import warnings
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.")
        norm_factor = a.zeros_like.default._call(norm_factor, None, None, None, None, None)
    x = a.sub.Tensor._call(x, a.unsqueeze.default._call(avg, 1), 1)
    xw = x if w is None else a.mul.Tensor._call(x, w)
    c = a.mm.default._call(x, a.conj.default._call(a.t.default._call(xw)))
    return a.squeeze.default._call(a.true_divide.Tensor._call(c, norm_factor))


def _long():
    return D.int64


def corrcoef(self):
    if self.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {self.dim()} dimensions")
    a = _aten
    c = cov(self, 1, None, None)
    if c.dim() == 0:
        return a.div.Tensor._call(c, c)
    d = a.diagonal.default._call(c, 0, 0, 1)
    std = a.sqrt.default._call(a.real.default._call(d) if d.dtype.is_complex else d)
    c = a.div.Tensor._call(c, a.view.default._call(std, [-1, 1]))
    c = a.div.Tensor._call(c, a.view.default._call(std, [1, -1]))
    if c.dtype.is_complex:  # real and imaginary parts clipped separately
        parts = a.clip.default._call(a.view_as_real.default._call(c), -1, 1)
        return a.view_as_complex.default._call(parts)
    return a.clip.default._call(c, -1, 1)


def vander(x, N=None, increasing=False):
    from ..._core.promotion import promote_types
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    # integer inputs give int64 (PyTorch builds the powers with cumprod, which promotes them)
    dt = promote_types(x.dtype, _long())
    a = _aten
    rows = x.shape[0]
    parts = [a.ones.default._call([rows, min(n, 1)], dt, None, x.device, None)]
    if n > 1:
        col = a.expand.default._call(a.unsqueeze.default._call(x, 1), [rows, n - 1], False)
        parts.append(a.cumprod.default._call(col, 1, dt))
    result = a.cat.default._call(parts, 1)
    return result if increasing else a.flip.default._call(result, [1])
